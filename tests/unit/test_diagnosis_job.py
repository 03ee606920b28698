"""The diagnosis job: when a suite asks for one, what it runs, and what it is called."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from distkpi.domain.contracts import PairedRun, RunSpec
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.judging.statistics import Judgement, KpiVerdict
from distkpi.domain.planning.diagnosis import diagnosed_configs, diagnosis_base
from distkpi.domain.planning.jobs import (
    JOB_MARGIN_S,
    diagnosis_run_id,
    diagnosis_spec,
    plan_jobs,
    run_spec_for,
)
from distkpi.domain.planning.suites import DiagnoseSettings, DiagnoseWhen, parse_suite
from distkpi.domain.purpose import Purpose, policy_of, purpose_of
from distkpi.domain.records import RunRecord
from distkpi.exceptions import ContractError
from distkpi_cli.node.paired import PairedPlan, schedule

ROOT = Path(__file__).resolve().parents[2]
SUITE = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
RUN_SCHEMA = ROOT / "layers" / "distkpi" / "distkpi" / "schemas" / "run.schema.json"


def with_diagnose(text: str) -> str:
    return SUITE + text


def test_a_suite_diagnoses_regressions_in_five_steps_by_default() -> None:
    suite = parse_suite(SUITE, "resnet50.yaml")
    assert suite.diagnose.on is DiagnoseWhen.REGRESSION
    assert suite.diagnose.steps == 5


@pytest.mark.parametrize(
    ("text", "on", "steps"),
    [
        ("diagnose: {on: always, steps: 3}\n", DiagnoseWhen.ALWAYS, 3),
        ("diagnose:\n  on: never\n", DiagnoseWhen.NEVER, 5),
        ('diagnose: {"on": regression, steps: 50}\n', DiagnoseWhen.REGRESSION, 50),
    ],
)
def test_a_suite_may_ask_for_it_always_or_never(text: str, on: DiagnoseWhen, steps: int) -> None:
    # `on:` unquoted is YAML 1.1's boolean true as a key: read as the field all the same
    suite = parse_suite(with_diagnose(text), "resnet50.yaml")
    assert (suite.diagnose.on, suite.diagnose.steps) == (on, steps)


@pytest.mark.parametrize(
    ("diagnose", "error"),
    [
        ({"on": "sometimes"}, "diagnose.on: Input should be 'regression', 'always' or 'never'"),
        ({"steps": 0}, "diagnose.steps: Input should be greater than or equal to 1"),
        ({"steps": 51}, "diagnose.steps: Input should be less than or equal to 50"),
        ({"step": 5}, "diagnose.step: Extra inputs are not permitted"),
    ],
)
def test_a_bad_diagnose_field_names_the_file_and_field(diagnose: Any, error: str) -> None:
    text = with_diagnose(yaml.safe_dump({"diagnose": diagnose}))
    with pytest.raises(ContractError, match=r"resnet50\.yaml: invalid suite") as caught:
        parse_suite(text, "resnet50.yaml")
    assert error in str(caught.value)


# --- which configs, against which commit, and the job's plan

HEAD = "8" * 40
BEFORE = "7" * 40


def judged(config: str, kpi: str, verdict: str) -> Judgement:
    return Judgement(config, kpi, 1.0, 1.2, 1.1, 1.3, KpiVerdict(verdict))


JUDGED = [
    judged("1x1", "throughput", "pass"),
    judged("1x8", "test_accuracy", "regressed"),  # not about a step's time
    judged("4x8-8ps", "efficiency", "regressed"),
    judged("2x8-4ps", "step_time_s", "regressed"),
    judged("4x8-8ps", "throughput", "regressed"),
]


CLONED = parse_suite(SUITE.replace("source: none", "source: https://x.example/{repo}.git"), "s")


def spec(**changes: Any) -> RunSpec:
    return run_spec_for("r", trigger(), CLONED).model_copy(update=changes)


def trigger(event: str = "push", **changes: Any) -> Trigger:
    return replace(
        Trigger("o/r", HEAD, "refs/heads/main", "main", event, "main", before=BEFORE), **changes
    )


def test_a_regressed_timing_kpi_is_what_is_diagnosed_by_default() -> None:
    run = spec(paired=None, sha=HEAD)
    on = DiagnoseSettings()
    assert diagnosed_configs(on, run, JUDGED) == ("4x8-8ps", "2x8-4ps")
    assert diagnosed_configs(DiagnoseSettings(on=DiagnoseWhen.NEVER), run, JUDGED) == ()
    every = diagnosed_configs(DiagnoseSettings(on=DiagnoseWhen.ALWAYS), run, [])
    assert every == tuple(c.name for c in run.configs)


def test_the_base_is_the_paired_run_s_the_pull_request_s_or_the_push_s_previous_head() -> None:
    unpaired = spec(paired=None, sha=HEAD)
    assert diagnosis_base(unpaired, trigger()) == BEFORE
    assert diagnosis_base(unpaired, trigger("pull_request", base_sha="6" * 40)) == "6" * 40
    paired = spec(sha=HEAD, paired=PairedRun(base_sha="5" * 40, max_pairs=2, warmup=True))
    assert diagnosis_base(paired, trigger()) == "5" * 40
    # nothing to compare: an unchanged head, a new branch's first push, an A/A calibration
    assert diagnosis_base(unpaired, trigger(before=HEAD)) is None
    assert diagnosis_base(unpaired, trigger(before="0" * 40)) is None
    assert diagnosis_base(unpaired, trigger(before=None)) is None
    aa = spec(sha=HEAD, paired=PairedRun(base_sha=HEAD, max_pairs=2, warmup=True, calibration=True))
    assert diagnosis_base(aa, trigger()) is None


def test_the_job_is_one_pair_of_base_then_head_each_profiled() -> None:
    first = spec(paired=None, sha=HEAD)
    run = diagnosis_spec(first, diagnosis_run_id(first.run_id), ["4x8-8ps"], BEFORE, 7)
    assert run.run_id == f"{first.run_id}-d"
    assert [c.name for c in run.configs] == ["4x8-8ps"]
    assert run.paired == PairedRun(base_sha=BEFORE, max_pairs=1, warmup=False)
    assert run.diagnosis is not None and run.diagnosis.of_run == first.run_id
    assert [s.prefix for s in schedule(PairedPlan(BEFORE, 1, warmup=False))] == [
        "pair-1/a/",
        "pair-1/b/",
    ]  # the base, then the head
    written = run.to_json()
    assert written["diagnosis"] == {"of_run": first.run_id, "steps": 7}
    Draft202012Validator(json.loads(RUN_SCHEMA.read_text())).validate(written)
    assert "diagnosis" not in first.to_json()  # other runs' run.json as before
    suite = CLONED
    (plan,) = plan_jobs(run, suite, "b")
    assert plan.environment["DISTKPI_PROFILE_STEPS"] == "7"
    assert json.loads(plan.environment["DISTKPI_PAIRED"]) == {"max_pairs": 1, "warmup": False}
    assert plan.environment["DISTKPI_BASE_SHA"] == BEFORE
    assert plan.timeout_s == 2 * suite.command_timeout_s + JOB_MARGIN_S


def test_a_diagnosis_run_is_never_judged_published_or_repeated() -> None:
    first = spec(paired=None, sha=HEAD)
    run = diagnosis_spec(first, "r-d", ["4x8-8ps"], BEFORE, 5)
    record = RunRecord(
        run_id="r-d", trigger=trigger(), model="m", spec=run, delivery="d",
        verdict_settings=VerdictSettings(), created_at="2026-12-02T00:00:00",
        configs_total=1,
    )  # fmt: skip
    assert purpose_of(record) is Purpose.DIAGNOSIS
    policy = policy_of(record)
    assert not (policy.judged or policy.published or policy.confirms or policy.bisects)
    assert not (policy.judges_looks or policy.repeated_by_rerun)
