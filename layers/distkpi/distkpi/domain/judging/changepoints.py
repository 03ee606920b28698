"""Real step changes in a KPI's history: E-Divisive means (Matteson and James 2014) with a
permutation test, so that after one the baseline starts afresh instead of alarming on
every later commit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from distkpi.domain.judging.settings import VerdictSettings


def _split_scores(distances: np.ndarray, min_size: int) -> np.ndarray:
    """E-Divisive's scaled energy distance for every split tau (alpha = 1), from the
    2-D prefix sums of the pairwise distance matrix: O(n^2) for all splits at once."""
    n = len(distances)
    prefix = np.zeros((n + 1, n + 1))
    prefix[1:, 1:] = distances.cumsum(0).cumsum(1)
    taus = np.arange(min_size, n - min_size + 1)
    total = prefix[n, n]
    head = prefix[taus, taus]  # sum over the block [:tau, :tau]
    tail = total - 2 * prefix[taus, n] + head  # block [tau:, tau:]
    between = prefix[taus, n] - head  # block [:tau, tau:]
    a, b = taus.astype(float), (n - taus).astype(float)
    energy = 2 * between / (a * b) - head / (a * (a - 1)) - tail / (b * (b - 1))
    return np.asarray(a * b / n * energy)


def last_change_point(
    values: Sequence[float],
    p_value: float = 0.01,
    min_size: int = 3,
    permutations: int = 199,
    seed: int = 0,
) -> int | None:
    """Index where the last significant step change starts, or None.

    Bisects like E-Divisive: the best split of the series is tested against the best splits
    of random permutations of it; when significant, the later segment is searched again.
    """
    rng = np.random.default_rng(seed)
    start, found = 0, None
    while len(values) - start >= 2 * min_size:
        x = np.asarray(values[start:], dtype=float)
        distances = np.abs(x[:, None] - x[None, :])
        scores = _split_scores(distances, min_size)
        best = int(scores.argmax())
        # significant while (beaten + 1) / (permutations + 1) <= p_value: stop counting
        # as soon as it no longer can be (the same answer, far sooner on plain noise)
        allowed = p_value * (permutations + 1) - 1
        beaten = 0
        for _ in range(permutations):
            order = rng.permutation(len(x))
            if _split_scores(distances[order][:, order], min_size).max() >= scores[best]:
                beaten += 1
                if beaten > allowed:
                    break
        if beaten > allowed:
            break
        found = start + min_size + best
        start = found
    return found


def split_at_change(
    history: Sequence[float], settings: VerdictSettings
) -> tuple[list[float], list[float]]:
    """(before, after) the last real step change of the recent history; nothing before
    when it has none. The baseline is what comes after; a level shift leaves the noise as
    it was, so what comes before still tells how much the values spread."""
    recent = list(history)[-2 * settings.window :]
    cut = last_change_point(recent, settings.change_point_p) if len(recent) >= 8 else None
    return (recent[:cut], recent[cut:]) if cut is not None else ([], recent)


def baseline_after_change(history: Sequence[float], settings: VerdictSettings) -> list[float]:
    """The part of the history after its last real step change."""
    return split_at_change(history, settings)[1]
