"""The numbers a bisection decides by: each regressed KPI's ends (its value at the good and
the bad commit, and the history whose noise judged it) and a step run's value of each."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from distkpi.domain.bisect.deciding import Ends
from distkpi.domain.bisect.plan import Bisection
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.history import HistoryRow, after_resets, evidence_of, series
from distkpi.domain.judging.paired import pair_d, paired_values
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.judging.statistics import KpiVerdict


def _value_at(rows: Sequence[HistoryRow], sha: str, config: str, kpi: str) -> float | None:
    values = [
        r.value
        for r in rows
        if r.sha == sha and r.config == config and r.kpi == kpi and r.value is not None
    ]
    return values[-1] if values else None


def regression_ends(
    evaluation: Evaluation,
    rows: Sequence[HistoryRow],
    resets: Mapping[str, str],
    settings: VerdictSettings,
    *,
    good: str,
    configs: Sequence[str],
    paired: bool = False,
) -> list[Ends]:
    """Each regressed KPI of ``configs`` in the bad run's ``evaluation``, judged against
    ``rows``: the good commit's value (its run among the rows, else the baseline's mean), the
    bad run's, and the history it was judged by. A paired suite's step is an A/B of the good
    commit, so its ends are d = 0 and the bad run's d from the good value, and its history
    the paired history (the rows' first-pair d)."""
    evidence = {(e.config, e.kpi): e for e in evidence_of(evaluation.kpis, rows, settings, resets)}
    kept = after_resets(rows, resets)
    out = []
    for j in evaluation.judgements:
        if j.verdict is not KpiVerdict.REGRESSED or j.config not in configs:
            continue
        e = evidence.get((j.config, j.kpi))
        at_good = _value_at(rows, good, j.config, j.kpi)
        good_value = at_good if at_good is not None else j.baseline
        if j.value is None or e is None or good_value is None:
            continue
        if not paired:
            out.append(
                Ends(j.config, j.kpi, good_value, j.value, e.history, e.earlier, e.higher_is_better)
            )
            continue
        bad_d = pair_d(j.kpi, good_value, j.value)
        hardware = evaluation.kpis.config(j.config).hardware
        history = series(kept, j.config, j.kpi, hardware=hardware, paired=True)
        if bad_d is not None:
            out.append(Ends(j.config, j.kpi, 0.0, bad_d, tuple(history), (), e.higher_is_better))
    return out


def step_values(bisection: Bisection, evaluation: Evaluation) -> dict[str, float]:
    """A step run's value of each regressed KPI (deciding.kpi_key): a paired step's mean d
    over its pairs (scaling KPIs against the base config's same pairs)."""
    configs = {c.name: c for c in evaluation.kpis.configs}
    base = configs.get(evaluation.kpis.base_config or "")
    values: dict[str, float] = {}
    for e in bisection.ends:
        config = configs.get(e.config)
        if config is None:
            continue
        if bisection.paired:
            own_base = None if base is None or base.name == config.name else base.pairs
            found = paired_values(config.pairs, e.kpi, own_base)
            if found is not None and found.d:
                values[e.key] = statistics.fmean(found.d)
            continue
        value = config.to_json().get(e.kpi)
        if isinstance(value, int | float):
            values[e.key] = float(value)
    return values
