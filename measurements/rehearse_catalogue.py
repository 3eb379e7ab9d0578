"""Install a sample of the official catalogue on a real kube-apiserver with the installer's values.

    .venv/bin/python measurements/rehearse_catalogue.py /work/corpus/apps [--others 20] [--format json]

The sample: every llmbase app of the catalogue (a template that runs llm-init) and OTHERS more,
spread evenly over the rest in name order. Each is installed as app-service installs it
(olares_pack/rehearse/plan.py: release names, namespaces, the administrator and a second user, the
v2 shared sub-chart) and then uninstalled. Prints per app the result and the server's reason for
each refused object, then the figures: installed, refused (by reason: an Olares CRD this bare server
does not serve, or a refusal a device would make too), and the seconds per install (median).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from olares_pack.cluster import controlplane, tools  # noqa: E402
from olares_pack.rehearse import plan as planner  # noqa: E402
from olares_pack.rehearse import run  # noqa: E402

_NO_KIND = re.compile(r'no matches for kind "([^"]+)" in version "([^"]+)"')


def sample(root: Path, others: int) -> tuple[list[Path], list[Path]]:
    charts = sorted(p for p in root.iterdir() if (p / "Chart.yaml").is_file() and (p / "OlaresManifest.yaml").is_file())
    llmbase = [p for p in charts if any("llm-init" in t.read_text(errors="replace")
                                       for t in (p / "templates").rglob("*") if t.is_file())]
    rest = [p for p in charts if p not in llmbase]
    step = max(1, len(rest) // max(others, 1))
    return llmbase, rest[::step][:others]


def install_one(cluster: controlplane.Cluster, folder: Path) -> dict[str, object]:
    name = folder.name
    try:
        plan = planner.plan_folder(folder, name, "catalogue")
    except Exception as exc:  # noqa: BLE001 - a chart we cannot read is a result too
        return {"app": name, "ok": False, "reason": f"unreadable: {exc}", "seconds": 0.0}
    with run.session(cluster, "catalogue") as r:
        start = time.monotonic()
        steps = r.install(plan)
        took = time.monotonic() - start
    failed = [s for s in steps if not s.ok]
    missing = sorted({f"{k} ({v})" for s in failed for k, v in _NO_KIND.findall(s.error)})
    return {"app": name, "form": plan.form, "users": len(plan.users), "ok": not failed, "seconds": round(took, 2),
            "missing_kinds": missing, "refused": [r for s in failed for r in s.refused],
            "error": failed[0].error if failed else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--others", type=int, default=20)
    ap.add_argument("--format", choices=["text", "json"], default="text")
    args = ap.parse_args()
    found = tools.available()
    if found is None:
        print(tools.missing_reason(), file=sys.stderr)
        return 2
    llmbase, others = sample(args.root, args.others)
    results = []
    with controlplane.running(found) as cluster:
        for folder in llmbase + others:
            res = install_one(cluster, folder)
            res["group"] = "llmbase" if folder in llmbase else "other"
            results.append(res)
            if args.format == "text":
                detail = "" if res["ok"] else (f"  missing kinds: {', '.join(res['missing_kinds'])}" if res["missing_kinds"]
                                                else f"  {res['error'][:300]}")
                print(f"{res['app']:40} {res['group']:8} {res.get('form', '-'):10} {'ok' if res['ok'] else 'REFUSED'} "
                      f"{res['seconds']:6.2f} s{detail}")
    ok = [r for r in results if r["ok"]]
    crd = [r for r in results if not r["ok"] and r["missing_kinds"]]
    other = [r for r in results if not r["ok"] and not r["missing_kinds"]]
    figures = {"kube_apiserver": tools.KUBE_VERSION, "helm": tools.HELM_VERSION, "charts": len(results),
               "llmbase": len(llmbase), "others": len(others), "installed": len(ok),
               "refused_missing_olares_crd": len(crd), "refused_other": len(other),
               "median_install_seconds": round(statistics.median([r["seconds"] for r in results]), 2) if results else 0}
    if args.format == "json":
        print(json.dumps({"figures": figures, "results": results}, indent=1))
    else:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
