"""Paired A/B verdicts: the base commit (A) and the head (B) measured alternately on the same
nodes in one job, judged on their differences, so that the allocation's part of the noise
(which nodes, which GPUs, where they sit in the network) cancels.

Per pair i, d_i = ln(B_i / A_i) for rates, times and memory, B_i - A_i for test accuracy; a
config's speedup is its throughput's d minus the base config's d in the same pair
(efficiency is speedup over a constant: the same d, one family). The d's of a config's pairs
are judged with statistics.spread_of against the paired history, the first-pair d's of the
branch's past paired runs (``HistoryRow.paired_d``), machine share 0: the d's are already
differences, never logged again.

Looks: after pair k of a config its look judges every family of every config of the run
(each config's first k pairs, as far as reported; Holm over all of them, a config not yet
reported counting with p = 1) at the look's share of the suite's false_failure_rate:
look 1 only screens (rate 0), look 2 spends half, looks 3..L the other half evenly
(L = max_pairs; L = 2: 0 then all, L = 1: all at once), so by the union bound the looks
together keep the suite's rate. A config stops with a failure when a family of it is
significant at its Holm level and still shows harm at z >= consistency_z without its single
most harmful pair (one wild pair does not fail a config); it goes on while a family of it
is in doubt (above its Holm level, at most its level at the suite's ``paired.screen`` rate,
or significant but held by that check), the base config also while any speedup is; else it
stops with a pass. With fewer than ``min_history`` paired values a KPI is judged against
the suite's tolerance instead (mean d's harm beyond ln(1 + tolerance); tolerance itself for
test accuracy) and takes no part in Holm's split; it too fails only when the pairs without
the most harmful one are still beyond it (or when a single pair is all the suite runs).
With one pair the test alone never fails a config: there is nothing to check it against.

The final verdict (evaluate_paired) judges each config at its last look as that look saw
the run: every config's first as many pairs. A look that saw fewer of another config's
pairs (they had not arrived) can only differ from it in its speedup (the base config's pairs
as far as reported), where another family was itself significant, or in what was in doubt
(a config that went on is judged at its later look).

A paired judgement reads like an unpaired one: ``value`` is B's mean (geometric for the log
scale: A's times e^mean d), ``baseline`` A's, ``low``..``high`` the range of B the test
allows around A, ``runs`` the pairs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.history import (
    HistoryRow,
    after_resets,
    listed_kpis,
    run_direction,
    series,
)
from distkpi.domain.judging.settings import (
    ALL_KPIS,
    FAMILY,
    LOG_SCALE,
    PairedSettings,
    VerdictSettings,
    more_is_better,
)
from distkpi.domain.judging.statistics import (
    BEYOND_LIMIT,
    NOT_REPORTED,
    SCALING,
    Judgement,
    KpiVerdict,
    Spread,
    harm_p_value,
    holm_levels,
    spread_of,
)
from distkpi.domain.judging.verdict import decide, describe
from distkpi.domain.kpis import catalogue
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, PairKpis, RunKpis

Family = tuple[str, str]  # (config, KPI family)


def look_shares(max_pairs: int) -> tuple[float, ...]:
    """Each look's share of the per-run false-failure rate (they sum to 1)."""
    if max_pairs == 1:
        return (1.0,)
    if max_pairs == 2:
        return (0.0, 1.0)
    rest = 0.5 / (max_pairs - 2)
    return (0.0, 0.5) + (rest,) * (max_pairs - 2)


def _paired(settings: VerdictSettings) -> PairedSettings:
    if settings.paired is None:
        raise ValueError("the suite's verdict is not paired (no verdict.paired)")
    return settings.paired


def pair_d(kpi: str, a: float | None, b: float | None) -> float | None:
    """One pair's difference: ln(B/A), or B - A for test accuracy; None when either arm has
    no value (or, on the log scale, one that is not positive)."""
    if a is None or b is None:
        return None
    if kpi not in LOG_SCALE:
        return b - a
    return math.log(b / a) if a > 0 and b > 0 else None


def _arm_value(arm: ConfigKpis, kpi: str, base_arm: ConfigKpis | None) -> float | None:
    """One arm's KPI; speedup and efficiency against the base config's arm of the same pair."""
    if kpi not in SCALING:
        return arm.value(kpi)
    if base_arm is None or not base_arm.throughput or arm.throughput is None:
        return None
    speedup = arm.throughput / base_arm.throughput
    return speedup if kpi == "speedup" else speedup / (arm.gpus / base_arm.gpus)


@dataclass(frozen=True)
class PairedValues:
    """One KPI of one config over the pairs judged: each pair's A, B and d."""

    kpi: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    d: tuple[float, ...]
    # time to accuracy: B never reached the target in a pair where A did
    b_never_converged: bool = False

    @property
    def log(self) -> bool:
        return self.kpi in LOG_SCALE

    def centre(self, values: Sequence[float]) -> float:
        """The arm's mean on the KPI's scale (geometric on the log scale)."""
        if self.log:
            return math.exp(statistics.fmean(math.log(v) for v in values))
        return statistics.fmean(values)

    def of_b(self, d: float) -> float:
        """The value of B that differs from A's centre by d."""
        a = self.centre(self.a)
        return a * math.exp(d) if self.log else a + d


def paired_values(
    config: Sequence[PairKpis], kpi: str, base: Sequence[PairKpis] | None
) -> PairedValues | None:
    """The pairs of a config for one KPI (scaling KPIs: the pairs the base config also has);
    None when no pair measured it in both arms."""
    base_arms = {p.pair: p for p in base or ()}
    a, b, d = [], [], []
    never = False
    definition = catalogue.kpi(kpi)
    for pair in config:
        base_pair = base_arms.get(pair.pair)
        if kpi in SCALING and base_pair is None:
            continue
        va = _arm_value(pair.a, kpi, base_pair.a if base_pair else None)
        vb = _arm_value(pair.b, kpi, base_pair.b if base_pair else None)
        never |= va is not None and (
            (definition.never_reached and pair.b.converged is False)
            or (definition.convergence and pair.b.diverged and not pair.a.diverged)
        )
        diff = pair_d(kpi, va, vb)
        if diff is not None and va is not None and vb is not None:
            a.append(va)
            b.append(vb)
            d.append(diff)
    if not d and not never:
        return None
    return PairedValues(kpi, tuple(a), tuple(b), tuple(d), never)


def first_pair_d(config: ConfigKpis, base: ConfigKpis | None) -> dict[str, float]:
    """The paired history's values of a paired run's config: its first pair's d per KPI
    (speedup and efficiency against ``base``, the base config; none for the base itself)."""
    if not config.pairs:
        return {}
    own_base = None if base is None or base.name == config.name else base.pairs[:1]
    out = {}
    for kpi in ALL_KPIS:
        if kpi in SCALING and own_base is None:
            continue
        found = paired_values(config.pairs[:1], kpi, own_base)
        if found is not None and found.d:
            out[kpi] = found.d[0]
    return out


# ----------------------------------------------------------------------------- the tests
@dataclass(frozen=True)
class _Test:
    """A paired KPI with enough paired history: the t test of its mean d."""

    values: PairedValues
    history: tuple[float, ...]
    spread: Spread
    p: float
    higher: bool

    def consistent(self, z: float) -> bool:
        """Without its most harmful pair, the rest still show harm at z (two pairs or more)."""
        k = len(self.values.d)
        if k < 2:
            return False
        harms = _harms(self.values, self.higher, self.spread.baseline)
        rest = (sum(harms) - max(harms)) / (k - 1)
        sd = statistics.stdev(self.history)
        if sd == 0:  # an exact history: any harm left is harm
            return rest > 0
        return rest * math.sqrt(k - 1) / sd >= z


@dataclass(frozen=True)
class _View:
    """A run as a look sees it: every config's first ``look`` pairs."""

    run: RunKpis
    rows: Sequence[HistoryRow]
    settings: VerdictSettings
    look: int

    def pairs(self, config: ConfigKpis) -> tuple[PairKpis, ...]:
        return config.pairs[: self.look]

    @cached_property
    def _rows_of(self) -> dict[tuple[str, str], list[HistoryRow]]:
        rows: dict[tuple[str, str], list[HistoryRow]] = {}
        for row in self.rows:
            if row.paired_d is not None:
                rows.setdefault((row.config, row.kpi), []).append(row)
        return rows

    def history(self, config: ConfigKpis, kpi: str) -> tuple[float, ...]:
        """The paired history of one KPI of a config: its last ``window`` first-pair d's
        on the config's hardware."""
        rows = self._rows_of.get((config.name, kpi), [])
        found = series(rows, config.name, kpi, hardware=config.hardware, paired=True)
        return tuple(found[-self.settings.window :])

    def base_pairs(self, config: ConfigKpis) -> tuple[PairKpis, ...] | None:
        if self.run.base_config is None or self.run.base_config == config.name:
            return None
        base = next((c for c in self.run.configs if c.name == self.run.base_config), None)
        return None if base is None else self.pairs(base)


def _higher(kpi: str, run: RunKpis) -> bool:
    return more_is_better(kpi, run_direction(run, kpi))


def _applicable(config: ConfigKpis, kpi: str, run: RunKpis) -> bool:
    definition = catalogue.kpi(kpi)
    if (kpi in SCALING or definition.not_of_base) and config.name == run.base_config:
        return False
    return definition.applicable(config)


@dataclass(frozen=True)
class _Evidence:
    """What a look knows of one KPI of one reported config."""

    config: ConfigKpis
    kpi: str
    values: PairedValues | None
    history: tuple[float, ...]
    test: _Test | None
    pairs: int  # the config's pairs the look sees


def _evidence(view: _View, config: ConfigKpis, kpi: str) -> _Evidence:
    base = view.base_pairs(config)
    values = None
    if _applicable(config, kpi, view.run) and (kpi not in SCALING or base is not None):
        values = paired_values(view.pairs(config), kpi, base)
    history = view.history(config, kpi)
    test = None
    if values is not None and values.d and len(history) >= view.settings.min_history:
        spread = spread_of(history, values.d, ())
        higher = _higher(kpi, view.run)
        p = harm_p_value(higher, statistics.fmean(values.d), spread)
        test = _Test(values, history, spread, p, higher)
    return _Evidence(config, kpi, values, history, test, len(view.pairs(config)))


def _reported(run: RunKpis) -> list[ConfigKpis]:
    return [c for c in run.configs if c.status is ConfigStatus.OK and c.pairs]


def _family_pvalues(view: _View, evidence: Sequence[_Evidence]) -> dict[Family, float]:
    """Every enforced family of every config of the run: its members' smallest p, 1 while
    it has no test yet (a config not yet reported, a speedup before the base config's pair);
    a family judged by the tolerance or exactly (no spread) spends none of the rate."""
    enforced = view.settings.enforced
    found = {(e.config.name, e.kpi): e for e in evidence}
    pvalues: dict[Family, float] = {}
    listed = listed_kpis(view.run, view.settings)
    for config in view.run.configs:  # also those not ok: not yet reported, or broken
        for kpi in (k for k in enforced if k in listed):
            e = found.get((config.name, kpi))
            if not _applicable(config, kpi, view.run):
                continue
            if e is not None and (_untested(e) or _aligned_arms(e, view)):
                continue
            key = (config.name, FAMILY.get(kpi, kpi))
            p = 1.0 if e is None or e.test is None else e.test.p
            pvalues[key] = min(pvalues.get(key, 1.0), p)
    return pvalues


def _untested(e: _Evidence) -> bool:
    """Measured, but judged without a test: too short a paired history, or no spread."""
    if e.test is not None:
        return e.test.spread.error == 0
    return e.values is not None and bool(e.values.d)


# ----------------------------------------------------------------------------- one look
class LookOutcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    CONTINUE = "continue"


@dataclass(frozen=True)
class _Judged:
    """One KPI at one look: its judgement and what it means for the look's decision."""

    judgement: Judgement
    fails: bool = False
    in_doubt: bool = False


@dataclass(frozen=True)
class LookDecision:
    """A config's look after a pair: stop with a pass or a failure, or run another pair."""

    config: str
    look: int
    outcome: LookOutcome
    judgements: tuple[Judgement, ...]
    why: str

    @property
    def stop(self) -> bool:
        return self.outcome is not LookOutcome.CONTINUE

    def to_json(self) -> dict[str, object]:
        """decision.json's fields but the run id."""
        return {
            "config": self.config,
            "pair": self.look,
            "decision": "stop" if self.stop else "continue",
            "outcome": None if not self.stop else self.outcome.value,
            "why": self.why,
        }


@dataclass(frozen=True)
class _Levels:
    verdict: Mapping[Family, float]
    verdict_stopped: float
    screen: Mapping[Family, float]
    last_look: bool
    of_look: str  # "look k of L"


def _without_pairs(e: _Evidence, view: _View) -> Judgement:
    """A KPI no pair measured in both arms (or the base config's speedup, 1 by definition)."""
    settings, config, kpi = view.settings, e.config, e.kpi
    enforced = kpi in settings.enforced
    if kpi in SCALING and config.name == view.run.base_config:
        value = config.value(kpi)
        verdict = KpiVerdict.PASS if enforced else KpiVerdict.NOT_ENFORCED
        why = "the base config's: 1 by definition, no test"
        return Judgement(config.name, kpi, value, value, None, None, verdict, why, e.pairs)
    if enforced and settings.enforced_by_suite and _applicable(config, kpi, view.run):
        verdict, why = KpiVerdict.MISSING, NOT_REPORTED
    else:
        verdict = KpiVerdict.NO_BASELINE if enforced else KpiVerdict.NOT_ENFORCED
        why = "no value in both arms of a pair"
    return Judgement(config.name, kpi, None, None, None, None, verdict, why, e.pairs)


def _never_converged(e: _Evidence, settings: VerdictSettings) -> _Judged:
    assert e.values is not None
    enforced = e.kpi in settings.enforced
    verdict = KpiVerdict.REGRESSED if enforced else KpiVerdict.NOT_ENFORCED
    baseline = e.values.centre(e.values.a) if e.values.a else None
    why = "B never reached the target in a pair where A did"
    if catalogue.kpi(e.kpi).convergence and any(p.b.diverged for p in e.config.pairs):
        why = "B's training diverged (NaN or infinite loss) in a pair where A's did not"
    judgement = Judgement(e.config.name, e.kpi, None, baseline, None, None, verdict, why, e.pairs)
    return _Judged(judgement, fails=enforced)


def _harms(values: PairedValues, higher: bool, centre: float = 0.0) -> list[float]:
    return [(centre - d) if higher else (d - centre) for d in values.d]


def _by_tolerance(e: _Evidence, view: _View, last_look: bool) -> _Judged:
    """Too short a paired history for a spread: B against A within the suite's tolerance; a
    failure, like a test's, also needs the pairs without the most harmful one beyond it."""
    assert e.values is not None
    values, settings = e.values, view.settings
    higher = _higher(e.kpi, view.run)
    tolerance = settings.tolerance_of(e.kpi)
    limit = math.log1p(tolerance) if values.log else tolerance
    harms = _harms(values, higher)
    k = len(harms)
    beyond = statistics.fmean(harms) > limit
    confirmed = (sum(harms) - max(harms)) / (k - 1) > limit if k >= 2 else last_look
    enforced = e.kpi in settings.enforced
    if not enforced:
        verdict = KpiVerdict.NOT_ENFORCED
    elif beyond and confirmed:
        verdict = KpiVerdict.REGRESSED
    elif statistics.fmean(harms) < -limit:
        verdict = KpiVerdict.IMPROVED
    else:
        verdict = KpiVerdict.PASS
    low, high = sorted((values.of_b(-limit), values.of_b(limit)))
    why = (
        f"paired: {len(e.history)} paired history value(s), fewer than "
        f"{settings.min_history}: B within ±{tolerance:.0%} of A over {k} pair(s)"
    )
    if enforced and beyond and not confirmed:
        why += "; beyond it, but not without its most harmful pair"
    judgement = _of_b_against_a(e, values, (low, high), verdict, why)
    held = enforced and beyond and not confirmed
    return _Judged(judgement, fails=verdict is KpiVerdict.REGRESSED, in_doubt=held)


def _of_b_against_a(
    e: _Evidence,
    values: PairedValues,
    bounds: tuple[float | None, float | None],
    verdict: KpiVerdict,
    why: str,
    *,
    confidence: float | None = None,
) -> Judgement:
    """A paired KPI's judgement as people read any other: B's value against A's, the range
    of B the judgement allows, the pairs as its runs."""
    low, high = bounds
    centre_b, centre_a = values.centre(values.b), values.centre(values.a)
    return Judgement(
        e.config.name, e.kpi, centre_b, centre_a, low, high, verdict, why, len(values.d), confidence
    )


def _by_test(e: _Evidence, view: _View, levels: _Levels) -> _Judged:
    """The t test of the mean d at the family's Holm level of the look."""
    test, values = e.test, e.values
    assert test is not None and values is not None
    family = (e.config.name, FAMILY.get(e.kpi, e.kpi))
    level = levels.verdict.get(family, levels.verdict_stopped)
    significant = level > 0 and test.p <= level
    consistent = significant and test.consistent(_paired(view.settings).consistency_z)
    enforced = e.kpi in view.settings.enforced
    screened = level < test.p <= levels.screen.get(family, 0.0)
    k = len(values.d)
    scale = "ln(B/A)" if values.log else "B - A"
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    if level > 0:
        low, high = (values.of_b(x) for x in test.spread.bounds(1 - level))
        how = f"{1 - level:.4%} t-interval of {scale}"
        confidence = 1 - level
    else:
        how = f"screen only, p {test.p:.3g} of {scale}"
    why = f"paired, {levels.of_look}: {how} over {test.spread.n} paired values ({k} pairs)"
    if not enforced:
        verdict = KpiVerdict.NOT_ENFORCED
    elif consistent:
        verdict = KpiVerdict.REGRESSED
    elif level > 0 and 1 - test.p <= level:
        verdict = KpiVerdict.IMPROVED
    else:
        verdict = KpiVerdict.PASS
    if enforced and significant and not consistent:
        why += "; held: not without its most harmful pair"
    judgement = _of_b_against_a(e, values, (low, high), verdict, why, confidence=confidence)
    doubt = enforced and ((significant and not consistent) or (not significant and screened))
    return _Judged(judgement, fails=verdict is KpiVerdict.REGRESSED, in_doubt=doubt)


def _aligned_arms(e: _Evidence, view: _View) -> list[PairKpis]:
    """The pairs that measured loss_alignment between the arms, for that KPI (judged by the
    suite's limit, not by a test: it spends none of the run's false-failure rate)."""
    if e.kpi != "loss_alignment":
        return []
    return [p for p in view.pairs(e.config) if p.aligned is not None]


def _arms_alignment(e: _Evidence, view: _View) -> _Judged | None:
    """loss_alignment of a paired config whose pairs measured it: whether B's training loss
    curve is A's in every pair the look sees (PairKpis.aligned), as the unpaired alignment
    judges a config's curve against the base config's, by the suite's limit and not by a
    test; None where no pair measured it."""
    measured = _aligned_arms(e, view)
    if not measured:
        return None
    worst = max(measured, key=lambda p: p.loss_alignment or 0.0)
    apart = [p.pair for p in measured if not p.aligned]
    enforced = e.kpi in view.settings.enforced
    if not enforced:
        verdict = KpiVerdict.NOT_ENFORCED
    else:
        verdict = KpiVerdict.REGRESSED if apart else KpiVerdict.PASS
    why = (
        f"paired: B's loss curve against A's in {len(measured)} pair(s), at most "
        f"{worst.loss_alignment:.2%} (pair {worst.pair}, step {worst.loss_alignment_step})"
    )
    if apart:
        why += f"; not the same curve in pair(s) {', '.join(map(str, apart))}: {BEYOND_LIMIT}"
    judgement = Judgement(
        e.config.name, e.kpi, worst.loss_alignment, None, None, None, verdict, why, len(measured)
    )
    return _Judged(judgement, fails=verdict is KpiVerdict.REGRESSED)


def _judge(e: _Evidence, view: _View, levels: _Levels) -> _Judged:
    if (arms := _arms_alignment(e, view)) is not None:
        return arms
    if e.values is None or (not e.values.d and not e.values.b_never_converged):
        return _Judged(_without_pairs(e, view))
    if e.values.b_never_converged:
        return _never_converged(e, view.settings)
    if e.test is None:
        return _by_tolerance(e, view, levels.last_look)
    return _by_test(e, view, levels)


def _levels(view: _View, evidence: Sequence[_Evidence]) -> _Levels:
    paired = _paired(view.settings)
    shares = look_shares(paired.max_pairs)
    pvalues = _family_pvalues(view, evidence)
    rate = view.settings.false_failure_rate * shares[view.look - 1]
    verdict, stopped = holm_levels(pvalues, rate)
    screen, _ = holm_levels(pvalues, paired.screen)
    last = view.look == paired.max_pairs
    return _Levels(verdict, stopped, screen, last, f"look {view.look} of {paired.max_pairs}")


def _judged_look(view: _View) -> dict[str, list[_Judged]]:
    """Every KPI of every reported config at the look, by config."""
    kpis = listed_kpis(view.run, view.settings)
    evidence = [_evidence(view, c, kpi) for c in _reported(view.run) for kpi in kpis]
    levels = _levels(view, evidence)
    out: dict[str, list[_Judged]] = {}
    for e in evidence:
        out.setdefault(e.config.name, []).append(_judge(e, view, levels))
    return out


def _named(judged: Sequence[_Judged]) -> str:
    return ", ".join(f"{j.judgement.kpi}{_change(j.judgement)}" for j in judged)


def _change(j: Judgement) -> str:
    return f" {j.delta:+.1%}" if j.delta is not None else ""


def _outcome(
    view: _View, config: str, judged: Mapping[str, Sequence[_Judged]]
) -> tuple[LookOutcome, str]:
    own = judged.get(config, ())
    failing = [j for j in own if j.fails]
    pairs = f"after {view.look} pair(s)"
    if failing:
        return LookOutcome.FAIL, f"fail {pairs}: {_named(failing)} regressed"
    doubtful = [j for j in own if j.in_doubt]
    if config == view.run.base_config:
        doubtful += [
            j
            for name, others in judged.items()
            if name != config
            for j in others
            if j.in_doubt and j.judgement.kpi in SCALING
        ]
    if doubtful and view.look < _paired(view.settings).max_pairs:
        return LookOutcome.CONTINUE, f"another pair: {_named(doubtful)} in doubt {pairs}"
    held = f" ({_named(doubtful)} still in doubt)" if doubtful else ""
    return LookOutcome.PASS, f"pass {pairs}{held}"


def _view(
    run: RunKpis, rows: Sequence[HistoryRow], settings: VerdictSettings, config: str, look: int
) -> _View:
    max_pairs = _paired(settings).max_pairs
    found = next((c for c in run.configs if c.name == config), None)
    if found is None:
        raise ValueError(f"config {config!r} is not one of the run's")
    if not 1 <= look <= max_pairs:
        raise ValueError(f"look {look} of config {config}: looks are 1..{max_pairs}")
    if found.status is ConfigStatus.OK and len(found.pairs) < look:
        raise ValueError(f"look {look} of config {config}: only {len(found.pairs)} pair(s)")
    return _View(run, rows, settings, look)


def judge_look(
    run: RunKpis,
    rows: Sequence[HistoryRow],
    settings: VerdictSettings,
    config: str,
    look: int,
) -> LookDecision:
    """A config's look after its pair ``look``: ``run``'s configs carry their pairs so far
    (those not yet reported none), ``rows`` the branch's history (paired_d), ``settings``
    the suite's verdict (with ``paired``). The look sees every config's first ``look``
    pairs as far as reported."""
    view = _view(run, rows, settings, config, look)
    broken = run.config(config)
    if broken.status is not ConfigStatus.OK:  # its run's verdict is an error: stop it
        problem = f": {broken.problems[0]}" if broken.problems else ""
        why = f"{config}: {broken.status.value}{problem}; no more pairs"
        return LookDecision(config, look, LookOutcome.FAIL, (), why)
    judged = _judged_look(view)
    outcome, why = _outcome(view, config, judged)
    judgements = tuple(j.judgement for j in judged.get(config, ()))
    return LookDecision(config, look, outcome, judgements, f"{config}: {why}")


def evaluate_paired(
    run: RunKpis,
    rows: Sequence[HistoryRow],
    settings: VerdictSettings,
    accuracy_tolerance: float,
    resets: Mapping[str, str] | None = None,
) -> Evaluation:
    """A finished paired run judged: each ok config at its last look (its pairs all in),
    the other configs as that look saw them (their first as many pairs), so the verdict
    agrees with the looks' decisions; then verdict.decide and verdict.describe. ``resets``
    (config or '*' -> time) set the history before them aside, as evaluate() does."""
    rows = after_resets(rows, resets or {})
    judgements: list[Judgement] = []
    for config in run.configs:
        if config.status is not ConfigStatus.OK:
            continue
        if not config.pairs:
            view = _View(run, rows, settings, 1)
            judgements += [
                _without_pairs(_Evidence(config, kpi, None, (), None, 0), view)
                for kpi in listed_kpis(run, settings)
            ]
            continue
        judgements += judge_look(run, rows, settings, config.name, len(config.pairs)).judgements
    verdict = decide(run, accuracy_tolerance, judgements)
    return Evaluation(run, tuple(judgements), verdict, describe(run, verdict, judgements))
