"""Real logs of today's language-model training (torchtitan, Megatron-LM, DeepSpeed and its
examples, MaxText, MLPerf's LLM benchmarks) against the numbers their authors published or
their own lines define: the entries of tests/data/real/expected.json that carry a `family`
(provenance and traps in tests/data/real/<family>/README.md).

Each number is read the way the engine reads a node's log: one file through `parse_log`, the
KPI taken from the LogSummary (tokens_per_s, step_time_s, tflops_per_gpu, mfu, last_loss,
framework_memory_mib, throughput, last_accuracy); time to accuracy from a whole run folder
whose run.json states the benchmark's target but no accuracy_direction (MLPerf's rules fix
it from `submission_benchmark`); Megatron's golden-values files, per-step curves and not
logs, through the golden-curve loader.

These checks are written ahead of the readers for these formats: until a reader lands, its
entries fail here, naming the number expected and the number read. The log files are
third-party data in the shared data folder's `real/` (or DISTKPI_REAL_LOGS); without that
folder the module is skipped, and a file not yet added to it skips its own entries, naming it.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.judging.history import run_direction
from distkpi.domain.kpis.engine import ConfigKpis
from distkpi.domain.kpis.golden import GoldenCurve, GoldenSeries, parse_golden
from distkpi.domain.kpis.runfolder import compute_run_kpis
from distkpi.domain.logs.logformats import parse_log
from distkpi.domain.logs.logsummary import LogSummary, warmup_count
from distkpi_cli.localfs import LocalRunSource

ROOT = Path(__file__).resolve().parents[2]
LLM = [
    e
    for e in json.loads((ROOT / "tests" / "data" / "real" / "expected.json").read_text())
    if "family" in e
]
REAL = Path(os.environ.get("DISTKPI_REAL_LOGS", ROOT.parent / "shared" / "real"))
pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason=f"no real logs in {REAL} (set DISTKPI_REAL_LOGS to their folder)"
)

# Each benchmark's target as MLPerf's rules for rounds 3.1 and 4.0 set it
# (mlperf_logging/compliance_checker/training_<round>/closed_<benchmark>.yaml); the direction
# is deliberately not stated in run.json.
MLPERF_TARGETS: dict[str, object] = {
    "gpt3": 2.69,
    "llama2_70b_lora": 0.925,
    "stable_diffusion": {"FID": 90.0, "CLIP": 0.15},
}


def _median_after_warmup(summary: LogSummary) -> float | None:
    values = summary.step_time_s.values_after_warmup
    return statistics.median(values) if values else None


def _throughput(summary: LogSummary) -> float | None:
    best = summary.best_throughput()
    return best[0] if best is not None else None


FROM_SUMMARY = {
    "tokens_per_s": lambda s: s.tokens_per_s.mean,
    "step_time_s": _median_after_warmup,
    "tflops_per_gpu": lambda s: s.tflops_per_gpu.mean,
    "mfu": lambda s: s.mfu.mean,
    "loss": lambda s: s.last_loss,
    "gpu_memory_mib": lambda s: s.framework_memory_mib,
    "throughput": _throughput,
    "test_accuracy": lambda s: s.last_accuracy,
}


def _finite(series: GoldenSeries | None) -> list[tuple[int, float]]:
    assert series is not None
    return [(step, v) for step, v in sorted(series.values.items()) if math.isfinite(v)]


def _golden_step_time(curve: GoldenCurve) -> float:
    values = [v for _, v in _finite(curve.iteration_time)]
    return statistics.median(values[warmup_count(len(values), None) :])


# Megatron's golden-values files are per-step curves its functional tests keep, not logs:
# they are read by the golden-curve loader (domain/kpis/golden.py), never by parse_log
FROM_GOLDEN = {
    "loss": lambda c: _finite(c.loss)[-1][1],
    "step_time_s": _golden_step_time,
    "gpu_memory_mib": lambda c: max(v for _, v in _finite(c.mem_max_allocated)) / 2**20,
}
GOLDEN_FORMAT = "megatron_golden"


def _entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['family']}:{entry['kpi']}:{entry['path']}"


def _log(entry: dict[str, Any]) -> Path:
    path = REAL / entry["path"]
    if not path.is_file():
        pytest.skip(f"{entry['path']} is not in {REAL} yet (see tests/data/real/README.md)")
    return path


def _assert_close(value: object, expected: object, tolerance: float) -> None:
    if expected is None:
        assert value is None
    elif isinstance(expected, dict):
        assert isinstance(value, dict), value
        assert value.keys() == expected.keys()
        for part, number in expected.items():
            assert value[part] == pytest.approx(number, rel=tolerance, abs=1e-12), part
    else:
        assert value == pytest.approx(expected, rel=tolerance, abs=1e-12)


@pytest.mark.parametrize(
    "entry",
    [e for e in LLM if e["kpi"] in FROM_SUMMARY and e["format"] != GOLDEN_FORMAT],
    ids=_entry_id,
)
def test_each_llm_log_gives_its_number(entry: dict[str, Any]) -> None:
    with _log(entry).open("rb") as stream:
        summary = parse_log(stream)
    value = FROM_SUMMARY[entry["kpi"]](summary)
    _assert_close(value, entry["value"], entry["tolerance_rel"])


@pytest.mark.parametrize("entry", [e for e in LLM if e["format"] == GOLDEN_FORMAT], ids=_entry_id)
def test_each_megatron_golden_curve_gives_its_number(entry: dict[str, Any]) -> None:
    curve = parse_golden(_log(entry).read_bytes(), entry["path"])
    _assert_close(FROM_GOLDEN[entry["kpi"]](curve), entry["value"], entry["tolerance_rel"])


def _run_without_direction(root: Path, log: Path, target: object) -> Path:
    """A run folder of one single-node config whose only file is ``log``; run.json names
    the benchmark's target and leaves its direction to the log's submission_benchmark."""
    root.mkdir(parents=True)
    run = {
        "schema": 1,
        "run_id": root.name,
        "repo": "real/logs",
        "sha": "0" * 40,
        "ref": "refs/heads/main",
        "model": "m",
        "target_accuracy": target,
        "accuracy_tolerance": 0.001,
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
    (root / "run.json").write_text(json.dumps(run))
    folder = root / "c"
    folder.mkdir()
    (folder / "result_0.txt").write_bytes(log.read_bytes())
    manifest = {
        "schema": 1,
        "node": 0,
        "exit_code": 0,
        "started_at": "2026-11-30T00:00:00Z",
        "finished_at": "2026-11-30T01:00:00Z",
        "wall_s": 3600.0,
        "files": [{"path": "result_0.txt", "role": "trainer", "rank": 0, "kind": "log"}],
    }
    (folder / "node-0.json").write_text(json.dumps(manifest))
    return root


@pytest.mark.parametrize(
    "entry", [e for e in LLM if e["kpi"] == "time_to_accuracy_s"], ids=_entry_id
)
def test_each_mlperf_llm_log_gives_its_time_to_train_without_a_stated_direction(
    entry: dict[str, Any], tmp_path: Path
) -> None:
    benchmark = Path(entry["path"]).parent.name
    run = _run_without_direction(tmp_path / "run", _log(entry), MLPERF_TARGETS[benchmark])
    cfg = compute_run_kpis(LocalRunSource(run)).configs[0]
    assert cfg.status == "ok", cfg.problems
    _assert_close(cfg.time_to_accuracy_s, entry["value"], entry["tolerance_rel"])


def test_a_run_whose_mlperf_llm_log_fixes_the_direction_is_judged_in_it(tmp_path: Path) -> None:
    """run.json states no direction; Llama 2 70B LoRA's log names its benchmark, whose
    quality metric (eval loss) is lower-is-better: the run, not only its config, says so,
    and judges test_accuracy that way (a falling loss is no regression)."""
    every = json.loads((ROOT / "tests" / "data" / "real" / "expected.json").read_text())
    logs = [
        REAL / e["path"]
        for e in every
        if e["kpi"] == "time_to_accuracy_s" and "llama2_70b_lora" in e["path"]
    ]
    log = next((p for p in logs if p.is_file()), None)
    if log is None:
        pytest.skip(f"no Llama 2 70B LoRA log in {REAL} yet (see tests/data/real/README.md)")
    run = _run_without_direction(tmp_path / "run", log, MLPERF_TARGETS["llama2_70b_lora"])
    kpis = compute_run_kpis(LocalRunSource(run))
    assert kpis.configs[0].quality_direction is Direction.LOWER
    assert kpis.accuracy_direction is Direction.LOWER
    assert kpis.to_json()["accuracy_direction"] == "lower"
    assert run_direction(kpis, "test_accuracy") is False
    stored = ConfigKpis.from_record(kpis.configs[0].to_record())
    assert stored.quality_direction is Direction.LOWER


def test_the_expected_llm_numbers_cover_every_family_and_kpi() -> None:
    families = {e["family"] for e in LLM}
    kpis = {e["kpi"] for e in LLM}
    assert families == {"torchtitan", "megatron", "deepspeed", "maxtext", "mlperf_llm"}
    assert {"tokens_per_s", "step_time_s", "tflops_per_gpu", "mfu", "loss"} <= kpis
    assert kpis <= set(FROM_SUMMARY) | {"time_to_accuracy_s"}  # every entry is checked
    golden = {e["kpi"] for e in LLM if e["format"] == GOLDEN_FORMAT}
    assert golden and golden <= set(FROM_GOLDEN)
