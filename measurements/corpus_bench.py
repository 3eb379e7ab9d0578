"""Lint a real catalogue against the official checker, and time lint against a raw Helm render.

    .venv/bin/python measurements/corpus_bench.py FOLDER... [--runs N] [--jobs J]

Every chart under the folders (e.g. a beclab/apps checkout) is linted with the rule set of the
release it targets: apiVersion v3 / 0.12.0 charts with --olares 1.12.6, the others (v1/v2,
0.10.0 and older) with --olares 1.12.5. Each v3 chart also goes to the oracle (oracle/bin/
oac-oracle, `make oracle`: the official checker, as the 1.12.6+ installer calls it). Printed:

- v3 charts: installer-class lint errors by rule; with the oracle, false errors (lint error, the
  oracle accepts) and misses (the oracle refuses, lint has no error), by rule, with the charts;
- legacy charts: how many render, and the installer errors lint reports on those that do;
- olares-pack's policy errors by rule (not installer refusals: reported apart);
- time: lint (one process, the rule sets above) against a raw render of the same charts (each
  chart read, rendered once with the installer's values, its documents parsed), for each set apart
  (each folder's v3 charts and its older ones), so that the official v3 charts (a beclab/apps
  checkout) and a third-party set of hand-written 0.10.0/v2 charts (issue #36: goal <= 2 each) are
  read off one run. Raw render and lint take turns, --runs times; printed: the median times, the
  median of the runs' lint/raw ratios (wall clock), and the same ratio in this process's CPU time
  (less moved by other work on a shared machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from olares_pack.charts import helm
from olares_pack.charts.source import ChartSource, resolve
from olares_pack.common import fsio
from olares_pack.lint import LintOptions, lint_chart
from olares_pack.lint.context import build_context

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import oracle  # noqa: E402 - the oracle helper the tests use

V3_RELEASE, LEGACY_RELEASE = "1.12.6", "1.12.5"


def is_v3(source: ChartSource) -> bool:
    ctx = build_context(source, LintOptions())
    return ctx.declared_modern or ctx.api_version == "v3"


def lint_all(sources: list[tuple[ChartSource, bool]]) -> dict[str, list]:
    out = {}
    for source, v3 in sources:
        options = LintOptions(olares_version=V3_RELEASE if v3 else LEGACY_RELEASE)
        out[source.label] = lint_chart(source, options).findings
    return out


def raw_render(sources: list[tuple[ChartSource, bool]]) -> int:
    """Each chart rendered once with the installer's values (owner == admin, first mode)."""
    count = 0
    for source, _ in sources:
        ctx = build_context(source, LintOptions())
        with tempfile.TemporaryDirectory(dir=fsio.scratch_dir()) as tmp:  # where lint puts them too
            fsio.write_tree(source.files, Path(tmp) / source.folder)
            try:
                with helm.load(Path(tmp) / source.folder) as chart:
                    name = ctx.name or source.folder
                    out = chart.render(values=ctx.values("alice", "alice", ctx.modes[0]), name=name, namespace=f"{name}-alice")
                    count += len(helm.objects(out))
            except Exception:  # noqa: BLE001 - a chart that does not render costs its attempt, like in lint
                pass
    return count


def by_rule(title: str, hits: dict[str, set[str]]) -> None:
    total = sum(len(v) for v in hits.values())
    print(f"{title}: {total}")
    for rule, charts in sorted(hits.items()):
        print(f"  {rule}: {len(charts)} chart(s): {', '.join(sorted(charts)[:12])}{' ...' if len(charts) > 12 else ''}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sources = [(s, is_v3(s)) for s in resolve(args.folders)]
    name = {s.label: Path(s.label).name for s, _ in sources}
    findings = lint_all(sources)
    v3 = [s for s, m in sources if m]
    legacy = [s for s, m in sources if not m]

    def errors(label: str, kind: str = "installer") -> list:
        return [f for f in findings[label] if f.severity == "error" and f.kind == kind]

    print(f"{len(sources)} charts: {len(v3)} v3 (rules of {V3_RELEASE}), {len(legacy)} legacy (rules of {LEGACY_RELEASE})")
    lint_hits: dict[str, set[str]] = defaultdict(set)
    for s in v3:
        for f in errors(s.label):
            lint_hits[f.rule].add(name[s.label])
    by_rule(f"v3 charts with installer errors: {len({c for v in lint_hits.values() for c in v})}; errors by rule", lint_hits)
    why = oracle.available()
    if why:
        print(f"oracle: not available ({why.splitlines()[0]} ...): no false-error/miss figures")
    else:
        false_errors: dict[str, set[str]] = defaultdict(set)
        misses: list[str] = []
        accepted = 0
        version = ""
        for s in v3:
            v = oracle.verdict(Path(s.label))
            version = v.oac
            mine = errors(s.label)
            accepted += v.accepted
            if v.accepted:
                for f in mine:
                    false_errors[f.rule].add(name[s.label])
            elif not mine:
                misses.append(f"{name[s.label]} ({v.errors[0][:120] if v.errors else '?'})")
        print(f"oracle (oac {version}): accepts {accepted} of {len(v3)} v3 charts")
        by_rule("false errors (lint error, the oracle accepts)", false_errors)
        print(f"misses (the oracle refuses, lint has no error): {len(misses)}")
        for m in misses:
            print(f"  {m}")
    rendering = [s for s in legacy if not any(f.rule == "helm.render" for f in findings[s.label])]
    # a chart whose own olares dependency excludes 1.12.5 is refused there, rightly: counted apart
    outside = [s for s in rendering if any(f.rule == "manifest.os-window" and f.severity == "error" for f in findings[s.label])]
    legacy_hits: dict[str, set[str]] = defaultdict(set)
    for s in rendering:
        if s not in outside:
            for f in errors(s.label):
                legacy_hits[f.rule].add(name[s.label])
    print(f"legacy charts that render: {len(rendering)} of {len(legacy)}; outside {LEGACY_RELEASE} by their own olares "
          f"dependency (manifest.os-window): {len(outside)} ({', '.join(sorted(name[s.label] for s in outside))})")
    by_rule(f"legacy charts that render and admit {LEGACY_RELEASE}, installer errors", legacy_hits)
    policy: dict[str, set[str]] = defaultdict(set)
    for s, _ in sources:
        for f in errors(s.label, "policy"):
            policy[f.rule].add(name[s.label])
    by_rule("policy errors (olares-pack's own rules, not installer refusals)", policy)
    warnings = Counter(f.rule for fs in findings.values() for f in fs if f.severity == "warning")
    print("warnings by rule: " + ", ".join(f"{r} {n}" for r, n in sorted(warnings.items())))

    raw_render(sources)  # warm: the Helm engine and the schemas load once per process
    print(f"time, medians of {args.runs} runs, raw render and lint taking turns (the machine's load moves; each run's "
          "ratio is of neighbouring timings), wall clock and this process's CPU time:")
    for title, subset in sets(args.folders, sources):
        raw, lint, ratio, cpu = paired(lambda subset=subset: raw_render(subset), lambda subset=subset: lint_all(subset), args.runs)
        print(f"  {title} ({len(subset)} charts): raw render {raw:.2f} s, lint {lint:.2f} s: lint/raw = {ratio:.2f} "
              f"(CPU time: {cpu:.2f})")


def paired(raw: Callable[[], object], lint: Callable[[], object], runs: int) -> tuple[float, float, float, float]:
    """Median raw time, median lint time, median of the runs' lint/raw ratios (wall, then CPU)."""
    walls: list[tuple[float, float]] = []
    cpus: list[float] = []
    for _ in range(runs):
        times = []
        for fn in (raw, lint):
            w, c = time.perf_counter(), time.process_time()
            fn()
            times.append((time.perf_counter() - w, time.process_time() - c))
        walls.append((times[0][0], times[1][0]))
        cpus.append(times[1][1] / times[0][1])
    return (statistics.median(r for r, _ in walls), statistics.median(x for _, x in walls),
            statistics.median(x / r for r, x in walls), statistics.median(cpus))


def sets(folders: list[Path], sources: list[tuple[ChartSource, bool]]) -> list[tuple[str, list[tuple[ChartSource, bool]]]]:
    """Each folder's v3 charts and its older ones, apart (empty sets left out)."""
    out = []
    for folder in folders:
        mine = [(s, v3) for s, v3 in sources if Path(s.label).resolve().is_relative_to(folder.resolve())]
        for kind, want in (("v3", True), ("v1/v2", False)):
            subset = [(s, v3) for s, v3 in mine if v3 is want]
            if subset:
                out.append((f"{folder} {kind}", subset))
    return out


if __name__ == "__main__":
    main()
