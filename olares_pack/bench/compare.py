"""`compare APP A B`: is B faster or slower than A, or within noise? A and B are versions (their
latest record with figures) or experiment configurations (NAME for the best-ranked configuration
of the experiment's latest record, NAME:LABEL for one by its label).

Generation tokens/s and draft acceptance (accepted over drafted, per run) are compared by
Welch's t-test (welch.py: why that test). The two sides must have been measured the same way:
the prompt, the generated tokens, the sampling, the device, the engine build and the model file;
a difference is a refusal unless it is allowed, and then it is printed with the result."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.bench import experiments, records
from olares_pack.bench.records import MethodRecord, RunFigures
from olares_pack.bench.welch import Welch, welch
from olares_pack.common.errors import InputError

ONE_FIGURE = "cannot tell: one figure"


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
        return [r.draft_accepted / r.draft_n for r in self.runs
                if r.draft_n and r.draft_accepted is not None]

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

    def to_dict(self) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            return {"label": s.label, "kind": s.kind, "runs": len(s.runs), "mean": s.mean(),
                    "stdev": statistics.stdev(s.tps) if len(s.runs) > 1 else None,
                    "acceptance": statistics.fmean(s.acceptance) if s.acceptance else None, **s.config}

        a_mean = self.a.mean()
        return {"a": side(self.a), "b": side(self.b), "verdict": self.verdict,
                "tokens_per_s": self.speed.to_dict() | {"pct": self.speed.diff / a_mean * 100} if self.speed and a_mean else None,
                "acceptance": self.acceptance.to_dict() if self.acceptance else None,
                "method": "Welch's t-test, Welch–Satterthwaite degrees of freedom, 95 % interval of B − A",
                "method_differences": self.differences, "unknown_on_one_side": self.unknown,
                "method_change_allowed": self.allowed}


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
    return Comparison(a, b, verdict_of(speed), speed, acc, differ, unknown, bool(differ) and allow_method_change)


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
        acc = f", acceptance {statistics.fmean(s.acceptance) * 100:.1f} %" if s.acceptance else ""
        out.append(f"{'A' if s is c.a else 'B'} {s.label} ({s.kind}): {fig}{acc}")
    if c.speed is not None:
        w, base = c.speed, c.a.mean() or 1.0
        out.append(f"tokens/s B − A: {w.diff:+.2f} ({w.diff / base * 100:+.1f} %), 95 % CI {w.low:+.2f} … {w.high:+.2f} "
                   f"({w.low / base * 100:+.1f} … {w.high / base * 100:+.1f} %), Welch t {w.t:.2f}, df {w.df:.1f}, "
                   f"p {w.p:.3f}")
    if c.acceptance is not None:
        w = c.acceptance
        out.append(f"acceptance B − A: {w.diff * 100:+.1f} points, 95 % CI {w.low * 100:+.1f} … {w.high * 100:+.1f}, "
                   f"{verdict_of(w).replace('faster', 'higher').replace('slower', 'lower')}")
    if c.unknown:
        out.append("not stated on one side: " + ", ".join(c.unknown))
    out.append(f"verdict: {c.verdict}")
    return out
