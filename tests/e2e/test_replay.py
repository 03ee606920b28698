"""`distkpi local --event`: recorded deliveries replayed, signed with the local secret, on
the local stack's real webhook."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from distkpi_cli.local.aws_stack import LOCAL_REPOSITORIES
from distkpi_cli.main import main
from tests.conftest import git
from tests.e2e.test_local import ROOT

pytestmark = pytest.mark.e2e

EVENTS = ROOT / "tests" / "events"


def replayed(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> dict:  # type: ignore[type-arg]
    """The replay's one JSON document, on a state folder of its own: the default one may be
    in use by another `distkpi local` (the demo, a test beside this one)."""
    state = ["--state", str(tmp_path / "state")]
    assert main(["local", *argv, *state, "--dry-run", "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_each_recorded_delivery_gets_its_response(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = [EVENTS / f"{name}.json" for name in ("ping", "pull_request", "push")]
    out = replayed(capsys, tmp_path, *(a for f in files for a in ("--event", str(f))))
    answers = [(d["event"], d["status_code"], d["body"]["message"]) for d in out["deliveries"]]
    assert answers == [
        ("ping", 200, "pong"),
        ("pull_request", 201, "runs started"),
        ("push", 201, "runs started"),
    ]
    # the dry run shows the jobs each started would submit, and nothing ran
    assert [len(run["jobs"]) for run in out["runs"]] == [3, 3]
    # with the keys of the --dry-run contract, as `distkpi local --dry-run --json` has them
    contract = {"run_id", "model", "sha", "jobs", "gpus", "gpus_by_job", "gpu_hours_estimate"}
    for run in out["runs"]:
        assert set(run) == contract | {"gpu_hours_estimate_runs"}
        assert run["model"] == "local" and run["gpus"] == sum(run["gpus_by_job"].values())
    assert {s["state"] for s in out["statuses"]} == {"pending"}


def test_a_sequence_an_outsiders_pull_request_then_its_approval(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recorded = json.loads((EVENTS / "pull_request.json").read_text())
    payload = recorded["payload"]
    payload["pull_request"]["head"]["repo"]["full_name"] = "someone/Paddle"
    payload["pull_request"]["author_association"] = "FIRST_TIME_CONTRIBUTOR"
    payload["action"] = "opened"
    opened = tmp_path / "opened.json"
    opened.write_text(json.dumps(payload))  # a bare payload: the event name comes from the flag
    labeled = copy.deepcopy(payload)
    labeled["action"], labeled["label"] = "labeled", {"name": "ok-to-test"}
    (tmp_path / "labeled.json").write_text(json.dumps(labeled))
    out = replayed(
        capsys,
        tmp_path,
        *("--event", str(opened), "--event", str(tmp_path / "labeled.json")),
        *("--event-name", "pull_request"),
    )
    assert [d["status_code"] for d in out["deliveries"]] == [202, 201]
    assert out["deliveries"][0]["body"]["message"].startswith("awaiting approval")
    assert len(out["runs"]) == 1


def test_files_that_are_no_github_delivery_are_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = ["--state", str(tmp_path / "state")]
    s3_event = EVENTS / "s3_object_created.json"
    assert main(["local", "--event", str(s3_event), *state, "--dry-run"]) == 2
    assert f"{s3_event}: no X-GitHub-Event header; give --event-name" in capsys.readouterr().err
    two = ["--event", str(EVENTS / "ping.json"), "--event", str(EVENTS / "push.json")]
    names = ["--event-name", "ping", "--event-name", "push", "--event-name", "push"]
    assert main(["local", *two, *names, *state, "--dry-run"]) == 2
    assert "--event-name given 3 times for 2 --event" in capsys.readouterr().err


def test_a_refused_delivery_logs_to_stderr_and_prints_one_json_document(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Given a recorded push of a repository the stack does not allow
    recorded = json.loads((EVENTS / "push.json").read_text())
    recorded["payload"]["repository"]["full_name"] = "stranger/elsewhere"
    delivery = tmp_path / "push.json"
    delivery.write_text(json.dumps(recorded))
    # When it is replayed with --json, then stdout is one JSON document (the handler's
    # Powertools warning went to stderr)
    out = replayed(capsys, tmp_path, "--event", str(delivery))
    assert [d["status_code"] for d in out["deliveries"]] == [202]
    assert out["runs"] == []


def test_the_schedule_measures_the_served_repository_s_head_without_a_develop_branch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`--event schedule` with `--repo` a checkout of `main` only: the stand-in's default
    branch (`develop`) is that repository's HEAD, and the schedule's configs are planned."""
    repo = tmp_path / "main-only"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    (repo / "README.md").write_text("main\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "main")
    head = git(repo, "rev-parse", "HEAD")
    local = (ROOT / "infra" / "suites" / "local.yaml").read_text()
    suite = tmp_path / "nightly.yaml"
    nightly = local.replace("batch_size: 512}", "batch_size: 512, when: [schedule]}")
    nightly = nightly.replace(
        "pservers: 1, batch_size: 256}", "pservers: 1, batch_size: 256, when: [push]}"
    )
    suite.write_text(nightly)
    out = replayed(
        capsys, tmp_path, "--suite", str(suite), "--repo", str(repo), "--event", "schedule"
    )
    (delivery,) = out["deliveries"]
    assert (delivery["event"], delivery["status_code"]) == ("schedule", 201)
    # one run for each repository the local stack allows, each at the served HEAD
    repositories = delivery["body"]["repositories"]
    assert len(out["runs"]) == len(repositories) == len(LOCAL_REPOSITORIES.split(","))
    for run in out["runs"]:
        assert run["sha"] == head
        # the configs that run on the schedule (1x1 has no `when:`), not the push's own
        assert sorted(name[-3:] for name in run["gpus_by_job"]) == ["1x1", "1x2"]
