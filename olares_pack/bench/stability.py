"""Whether a series of runs, in the order they ran, is one steady state: its spread, a drift
across the runs, and a two-state or periodic pattern (the 5-fast/4-slow kind that a drafter's
adaptive throttling makes), each said in words and kept as data.

- spread: the coefficient of variation (σ over the mean);
- drift: the least-squares slope of tokens/s over the run index, as the change over the whole
  series in % of the mean; called a drift when the slope's t-test gives p < 0.05 and the change
  is over 1 %;
- two states: the split of the sorted figures into a slow and a fast group that leaves the
  least spread within the groups (one-dimensional k-means, exact for two groups); called two
  states when each group has 2 runs or more, the groups' means are at least 3 pooled σ apart and
  the gap between them is wider than either group's own range, and the fast one is at least 2.5 %
  faster. The order of the states says the
  rest: blocks (5 fast, 4 slow), and a period when the state sequence repeats itself."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from olares_pack.bench.welch import t_sf2

MIN_RUNS = 4  # fewer runs show no pattern
DRIFT_P = 0.05
DRIFT_MIN_PCT = 1.0
SEPARATION = 3.0
STATE_GAP_PCT = 2.5  # two states closer than this, in % of the slow one, are noise to a reader


@dataclass(frozen=True)
class Stability:
    runs: int
    cv_pct: float | None  # σ / mean, in %
    drift_pct: float | None  # fitted change over the series, in % of the mean
    drift_p: float | None
    pattern: str  # steady | drift | two-state | periodic | too few runs
    states: str = ""  # the state of each run in order, F (fast) or S (slow), for two states
    blocks: list[int] = field(default_factory=list)  # lengths of the runs of one state, in order
    fast_mean: float | None = None
    slow_mean: float | None = None
    period: int | None = None

    @property
    def drifting(self) -> bool:
        return self.drift_p is not None and self.drift_pct is not None and self.drift_p < DRIFT_P \
            and abs(self.drift_pct) > DRIFT_MIN_PCT

    def text(self) -> str:
        if self.pattern == "too few runs":
            return f"too few runs to tell ({self.runs})"
        cv = f"σ {self.cv_pct:.1f} %"
        if self.pattern in ("two-state", "periodic"):
            assert self.fast_mean is not None and self.slow_mean is not None
            shown = self.states[:self.period] if self.period else self.states
            words = ", ".join(f"{len(b)} {'fast' if b[0] == 'F' else 'slow'}" for b in _blocks(shown))
            gap = (self.fast_mean - self.slow_mean) / self.slow_mean * 100
            head = f"cycles every {self.period} runs" if self.period else "two states"
            return f"{head}: {words} (fast {self.fast_mean:.2f}, slow {self.slow_mean:.2f}, +{gap:.1f} %)"
        if self.pattern == "drift":
            return f"drifts {self.drift_pct:+.1f} % over {self.runs} runs ({cv})"
        return f"steady ({cv})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"text": self.text()}


def _slope(xs: list[float]) -> tuple[float, float | None]:
    """Least-squares slope over the index, and the two-sided p of slope = 0."""
    n = len(xs)
    mx, my = (n - 1) / 2, statistics.fmean(xs)
    sxx = sum((i - mx) ** 2 for i in range(n))
    slope = sum((i - mx) * (y - my) for i, y in enumerate(xs)) / sxx
    resid = sum((y - (my + slope * (i - mx))) ** 2 for i, y in enumerate(xs))
    if n < 3:
        return slope, None
    se = math.sqrt(resid / (n - 2) / sxx)
    if se == 0:
        return slope, 0.0 if slope else 1.0
    return slope, t_sf2(slope / se, n - 2)


def _split(xs: list[float]) -> tuple[float, int] | None:
    """(threshold, size of the slow group) of the two-group split with the least within-group sum
    of squares; None under 4 values."""
    s = sorted(xs)
    best: tuple[float, int] | None = None
    best_ss = math.inf
    for k in range(2, len(s) - 1):
        lo, hi = s[:k], s[k:]
        ss = sum((x - statistics.fmean(lo)) ** 2 for x in lo) + sum((x - statistics.fmean(hi)) ** 2 for x in hi)
        if ss < best_ss:
            best_ss, best = ss, ((s[k - 1] + s[k]) / 2, k)
    return best


def _period(states: str) -> int | None:
    """The shortest period the sequence repeats with, seen at least one and a half times."""
    n = len(states)
    for p in range(2, n):
        if n - p < max(2, math.ceil(p / 2)):
            return None
        if all(states[i] == states[i + p] for i in range(n - p)) and len(set(states[:p])) == 2:
            return p
    return None


def analyse(xs: list[float]) -> Stability:
    n = len(xs)
    if n < MIN_RUNS:
        cv = statistics.stdev(xs) / statistics.fmean(xs) * 100 if n > 1 else None
        return Stability(n, cv, None, None, "too few runs")
    mean = statistics.fmean(xs)
    cv = statistics.stdev(xs) / mean * 100
    slope, p = _slope(xs)
    drift = slope * (n - 1) / mean * 100
    base = dict(runs=n, cv_pct=cv, drift_pct=drift, drift_p=p)
    split = _split(xs)
    if split is not None:
        threshold, k = split
        lo = [x for x in xs if x <= threshold]
        hi = [x for x in xs if x > threshold]
        if len(lo) < 2 or len(hi) < 2:  # equal figures: the split puts every run on one side
            split = None
    if split is not None:
        pooled = math.sqrt((sum((x - statistics.fmean(lo)) ** 2 for x in lo)
                            + sum((x - statistics.fmean(hi)) ** 2 for x in hi)) / (n - 2))
        gap = min(hi) - max(lo)
        sep = statistics.fmean(hi) - statistics.fmean(lo)
        if len(lo) >= 2 and len(hi) >= 2 and sep >= SEPARATION * pooled and sep / statistics.fmean(lo) * 100 >= STATE_GAP_PCT \
                and gap > max(max(lo) - min(lo), max(hi) - min(hi)):
            states = "".join("F" if x > threshold else "S" for x in xs)
            blocks = [len(b) for b in _blocks(states)]
            period = _period(states)
            return Stability(**base, pattern="periodic" if period else "two-state", states=states, blocks=blocks,
                             fast_mean=statistics.fmean(hi), slow_mean=statistics.fmean(lo), period=period)
    result = Stability(**base, pattern="steady")
    return Stability(**base, pattern="drift") if result.drifting else result


def _blocks(states: str) -> list[str]:
    out: list[str] = []
    for s in states:
        if out and out[-1][0] == s:
            out[-1] += s
        else:
            out.append(s)
    return out
