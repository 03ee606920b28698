"""A paired suite (`verdict: paired:`): refused where one container cannot hold both
commits, and planned with its base in run.json and every job's environment, a job timeout
and a run deadline for every run of the command it may make."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from distkpi.adapters.batch import BatchLauncher
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.planning.jobs import (
    JOB_MARGIN_S,
    command_runs,
    confirmation_spec,
    extra_run_time_s,
    plan_jobs,
    run_spec_for,
)
from distkpi.domain.planning.suites import load_suite, parse_suite
from distkpi.domain.records import RunRecord
from distkpi.exceptions import ContractError
from tests.unit.test_cli_kpis import schema

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "infra" / "suites"
PAIRED = SUITES / "local-paired.yaml"
BASE = "a50ae51b2c351b889055568bcaa9ab6000f1677f"
TRIGGER = Trigger("local/demo", "c" * 40, "refs/heads/develop", "develop", "push", "develop")


def paired_text(*lines: str) -> str:
    return "\n".join([PAIRED.read_text(), *lines, ""])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            'image: "registry.example/local:{sha}"',
            "x.yaml: invalid suite: verdict.paired: image registry.example/local:{sha} holds one "
            "commit's code; a paired job runs two commits",
        ),
        (
            "source: none",
            "x.yaml: invalid suite: verdict.paired: source: none runs the image's own code; a "
            "paired job checks out two commits",
        ),
    ],
)
def test_paired_is_refused_where_one_container_cannot_hold_both_commits(
    line: str, message: str
) -> None:
    with pytest.raises(ContractError) as raised:
        parse_suite(paired_text(line), "x.yaml")
    assert str(raised.value) == message


def test_a_paired_suite_may_run_one_image_for_both_commits() -> None:
    suite = parse_suite(paired_text('image: "registry.example/local:v3"'), "x.yaml")
    assert suite.verdict.paired is not None


def test_the_local_paired_suite_is_the_local_suite_paired() -> None:
    local, paired = load_suite(SUITES / "local.yaml"), load_suite(PAIRED)
    assert paired.verdict.paired is not None
    assert (paired.verdict.paired.max_pairs, paired.verdict.paired.warmup) == (4, True)
    assert paired.configs == local.configs and paired.command == local.command
    # the local suite's settings for judging against its history are no paired suite's
    unpaired = {"paired": None, "count_repeats": True, "short_history": "warn"}
    assert paired.verdict.model_copy(update=unpaired) == local.verdict


def test_a_paired_run_carries_its_base_to_run_json_and_every_job() -> None:
    suite = load_suite(PAIRED)
    spec = run_spec_for("r1", TRIGGER, suite, BASE)
    assert spec.to_json()["paired"] == {"base_sha": BASE, "max_pairs": 4, "warmup": True}
    jsonschema.validate(spec.to_json(), schema("run.schema.json"))
    plans = plan_jobs(spec, suite, "bucket")
    assert [p.config for p in plans] == ["1x1", "1x2", "1x1-1ps"]
    for plan in plans:
        assert plan.environment["DISTKPI_BASE_SHA"] == BASE
        assert json.loads(plan.environment["DISTKPI_PAIRED"]) == {"max_pairs": 4, "warmup": True}
        assert plan.environment["DISTKPI_SHA"] == "c" * 40
        # each run of the command keeps its own timeout; the job has room for all nine
        assert plan.environment["DISTKPI_COMMAND_TIMEOUT_S"] == "7200"
        assert plan.timeout_s == 9 * 7200 + JOB_MARGIN_S


def test_a_paired_job_asks_batch_for_the_time_of_all_its_runs() -> None:
    suite = load_suite(PAIRED)
    plans = plan_jobs(run_spec_for("r1", TRIGGER, suite, BASE), suite, "bucket")
    launcher = BatchLauncher("queue", "single", "multi")
    single, multi = launcher.request(plans[0]), launcher.request(plans[2])
    assert "nodeOverrides" not in single and "nodeOverrides" in multi
    for request in (single, multi):
        assert request["timeout"] == {"attemptDurationSeconds": 9 * 7200 + JOB_MARGIN_S}
    containers = [single["containerOverrides"]] + [
        group["containerOverrides"] for group in multi["nodeOverrides"]["nodePropertyOverrides"]
    ]
    for container in containers:
        env = {e["name"]: e["value"] for e in container["environment"]}
        assert env["DISTKPI_BASE_SHA"] == BASE


def test_an_unpaired_run_is_planned_as_before() -> None:
    suite = load_suite(SUITES / "local.yaml")
    spec = run_spec_for("r1", TRIGGER, suite)
    assert spec.paired is None and spec.to_json()["paired"] is None
    (plan, *_) = plan_jobs(spec, suite, "bucket")
    assert "DISTKPI_BASE_SHA" not in plan.environment
    assert "DISTKPI_PAIRED" not in plan.environment
    assert plan.timeout_s is None
    assert "timeout" not in BatchLauncher("queue", "single", "multi").request(plan)
    assert extra_run_time_s(spec, suite) == 0


@pytest.mark.parametrize(
    ("max_pairs", "warmup", "runs"), [(4, True, 9), (4, False, 8), (1, True, 3), (8, True, 17)]
)
def test_a_paired_job_runs_the_command_at_most_once_per_arm_per_pair_and_the_warmup(
    max_pairs: int, warmup: bool, runs: int
) -> None:
    suite = parse_suite(
        PAIRED.read_text().replace(
            "paired: {max_pairs: 4, warmup: true}",
            f"paired: {{max_pairs: {max_pairs}, warmup: {str(warmup).lower()}}}",
        ),
        "x.yaml",
    )
    spec = run_spec_for("r1", TRIGGER, suite, BASE)
    assert command_runs(spec.paired) == runs
    assert extra_run_time_s(spec, suite) == (runs - 1) * suite.command_timeout_s


def test_the_run_deadline_starts_counting_later_by_the_extra_time() -> None:
    suite = load_suite(PAIRED)
    spec = run_spec_for("r1", TRIGGER, suite, BASE)
    record = RunRecord(
        run_id="r1",
        trigger=TRIGGER,
        model=suite.name,
        spec=spec,
        delivery="d",
        verdict_settings=suite.verdict,
        created_at="2026-11-30T02:00:00.000+00:00",
        configs_total=3,
        extra_time_s=extra_run_time_s(spec, suite),
        started_at="2026-11-30T03:00:00.000+00:00",  # its first job's RUNNING
    )
    assert record.timeout_counted_from == "2026-11-30T19:00:00.000+00:00"
    unpaired = RunRecord(**{**record.__dict__, "extra_time_s": 0})
    assert unpaired.timeout_counted_from == record.started_at
    # before any job starts, the queue wait counts from its creation instead
    queued = RunRecord(**{**record.__dict__, "started_at": None})
    assert queued.timeout_counted_from == record.created_at


def test_a_confirmation_of_a_paired_spec_keeps_its_base() -> None:
    spec = run_spec_for("r1", TRIGGER, load_suite(PAIRED), BASE)
    again = confirmation_spec(spec, "r1-r2", ["1x2"])
    assert again.paired == spec.paired


def test_the_job_margin_is_what_the_job_definitions_leave_one_run() -> None:
    from distkpi.domain.planning.suites import Suite
    from distkpi_cli.local.template import load_template, resources_of_type

    template = load_template((ROOT / "template.yaml").read_text())
    definitions = resources_of_type(template, "AWS::Batch::JobDefinition")
    default_timeout = Suite.model_fields["command_timeout_s"].default
    for definition in definitions.values():
        attempt = definition["Timeout"]["AttemptDurationSeconds"]
        assert attempt - default_timeout == JOB_MARGIN_S
