"""On the local stack, end to end: a slowed pull request fails, and replaying the `/distkpi
accept` comment (`distkpi local --event`) turns it `success`; a slowed push opens a
regression that `distkpi regressions` lists and a later push back to speed fixes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from distkpi_cli.local.demo import run_local
from distkpi_cli.local.state import StateFolder
from distkpi_cli.main import main
from tests.e2e.test_local import BENCH, ROOT, SPEED, commit_all, git

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REASON = "trades 8% throughput for 30% less GPU memory"


def speed_repository(tmp_path: Path, speeds: list[int]) -> list[str]:
    """A repository whose benchmark reports each commit's speed: one commit per speed."""
    repo = tmp_path / "speed"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / "bench.py").write_text(BENCH)
    shas = []
    for n, speed in enumerate(speeds):
        (repo / "speed.txt").write_text(f"{speed}\n")
        (repo / "CHANGES").write_text(f"change {n}\n")
        shas.append(commit_all(repo, f"speed {speed}"))
    return shas


def regressions(capsys: pytest.CaptureFixture[str], state: Path) -> list[dict[str, object]]:
    argv = ["regressions", "--local", "--local-state", str(state), "--json"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_a_regression_opens_and_is_fixed_and_an_accepted_pull_request_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shas = speed_repository(tmp_path, [100] * 6 + [60, 60, 100])
    source, suite = tmp_path / "speed", tmp_path / "speed.yaml"
    suite.write_text(SPEED)
    state = StateFolder(tmp_path / "state")

    def run(rev: str, commits: int = 1, pull_request: bool = False) -> str:
        result = run_local(
            suite,
            tmp_path / "out",
            rev,
            source=source,
            commits=commits,
            pull_request=pull_request,
            state=state,
            progress=io.StringIO(),
        )
        return result.runs[-1].state

    # Given develop's history at speed 100, and a pull request at 60 that fails
    assert run(shas[5], commits=6) == "success"
    assert run(shas[6], pull_request=True) == "failure"
    # When its accept comment is replayed
    recorded = json.loads((ROOT / "tests" / "events" / "issue_comment.json").read_text())
    payload = recorded["payload"]
    payload["repository"]["full_name"] = "local/demo"
    payload["issue"]["number"] = 1
    payload["comment"]["user"]["login"] = "local"  # the repository's owner: its admin
    comment = tmp_path / "accept.json"
    comment.write_text(json.dumps({"headers": recorded["headers"], "payload": payload}))
    argv = ["local", "--suite", str(suite), "--repo", str(source), "--state", str(state.path)]
    assert main([*argv, "--event", str(comment), "--out", str(tmp_path / "out"), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    # Then the webhook accepted it, and the status is success saying who and why
    (delivered,) = replayed["deliveries"]
    assert delivered["status_code"] == 200, delivered
    assert delivered["body"]["message"] == "accepted"
    (status,) = replayed["statuses"]
    assert (status["sha"], status["state"]) == (shas[6], "success")
    assert status["description"] == f"accepted by @\u200blocal: {REASON}"
    # and the suite's pull-request comment says success, who accepted and why, then the reply
    (suite_comment, reply) = replayed["comments"]
    assert suite_comment["number"] == 1
    assert "### distkpi/speed: success" in suite_comment["body"]
    assert f"**accepted by @\u200blocal: {REASON}**" in suite_comment["body"]
    assert reply["number"] == 1 and reply["body"].startswith("Accepted by @local for distkpi/speed")

    # A push at 60 (not the accepted head) opens a regression; one back at 100 fixes it
    assert run(shas[7]) == "failure"
    (opened,) = regressions(capsys, state.path)
    assert (opened["state"], opened["kpi"], opened["sha"]) == ("open", "throughput", shas[7])
    assert run(shas[8]) == "success"
    (fixed,) = regressions(capsys, state.path)
    assert fixed["state"] == "fixed" and fixed["id"] == opened["id"]
    assert [h["state"] for h in fixed["history"]] == ["open", "fixed"]  # type: ignore[union-attr]
