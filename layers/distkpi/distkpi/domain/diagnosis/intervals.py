"""Time covered by sets of intervals: merged (HTA's `merge_kernel_intervals`) and split by
priority, so that each instant of a step counts once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Interval = tuple[float, float]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Disjoint intervals covering the same time, in order (`merge_kernel_intervals`)."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def length(merged: Sequence[Interval]) -> float:
    return sum(end - start for start, end in merged)


def clip(intervals: Iterable[Interval], lo: float, hi: float) -> list[Interval]:
    return [(max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi]


def by_priority(layers: Sequence[Sequence[Interval]]) -> list[float]:
    """The time at which each layer is the first (in order) that covers the instant.

    Each layer must be merged. The parts add up to the time any layer covers."""
    points: list[tuple[float, int, int]] = []
    for index, layer in enumerate(layers):
        for start, end in layer:
            points += [(start, 1, index), (end, -1, index)]
    points.sort()
    active = [0] * len(layers)
    shares = [0.0] * len(layers)
    previous = None
    for time, delta, index in points:
        if previous is not None and time > previous:
            top = next((i for i, n in enumerate(active) if n), None)
            if top is not None:
                shares[top] += time - previous
        active[index] += delta
        previous = time
    return shares
