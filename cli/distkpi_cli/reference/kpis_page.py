"""The KPI reference: the catalogue (domain/kpis/catalogue.py), each KPI's unit, direction
and how it is judged, and the fields of a run's KPIs (schemas/kpis.schema.json)."""

from __future__ import annotations

from typing import Any

from distkpi_cli.reference.schema_tables import cell, markdown_table, rows


def _direction(higher: bool | None) -> str:
    if higher is None:
        return "the run's (`accuracy_direction`)"
    return "higher" if higher else "lower"


def page(kpis_schema: dict[str, Any]) -> str:
    from distkpi.domain.judging.settings import KPIS
    from distkpi.domain.kpis.catalogue import CATALOGUE

    out = [
        "# KPIs",
        "",
        "Every KPI distkpi computes, from the KPI catalogue "
        "(`layers/distkpi/distkpi/domain/kpis/catalogue.py`), the one place a KPI is added. "
        "*Direction*: which way is better. *Judged*: against its history (accuracy delta is "
        "judged across the configs of one run instead). *Scale*: rates, times and memory "
        "vary by a factor and are judged on the log scale. *Enforced by default*: judged "
        "when a suite's `verdict.enforced` does not list its own; the others (the "
        "language-model KPIs) are shown where some config measured them and judged where a "
        "suite names them.",
        "",
        "| KPI | unit | label | direction | measured | judged | scale | enforced by default |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k in CATALOGUE:
        measured = "derived against the base config" if k.derived else "per config, from its logs"
        scale = "log" if k.log_scale else "linear"
        out.append(
            f"| `{k.name}` | {k.unit or 'ratio'} | {cell(k.label)} "
            f"| {_direction(k.higher_is_better)} "
            f"| {measured} | {'yes' if k.judged else 'no'} | {scale} "
            f"| {'yes' if k.name in KPIS else 'no'} |"
        )
    out += [
        "",
        "## A run's KPIs as JSON",
        "",
        "`distkpi kpis --json` prints, and the collector stores, one object that follows "
        "`layers/distkpi/distkpi/schemas/kpis.schema.json`:",
        "",
        markdown_table(rows(kpis_schema), with_default=False),
    ]
    return "\n".join(out)
