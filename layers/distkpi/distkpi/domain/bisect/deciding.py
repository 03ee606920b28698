"""A step's side: is the midpoint's run on the good commit's side or the bad one's, for the
KPIs that regressed, by the verdict's own test (statistics.py: the history's pooled noise,
a one-sided Student-t p-value, on the log scale for rates, times and memory).

For each regressed KPI the step's mean is tested twice: is it worse than the good commit's
value, and is it better than the bad commit's, each at the suite's false-failure rate split
over the regressed KPIs. A KPI is bad when only the first holds, good when only the second
does, and neither when both or none do (the step lies between the ends, or its noise hides
which end it is at). The step takes a side only when every regressed KPI agrees; otherwise
it is run again, and judged on the mean of both runs, whose noise is smaller."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from distkpi.domain.judging.settings import LOG_SCALE, more_is_better
from distkpi.domain.judging.statistics import Spread, harm_p_value, spread_of


class Side(StrEnum):
    GOOD = "good"
    BAD = "bad"
    NEITHER = "neither"  # too near both ends, or between them: run it again
    ERROR = "error"  # the step's run ended `error`: retried once


def kpi_key(config: str, kpi: str) -> str:
    return f"{config}/{kpi}"


@dataclass(frozen=True)
class Ends:
    """One regressed KPI of one config: its value at the good and at the bad commit, and the
    history whose noise the bad run was judged by (the values before its last step change in
    ``earlier``)."""

    config: str
    kpi: str
    good: float
    bad: float
    history: tuple[float, ...]
    earlier: tuple[float, ...] = ()
    higher_is_better: bool | None = None  # None: the KPI's own (HIGHER_IS_BETTER)

    @property
    def key(self) -> str:
        return kpi_key(self.config, self.kpi)

    @property
    def better_higher(self) -> bool:
        return more_is_better(self.kpi, self.higher_is_better)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "kpi": self.kpi,
            "good": self.good,
            "bad": self.bad,
            "history": list(self.history),
            "earlier": list(self.earlier),
            "higher_is_better": self.higher_is_better,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ends:
        better = data.get("higher_is_better")
        return cls(
            str(data["config"]),
            str(data["kpi"]),
            float(data["good"]),
            float(data["bad"]),
            tuple(float(v) for v in data.get("history", ())),
            tuple(float(v) for v in data.get("earlier", ())),
            None if better is None else bool(better),
        )


def _to_end(spread: Spread, end: float, runs: int) -> Spread:
    """The spread of the step's mean against one end, itself one run: spread_of's error is
    against a mean of n values (s^2/n + s^2/k, no machine share), one run's is s^2 + s^2/k."""
    factor = math.sqrt((1 + 1 / runs) / (1 / spread.n + 1 / runs))
    return Spread(end, spread.error * factor, spread.df, spread.n)


def kpi_side(ends: Ends, values: Sequence[float], level: float) -> Side:
    """One regressed KPI's side at the step, its runs' ``values`` tested at ``level``. A
    history too short for a spread (the bad run was judged by the suite's tolerance) leaves
    no test: the nearer end decides."""
    if not values:
        return Side.NEITHER
    parts = (ends.history, ends.earlier, tuple(values), (ends.good, ends.bad))
    log = ends.kpi in LOG_SCALE and all(v > 0 for part in parts for v in part)
    history, earlier, runs, (good, bad) = (
        tuple(math.log(v) for v in part) if log else part for part in parts
    )
    mean = sum(runs) / len(runs)
    if len(history) < 2:
        to_good, to_bad = abs(mean - good), abs(mean - bad)
        return Side.NEITHER if to_good == to_bad else Side.GOOD if to_good < to_bad else Side.BAD
    spread = spread_of(history, runs, (), earlier)
    higher = ends.better_higher
    worse_than_good = harm_p_value(higher, mean, _to_end(spread, good, len(runs))) <= level
    better_than_bad = harm_p_value(not higher, mean, _to_end(spread, bad, len(runs))) <= level
    if worse_than_good and not better_than_bad:
        return Side.BAD
    if better_than_bad and not worse_than_good:
        return Side.GOOD
    return Side.NEITHER


def step_side(
    ends: Sequence[Ends], values: Mapping[str, Sequence[float]], false_failure_rate: float
) -> Side:
    """The step's side from its runs' values per regressed KPI (``kpi_key``): the side every
    regressed KPI is on, else neither. A KPI the step did not report is neither."""
    if not ends:
        return Side.NEITHER
    level = false_failure_rate / len(ends)
    sides = {kpi_side(e, values.get(e.key, ()), level) for e in ends}
    return sides.pop() if len(sides) == 1 else Side.NEITHER
