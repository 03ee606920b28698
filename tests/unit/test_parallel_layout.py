"""A config's parallel layout (tp, pp, dp, ep, cp, zero_stage, micro_batch, global_batch,
seq_len): checked against its GPUs, handed to the job as DISTKPI_* variables, kept in
run.json, its KPIs and the table."""

import jsonschema
import pytest

from distkpi.domain.judging.table import render_table
from distkpi.domain.kpis.engine import ConfigKpis, RunKpis
from distkpi.domain.planning.jobs import plan_jobs, run_spec_for
from distkpi.domain.planning.suites import parse_suite
from distkpi.exceptions import ContractError
from tests.unit.test_cli_kpis import schema
from tests.unit.test_planning import TRIGGER

SUITE = """
name: llama
command: [torchrun, train.py]
dtype: bf16
seq_len: 4096
accuracy_direction: lower
quality: loss
target_accuracy: 3.2
accuracy_pass: 0
accuracy_tolerance: 0.01
alignment: {max_rel_diff: 0.02, from_step: 10}
configs:
  - {name: 1x8, trainers: 1, gpus_per_trainer: 8, batch_size: 8, tp: 2, pp: 2,
     zero_stage: 1, micro_batch: 1, global_batch: 256}
  - {name: 2x8, trainers: 2, gpus_per_trainer: 8, batch_size: 8, tp: 2, pp: 2, dp: 4, cp: 1}
"""


def test_a_layout_reaches_the_job_and_run_json() -> None:
    suite = parse_suite(SUITE, "infra/suites/llama.yaml")
    spec = run_spec_for("run-1", TRIGGER, suite)
    jsonschema.validate(spec.to_json(), schema("run.schema.json"))
    assert spec.to_json()["configs"][0] | {} == {
        "name": "1x8",
        "trainers": 1,
        "gpus_per_trainer": 8,
        "pservers": 0,
        "batch_size": 8,
        "nodes": 1,
        "tp": 2,
        "pp": 2,
        "zero_stage": 1,
        "micro_batch": 1,
        "global_batch": 256,
    }
    assert spec.to_json()["quality"] == "loss" and spec.to_json()["seq_len"] == 4096
    plans = {p.config: p for p in plan_jobs(spec, suite, "bucket")}
    env = plans["1x8"].environment
    # dp left out: what tp x pp leave of the 8 GPUs
    assert {k: v for k, v in env.items() if k[8:] in ("TP", "PP", "DP", "ZERO_STAGE")} == {
        "DISTKPI_TP": "2",
        "DISTKPI_PP": "2",
        "DISTKPI_DP": "2",
        "DISTKPI_ZERO_STAGE": "1",
    }
    assert plans["2x8"].environment["DISTKPI_DP"] == "4"
    assert "DISTKPI_CP" not in env


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("tp: 2, pp: 2, dp: 4", "config 1x8: tp 2 x pp 2 x dp 4 = 16, not its 8 GPUs"),
        ("tp: 3", "config 1x8: tp 3 = 3 does not divide its 8 GPUs"),
    ],
)
def test_a_layout_that_is_not_the_configs_gpus_is_an_error_naming_the_numbers(
    layout: str, message: str
) -> None:
    text = SUITE.split("configs:", maxsplit=1)[0] + (
        f"configs:\n  - {{name: 1x8, trainers: 1, gpus_per_trainer: 8, batch_size: 8, {layout}}}\n"
    )
    with pytest.raises(ContractError) as err:
        parse_suite(text, "infra/suites/llama.yaml")
    assert message in str(err.value)


def test_the_table_shows_a_layout_where_a_config_states_one() -> None:
    suite = parse_suite(SUITE, "infra/suites/llama.yaml")
    spec = run_spec_for("run-1", TRIGGER, suite)
    kpis = ConfigKpis.from_record(
        {"name": "1x8", "gpus": 8, "status": "ok", "layout": spec.configs[0].layout}
    )
    table = render_table(RunKpis("run-1", "llama", "1x8", (kpis,)))
    (row,) = [line for line in table.splitlines() if line.startswith("layout ")]
    assert row.endswith(" tp2 pp2 dp2 zero_stage=1 micro_batch=1 global_batch=256")
    assert kpis.to_json()["layout"] == {
        "tp": 2,
        "pp": 2,
        "dp": 2,
        "zero_stage": 1,
        "micro_batch": 1,
        "global_batch": 256,
    }


def test_run_json_with_every_declared_llm_metric_follows_its_schema() -> None:
    metrics = """metrics:
  samples_per_s: {pattern: 'consumed (?P<num>[0-9]+) in (?P<den>[0-9.]+)', value: 'num / den',
                  per: job}
  tokens_per_s: {pattern: 'tps: (?P<value>[0-9,]+)', per: card}
  step_time_s: {pattern: 'step time (?P<value>[0-9.]+)', unit: ms}
  loss: {pattern: 'step (?P<step>[0-9]+) loss: (?P<value>[0-9.]+)'}
  gpu_memory: {pattern: 'memory: (?P<value>[0-9.]+)GiB', unit: GiB, role: trainer}
"""
    suite = parse_suite(SUITE + metrics, "infra/suites/llama.yaml")
    spec = run_spec_for("run-1", TRIGGER, suite)
    assert set(spec.to_json()["metrics"]) == {
        "samples_per_s",
        "tokens_per_s",
        "step_time_s",
        "loss",
        "gpu_memory",
    }
    jsonschema.validate(spec.to_json(), schema("run.schema.json"))
