"""The mean and median of a few numbers, without the standard `statistics` module (which
imports `fractions` and `decimal`, start-up that `distkpi kpis` and the handlers need not pay:
tests/unit/test_cold_start_imports.py)."""

from __future__ import annotations

import math
from collections.abc import Iterable


def fmean(values: Iterable[float]) -> float:
    """The mean; ValueError for no values, as statistics.fmean."""
    data = list(values)
    if not data:
        raise ValueError("the mean of no values")
    return math.fsum(data) / len(data)


def median(values: Iterable[float]) -> float:
    """The middle value, or the mean of the two middle ones; ValueError for no values."""
    data = sorted(values)
    if not data:
        raise ValueError("the median of no values")
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else (data[mid - 1] + data[mid]) / 2
