"""Render an app manifest into an Olares chart: a mapping of relative path to file text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import jinja2

from olares_pack import engines, olares
from olares_pack.apps.changelog import upgrade_description
from olares_pack.apps.manifest import App, ChartApp, GenericApp, LlamaCppApp
from olares_pack.common import quantity
from olares_pack.common.cache import cache_root
from olares_pack.common.yamlsrc import safe_load
from olares_pack.olares import TargetProfile
from olares_pack.render import generation, kept, llmbase, sharedv2

# Download init container: small, and never above the engine container (the pod's effective
# request is the larger of the two, and the installer only sums the primary containers).
DOWNLOAD_CPU = ("100m", "1")
DOWNLOAD_MEMORY = ("256Mi", "1Gi")


_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff]")


def _yaml_str(value: Any) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML). JSON leaves DEL, the C1
    controls and U+2028/2029 raw, which YAML 1.1 readers take as line breaks or refuse: they are
    escaped too (the manifest boundary refuses them already; this holds for any value)."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(str(value), ensure_ascii=False))


def _helm_str(value: Any) -> str:
    """A double-quoted scalar inside a Helm template, where '{{' would start an action."""
    return _yaml_str(value).replace("{{", '{{ "{{" }}')


def _block(text: str, indent: int) -> str:
    """A YAML literal block scalar (the text after `key: `, the template's newline after it),
    indented by `indent` spaces, when it reads back as exactly `text`; else the double-quoted
    form. Reading it back is the proof: chomping, indentation indicators and white-space-only
    lines are where a literal block could change a value, and the fallback is exact."""
    if not text:
        return '""'
    stripped = text.rstrip("\n")
    trailing = len(text) - len(stripped)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    pad = " " * indent
    lines = [(pad + line) if line else "" for line in stripped.split("\n")]
    # The key sits two columns left of the content; an indentation indicator counts from the key's
    # own indentation, and is needed when the first line starts with a space.
    head = f"|{2 if stripped[:1] == ' ' else ''}{chomp}"
    block = head + "\n" + "\n".join(lines) + "\n" * max(trailing - 1, 0)
    key_pad = " " * (indent - 2)
    try:
        exact = safe_load(f"{key_pad}k: {block}\n" if not key_pad else f"p:\n{key_pad}k: {block}\n") == (
            {"k": text} if not key_pad else {"p": {"k": text}})
    except Exception:  # noqa: BLE001 - whatever does not read back as the text falls back
        exact = False
    return block if exact else _yaml_str(text)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    folder = cache_root() / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: compile in memory, as before
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    root = generation.templates_root()

    def source(name: str) -> tuple[str, str, Any]:
        return (root / name).read_text(encoding="utf-8"), str(root / name), lambda: True

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(source),
        # Compiling the templates was a third of a render in a fresh process (each release, lint
        # and test subprocess): the compiled code is kept per machine, keyed by the template's
        # path and checked against its source's hash, so an edited template compiles again.
        bytecode_cache=_bytecode_cache(),
        # Helm owns {{ }}: Jinja uses brackets so Go template expressions pass through untouched.
        block_start_string="[%",
        block_end_string="%]",
        variable_start_string="[[",
        variable_end_string="]]",
        comment_start_string="[#",
        comment_end_string="#]",
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["q"] = _yaml_str
    env.filters["hq"] = _helm_str
    env.filters["block"] = _block
    env.globals["kept_yaml"] = kept.manifest_block
    return env


@dataclass(frozen=True)
class Envelope:
    """One compute mode's resource envelope, in the manifest's quantity strings."""

    mode: str
    required_cpu: str
    limited_cpu: str
    required_memory: str
    limited_memory: str
    required_disk: str
    limited_disk: str
    gpu_memory: str | None  # the request
    gpu_limit: str | None  # the limit; None: none declared


def envelopes(app: App, *, shared: bool = False) -> list[Envelope]:
    """Each mode's envelope: the engine's resources, plus llm-init's in the shared form."""
    r = app.resources
    s = llmbase.sized(app) if shared else None
    out = []
    for mode in app.modes:
        gpu = quantity.mib_string(r.gpu_memory_mib) if mode != "cpu" and isinstance(r.gpu_memory_mib, int) else None
        gpu_limit = gpu
        if r.gpu is not None and mode != "cpu":  # declared apart (an imported chart's envelope)
            gpu, gpu_limit = r.gpu.request, r.gpu.limit
        out.append(
            Envelope(
                mode=mode,
                required_cpu=s.envelope_cpu[0] if s else quantity.canonical_cpu(r.cpu.request),
                limited_cpu=s.envelope_cpu[1] if s else quantity.canonical_cpu(r.cpu.limit),
                required_memory=s.envelope_memory[0] if s else r.memory.request,
                limited_memory=s.envelope_memory[1] if s else r.memory.limit,
                required_disk=r.disk.request,
                limited_disk=r.disk.limit,
                gpu_memory=gpu,
                gpu_limit=gpu_limit,
            )
        )
    return out


def legacy_envelope(app: App, target: TargetProfile) -> tuple[tuple[int, int], tuple[str, str]]:
    """The flat 0.10.0 envelope (CPU in whole cores, memory): the engine's requests and limits,
    plus the proxy client's in the v2 shared form, where the administrator's install runs both."""
    r = app.resources
    cpu, mem = [r.cpu.request, r.cpu.limit], [r.memory.request, r.memory.limit]
    if sharedv2.active(app, target):
        cpu = [llmbase.add_quantities(a, b, cpu=True) for a, b in zip(cpu, sharedv2.CLIENT_CPU, strict=True)]
        mem = [llmbase.add_quantities(a, b, cpu=False) for a, b in zip(mem, sharedv2.CLIENT_MEMORY, strict=True)]
    return (quantity.whole_cores(cpu[0]), quantity.whole_cores(cpu[1])), (mem[0], mem[1])


def _smaller(a: str, b: str) -> str:
    return a if quantity.parse(a) <= quantity.parse(b) else b


def _download_files(app: App) -> str:
    """One `name|size|sha256|urlpath` line per model file, for the download script: the path under
    the hub's endpoint, percent-encoded per segment (a space, '+' or '[' in a file name is data)."""
    base = f"{quote(app.model.repo)}/resolve/{quote(app.model.revision)}"
    return "\n".join(f"{f.name}|{f.size or ''}|{f.sha256 or ''}|{base}/{quote(f.name)}" for f in app.model.files)


def context(app: App, target: TargetProfile) -> dict[str, Any]:
    argv = engines.container_args(app)
    args = [_helm_str(a) for a in argv]
    if "cpu" in app.modes and isinstance(app, LlamaCppApp):
        # cpu mode keeps every layer on the host: swap the --n-gpu-layers value at install time.
        i = argv.index(engines.llamacpp.GPU_LAYERS_FLAG) + 1
        args[i] = '{{ if eq $mode "cpu" }}"0"{{ else }}' + _helm_str(argv[i]) + "{{ end }}"
    r = app.resources
    entry = app.changelog_entry
    shared = llmbase.active(app, target)
    return {
        "llm": llmbase.context(app) if shared else None,
        "kept": app.olares,
        "kept_options": kept_options(app, target),
        "v2": sharedv2.context(app) if sharedv2.active(app, target) else None,
        "app": app,
        "target": target,
        "version": olares.chart_version(app.version, target),
        "image": app.engine.image.ref,
        "args": args,
        "container": engines.container_name(app),
        "envelopes": envelopes(app, shared=shared),
        "has_cpu_mode": "cpu" in app.modes,
        "gpu": "nvidia" in app.modes,
        "cpu": (quantity.canonical_cpu(r.cpu.request), quantity.canonical_cpu(r.cpu.limit)),
        "legacy_cpu": legacy_envelope(app, target)[0],
        "legacy_memory": legacy_envelope(app, target)[1],
        "download_cpu": (_smaller(DOWNLOAD_CPU[0], r.cpu.request), _smaller(DOWNLOAD_CPU[1], r.cpu.limit)),
        "download_memory": (_smaller(DOWNLOAD_MEMORY[0], r.memory.request), _smaller(DOWNLOAD_MEMORY[1], r.memory.limit)),
        "models_mount": engines.MODELS_MOUNT,
        "model_dir": engines.model_dir(app),
        "snapshot_cache": engines.snapshot_cache(app),
        "download_files": _download_files(app),
        "offline_engine": app.engine.kind == "vllm",
        "full_description": app.full_description or app.description,
        "upgrade": {loc: upgrade_description(entry.model_dump(mode="json"), loc) if entry else ""
                    for loc in app.all_locales},
        "texts": _locale_texts(app),
        "download_script": "" if shared else _environment().get_template("download.sh").render(),
        "wrapper_script": _environment().get_template("llmbase/engine.sh").render() if shared else "",
        "adopt_script": _environment().get_template("llmbase/adopt.sh").render() if shared and app.model.adopt else "",
    }


def kept_options(app: App, target: TargetProfile) -> dict[str, Any] | None:
    """An imported chart's options as written, its olares dependency in the target's spelling when
    it is the same window (a legacy chart's `>=1.12.3-0` is `>=1.12.3-0,<1.12.6`: 1.12.6+ refuses
    0.10.0 manifests), so that the release records the window the package states."""
    from olares_pack import equivalence

    kept_ = getattr(app, "olares", None)
    if kept_ is None or kept_.options is None:
        return None
    opts = dict(kept_.options)
    deps = opts.get("dependencies")
    if isinstance(deps, list):
        m = {"olaresManifest.version": target.manifest_version}
        out = []
        for d in deps:
            if isinstance(d, dict) and d.get("name") == "olares" and isinstance(d.get("version"), str):
                ours = {**d, "version": target.dependency}
                same = equivalence._options({**m, "options": {"dependencies": [d]}}) == \
                    equivalence._options({**m, "options": {"dependencies": [ours]}})
                d = ours if same else d
            out.append(d)
        opts["dependencies"] = out
    return opts


def _locale_texts(app: App) -> dict[str, dict[str, str]]:
    texts = {"en-US": {"title": app.title, "description": app.description,
                       "full_description": app.full_description or app.description}}
    for loc, t in app.locales.items():
        texts[loc] = {"title": t.title, "description": t.description,
                      "full_description": t.full_description or t.description}
    return texts


# Chart files and the template each one comes from. Per-locale i18n files are added in render().
CHART_FILES = {
    "Chart.yaml": "Chart.yaml.j2",
    "values.yaml": "values.yaml.j2",
    "OlaresManifest.yaml": "OlaresManifest.yaml.j2",
    "owners": "owners.j2",
    ".helmignore": "helmignore.j2",
    "templates/deployment.yaml": "deployment.yaml.j2",
    "templates/service.yaml": "service.yaml.j2",
    "templates/secret.yaml": "secret.yaml.j2",
    "templates/configmap.yaml": "configmap.yaml.j2",
}

# The shared form (llmbase.active): the engine and llm-init Deployments, the engine's wrapper.
SHARED_CHART_FILES = {
    "Chart.yaml": "Chart.yaml.j2",
    "values.yaml": "llmbase/values.yaml.j2",
    "OlaresManifest.yaml": "OlaresManifest.yaml.j2",
    "owners": "owners.j2",
    ".helmignore": "helmignore.j2",
    "templates/engine.yaml": "llmbase/engine.yaml.j2",
    "templates/llm-init.yaml": "llmbase/llm-init.yaml.j2",
    "templates/wrappers.yaml": "llmbase/wrappers.yaml.j2",
    "templates/secret.yaml": "secret.yaml.j2",
}


# The v2 shared form (sharedv2.active): the per-user form's objects in the shared server
# sub-chart (for the administrator only), a proxy client per user; the root chart, which the
# installer never installs, holds the manifest and the texts.
V2_ROOT_FILES = {
    "Chart.yaml": "Chart.yaml.j2",
    "values.yaml": "sharedv2/values.yaml.j2",
    "OlaresManifest.yaml": "OlaresManifest.yaml.j2",
    "owners": "owners.j2",
    ".helmignore": "helmignore.j2",
    "templates/keep": "sharedv2/keep.j2",
}
V2_SERVER_TEMPLATES = {
    "templates/deployment.yaml": "deployment.yaml.j2",
    "templates/service.yaml": "service.yaml.j2",
    "templates/shared-entrance.yaml": "sharedv2/shared-entrance.yaml.j2",
    "templates/secret.yaml": "secret.yaml.j2",
    "templates/configmap.yaml": "configmap.yaml.j2",
}


def _render_v2(env: jinja2.Environment, ctx: dict[str, Any]) -> dict[str, str]:
    app, v2 = ctx["app"], ctx["v2"]
    files = {path: env.get_template(tpl).render({**ctx, "chart_name": app.name}) for path, tpl in V2_ROOT_FILES.items()}
    for chart, what in ((v2["server"], "the shared engine"), (v2["client"], "the per-user client")):
        sub = {**ctx, "chart_name": chart, "chart_description": f"{app.description} ({what})"}
        files[f"{chart}/Chart.yaml"] = env.get_template("sharedv2/Chart.yaml.j2").render(sub)
        files[f"{chart}/values.yaml"] = env.get_template("sharedv2/values.yaml.j2").render(sub)
    for path, tpl in V2_SERVER_TEMPLATES.items():
        files[f"{v2['server']}/{path}"] = sharedv2.guarded(env.get_template(tpl).render(ctx))
    files[f"{v2['client']}/templates/client.yaml"] = env.get_template("sharedv2/client.yaml.j2").render(ctx)
    return files


def declared_target(app: App, name: str) -> TargetProfile:
    """The profile of target NAME, which APP must declare: a chart rendered for a target the app
    does not offer carries a manifest that no device of that line installs (a legacy-only app
    rendered for current writes 0.12.0 with apiVersion v2; a current-only one rendered for legacy
    writes 0.10.0 with v3). An imported chart keeps its own refusal (render/imported.py), which
    names `import --upgrade`."""
    from olares_pack.common.errors import InputError

    if name not in app.targets and not isinstance(app, ChartApp):
        raise InputError(f"{app.name} declares targets: {', '.join(app.targets)}; --target {name} is not one of them "
                         f"(add {name} to `targets:` in its app.yaml to render for it)")
    return olares.get(name)


def render(app: App, target: TargetProfile) -> dict[str, str]:
    """The chart's files, keyed by path relative to the chart folder, in sorted order."""
    if isinstance(app, ChartApp):
        from olares_pack.render import imported as chartrender

        return chartrender.render(app, target)
    env = _environment()
    if isinstance(app, GenericApp):
        return _render_generic(env, app, target)
    ctx = context(app, target)
    chart_files = SHARED_CHART_FILES if ctx["llm"] else CHART_FILES
    if ctx["llm"]:
        ctx = {**ctx, **ctx["llm"]}
    if ctx["v2"]:
        files = _render_v2(env, ctx)
    elif app.workload is not None:
        # an imported chart's workload and objects, kept: olares-pack's own ones are not written
        files = {path: env.get_template(tpl).render(ctx) for path, tpl in chart_files.items()
                 if path not in ("templates/deployment.yaml", "templates/service.yaml", "templates/configmap.yaml",
                                 "templates/secret.yaml")}
        files["templates/deployment.yaml"] = kept.deployment(app, engines.container_args(app))
        if app.objects:
            files["templates/objects.yaml"] = kept.objects(app)
    else:
        files = {path: env.get_template(tpl).render(ctx) for path, tpl in chart_files.items()}
    for loc in app.all_locales:
        files[f"i18n/{loc}/OlaresManifest.yaml"] = env.get_template("i18n.yaml.j2").render(ctx, locale=loc)
    return dict(sorted(kept.carried(app, files).items()))


def _render_generic(env: jinja2.Environment, app: GenericApp, target: TargetProfile) -> dict[str, str]:
    """A generic GPU server: the manifest from the app's own fields and what its chart states
    (olares), the Deployment and the other objects as the chart writes them, the server's image,
    command and arguments."""
    entry = app.changelog_entry
    ctx = {"llm": None, "v2": None, "kept": app.olares, "kept_options": kept_options(app, target), "app": app, "target": target,
           "version": olares.chart_version(app.version, target), "envelopes": envelopes(app),
           "has_cpu_mode": False, "gpu": True, "legacy_cpu": legacy_envelope(app, target)[0],
           "legacy_memory": legacy_envelope(app, target)[1], "full_description": app.full_description or app.description,
           "upgrade": {loc: upgrade_description(entry.model_dump(mode="json"), loc) if entry else ""
                       for loc in app.all_locales},
           "texts": _locale_texts(app)}
    files = {path: env.get_template(tpl).render(ctx) for path, tpl in CHART_FILES.items()
             if not path.startswith("templates/")}
    files["templates/deployment.yaml"] = kept.deployment(app, list(app.engine.args))
    if app.objects:
        files["templates/objects.yaml"] = kept.objects(app)
    for loc in app.all_locales:
        files[f"i18n/{loc}/OlaresManifest.yaml"] = env.get_template("i18n.yaml.j2").render(ctx, locale=loc)
    return dict(sorted(kept.carried(app, files).items()))
