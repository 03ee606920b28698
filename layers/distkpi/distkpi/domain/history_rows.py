"""What stored history records say: rows, one per KPI, for judging and the history files,
and what a run has cost lately."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.settings import ALL_KPIS
from distkpi.domain.kpis import catalogue
from distkpi.domain.records import HistoryRecord


def layout_text(layout: Mapping[str, int]) -> str | None:
    """A layout as one column's text, in the order the suite's fields have: "tp=2 pp=4 dp=8"."""
    return " ".join(f"{k}={v}" for k, v in layout.items()) or None


def rows_from_records(records: Iterable[HistoryRecord]) -> list[HistoryRow]:
    """History records (one per run and config) as rows, one per KPI, oldest first."""
    rows = [
        HistoryRow(
            finished_at=r.finished_at,
            repo=r.repo,
            branch=r.branch,
            model=r.model,
            config=r.config,
            sha=r.sha,
            run_id=r.run_id,
            kpi=kpi,
            value=r.kpis.value(kpi),
            status=r.kpis.status.value,
            hardware=r.kpis.hardware,
            gpu_hours=r.kpis.gpu_hours,
            paired_d=r.paired.get(kpi),
            calibration=r.calibration,
            layout=layout_text(r.kpis.layout),
        )
        for r in records
        for kpi in ALL_KPIS
        if not catalogue.kpi(kpi).optional or r.kpis.value(kpi) is not None
    ]
    return sorted(rows, key=lambda row: row.finished_at)


def recent_gpu_hours(records: Iterable[HistoryRecord], runs: int = 5) -> tuple[float | None, int]:
    """What a run of the model cost lately: the median GPU-hours of the ``runs`` newest runs
    in ``records`` (newest first, as the history gives them) that know theirs, and how many
    runs that median is of."""
    per_run: dict[str, float] = {}
    for record in records:
        if record.kpis.gpu_hours is None:
            continue
        if record.run_id not in per_run and len(per_run) == runs:
            break
        per_run[record.run_id] = per_run.get(record.run_id, 0.0) + record.kpis.gpu_hours
    if not per_run:
        return None, 0
    return statistics.median(per_run.values()), len(per_run)
