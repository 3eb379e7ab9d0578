"""`bench --launch --sweep`: configurations around the version's own, each measured the same way,
interleaved in rounds, ranked against the version's own configuration.

- `--sweep '--flag=v1,v2'` and `--sweep-env 'NAME=v1,v2'` are axes. The grid is every
  combination of their values; `--one-at-a-time` changes one axis at a time from the version's
  own point. The version's own configuration is always measured (the baseline every other is
  compared with), once.
- Rounds: every configuration is started, measured (warm-ups, then `--runs` runs) and stopped
  once a round, in an order that rotates from round to round, so that a drift of the machine over
  the session (heat, clocks, another tenant) falls on every configuration alike instead of on
  whichever came last.
- A configuration whose engine fails to start, or dies during its runs, fails (with the engine's
  last log lines) and is left out of later rounds; the sweep goes on.
- The ranking is by mean generation tokens/s; each configuration's difference to the baseline
  comes with Welch's 95 % interval (welch.py) and a verdict."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.bench import harness, launch
from olares_pack.bench.launch import Config, Invocation
from olares_pack.bench.method import Method
from olares_pack.bench.welch import Welch, welch
from olares_pack.common.errors import BenchFailure, InputError

if TYPE_CHECKING:
    from olares_pack.engines.registry import Registry

OWN = "version's own"


@dataclass(frozen=True)
class Axis:
    name: str  # a canonical flag (--spec-draft-n-max) or an environment variable name
    values: list[str]
    env: bool = False


def parse_axis(text: str, reg: Registry | None, *, env: bool) -> Axis:
    """'--flag=v1,v2' (checked against the build's flag registry) or 'NAME=v1,v2'."""
    opt = "--sweep-env" if env else "--sweep"
    name, sep, values_text = text.partition("=")
    if not sep or not name:
        raise InputError(f"{opt} {text!r}: expected {'NAME' if env else '--flag'}=VALUE1,VALUE2,...")
    values = [v.strip() for v in values_text.split(",")]
    if not values_text.strip() or any(not v for v in values):
        raise InputError(f"{opt} {text!r}: an empty value in the list; give one value or more, separated by commas")
    if len(set(values)) != len(values):
        raise InputError(f"{opt} {text!r}: a value is listed twice")
    if env:
        if not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise InputError(f"{opt} {text!r}: {name!r} is not an environment variable name")
        return Axis(name, values, env=True)
    assert reg is not None
    spec = reg.lookup(name)
    if spec is None or spec.removed:
        raise InputError(f"{opt} {text!r}: {name} is not a flag of llama-server {reg.build} "
                         f"({'removed' + (f', use {spec.replacement}' if spec.replacement else '') if spec else 'unknown'}"
                         " in the pinned build's flag registry, olares_pack/engines/data)")
    if not spec.takes_value:
        raise InputError(f"{opt} {text!r}: {spec.canonical} is a switch without a value; sweep flags that take one")
    return Axis(spec.canonical, values)


def own_value(axis: Axis, inv: Invocation, reg: Registry) -> str | None:
    """The value the version itself gives the axis (None: not set, the engine's default)."""
    if axis.env:
        return inv.env.get(axis.name)
    spec = reg.lookup(axis.name)
    names = set(spec.names) if spec else {axis.name}
    for i, a in enumerate(inv.argv):
        if a in names and i + 1 < len(inv.argv):
            return inv.argv[i + 1]
        if "=" in a and a.split("=", 1)[0] in names:
            return a.split("=", 1)[1]
    return None


def _label(changes: list[tuple[Axis, str]]) -> str:
    return " ".join(f"{a.name}={v}" for a, v in changes) or OWN


def configurations(axes: list[Axis], inv: Invocation, reg: Registry, one_at_a_time: bool) -> list[Config]:
    """The baseline first, then the grid (or the one-at-a-time changes), without duplicates."""
    own = {a.name: own_value(a, inv, reg) for a in axes}
    out = [Config(OWN, baseline=True)]
    if one_at_a_time:
        combos = [[(a, v)] for a in axes for v in a.values if v != own[a.name]]
    else:
        combos = [[(a, v) for a, v in zip(axes, vs, strict=True) if v != own[a.name]]
                  for vs in itertools.product(*(a.values for a in axes))]
    seen = {OWN}
    for changes in combos:
        label = _label(changes)
        if label in seen:
            continue
        seen.add(label)
        out.append(Config(label, {a.name: v for a, v in changes if not a.env}, {a.name: v for a, v in changes if a.env}))
    return out


@dataclass
class Row:
    config: Config
    runs: list[harness.Run] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    failed: str = ""
    peak_gpu_mib: float | None = None
    vs_own: Welch | None = None

    def mean(self) -> float | None:
        return statistics.fmean(r.tokens_per_s for r in self.runs) if self.runs else None

    def acceptance(self) -> float | None:
        d = sum(r.draft_n or 0 for r in self.runs)
        return sum(r.draft_accepted or 0 for r in self.runs) / d if d else None

    def verdict(self) -> str:
        if self.config.baseline:
            return "baseline"
        if self.failed and not self.runs:
            return "failed"
        if self.vs_own is None:
            return "cannot tell: under 2 runs"
        return ("faster" if self.vs_own.diff > 0 else "slower") if self.vs_own.real else "within noise"


@dataclass
class SweepResult:
    rows: list[Row]
    server: harness.Server | None  # the first engine that answered
    method: Method
    rounds: int
    design: str
    started: str | None = None
    ended: str | None = None
    logs: list[Path] = field(default_factory=list)  # the engine's log of each start, in order

    def ranked(self) -> list[Row]:
        return sorted(self.rows, key=lambda r: (r.mean() is None, -(r.mean() or 0.0), r.config.label))

    def baseline(self) -> Row:
        return next(r for r in self.rows if r.config.baseline)


def run(binary: Path, model: Path, inv: Invocation, reg: Registry, configs: list[Config], method: Method,
        rounds: int, log_dir: Path, progress: Callable[[str], None], sampler: Callable[[], Any] | None = None,
        design: str = "grid", start_timeout: float = launch.START_TIMEOUT_S) -> SweepResult:
    rows = [Row(c) for c in configs]
    result = SweepResult(rows, None, method, rounds, design)
    for rnd in range(1, rounds + 1):
        shift = (rnd - 1) % len(rows)
        for row in rows[shift:] + rows[:shift]:
            if row.failed:
                continue
            c = row.config
            what = f"round {rnd} of {rounds}, {c.label}"
            argv = launch.argv_of(inv, reg, model, launch.free_port(), c)
            log = log_dir / f"{_file_label(c.label)}.round{rnd}.log"
            engine = launch.Engine(binary, argv, {**inv.env, **c.env}, log, start_timeout)
            result.logs.append(log)
            try:
                with engine:
                    client = harness.Client(engine.url)
                    server = harness.probe(client)
                    result.server = result.server or server
                    s = sampler() if sampler else None
                    with s or nullcontext():
                        try:
                            res = harness.bench(client, method, lambda m, w=what: progress(f"{w}: {m}"), server)
                        except BenchFailure as exc:
                            raise engine.failure(exc) from None
                    if s is not None:
                        row.peak_gpu_mib = max(row.peak_gpu_mib or 0.0, s.peak_mib)
            except (BenchFailure, InputError) as exc:
                row.failed = f"{what}: {exc}"
                progress(f"{what}: FAILED — {exc}")
                continue
            result.started = result.started or res.started
            result.ended = res.ended
            row.runs += res.runs
            row.rounds += [rnd] * len(res.runs)
    base = result.baseline()
    for row in rows:
        if not row.config.baseline and len(row.runs) > 1 and len(base.runs) > 1:
            row.vs_own = welch([r.tokens_per_s for r in base.runs], [r.tokens_per_s for r in row.runs])
    return result


def _file_label(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in label).strip("_") or "own"


HEADERS = ["rank", "configuration", "tokens/s mean (min–max)", "σ", "acceptance", "vs version's own (95 % CI)",
           "verdict", "GPU peak"]


def table_rows(result: SweepResult) -> list[list[str]]:
    base_mean = result.baseline().mean()
    out = []
    for i, row in enumerate(result.ranked(), 1):
        tps = [r.tokens_per_s for r in row.runs]
        fig = f"{statistics.fmean(tps):.2f} ({min(tps):.2f}–{max(tps):.2f})" if tps else "—"
        sigma = f"{statistics.stdev(tps):.2f}" if len(tps) > 1 else "—"
        acc = row.acceptance()
        vs = "—"
        if row.vs_own is not None and base_mean:
            w = row.vs_own
            vs = f"{w.diff / base_mean * 100:+.1f} % ({w.low / base_mean * 100:+.1f} … {w.high / base_mean * 100:+.1f})"
        verdict = row.verdict() + (f": {row.failed.splitlines()[0]}" if row.failed else "")
        out.append([str(i) if row.runs else "—", row.config.label, fig, sigma, f"{acc * 100:.1f} %" if acc is not None else "—",
                    vs, verdict, f"{row.peak_gpu_mib:.0f} MiB" if row.peak_gpu_mib is not None else "—"])
    return out


def best_diff(result: SweepResult, inv: Invocation, reg: Registry) -> list[str]:
    """The best-ranked configuration's changes to the version's own, one line each, as they go
    into app.yaml (server: arguments, env:) for `release`."""
    best = next((r for r in result.ranked() if r.runs), None)
    if best is None:
        return ["no configuration finished its runs"]
    if best.config.baseline:
        return ["the version's own configuration ranks first: nothing to change"]
    proven = "faster than the version's own" if best.verdict() == "faster" else \
        f"{best.verdict()} against the version's own: not a proven gain"
    lines = [f"best: {best.config.label} ({proven})"]
    for flag, value in best.config.args.items():
        own = own_value(Axis(flag, [value]), inv, reg)
        lines.append(f"  argument {flag}: {own if own is not None else '(engine default)'} → {value}")
    for name, value in best.config.env.items():
        own = inv.env.get(name)
        lines.append(f"  env {name}: {own if own is not None else '(unset)'} → {value}")
    return lines


def to_json(result: SweepResult, inv: Invocation, reg: Registry) -> dict[str, Any]:
    base_mean = result.baseline().mean()
    rows = []
    for row in result.ranked():
        w = row.vs_own
        rows.append({"label": row.config.label, "baseline": row.config.baseline, "args": row.config.args,
                     "env": row.config.env, "runs": [r.to_dict() for r in row.runs], "rounds": row.rounds,
                     "mean": row.mean(), "acceptance": row.acceptance(), "failed": row.failed or None,
                     "peak_gpu_mib": row.peak_gpu_mib, "verdict": row.verdict(),
                     "vs_own": (w.to_dict() | {"pct": w.diff / base_mean * 100}) if w and base_mean else None})
    server = result.server
    return {"design": result.design, "rounds": result.rounds, "method": result.method.to_record(),
            "engine": server.kind if server else None, "engine_build": server.build if server else None,
            "model_file": server.model_file if server else None, "started": result.started, "ended": result.ended,
            "configurations": rows, "best": best_diff(result, inv, reg)}
