"""Engine-aware rules: llama-server/vLLM flags against the pinned build's registry, ports that
must agree, pinned images, and secrets in plain text."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from olares_pack.charts.objects import containers, find, obj_name
from olares_pack.common.errors import InputError
from olares_pack.engines import registry
from olares_pack.engines.detect import Invocation
from olares_pack.engines.normalize import normalize_generic, normalize_llama
from olares_pack.lint.context import ChartContext

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


ANNOTATION_FORK = "olares-pack/engine-fork"
_TAG_SHA = re.compile(r"(?:^|[-_.])([0-9a-f]{7,40})$")


@dataclass(frozen=True)
class EngineBuild:
    """What a llama.cpp container runs, as far as the chart tells."""

    resolved: registry.Resolved
    fork: registry.Fork | None
    strict: bool  # an unknown flag is an error: upstream image or a declared build, and no unknown fork
    origin: str  # for messages when not strict


def _engine_build(ctx: ChartContext, inv: Invocation, annotations: dict[str, Any]) -> EngineBuild:
    import fnmatch

    repo, tag = registry.image_parts(inv.image)
    known = registry.builds("llamacpp")
    forks = registry.forks("llamacpp")
    fork_name = annotations.get(ANNOTATION_FORK)
    fork = forks.get(str(fork_name)) if fork_name else next(
        (f for f in forks.values() if any(fnmatch.fnmatch(inv.image.split("@")[0], pat) or fnmatch.fnmatch(f"docker.io/{repo}:{tag}", pat)
                                          for pat in f.images)), None)
    build, how = None, "no build number in the image tag, none declared"
    if ctx.options.engine_build:
        build, how = ctx.options.engine_build, "--engine-build"
    elif inv.build:
        build, how = inv.build, f"annotation of {inv.workload}"
    elif tag_build := registry.tag_build(tag):
        build, how = tag_build, f"image tag {tag}"
    elif (m := _TAG_SHA.search(tag)) and any(k.startswith(m.group(1)[:7]) for k in known):
        build, how = next(k for k in known if k.startswith(m.group(1)[:7])), f"image tag {tag}"
    elif fork is not None and fork.name in known:
        build, how = fork.name, f"fork {fork.name}"
    resolved = registry.resolve("llamacpp", build, how)
    declared = bool(ctx.options.engine_build or inv.build)  # the maintainer said which build it is
    upstream = any(repo == u.removeprefix("docker.io/") for u in registry.upstream_images("llamacpp"))
    strict = (upstream or declared) and (fork_name is None or fork is not None)
    if fork_name and fork is None:
        origin = f"fork {fork_name!r} (not declared in engines/data/llamacpp-history.yaml)"
    elif fork is not None:
        origin = f"fork {fork.name}"
    else:
        origin = f"image {repo} (not an upstream llama.cpp image, no build declared)"
    return EngineBuild(resolved, fork, strict, origin)


def _file_of_workload(ctx: ChartContext, objects: list[dict[str, Any]], workload: str) -> str:
    return next((ctx.file_of(o) for o in objects if obj_name(o) == workload), "")


def _hint_for_value(flag: str, value: str, reg: registry.Registry) -> str:
    for ev in registry.history(reg.engine):
        if ev.kind == "rename-value" and ev.flag == flag and ev.old == value:
            return f"{flag} {value} was renamed {ev.new} upstream on {ev.date}: use {flag} {ev.new}"
    spec = reg.lookup(flag)
    close = difflib.get_close_matches(value, spec.choices or [], n=1) if spec else []
    return f"did you mean {close[0]}?" if close else ""


# (registry, flag) -> its hint: a corpus of charts written from one template repeats the same
# unknown flags, and a fuzzy match over a build's few hundred flag names costs a millisecond each.
# Keyed by the registry object (held, so that its id is not reused), whatever built it.
_FLAG_HINTS: dict[tuple[int, str], tuple[registry.Registry, str]] = {}


def _hint_for_flag(name: str, reg: registry.Registry) -> str:
    hit = _FLAG_HINTS.get((id(reg), name))
    if hit is None or hit[0] is not reg:
        if len(_FLAG_HINTS) >= 4096:
            _FLAG_HINTS.clear()
        hit = _FLAG_HINTS[id(reg), name] = (reg, _flag_hint(name, reg))
    return hit[1]


def _flag_hint(name: str, reg: registry.Registry) -> str:
    for ev in registry.history(reg.engine):
        if ev.kind == "removed" and ev.old == name:
            return f"{ev.text} (removed upstream {ev.date})"
    close = difflib.get_close_matches(name, list(reg.by_name), n=1, cutoff=0.75)
    return f"did you mean {close[0]}?" if close else ""


def _doubt(eb: EngineBuild, known: Callable[[registry.Registry], bool]) -> str | None:
    """Why a finding is only a warning: the build is not exactly known and a neighbouring build of
    the table accepts it, or the image is a fork or of unknown origin. None: a sure error."""
    if not eb.resolved.exact and any(known(r) for r in eb.resolved.neighbours):
        accepted = [r.build for r in eb.resolved.neighbours if known(r)]
        return f"accepted by llama.cpp {', '.join(accepted)}, a neighbour of this unknown build"
    if eb.fork is not None or not eb.strict:
        return f"the image is a {eb.origin}: it may accept what upstream does not"
    return None


def _accepts_flag(name: str) -> Callable[[registry.Registry], bool]:
    return lambda r: (spec := r.lookup(name)) is not None and not spec.removed


def _accepts_value(flag: str, value: str) -> Callable[[registry.Registry], bool]:
    return lambda r: (spec := r.lookup(flag)) is not None and (not spec.choices or value in spec.choices)


Where = Callable[[str], "dict[str, Any] | None"]  # a flag or value as written -> where it is written (None: the workload)


def _llama_args(ctx: ChartContext, inv: Invocation, eb: EngineBuild, reg: registry.Registry, at: dict[str, Any], where: Where) -> Any:
    """The flag and value checks of one llama-server argv; findings point where each word is written."""
    extra_values = eb.fork.values if eb.fork else {}
    extra_flags = set(eb.fork.flags) if eb.fork else set()
    args = normalize_llama(inv.argv, reg, inv.env)
    for name in args.unknown:
        if name in extra_flags:
            continue
        doubt = _doubt(eb, _accepts_flag(name))
        ctx.add("engine.flag", f"llama.cpp {reg.build} does not accept {name}" + (f" ({doubt})" if doubt else ": llama-server exits at start"),
                **(where(name) or at), hint=_hint_for_flag(name, reg), severity="warning" if doubt else None)
    for arg in args.args.values():
        spec = reg.lookup(arg.flag) or reg.lookup(arg.spelled.split()[0].split("=")[0])
        if spec is None:
            continue
        spelled = arg.spelled.split()[0].split("=")[0]
        if spec.removed:
            doubt = _doubt(eb, _accepts_flag(spelled))
            ctx.add("engine.flag", f"{spelled} was removed before llama.cpp {reg.build}" + (f" ({doubt})" if doubt else ": llama-server exits at start"),
                    **(where(spelled) or at), severity="warning" if doubt else None,
                    hint=f"use {spec.replacement}" if spec.replacement else _hint_for_flag(spelled, reg))
            continue
        if spec.choices and spec.takes_value and not spec.optional_value:
            parts = arg.value.split(",") if arg.flag == "--spec-type" else [arg.value]
            for part in parts:
                if part in spec.choices or part in extra_values.get(spec.canonical, ()):
                    continue
                doubt = _doubt(eb, _accepts_value(spec.canonical, part))
                ctx.add("engine.value", f"{arg.flag} {part}: llama.cpp {reg.build} accepts {', '.join(spec.choices)}" + (f" ({doubt})" if doubt else ""),
                        **(where(arg.value) or where(spelled) or at), hint=_hint_for_value(arg.flag, part, reg),
                        severity="warning" if doubt else None)
    return args


def _nowhere(word: str) -> None:
    return None


def _other_engine_args(ctx: ChartContext, inv: Invocation) -> list[tuple[Invocation, dict[str, Any]]]:
    """The shared form: each ENGINE_ARGS the chart writes that the render did not start the engine
    with (an option of the clone dialog, the templates' fallback), as the engine would be started
    with it, and where it is written: checked as the render's arguments are."""
    if not inv.llmbase:
        return []
    from olares_pack.engines.detect import llmbase_argv
    from olares_pack.lint import engine_args

    rendered = inv.env.get(engine_args.ENV, "")
    out = []
    for source in engine_args.sources(ctx):
        if not source.within(rendered):
            env = {**inv.env, engine_args.ENV: source.text}
            out.append((dataclasses.replace(inv, env=env, argv=llmbase_argv(inv.kind, env)), source.where()))
    return out


def llama_flags(ctx: ChartContext) -> None:
    from olares_pack.lint import engine_args

    r = ctx.primary_render()
    if r is None:
        return
    for inv in ctx.engines():
        if inv.kind != "llamacpp":
            continue
        where = f"{inv.workload}: containers[{inv.container}]"
        workload = find(r.objects, inv.workload) or {}
        file = ctx.file_of(workload)
        eb = _engine_build(ctx, inv, ((workload.get("metadata") or {}).get("annotations")) or {})
        reg = eb.resolved.registry
        if eb.resolved.exact and reg.build in registry.builds("llamacpp") and "help" in registry.builds("llamacpp")[reg.build]:
            reg = registry.load("llamacpp", reg.build)  # the build's own --help: defaults and descriptions too
        sure = eb.resolved.sure
        ctx.add("engine.build", eb.resolved.note + (f"; {eb.origin}" if not eb.strict else ""), path=where, file=file,
                severity="info" if sure else "warning",
                hint="" if sure else "olares-pack apps: set engine.build; hand-written charts: --engine-build or an image tag bNNNN")
        at = {"path": where, "file": file}
        placed = engine_args.placer(ctx, inv.env.get(engine_args.ENV) if inv.llmbase else None)
        _engine_parse(ctx, inv, eb, workload, r.objects, at)
        args = _llama_args(ctx, inv, eb, reg, at, placed)
        for other, written in _other_engine_args(ctx, inv):
            _llama_args(ctx, other, eb, reg, written, _nowhere)
        for flag, label in (("--host", "--host (default 127.0.0.1: unreachable from the Service)"),
                            ("--port", "--port (the default moved between builds)"),
                            ("--parallel", "-np/--parallel (default auto = 4 slots, each with its own state)")):
            if flag not in args.args:
                ctx.add("engine.defaults", f"{label} is left to its default", path=where, file=file, hint=f"set {flag} explicitly")
        port = args.args.get("--port")
        _ports_agree(ctx, inv, int(port.value) if port and port.value.isdigit() else None, r.objects)


def _engine_parse(ctx: ChartContext, inv: Invocation, eb: EngineBuild, workload: dict[str, Any], objects: list[dict[str, Any]],
                  at: dict[str, Any]) -> None:
    """llama-server's own parser on the argv the container starts it with (engines/argv_check: the
    argv read from the rendered container by its own reading, `$(VAR)` and `sh -c` expanded). The
    exact build's binary when this machine has it; else the newest binary's parser with what it does
    not know set aside, which still refuses an option given another option as its value."""
    from olares_pack.charts.objects import pod_spec
    from olares_pack.engines import argv_check
    from olares_pack.engines.detect import configmaps

    container = next((c for c in (pod_spec(workload) or {}).get("containers") or [] if c.get("name") == inv.container), None)
    if container is None:
        return
    env = argv_check.container_env(container, configmaps(objects))
    argv = inv.argv if inv.llmbase else argv_check.engine_argv(container, env)  # llmbase: the form's wrapper builds it
    build = eb.resolved.registry.build
    how = "engine.parse"
    if argv is None:
        return
    if left := argv_check.unresolved(argv):
        ctx.add(how, f"not parsed by llama-server: {', '.join(left)} is not resolved from the chart", **at, severity="info")
        return
    exact = eb.resolved.exact and eb.fork is None and eb.strict
    done = argv_check.check(argv, build, env, fork=not exact)
    if done.how == "none":
        ctx.add(how, f"not parsed by llama-server: checked against {done.used(build)}", **at, severity="info")
        return
    r = done.result
    used = done.used(build, None if eb.strict else eb.origin)
    stand = f"; empty stand-ins for the container's files {', '.join(r.stand_ins)}" if r is not None and r.stand_ins else ""
    if r is None or r.ok:
        ctx.add(how, f"parsed by {used}: accepted{stand}", **at, severity="info")
        return
    ctx.add(how, f"llama-server refuses the arguments: {r.error} ({used}{stand})", **at,
            hint=f"{r.flag} takes a value: give it one before {r.value}" if argv_check.takes_flag_as_value(r) else "")


_VLLM_TAG = re.compile(r"^v?([0-9]+\.[0-9]+\.[0-9]+)")


def _vllm_args(ctx: ChartContext, argv: list[str], known: Any, repo: str, upstream: bool, at: dict[str, Any], where: Where) -> None:
    """Each option as vLLM's FlexibleArgumentParser names it (engines/vllmargs.serve_flags:
    `--compilation_config` is `--compilation-config`, `--x.key v` sets a key of `--x`), once."""
    from olares_pack.engines.vllmargs import serve_flags

    named: dict[str, str] = {}
    for name, spelled in serve_flags(argv):
        named.setdefault(name, spelled)
    for flag, spelled in sorted(named.items()):
        # -O: an alias of --compilation-config up to 0.11, rewritten to --optimization-level by
        # parse_args from 0.14 (no longer an argparse option there)
        if known.accepts(flag) or (flag == "-O" and known.accepts("--optimization-level")):
            continue
        if known.neighbours and any(registry.vllm_accepts(n, flag) for n in known.neighbours):
            doubt = "a neighbouring release accepts it"
        elif not upstream:
            doubt = f"the image {repo} may carry patches that add it"
        else:
            doubt = ""
        said = flag if spelled.split("=", 1)[0] == flag else f"{spelled.split('=', 1)[0]} (read as {flag})"
        ctx.add("engine.flag", f"vLLM {known.version} does not accept {said}" + (f" ({doubt})" if doubt else ": vllm serve exits at start"),
                **(where(spelled) or where(flag) or at), severity="warning" if doubt else None,
                hint=next((f"did you mean {c}?" for c in difflib.get_close_matches(flag, sorted(known.flags), n=1, cutoff=0.8)), ""))


def vllm_flags(ctx: ChartContext) -> None:
    """vLLM exits at start on an unknown flag too: flags against the release the image tag names
    (engines/data/vllm-flags.json, from vLLM's own sources)."""
    from olares_pack.lint import engine_args

    r = ctx.primary_render()
    if r is None:
        return
    for inv in ctx.engines():
        if inv.kind != "vllm":
            continue
        args = normalize_generic(inv.argv)
        where = f"{inv.workload}: containers[{inv.container}]"
        file = _file_of_workload(ctx, r.objects, inv.workload)
        repo, tag = registry.image_parts(inv.image)
        m = _VLLM_TAG.match(tag)
        known = registry.vllm_flags(m.group(1) if m else None)
        upstream = repo in registry.VLLM_UPSTREAM
        told = f"vLLM {m.group(1)} (image tag {tag})" if m else "vLLM release unknown (no version in the image tag)"
        if not known.exact:
            told += f": checked against {known.version}, the nearest release of the registry"
        if not upstream:
            told += f"; image {repo} is not vllm/vllm-openai: unknown flags are warnings"
        ctx.add("engine.build", told, path=where, file=file, severity="info" if known.exact or not upstream else "warning")
        at = {"path": where, "file": file}
        placed = engine_args.placer(ctx, inv.env.get(engine_args.ENV) if inv.llmbase else None)
        _vllm_args(ctx, inv.argv, known, repo, upstream, at, placed)
        for other, written in _other_engine_args(ctx, inv):
            _vllm_args(ctx, other.argv, known, repo, upstream, written, _nowhere)
        for flag in ("--host", "--port"):
            if flag not in args.args:
                ctx.add("engine.defaults", f"{flag} is left to its default", path=where, file=file, hint=f"set {flag} explicitly")
        port = args.args.get("--port")
        _ports_agree(ctx, inv, int(port.value) if port and port.value.isdigit() else 8000, r.objects)


def _ports_agree(ctx: ChartContext, inv: Invocation, listen: int | None, objects: list[dict[str, Any]]) -> None:
    where = f"{inv.workload}: containers[{inv.container}]"
    if listen is None:
        return
    if inv.ports and listen not in inv.ports:
        ctx.add("engine.port", f"the engine listens on {listen} but the container declares ports {inv.ports}", path=where,
                file=_file_of_workload(ctx, objects, inv.workload))
    workload = find(objects, inv.workload)
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


def _verdict(ctx: ChartContext) -> Any:
    """The GPU memory verdict of an olares-pack app, imported ones included (vram/verdict.py, the
    one `vram` and `release` give); None for hand-written charts, or when the model's numbers are
    missing: then a warning says nothing checks the fit. Computed once."""
    if "verdict" in ctx.memo:
        return ctx.memo["verdict"]
    app, app_dir = ctx.source.app, ctx.source.app_dir
    v = None
    if app is not None and app_dir is not None:
        from olares_pack.vram import gate

        try:
            v = gate.of_catalogue(app, app_dir)
        except InputError as exc:
            # loudly: without the model's numbers nothing checks that the chart fits the GPU
            ctx.add("vram.budget", f"no GPU memory check: {exc}", severity="warning")
    ctx.memo["verdict"] = v
    return v


def _estimate(ctx: ChartContext) -> Any:
    v = _verdict(ctx)
    return v.estimate if v is not None else None


def gpu_budget(ctx: ChartContext) -> None:
    """For charts rendered from an app manifest: the verdict at full context on the build the chart
    runs (a policy error unless it is `fits`: `tight` too, since its margin is within what the
    estimate cannot tell), and the GPU memory the chart declares (the HAMi grant) against the estimate."""
    app = ctx.source.app
    v = _verdict(ctx)
    if app is None or v is None:
        return
    from olares_pack.apps.manifest import LlamaCppApp
    from olares_pack.vram import estimate as vram

    est = v.estimate
    declared = app.resources.gpu_memory_mib
    if v.verdict != "fits":
        ctx.add("vram.budget", v.line(),
                hint=f"olares-pack vram {app.name} shows every term; lower --ctx-size, the cache type or the quant, or "
                     "move the engine to a build that reserves its memory at boot; `release --allow vram.budget` ships "
                     "it anyway and its changelog entry says so")
    if isinstance(app, LlamaCppApp) and isinstance(declared, int) and declared < est.total_mib:
        ctx.add("vram.budget", f"declares {declared} MiB of GPU memory but needs {est.total_mib:,.0f} MiB at full context",
                file="OlaresManifest.yaml", hint=f"gpu_memory_mib: {vram.gpu_request_mib(est)} (or auto)")


HAMI_ENV = "CUDA_DEVICE_MEMORY_LIMIT_0"
_HAMI_UNITS = {"": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024}  # suffix -> MiB per unit (case-insensitive)


def hami_mib(value: str) -> float | None:
    """MiB of a HAMi-core memory limit ('30000m', '24g', bytes without a suffix); None if unreadable.
    Suffixes as the HAMi-core README's usage shows them (k, m, g); an assumption beyond that."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([kKmMgG]?)\s*", value)
    return int(m.group(1)) * _HAMI_UNITS[m.group(2).lower()] if m else None


def _gpu_containers(o: dict[str, Any]) -> list[dict[str, Any]]:
    """The containers HAMi manages: those that request GPU memory or a GPU, or that the gpu-inject
    annotation names ("true": every container)."""
    inject = str(((o.get("metadata") or {}).get("annotations") or {}).get("applications.app.bytetrade.io/gpu-inject", ""))
    out = []
    for _, c in containers(o, init=False):
        res = c.get("resources") or {}
        keys = set(res.get("limits") or {}) | set(res.get("requests") or {})
        if keys & {"nvidia.com/gpumem", "nvidia.com/gpu"} or inject == "true" or inject == c.get("name"):
            out.append(c)
    return out


def hami_limit(ctx: ChartContext) -> None:
    """HAMi's device plugin sets CUDA_DEVICE_MEMORY_LIMIT_<i> from the granted nvidia.com/gpumem
    (beclab/HAMi plugin/server.go Allocate); a value the chart sets by hand replaces that bound, so
    it is checked against the grant and the estimate."""
    from olares_pack.engines.detect import configmaps, resolve_env

    r = next((x for x in ctx.renders if x.mode in ("nvidia", None) and x.owner == x.admin), None)
    if r is None:
        return
    maps = configmaps(r.objects)
    est = _estimate(ctx)
    for o in r.objects:
        if o.get("kind") not in ("Deployment", "StatefulSet"):
            continue
        for c in _gpu_containers(o):
            where = f"{obj_name(o)}: containers[{c.get('name')}]"
            env = resolve_env(c, maps)
            value = env.get(HAMI_ENV)
            if value is None:
                continue  # HAMi's device plugin sets it from the granted nvidia.com/gpumem (Allocate)
            mib = hami_mib(value)
            if mib is None:
                ctx.add("gpu.hami-limit", f"{HAMI_ENV}={value!r} is not a number with an optional k/m/g suffix", path=where,
                        file=ctx.file_of(o), severity="warning")
                continue
            res = c.get("resources") or {}
            declared = (res.get("limits") or {}).get("nvidia.com/gpumem") or (res.get("requests") or {}).get("nvidia.com/gpumem")
            if declared is not None and str(declared).isdigit() and mib > int(declared):
                ctx.add("gpu.hami-limit", f"{HAMI_ENV}={value} ({mib:,.0f} MiB) is above the declared nvidia.com/gpumem {declared} MiB: "
                        "the container may take GPU memory the scheduler gave to no one", path=where, file=ctx.file_of(o),
                        severity="warning", hint=f"{HAMI_ENV}: {declared}m, or declare more GPU memory")
            if est is not None and mib < est.total_mib:
                ctx.add("gpu.hami-limit", f"{HAMI_ENV}={value} ({mib:,.0f} MiB) is below the estimate at full context "
                        f"({est.total_mib:,.0f} MiB): allocations fail once the context fills", path=where, file=ctx.file_of(o),
                        severity="warning", hint="olares-pack vram shows every term")


RULES: list[Rule] = [llama_flags, vllm_flags, images, plaintext_secrets, gpu_budget, hami_limit]
