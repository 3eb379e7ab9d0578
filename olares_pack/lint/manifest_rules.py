"""The installer's manifest rules (framework/oac), for both manifest generations."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import semver

from olares_pack.common import quantity
from olares_pack.common.errors import InputError
from olares_pack.common.naming import NAME_RE, RESERVED_NAMES, URL_RE
from olares_pack.common.yamlsrc import safe_load
from olares_pack.lint.context import LEGACY_WINDOW, MANIFEST, ChartContext
from olares_pack.lint.findings import make
from olares_pack.olares import CURRENT, KNOWN_RELEASES, LEGACY, admits, parse_os_version

Rule = Callable[[ChartContext], None]

METADATA_KEYS = {"name", "appid", "title", "description", "icon", "version", "categories", "tags", "rating", "target", "type"}
ENTRANCE_NAME = re.compile(r"^[a-z0-9A-Z-]*$")
ENTRANCE_HOST = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])$")
MODES = {"cpu", "nvidia", "nvidia-gb10", "apple-m", "amd-gpu", "amd-apu", "strix-halo", "mthreads-m1000", "intel"}
GPU_MODES = {"nvidia", "amd-gpu"}
MODE_ARCH = {"nvidia": "amd64", "amd-gpu": "amd64", "strix-halo": "amd64", "nvidia-gb10": "arm64", "mthreads-m1000": "arm64"}
ENVELOPE = ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk")
FLAT = (*ENVELOPE, "requiredGpu", "limitedGpu")
# GPU memory keys of a 0.12.0 envelope; older linters spelled them requiredGpu/limitedGpu.
GPU_PAIRS = (("requiredGPUMemory", "limitedGPUMemory"), ("requiredGpu", "limitedGpu"))


def chart_name(ctx: ChartContext) -> None:
    names = {"folder": ctx.source.folder, "Chart.yaml name": str(ctx.chart.get("name", "")), "metadata.name": ctx.name}
    if len(set(names.values())) != 1:
        shown = ", ".join(f"{k} {v!r}" for k, v in names.items())
        ctx.add("chart.name", f"names differ: {shown}", file=MANIFEST, path="metadata.name", loc=("metadata", "name"),
                hint="the folder, Chart.yaml name and metadata.name must be the same")
    name = ctx.name
    if name and not NAME_RE.match(name):
        ctx.add("chart.name", f"{name!r} is not an Olares app name (^[a-z0-9]{{1,30}}$, no hyphens)", file=MANIFEST,
                path="metadata.name", loc=("metadata", "name"))
    if name in RESERVED_NAMES:
        # Only the official catalogue's pull-request check refuses reserved names, not the installer.
        ctx.add("chart.name", f"{name!r} is a name the official catalogue reserves (its pull-request check refuses it)",
                file=MANIFEST, path="metadata.name", loc=("metadata", "name"), severity="warning")


def chart_version(ctx: ChartContext) -> None:
    chart_v = str(ctx.chart.get("version", ""))
    md = ctx.manifest.get("metadata") if isinstance(ctx.manifest.get("metadata"), dict) else {}
    meta_v = str(md.get("version", ""))
    for label, v, file, path, loc in (("Chart.yaml version", chart_v, "Chart.yaml", "version", None),
                                      ("metadata.version", meta_v, MANIFEST, "metadata.version", ("metadata", "version"))):
        try:
            semver.Version.parse(v)
        except ValueError:
            try:
                parse_os_version(v)
            except InputError:
                ctx.add("chart.version", f"{label} {v!r} is not a semantic version", file=file, path=path, loc=loc)
                return
            # Helm and the installer read versions loosely (Masterminds NewVersion): leading zeros
            # install; only the strict semver of `olares-cli market upgrade` refuses them
            # (Helm's chart loader and the installer use Masterminds semver NewVersion).
            ctx.add("chart.version", f"{label} {v!r} installs (read loosely) but is not strict semver: "
                    "`olares-cli market upgrade` refuses it", file=file, path=path, loc=loc, severity="warning",
                    hint="drop the leading zeros in the next version")
    if chart_v != meta_v:
        ctx.add("chart.version", f"metadata.version {meta_v} differs from Chart.yaml version {chart_v}", file=MANIFEST,
                path="metadata.version", loc=("metadata", "version"), hint="copy one version into both, or render with olares-pack")
    app_version, version_name = ctx.chart.get("appVersion"), ctx.spec.get("versionName")
    if app_version is not None and version_name is not None and str(app_version) != str(version_name):
        ctx.add("chart.app-version", f"spec.versionName {version_name!r} differs from Chart.yaml appVersion {app_version!r}",
                file=MANIFEST, path="spec.versionName", loc=("spec", "versionName"))


def schema_version(ctx: ChartContext) -> None:
    if ctx.config_version is None:
        ctx.add("manifest.schema-version", f"olaresManifest.version {ctx.manifest.get('olaresManifest.version')!r} is not a semantic version",
                file=MANIFEST, path="olaresManifest.version", loc=("olaresManifest.version",))
    if ctx.api_version not in ("v1", "v2", "v3"):
        ctx.add("manifest.schema-version", f"apiVersion {ctx.manifest.get('apiVersion')!r} is not v1, v2 or v3",
                file=MANIFEST, path="apiVersion", loc=("apiVersion",))
    if ctx.api_version == "v2":
        subs = ctx.spec.get("subCharts") or []
        if not subs:
            ctx.add("manifest.schema-version", "apiVersion v2 requires spec.subCharts", file=MANIFEST, path="spec.subCharts",
                    hint="a single-workload app is apiVersion v1 (Olares 1.12.3-1.12.5) or v3 (1.12.6+)")
        elif not any(isinstance(s, dict) and s.get("shared") for s in subs):
            ctx.add("manifest.schema-version", "spec.subCharts needs an entry with shared: true", file=MANIFEST, path="spec.subCharts")


def metadata(ctx: ChartContext) -> None:
    md = ctx.manifest.get("metadata")
    if not isinstance(md, dict):
        ctx.add("manifest.metadata", "metadata is missing", file=MANIFEST, path="metadata")
        return
    for key in ("name", "title", "description", "icon", "version"):
        if not md.get(key):
            ctx.add("manifest.metadata", f"metadata.{key} is required", file=MANIFEST, path=f"metadata.{key}", loc=("metadata",))
    title = str(md.get("title") or "")
    if title and not 1 <= len(title) <= 30:
        ctx.add("manifest.metadata", f"metadata.title is {len(title)} characters (1-30)", file=MANIFEST, path="metadata.title",
                loc=("metadata", "title"))
    icon = md.get("icon")
    if icon and not URL_RE.match(str(icon)):
        ctx.add("manifest.metadata", f"metadata.icon {icon!r} is not an http(s) URL", file=MANIFEST, path="metadata.icon",
                loc=("metadata", "icon"))
    if ctx.modern:
        for key in sorted(set(md) - METADATA_KEYS):
            # The installer's sources hold a check of metadata fields, but its Validate does not call
            # it in the current release (framework/oac appconfig.go): charts with extra keys install. A warning.
            ctx.add("manifest.metadata", f"unknown metadata key {key!r}: installs today (the installer's metadata "
                    "field check is not called by its Validate), may be refused when it is", file=MANIFEST,
                    path=f"metadata.{key}", loc=("metadata", key), severity="warning")


def entrances(ctx: ChartContext) -> None:
    ents = ctx.manifest.get("entrances")
    if not isinstance(ents, list) or not 1 <= len(ents) <= 10:
        n = len(ents) if isinstance(ents, list) else 0
        ctx.add("manifest.entrances", f"{n} entrances declared (1-10 required)", file=MANIFEST, path="entrances", loc=("entrances",))
        if not isinstance(ents, list):
            return
    seen: set[str] = set()
    for i, e in enumerate(ents):
        p = f"entrances[{i}]"
        if not isinstance(e, dict):
            ctx.add("manifest.entrances", "an entrance is a mapping", file=MANIFEST, path=p)
            continue
        name = str(e.get("name", ""))
        if not ENTRANCE_NAME.match(name) or len(name) > 63:
            ctx.add("manifest.entrances", f"name {name!r} must match ^[a-z0-9A-Z-]*$ (at most 63)", file=MANIFEST, path=f"{p}.name", loc=("entrances", i, "name"))
        if name in seen:
            ctx.add("manifest.entrances", f"duplicate entrance name {name!r}", file=MANIFEST, path=f"{p}.name", loc=("entrances", i, "name"))
        seen.add(name)
        host = str(e.get("host", ""))
        if not ENTRANCE_HOST.match(host) or len(host) > 63:
            ctx.add("manifest.entrances", f"host {host!r} must be a Service name (^[a-z]([-a-z0-9]*[a-z0-9])$, at most 63)", file=MANIFEST, path=f"{p}.host", loc=("entrances", i, "host"))
        port = e.get("port")
        if not isinstance(port, int) or port <= 0:
            ctx.add("manifest.entrances", f"port {port!r} must be > 0", file=MANIFEST, path=f"{p}.port", loc=("entrances", i, "port"))
        title = str(e.get("title") or "")
        if not 1 <= len(title) <= 30:
            ctx.add("manifest.entrances", f"title {title!r} must be 1-30 characters", file=MANIFEST, path=f"{p}.title", loc=("entrances", i))
        if e.get("authLevel", "") not in ("", "public", "private", "internal"):
            ctx.add("manifest.entrances", f"authLevel {e.get('authLevel')!r} is not one of public, private, internal", file=MANIFEST, path=f"{p}.authLevel", loc=("entrances", i, "authLevel"))
        icon = e.get("icon")
        if icon and not URL_RE.match(str(icon)):
            ctx.add("manifest.entrances", f"icon {icon!r} is not an http(s) URL", file=MANIFEST, path=f"{p}.icon", loc=("entrances", i, "icon"))
        if e.get("openMethod", "") not in ("", "default", "iframe", "window"):
            ctx.add("manifest.entrances", f"openMethod {e.get('openMethod')!r} is not one of default, iframe, window", file=MANIFEST, path=f"{p}.openMethod", loc=("entrances", i, "openMethod"))


def _mask_strings(text: str) -> list[str]:
    """The manifest's lines with every brace inside a YAML string (single- or double-quoted on one
    line, or a |/> block scalar) blanked, so what remains is template syntax outside any value."""
    out: list[str] = []
    block_indent = -1
    for line in text.split("\n"):
        body = line.rstrip("\r")
        indent = len(body) - len(body.lstrip(" "))
        blank = not body.strip()
        if block_indent >= 0 and (blank or indent > block_indent):
            out.append(body.replace("{", " ").replace("}", " "))
            continue
        block_indent = -1
        chars = list(body)
        quote = ""
        j = 0
        while j < len(chars):
            c = chars[j]
            if quote == '"':
                if c == "\\" and j + 1 < len(chars):
                    if chars[j + 1] in "{}":
                        chars[j + 1] = " "
                    j += 2
                    continue
                if c == '"':
                    quote = ""
                elif c in "{}":
                    chars[j] = " "
            elif quote == "'":
                if c == "'":
                    if j + 1 < len(chars) and chars[j + 1] == "'":
                        j += 2
                        continue
                    quote = ""
                elif c in "{}":
                    chars[j] = " "
            elif c in "\"'":
                quote = c
            elif c == "#":
                break
            elif c in "|>" and re.fullmatch(r"[\s+\-0-9]*(#.*)?", body[j + 1:]):
                block_indent = indent
            j += 1
        out.append("".join(chars))
    return out


def static_manifest(ctx: ChartContext) -> None:
    """0.12.0 manifests are read without rendering: '{{' or '}}' outside a YAML string is a leftover
    Helm placeholder (framework/oac checkNoTemplateSyntax)."""
    text = ctx.source.files.get(MANIFEST, "")
    if not ctx.declared_modern or ("{{" not in text and "}}" not in text):
        return  # masking only blanks braces: a text without any has nothing to report
    for n, line in enumerate(_mask_strings(text), 1):
        m = re.search(r"\{\{|\}\}", line)
        if m:
            ctx.findings.append(make("manifest.static", ctx.label, f"line {n}: {m.group(0)!r} is template syntax outside any "
                                     "YAML string; a 0.12.0 manifest is not rendered", file=MANIFEST, line=n,
                                     hint="quote the value or use a |/> block scalar; per-user values belong in templates"))


def _check_quantity(ctx: ChartContext, value: Any, path: str, loc: tuple[Any, ...]) -> bool:
    if str(value).strip() == "-1":  # the installer's auto-compute sentinel
        return False
    try:
        quantity.parse(value)
        return True
    except quantity.QuantityError:
        ctx.add("manifest.resources", f"{path} {value!r} is not a Kubernetes quantity", file=MANIFEST, path=path, loc=loc)
        return False


def _pair(ctx: ChartContext, env: dict[str, Any], req: str, lim: str, prefix: str, loc: tuple[Any, ...]) -> None:
    if req in env and lim in env and _check_quantity(ctx, env[req], prefix + req, (*loc, req)) and \
            _check_quantity(ctx, env[lim], prefix + lim, (*loc, lim)):
        if quantity.parse(env[lim]) < quantity.parse(env[req]):
            ctx.add("manifest.resources", f"{prefix}{lim} ({env[lim]}) must be >= {prefix}{req} ({env[req]})",
                    file=MANIFEST, path=prefix + lim, loc=(*loc, lim))


def resources(ctx: ChartContext) -> None:
    spec = ctx.spec
    accel = ctx.accelerators
    if accel:
        for key in FLAT:
            if spec.get(key) not in (None, ""):
                ctx.add("manifest.resources", f"spec.{key} must be empty when spec.accelerator is set", file=MANIFEST,
                        path=f"spec.{key}", loc=("spec", key), hint="pick one: envelopes in spec.accelerator, or the flat fields")
    if ctx.modern and ctx.api_version != "v2" and accel:
        key = "accelerator" if "accelerator" in spec else "resources"
        for i, env in enumerate(accel):
            prefix, loc = f"spec.{key}[{i}].", ("spec", key, i)
            mode = env.get("mode")
            if mode not in MODES:
                # Newer devices add modes; an unknown one is worth a look, not a refusal.
                ctx.add("manifest.resources", f"mode {mode!r} is not one this linter knows ({', '.join(sorted(MODES))})",
                        file=MANIFEST, path=prefix + "mode", loc=(*loc, "mode"), severity="warning")
                continue
            for k in ENVELOPE:
                if env.get(k) in (None, ""):
                    ctx.add("manifest.resources", f"{prefix}{k} is required for a complete envelope (mode={mode})", file=MANIFEST, path=prefix + k, loc=loc)
            gpu_keys = [k for pair in GPU_PAIRS for k in pair if env.get(k) not in (None, "")]
            if mode in GPU_MODES and not any(env.get(r) and env.get(lim) for r, lim in GPU_PAIRS):
                ctx.add("manifest.resources", f"mode={mode} needs requiredGPUMemory and limitedGPUMemory", file=MANIFEST, path=prefix + "requiredGPUMemory", loc=loc)
            if mode not in GPU_MODES and gpu_keys:
                ctx.add("manifest.resources", f"{prefix}{gpu_keys[0]} must be empty for mode={mode}", file=MANIFEST, path=prefix + gpu_keys[0], loc=(*loc, gpu_keys[0]))
            for req, lim in (("requiredCpu", "limitedCpu"), ("requiredMemory", "limitedMemory"), ("requiredDisk", "limitedDisk"), *GPU_PAIRS):
                _pair(ctx, env, req, lim, prefix, loc)
        return
    if ctx.modern and not accel and not any(spec.get(k) for k in ENVELOPE):
        ctx.add("manifest.resources", "declare spec.accelerator envelopes or the flat spec.requiredCpu/limitedCpu/... fields", file=MANIFEST, path="spec")
        return
    if not ctx.modern:
        for k in ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk"):
            if spec.get(k) in (None, ""):
                ctx.add("manifest.resources", f"spec.{k} is required below manifest 0.12.0", file=MANIFEST, path=f"spec.{k}", loc=("spec",))
    for req, lim in (("requiredCpu", "limitedCpu"), ("requiredMemory", "limitedMemory"), ("requiredDisk", "limitedDisk"), ("requiredGpu", "limitedGpu")):
        _pair(ctx, spec, req, lim, "spec.", ("spec",))


def mode_arch(ctx: ChartContext) -> None:
    arches = ctx.spec.get("supportArch") or []
    for i, a in enumerate(arches):
        if a not in ("amd64", "arm64"):
            ctx.add("manifest.mode-arch", f"spec.supportArch entry {a!r} is not amd64 or arm64", file=MANIFEST, path="spec.supportArch", loc=("spec", "supportArch"))
        elif a in arches[:i]:
            ctx.add("manifest.mode-arch", f"spec.supportArch lists {a!r} twice", file=MANIFEST, path=f"spec.supportArch[{i}]",
                    loc=("spec", "supportArch", i))
    if not ctx.modern:
        return
    for env in ctx.accelerators:
        need = MODE_ARCH.get(str(env.get("mode")))
        if need and need not in arches:
            ctx.add("manifest.mode-arch", f"mode={env.get('mode')} requires spec.supportArch to contain {need}", file=MANIFEST,
                    path="spec.supportArch", loc=("spec",))


def supported_gpu(ctx: ChartContext) -> None:
    if ctx.modern and ctx.spec.get("supportedGpu"):
        ctx.add("manifest.supported-gpu", "spec.supportedGpu must be empty on 0.12.0; declare GPU envelopes in spec.accelerator",
                file=MANIFEST, path="spec.supportedGpu", loc=("spec", "supportedGpu"))


def workload_replicas(ctx: ChartContext) -> None:
    if ctx.modern and ctx.api_version != "v2" and not ctx.workload_replicas:
        ctx.add("manifest.workload-replicas", "workloadReplicas is required on 0.12.0 (one entry per Deployment/StatefulSet)",
                file=MANIFEST, path="workloadReplicas", hint="add workloadReplicas: {<deployment>: 1} and wire replicas to .Values.workloads.<deployment>.replicaCount")


# Versions just outside each window, as the installer samples them.
WINDOW_PROBES = {
    "v3": ({"1.12.6", "1.12.7", "1.13.0"}, {"1.12.5", "1.12.5-20260501", "1.12.3", "1.11.0"}),
    "pre-v3": ({"1.12.3", "1.12.5"}, {"1.12.6-0", "1.12.6", "1.13.0", "1.12.2", "1.11.0"}),
}


def olares_dependency(ctx: ChartContext) -> None:
    dep = ctx.olares_dependency
    if dep is None and ctx.modern:
        ctx.add("manifest.olares-dependency", "options.dependencies needs {name: olares, type: system, version: ...}",
                file=MANIFEST, path="options.dependencies", hint=f"'{CURRENT.dependency}' for apiVersion v3")
        return
    constraint = str(dep.get("version") or "") if dep else LEGACY_WINDOW
    window = "v3" if ctx.api_version == "v3" else "pre-v3"
    expected = CURRENT.dependency if window == "v3" else LEGACY.dependency
    try:
        must, must_not = WINDOW_PROBES[window]
        wrong = sorted(v for v in must_not if admits(constraint, v)) if ctx.modern else []
        missing = sorted(v for v in must if not admits(constraint, v)) if ctx.modern else []
    except InputError as exc:
        ctx.add("manifest.olares-dependency", str(exc), file=MANIFEST, path="options.dependencies")
        return
    if wrong or missing:
        detail = f"admits {', '.join(wrong)}" if wrong else f"excludes {', '.join(missing)}"
        ctx.add("manifest.olares-dependency", f"olares dependency {constraint!r} {detail}; apiVersion {ctx.api_version} "
                f"requires {expected!r}", file=MANIFEST, path="options.dependencies", hint=f"version: '{expected}'")
    try:
        ok = admits(constraint, ctx.olares)
    except InputError:
        return
    if ok:
        return
    gen = f"{ctx.manifest.get('olaresManifest.version')}/{ctx.api_version}"
    if ctx.olares_explicit:
        hint = (f"v1/v2 manifests are pinned to {LEGACY.dependency}: render the current target (0.12.0/v3)"
                if ctx.api_version in ("v1", "v2") else "")
        ctx.add("manifest.os-window", f"Olares {ctx.olares} is outside this chart's olares dependency {constraint!r} "
                f"(manifest {gen}): the device refuses to install it", file=MANIFEST, path="options.dependencies", hint=hint)
    else:
        ctx.add("manifest.os-window", f"the olares dependency {constraint!r} admits no Olares release olares-pack knows "
                f"({', '.join(KNOWN_RELEASES)}): checked with the rules of {ctx.olares}", file=MANIFEST,
                path="options.dependencies", severity="warning", hint="--olares VERSION picks the rule set")


def provider(ctx: ChartContext) -> None:
    if not ctx.modern:
        return
    if ctx.manifest.get("provider"):
        ctx.add("manifest.provider", "top-level provider must be empty on 0.12.0", file=MANIFEST, path="provider", loc=("provider",))
    perm = ctx.manifest.get("permission")
    if isinstance(perm, dict) and perm.get("provider"):
        ctx.add("manifest.provider", "permission.provider must be empty on 0.12.0", file=MANIFEST, path="permission.provider",
                loc=("permission", "provider"))


def olares_user(ctx: ChartContext) -> None:
    if not ctx.modern:
        return
    for i, e in enumerate(ctx.manifest.get("envs") or []):
        if isinstance(e, dict) and str(e.get("envName", "")).startswith("OLARES_USER"):
            ctx.add("manifest.olares-user", f"envs[{i}].envName {e.get('envName')!r} starts with OLARES_USER", file=MANIFEST,
                    path=f"envs[{i}].envName", loc=("envs", i, "envName"),
                    hint="declare an app-local name with valueFrom: {envName: OLARES_SYSTEM_...}")
    for path, text in sorted(ctx.source.files.items()):
        if (path.startswith("templates/") or path == "values.yaml") and "OLARES_USER" in text:
            line = next(i for i, t in enumerate(text.splitlines(), 1) if "OLARES_USER" in t)
            ctx.add("manifest.olares-user", f"the string OLARES_USER appears on line {line}", file=path,
                    hint="0.12.0 charts read system values through envs[].valueFrom and .Values.olaresEnv.<local name>")


def api_timeout(ctx: ChartContext) -> None:
    if not ctx.engines():
        return
    opts = ctx.manifest.get("options") if isinstance(ctx.manifest.get("options"), dict) else {}
    if opts.get("apiTimeout") != 0:
        ctx.add("manifest.api-timeout", f"options.apiTimeout is {opts.get('apiTimeout', 'unset (15 s)')}: long generations are cut",
                file=MANIFEST, path="options.apiTimeout", hint="apiTimeout: 0 for streaming LLM APIs")


I18N_KEYS = {"metadata": {"title", "description"}, "spec": {"fullDescription", "upgradeDescription"}}


def i18n(ctx: ChartContext) -> None:
    import yaml

    locales = ctx.spec.get("locale") or []
    for path, text in sorted(ctx.source.files.items()):
        m = re.match(r"^i18n/([^/]+)/OlaresManifest\.yaml$", path)
        if not m:
            continue
        try:
            data = safe_load(text) or {}
        except yaml.YAMLError as exc:
            ctx.add("manifest.i18n", f"not valid YAML: {str(exc).splitlines()[0]}", file=path)
            continue
        if not isinstance(data, dict):
            ctx.add("manifest.i18n", "not a mapping", file=path)
            continue
        for section, value in data.items():
            allowed = I18N_KEYS.get(section)
            if allowed is None or not isinstance(value, dict):
                ctx.add("manifest.i18n", f"unexpected section {section!r}", file=path, severity="info")
                continue
            for key in sorted(set(value) - allowed):
                ctx.add("manifest.i18n", f"{section}.{key} is not a translatable text", file=path, severity="info")
        if locales and m.group(1) not in locales:
            ctx.add("manifest.i18n", f"locale {m.group(1)} has an i18n file but is not in spec.locale", file=path, severity="info")


_MAPPINGS = ("metadata", "spec", "permission", "options")
_LISTS = ("entrances",)


def decodes(ctx: ChartContext) -> None:
    """The (rendered) manifest decodes into the installer's types: every release decodes it into
    its AppConfiguration before anything else, and a mapping where a list belongs (or a port
    written as text) fails that decode."""
    m = ctx.manifest
    for key in _MAPPINGS:
        if m.get(key) is not None and not isinstance(m.get(key), dict):
            ctx.add("manifest.parse", f"{key} is a {type(m[key]).__name__}, not a mapping: the installer cannot decode the manifest",
                    file=MANIFEST, path=key, loc=(key,))
    for key in _LISTS:
        value = m.get(key)
        if value is not None and not isinstance(value, list):
            ctx.add("manifest.parse", f"{key} is a {type(value).__name__}, not a list: the installer cannot decode the manifest",
                    file=MANIFEST, path=key, loc=(key,))
        for i, e in enumerate(value if isinstance(value, list) else []):
            if not isinstance(e, dict):
                ctx.add("manifest.parse", f"{key}[{i}] is not a mapping: the installer cannot decode the manifest",
                        file=MANIFEST, path=f"{key}[{i}]", loc=(key, i))
            elif e.get("port") is not None and (isinstance(e.get("port"), bool) or not isinstance(e.get("port"), int)):
                ctx.add("manifest.parse", f"{key}[{i}].port {e.get('port')!r} is not a number: the installer cannot decode the manifest",
                        file=MANIFEST, path=f"{key}[{i}].port", loc=(key, i, "port"))


_DURATION = re.compile(r"^((?:[-+]?\d+(?:\.\d+)?([smhdwy]|us|ns|ms))+)$")


def options(ctx: ChartContext) -> None:
    """oac validate.go validateOptions, validatePermission: dependencies and policies complete,
    templateOnly with allowMultipleInstall, shared on v3 only, externalData from 0.12.0."""
    opts = ctx.manifest.get("options")
    opts = opts if isinstance(opts, dict) else {}
    for i, d in enumerate(opts.get("dependencies") or []):
        if not isinstance(d, dict):
            continue
        for key in ("name", "version", "type"):
            if not d.get(key):
                ctx.add("manifest.options", f"options.dependencies[{i}].{key} is required", file=MANIFEST,
                        path=f"options.dependencies[{i}].{key}", loc=("options", "dependencies", i))
        if d.get("type") and d.get("type") not in ("system", "application", "middleware"):
            ctx.add("manifest.options", f"options.dependencies[{i}].type {d.get('type')!r} is not system, application or middleware",
                    file=MANIFEST, path=f"options.dependencies[{i}].type", loc=("options", "dependencies", i, "type"))
    for i, pol in enumerate(opts.get("policies") or []):
        if not isinstance(pol, dict):
            continue
        for key in ("uriRegex", "level"):
            if not pol.get(key):
                ctx.add("manifest.options", f"options.policies[{i}].{key} is required", file=MANIFEST,
                        path=f"options.policies[{i}].{key}", loc=("options", "policies", i))
        duration = pol.get("validDuration")
        if duration and not _DURATION.match(str(duration)):
            ctx.add("manifest.options", f"options.policies[{i}].validDuration {duration!r} is malformed", file=MANIFEST,
                    path=f"options.policies[{i}].validDuration", loc=("options", "policies", i, "validDuration"))
    if opts.get("templateOnly") is True and opts.get("allowMultipleInstall") is not True:
        ctx.add("manifest.options", "options.templateOnly needs options.allowMultipleInstall: true", file=MANIFEST,
                path="options.allowMultipleInstall", loc=("options",))
    if opts.get("shared") is True and ctx.api_version != "v3":
        ctx.add("manifest.options", f"options.shared is only supported on apiVersion v3 (not {ctx.api_version})", file=MANIFEST,
                path="options.shared", loc=("options", "shared"))
    perm = ctx.manifest.get("permission")
    if isinstance(perm, dict) and perm.get("externalData") is True and not ctx.modern:
        ctx.add("manifest.options", "permission.externalData needs olaresManifest.version 0.12.0 or later", file=MANIFEST,
                path="permission.externalData", loc=("permission", "externalData"))


RULES: list[Rule] = [decodes, chart_name, chart_version, schema_version, metadata, entrances, resources,
                     mode_arch, supported_gpu, workload_replicas, olares_dependency, provider, olares_user, i18n, options]
POST_RENDER: list[Rule] = [api_timeout]
