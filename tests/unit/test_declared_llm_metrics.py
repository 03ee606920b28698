"""A suite's own patterns for language-model logs (`metrics:`): numbers with thousands
separators and units, memory, tokens, step time, loss, and a value derived from two groups
of one line by a fixed grammar (never evaluated code). The lines are those of
tests/data/llm (README there)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from distkpi.domain.logs.declared import COUNT, MEMORY_MIB, TIME_S, quantity
from distkpi.domain.logs.logformats import ParseSettings, parse_log
from distkpi.domain.logs.logsummary import Level, LogSummary, Per
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.domain.planning.suites import parse_suite
from distkpi.exceptions import ContractError

DATA = Path(__file__).resolve().parents[1] / "data" / "llm"
SUITE = """\
name: llm
command: [python, train.py]
target_accuracy: 0.7
accuracy_pass: 0
accuracy_tolerance: 0.01
configs: [{name: 1x8, trainers: 1, gpus_per_trainer: 8, batch_size: 256}]
"""


def read(name: str, metrics: dict[str, Any]) -> LogSummary:
    settings = ParseSettings(metrics=DeclaredMetrics.model_validate(metrics))
    with (DATA / name).open("rb") as log:
        return parse_log(log, settings)


@pytest.mark.parametrize(
    ("text", "units", "default", "value"),
    [
        ("6,697", COUNT, "", 6697.0),
        ("177,138", COUNT, "", 177138.0),
        ("1.2k", COUNT, "", 1200.0),
        ("3.5e+03", COUNT, "", 3500.0),
        ("4,741.68", COUNT, "", 4741.68),
        ("33.94GiB", MEMORY_MIB, "MiB", 33.94 * 1024),
        ("6.12GB", MEMORY_MIB, "MiB", 6.12 * 1024),
        ("623.5", MEMORY_MIB, "MiB", 623.5),
        ("2.5", MEMORY_MIB, "GiB", 2.5 * 1024),
        ("850ms", TIME_S, "s", 0.85),
        ("12137.8", TIME_S, "ms", 12.1378),
        ("1,2", COUNT, "", None),  # a decimal comma is not a thousands separator
        ("33.94GiB", COUNT, "", None),  # a memory unit on a count
        ("n/a", COUNT, "", None),
    ],
)
def test_numbers_with_separators_and_units(
    text: str, units: dict[str, float], default: str, value: float | None
) -> None:
    got = quantity(text, units, default)
    assert got == (pytest.approx(value) if value is not None else None)


def test_torchtitan_declared_tokens_memory_and_loss() -> None:
    out = read(
        "torchtitan.log",
        {
            "tokens_per_s": {"pattern": r"tps: (?P<value>[0-9,]+)", "per": "card"},
            "gpu_memory": {"pattern": r"memory: +(?P<value>[0-9.]+GiB)", "role": "trainer"},
            "loss": {"pattern": r"step: +(?P<step>\d+) +loss: +(?P<value>[0-9.]+)"},
        },
    )
    assert out.tokens_per_s.kept == [3502, 177138, 189694]
    assert (out.framework_memory_mib, out.framework_memory_role) == (
        pytest.approx(2.49 * 1024),
        "trainer",
    )
    assert out.framework_memory_kind == "declared"
    assert out.loss_by_step == {1: 8.1661, 2: 6.1098, 3: 4.7947}


def test_a_derived_samples_per_s_from_two_groups_of_one_line() -> None:
    pattern = (
        r"elapsed time per iteration \(s\): (?P<den>[0-9.]+) \|.*global batch size: +(?P<num>\d+)"
    )
    out = read(
        "megatron_deepspeed.log",
        {"samples_per_s": {"pattern": pattern, "value": "num / den", "per": "job"}},
    )
    assert out.throughput[Level.ITERATION].kept == pytest.approx([96 / 7.2310, 96 / 5.3551])
    assert out.throughput_per() is Per.JOB


def test_a_declared_step_time_in_milliseconds() -> None:
    out = read(
        "megatron.log",
        {"step_time_s": {"pattern": r"per iteration \(ms\): (?P<value>[0-9.]+)", "unit": "ms"}},
    )
    assert out.step_time_s.kept == pytest.approx([3.9027, 0.6894, 0.6454, 0.6135, 0.6244])


def test_declared_kpis_take_the_place_of_the_built_in_readers() -> None:
    # the built-in torchtitan reader reads tps; the suite's pattern reads tflops as tokens
    # (nonsense, but the suite's to state): its figures are the ones kept
    out = read(
        "torchtitan.log",
        {"tokens_per_s": {"pattern": r"tflops: (?P<value>[0-9.]+)", "per": "card"}},
    )
    assert out.tokens_per_s.kept == [1.90, 96.17, 102.99]
    assert out.loss_by_step == {1: 8.1661, 2: 6.1098, 3: 4.7947}  # not declared: built-in


def test_a_derived_value_divided_by_zero_is_skipped_with_a_problem(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text("samples 64 seconds 0\n")
    metrics = {
        "samples_per_s": {
            "pattern": r"samples (?P<n>\d+) seconds (?P<t>\d+)",
            "value": "n / t",
            "per": "job",
        }
    }
    with log.open("rb") as f:
        out = parse_log(f, ParseSettings(metrics=DeclaredMetrics.model_validate(metrics)))
    assert out.best_throughput() is None
    assert out.problems == ["a declared value divides by zero; skipped"]


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        (
            {
                "samples_per_s": {
                    "pattern": r"(?P<num>\d+) (?P<den>\d+)",
                    "value": "num ** den",
                    "per": "job",
                }
            },
            "value 'num ** den' is not two group names and one of + - * / (e.g. 'num / den')",
        ),
        (
            {
                "samples_per_s": {
                    "pattern": r"(?P<num>\d+)",
                    "value": "__import__('os') / num",
                    "per": "job",
                }
            },
            "is not two group names and one of + - * /",
        ),
        (
            {"samples_per_s": {"pattern": r"(?P<num>\d+)", "value": "num / den", "per": "job"}},
            "has no (?P<den>...) group",
        ),
        (
            {
                "throughput": {"pattern": r"(?P<value>\d+)", "per": "job"},
                "samples_per_s": {"pattern": r"(?P<value>\d+)", "per": "job"},
            },
            "throughput and samples_per_s are the same KPI: state one",
        ),
        (
            {"gpu_memory": {"pattern": r"(?P<value>\d+)", "unit": "furlongs"}},
            "metrics.gpu_memory.unit",
        ),
        (
            {"tokens_per_s": {"pattern": r"(?<=x)(?P<value>\d+)", "per": "card"}},
            "not a valid RE2 pattern",
        ),
    ],
)
def test_a_bad_declaration_is_an_error_naming_the_suite(
    metrics: dict[str, Any], message: str
) -> None:
    with pytest.raises(ContractError) as err:
        parse_suite(SUITE + yaml.safe_dump({"metrics": metrics}), "infra/suites/llm.yaml")
    assert str(err.value).startswith("infra/suites/llm.yaml: invalid suite: ")
    assert message in str(err.value)


def test_run_json_keeps_only_what_the_suite_states() -> None:
    stated = {"tokens_per_s": {"pattern": r"tps: (?P<value>[0-9,]+)", "per": "card"}}
    assert DeclaredMetrics.model_validate(stated).model_dump(mode="json") == stated


def test_a_declared_nan_loss_is_counted() -> None:
    # the torchtitan excerpt's format with the loss diverged (`{loss:7.4f}` of a NaN)
    metrics = {"loss": {"pattern": r"step: +(?P<step>\d+) +loss: +(?P<value>\S+)"}}
    settings = ParseSettings(metrics=DeclaredMetrics.model_validate(metrics))
    text = b"step:  1  loss:  8.1661  tps: 3,502\nstep:  2  loss:     nan  tps: 3,502\n"
    out = parse_log(io.BytesIO(text), settings)
    assert out.loss_by_step == {1: 8.1661}
    assert (out.nonfinite_losses, out.first_nonfinite_step) == (1, 2)
