"""MLPerf logs name their benchmark, and MLPerf's rules fix its quality metric's direction
(domain/logs/mlperf_rules.py): a log is read in it whatever its run states."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.contracts import parse_run_spec
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.domain.logs.logformats import ParseSettings, parse_log
from distkpi.domain.logs.logsummary import Level, LogSummary, Per
from distkpi.domain.logs.mlperf_rules import RULES, direction_problem, rule_for
from distkpi_cli.localfs import LocalRunSource
from tests.unit.test_cli_kpis import schema

DATA = Path(__file__).resolve().parents[1] / "data" / "llm"
# MLPerf Training v4.0, NVIDIA eos_ngc24.04_nemo, llama2_70b_lora/result_0.txt: its
# benchmark, batch, start, evaluations (the eval loss, target 0.925) and stop
LLAMA2_LORA = (DATA / "mlperf_llama2_70b_lora.log").read_text().rstrip("\n")


def read(text: str, direction: Direction = Direction.HIGHER) -> LogSummary:
    return parse_log(io.BytesIO((text + "\n").encode()), ParseSettings(direction=direction))


def test_a_llama2_lora_log_is_read_lower_is_better_without_being_told() -> None:
    out = read(LLAMA2_LORA)
    assert out.benchmark == "llama2_70b_lora"
    assert out.direction is Direction.LOWER
    assert out.global_batch == 8
    # the last evaluation is the first at or under 0.925: 1629 s after run_start (read as
    # higher is better, the first, at 767 s, would "reach" it)
    assert out.run_start_s is not None
    reached = out.first_time_reaching(0.925)
    assert reached is not None and reached - out.run_start_s == pytest.approx(1629.043)


@pytest.mark.parametrize(
    ("benchmark", "direction"),
    [
        ("llama2_70b_lora", Direction.LOWER),
        ("gpt3", Direction.LOWER),
        ("rnnt", Direction.LOWER),
        ("resnet", Direction.HIGHER),
        ("bert", Direction.HIGHER),
        ("llama31_405b", Direction.LOWER),
    ],
)
def test_each_benchmarks_direction(benchmark: str, direction: Direction) -> None:
    rule = rule_for(benchmark)
    assert rule is not None and rule.direction is direction


def test_a_stated_direction_contrary_to_the_benchmarks_is_a_problem_naming_both() -> None:
    assert direction_problem("llama2_70b_lora", Direction.HIGHER) == (
        "accuracy_direction higher contradicts MLPerf's llama2_70b_lora, whose quality "
        "metric, the evaluation loss (log perplexity), is lower is better"
    )
    assert direction_problem("llama2_70b_lora", Direction.LOWER) is None
    assert direction_problem("resnet", Direction.LOWER) is not None
    assert direction_problem("my_own_benchmark", Direction.LOWER) is None
    assert direction_problem(None, Direction.HIGHER) is None


def _sd_eval(time_ms: int, step: int, metric: str, value: float) -> str:
    # as the reference's callback logs them (stable_diffusion mlperf_logging_utils.py):
    # one eval_accuracy per metric, the metric named in the metadata
    record = {
        "namespace": "",
        "time_ms": time_ms,
        "event_type": "POINT_IN_TIME",
        "key": "eval_accuracy",
        "value": value,
        "metadata": {"step_num": step, "metric": metric},
    }
    return ":::MLLOG " + json.dumps(record)


def test_stable_diffusions_fid_and_clip_are_parts_of_one_evaluation() -> None:
    head = ':::MLLOG {"key": "submission_benchmark", "value": "stable_diffusion", "time_ms": 1000}'
    start = ':::MLLOG {"key": "run_start", "value": null, "time_ms": 1000}'
    lines = [
        head,
        start,
        _sd_eval(2000, 1000, "FID", 120.5),
        _sd_eval(2100, 1000, "CLIP", 0.12),
        _sd_eval(3000, 2000, "FID", 85.0),
        _sd_eval(3100, 2000, "CLIP", 0.16),
    ]
    out = read("\n".join(lines))
    assert out.part_directions == {"FID": Direction.LOWER, "CLIP": Direction.HIGHER}
    assert out.last_accuracy == {"FID": 85.0, "CLIP": 0.16}
    # FID <= 90 and CLIP >= 0.15: reached by the second evaluation, timed by its CLIP
    assert out.first_time_reaching({"FID": 90.0, "CLIP": 0.15}) == pytest.approx(3.1)
    assert [p.accuracy for p in out.accuracy_frontier] == [
        {"FID": 120.5, "CLIP": 0.12},
        {"FID": 85.0, "CLIP": 0.16},
    ]


def test_a_train_step_time_with_the_logs_global_batch_gives_a_job_throughput() -> None:
    stats = '"key": "tracked_stats", "value": {"train_step_time": %s}, "time_ms": %d'
    lines = [
        ':::MLLOG {"key": "global_batch_size", "value": 1536, "time_ms": 1}',
        ":::MLLOG {" + stats % ("4.0", 2) + "}",
        ":::MLLOG {" + stats % ("3.0", 3) + "}",
    ]
    out = read("\n".join(lines))
    assert out.step_time_s.kept == [4.0, 3.0]
    assert out.best_throughput() == (512.0, Level.ITERATION)  # the warm-up report dropped
    assert out.throughput_per() is Per.JOB


def test_a_train_step_time_without_a_batch_gives_no_throughput() -> None:
    out = read(':::MLLOG {"key": "train_step_time", "value": 2.5, "time_ms": 2}')
    assert out.step_time_s.kept == [2.5]
    assert out.best_throughput() is None


def test_every_rule_is_named_in_lower_case() -> None:
    assert all(name == name.lower() for name in RULES)


def _run_folder(root: Path, log: str, **stated: object) -> Path:
    """One single-node config whose only file is ``log``; run.json names the benchmark's
    target and whatever ``stated`` adds (no accuracy_direction, no accuracy_pass)."""
    root.mkdir(parents=True)
    run = {
        "schema": 1,
        "run_id": "r",
        "repo": "o/r",
        "sha": "0" * 40,
        "ref": "refs/heads/main",
        "model": "llama2_70b_lora",
        "target_accuracy": 0.925,
        "accuracy_tolerance": 0.001,
        "configs": [
            {
                "name": "c",
                "trainers": 1,
                "gpus_per_trainer": 8,
                "pservers": 0,
                "batch_size": 8,
                "nodes": 1,
            }
        ],
        **stated,
    }
    (root / "run.json").write_text(json.dumps(run))
    (root / "c").mkdir()
    (root / "c" / "result_0.txt").write_text(log + "\n")
    manifest = {
        "schema": 1,
        "node": 0,
        "exit_code": 0,
        "started_at": "2026-11-30T00:00:00Z",
        "finished_at": "2026-11-30T01:00:00Z",
        "wall_s": 3600.0,
        "files": [{"path": "result_0.txt", "role": "trainer", "rank": 0, "kind": "log"}],
    }
    (root / "c" / "node-0.json").write_text(json.dumps(manifest))
    return root


def test_a_run_stating_no_direction_is_read_in_its_benchmarks(tmp_path: Path) -> None:
    run = _run_folder(tmp_path / "run", LLAMA2_LORA)
    cfg = compute_run_kpis(LocalRunSource(run)).configs[0]
    assert cfg.status == "ok", cfg.problems
    # run_stop - run_start, MLPerf's time to train (the last evaluation is the first at 0.925)
    assert cfg.time_to_accuracy_s == pytest.approx(1629.043)
    # no accuracy_pass: the last evaluation
    assert cfg.test_accuracy == 0.9233128428459167


def test_a_run_stating_the_contrary_direction_is_an_error_naming_both(tmp_path: Path) -> None:
    run = _run_folder(
        tmp_path / "run", LLAMA2_LORA, accuracy_direction="higher", target_accuracy=0.9
    )
    cfg = compute_run_kpis(LocalRunSource(run)).configs[0]
    assert cfg.status == "failed"
    assert (
        "accuracy_direction higher contradicts MLPerf's llama2_70b_lora, whose quality "
        "metric, the evaluation loss (log perplexity), is lower is better"
    ) in cfg.problems


def test_a_run_json_without_a_direction_keeps_it_unstated() -> None:
    spec = parse_run_spec(
        {
            "schema": 1,
            "run_id": "r",
            "repo": "o/r",
            "sha": "0" * 40,
            "ref": "refs/heads/main",
            "model": "gpt3",
            "target_accuracy": 2.69,
            "accuracy_tolerance": 0.0,
            "configs": [
                {
                    "name": "c",
                    "trainers": 1,
                    "gpus_per_trainer": 1,
                    "pservers": 0,
                    "batch_size": 1,
                    "nodes": 1,
                }
            ],
        }
    )
    assert (spec.direction_stated, spec.accuracy_pass) == (False, None)
    assert "accuracy_direction" not in spec.to_json()
    jsonschema.validate(spec.to_json(), schema("run.schema.json"))
    assert parse_run_spec(spec.to_json()) == spec
