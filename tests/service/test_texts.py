"""What people read, pinned by golden files under tests/golden/: the commit statuses of each
kind of outcome, the check runs of each conclusion, the approval request and the regression
alert, as the services send them (DISTKPI_UPDATE_GOLDEN=1 accepts a change on purpose)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from distkpi.domain.github.trust import NeedsApproval, TrustSettings, admit
from distkpi.domain.github.webhook import Trigger, decide, parse
from tests.conftest import assert_golden
from tests.fakes import ROOT
from tests.service.pipeline import Pipeline, jobs_running, report_all, report_node, start

PATHS_SUITE = b"""name: docs-only
source: none
command: ["python", "reference.py"]
paths: ["python/paddle/**"]
target_accuracy: 0.6
accuracy_pass: 4
accuracy_tolerance: 0.001
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, pservers: 0, batch_size: 64}
"""


def pull_request(sha: str, updated_at: str, fork: bool = False) -> tuple[Trigger, dict[str, Any]]:
    recorded = json.loads((ROOT / "tests" / "events" / "pull_request.json").read_text())
    payload = copy.deepcopy(recorded["payload"])
    payload["pull_request"]["head"]["sha"] = sha
    payload["pull_request"]["updated_at"] = updated_at
    if fork:
        payload["pull_request"]["head"]["repo"]["full_name"] = "someone/Paddle"
        payload["pull_request"]["author_association"] = "NONE"
    trigger = decide(parse("pull_request", payload), ["develop"])
    assert isinstance(trigger, Trigger)
    return trigger, payload


def with_history(pipeline: Pipeline, runs: int = 2) -> None:
    """Passing pushes before it; what GitHub was told of them is not the point."""
    for i in range(runs):
        report_all(pipeline, start(pipeline, f"history-{i}", f"{i + 1:x}" * 40))
    pipeline.github.statuses.clear()
    pipeline.github.checks.clear()


def passing(p: Pipeline) -> None:
    with_history(p)
    report_all(p, start(p, "d-pass", "c" * 40))


def slower(p: Pipeline) -> None:
    with_history(p)
    report_all(p, start(p, "d-slow", "d" * 40), **{"4x8-8ps": 0.7})


def job_failed(p: Pipeline) -> None:
    run_id = start(p, "d-failed", "e" * 40)
    job = next(j for j, plan in p.launcher.submitted.items() if plan.config == "2x8-4ps")
    p.settler.on_job_failed(job, "Essential container in task exited")
    report_all(p, run_id)


def timed_out(p: Pipeline) -> None:
    run_id = start(p, "d-late", "f" * 40)
    p.clock.advance(600)  # ten minutes in Batch's queue
    jobs_running(p, run_id)
    report_node(p, run_id, "1x1", 0)
    p.clock.advance(3601)
    p.deadlines.expire_overdue()


def skipped_and_broken(p: Pipeline) -> None:
    p.store.put_bytes("suites/docs-only.yaml", PATHS_SUITE)
    p.store.put_bytes("suites/broken.yaml", b"name: broken\nconfigs: []\n")
    p.github.changed = ["README.md"]
    start(p, "d-docs", "a" * 40)


def awaiting_approval(p: Pipeline) -> None:
    trigger, payload = pull_request("b" * 40, "2026-11-30T03:00:00Z", fork=True)
    waiting = admit(trigger, parse("pull_request", payload), TrustSettings())
    assert isinstance(waiting, NeedsApproval)
    p.starter.await_approval(waiting, "ok-to-test")


def superseded(p: Pipeline) -> None:
    for sha, updated in (("1" * 40, "2026-11-30T03:00:00Z"), ("2" * 40, "2026-11-30T03:05:00Z")):
        trigger, _ = pull_request(sha, updated)
        p.starter.handle_delivery(trigger, f"d-{sha[0]}")


SCENARIOS: dict[str, Callable[[Pipeline], None]] = {
    "a push like its history": passing,
    "a push 30% slower at 4x8-8ps": slower,
    "a config whose job failed": job_failed,
    "a run past its deadline": timed_out,
    "a suite the change does not touch, and a suite file that is not valid": skipped_and_broken,
    "a fork's pull request nobody trusted has approved": awaiting_approval,
    "a pull request's older head, superseded by a newer one": superseded,
}


def test_the_commit_statuses_of_each_outcome_are_the_golden_text() -> None:
    text = []
    for title, scenario in SCENARIOS.items():
        pipeline = Pipeline()
        scenario(pipeline)
        text.append(f"## {title}\n")
        text += [
            f"{s.state:<8} {s.context:<22} {s.sha[:10]}  {s.description}"
            + (f"\n         -> {s.target_url}" if s.target_url else "")
            for s in pipeline.github.statuses
        ]
        text.append("")
    assert_golden("commit_statuses.txt", "\n".join(text))


def check_text(check: dict[str, Any]) -> str:
    output = check.get("output") or {}
    lines = [
        f"# {check['name']}: {check.get('status')} / {check.get('conclusion')}",
        f"details: {check.get('details_url')}",
        f"title: {output.get('title')}",
        "",
        output.get("summary") or "",
    ]
    if output.get("text"):
        lines += ["", "---", "", output["text"]]
    return "\n".join(lines) + "\n"


def test_the_check_run_of_each_conclusion_is_the_golden_markdown() -> None:
    for name, scenario in {
        "success": passing,
        "failure": slower,
        "error": job_failed,
        "action_required": awaiting_approval,
    }.items():
        pipeline = Pipeline(checks=True)
        scenario(pipeline)
        check = max(pipeline.github.checks.values(), key=lambda c: c["id"])
        assert check["conclusion"] == ("failure" if name == "error" else name)
        assert_golden(f"check_run_{name}.md", check_text(check))


def test_a_regression_on_develop_is_the_golden_alert() -> None:
    pipeline = Pipeline()
    slower(pipeline)
    (alert,) = pipeline.topic.messages
    subject, body = alert
    assert_golden("alert.txt", f"Subject: {subject}\n\n{body}")
