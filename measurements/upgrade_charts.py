"""How many legacy charts (manifest < 0.12.0) `import --upgrade` turns into 0.12.0/v3 charts that
`lint --olares 1.12.6` passes without an error, and what blocks the rest.

    .venv/bin/python measurements/upgrade_charts.py CHARTS_FOLDER [--limit N] [--ignore RULE]...

Each chart folder is imported on its own into an empty repository (so one chart's refusal does
not hide another's); prints one line per chart and the totals. Reads only the folder given."""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from olares_pack import olares as targets
from olares_pack.apps.manifest import ChartApp
from olares_pack.catalogue.repo import Repo
from olares_pack.charts.source import ChartSource
from olares_pack.common.errors import OlaresPackError
from olares_pack.importing import importer
from olares_pack.lint import LintOptions, lint_chart
from olares_pack.render import app as render


def legacy(folder: Path) -> bool:
    text = (folder / "OlaresManifest.yaml").read_text(encoding="utf-8", errors="replace")
    m = re.search(r"^olaresManifest\.version:\s*['\"]?([0-9.]+)", text, re.M)
    return bool(m) and tuple(int(p) for p in m.group(1).split(".")[:3] if p.isdigit()) < (0, 12, 0)


def pods(app: ChartApp) -> dict[str, Any]:
    """Each workload's containers (image, argv, env, resources, ports, probes, mounts) and volumes,
    rendered as the installer renders them (owner == admin, GPU.Type nvidia, no olaresEnv values),
    a v2 chart sub-chart by sub-chart."""
    from olares_pack.render import imported as chartrender

    keys = ("name", "image", "command", "args", "env", "resources", "ports", "startupProbe", "livenessProbe",
            "readinessProbe", "volumeMounts")
    out = {}
    for o in chartrender.objects(app):
        if o.get("kind") in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
            spec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
            out[f"{o['kind']}/{(o.get('metadata') or {}).get('name')}"] = {
                "containers": [{k: c.get(k) for k in keys} for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]],
                "volumes": spec.get("volumes")}
    return out


def same_containers(before: ChartApp, after: ChartApp) -> str | None:
    """None when the upgraded chart renders the same workloads and containers; else the first
    differing lines. A shared sub-chart's namespace (`<sub>-shared`) reads as the release namespace
    after the conversion, so it is compared as such. Values a chart draws at random on each render
    (randAlphaNum secrets) differ between any two renders."""
    import difflib
    import json

    ns = f"{before.name}-alice"
    a_text = json.dumps(pods(before), sort_keys=True, indent=1)
    for sub in (c.get("name") for c in (before.chart.manifest.get("spec") or {}).get("subCharts") or []
                if isinstance(c, dict) and c.get("shared")):
        a_text = re.sub(rf"(?<![A-Za-z0-9-]){re.escape(str(sub))}-shared(?![A-Za-z0-9-])", ns, a_text)
    a = a_text.splitlines()
    b = json.dumps(pods(after), sort_keys=True, indent=1).splitlines()
    if a == b:
        return None
    lines = [x.strip() for x in difflib.unified_diff(a, b, lineterm="", n=0) if x[:1] in "+-" and x[:3] not in ("---", "+++")]
    return " | ".join(lines[:4])[:300]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--ignore", action="append", default=[], metavar="RULE",
                    help="a lint rule not to count (e.g. one that the source's own 0.12.0 charts also trip)")
    args = ap.parse_args()
    charts = sorted(p for p in args.folder.iterdir() if (p / "OlaresManifest.yaml").is_file() and legacy(p))
    if args.limit:
        charts = charts[:args.limit]
    tally: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    date = dt.date(2026, 12, 3)
    for chart in charts:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "apps").mkdir()
            repo = Repo.of_apps(Path(tmp) / "apps")
            try:
                found = importer.find(str(chart))
                plan = importer.plan(repo, found, date, upgrade=True, rename=True)
            except OlaresPackError as exc:
                tally["import failed"] += 1
                print(f"{chart.name}: import failed: {str(exc).splitlines()[0]}")
                continue
            res = plan.results[0]
            if res.app is None:
                tally["refused"] += 1
                print(f"{chart.name}: refused: {res.problem}")
                continue
            blocked = [n for n in res.notes if n.startswith("--upgrade: not converted")]
            if blocked:
                tally["not converted"] += 1
                reason = re.sub(r"^--upgrade: not converted \(.*?\): ", "", blocked[0])
                reasons[re.sub(r"[\"'][^\"']*[\"']|\S+/\S+", "…", reason)[:90]] += 1
                print(f"{chart.name}: not converted: {reason}")
                continue
            data = next(v for k, v in plan.writes.items() if k.name == "app.yaml")
            from olares_pack.apps.load import validate_data
            from olares_pack.common.yamlsrc import safe_load

            app = validate_data(safe_load(data), chart.name)
            assert isinstance(app, ChartApp)
            same = same_containers(res.app, app)
            tally["same containers" if same is None else "containers differ"] += 1
            if same is not None:
                print(f"{chart.name}: containers differ: {same}")
            files = render.render(app, targets.CURRENT)
            errors = [f for f in lint_chart(ChartSource(app.name, app.name, files), LintOptions(olares_version="1.12.6")).findings
                      if f.severity == "error" and f.rule not in args.ignore]
            if errors:
                tally["converted, lint errors"] += 1
                for f in errors:
                    reasons[f"lint {f.rule}"] += 1
                print(f"{chart.name}: converted, {len(errors)} error(s): " + "; ".join(f"{f.rule}: {f.message}" for f in errors[:3]))
            else:
                tally["converted, lint clean"] += 1
                print(f"{chart.name}: converted, lint --olares 1.12.6 clean")
    print(f"\n{len(charts)} legacy chart(s): " + ", ".join(f"{v} {k}" for k, v in sorted(tally.items())))
    for reason, n in reasons.most_common(15):
        print(f"  {n:3d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
