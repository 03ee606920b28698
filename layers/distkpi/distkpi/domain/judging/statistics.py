"""The KPIs of a commit against their history, without crying wolf on noisy numbers.

A merge request fails when any enforced KPI of any config regresses, so the error that
matters is per run: the suite's ``false_failure_rate`` (default 1%) is the chance that an
unchanged commit fails at all. It is split over the run's tests by Holm's step-down method,
which holds under any dependence between them. Speedup and efficiency are one test per
config (efficiency is speedup over a constant), throughput and speedup are not the same test
(speedup also moves with the base config), so each config has one scaling family beside its
other KPIs.

Each test compares the mean of the commit's k runs (one, unless it was confirmed by
re-running) with the baseline window of n values: a one-sided Student-t prediction interval,
baseline mean -/+ t * sqrt(s^2 / n + v), where s^2 is the history's variance (pooled over
the segments before and after its last step change) and v that of the new mean. One run:
v = s^2, plus its within-run spread when it reports samples. k runs: s^2 is pooled with the
runs' own variance (so runs that disagree more than the history widen it), and
v = s^2 * (m + (1 - m) / k), m being the suite's `confirm.machine_share` (default 0): the
part of the noise that belongs to the machine stays when a commit is re-run on it.
Rates, times and memory (every KPI but test accuracy) vary by a factor, so they are judged
on the log scale: the range is a factor either side of the geometric mean, and a time to
accuracy, the reciprocal of a throughput, is no longer skewed against the interval.
With fewer than ``min_history`` baseline values the range is the suite's relative tolerance
around their mean, which is not a statistical test and takes no part in Holm's split; with
`short_history: warn` a KPI beyond it is said to be, and fails nothing. Only
the harmful direction can regress: throughput, speedup, efficiency and test accuracy must
not fall; time to accuracy and GPU memory must not rise. Where the baseline starts is
changepoints.py's business."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from distkpi.domain.judging.settings import (
    FAMILY,
    LOG_SCALE,
    VerdictSettings,
    more_is_better,
)
from distkpi.domain.judging.student_t import t_quantile, t_sf
from distkpi.domain.kpis import catalogue

# measured against the base config's throughput
SCALING = tuple(k.name for k in catalogue.judged() if k.scaling)
NOT_REPORTED = "enforced but not reported"
DIVERGED = "training diverged: NaN or infinite loss"
BEYOND_LIMIT = "beyond the suite's limit (alignment.max_rel_diff)"


class KpiVerdict(StrEnum):
    PASS = "pass"
    REGRESSED = "regressed"
    IMPROVED = "improved"
    NO_BASELINE = "no-baseline"
    NOT_ENFORCED = "not-enforced"
    # enforced, and the run does not report it: the verdict cannot be given (error)
    MISSING = "missing"
    # beyond the suite's tolerance with too short a history to fail on (`short_history: warn`)
    BEYOND_TOLERANCE = "beyond-tolerance"


@dataclass(frozen=True)
class Judgement:
    config: str
    kpi: str
    value: float | None
    baseline: float | None
    low: float | None
    high: float | None
    verdict: KpiVerdict
    why: str = ""
    runs: int = 1  # how many runs of the commit ``value`` is the mean of
    confidence: float | None = None  # of the range low..high; None: tolerance or no test

    @property
    def delta(self) -> float | None:
        if self.value is None or not self.baseline:
            return None
        return (self.value - self.baseline) / self.baseline

    def to_json(self) -> dict[str, object]:
        return {
            "config": self.config,
            "kpi": self.kpi,
            "value": self.value,
            "baseline": self.baseline,
            "low": self.low,
            "high": self.high,
            "verdict": self.verdict.value,
            "runs": self.runs,
            "confidence": self.confidence,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Judgement:
        def number(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        return cls(
            str(data["config"]),
            str(data["kpi"]),
            number("value"),
            number("baseline"),
            number("low"),
            number("high"),
            KpiVerdict(data["verdict"]),
            str(data.get("why", "")),
            int(data.get("runs", 1)),
            number("confidence"),
        )


@dataclass(frozen=True)
class KpiEvidence:
    """One KPI of one config: what the commit's runs measured, and its baseline."""

    config: str
    kpi: str
    values: tuple[float, ...]  # one per run of the commit; empty when none measured it
    history: tuple[float, ...]  # the baseline window's values, oldest first
    samples: tuple[float, ...] = ()  # within-run samples (one run only)
    never_converged: bool = False
    # the values before the baseline's last step change: they still tell the spread
    earlier: tuple[float, ...] = ()
    # the run's own word on which way is better (test accuracy of a lower-is-better metric);
    # None: the KPI's (HIGHER_IS_BETTER)
    higher_is_better: bool | None = None
    # whether the config can report it at all (pserver GPU memory needs a pserver)
    applicable: bool = True

    # the base config's speedup and efficiency: 1 by definition, so no test (a confirmed
    # run's per-run ratios to their own mean would otherwise be one more Holm family)
    by_definition: bool = False
    # the config's training loss went NaN or Inf: a convergence KPI regresses
    diverged: bool = False
    # beyond the limit the suite sets for it (catalogue.Kpi.limited): it regresses
    beyond_limit: bool = False

    @property
    def never_reached(self) -> bool:
        """Never reached the target, and this KPI says so by regressing (the catalogue's)."""
        return self.never_converged and catalogue.kpi(self.kpi).never_reached

    @property
    def failed_to_converge(self) -> bool:
        return self.diverged and catalogue.kpi(self.kpi).convergence

    @property
    def better_higher(self) -> bool:
        return more_is_better(self.kpi, self.higher_is_better)

    @property
    def value(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None


@dataclass(frozen=True)
class Spread:
    """How far the mean of the commit's runs may stray from the baseline mean by chance."""

    baseline: float
    error: float  # standard error of (new mean - baseline mean)
    df: float
    n: int

    def bounds(self, confidence: float) -> tuple[float, float]:
        slack = t_quantile(confidence, self.df) * self.error if self.error > 0 else 0.0
        return self.baseline - slack, self.baseline + slack


def _sum_of_squares(values: Sequence[float]) -> float:
    mean = statistics.fmean(values)
    return sum((v - mean) ** 2 for v in values)


def spread_of(
    history: Sequence[float],
    values: Sequence[float],
    samples: Sequence[float],
    earlier: Sequence[float] = (),
    machine_share: float = 0.0,
) -> Spread:
    """The prediction interval's centre, standard error and degrees of freedom. The history's
    variance is pooled with that of the values before its last step change, if any."""
    n, k = len(history), len(values)
    mean = statistics.fmean(history)
    segments = [part for part in (history, earlier) if len(part) >= 2]
    pooled_df = sum(len(part) - 1 for part in segments)
    history_var = sum(_sum_of_squares(part) for part in segments) / pooled_df
    if k <= 1:
        new_var = history_var
        if len(samples) >= 2:
            new_var += statistics.variance(samples) / len(samples)
        return Spread(mean, math.sqrt(history_var / n + new_var), pooled_df, n)
    runs_df = k - 1
    runs_var = statistics.variance(values)
    # runs that disagree more than the history widen the spread (pooled, not Welch: with
    # two to four runs Welch's degrees of freedom leave the test no power at all)
    total_var = (pooled_df * history_var + runs_df * runs_var) / (pooled_df + runs_df)
    # the machine's share of the noise stays in a mean of runs on the same hardware
    new_var = total_var * (machine_share + (1 - machine_share) / k)
    return Spread(mean, math.sqrt(total_var / n + new_var), pooled_df + runs_df, n)


def _pooled_df(e: KpiEvidence, window: int) -> int:
    return sum(len(part) - 1 for part in (e.history[-window:], e.earlier) if len(part) >= 2)


@dataclass(frozen=True)
class _Test:
    """A KPI judged statistically: its spread and the p-value of the harm it shows, on the
    log scale when ``log`` (then ``mean`` is the log of the runs' geometric mean)."""

    evidence: KpiEvidence
    spread: Spread
    p: float
    mean: float
    log: bool

    def outside(self, level: float) -> tuple[float, float, KpiVerdict]:
        """The range at 1 - level, on the KPI's own scale, and where the mean falls."""
        low, high = self.spread.bounds(1 - level)
        verdict = _verdict(self.evidence.better_higher, self.mean, low, high)
        if self.log:
            low, high = math.exp(low), math.exp(high)
        return low, high, verdict

    @property
    def baseline(self) -> float:
        return math.exp(self.spread.baseline) if self.log else self.spread.baseline


def _harm(higher: bool, value: float, baseline: float) -> float:
    return baseline - value if higher else value - baseline


def harm_p_value(higher: bool, value: float, spread: Spread) -> float:
    """The chance of at least this much harm from the baseline by chance alone."""
    harm = _harm(higher, value, spread.baseline)
    if spread.error == 0:
        return 0.0 if harm > 0 else 1.0
    return t_sf(harm / spread.error, spread.df)


def _family(e: KpiEvidence) -> tuple[str, str]:
    return e.config, FAMILY.get(e.kpi, e.kpi)


def holm_levels(pvalues: Mapping[Any, float], rate: float) -> tuple[dict[Any, float], float]:
    """Holm's step-down: the tail probability each hypothesis is tested at (rate / (m - i)
    for the i-th smallest p until one is not rejected; that step's for it and all after),
    and the level at which the procedure stopped."""
    order = sorted(pvalues, key=lambda key: pvalues[key])
    levels: dict[Any, float] = {}
    stopped: float | None = None
    for i, key in enumerate(order):
        level = rate / (len(order) - i)
        if stopped is None and pvalues[key] > level:
            stopped = level
        levels[key] = stopped if stopped is not None else level
    return levels, stopped if stopped is not None else rate


def _statistical(evidence: KpiEvidence, settings: VerdictSettings) -> bool:
    """A spread can be estimated: min_history values, counting those before a change."""
    return (
        not evidence.by_definition
        and bool(evidence.values)
        and bool(evidence.history)
        and not evidence.never_reached
        and not evidence.failed_to_converge
        and not evidence.beyond_limit
        and _pooled_df(evidence, settings.window) >= settings.min_history - 1
    )


def _tests(evidence: Iterable[KpiEvidence], settings: VerdictSettings) -> list[_Test]:
    tests = []
    share = settings.confirm.machine_share if settings.confirm else 0.0
    for e in evidence:
        if not _statistical(e, settings):
            continue
        samples = e.samples if len(e.values) == 1 else ()
        parts = (e.history[-settings.window :], e.values, samples, e.earlier)
        log = e.kpi in LOG_SCALE and all(v > 0 for part in parts for v in part)
        recent, values, samples, earlier = (
            tuple(math.log(v) for v in part) if log else part for part in parts
        )
        spread = spread_of(recent, values, samples, earlier, share)
        mean = statistics.fmean(values)
        tests.append(_Test(e, spread, harm_p_value(e.better_higher, mean, spread), mean, log))
    return tests


def _family_pvalues(
    tests: Sequence[_Test], settings: VerdictSettings
) -> dict[tuple[str, str], float]:
    """The p-value of each family of enforced tests, its members' smallest (families with no
    spread are exact comparisons and spend none of the rate)."""
    pvalues: dict[tuple[str, str], float] = {}
    for t in tests:
        if t.evidence.kpi in settings.enforced and t.spread.error > 0:
            key = _family(t.evidence)
            pvalues[key] = min(pvalues.get(key, 1.0), t.p)
    return pvalues


def _verdict(higher: bool, value: float, low: float, high: float) -> KpiVerdict:
    if (value < low) if higher else (value > high):
        return KpiVerdict.REGRESSED
    if (value > high) if higher else (value < low):
        return KpiVerdict.IMPROVED
    return KpiVerdict.PASS


def _capped(e: KpiEvidence, high: float) -> float:
    """A higher-is-better accuracy measured as a fraction (as suites and run.json hold it):
    its allowed range stops at 1, whatever the tolerance or the spread would allow."""
    fraction = e.kpi == "test_accuracy" and e.better_higher
    return min(high, 1.0) if fraction and max((*e.history, *e.values)) <= 1.0 else high


def _without_test(e: KpiEvidence, settings: VerdictSettings) -> Judgement:
    """A KPI with no statistical test: never converged, no value, no baseline, or too
    short a baseline for a spread (then the suite's tolerance)."""
    enforced = e.kpi in settings.enforced
    runs = len(e.values) or 1
    if e.by_definition and e.history:  # equal to its baseline, whatever the runs measured
        verdict = KpiVerdict.PASS if enforced else KpiVerdict.NOT_ENFORCED
        mean = statistics.fmean(e.history)
        why = "the base config's: 1 by definition, no test"
        return Judgement(e.config, e.kpi, e.value, mean, None, None, verdict, why, runs)
    if e.failed_to_converge or e.beyond_limit:
        verdict = KpiVerdict.REGRESSED if enforced else KpiVerdict.NOT_ENFORCED
        base = statistics.fmean(e.history) if e.history else None
        why = DIVERGED if e.failed_to_converge else BEYOND_LIMIT
        return Judgement(e.config, e.kpi, e.value, base, None, None, verdict, why, runs)
    if e.never_reached:
        verdict = KpiVerdict.REGRESSED if enforced else KpiVerdict.NOT_ENFORCED
        base = statistics.fmean(e.history) if e.history else None
        return Judgement(
            e.config, e.kpi, None, base, None, None, verdict, "never reached the target", runs
        )
    value = e.value
    if value is None and enforced and e.applicable and settings.enforced_by_suite:
        return Judgement(e.config, e.kpi, None, None, None, None, KpiVerdict.MISSING, NOT_REPORTED)
    if value is None or not e.history:
        why = "no value" if value is None else "no baseline"
        verdict = KpiVerdict.NO_BASELINE if enforced else KpiVerdict.NOT_ENFORCED
        return Judgement(e.config, e.kpi, value, None, None, None, verdict, why, runs)
    recent = e.history[-settings.window :]
    mean = statistics.fmean(recent)
    tolerance = settings.tolerance_of(e.kpi)
    low, high = mean - abs(mean) * tolerance, _capped(e, mean + abs(mean) * tolerance)
    verdict = _verdict(e.better_higher, value, low, high) if enforced else KpiVerdict.NOT_ENFORCED
    how = f"{len(recent)} baseline value(s): ±{tolerance:.0%} tolerance"
    if verdict is KpiVerdict.REGRESSED and settings.short_history == "warn":
        verdict = KpiVerdict.BEYOND_TOLERANCE
        how += f"; too few to fail on ({settings.min_history} needed)"
    return Judgement(e.config, e.kpi, value, mean, low, high, verdict, how, runs)


def judge_all(
    evidence: Sequence[KpiEvidence], settings: VerdictSettings, rate: float | None = None
) -> list[Judgement]:
    """Every KPI judged, the run's false-failure ``rate`` (default the suite's) split over
    its enforced tests by Holm; in the order of ``evidence``."""
    rate = settings.false_failure_rate if rate is None else rate
    tests = {id(t.evidence): t for t in _tests(evidence, settings)}
    levels, stopped = holm_levels(_family_pvalues(list(tests.values()), settings), rate)
    out = []
    for e in evidence:
        test = tests.get(id(e))
        if test is None:
            out.append(_without_test(e, settings))
            continue
        level = levels.get(_family(e), stopped)
        low, high, verdict = test.outside(level)
        high = _capped(e, high)
        value = e.value or 0.0
        if e.kpi not in settings.enforced:
            verdict = KpiVerdict.NOT_ENFORCED
        k = len(e.values)
        runs = f" (mean of {k} runs)" if k > 1 else ""
        scale = " of the log" if test.log else ""
        how = f"{1 - level:.4%} t-interval{scale} over {test.spread.n} values{runs}"
        out.append(
            Judgement(e.config, e.kpi, value, test.baseline, low, high, verdict, how, k, 1 - level)
        )
    return out


def in_doubt(evidence: Sequence[KpiEvidence], settings: VerdictSettings, look: int) -> set[str]:
    """Configs worth re-running: an enforced KPI outside its screen range (the suite's
    `confirm.screen` per run, split by Holm as the verdict is) that the verdict at this
    look does not call regressed. Empty when the suite does not confirm."""
    if settings.confirm is None:
        return set()
    pvalues = _family_pvalues(_tests(evidence, settings), settings)
    screen, _ = holm_levels(pvalues, 1 - settings.confirm.screen)
    verdict, _ = holm_levels(pvalues, settings.look_rate(look))
    return {key[0] for key, p in pvalues.items() if verdict[key] < p <= screen[key]}


def judge_kpi(
    config: str,
    kpi: str,
    value: float | None,
    history: Sequence[float],
    settings: VerdictSettings,
    *,
    samples: Sequence[float] = (),
    never_converged: bool = False,
) -> Judgement:
    """One KPI of one run judged on its own, as a run with no other test would be."""
    values = () if value is None else (value,)
    evidence = KpiEvidence(config, kpi, values, tuple(history), tuple(samples), never_converged)
    return judge_all([evidence], settings)[0]
