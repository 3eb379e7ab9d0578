"""Rules on the rendered objects, checked on every installer render (owner == admin and
owner != admin, each compute mode), plus the Kubernetes schemas."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from olares_pack.charts import kube
from olares_pack.charts.objects import containers, obj_name, pod_spec
from olares_pack.common import quantity
from olares_pack.lint.context import CLUSTER_SCOPED, ChartContext, Render

Rule = Callable[[ChartContext], None]
USERSPACE = ("appData", "appCache", "userData", "appCommon")


def _describe(r: Render) -> str:
    who = "owner == admin" if r.owner == r.admin else "owner != admin"
    return f"{who}, GPU.Type={r.mode}"


def schemas(ctx: ChartContext) -> None:
    """Each distinct object once: the renders of one chart mostly repeat the same objects (another
    owner's namespace changes no schema verdict, so it is left out of the comparison)."""
    import orjson

    seen: set[bytes] = set()
    reported: set[str] = set()
    for r in ctx.renders:
        for o in r.objects:
            meta = o.get("metadata")
            key = orjson.dumps({**o, "metadata": {k: v for k, v in meta.items() if k != "namespace"}} if isinstance(meta, dict) else o,
                               option=orjson.OPT_SORT_KEYS, default=str)
            if key in seen:
                continue
            seen.add(key)
            found = kube.check(o, ctx.options.kube_version)
            if found is None or f"{obj_name(o)}: {found[1]}" in reported:
                continue
            reported.add(f"{obj_name(o)}: {found[1]}")
            ctx.add("kube.schema", found[1], path=obj_name(o), file=ctx.file_of(o), severity=found[0],  # type: ignore[arg-type]
                    hint=f"Kubernetes {ctx.options.kube_version} schema")


def namespace(ctx: ChartContext) -> None:
    """framework/oac CheckResourceNamespace: workloads in the app's namespace; other namespaced
    objects there or in a user-system-* namespace; objects that name none are skipped."""
    for r in ctx.renders:
        ns = f"{ctx.name or ctx.source.folder}-{r.owner}"
        for o in r.objects:
            if o.get("kind") in CLUSTER_SCOPED:
                continue
            got = (o.get("metadata") or {}).get("namespace")
            if got is None or got == ns:
                continue
            if o.get("kind") not in ("Deployment", "StatefulSet", "DaemonSet") and str(got).startswith("user-system-"):
                continue
            ctx.add("template.namespace", f"namespace is {got!r}, not the release namespace ({_describe(r)})",
                    path=obj_name(o), file=ctx.file_of(o), hint='namespace: "{{ .Release.Namespace }}"')
        return  # one render is enough: the namespace does not depend on the values


def app_workload(ctx: ChartContext) -> None:
    r = ctx.primary_render()
    if r is None or not ctx.name or ctx.manifest_type != "app":
        return
    if not any(o.get("kind") in ("Deployment", "StatefulSet") and (o.get("metadata") or {}).get("name") == ctx.name for o in r.objects):
        ctx.add("template.app-workload", f"no Deployment or StatefulSet named {ctx.name!r}",
                hint="name the main workload after the app (metadata.name)")


def hostpath_recreate(ctx: ChartContext) -> None:
    """framework/oac CheckHostPath: a rolling update would start the new pod where the old pod's
    hostPath is not (Deployments: Recreate; StatefulSets: OnDelete)."""
    r = ctx.primary_render()
    if r is None:
        return
    for o in r.objects:
        kind = o.get("kind")
        if kind not in ("Deployment", "StatefulSet"):
            continue
        vols = (pod_spec(o) or {}).get("volumes") or []
        if any(isinstance(v, dict) and "hostPath" in v for v in vols):
            key, safe = ("strategy", "Recreate") if kind == "Deployment" else ("updateStrategy", "OnDelete")
            strategy = ((o.get("spec") or {}).get(key) or {}).get("type")
            if strategy not in (safe,):
                ctx.add("template.hostpath-recreate", f"hostPath volumes with {key} {strategy or 'RollingUpdate (default)'}",
                        path=obj_name(o), file=ctx.file_of(o), hint=f"{key}: {{type: {safe}}}")


def installer_checks_resources(ctx: ChartContext) -> bool:
    """The installer checks container resources against flat fields below 0.12.0, and against
    spec.accelerator envelopes from 0.12.0 on; a 0.12.0 chart with flat fields (or apiVersion v2)
    skips the check (framework/oac checkResourceLimits)."""
    if ctx.api_version == "v2":
        return False
    return not ctx.modern or bool(ctx.accelerators)


def container_resources(ctx: ChartContext) -> None:
    """The installer checks the primary containers of Deployments and StatefulSets."""
    severity = None if installer_checks_resources(ctx) else "warning"
    seen: set[tuple[str, str]] = set()
    for r in ctx.renders:
        for o in r.objects:
            if o.get("kind") not in ("Deployment", "StatefulSet"):
                continue
            for key, c in containers(o, init=False):
                res = c.get("resources") or {}
                where = f"{obj_name(o)}: {key}[{c.get('name')}]"
                for res_key in ("cpu", "memory"):
                    for section in ("requests", "limits"):
                        if (res.get(section) or {}).get(res_key) in (None, ""):
                            msg = f"no {section}.{res_key}"
                            if (where, msg) not in seen:
                                seen.add((where, msg))
                                ctx.add("template.resources", msg, path=where, severity=severity, file=ctx.file_of(o),
                                        hint="every container sets cpu and memory requests and limits")
                    req, lim = quantity.parse_or_none((res.get("requests") or {}).get(res_key)), quantity.parse_or_none((res.get("limits") or {}).get(res_key))
                    if req is not None and lim is not None and req > lim:
                        msg = f"requests.{res_key} {res['requests'][res_key]} > limits.{res_key} {res['limits'][res_key]}"
                        if (where, msg) not in seen:
                            seen.add((where, msg))
                            ctx.add("template.resources", msg, path=where, severity=severity, file=ctx.file_of(o))


def envelope(ctx: ChartContext) -> None:
    """The primary containers' sums (init containers excluded, as the installer sums them) fit
    the envelope of the mode the chart was rendered with."""
    if not installer_checks_resources(ctx):
        return
    pairs = {"requiredCpu": ("requests", "cpu"), "limitedCpu": ("limits", "cpu"),
             "requiredMemory": ("requests", "memory"), "limitedMemory": ("limits", "memory")}
    for r in ctx.renders:
        if r.owner != r.admin:
            continue
        env = ctx.envelope(r.mode)
        for key, (section, res_key) in pairs.items():
            limit = quantity.parse_or_none(env.get(key))
            if limit is None:
                continue
            total = sum((quantity.parse_or_none(((c.get("resources") or {}).get(section) or {}).get(res_key)) or Decimal(0))
                        for o in r.objects if o.get("kind") in ("Deployment", "StatefulSet")
                        for _, c in containers(o, init=False))
            if total > limit:
                ctx.add("template.envelope", f"containers' {section}.{res_key} add up to {quantity.cores_string(total) if res_key == 'cpu' else int(total)}"
                        f"{'' if res_key == 'cpu' else ' bytes'}, above {key} {env.get(key)} (GPU.Type={r.mode})",
                        file="OlaresManifest.yaml", path=key, hint="raise the envelope or lower the containers")


def userspace_permission(ctx: ChartContext) -> None:
    text = "\n".join(ctx.templates_text().values())
    perm = ctx.manifest.get("permission") if isinstance(ctx.manifest.get("permission"), dict) else {}
    for key in USERSPACE:
        used = f".Values.userspace.{key}" in text
        granted = bool(perm.get(key))
        if used and not granted:
            ctx.add("template.userspace-permission", f"templates use .Values.userspace.{key} without permission.{key}",
                    file="OlaresManifest.yaml", path=f"permission.{key}", hint=f"permission: {{{key}: true}}")
        elif granted and not used:
            ctx.add("template.userspace-permission", f"permission.{key} is granted but no template uses .Values.userspace.{key}",
                    file="OlaresManifest.yaml", path=f"permission.{key}", severity="info")


def workload_replicas(ctx: ChartContext) -> None:
    r = ctx.primary_render()
    if r is None or not ctx.workload_replicas or ctx.manifest_type != "app":
        return
    names = {(o.get("metadata") or {}).get("name") for o in r.objects if o.get("kind") in ("Deployment", "StatefulSet")}
    for n in sorted(x for x in names if x not in ctx.workload_replicas):
        ctx.add("template.workload-replicas", f"workloadReplicas has no entry for workload {n!r}", file="OlaresManifest.yaml", path="workloadReplicas")
    for n in sorted(str(k) for k in ctx.workload_replicas if k not in names):
        ctx.add("template.workload-replicas", f"workloadReplicas entry {n!r} matches no rendered Deployment/StatefulSet",
                file="OlaresManifest.yaml", path="workloadReplicas")


def _template_of(ctx: ChartContext, o: dict[str, Any]) -> str:
    """The template of the same-named object in the regular render (the zero render has no map)."""
    r = ctx.primary_render()
    for other in (r.objects if r else []):
        if obj_name(other) == obj_name(o):
            return ctx.file_of(other)
    return ""


def replicas_wiring(ctx: ChartContext) -> None:
    if not ctx.modern or ctx.zero_replicas is None or not ctx.workload_replicas:
        return
    for o in ctx.zero_replicas:
        if o.get("kind") not in ("Deployment", "StatefulSet"):
            continue
        got = (o.get("spec") or {}).get("replicas")
        if got != 0:
            name = (o.get("metadata") or {}).get("name")
            # an omitted replicas passes the 1.12.6/1.12.7 template scan (PR #3500); only the newer
            # rendered check (PR #4040) refuses it: a warning until a release is known to run that
            ctx.add("template.replicas-wiring", f"spec.replicas rendered as {got if got is not None else 'unset (1)'} with "
                    f"workloads.{name}.replicaCount = 0: the app cannot be stopped", path=obj_name(o), file=_template_of(ctx, o),
                    hint=f"replicas: {{{{ .Values.workloads.{name}.replicaCount }}}} (no default filter)",
                    severity="warning" if got is None else None)


def gpu_memory(ctx: ChartContext) -> None:
    for r in ctx.renders:
        if r.owner != r.admin:
            continue
        for o in r.objects:
            for key, c in containers(o):
                res = c.get("resources") or {}
                req = (res.get("requests") or {}).get("nvidia.com/gpumem")
                lim = (res.get("limits") or {}).get("nvidia.com/gpumem")
                where = f"{obj_name(o)}: {key}[{c.get('name')}]"
                for label, v in (("requests", req), ("limits", lim)):
                    if v is not None and not (isinstance(v, int) or (isinstance(v, str) and v.isdigit())):
                        ctx.add("template.gpu-memory", f"{label}.nvidia.com/gpumem is {v!r}: HAMi counts it in MiB, so a Mi/Gi "
                                f"suffix asks for far more (GPU.Type={r.mode})", path=where, file=ctx.file_of(o), severity="warning",
                                hint="a bare integer of MiB, e.g. 23552")
                if req is not None and lim is None:
                    # the API server wants a limit for an extended resource; a mutating webhook may add one
                    ctx.add("template.gpu-memory", f"nvidia.com/gpumem is requested ({req}) without a limit", path=where,
                            file=ctx.file_of(o), severity="warning", hint="the same value in requests and limits")
                elif lim is not None and req is not None and str(req) != str(lim):
                    ctx.add("template.gpu-memory", f"nvidia.com/gpumem differs between requests ({req}) and limits ({lim})", path=where, file=ctx.file_of(o),
                            hint="the same value in requests and limits")
                if "nvidia.com/gpu" in (res.get("limits") or {}) or "nvidia.com/gpu" in (res.get("requests") or {}):
                    ctx.add("template.gpu-memory", "nvidia.com/gpu requests a whole GPU, which Olares 1.12 grants as a 16 GB default",
                            path=where, file=ctx.file_of(o), severity="warning", hint="request nvidia.com/gpumem: <MiB> instead")
        break


def runtime_class(ctx: ChartContext) -> None:
    r = ctx.primary_render()
    for o in (r.objects if r else []):
        if (pod_spec(o) or {}).get("runtimeClassName"):
            ctx.add("template.runtime-class", "runtimeClassName is set; the platform injects it for GPU workloads", path=obj_name(o),
                    file=ctx.file_of(o))


def routing(ctx: ChartContext) -> None:
    """An entrance routes to the Service its host names."""
    r = ctx.primary_render()
    if r is None or ctx.manifest_type != "app":
        return
    services = {(o.get("metadata") or {}).get("name"): o for o in r.objects if o.get("kind") == "Service"}
    for i, e in enumerate(ctx.manifest.get("entrances") or []):
        if isinstance(e, dict) and e.get("host") not in services:
            # a Service that exists but lacks the entrance's port is template.entrance-port's finding
            ctx.add("template.routing", f"entrance {e.get('name')!r}: no rendered Service is named {e.get('host')!r}",
                    file="OlaresManifest.yaml", path=f"entrances[{i}].host", hint="host names the Service in front of the app's pod")


def entrance_port(ctx: ChartContext) -> None:
    """Each entrance's port is a port of the Service its host names: the entrance proxies to
    host:port, and a port the Service does not expose answers 502."""
    r = ctx.primary_render()
    if r is None or ctx.manifest_type != "app":
        return
    ports = {(o.get("metadata") or {}).get("name"): [p.get("port") for p in (o.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
             for o in r.objects if o.get("kind") == "Service"}
    for key in ("entrances", "sharedEntrances"):
        for i, e in enumerate(ctx.manifest.get(key) or []):
            if not isinstance(e, dict) or not ports.get(e.get("host")) or e.get("port") in (None, 0):
                continue  # no such Service (template.routing), one without ports, or a port left to the platform
            if e.get("port") not in ports[e["host"]]:
                listed = ", ".join(str(p) for p in ports[e["host"]])
                ctx.add("template.entrance-port", f"{key[:-1]} {e.get('name')!r} port {e.get('port')} is not a port of Service "
                        f"{e['host']!r} ({listed}): the entrance answers 502", file="OlaresManifest.yaml", path=f"{key}[{i}].port",
                        loc=(key, i, "port"), hint=f"port: {ports[e['host']][0]}, or add the port to the Service")


def multiple_install(ctx: ChartContext) -> None:
    """options.allowMultipleInstall: a workload named after the release, and no cluster-scoped object
    whose name stays the same under another release name (oac CheckReleaseNameWorkload,
    CheckClusterScopedFixedNames)."""
    from olares_pack.lint.context import PROBES

    probes = ctx.memo.get("probes")
    if not probes:
        return
    named = [any(o.get("kind") in ("Deployment", "StatefulSet") and (o.get("metadata") or {}).get("name") == release for o in objs)
             for release, objs in zip(PROBES, probes, strict=True)]
    if not all(named):
        ctx.add("template.multiple-install", "options.allowMultipleInstall needs a Deployment or StatefulSet named "
                "{{ .Release.Name }}: installs would collide on workload names", file="OlaresManifest.yaml",
                path="options.allowMultipleInstall", hint="name: {{ .Release.Name }} on the main workload")
    if ctx.api_version == "v2":
        return
    keys = [{obj_name(o) for o in objs if o.get("kind") in CLUSTER_SCOPED} for objs in probes]
    for key in sorted(keys[0] & keys[1]):
        ctx.add("template.multiple-install", f"cluster-scoped {key} keeps its name under another release name: a second "
                "install collides with it", path=key, file=_template_of(ctx, {"kind": key.split("/")[0],
                "metadata": {"name": key.split("/", 1)[1]}}), hint="a name built on {{ .Release.Name }}")


def upload_mount(ctx: ChartContext) -> None:
    """options.upload.dest names a folder some primary container mounts (oac CheckUploadConfig)."""
    opts = ctx.manifest.get("options") if isinstance(ctx.manifest.get("options"), dict) else {}
    upload = opts.get("upload") if isinstance(opts.get("upload"), dict) else {}
    dest = str(upload.get("dest") or "")
    r = ctx.primary_render()
    if not dest or r is None:
        return
    want = posixpath.normpath(dest)
    mounts = {posixpath.normpath(str(m.get("mountPath"))) for o in r.objects if o.get("kind") in ("Deployment", "StatefulSet")
              for _, c in containers(o, init=False) for m in c.get("volumeMounts") or [] if isinstance(m, dict) and m.get("mountPath")}
    if want not in mounts:
        ctx.add("template.upload-mount", f"no container of a Deployment/StatefulSet mounts options.upload.dest {dest!r}",
                file="OlaresManifest.yaml", path="options.upload.dest", hint="mount the upload folder in the app's container")


_IMAGE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/:]*(@sha256:[0-9a-f]{64})?$")


def image_ref(ctx: ChartContext) -> None:
    """Every container of the render names an image a runtime can pull (the image pre-pull and
    oac ListImages read images from a Helm dry run)."""
    r = ctx.primary_render()
    for o in (r.objects if r else []):
        for key, c in containers(o):
            image = c.get("image")
            if not isinstance(image, str) or not _IMAGE_REF.match(image) or image.endswith((":", "/")):
                ctx.add("template.image-ref", f"image {image!r} is not an image reference", path=f"{obj_name(o)}: {key}[{c.get('name')}]",
                        file=ctx.file_of(o), hint="repository[:tag][@sha256:digest]")


RULES: list[Rule] = [schemas, namespace, app_workload, hostpath_recreate, container_resources, envelope,
                     userspace_permission, workload_replicas, replicas_wiring, gpu_memory, runtime_class, routing, entrance_port, image_ref,
                     upload_mount, multiple_install]
