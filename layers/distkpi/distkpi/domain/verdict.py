"""The commit status a finished run earns, and the headline that says why."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from distkpi.domain.kpis import ConfigKpis, ConfigStatus, RunKpis

MAX_DESCRIPTION = 140


class State(StrEnum):
    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"


@dataclass(frozen=True)
class Verdict:
    state: State
    reasons: tuple[str, ...]


def decide(run: RunKpis, accuracy_tolerance: float) -> Verdict:
    """error: a config failed or is incomplete; failure: accuracy misaligned; else success."""
    broken = [c for c in run.configs if c.status is not ConfigStatus.OK]
    if broken:
        return Verdict(State.ERROR, tuple(f"{c.name} {c.status.value}" for c in broken))
    misaligned = [
        c
        for c in run.configs
        if c.accuracy_delta is not None and abs(c.accuracy_delta) > accuracy_tolerance
    ]
    if misaligned:
        return Verdict(
            State.FAILURE,
            tuple(
                f"{c.name} acc Δ{c.accuracy_delta:+.4f} > {accuracy_tolerance:g}"
                for c in misaligned
            ),
        )
    return Verdict(State.SUCCESS, ())


def clip(text: str, limit: int = MAX_DESCRIPTION) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _headline(largest: ConfigKpis) -> str:
    parts = [f"{largest.gpus} GPUs"]
    if largest.speedup is not None:
        parts[0] += f" {largest.speedup:.1f}x"
    if largest.efficiency is not None:
        parts.append(f"eff {largest.efficiency:.2f}")
    if largest.time_to_accuracy_s is not None:
        parts.append(f"TTA {largest.time_to_accuracy_s:.0f}s")
    if largest.accuracy_delta is not None:
        parts.append(f"acc Δ{abs(largest.accuracy_delta):.4f}")
    return ", ".join(parts)


def describe(run: RunKpis, verdict: Verdict) -> str:
    """At most 140 characters: the largest config's headline numbers, then why."""
    if verdict.state is State.ERROR:
        first = next(c for c in run.configs if c.status is not ConfigStatus.OK)
        detail = first.problems[0] if first.problems else first.status.value
        return clip(f"{'; '.join(verdict.reasons)}: {detail}")
    largest = max(run.configs, key=lambda c: c.gpus)
    tail = "ok" if verdict.state is State.SUCCESS else "; ".join(verdict.reasons)
    return clip(f"{_headline(largest)}: {tail}")


def pending_description(configs: int, gpus: int) -> str:
    return clip(f"running {configs} config(s), up to {gpus} GPUs")
