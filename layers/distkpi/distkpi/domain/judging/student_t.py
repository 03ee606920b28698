"""Student's t distribution, exact to double precision without scipy (the Lambda path).

The upper tail is a regularized incomplete beta function, P(T > x) = I_z(df/2, 1/2) / 2
with z = df / (df + x^2), evaluated by its continued fraction (modified Lentz); the quantile
inverts it by Newton steps kept inside a bracket. Degrees of freedom need not be whole
numbers (Welch's)."""

from __future__ import annotations

import math
import statistics

_EPS = 1e-16
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (Numerical Recipes' betacf, modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
        if abs(c * d - 1.0) < _EPS:
            return fraction
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, not {df}")
    if math.isinf(x):
        return 0.0 if x > 0 else 1.0
    if x == 0:
        return 0.5
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + x * x))
    return tail if x > 0 else 1.0 - tail


def t_pdf(x: float, df: float) -> float:
    log_density = (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(x * x / df)
    )
    return math.exp(log_density)


def _cornish_fisher(p: float, df: float) -> float:
    z = statistics.NormalDist().inv_cdf(p)
    v = df
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


def t_quantile(p: float, df: float) -> float:
    """The x with P(T <= x) = p (within 1e-6 relative of scipy: tests/unit/test_student_t.py)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), not {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    tail = 1.0 - p
    low, high = 0.0, 1.0
    while t_sf(high, df) > tail:
        low, high = high, high * 4.0
    x = min(max(_cornish_fisher(p, df), low), high)
    for _ in range(200):
        excess = t_sf(x, df) - tail  # falls as x grows
        if excess > 0:
            low = x
        else:
            high = x
        step = excess / t_pdf(x, df)
        guess = x + step
        if not low < guess < high:
            guess = (low + high) / 2.0
        if abs(guess - x) <= 1e-14 * max(1.0, abs(x)):
            return guess
        x = guess
    return x
