"""The summary of a version's runs: mean, range, spread and draft acceptance."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Summary:
    runs: int  # 0 for figures published without their runs
    mean: float
    min: float | None
    max: float | None
    stdev: float | None  # the sample standard deviation (n - 1); None under 2 runs
    acceptance: float | None  # accepted drafts over proposed drafts, pooled over the runs
    acceptance_min: float | None = None  # a published range, when no counts were given
    acceptance_max: float | None = None
    drafted: int | None = None
    accepted: int | None = None
    prompt_tokens_per_s: float | None = None
    ttft_ms: float | None = None
    stated: bool = False  # figures as a document states them (no runs behind them here)
    qualifier: str = ""  # what the document says they are, when not a measurement

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def range_text(self) -> str:
        """Measured: mean (min–max) to two decimals; stated: the figures as the document gives them."""
        if self.stated:
            n = _stated
            text = f"{n(self.mean)} ({n(self.min)}–{n(self.max)})" if self.min is not None and self.max is not None else n(self.mean)
            return f"{'≈' if self.qualifier else ''}{text}" + (f" ({self.qualifier})" if self.qualifier else "")
        mean = f"{self.mean:.2f}"
        return f"{mean} ({self.min:.2f}–{self.max:.2f})" if self.min is not None and self.max is not None else mean

    def acceptance_text(self) -> str:
        if self.stated:
            pct = [f"{round(x * 100, 1):g}" for x in (self.acceptance, self.acceptance_min, self.acceptance_max) if x is not None]
            if self.acceptance is not None:
                return f"{pct[0]} %" + (f" ({pct[1]}–{pct[2]} %)" if len(pct) == 3 else "")
            return f"{pct[0]}–{pct[1]} %" if len(pct) == 2 else "—"
        if self.acceptance is not None:
            return f"{self.acceptance * 100:.1f} %"
        if self.acceptance_min is not None and self.acceptance_max is not None:
            return f"{self.acceptance_min * 100:.0f}–{self.acceptance_max * 100:.0f} %"
        return "—"


def _stated(x: float | None) -> str:
    """A stated figure as written: 77, 72.75, 69.30 (two decimals where it has decimals)."""
    assert x is not None
    return f"{x:.0f}" if x == int(x) else f"{x:.2f}"


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(tokens_per_s: list[float], drafted: list[int | None] | None = None,
              accepted: list[int | None] | None = None, prompt_tps: list[float | None] | None = None,
              ttft_ms: list[float | None] | None = None) -> Summary:
    """Mean (fmean), min, max and sample σ of per-run tokens/s; acceptance = Σ accepted / Σ drafted."""
    if not tokens_per_s:
        raise ValueError("no runs to summarize")
    d = [x for x in (drafted or []) if x is not None]
    a = [x for x in (accepted or []) if x is not None]
    pooled = sum(a) / sum(d) if d and len(d) == len(a) and sum(d) > 0 else None
    return Summary(len(tokens_per_s), statistics.fmean(tokens_per_s), min(tokens_per_s), max(tokens_per_s),
                   statistics.stdev(tokens_per_s) if len(tokens_per_s) > 1 else None, pooled,
                   drafted=sum(d) if d else None, accepted=sum(a) if a else None,
                   prompt_tokens_per_s=_mean([x for x in (prompt_tps or []) if x is not None]),
                   ttft_ms=_mean([x for x in (ttft_ms or []) if x is not None]))


def delta_text(new: Summary, old: Summary) -> tuple[str, str]:
    """(tokens/s change in %, acceptance change in points) of new against old, '—' where unknown."""
    speed = f"{(new.mean - old.mean) / old.mean * 100:+.1f} %"
    acc = "—"
    if new.acceptance is not None and old.acceptance is not None:
        acc = f"{(new.acceptance - old.acceptance) * 100:+.1f} points"
    return speed, acc
