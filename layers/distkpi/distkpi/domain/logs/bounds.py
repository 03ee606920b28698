"""Which numbers read from a log can become a KPI.

A KPI is stored in DynamoDB (numbers from 1e-130 to 1e125, 38 digits) and divided by other
KPIs (speedup, efficiency), so a parsed number must be finite and of a plausible size;
anything else is a problem of its log, never an exception further on.
"""

from __future__ import annotations

import math

MAX_MAGNITUDE = 1e15
MIN_MAGNITUDE = 1e-12
MAX_PASS = 10**9


def fits(value: float) -> bool:
    """Whether a parsed number can be a KPI: finite and neither absurdly large nor small."""
    return math.isfinite(value) and (value == 0 or MIN_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE)
