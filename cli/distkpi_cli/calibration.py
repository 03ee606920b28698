"""Know the fleet before trusting a verdict design: the noise of A/A paired jobs (the same
commit in both arms) split into the allocation's part and the within-allocation part, and
what each design would catch at that noise.

Per config and KPI, from J jobs of n_j runs each (in the order run, the warm-up excluded),
on the log scale for every KPI but test accuracy, a one-way analysis of variance:
the within-allocation variance is the pooled variance of each job's runs about the job's
mean (the within-job differences), sw^2 = sum (x - mean_j)^2 / (N - J); the allocation's is
what the spread of the job means adds to it, sa^2 = max(0, (MSB - sw^2) / n0) with
MSB = sum n_j (mean_j - mean)^2 / (J - 1) and n0 = (N - sum n_j^2 / N) / (J - 1); the total
run-to-run spread of one run on a fresh allocation is sa^2 + sw^2. CVs are
sqrt(e^var - 1) on the log scale, sd / |mean| for test accuracy.

The designs, at the suite's false_failure_rate split over its M families (Holm's first step,
rate / M per family) and a throughput drop of ``drop`` in one config (theta = -ln(1 - drop)),
in normal approximations (each config's own sa and sw; the catch rate the mean over the
configs, the drop landing in any one of them; a history of ``window`` values):
- one run against the history: sd = sqrt((sa^2 + sw^2)(1 + 1/n)); caught when the run is
  beyond z(rate / M): Phi(theta / sd - z); 1 run.
- confirm by re-running on the same allocation (`confirm:`, R = max_runs): re-running averages
  sw away but not sa. Caught at the first look, or in doubt at the screen and then beyond at
  the last look with R runs, sd_R = sqrt(sa^2 + sw^2 / R + (sa^2 + sw^2) / n), the looks
  taken as independent; runs: 1 + (R - 1) times an unchanged config's chance of being in
  doubt (its families' share of (1 - screen)).
- paired (`paired:`, L = max_pairs): a pair's d varies by 2 sw^2 (the allocation cancels);
  with k pairs against n first-pair d's sd_k = sqrt(2 sw^2 (1/k + 1/n)). Caught when look 1
  puts it in doubt at the screen and some look k >= 2 is beyond z(rate * share_k / M) (the
  best look; the leave-one-out check is not modelled, so one pair never fails); runs:
  2 (1 + an unchanged config's chance of a second pair) plus the warm-up (``warmup_cost``).
These are approximations to rank designs; bench/verdict_simulation.py judges them exactly.

Pure, like domain code, but outside the Lambda layer: only `distkpi calibrate` needs it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from distkpi.domain.judging.paired import look_shares
from distkpi.domain.judging.settings import (
    ALL_KPIS,
    FAMILY,
    LOG_SCALE,
    ConfirmSettings,
    PairedSettings,
    VerdictSettings,
)
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, PairKpis
from distkpi.domain.records import HistoryRecord
from distkpi.exceptions import CalibrationError

UNIT = NormalDist()
# the unmeasured warm-up run of a paired job, as a share of a measured run's GPU time (the
# reference simulation's: a warm-up shorter than a measured run)
WARMUP_COST = 0.25

Jobs = Mapping[str, Mapping[str, Sequence[Sequence[float]]]]  # config -> KPI -> job -> runs


@dataclass(frozen=True)
class Components:
    """One KPI of one config: its run-to-run spread and the allocation's part of it."""

    total_cv: float  # of one run on a fresh allocation
    allocation_share: float  # of the variance of one run
    within_cv: float  # of one run against another on the same allocation
    jobs: int
    # on the log scale (test accuracy: as it is): the allocation's and the within variance
    allocation_var: float
    within_var: float

    def to_json(self) -> dict[str, float | int]:
        return {
            "total_cv": self.total_cv,
            "allocation_share": self.allocation_share,
            "within_cv": self.within_cv,
            "jobs": self.jobs,
        }


@dataclass(frozen=True)
class DesignFigure:
    design: str  # "one run", "confirm", "paired"
    catch_rate: float
    runs_per_config: float

    def to_json(self) -> dict[str, float | str]:
        return {
            "design": self.design,
            "catch_rate": self.catch_rate,
            "runs_per_config": self.runs_per_config,
        }


@dataclass(frozen=True)
class Calibration:
    """What `distkpi calibrate --json` reports."""

    components: Mapping[str, Mapping[str, Components]]  # config -> KPI
    drop: float
    false_failure_rate: float
    designs: tuple[DesignFigure, ...]
    favoured: str | None  # None: no config's throughput to rank the designs by

    def to_json(self) -> dict[str, object]:
        return {
            "configs": {
                config: {kpi: c.to_json() for kpi, c in kpis.items()}
                for config, kpis in self.components.items()
            },
            "drop": self.drop,
            "false_failure_rate": self.false_failure_rate,
            "designs": [d.to_json() for d in self.designs],
            "favoured": self.favoured,
        }


def _cv(var: float, log: bool, mean: float) -> float:
    if log:
        return math.sqrt(math.expm1(var))
    return math.sqrt(var) / abs(mean) if mean else math.inf


def components_of(config: str, kpi: str, jobs: Sequence[Sequence[float]]) -> Components:
    """The allocation's and the within-allocation part of one KPI's noise (module doc)."""
    what = f"{config} {kpi}"
    if len(jobs) < 2:
        raise CalibrationError(f"{what}: {len(jobs)} A/A job(s); the allocation's part needs 2")
    short = [i for i, runs in enumerate(jobs, 1) if len(runs) < 2]
    if short:
        raise CalibrationError(f"{what}: job(s) {short} have fewer than 2 runs")
    log = kpi in LOG_SCALE
    if log and any(v <= 0 for runs in jobs for v in runs):
        raise CalibrationError(f"{what}: a value that is not positive has no log")
    xs = [[math.log(v) for v in runs] if log else list(runs) for runs in jobs]
    sizes = [len(runs) for runs in xs]
    total, count = sum(sizes), len(xs)
    means = [statistics.fmean(runs) for runs in xs]
    grand = statistics.fmean(v for runs in xs for v in runs)
    within = sum((v - m) ** 2 for runs, m in zip(xs, means, strict=True) for v in runs) / (
        total - count
    )
    between = sum(n * (m - grand) ** 2 for n, m in zip(sizes, means, strict=True)) / (count - 1)
    n0 = (total - sum(n * n for n in sizes) / total) / (count - 1)
    allocation = max(0.0, (between - within) / n0)
    one_run = allocation + within
    level = statistics.fmean(v for runs in jobs for v in runs)
    return Components(
        total_cv=_cv(one_run, log, level),
        allocation_share=allocation / one_run if one_run > 0 else 0.0,
        within_cv=_cv(within, log, level),
        jobs=count,
        allocation_var=allocation,
        within_var=within,
    )


def _beyond(theta: float, sd: float, rate: float) -> float:
    """The chance that a normal estimate of a harm theta with this sd lands beyond the
    one-sided level ``rate``."""
    if rate <= 0:
        return 0.0
    if sd == 0:
        return 1.0
    return UNIT.cdf(theta / sd - UNIT.inv_cdf(1 - rate))


@dataclass(frozen=True)
class _Suite:
    rate: float  # per run
    families: int  # M
    per_config: float  # families of one config
    history: int
    confirm: ConfirmSettings
    paired: PairedSettings


def _one_run(c: Components, theta: float, s: _Suite) -> float:
    one = c.allocation_var + c.within_var
    return _beyond(theta, math.sqrt(one * (1 + 1 / s.history)), s.rate / s.families)


def _confirmed(c: Components, theta: float, s: _Suite) -> float:
    one = c.allocation_var + c.within_var
    runs = s.confirm.max_runs
    first_sd = math.sqrt(one * (1 + 1 / s.history))
    at_once = _beyond(theta, first_sd, s.rate / 2 / s.families)
    doubt = _beyond(theta, first_sd, (1 - s.confirm.screen) / s.families) - at_once
    last_sd = math.sqrt(c.allocation_var + c.within_var / runs + one / s.history)
    last = _beyond(theta, last_sd, s.rate / 2 / (runs - 1) / s.families)
    return at_once + max(0.0, doubt) * last


def _paired(c: Components, theta: float, s: _Suite) -> float:
    def sd(pairs: int) -> float:
        return math.sqrt(2 * c.within_var * (1 / pairs + 1 / s.history))

    shares = look_shares(s.paired.max_pairs)
    screened = _beyond(theta, sd(1), s.paired.screen / s.families)
    looks = range(2, len(shares) + 1)
    rates = [s.rate * shares[k - 1] / s.families for k in looks]
    best = max((_beyond(theta, sd(k), r) for k, r in zip(looks, rates, strict=True)), default=0.0)
    return screened * best


Catch = Callable[[Components, float, _Suite], float]


def _designs(throughput: Sequence[Components], theta: float, s: _Suite) -> tuple[DesignFigure, ...]:
    def mean(catch: Catch) -> float:
        return statistics.fmean(catch(c, theta, s) for c in throughput)

    doubt_null = min(1.0, s.per_config * (1 - s.confirm.screen) / s.families)
    second_pair = min(1.0, s.per_config * s.paired.screen / s.families)
    warmup = WARMUP_COST if s.paired.warmup else 0.0
    return (
        DesignFigure("one run", mean(_one_run), 1.0),
        DesignFigure("confirm", mean(_confirmed), 1 + (s.confirm.max_runs - 1) * doubt_null),
        DesignFigure("paired", mean(_paired), 2 * (1 + second_pair) + warmup),
    )


def _favoured(designs: Sequence[DesignFigure]) -> str:
    """The design that catches most (within a point, the cheaper)."""
    best = max(d.catch_rate for d in designs)
    close = [d for d in designs if d.catch_rate >= best - 0.01]
    return min(close, key=lambda d: d.runs_per_config).design


def calibrate(jobs: Jobs, settings: VerdictSettings, drop: float = 0.25) -> Calibration:
    """The noise components of every config and KPI of the A/A jobs given, and the designs
    ranked by the throughput drop ``drop`` they would catch at the suite's rate."""
    if not 0 < drop < 1:
        raise CalibrationError(f"drop {drop}: a share of the throughput between 0 and 1")
    components = {
        config: {kpi: components_of(config, kpi, runs) for kpi, runs in kpis.items()}
        for config, kpis in jobs.items()
    }
    families = {
        (config, FAMILY.get(kpi, kpi))
        for config, kpis in components.items()
        for kpi in kpis
        if kpi in settings.enforced
    }
    suite = _Suite(
        rate=settings.false_failure_rate,
        families=max(1, len(families)),
        per_config=len(families) / max(1, len(components)),
        history=settings.window,
        confirm=settings.confirm or ConfirmSettings(),
        paired=settings.paired or PairedSettings(),
    )
    throughput = [kpis["throughput"] for kpis in components.values() if "throughput" in kpis]
    if not throughput:
        return Calibration(components, drop, settings.false_failure_rate, (), None)
    designs = _designs(throughput, -math.log1p(-drop), suite)
    return Calibration(components, drop, settings.false_failure_rate, designs, _favoured(designs))


def run_order(pairs: Sequence[PairKpis]) -> list[ConfigKpis]:
    """A paired job's measured runs in the order they ran: pair p odd A then B, even B
    then A (the warm-up is never among the pairs)."""
    runs: list[ConfigKpis] = []
    for pair in sorted(pairs, key=lambda p: p.pair):
        runs += [pair.a, pair.b] if pair.pair % 2 else [pair.b, pair.a]
    return runs


@dataclass(frozen=True)
class AaJobs:
    """What the A/A runs' history records give calibrate(): each config's and KPI's jobs,
    only those with two runs or more, and only (config, KPI)s with two such jobs."""

    jobs: dict[str, dict[str, list[list[float]]]]
    runs: tuple[str, ...]  # the A/A runs read, oldest first
    # (config, KPI) -> how many jobs had two runs of it, where fewer than 2 did
    unsplit: dict[tuple[str, str], int]


def aa_jobs_of(records: Sequence[HistoryRecord]) -> AaJobs:
    """The calibration runs among ``records`` (a branch's history), each config's pairs as
    its runs in the order they ran, per KPI (a KPI a run did not report is left out)."""
    ordered = sorted((r for r in records if r.calibration), key=lambda r: (r.created_at, r.run_id))
    found: dict[str, dict[str, list[list[float]]]] = {}
    for record in ordered:
        if record.kpis.status is not ConfigStatus.OK:
            continue
        runs = run_order(record.kpis.pairs)
        for kpi in ALL_KPIS:
            values = [v for run in runs if (v := run.value(kpi)) is not None]
            if len(values) >= 2:
                found.setdefault(record.config, {}).setdefault(kpi, []).append(values)
    jobs: dict[str, dict[str, list[list[float]]]] = {}
    unsplit: dict[tuple[str, str], int] = {}
    for config, kpis in sorted(found.items()):
        for kpi, of_jobs in kpis.items():
            if len(of_jobs) >= 2:
                jobs.setdefault(config, {})[kpi] = of_jobs
            else:
                unsplit[(config, kpi)] = len(of_jobs)
    run_ids = tuple(dict.fromkeys(r.run_id for r in ordered))
    return AaJobs(jobs, run_ids, unsplit)
