"""A Helm post-renderer for a live rehearsal on the node here (rehearse/live.py): what must change
for a chart sized for an Olares One to run on a small CPU node with stand-in images and model, and
nothing else. Every change is named in the run's report.

- cpu and memory *requests* are lowered to at most FIT_CPU / FIT_MEMORY (the node has 2 cores;
  the engine asks for 4): limits and GPU resources stay as rendered, so the scheduler still
  decides on the GPU and on the strategy (a RollingUpdate GPU Deployment stays Pending).
- a MODEL_FILES entry that records the model's size and sha256 gets the stand-in model's (the
  wrapper's check runs on the bytes the hub served): OLARES_PACK_STANDIN_MODEL="size|sha256".
- startup and readiness probes wait less: initialDelaySeconds at most FIT_PROBE_DELAY, periodSeconds
  at most FIT_PROBE_PERIOD, a startup probe's failureThreshold raised so that the time a container
  is given to start is never shorter than the chart's. The stand-in engine loads a 5 MB model in about a second; the
  chart's 60 s initial delay would be the whole install's time and nothing it tests. Path, port and
  the threshold's budget stay; liveness probes stay as rendered (they restart, they do not gate).
- the shared form's engine wrapper (templates/llmbase/engine.sh) looks for llm-init's sentinel
  every FIT_WAIT_INTERVAL s instead of its default 5 (WAIT_INTERVAL, which the wrapper reads).
- in device slot N (versions installed side by side, rehearse/live.py; OLARES_PACK_SLOT=N), the
  GPU resources are slot N's (`nvidia.com/gpu` -> `nvidia.com/gpu-sN`, cluster/gpu.py), and a
  shared namespace the chart names (`<chart>-shared`, OLARES_PACK_SHARED) is slot N's
  (`<chart>-shared-sN`, where that slot's shared sub-chart is installed).

Helm runs it as `<python> -m olares_pack.rehearse.fit`: manifests on stdin, changed on stdout."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from olares_pack.cluster import gpu

FIT_CPU_MILLI = 50
FIT_MEMORY_MI = 64
FIT_PROBE_DELAY = 1
FIT_PROBE_PERIOD = 1
FIT_WAIT_INTERVAL = 1
WRAPPER = "/llm-init/wrappers/engine.sh"
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")


def _milli(q: str) -> float:
    q = str(q)
    return float(q[:-1]) if q.endswith("m") else float(q) * 1000


def _mi(q: str) -> float:
    q = str(q)
    for suffix, f in (("Ki", 1 / 1024), ("Mi", 1), ("Gi", 1024), ("Ti", 1024 * 1024), ("k", 1e3 / 2**20),
                      ("M", 1e6 / 2**20), ("G", 1e9 / 2**20)):
        if q.endswith(suffix):
            return float(q[: -len(suffix)]) * f
    return float(q) / 2**20


def _containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec") or {}
    if doc.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    pod = ((spec.get("template") or {}).get("spec") or {})
    return [c for key in ("initContainers", "containers") for c in pod.get(key) or [] if isinstance(c, dict)]


def _hurry(probe: Any, startup: bool) -> None:
    """A probe that answers as soon as the container does; a startup probe gives at least the
    chart's time to start (a readiness probe's threshold is how soon it marks a pod unready: kept)."""
    if not isinstance(probe, dict):
        return
    delay = int(probe.get("initialDelaySeconds") or 0)
    period = int(probe.get("periodSeconds") or 10)  # Kubernetes' defaults
    threshold = int(probe.get("failureThreshold") or 3)
    budget = delay + period * threshold
    new_delay, new_period = min(delay, FIT_PROBE_DELAY), min(period, FIT_PROBE_PERIOD)
    probe["initialDelaySeconds"], probe["periodSeconds"] = new_delay, new_period
    if startup:
        probe["failureThreshold"] = max(threshold, -(-(budget - new_delay) // new_period))


def _renamed(value: Any, names: re.Pattern[str] | None, suffix: str) -> Any:
    """Every string with slot N's shared namespaces (a proxy's upstream, a Service's DNS name)."""
    if names is None:
        return value
    if isinstance(value, str):
        return names.sub(lambda m: f"{m.group(0)}-{suffix}", value)
    if isinstance(value, dict):
        return {k: _renamed(v, names, suffix) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names, suffix) for v in value]
    return value


def fit(doc: Any, model: str | None, slot: int = 0, shared: tuple[str, ...] = ()) -> Any:
    if slot and shared:
        # a name followed by a letter, digit or '-' is another name (slot N's own `<chart>-shared-sN` among them)
        names = re.compile(r"(?<![a-z0-9-])(?:" + "|".join(map(re.escape, shared)) + r")(?![a-z0-9-])")
        doc = _renamed(doc, names, gpu.slot_name(slot))
    if not isinstance(doc, dict) or doc.get("kind") not in (*WORKLOADS, "CronJob"):
        return doc
    for c in _containers(doc):
        for part in ("requests", "limits"):
            asked = (c.get("resources") or {}).get(part)
            if slot and isinstance(asked, dict):
                c["resources"][part] = {gpu.slot_resource(str(k), slot): v for k, v in asked.items()}
        _hurry(c.get("startupProbe"), startup=True)
        _hurry(c.get("readinessProbe"), startup=False)
        if WRAPPER in (c.get("command") or []) and isinstance(c.get("env", []), list):
            env = c.setdefault("env", [])
            if not any(isinstance(e, dict) and e.get("name") == "WAIT_INTERVAL" for e in env):
                env.append({"name": "WAIT_INTERVAL", "value": str(FIT_WAIT_INTERVAL)})
        req = (c.get("resources") or {}).get("requests")
        if isinstance(req, dict):
            if "cpu" in req and _milli(req["cpu"]) > FIT_CPU_MILLI:
                req["cpu"] = f"{FIT_CPU_MILLI}m"
            if "memory" in req and _mi(req["memory"]) > FIT_MEMORY_MI:
                req["memory"] = f"{FIT_MEMORY_MI}Mi"
        for e in c.get("env") or []:
            if model and isinstance(e, dict) and e.get("name") == "MODEL_FILES" and isinstance(e.get("value"), str):
                lines = []
                for line in e["value"].splitlines():
                    # name|size|sha256[|more]: only a recorded size or sha256 is the real model's
                    fields = line.split("|")
                    if len(fields) >= 3 and (fields[1] or fields[2]):
                        fields[1:3] = model.split("|", 1)
                    lines.append("|".join(fields))
                e["value"] = "\n".join(lines)
    return doc


def fitted(text: str, model: str | None, slot: int = 0, shared: tuple[str, ...] = ()) -> str:
    return yaml.safe_dump_all([fit(d, model, slot, shared) for d in yaml.safe_load_all(text) if d is not None],
                              sort_keys=False)


def script(folder: Path) -> Path:
    """This module as Helm's --post-renderer."""
    from olares_pack.cluster.helmcli import post_renderer  # here: the post-render process imports only this module

    return post_renderer(folder, "olares-pack-fit", "olares_pack.rehearse.fit")


def main() -> int:
    shared = tuple(n for n in os.environ.get("OLARES_PACK_SHARED", "").split(",") if n)
    sys.stdout.write(fitted(sys.stdin.read(), os.environ.get("OLARES_PACK_STANDIN_MODEL") or None,
                            int(os.environ.get("OLARES_PACK_SLOT") or 0), shared))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    sys.exit(main())
