"""The seed's KPI table as text: KPI rows by config columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from distkpi.domain.accuracy import Target, describe, describe_target, reached_sign
from distkpi.domain.durations import short_seconds
from distkpi.domain.kpis.engine import ConfigKpis, RunKpis

if TYPE_CHECKING:  # the KPI table is drawn without the statistics (`distkpi kpis`)
    from distkpi.domain.judging.statistics import Judgement

_Row = tuple[str, Callable[[ConfigKpis], str]]


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{unit}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else short_seconds(value)


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.4f}"


def _accuracy(c: ConfigKpis) -> str:
    if c.test_accuracy_parts:
        return describe(dict(c.test_accuracy_parts))
    return _num(c.test_accuracy, ".4f")


def time_to_target_label(run: RunKpis, target: Target, unicode: bool = False) -> str:
    sign = reached_sign(run.accuracy_direction, unicode)
    return f"time to acc {sign} {describe_target(target)} (s)"


ROWS: tuple[_Row, ...] = (
    ("GPUs", lambda c: str(c.gpus)),
    ("status", lambda c: c.status.value),
    ("speedup", lambda c: _num(c.speedup, ".2f")),
    ("efficiency", lambda c: _num(c.efficiency, ".2f")),
    ("throughput (samples/s)", lambda c: _num(c.throughput, ".1f")),
    ("time to accuracy (s)", lambda c: _seconds(c.time_to_accuracy_s)),
    ("trainer GPU memory (MiB)", lambda c: _num(c.trainer_gpu_memory_mib, ".0f")),
    ("pserver GPU memory (MiB)", lambda c: _num(c.pserver_gpu_memory_mib, ".0f")),
    ("test accuracy", _accuracy),
    ("accuracy delta", lambda c: _signed(c.accuracy_delta)),
    ("GPU-hours", lambda c: _num(c.gpu_hours, ".3g")),
    ("hardware", lambda c: c.hardware or "-"),
)


def render_table(run: RunKpis, target_accuracy: Target | None = None) -> str:
    header = ["KPI", *(c.name for c in run.configs)]
    rows = [[label, *(cell(c) for c in run.configs)] for label, cell in ROWS]
    if target_accuracy is not None:
        rows[5][0] = time_to_target_label(run, target_accuracy)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(w) for cell, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    cost = f"  {run.gpu_hours:.3g} GPU-hours" if run.gpu_hours is not None else ""
    out = [f"run {run.run_id}  model {run.model}  base {run.base_config}{cost}", line(header)]
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(r) for r in rows)
    problems = [(c.name, p) for c in run.configs for p in c.problems]
    if problems:
        out.append("")
        out.append("problems:")
        out.extend(f"  {name}: {p}" for name, p in problems)
    return "\n".join(out)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def render_judgements(judgements: Sequence[Judgement]) -> str:
    """Each KPI against its baseline: value, allowed range, delta, verdict and why."""
    header = ["config", "kpi", "value", "baseline", "low", "high", "delta", "verdict", "why"]
    rows = [
        [
            j.config,
            j.kpi,
            _cell(j.value),
            _cell(j.baseline),
            _cell(j.low),
            _cell(j.high),
            "-" if j.delta is None else f"{j.delta:+.1%}",
            j.verdict.value,
            j.why,
        ]
        for j in judgements
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    )
