"""The commit status a finished run earns, and the headline that says why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from distkpi.domain.commit_status import MAX_DESCRIPTION, State, clip
from distkpi.domain.durations import short_seconds
from distkpi.domain.judging.statistics import Judgement, KpiVerdict
from distkpi.domain.kpis import catalogue
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, RunKpis


@dataclass(frozen=True)
class Verdict:
    state: State
    reasons: tuple[str, ...]


def decide(
    run: RunKpis, accuracy_tolerance: float, judgements: Sequence[Judgement] = ()
) -> Verdict:
    """error: a config failed or is incomplete, or does not report a KPI the suite enforces;
    failure: accuracy misaligned across configs
    or an enforced KPI regressed against its baseline; else success."""
    broken = [c for c in run.configs if c.status is not ConfigStatus.OK]
    statuses = {c.status for c in broken}
    if len(broken) > 1 and len(broken) == len(run.configs) and len(statuses) == 1:
        return Verdict(State.ERROR, (f"all {len(broken)} configs {broken[0].status.value}",))
    if broken:
        return Verdict(State.ERROR, tuple(f"{c.name} {c.status.value}" for c in broken))
    missing = [j for j in judgements if j.verdict is KpiVerdict.MISSING]
    if missing:
        return Verdict(State.ERROR, tuple(f"{j.config} {j.kpi} not reported" for j in missing))
    misaligned = [
        c
        for c in run.configs
        if c.accuracy_delta is not None and abs(c.accuracy_delta) > accuracy_tolerance
    ]
    reasons = [
        f"{c.name} acc Δ{c.accuracy_delta:+.4f} > {accuracy_tolerance:g}" for c in misaligned
    ]
    reasons += [_regression(j) for j in judgements if j.verdict is KpiVerdict.REGRESSED]
    if reasons:
        return Verdict(State.FAILURE, tuple(reasons))
    return Verdict(State.SUCCESS, ())


SHORT = {k.name: k.short for k in catalogue.CATALOGUE}


def _regression(j: Judgement) -> str:
    if j.value is None:
        return f"{j.config} {SHORT[j.kpi]} {j.why}"
    delta = f" {j.delta:+.0%}" if j.delta is not None else ""
    return f"{j.config} {SHORT[j.kpi]}{delta}"


def _delta(judgements: Sequence[Judgement], config: str, kpi: str) -> str:
    for j in judgements:
        if j.config == config and j.kpi == kpi and j.delta is not None:
            return f" ({j.delta:+.0%})"
    return ""


def _headline(largest: ConfigKpis, judgements: Sequence[Judgement]) -> str:
    parts = [f"{largest.gpus} GPUs"]
    if largest.speedup is not None:
        parts[0] += f" {largest.speedup:.1f}x{_delta(judgements, largest.name, 'speedup')}"
    if largest.efficiency is not None:
        parts.append(f"eff {largest.efficiency:.2f}")
    if largest.time_to_accuracy_s is not None:
        parts.append(f"TTA {short_seconds(largest.time_to_accuracy_s)}s")
    if largest.accuracy_delta is not None:
        parts.append(f"acc Δ{abs(largest.accuracy_delta):.4f}")
    return ", ".join(parts)


def describe(run: RunKpis, verdict: Verdict, judgements: Sequence[Judgement] = ()) -> str:
    """At most 140 characters: the largest config's headline numbers, then why."""
    if verdict.state is State.ERROR:
        first = next((c for c in run.configs if c.status is not ConfigStatus.OK), None)
        if first is None:  # every config ran; an enforced KPI is not in their logs
            return clip(f"{'; '.join(verdict.reasons)} (enforced)")
        detail = first.problems[0] if first.problems else first.status.value
        return clip(f"{'; '.join(verdict.reasons)}: {detail}")
    largest = max(run.configs, key=lambda c: c.gpus)
    tail = "ok" if verdict.state is State.SUCCESS else "; ".join(verdict.reasons)
    unsure = [_regression(j) for j in judgements if j.verdict is KpiVerdict.BEYOND_TOLERANCE]
    if unsure and verdict.state is State.SUCCESS:
        tail += f", too little history to fail on: {'; '.join(unsure)}"
    described = f"{_headline(largest, judgements)}: {tail}"
    cost = f" · {run.gpu_hours:.3g} GPU-h" if run.gpu_hours is not None else ""
    if any(c.pairs for c in run.configs):  # a paired run: what it took, config by config
        cost += " · pairs " + "/".join(str(len(c.pairs)) for c in run.configs)
    # the cost only when it fits whole: the reasons matter more
    return clip(described + cost if len(described + cost) <= MAX_DESCRIPTION else described)
