"""KPI history as rows, the baseline a run is judged against, and the judging of a run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distkpi.domain.accuracy import Direction
from distkpi.domain.judging.changepoints import split_at_change
from distkpi.domain.judging.settings import ALL_KPIS, VerdictSettings
from distkpi.domain.judging.statistics import SCALING, KpiEvidence
from distkpi.domain.kpis import catalogue
from distkpi.domain.kpis.engine import MIXED, ConfigStatus, RunKpis

HISTORY_COLUMNS = (
    "finished_at",
    "repo",
    "branch",
    "model",
    "config",
    "sha",
    "run_id",
    "kpi",
    "value",
    "status",
    "hardware",
    "gpu_hours",
    "paired_d",
    "calibration",
    "layout",
)


@dataclass(frozen=True)
class HistoryRow:
    """One KPI of one config of one finished run: a row of `distkpi history --format csv`."""

    finished_at: str
    repo: str
    branch: str
    model: str
    config: str
    sha: str
    run_id: str
    kpi: str
    value: float | None
    status: str = "ok"
    hardware: str | None = None  # None: recorded before runs knew their hardware
    gpu_hours: float | None = None  # the config's, on each of its KPIs' rows
    # a paired run's first pair: ln(B/A) (B - A for test accuracy), the paired history
    paired_d: float | None = None
    # an A/A run of `distkpi calibrate`: in the paired history each such run counts, not
    # only the commit's latest
    calibration: bool = False
    # the config's parallel layout where its suite states one: "tp=2 pp=4 dp=8"
    layout: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in HISTORY_COLUMNS}


def until_commit(rows: Sequence[HistoryRow], sha: str | None) -> list[HistoryRow]:
    """Rows up to and including the runs of ``sha`` (a merge base); all rows when it has none."""
    if sha is None:
        return list(rows)
    last = max((i for i, row in enumerate(rows) if row.sha == sha), default=None)
    return list(rows) if last is None else list(rows[: last + 1])


def series(
    rows: Iterable[HistoryRow],
    config: str,
    kpi: str,
    reset_after: str | None = None,
    hardware: str | None = None,
    *,
    paired: bool = False,
    repeats: bool = False,
) -> list[float]:
    """Values of one KPI of one config in time order: only ok runs on the same hardware,
    only after a reset, and a commit once, by its latest run (a re-run's earlier runs stay
    in the history, but are not counted twice), or with ``repeats`` every run (a suite's
    `count_repeats`). Mixed hardware is compared with nothing.
    ``paired``: the paired runs' first-pair differences (``paired_d``) instead, where each
    A/A calibration run counts on its own (they measure one commit on purpose)."""
    if hardware == MIXED:
        return []
    by_commit: dict[str, float] = {}
    for row in rows:
        value = row.paired_d if paired else row.value
        if (
            row.config == config
            and row.kpi == kpi
            and value is not None
            and row.status == ConfigStatus.OK.value
            and row.hardware == hardware
            and (reset_after is None or row.finished_at > reset_after)
        ):
            by_commit[row.run_id if repeats or (paired and row.calibration) else row.sha] = value
    return list(by_commit.values())


def after_resets(rows: Iterable[HistoryRow], resets: Mapping[str, str]) -> list[HistoryRow]:
    """The rows that still count after the audited resets (config -> time, '*' all)."""
    kept = []
    for row in rows:
        reset = max((resets[k] for k in (row.config, "*") if k in resets), default=None)
        if reset is None or row.finished_at > reset:
            kept.append(row)
    return kept


def evidence_of(
    run: RunKpis,
    history: Sequence[HistoryRow],
    settings: VerdictSettings,
    resets: Mapping[str, str] | None = None,
) -> list[KpiEvidence]:
    """Every KPI of every ok config with its baseline (resets: config -> time, '*' all)."""
    resets = resets or {}
    out = []
    for config in run.configs:
        if config.status is not ConfigStatus.OK:
            continue
        reset = max((resets[k] for k in (config.name, "*") if k in resets), default=None)
        for kpi in listed_kpis(run, settings):
            values_before = series(
                history, config.name, kpi, reset, config.hardware, repeats=settings.count_repeats
            )
            earlier, baseline = split_at_change(values_before, settings)
            value = config.value(kpi)
            per_run = config.run_values.get(kpi) or (() if value is None else (value,))
            definition = catalogue.kpi(kpi)
            out.append(
                KpiEvidence(
                    config.name,
                    kpi,
                    tuple(per_run) if value is not None else (),
                    tuple(baseline),
                    config.throughput_samples if kpi == "throughput" else (),
                    config.converged is False,
                    tuple(earlier[-settings.window :]),
                    run_direction(run, kpi),
                    definition.applicable(config)
                    and not (definition.not_of_base and config.name == run.base_config),
                    by_definition=config.name == run.base_config and kpi in SCALING,
                    diverged=config.diverged,
                    beyond_limit=definition.limited and kpi in config.beyond_limits,
                )
            )
    return out


def run_direction(run: RunKpis, kpi: str) -> bool | None:
    """The run's word on which way ``kpi`` is better, for a KPI whose direction is the
    run's (test accuracy of a lower-is-better metric); None: the KPI's own."""
    if catalogue.kpi(kpi).higher_is_better is not None:
        return None
    return run.accuracy_direction is Direction.HIGHER


def listed_kpis(run: RunKpis, settings: VerdictSettings) -> tuple[str, ...]:
    """The KPIs a run is judged on: the seed's always, an optional one (an LLM KPI) where a
    config of the run measured it or the suite enforces it by name."""
    measured = {k for c in run.configs for k in ALL_KPIS if c.value(k) is not None}
    return tuple(
        kpi
        for kpi in ALL_KPIS
        if not catalogue.kpi(kpi).optional
        or kpi in measured
        or (settings.enforced_by_suite and kpi in settings.enforced)
    )
