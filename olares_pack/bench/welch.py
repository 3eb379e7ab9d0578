"""Welch's t-test on two samples of per-run figures, standard library only.

Why Welch: two versions (or two configurations) are measured in separate series whose spread
need not be equal (the example app's σ went from 5–6 to 2.54 tokens/s between versions), and a
bench has 5–10 runs a side, too few for a bootstrap's interval to be trusted. Welch's test does
not assume equal variances; its degrees of freedom come from the Welch–Satterthwaite equation.
The interval is the 95 % confidence interval of the difference of the means (B − A); a
difference is called real when that interval excludes zero (p < 0.05, two-sided).

Student's t distribution through the regularized incomplete beta function (a continued fraction,
Lentz's method), so that `--help` and a GPU machine without SciPy need nothing more."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

LEVEL = 0.95


@dataclass(frozen=True)
class Welch:
    diff: float  # mean(b) - mean(a)
    low: float  # the confidence interval of diff
    high: float
    t: float
    df: float
    p: float  # two-sided
    level: float = LEVEL

    @property
    def real(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_sf2(t: float, df: float) -> float:
    """P(|T| > |t|) for Student's t with df degrees of freedom."""
    return betainc(df / 2, 0.5, df / (df + t * t))


def t_quantile(q: float, df: float) -> float:
    """The t with P(T ≤ t) = q (q > 0.5), by bisection on the two-sided tail."""
    tail = 2 * (1 - q)
    lo, hi = 0.0, 1.0
    while t_sf2(hi, df) > tail:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_sf2(mid, df) > tail:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def welch(a: list[float], b: list[float], level: float = LEVEL) -> Welch:
    """B against A; each needs 2 runs or more."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's test needs at least 2 runs a side")
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = mb - ma
    se = math.sqrt(va + vb)
    if se == 0:
        return Welch(diff, diff, diff, math.inf if diff else 0.0, len(a) + len(b) - 2, 0.0 if diff else 1.0, level)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    t = diff / se
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return Welch(diff, diff - half, diff + half, t, df, t_sf2(t, df), level)
