"""A Helm post-renderer for a rehearsal on a user's cluster (`--kubeconfig`): every workload is
created held, so nothing starts beside the app the cluster already runs — no second engine asks
for the GPU, no download writes into the installed app's host paths (the shared Hugging Face
store, its app data).

Deployments, StatefulSets and ReplicaSets get `replicas: 0`, Jobs and CronJobs `suspend: true`,
DaemonSets and bare Pods a node selector no node carries. The API server still validates and
stores every object, so an install or upgrade it refuses is refused just the same.

Helm runs it as `<python> -m olares_pack.rehearse.hold` (a script written into the rehearsal's
Helm home): the rendered manifests on stdin, the held ones on stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml

NO_NODE = {"olares-pack.rehearsal/held": "no-node-carries-this"}
SCALED = ("Deployment", "StatefulSet", "ReplicaSet")
SUSPENDED = ("Job", "CronJob")


def hold(doc: Any) -> Any:
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        return doc
    kind, spec = doc.get("kind"), doc["spec"]
    if kind in SCALED:
        spec["replicas"] = 0
    elif kind in SUSPENDED:
        spec["suspend"] = True
    elif kind == "DaemonSet":
        pod = spec.setdefault("template", {}).setdefault("spec", {})
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **NO_NODE}
    elif kind == "Pod":
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **NO_NODE}
    return doc


def held(text: str) -> str:
    docs = [hold(d) for d in yaml.safe_load_all(text) if d is not None]
    return yaml.safe_dump_all(docs, sort_keys=False)


def script(folder: Path) -> Path:
    """This module as Helm's --post-renderer."""
    from olares_pack.cluster.helmcli import post_renderer  # here: the post-render process imports only this module

    return post_renderer(folder, "olares-pack-hold", "olares_pack.rehearse.hold")


def main() -> int:
    sys.stdout.write(held(sys.stdin.read()))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    sys.exit(main())
