"""`import --structured` of a per-user chart that the typed engine settings do not render alone:
what the chart says beyond the engine, as the typed fields of apps/kept.py (the OlaresManifest
fields as written, the engine Deployment as written less the engine's image, command and
arguments, the chart's other objects).

The chart is rendered with marker values for everything the installer injects (the user's name,
the userspace folders, the namespace, each `envs` entry as .Values.olaresEnv), and each marker
found in the rendered objects becomes the Helm expression that names the value again
(`{{ .Values.userspace.appData }}`, `{{ .Values.olaresEnv.HF_TOKEN }}`): the typed render then
gives every user's install its own paths and settings, as the chart did. A value the chart
derives from them in a way a marker does not survive (hashed, truncated) is not recognised, and
the equivalence check of the typed render keeps such a chart as written."""

from __future__ import annotations

import re
from typing import Any

from olares_pack.apps.manifest import ChartApp
from olares_pack.charts.objects import pod_spec
from olares_pack.common.errors import InputError

OWNER = "olpkzq"  # a user name no chart writes: where it appears, the chart used .Values.bfl.username
_WORKLOAD_KEYS = {"containers", "initContainers", "volumes"}


def _env_marker(i: int) -> str:
    return f"olpkzqenv{i}zq"


def _env_names(app: ChartApp) -> list[str]:
    return [str(e["envName"]) for e in app.chart.manifest.get("envs") or [] if isinstance(e, dict) and e.get("envName")]


def _env_defaults(app: ChartApp, name: str) -> str | None:
    """The `| default "…"` the chart's templates give .Values.olaresEnv.NAME, when they give one."""
    pat = re.compile(rf'\.Values\.olaresEnv\.{re.escape(name)}\s*\|\s*default\s+"([^"\\{{}}]*)"')
    found = {m.group(1) for text in app.chart.files.values() for m in pat.finditer(text)}
    return next(iter(found)) if len(found) == 1 else None


def substitutions(app: ChartApp) -> list[tuple[str, str]]:
    """(marker text, Helm expression), longest first."""
    n = app.name
    subs = [(f"/olares/rootfs/userspace/pvc-appdata-{OWNER}/Data/{n}", "{{ .Values.userspace.appData }}"),
            (f"/olares/rootfs/userspace/pvc-userspace-{OWNER}/Home", "{{ .Values.userspace.userData }}"),
            (f"/olares/userdata/Cache/{n}", "{{ .Values.userspace.appCache }}"),
            ("/olares/share/appcommon", "{{ .Values.userspace.appCommon }}"),
            (f"{n}-{OWNER}", "{{ .Release.Namespace }}"),
            (f"{OWNER}.olares.com", "{{ .Values.user.zone }}")]
    for i, name in enumerate(_env_names(app)):
        d = _env_defaults(app, name)
        subs.append((_env_marker(i), f'{{{{ .Values.olaresEnv.{name} | default "{d}" }}}}' if d is not None
                     else f"{{{{ .Values.olaresEnv.{name} }}}}"))
    subs.append((OWNER, "{{ .Values.bfl.username }}"))
    return subs


def marked_objects(app: ChartApp) -> list[dict[str, Any]]:
    """The chart's objects rendered with marker values, the markers replaced by Helm expressions."""
    from olares_pack import olares
    from olares_pack.render import imported as chartrender

    files = chartrender.render(app, olares.get(app.targets[0]))
    env = {name: _env_marker(i) for i, name in enumerate(_env_names(app))}
    objs = chartrender.objects_of(app.name, files, app.chart.manifest, "nvidia", owner=OWNER, olares_env=env)
    subs = substitutions(app)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for marker, expr in subs:
                v = v.replace(marker, expr)
            return v
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(objs)


def _name(o: dict[str, Any]) -> str:
    return f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}"


def kept(app: ChartApp, workload: str, container: str) -> dict[str, Any]:
    """The typed fields `workload`, `objects` and `olares` of a per-user chart whose engine runs in
    the container `container` of `workload` (Kind/name)."""
    objs = marked_objects(app)
    dep = next((o for o in objs if _name(o) == workload), None)
    if dep is None or dep.get("kind") != "Deployment":
        raise InputError(f"the engine runs in {workload}: the typed form keeps a Deployment")
    pod = pod_spec(dep) or {}
    containers = [c for c in pod.get("containers") or [] if isinstance(c, dict)]
    index = next((i for i, c in enumerate(containers) if c.get("name") == container), None)
    if index is None:
        raise InputError(f"{workload}: no container {container}")
    engine = dict(containers[index])
    words = [*(engine.get("command") or []), *(engine.get("args") or [])]
    if any("{{" in str(w) for w in words):
        raise InputError(f"{workload} container {container}: its arguments name the installer's values "
                         f"({next(str(w) for w in words if '{{' in str(w))}): the typed engine settings hold literal values")
    for key in ("image", "command", "args"):
        engine.pop(key, None)
    spec = dep.get("spec") or {}
    template = spec.get("template") or {}
    tmeta = template.get("metadata") or {}
    meta = dep.get("metadata") or {}
    out_w: dict[str, Any] = {
        "name": None if meta.get("name") == app.name else meta.get("name"),
        "labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {},
        # one replica is what the installer's workloads value gives (the render wires it, for stop/resume)
        "replicas": None if spec.get("replicas") in (None, 1) else spec.get("replicas"), "strategy": spec.get("strategy"),
        "revisionHistoryLimit": spec.get("revisionHistoryLimit"),
        "pod_labels": tmeta.get("labels") or {}, "pod_annotations": tmeta.get("annotations") or {},
        "pod": {k: v for k, v in pod.items() if k not in _WORKLOAD_KEYS},
        "volumes": pod.get("volumes") or [], "init_containers": pod.get("initContainers") or [],
        "sidecars": [c for i, c in enumerate(containers) if i != index], "engine_index": index, "engine": engine,
    }
    unknown = sorted(k for k in spec if k not in ("replicas", "selector", "strategy", "revisionHistoryLimit", "template"))
    if unknown:
        raise InputError(f"{workload}: spec.{unknown[0]}: a Deployment field the typed form does not keep")
    # a rendered object's status (kompose writes `status: {}`, `status: {loadBalancer: {}}`) is the
    # cluster's to report, never applied from a chart
    others = [{k: v for k, v in o.items() if k != "status"} for o in objs if _name(o) != workload]
    return {"workload": {k: v for k, v in out_w.items() if v is not None}, "objects": others, "olares": olares_fields(app)}


def olares_fields(app: ChartApp) -> dict[str, Any]:
    """OlaresManifest fields as the chart states them."""
    m = app.chart.manifest
    spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
    out: dict[str, Any] = {"apiVersion": str(m.get("apiVersion") or "v1"),
                           "entrances": m.get("entrances") or None,
                           "permission": m.get("permission") or {},
                           "options": m.get("options") or {},
                           "envs": m.get("envs") or [],
                           "locale": spec.get("locale") or []}
    declared = next((r for r in [*(spec.get("accelerator") or []), *(spec.get("resources") or [])]
                     if isinstance(r, dict) and r.get("mode") != "cpu"), spec)
    out["undeclared"] = [k for k in ("limitedCpu", "limitedMemory", "limitedDisk") if declared.get(k) in (None, "")] or None
    return {k: v for k, v in out.items() if v is not None}


# OlaresManifest keys the typed fields model (the app's texts, olares-pack's own forms, OlaresKept's
# older fields); any other key is carried as written (OlaresKept.metadata/spec/top)
_MODELLED_TOP = {"olaresManifest.version", "olaresManifest.type", "apiVersion", "metadata", "spec", "entrances",
                 "permission", "options", "envs", "sharedEntrances", "workloadReplicas"}
_MODELLED_SPEC = {"versionName", "fullDescription", "upgradeDescription", "developer", "submitter", "website",
                  "sourceCode", "doc", "license", "locale", "onlyAdmin", "subCharts", "accelerator", "resources",
                  "requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk",
                  "requiredGpu", "limitedGpu", "requiredGPU", "limitedGPU", "requiredGPUMemory", "limitedGPUMemory"}
_RENDERED_SPEC = {"supportArch"}  # written by every render: absent from a chart that does not write it
_MODELLED_METADATA = {"name", "title", "description", "icon", "version", "categories", "appid"}
_FLAT = ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk",
         "requiredGpu", "limitedGpu", "requiredGPU", "limitedGPU", "requiredGPUMemory", "limitedGPUMemory")


def envelope(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The envelope in the chart's own form: per-mode entries (spec.accelerator, or spec.resources
    as a list) or the flat fields, values as written."""
    for key in ("accelerator", "resources"):
        if isinstance(spec.get(key), list) and spec[key]:
            return {"form": key, "modes": [dict(e) for e in spec[key]]}
    flat = {k: spec[k] for k in _FLAT if spec.get(k) is not None}
    return {"form": "flat", "flat": flat} if flat else None


def carried(app: ChartApp) -> dict[str, Any]:
    """What the chart states that the typed fields do not model, for OlaresKept: the envelope in
    its form, appid where it was (not) written, unmodelled metadata (`bento`: the catalogue's
    card), spec and top-level keys, Chart.yaml as written."""
    m = app.chart.manifest
    metadata = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
    spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
    out: dict[str, Any] = {"chart_yaml": {**app.chart.chart_yaml}}
    if (env := envelope(spec)) is not None:
        out["envelope"] = env
    if "appid" not in metadata:
        out["appid"] = False
    extra_md = {k: v for k, v in metadata.items() if k not in _MODELLED_METADATA}
    if metadata.get("appid") not in (None, app.name):
        extra_md["appid"] = metadata["appid"]
    if extra_md:
        out["metadata"] = extra_md
    extra_spec = {k: v for k, v in spec.items() if k not in _MODELLED_SPEC}
    if extra_spec:
        out["spec"] = extra_spec
    if absent := sorted(_RENDERED_SPEC - set(spec)):
        out["spec_absent"] = absent
    if top := {k: v for k, v in m.items() if k not in _MODELLED_TOP}:
        out["top"] = top
    return out
