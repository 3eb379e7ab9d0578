"""Import real Olares catalogues with `--structured` and count what becomes typed, and whether the
typed apps are the apps the maintainers wrote -- judged by the independent proof (olares_pack/proof/),
not by the importer's own report.

    .venv/bin/python measurements/import_corpus.py CHART_OR_FOLDER_OR__lib.ts... [--accept KIND ...] [--json]

Each argument is what `olares-pack import` takes (a chart folder, a .tgz, a folder of them) or a
catalogue worker's `functions/_lib.ts` (bayerhazard/aimighty-market serves its charts as base64
.tgz strings in it: they are extracted to a temporary folder first). Every chart is imported into an
empty temporary catalogue with `--structured` (nothing is written where the charts are), and the
script prints:

- charts found, typed, kept as written (by reason);
- of the typed: equal to the original under the proof (every line, GPU mode and user form), the
  differences it finds by kind, and per app;
- the installer's rules (lint, `--olares` of each line) on the original and on the typed render:
  typed renders refused where the original passes (must be 0);
- version strings rewritten (an imported version's string is never rewritten: 0), Chart.yaml
  appVersions lowered (0), `metadata.bento` cards kept (all);
- per app, whether the olares window where it is offered changed (a v2 app typed for the legacy
  line has the installer's own `<1.12.6` cap written out).

With `--run` (a node can run here: `make node`), every typed app whose images have stand-ins runs on
one node both ways (olares_pack/importing/onnode.py, as `import --structured --run`): the original
chart at its own version and the typed render, then upgraded to the typed render from the original
and from every older published chart of the same line. It prints how many were installed (Helm
installed them), started (the entrance answered /v1/models), answered (a chat completion) and
upgraded, the median seconds of each step, and per app what ran or why it could not.

Measured figures are in docs/how-to/import.md ("Measure an import").
"""

from __future__ import annotations

import argparse
import base64
import collections
import datetime as dt
import json
import re
import sys
import tempfile
from pathlib import Path


def _sources(args: list[str], tmp: Path) -> list[str]:
    out = []
    for s in args:
        if s.endswith(".ts"):  # base64 .tgz strings, keyed by file name
            folder = tmp / "from-lib-ts"
            folder.mkdir(exist_ok=True)
            text = Path(s).read_text()
            for m in re.finditer(r'"([A-Za-z0-9_.-]+\.tgz)"\s*:\s*"([A-Za-z0-9+/=]+)"', text):
                (folder / m.group(1)).write_bytes(base64.b64decode(m.group(2)))
            out.append(str(folder))
        else:
            out.append(s)
    return out


def main(argv: list[str] | None = None) -> int:
    from olares_pack.catalogue.repo import Repo
    from olares_pack.importing import importer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--accept", action="append", default=[], metavar="KIND")
    ap.add_argument("--json", action="store_true", help="print the per-chart results as JSON too")
    ap.add_argument("--run", action="store_true", help="run every typed app the node can stand in for, both ways")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        found = [f for s in _sources(args.sources, Path(tmp)) for f in importer.find(s)]
        repo = Repo.at(Path(tmp) / "catalogue")
        plan = importer.plan(repo, found, dt.date(2026, 1, 1), structured=True, accept=tuple(args.accept))
    rows = [r for r in plan.rows() if r.get("structured") is not None]
    typed_names = sorted({r["app"] for r in rows if r["structured"]["typed"]})
    kept = collections.Counter(_reason(r["structured"]) for r in rows if not r["structured"]["typed"])
    app_yaml = {p.parent.name: d for p, d in plan.writes.items() if p.name == "app.yaml"}
    per_app = {name: _judge(name, app_yaml[name], [i for i in plan.results if getattr(i, "name", None) == name])
               for name in typed_names}

    out = sys.stdout
    print(f"charts: {len(found)} found, {len(rows)} imported with --structured", file=out)
    print(f"typed: {len(typed_names)}; kept as written: {len(rows) - len(typed_names)}", file=out)
    for reason, n in kept.most_common():
        print(f"  {n:3d}  {reason}", file=out)
    equal = [n for n, j in per_app.items() if not j["differences"]]
    print(f"typed and equal to the original under the independent proof: {len(equal)} of {len(typed_names)}", file=out)
    kinds: collections.Counter[str] = collections.Counter()
    for j in per_app.values():
        kinds.update({d["kind"] for d in j["differences"]})
    for kind, n in kinds.most_common():
        print(f"  {n:3d} apps  {kind}", file=out)
    refused = [n for n, j in per_app.items() if j["lint_refused"]]
    print(f"installer rules: typed renders refused where the original passes: {len(refused)} of {len(typed_names)}", file=out)
    print(f"version strings rewritten: {sum(1 for j in per_app.values() if j['version_rewritten'])}", file=out)
    print(f"Chart.yaml appVersions lowered: {sum(1 for j in per_app.values() if j['appversion_lowered'])}", file=out)
    with_bento = [j for j in per_app.values() if j["bento"] is not None]
    print(f"metadata.bento kept: {sum(1 for j in with_bento if j['bento'])} of {len(with_bento)} typed apps that have one", file=out)
    print("per typed app:", file=out)
    for name, j in sorted(per_app.items()):
        kinds_here = sorted({d["kind"] for d in j["differences"]})
        print(f"  {name}: {j['versions']}; {'equal' if not kinds_here else 'differs: ' + ', '.join(kinds_here)}"
              + (f"; lint refuses the typed render: {', '.join(j['lint_refused'])}" if j["lint_refused"] else "")
              + (f"; window {j['window']}" if j["window"] else "; window unchanged"), file=out)
    runs = _run(plan) if args.run else {}
    if args.json:
        print(json.dumps({"rows": rows, "proof": per_app, "node": {k: r.to_dict() for k, r in runs.items()}},
                         indent=1, ensure_ascii=False, default=str), file=out)
    return 0


def _run(plan) -> dict:  # noqa: ANN001 - an importer.Plan; app -> onnode.NodeRun
    """Every typed app on one node, both ways, with the upgrades from every older chart of its line."""
    import time

    from olares_pack.cluster import node as nodemod
    from olares_pack.importing import onnode

    if (why := nodemod.unavailable()) is not None:
        print(f"--run: no node here: {why}", file=sys.stdout)
        return {}
    t0 = time.monotonic()
    runs = onnode.plan_runs(plan, nodemod.running, all_upgrades=True,
                            say=lambda line: print(f"  [{time.monotonic() - t0:6.0f} s] {line}", file=sys.stderr, flush=True))
    ran = [r for r in runs.values() if r.ran]
    print(f"on the node (--run, {time.monotonic() - t0:.0f} s): {len(runs)} typed apps, {len(ran)} run, "
          f"{len(runs) - len(ran)} not run", file=sys.stdout)
    why_not = collections.Counter(r.not_run for r in runs.values() if not r.ran)
    for rule, n in why_not.most_common():
        print(f"  {n:3d}  not run: {rule}: {onnode.NOT_RUN.get(rule, rule)}", file=sys.stdout)
    for way in ("original", "typed", "upgrade"):
        steps = [(r, w, s) for r in ran for w in r.ways if w.way == way for s in w.steps if s.action in ("install", "upgrade")]
        if not steps:
            continue
        count = collections.Counter()
        for _r, _w, s in steps:
            count["installed"] += "helm" in s.seconds
            count["started"] += "models" in s.seconds
            count["answered"] += "answered" in s.seconds
        print(f"  {way}: {len(steps)} {'upgrades' if way == 'upgrade' else 'installs'} (app x user"
              f"{' x version upgraded from' if way == 'upgrade' else ''}): installed {count['installed']}, started "
              f"{count['started']}, answered {count['answered']}", file=sys.stdout)
    print(f"  both ways alike (same served name and port, upgrades answered): {sum(1 for r in ran if r.ok)} of {len(ran)}",
          file=sys.stdout)
    for way, points in onnode.step_times(ran).items():
        print(f"  median seconds, {way}: " + ", ".join(f"{k} {v}" for k, v in points.items()), file=sys.stdout)
    for name, r in sorted(runs.items()):
        first = (r.failures[:1] or [r.why_not] if not r.ok or not r.ran else ["alike"])[0]
        log = [ln for ln in r.engine_log() if ln.strip()][-2:]
        print(f"  {name}: {'ran' if r.ran else 'not run'}: {first[:300]}" + (f" | log: {' / '.join(log)[:300]}" if log else ""),
              file=sys.stdout)
    return runs


def _judge(name: str, app_yaml: str, imps: list) -> dict:  # noqa: ANN001 - a script
    """The typed app against each original chart it replaces, by the independent proof, lint and
    the version rules."""
    from olares_pack import olares
    from olares_pack.charts.source import ChartSource
    from olares_pack.common.yamlsrc import safe_load
    from olares_pack.importing import importer
    from olares_pack.lint import LintOptions, lint_chart
    from olares_pack.proof import charts as proof

    data = safe_load(app_yaml)
    newest = max(imps, key=lambda i: _vkey(i.app.version))
    original_versions = {str((safe_load(i.found.files.get("OlaresManifest.yaml", "")) or {}).get("metadata", {}).get("version", ""))
                         if "{{" not in i.found.files.get("OlaresManifest.yaml", "") else i.app.version for i in imps}
    diffs, windows, refused = [], set(), []
    appversion_lowered = False
    bento = None
    for imp in [i for i in imps if i is newest or i.line != newest.line]:
        try:
            typed_files = importer.render_app(data, imp.line)
        except Exception as exc:  # noqa: BLE001 - a typed app that does not render is a difference
            diffs.append({"kind": "undecidable", "where": f"typed render for {imp.line}", "original": str(exc)[:200], "typed": None})
            continue
        p = proof.prove(name, imp.found.files, typed_files)
        diffs += [{**d.to_dict(), "where": f"{imp.line}: {d.where}"} for d in p.differences]
        if p.window:
            windows.add(p.window)
        appversion_lowered |= any(d.kind == "chart.appversion-lower" for d in p.differences)
        opts = LintOptions(olares_version=olares.get(imp.line).min_os)
        errs = [{f.rule for f in lint_chart(ChartSource(name, name, files), opts).findings if f.severity == "error"}
                for files in (typed_files, imp.found.files)]
        refused += sorted(errs[0] - errs[1])
        try:
            orig_m = proof._manifest(imp.found.files, name)
            typed_m = proof._manifest(typed_files, name)
            if "bento" in (orig_m.get("metadata") or {}):
                bento = bool(bento is not False and (typed_m.get("metadata") or {}).get("bento") == orig_m["metadata"]["bento"])
        except Exception:  # noqa: BLE001, S110 - reported by the proof already
            pass
    versions = [str(e.get("version")) for e in data.get("changelog") or []]
    rewritten = sorted(v for v in original_versions if v and v not in versions)
    return {"differences": diffs, "window": "; ".join(sorted(windows)) or None, "lint_refused": sorted(set(refused)),
            "version_rewritten": rewritten, "appversion_lowered": appversion_lowered, "bento": bento,
            "versions": f"{' '.join(sorted(original_versions))} -> {data.get('version')}"}


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v))


def _reason(s: dict) -> str:
    reason = s["reason"] or ""
    if reason.startswith("the typed render differs"):
        return "the typed render differs"
    if "is not strict semver" in reason:
        return "the version is not strict semver (26.08.29): typing it would rewrite the maintainer's scheme"
    if reason.startswith("llama-server refuses"):
        return reason.split(":", 1)[0] + ": " + reason.split(":", 1)[1][:80]
    if "engine olares-pack does not model" in reason:
        return "an engine olares-pack does not model"
    return reason[:110]


if __name__ == "__main__":
    raise SystemExit(main())
