"""`compare APP A B`: is B faster or slower than A, or within noise? A and B are versions (their
latest record with figures) or experiment configurations (NAME for the best-ranked configuration
of the experiment's latest record, NAME:LABEL for one by its label).

Generation tokens/s and draft acceptance (accepted over drafted, per run) are compared by
Welch's t-test (welch.py: why that test); the acceptance shown is pooled (Σ accepted over
Σ drafted), as `history` and the docs give it. Welch's test assumes independent runs: a side whose
series drifts or alternates between two states (stability.py) gets no confident verdict, only
the interval, labelled. The two sides must have been measured the same way:
the prompt, the generated tokens, the sampling, the device, the engine build and the model file;
a difference is a refusal unless it is allowed, and then it is printed with the result."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.bench import experiments, records
from olares_pack.bench.records import MethodRecord, RunFigures
from olares_pack.bench.stability import MIN_RUNS, Stability, analyse
from olares_pack.bench.welch import Welch, welch
from olares_pack.common.errors import InputError

ONE_FIGURE = "cannot tell: one figure"
# Welch's test needs independent runs; a drifting or two-state series breaks that, so its
# interval is shown but no faster/slower is claimed
NOT_INDEPENDENT = "cannot tell: runs not independent"


@dataclass
class Side:
    label: str
    kind: str  # measured | synthetic | transcribed
    runs: list[RunFigures]
    method: MethodRecord
    device: str
    engine_build: str | None
    model_file: str | None
    published_mean: float | None = None  # a side with figures but no runs
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def tps(self) -> list[float]:
        return [r.tokens_per_s for r in self.runs]

    @property
    def acceptance(self) -> list[float]:
        """Per-run acceptance: the samples Welch's test compares."""
        return [r.draft_accepted / r.draft_n for r in self.runs
                if r.draft_n and r.draft_accepted is not None]

    def pooled_acceptance(self) -> float | None:
        """Σ accepted over Σ drafted, as history (stats.summarize) and the docs give acceptance."""
        counted = [r for r in self.runs if r.draft_n and r.draft_accepted is not None]
        drafted = sum(r.draft_n or 0 for r in counted)
        return sum(r.draft_accepted or 0 for r in counted) / drafted if drafted else None

    def stability(self) -> Stability | None:
        """The run series' pattern in the order the runs ran; None under stability.MIN_RUNS runs."""
        return analyse(self.tps) if len(self.runs) >= MIN_RUNS else None

    def mean(self) -> float | None:
        return statistics.fmean(self.tps) if self.runs else self.published_mean

    def facts(self) -> dict[str, object]:
        """What must be equal on both sides for a comparison to mean anything (None: not said)."""
        m = self.method
        return {"prompt": m.prompt_name, "prompt text (SHA-256)": m.prompt_sha256, "generated tokens": m.max_tokens,
                "every run to the last token (ignore_eos)": m.ignore_eos, "temperature": m.temperature,
                "top_p": m.top_p, "top_k": m.top_k, "min_p": m.min_p, "device": self.device,
                "engine build": self.engine_build, "model file": self.model_file}


def side_of(app_dir: Path, ref: str) -> Side:
    """A version with bench records, else an experiment (NAME or NAME:LABEL)."""
    if records.path_of(app_dir, ref).is_file():
        bf = records.read(app_dir, ref)
        assert bf is not None
        with_figures = [r for r in records.current(bf) if r.runs or r.published]
        if not with_figures:
            raise InputError(f"{ref}: no record with figures in {records.path_of(app_dir, ref)}")
        rec = with_figures[-1]
        return Side(ref, rec.provenance_kind(), list(rec.runs), rec.method, rec.device, rec.engine_build,
                    rec.model_file, rec.published.tokens_per_s if rec.published and not rec.runs else None)
    name, _, label = ref.partition(":")
    ef = experiments.read(app_dir, name) if experiments.NAME.match(name) else None
    if ef is None or not ef.records:
        known = records.versions(app_dir) + experiments.names(app_dir)
        raise InputError(f"{ref}: neither a version with bench records nor an experiment of this app "
                         f"(known: {', '.join(known) or 'none'})")
    rec = ef.records[-1]
    confs = [c for c in rec.configurations if c.runs]
    if label:
        confs = [c for c in rec.configurations if c.label == label]
        if not confs:
            raise InputError(f"{ref}: experiment {name} has no configuration {label!r} "
                             f"(it has: {', '.join(c.label for c in rec.configurations)})")
    elif not confs:
        raise InputError(f"{ref}: no configuration of experiment {name} has runs")
    conf = confs[0] if label else max(confs, key=lambda c: statistics.fmean(r.tokens_per_s for r in c.runs))
    return Side(f"{name}:{conf.label}", rec.kind, list(conf.runs), rec.method, rec.device, rec.engine_build,
                rec.model_file, config={"args": conf.args, "env": conf.env, "version": rec.version})


def method_differences(a: Side, b: Side) -> tuple[list[str], list[str]]:
    """(what differs, what one side does not say)."""
    fa, fb = a.facts(), b.facts()
    differ = [f"{k}: {fa[k]!r} → {fb[k]!r}" for k in fa if fa[k] is not None and fb[k] is not None and fa[k] != fb[k]]
    unknown = [k for k in fa if (fa[k] is None) != (fb[k] is None)]
    return differ, unknown


@dataclass
class Comparison:
    a: Side
    b: Side
    verdict: str  # faster | slower | within noise | cannot tell: ...
    speed: Welch | None
    acceptance: Welch | None
    differences: list[str]
    unknown: list[str]
    allowed: bool  # methods differ and --allow-method-change said go on
    dependent: list[str] = field(default_factory=list)  # sides whose runs are not one steady state, in words

    def to_dict(self) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            return {"label": s.label, "kind": s.kind, "runs": len(s.runs), "mean": s.mean(),
                    "stdev": statistics.stdev(s.tps) if len(s.runs) > 1 else None,
                    "acceptance": s.pooled_acceptance(), **s.config}

        a_mean = self.a.mean()
        return {"a": side(self.a), "b": side(self.b), "verdict": self.verdict,
                "tokens_per_s": self.speed.to_dict() | {"pct": self.speed.diff / a_mean * 100} if self.speed and a_mean else None,
                "acceptance": self.acceptance.to_dict() if self.acceptance else None,
                "method": "Welch's t-test, Welch–Satterthwaite degrees of freedom, 95 % interval of B − A",
                "method_differences": self.differences, "unknown_on_one_side": self.unknown,
                "method_change_allowed": self.allowed, "runs_not_independent": self.dependent}


def verdict_of(w: Welch) -> str:
    return ("faster" if w.diff > 0 else "slower") if w.real else "within noise"


def compare(a: Side, b: Side, allow_method_change: bool = False) -> Comparison:
    differ, unknown = method_differences(a, b)
    if len(a.runs) < 2 or len(b.runs) < 2:
        few = [s for s in (a, b) if len(s.runs) < 2]
        why = ONE_FIGURE if any(not s.runs for s in few) else "cannot tell: one run"
        return Comparison(a, b, f"{why} ({', '.join(s.label for s in few)})", None, None, differ, unknown,
                          bool(differ) and allow_method_change)
    speed = welch(a.tps, b.tps)
    acc = welch(a.acceptance, b.acceptance) if len(a.acceptance) > 1 and len(b.acceptance) > 1 else None
    dependent = [f"{s.label}: {st.text()}" for s in (a, b) if (st := s.stability()) is not None
                 and st.pattern in ("drift", "two-state", "periodic")]
    verdict = (f"{NOT_INDEPENDENT} ({'; '.join(dependent)})" if dependent else verdict_of(speed))
    return Comparison(a, b, verdict, speed, acc, differ, unknown, bool(differ) and allow_method_change, dependent)


def lines(c: Comparison) -> list[str]:
    """The comparison in words, one fact a line."""
    out = []
    if c.differences:
        head = "METHODS DIFFER (--allow-method-change)" if c.allowed else "methods differ"
        out.append(f"{head}: " + "; ".join(c.differences))
    for s in (c.a, c.b):
        m = s.mean()
        fig = (f"{m:.2f} tokens/s mean of {len(s.runs)} runs, σ {statistics.stdev(s.tps):.2f}" if len(s.runs) > 1
               else f"{m:.2f} tokens/s, {'one figure' if not s.runs else 'one run'}" if m is not None else "no figure")
        pooled = s.pooled_acceptance()
        acc = f", acceptance {pooled * 100:.1f} % (pooled)" if pooled is not None else ""
        out.append(f"{'A' if s is c.a else 'B'} {s.label} ({s.kind}): {fig}{acc}")
    if c.speed is not None:
        w, base = c.speed, c.a.mean() or 1.0
        out.append(f"tokens/s B − A: {w.diff:+.2f} ({w.diff / base * 100:+.1f} %), 95 % CI {w.low:+.2f} … {w.high:+.2f} "
                   f"({w.low / base * 100:+.1f} … {w.high / base * 100:+.1f} %), Welch t {w.t:.2f}, df {w.df:.1f}, "
                   f"p {w.p:.3f}" + (" — Welch's test assumes independent runs, which these are not: the "
                                     "interval is indicative only" if c.dependent else ""))
    if c.acceptance is not None:
        w = c.acceptance
        out.append(f"acceptance B − A: {w.diff * 100:+.1f} points, 95 % CI {w.low * 100:+.1f} … {w.high * 100:+.1f}, "
                   f"{verdict_of(w).replace('faster', 'higher').replace('slower', 'lower')}")
    if c.unknown:
        out.append("not stated on one side: " + ", ".join(c.unknown))
    out.append(f"verdict: {c.verdict}")
    return out
