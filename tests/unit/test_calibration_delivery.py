"""A calibration asked for through GitHub: the repository_dispatch delivery GitHub documents,
as `distkpi calibrate --start` makes GitHub send it, and each thing about it that starts
nothing; the A/A runs it plans (their ids, run.json, the suite as they run it, the status
context of their own)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from distkpi.domain.contracts import RunSpec
from distkpi.domain.github.webhook import (
    CALIBRATION_EVENT,
    Calibrate,
    Ignored,
    Invalid,
    Trigger,
    decide,
    parse,
)
from distkpi.domain.judging.settings import PairedSettings
from distkpi.domain.planning.jobs import (
    calibration_run_id,
    calibration_suite,
    plan_jobs,
    run_spec_for,
)
from distkpi.domain.planning.suites import Suite, load_suite, parse_suite
from distkpi.services.statuses import status_context

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "infra" / "suites"
SHA = "2e4bd1ffc4d445517555cfb459e92abed3c82d2e"
RECORDED = json.loads((ROOT / "tests" / "events" / "repository_dispatch.json").read_text())
BRANCHES = ["develop"]


def dispatched(**client_payload: Any) -> dict[str, Any]:
    """The recorded delivery as GitHub builds it from `distkpi calibrate --start`'s POST:
    ``action`` is the event_type, ``client_payload`` what was posted."""
    payload = copy.deepcopy(RECORDED["payload"])
    payload["action"] = "distkpi-calibrate"
    payload["client_payload"] = {"sha": SHA, "model": "local-paired", "jobs": 3} | {
        "branch": "develop"
    }
    payload["client_payload"].update(client_payload)
    return payload


def test_the_recorded_dispatch_is_someone_elses_and_starts_nothing() -> None:
    assert RECORDED["headers"]["X-GitHub-Event"] == CALIBRATION_EVENT
    decided = decide(parse(CALIBRATION_EVENT, RECORDED["payload"]), BRANCHES)
    assert decided == Ignored("repository_dispatch 'on-demand-test' is not 'distkpi-calibrate'")


def test_a_calibration_dispatch_asks_for_a_a_jobs_under_the_branchs_history() -> None:
    decided = decide(parse(CALIBRATION_EVENT, dispatched()), BRANCHES)
    assert decided == Calibrate(
        Trigger(
            repo="octo-org/octo-repo",
            sha=SHA,
            ref="refs/heads/develop",
            branch="develop",
            event=CALIBRATION_EVENT,
            base_branch="develop",
        ),
        model="local-paired",
        jobs=3,
    )
    # GitHub's own `branch` (the default branch, master) is not the history's
    assert RECORDED["payload"]["branch"] == "master"


@pytest.mark.parametrize(
    ("changed", "field"),
    [
        ({"sha": SHA[:10]}, "client_payload.sha"),
        ({"sha": SHA.upper()}, "client_payload.sha"),
        ({"sha": None}, "client_payload.sha"),
        ({"model": ""}, "client_payload.model"),
        ({"model": 7}, "client_payload.model"),
        ({"jobs": 0}, "client_payload.jobs"),
        ({"jobs": 21}, "client_payload.jobs"),
        ({"jobs": "3"}, "client_payload.jobs"),
        ({"jobs": True}, "client_payload.jobs"),
        ({"branch": None}, "client_payload.branch"),
        ({"branch": "dev\nelop"}, "client_payload.branch"),
    ],
)
def test_a_client_payload_that_is_not_what_calibrate_posts_is_invalid_naming_the_field(
    changed: dict[str, Any], field: str
) -> None:
    branches = [*BRANCHES, "dev\nelop"]
    decided = decide(parse(CALIBRATION_EVENT, dispatched(**changed)), branches)
    assert isinstance(decided, Invalid)
    assert decided.field == field


def test_a_dispatch_without_a_client_payload_object_is_invalid() -> None:
    payload = dispatched()
    payload["client_payload"] = ["sha", SHA]
    assert decide(parse(CALIBRATION_EVENT, payload), BRANCHES) == Invalid(
        "client_payload", "not an object with sha, model, jobs and branch"
    )


def test_a_calibration_of_a_branch_the_stack_does_not_run_starts_nothing() -> None:
    assert decide(parse(CALIBRATION_EVENT, dispatched(branch="main")), BRANCHES) == Ignored(
        "calibration for branch 'main', which is not configured"
    )


def test_a_dispatch_without_a_repository_starts_nothing() -> None:
    payload = dispatched()
    del payload["repository"]
    assert decide(parse(CALIBRATION_EVENT, payload), BRANCHES) == Ignored(
        "repository_dispatch payload lacks repository"
    )


def test_each_a_a_run_of_a_delivery_has_its_own_name_and_a_redelivery_the_same() -> None:
    names = [calibration_run_id("tiny", SHA, "d-1", job) for job in (1, 2, 3)]
    assert len(set(names)) == 3
    assert names == [calibration_run_id("tiny", SHA, "d-1", job) for job in (1, 2, 3)]
    assert names[0].startswith("tiny-2e4bd1ffc4-cal1-")
    assert calibration_run_id("tiny", SHA, "d-2", 1) != names[0]


def trigger_of(decided: object) -> Trigger:
    assert isinstance(decided, Calibrate)
    return decided.trigger


def test_an_unpaired_suite_is_calibrated_with_two_pairs_after_a_warm_up_and_no_confirming() -> None:
    suite = load_suite(SUITES / "local.yaml")
    assert suite.verdict.paired is None
    calibrated = calibration_suite(suite)
    assert isinstance(calibrated, Suite)
    assert calibrated.verdict.paired == PairedSettings(max_pairs=2, warmup=True)
    assert calibrated.verdict.confirm is None
    trigger = trigger_of(decide(parse(CALIBRATION_EVENT, dispatched(model="local")), BRANCHES))
    spec = run_spec_for("r1", trigger, calibrated, calibration=True)
    assert spec.to_json()["paired"] == {
        "base_sha": SHA,
        "max_pairs": 2,
        "warmup": True,
        "calibration": True,
    }
    (job, *_) = plan_jobs(spec, calibrated, "bucket")
    assert job.environment["DISTKPI_BASE_SHA"] == job.environment["DISTKPI_SHA"] == SHA


def test_a_paired_suite_is_calibrated_with_its_own_pairs() -> None:
    suite = load_suite(SUITES / "local-paired.yaml")
    calibrated = calibration_suite(suite)
    assert isinstance(calibrated, Suite)
    assert calibrated.verdict == suite.verdict


def test_a_suite_whose_jobs_cannot_hold_two_checkouts_cannot_be_calibrated() -> None:
    text = (SUITES / "local.yaml").read_text() + "\nsource: none\n"
    assert calibration_suite(parse_suite(text, "x.yaml")) == (
        "suite local cannot be calibrated: source: none runs the image's own code; a paired "
        "job checks out two commits"
    )


def test_a_calibration_run_measures_its_own_commit_in_both_arms() -> None:
    suite = calibration_suite(load_suite(SUITES / "local-paired.yaml"))
    assert isinstance(suite, Suite)
    trigger = trigger_of(decide(parse(CALIBRATION_EVENT, dispatched()), BRANCHES))
    data = run_spec_for("r1", trigger, suite, calibration=True).to_json()
    data["paired"]["base_sha"] = "a" * 40
    with pytest.raises(ValidationError, match="measures its own sha in both arms"):
        RunSpec.model_validate(data)


def test_a_calibration_runs_status_has_a_context_no_merge_waits_for() -> None:
    suite = load_suite(SUITES / "local-paired.yaml")
    calibrated = calibration_suite(suite)
    assert isinstance(calibrated, Suite)
    trigger = trigger_of(decide(parse(CALIBRATION_EVENT, dispatched()), BRANCHES))
    aa = run_spec_for("r1", trigger, calibrated, calibration=True)
    paired = run_spec_for("r2", trigger, suite, "a" * 40)
    assert status_context(aa) == "distkpi/local-paired/calibration"
    assert status_context(paired) == "distkpi/local-paired"
    assert "calibration" not in paired.to_json()["paired"]
