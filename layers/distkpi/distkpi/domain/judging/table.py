"""The seed's KPI table as text: KPI rows by config columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distkpi.domain.accuracy import Target, describe, describe_target, reached_sign
from distkpi.domain.durations import short_seconds
from distkpi.domain.kpis import catalogue
from distkpi.domain.kpis.catalogue import Kpi
from distkpi.domain.kpis.engine import ConfigKpis, RunKpis

if TYPE_CHECKING:  # the KPI table is drawn without the statistics (`distkpi kpis`)
    from distkpi.domain.judging.statistics import Judgement


@dataclass(frozen=True)
class Row:
    """A row of the KPI table: its label, each config's cell, and the KPI it shows (None:
    a fact about the config, never judged)."""

    label: str
    cell: Callable[[ConfigKpis], str]
    kpi: Kpi | None = None


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{unit}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else short_seconds(value)


def _accuracy(c: ConfigKpis) -> str:
    if c.test_accuracy_parts:
        return describe(dict(c.test_accuracy_parts))
    return _num(c.test_accuracy, ".4f")


def time_to_target_label(run: RunKpis, target: Target, unicode: bool = False) -> str:
    sign = reached_sign(run.accuracy_direction, unicode)
    return f"time to acc {sign} {describe_target(target)} (s)"


def _layout(c: ConfigKpis) -> str:
    return (
        " ".join(
            f"{k}{v}" if k in ("tp", "pp", "dp", "ep", "cp") else f"{k}={v}"
            for k, v in c.layout.items()
        )
        or "-"
    )


def _kpi_cell(kpi: Kpi) -> Callable[[ConfigKpis], str]:
    if kpi.name == "test_accuracy":
        return _accuracy
    if kpi.names_target:
        return lambda c: _seconds(c.value(kpi.name))
    return lambda c: _num(c.value(kpi.name), kpi.fmt)


def rows(
    run: RunKpis | None = None, target: Target | None = None, unicode: bool = False
) -> list[Row]:
    """The table's rows: the config's GPUs and status, its KPIs in the catalogue's table
    order (an optional one only where a config of ``run`` measured it; time to accuracy
    labelled by the run's ``target``), then its cost and hardware."""
    out = [Row("GPUs", lambda c: str(c.gpus)), Row("status", lambda c: c.status.value)]
    if run is not None and any(c.layout for c in run.configs):
        out.append(Row("layout", _layout))
    for kpi in catalogue.table_order():
        if kpi.optional and (run is None or all(c.value(kpi.name) is None for c in run.configs)):
            continue
        label = kpi.label
        if kpi.names_target and run is not None and target is not None:
            label = time_to_target_label(run, target, unicode)
        out.append(Row(label, _kpi_cell(kpi), kpi))
    out.append(Row("GPU-hours", lambda c: _num(c.gpu_hours, ".3g")))
    out.append(Row("hardware", lambda c: c.hardware or "-"))
    return out


def render_table(run: RunKpis, target_accuracy: Target | None = None) -> str:
    header = ["KPI", *(c.name for c in run.configs)]
    table = [[r.label, *(r.cell(c) for c in run.configs)] for r in rows(run, target_accuracy)]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(w) for cell, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    cost = f"  {run.gpu_hours:.3g} GPU-hours" if run.gpu_hours is not None else ""
    out = [f"run {run.run_id}  model {run.model}  base {run.base_config}{cost}", line(header)]
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(r) for r in table)
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
