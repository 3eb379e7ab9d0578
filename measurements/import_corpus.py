"""Import real Olares catalogues with `--structured` and count what becomes typed.

    .venv/bin/python measurements/import_corpus.py CHART_OR_FOLDER... [--accept KIND ...] [--json]

Each argument is what `olares-pack import` takes (a chart folder, a .tgz, a folder of them). Every
chart is imported into an empty temporary catalogue with `--structured` (nothing is written where
the charts are), and the script prints:

- how many charts became typed apps (the typed render proven equivalent to the original by
  olares_pack/equivalence.py, with only `--accept`ed kinds of difference left) and how many were
  kept as written, by reason (no engine olares-pack models; the typed form cannot hold the chart;
  the typed render differs; equivalence cannot be decided);
- the most common kinds of difference among the charts kept as written;
- typed apps whose GPU limit is lower than the original's (an import must never lower it: 0);
- the original-to-typed upgrade of each typed app on the real API server, when the control
  plane is installed (`make control-plane`): accepted or refused.

The corpora of the issue that introduced it (#46) are public catalogues; fetch them with git and
pass their chart folders (see docs/how-to/import.md, "Measure an import").
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from olares_pack.catalogue.repo import Repo
    from olares_pack.importing import importer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--accept", action="append", default=[], metavar="KIND")
    ap.add_argument("--json", action="store_true", help="print the per-chart results as JSON too")
    ap.add_argument("--no-upgrade", action="store_true", help="skip the upgrade rehearsal on the API server")
    args = ap.parse_args(argv)

    found = [f for s in args.sources for f in importer.find(s)]
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo.at(Path(tmp))
        plan = importer.plan(repo, found, dt.date(2026, 1, 1), structured=True, accept=tuple(args.accept))
        app_yaml = {p.parent.name: str(d) for p, d in plan.writes.items() if p.name == "app.yaml"}
    rows = [r for r in plan.rows() if r.get("structured") is not None]
    refused = [r for r in plan.rows() if r.get("structured") is None and r["status"] in ("refused", "skipped")]
    typed = [r for r in rows if r["structured"]["typed"]]
    kept = collections.Counter(_reason(r["structured"]) for r in rows if not r["structured"]["typed"])
    kinds: collections.Counter[str] = collections.Counter()
    for r in rows:
        kinds.update({d["kind"] for d in r["structured"]["differences"]})
    lower = [r["app"] for r in typed if any(d["kind"] == "manifest.gpu-limit-lower" for d in r["structured"]["accepted"])]
    accepted = collections.Counter(d["kind"] for r in typed for d in r["structured"]["accepted"])

    out = sys.stdout
    print(f"charts: {len(found)} found, {len(rows)} imported with --structured, {len(refused)} not imported", file=out)
    print(f"typed (equivalent, or differing only in --accept'ed kinds): {len(typed)}" + (f" ({sum(accepted.values())} accepted differences: "
                                                  f"{dict(sorted(accepted.items()))})" if accepted else ""), file=out)
    for r in sorted(typed, key=lambda r: r["app"]):
        taken = "; ".join(f"{d['kind']} ({d['where']})" for d in r["structured"]["accepted"])
        print(f"  {r['app']}" + (f"  accepted: {taken}" if taken else ""), file=out)
    print(f"kept as written: {len(rows) - len(typed)}", file=out)
    for reason, n in kept.most_common():
        print(f"  {n:3d}  {reason}", file=out)
    print("most common differences (charts with at least one):", file=out)
    for kind, n in kinds.most_common(12):
        print(f"  {n:3d}  {kind}", file=out)
    print(f"typed apps whose GPU limit is lower than the original's: {len(lower)}", file=out)
    if not args.no_upgrade:
        _upgrades(typed, plan, app_yaml, out)
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False, default=str), file=out)
    return 0


def _reason(s: dict) -> str:
    reason = s["reason"] or ""
    if reason.startswith("the typed render differs"):
        return "the typed render differs"
    if "engine olares-pack does not model" in reason:
        return "an engine olares-pack does not model"
    if reason.startswith("equivalence cannot be decided"):
        return reason
    return "the typed form cannot hold it: " + reason.split(":", 1)[-1].strip()[:90] if "(typed)" in reason else reason[:110]


def _upgrades(typed: list[dict], plan, app_yaml: dict[str, str], out) -> None:  # noqa: ANN001 - a script
    from olares_pack.cluster import controlplane, tools
    from olares_pack.importing import upgrade_check

    if not typed:
        print("upgrade original -> typed on the API server: nothing typed to rehearse", file=out)
        return
    if not upgrade_check.available():
        print(f"upgrade original -> typed on the API server: skipped ({tools.missing_reason()})", file=out)
        return
    results = {}
    newest = {}
    for r in plan.results:
        if getattr(r, "structured", None) and r.structured["typed"]:
            newest[r.name] = r
    with controlplane.running(tools.available()) as cluster:
        for name, imp in sorted(newest.items()):
            original = (imp.chart_version, imp.found.package or b"")
            results[name] = upgrade_check.problems(cluster, name, imp.line, original,
                                                   upgrade_check.typed_chart(app_yaml[name], imp.line))
    ok = sum(1 for p in results.values() if not p)
    print(f"upgrade original -> typed on the API server: {ok} of {len(results)} accepted", file=out)
    for name, problems in sorted(results.items()):
        for p in problems:
            print(f"  {name}: {p}", file=out)


if __name__ == "__main__":
    raise SystemExit(main())
