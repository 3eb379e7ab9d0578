"""Rendered Kubernetes objects as plain data: their names, the pod spec of a workload, its
containers, and the model a chart's download step names. Every room that reads a render walks
objects through these (lint, diff, import, the repository's checks, engine detection)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Workloads whose pod spec stands at spec.template.spec (a CronJob's one level deeper; a Pod's is its spec).
TEMPLATED = ("Deployment", "StatefulSet", "DaemonSet", "Job")


def obj_name(o: dict[str, Any]) -> str:
    """`Kind/name`, how findings, diffs and engine invocations name an object."""
    return f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}"


def find(objects: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The object named `Kind/name`."""
    return next((o for o in objects if obj_name(o) == name), None)


def pod_spec(o: dict[str, Any]) -> dict[str, Any] | None:
    kind = o.get("kind")
    spec = o.get("spec") or {}
    if kind in TEMPLATED:
        return ((spec.get("template") or {}).get("spec")) or None
    if kind == "CronJob":
        return (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec")
    if kind == "Pod":
        return spec
    return None


def containers(o: dict[str, Any], *, init: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`containers` or `initContainers`, container) of a workload: its containers first."""
    ps = pod_spec(o) or {}
    keys = ("containers", "initContainers") if init else ("containers",)
    for key in keys:
        for c in ps.get(key) or []:
            if isinstance(c, dict):
                yield key, c


def container(objects: list[dict[str, Any]], workload: str, name: str) -> dict[str, Any]:
    """The container `name` of the workload named `Kind/name` ({} when there is none)."""
    return next((c for _, c in containers(find(objects, workload) or {}, init=False) if c.get("name") == name), {})


def literal_env(c: dict[str, Any]) -> dict[str, Any]:
    """A container's env entries that carry a value (not valueFrom)."""
    return {e.get("name"): e.get("value") for e in c.get("env") or [] if isinstance(e, dict) and "value" in e}


def download_env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The literal env of the container that names the model to fetch (MODEL_REPO): olares-pack's
    download step (an init container, the per-user form) or the engine's wrapper (the shared form)."""
    for o in objects:
        ps = pod_spec(o) or {}
        for c in [*(ps.get("initContainers") or []), *(ps.get("containers") or [])]:
            if isinstance(c, dict) and (env := literal_env(c)).get("MODEL_REPO"):
                return env
    return {}


def download_model(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The model the download step names: repo, revision, and file names (MODEL_FILES holds one
    `name|size|sha256` line per file)."""
    env = download_env(objects)
    if not env:
        return None
    files = [line.split("|", 1)[0] for line in str(env.get("MODEL_FILES") or "").splitlines() if line]
    return {"repo": env["MODEL_REPO"], "revision": env.get("MODEL_REVISION"), "files": files}
