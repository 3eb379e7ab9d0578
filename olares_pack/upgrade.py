"""`olares-pack import --upgrade`: an imported legacy chart (manifest 0.10.0, apiVersion v1) as a
0.12.0/v3 chart for Olares 1.12.6 and newer, and the list of what that took. The conversion
follows the installer's 0.12.0 rules (beclab/Olares framework/oac internal/manifest, the rules
`lint --olares 1.12.6` applies): one resource envelope per compute mode that holds the
containers' sums, the olares dependency in the 1.12.6 window, workloadReplicas wired to
`.Values.workloads.<name>.replicaCount`, no provider. What it cannot convert (OLARES_USER
strings, v2 sub-charts) stays, and lint names it."""

from __future__ import annotations

import copy
import re
from decimal import Decimal
from typing import Any

import semver
import yaml

from . import quantity
from .manifest import ChangelogEntry, ChartApp
from .yamlsrc import safe_load

ENVELOPE = ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk")
V3_WINDOW = ">=1.12.6-0"


def _q(v: Any) -> Decimal | None:
    try:
        return quantity.parse(v)
    except (quantity.QuantityError, TypeError):
        return None


def _workloads(app: ChartApp, mode: str) -> list[dict[str, Any]]:
    """The Deployments and StatefulSets the chart renders (owner == admin, GPU.Type = mode)."""
    from . import chartrender

    return [o for o in chartrender.objects(app, mode) if o.get("kind") in ("Deployment", "StatefulSet")]


def _sums(workloads: list[dict[str, Any]]) -> dict[str, Decimal]:
    """The primary containers' requests and limits, summed as the installer sums them."""
    sums = {k: Decimal(0) for k in ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory")}
    pairs = {"requiredCpu": ("requests", "cpu"), "limitedCpu": ("limits", "cpu"),
             "requiredMemory": ("requests", "memory"), "limitedMemory": ("limits", "memory")}
    for o in workloads:
        for c in ((o.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []:
            for key, (section, res) in pairs.items():
                sums[key] += _q(((c.get("resources") or {}).get(section) or {}).get(res)) or 0
    return sums


def _wire_replicas(files: dict[str, str], names: list[str], notes: list[str]) -> dict[str, str]:
    """`replicas: N` of each workload's document becomes the value stop and resume set."""
    out = dict(files)
    for path, text in files.items():
        if not path.startswith("templates/"):
            continue
        docs = re.split(r"(?m)^---[ \t]*$", text)
        changed = False
        for i, doc in enumerate(docs):
            kind = re.search(r"(?m)^kind:\s*['\"]?(Deployment|StatefulSet)", doc)
            name = re.search(r"(?m)^metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+name:\s*['\"]?([A-Za-z0-9.-]+)", doc)
            if not kind or not name or name.group(1) not in names:
                continue
            wired = f"replicas: {{{{ .Values.workloads.{name.group(1)}.replicaCount }}}}"
            if re.search(r"(?m)^  replicas:", doc):
                docs[i] = re.sub(r"(?m)^  replicas:.*$", "  " + wired, doc, count=1)
            else:
                docs[i] = re.sub(r"(?m)^spec:[ \t]*$", "spec:\n  " + wired, doc, count=1)
            changed = True
            notes.append(f"{path}: {kind.group(1)} {name.group(1)}: replicas follow .Values.workloads.{name.group(1)}.replicaCount "
                         "(stop and resume set it)")
        if changed:
            out[path] = "---".join(docs)
    return out


def to_current(app: ChartApp, date: Any) -> tuple[ChartApp, list[str]]:
    """The app converted to manifest 0.12.0/v3, a patch version up, and what changed (by path)."""
    notes: list[str] = []
    m = copy.deepcopy(app.chart.manifest)
    if app.chart.manifest_text is not None:
        notes.append("OlaresManifest.yaml: its template branches are resolved (GPU.Type nvidia): a 0.12.0 manifest is static")
    if str(m.get("apiVersion", "v1")).lower() == "v2":
        notes.append("apiVersion v2 (sub-charts): not converted; lint names what the 1.12.6 installer refuses")
        return app, notes
    m["olaresManifest.version"], m["apiVersion"] = "0.12.0", "v3"
    notes.append("olaresManifest.version 0.12.0, apiVersion v3")
    spec = m.setdefault("spec", {})
    gpu = any(spec.get(k) for k in ("requiredGpu", "limitedGpu")) or any(
        "nvidia.com/" in t or "gpu-inject" in t for t in app.chart.files.values())
    mode = "nvidia" if gpu else "cpu"
    workloads = _workloads(app, mode)
    sums = _sums(workloads)
    env: dict[str, Any] = {"mode": mode}
    for key in ENVELOPE:
        value = spec.pop(key, None)
        if value in (None, "") and key == "limitedDisk":
            value = env.get("requiredDisk")
        env[key] = str(value) if value is not None else None
        if key in sums and (_q(env[key]) or 0) < sums[key]:
            env[key] = quantity.cores_string(sums[key]) if key.endswith("Cpu") else str(int(sums[key]))
            notes.append(f"spec.accelerator[{mode}].{key}: {value} → {env[key]}, the containers' sum (the installer refuses less)")
    if gpu:
        env["requiredGPUMemory"] = str(spec.pop("requiredGpu", None) or spec.get("limitedGpu") or "")
        env["limitedGPUMemory"] = str(spec.pop("limitedGpu", None) or env["requiredGPUMemory"])
    for key in ("requiredGpu", "limitedGpu", "supportedGpu"):
        spec.pop(key, None)
    spec["accelerator"] = [{k: v for k, v in env.items() if v not in (None, "")}]
    notes.append(f"spec.accelerator: the flat resources as the {mode} envelope")
    if mode == "nvidia" and "amd64" not in (spec.get("supportArch") or []):
        spec["supportArch"] = [*(spec.get("supportArch") or []), "amd64"]
        notes.append("spec.supportArch: amd64 added (nvidia needs it)")
    names = sorted({(o.get("metadata") or {}).get("name") for o in workloads} - {None})
    m["workloadReplicas"] = {n: 1 for n in names}
    notes.append(f"workloadReplicas: {', '.join(names)}")
    for key in ("provider",):
        if m.pop(key, None) is not None:
            notes.append(f"{key}: removed (0.12.0 has none)")
    if isinstance(m.get("permission"), dict) and m["permission"].pop("provider", None) is not None:
        notes.append("permission.provider: removed (0.12.0 has none)")
    opts = m.setdefault("options", {})
    deps = [d for d in opts.get("dependencies") or [] if not (isinstance(d, dict) and d.get("name") == "olares")]
    opts["dependencies"] = [*deps, {"name": "olares", "type": "system", "version": V3_WINDOW}]
    notes.append(f"options.dependencies: olares {V3_WINDOW}")
    files = _wire_replicas(dict(app.chart.files), names, notes)
    values = safe_load(files.get("values.yaml", "")) or {}
    values.setdefault("workloads", {})
    for n in names:
        values["workloads"].setdefault(n, {})["replicaCount"] = 1
    files["values.yaml"] = yaml.safe_dump(values, sort_keys=False, allow_unicode=True)
    notes.append("values.yaml: workloads.<name>.replicaCount: 1 (rewritten: its comments are gone)")
    if any("OLARES_USER" in t for t in files.values()) or any(
            str(e.get("envName", "")).startswith("OLARES_USER") for e in m.get("envs") or [] if isinstance(e, dict)):
        notes.append("OLARES_USER names: not converted (0.12.0 reads OLARES_SYSTEM_* through envs[].valueFrom): edit them")
    version = str(semver.Version.parse(app.version).bump_patch())
    entry = ChangelogEntry(version=version, date=date,
                           summary="manifest 0.12.0/v3 for Olares 1.12.6 and newer (olares-pack import --upgrade)",
                           changes=[{"kind": "packaging", "text": n} for n in notes[:20]])  # type: ignore[list-item]
    chart = app.chart.model_copy(update={"manifest_version": "0.12.0", "manifest": m, "manifest_text": None, "files": files})
    upgraded = app.model_copy(update={"version": version, "targets": ["current"], "chart": chart,
                                      "changelog": [*app.changelog, entry]})
    return ChartApp.model_validate(upgraded.model_dump(mode="json")), notes
