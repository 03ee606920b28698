"""`distkpi local` end to end for the people a verdict reaches: a slowed pull request fails,
its one comment shows the table, the next push edits that comment (no second one), and the
chat stand-in got the owners' alert. Real processes run each commit's benchmark, on moto's
server with the GitHub and chat stand-ins."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from distkpi_cli.local.demo import _base_of, _run_commit
from distkpi_cli.local.dispatch import Dispatcher
from distkpi_cli.local.stack import local_stack
from tests.conftest import git
from tests.e2e.test_local import BENCH, commit_all

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUITE = """
name: speed
command: ["python", "bench.py"]
setup: [["sh", "-c", "cp speed.txt built.txt"]]
target_accuracy: 0.5
accuracy_pass: 0
accuracy_tolerance: 0.5
owners: [octocat, "@local/perf"]
alert: {pull_requests: true}
verdict:
  default_tolerance: 0.2
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 8}
"""


def test_a_slowed_pull_request_gets_one_comment_edited_and_the_owners_a_chat_alert(
    tmp_path: Path,
) -> None:
    # Given a repository whose benchmark reports what its commit's speed.txt says
    repo = tmp_path / "speed"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    (repo / "bench.py").write_text(BENCH)
    shas = {}
    for name, speed in (("one", 100), ("two", 100), ("slowed", 50), ("fixed", 100)):
        (repo / "speed.txt").write_text(f"{speed}\n")
        (repo / "CHANGES").write_text(f"{name}\n")
        shas[name] = commit_all(repo, name)
    suite = tmp_path / "speed.yaml"
    suite.write_text(SUITE)
    with local_stack(suite, io.StringIO(), repository=repo) as stack:
        dispatch = Dispatcher(stack, tmp_path / "out", repo)
        jobs: list = []

        def run(sha: str, base: str, *, push: bool) -> str:
            (done,) = _run_commit(stack, dispatch, "local/demo", sha, base, push=push, jobs=jobs)
            assert done.evaluation is not None
            return done.evaluation.verdict.state.value

        # two pushes make develop's history
        assert run(shas["one"], _base_of(repo, shas["one"]), push=True) == "success"
        assert run(shas["two"], shas["one"], push=True) == "success"
        # When the pull request's head is twice as slow
        assert run(shas["slowed"], shas["two"], push=False) == "failure"
        # Then its one comment shows the table, the regression first, and the accept hint
        (comment,) = stack.github.comments
        lines = comment["body"].splitlines()
        assert lines[:2] == ["<!-- distkpi:suite=speed -->", "### distkpi/speed: failure"]
        table = lines.index("| config | KPI | value | baseline | allowed | Δ | |")
        assert lines[table + 2].startswith("| 1x1 | throughput (samples/s) | 50 | 100 |")
        assert "regressed" in lines[table + 2]
        assert "Intended? comment `/distkpi accept <reason>` to accept (writers only)." in lines
        # and the chat stand-in got the owners' alert
        assert stack.chat is not None
        (alert,) = stack.chat.messages
        assert alert["text"].startswith("distkpi/speed failure on local/demo pull request #1")
        blocks = [b["text"]["text"] for b in alert["blocks"] if "text" in b]
        assert "*For:* @octocat @local/perf" in blocks
        # When the next push of the pull request is as fast as develop
        assert run(shas["fixed"], shas["two"], push=False) == "success"
        # Then the same comment is edited, and there is no second one
        (edited,) = stack.github.comments
        assert (edited["id"], edited["edits"]) == (comment["id"], 1)
        assert edited["body"].splitlines()[1] == "### distkpi/speed: success"
        assert "/distkpi accept" not in edited["body"]
        assert len(stack.chat.messages) == 1  # a passing push alerts no one
