"""Re-run deliveries: which commit, which suites, and whose checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from distkpi.domain.github.events import PullRequestEvent
from distkpi.domain.github.webhook import ROUTES, Ignored, Invalid, Rerun, decide, parse
from distkpi.domain.judging.history import HistoryRow, series

EVENTS = Path(__file__).resolve().parents[1] / "events"
APP = "904512"


def payload(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((EVENTS / f"{name}.json").read_text())["payload"])


def test_a_check_run_rerequested_reruns_its_suite_for_its_pull_request() -> None:
    decided = decide(parse("check_run", payload("check_run")), ["develop"], APP)
    assert isinstance(decided, Rerun)
    assert decided.suites == ("resnet50",)
    assert decided.previous == "resnet50-9f4e1c2b7a-00000000"
    trigger = decided.trigger
    assert (trigger.event, trigger.pull_request, trigger.base_branch) == (
        "pull_request",
        12091,
        "develop",
    )
    assert trigger.sha == "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"


def test_a_check_suite_rerequested_reruns_every_suite() -> None:
    decided = decide(parse("check_suite", payload("check_suite")), ["develop"], APP)
    assert isinstance(decided, Rerun) and decided.suites is None


def test_a_rerun_on_a_configured_branch_without_a_pull_request_is_a_push() -> None:
    body = payload("check_suite")
    body["check_suite"]["pull_requests"] = []
    body["check_suite"]["head_branch"] = "develop"
    decided = decide(parse("check_suite", body), ["develop"], APP)
    assert isinstance(decided, Rerun) and decided.trigger.event == "push"
    body["check_suite"]["head_branch"] = "feature"
    assert isinstance(decide(parse("check_suite", body), ["develop"], APP), Ignored)


def test_other_apps_checks_and_other_actions_start_nothing() -> None:
    other = payload("check_run")
    other["check_run"]["app"]["id"] = 1
    assert "another App" in str(decide(parse("check_run", other), ["develop"], APP))
    assert isinstance(decide(parse("check_run", payload("check_run")), ["develop"], None), Ignored)
    created = payload("check_run")
    created["action"] = "created"
    assert isinstance(decide(parse("check_run", created), ["develop"], APP), Ignored)
    foreign = payload("check_run")
    foreign["check_run"]["name"] = "ci/build"
    assert isinstance(decide(parse("check_run", foreign), ["develop"], APP), Ignored)


def test_a_commit_counts_once_in_a_baseline_by_its_latest_run() -> None:
    def row(sha: str, run: str, value: float) -> HistoryRow:
        return HistoryRow("t", "o/r", "develop", "m", "1x1", sha, run, "throughput", value)

    rows = [row("a" * 40, "r1", 100.0), row("b" * 40, "r2", 110.0), row("a" * 40, "r3", 104.0)]
    assert series(rows, "1x1", "throughput") == [104.0, 110.0]


def test_a_check_runs_pull_request_number_is_checked_as_a_pull_requests_is() -> None:
    """A pull request number GitHub never sends (the string "7") is refused, as in a
    pull_request delivery, never taken for a pull request with no number."""
    body = payload("check_run")
    for pulls in (
        body["check_run"]["pull_requests"],
        body["check_run"]["check_suite"]["pull_requests"],
    ):
        pulls[0]["number"] = "7"
    decided = decide(parse("check_run", body), ["develop"], APP)
    assert decided == Invalid(
        "check_run.pull_requests[0].number", "not a pull request number (1 to 2147483647)"
    )
    pull_request = payload("pull_request")
    pull_request["number"] = "7"
    assert decide(parse("pull_request", pull_request), ["develop"]) == Invalid(
        "number", "not a pull request number (1 to 2147483647)"
    )


def test_each_event_the_stack_takes_parses_to_its_model_and_others_start_nothing() -> None:
    for name in ROUTES:
        recorded = json.loads((EVENTS / f"{name}.json").read_text())
        assert recorded["headers"]["X-GitHub-Event"] == name
        assert type(parse(name, recorded["payload"])) is ROUTES[name].model
    assert decide(parse("issues", {"action": "opened"}), ["develop"]) == Ignored(
        "event 'issues' does not start runs"
    )
    # a field of another type than GitHub sends is None, never an error
    hostile = parse("pull_request", {"pull_request": "x", "repository": {"full_name": 3}})
    assert hostile.repo is None and isinstance(hostile, PullRequestEvent)
    assert hostile.pull_request is None
