"""Engine-aware rules: llama-server/vLLM flags against the pinned build's registry, ports that
must agree, pinned images, and secrets in plain text."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from ..engines import registry
from ..engines.detect import Invocation, find_engines
from ..engines.normalize import normalize_generic, normalize_llama
from ..errors import InputError
from .context import ChartContext
from .template_rules import containers, obj_name

Rule = Callable[[ChartContext], None]
# A token or API key by its name (HF_TOKEN, OPENAI_API_KEY, ...), not TOKENIZERS_PARALLELISM or
# MAX_TOKENS; a value that could be one: 16+ characters with no spaces, not a number or a URL.
SECRET_NAME = re.compile(r"(^|[_-])(TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|AUTH[_-]?KEY)$", re.I)
SECRET_VALUE = re.compile(r"^(?!https?://)[A-Za-z0-9_\-.+/=:]{16,}$")


def _looks_secret(name: str, value: object) -> bool:
    text = str(value or "").strip()
    # Placeholders such as YOUR_OPENAI_API_KEY carry no digit; real keys mix letters and digits.
    return (bool(SECRET_NAME.search(name)) and bool(SECRET_VALUE.match(text)) and "$(" not in text
            and any(c.isdigit() for c in text) and any(c.isalpha() for c in text))


def _build_for(ctx: ChartContext, inv: Invocation) -> tuple[str | None, str]:
    """(build key, how it was chosen) for a llama.cpp invocation."""
    if ctx.options.engine_build:
        return ctx.options.engine_build, "--engine-build"
    if inv.build:
        return inv.build, f"annotation {inv.workload}"
    tag = inv.image.split("@")[0].rsplit(":", 1)[-1] if ":" in inv.image.split("@")[0].rsplit("/", 1)[-1] else ""
    for key in registry.builds("llamacpp"):
        if key and (tag == key or re.search(rf"(^|[-_.]){re.escape(key)}($|[-_.])", tag)):
            return key, f"image tag {tag}"
    return None, "unknown"


def _file_of_workload(ctx: ChartContext, objects: list[dict[str, Any]], workload: str) -> str:
    return next((ctx.file_of(o) for o in objects if obj_name(o) == workload), "")


def _hint_for_value(flag: str, value: str, reg: registry.Registry) -> str:
    for ev in registry.history(reg.engine):
        if ev.kind == "rename-value" and ev.flag == flag and ev.old == value:
            return f"{flag} {value} was renamed {ev.new} upstream on {ev.date}: use {flag} {ev.new}"
    spec = reg.lookup(flag)
    close = difflib.get_close_matches(value, spec.choices or [], n=1) if spec else []
    return f"did you mean {close[0]}?" if close else ""


def _hint_for_flag(name: str, reg: registry.Registry) -> str:
    for ev in registry.history(reg.engine):
        if ev.kind == "removed" and ev.old == name:
            return f"{ev.text} (removed upstream {ev.date})"
    close = difflib.get_close_matches(name, list(reg.by_name), n=1, cutoff=0.75)
    return f"did you mean {close[0]}?" if close else ""


def llama_flags(ctx: ChartContext) -> None:
    r = ctx.primary_render()
    if r is None:
        return
    for inv in find_engines(r.objects):
        if inv.kind != "llamacpp":
            continue
        where = f"{inv.workload}: containers[{inv.container}]"
        file = _file_of_workload(ctx, r.objects, inv.workload)
        key, how = _build_for(ctx, inv)
        try:
            reg = registry.load("llamacpp", key)
        except InputError as exc:
            ctx.add("engine.build", str(exc), path=where, file=file, severity="warning")
            reg = registry.load("llamacpp")
        if key is None:
            ctx.add("engine.build", f"engine build unknown: checked against llama.cpp {reg.build}, the newest known",
                    path=where, file=file, hint="olares-pack apps: set engine.build; hand-written charts: --engine-build")
        args = normalize_llama(inv.argv, reg, inv.env)
        for name in args.unknown:
            ctx.add("engine.flag", f"llama.cpp {reg.build} does not accept {name}: llama-server exits at start",
                    path=where, file=file, hint=_hint_for_flag(name, reg))
        for arg in args.args.values():
            spec = reg.lookup(arg.flag) or reg.lookup(arg.spelled.split()[0].split("=")[0])
            if spec is None:
                continue
            if spec.removed:
                ctx.add("engine.flag", f"{arg.spelled.split()[0]} was removed before llama.cpp {reg.build}: llama-server exits at start",
                        path=where, file=file, hint=f"use {spec.replacement}" if spec.replacement else _hint_for_flag(arg.spelled.split()[0], reg))
                continue
            if spec.choices and spec.takes_value and not spec.optional_value:
                parts = arg.value.split(",") if arg.flag == "--spec-type" else [arg.value]
                for part in parts:
                    if part not in spec.choices:
                        ctx.add("engine.value", f"{arg.flag} {part}: llama.cpp {reg.build} accepts {', '.join(spec.choices)}",
                                path=where, file=file, hint=_hint_for_value(arg.flag, part, reg))
        for flag, label in (("--host", "--host (default 127.0.0.1: unreachable from the Service)"),
                            ("--port", "--port (the default moved between builds)"),
                            ("--parallel", "-np/--parallel (default auto = 4 slots, each with its own state)")):
            if flag not in args.args:
                ctx.add("engine.defaults", f"{label} is left to its default", path=where, file=file, hint=f"set {flag} explicitly")
        port = args.args.get("--port")
        _ports_agree(ctx, inv, int(port.value) if port and port.value.isdigit() else None, r.objects)


def vllm_flags(ctx: ChartContext) -> None:
    r = ctx.primary_render()
    if r is None:
        return
    for inv in find_engines(r.objects):
        if inv.kind != "vllm":
            continue
        args = normalize_generic(inv.argv)
        where = f"{inv.workload}: containers[{inv.container}]"
        for flag in ("--host", "--port"):
            if flag not in args.args:
                ctx.add("engine.defaults", f"{flag} is left to its default", path=where, file=_file_of_workload(ctx, r.objects, inv.workload),
                        hint=f"set {flag} explicitly")
        port = args.args.get("--port")
        _ports_agree(ctx, inv, int(port.value) if port and port.value.isdigit() else 8000, r.objects)


def _ports_agree(ctx: ChartContext, inv: Invocation, listen: int | None, objects: list[dict[str, Any]]) -> None:
    where = f"{inv.workload}: containers[{inv.container}]"
    if listen is None:
        return
    if inv.ports and listen not in inv.ports:
        ctx.add("engine.port", f"the engine listens on {listen} but the container declares ports {inv.ports}", path=where,
                file=_file_of_workload(ctx, objects, inv.workload))
    workload = next((o for o in objects if obj_name(o) == inv.workload), None)
    labels = (((((workload or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}
    services = [o for o in objects if o.get("kind") == "Service" and (o.get("spec") or {}).get("selector")
                and all(labels.get(k) == v for k, v in o["spec"]["selector"].items())]
    declared = [(c.get("name"), p) for _, c in containers(workload or {}, init=False)
                for p in c.get("ports") or [] if isinstance(p, dict)]
    port_names = {p.get("name"): p.get("containerPort") for _, p in declared}
    # Service -> targetPort -> the container that declares it: a port of a dashboard or proxy
    # beside the engine is not the engine's business (issue #14, device-proven multi-container pods).
    owner = {p.get("name"): name for name, p in declared} | {p.get("containerPort"): name for name, p in declared}
    for svc in services:
        for p in (svc.get("spec") or {}).get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            held_by = owner.get(target)
            target = port_names.get(target, target) if isinstance(target, str) else target
            if held_by is not None and held_by != inv.container:
                continue
            if target != listen:
                ctx.add("engine.port", f"{obj_name(svc)} port {p.get('port')} targets {target}, the engine listens on {listen}",
                        path=obj_name(svc), file=ctx.file_of(svc))
    svc_ports = {(svc.get("metadata") or {}).get("name"): {p.get("port") for p in (svc.get("spec") or {}).get("ports") or []}
                 for svc in services}
    for i, e in enumerate(ctx.manifest.get("entrances") or []):
        if isinstance(e, dict) and e.get("host") in svc_ports and e.get("port") not in svc_ports[e.get("host")]:
            ctx.add("engine.port", f"entrance {e.get('name')!r} port {e.get('port')} is not a port of Service {e.get('host')!r}",
                    file="OlaresManifest.yaml", path=f"entrances[{i}].port", loc=("entrances", i, "port"))


def images(ctx: ChartContext) -> None:
    r = ctx.primary_render()
    seen: set[str] = set()
    for o in (r.objects if r else []):
        for key, c in containers(o):
            image = str(c.get("image", ""))
            if image and "@sha256:" not in image and image not in seen:
                seen.add(image)
                ctx.add("image.unpinned", f"{image} is not pinned by digest", path=f"{obj_name(o)}: {key}[{c.get('name')}]", file=ctx.file_of(o),
                        severity="error" if ctx.options.strict else None, hint="repository:tag@sha256:<digest>")


def plaintext_secrets(ctx: ChartContext) -> None:
    """Rendered with the installer's values: a literal that survives rendering is in the chart."""
    r = ctx.primary_render()
    for o in (r.objects if r else []):
        if o.get("kind") == "ConfigMap":
            for k, v in sorted((o.get("data") or {}).items()):
                if _looks_secret(str(k), v):
                    ctx.add("secret.plaintext", f"ConfigMap key {k!r} holds a secret in plain text", path=obj_name(o), file=ctx.file_of(o),
                            hint="put it in a Secret and reference it with secretKeyRef")
        for key, c in containers(o):
            where = f"{obj_name(o)}: {key}[{c.get('name')}]"
            for e in c.get("env") or []:
                name, value = str(e.get("name", "")), e.get("value")
                if _looks_secret(name, value):
                    ctx.add("secret.plaintext", f"env {name} is a literal value", path=where, file=ctx.file_of(o),
                            hint="valueFrom: {secretKeyRef: ...}")
            words = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
            for i, w in enumerate(words):
                for flag in ("--api-key", "--hf-token", "--token"):
                    if w.startswith(flag + "=") and "$(" not in w:
                        ctx.add("secret.plaintext", f"{flag} is given literally in the arguments", path=where, file=ctx.file_of(o),
                                hint="pass it through a Secret-backed env var")
                    elif w == flag and i + 1 < len(words) and "$(" not in words[i + 1] and not words[i + 1].startswith("$"):
                        ctx.add("secret.plaintext", f"{flag} is given literally in the arguments", path=where, file=ctx.file_of(o),
                                hint="pass it through a Secret-backed env var")
                if re.search(r"(--api-key|--hf-token)[ =]['\"]?[A-Za-z0-9_\-]{16,}", w) and " " in w:
                    ctx.add("secret.plaintext", "a key or token is written into a shell command", path=where, file=ctx.file_of(o))


def gpu_budget(ctx: ChartContext) -> None:
    """For charts rendered from an app manifest: the estimate at full context, against the device
    and against the GPU memory the chart declares (the HAMi grant)."""
    app, app_dir = ctx.source.app, ctx.source.app_dir
    if app is None or app_dir is None or "nvidia" not in app.modes:
        return
    from .. import budget, vram
    from ..manifest import LlamaCppApp

    try:
        est = budget.app_estimate(app, app_dir, vram.device())
    except InputError as exc:
        # loudly: without the model's numbers nothing checks that the chart fits the GPU
        ctx.add("vram.budget", f"no GPU memory check: {exc}", severity="warning")
        return
    declared = app.resources.gpu_memory_mib
    figures = f"{est.total_mib:,.0f} MiB at full context ({est.boot_mib:,.0f} at boot), {est.headroom_mib:,.0f} MiB headroom on {est.device.name}"
    if est.verdict == "does not fit":
        ctx.add("vram.budget", f"does not fit: {figures}", hint="olares-pack vram shows every term; lower --ctx-size, the cache type or the quant")
    elif est.verdict == "tight":
        ctx.add("vram.budget", f"tight: {figures}", severity="warning",
                hint="little headroom once the context fills; olares-pack vram --largest-ctx")
    if isinstance(app, LlamaCppApp) and isinstance(declared, int) and declared < est.total_mib:
        ctx.add("vram.budget", f"declares {declared} MiB of GPU memory but needs {est.total_mib:,.0f} MiB at full context",
                file="OlaresManifest.yaml", hint=f"gpu_memory_mib: {vram.gpu_request_mib(est)} (or auto)")


RULES: list[Rule] = [llama_flags, vllm_flags, images, plaintext_secrets, gpu_budget]
