"""Do two charts make the same app? A semantic comparison of an original chart with another
render of it (the typed render of `import --structured`, the other side of `diff`): per workload
the image, command, arguments, environment, ports, mounts, probes and resources of each
container; the Services; in OlaresManifest.yaml the resource envelope, entrances, permissions,
options, the form (per-user or shared) and the texts. Differences are data with a stable kind
(KINDS), so that a maintainer can accept a kind on purpose (`import --structured --accept KIND`).

What is compared is what the installer makes of each chart: both are rendered with the
installer's values (owner == admin, each GPU mode the original declares), ConfigMaps read into
the environment they feed and `$(VAR)` references resolved, so that a value written inline or
read from a ConfigMap is the same value. Names and labels that only tie objects together are not
compared; what a user reaches (entrance hosts and ports, Service names and ports) is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from olares_pack.common import quantity
from olares_pack.common.errors import InputError
from olares_pack.engines.detect import configmaps, resolve_env

# kind -> what a difference of that kind means for the app's users. Stable ids: reports, `--accept`
# and release records name them.
KINDS: dict[str, str] = {
    "undecidable": "the comparison cannot be made (a chart does not render, or holds values the tool cannot resolve)",
    "manifest.version": "olaresManifest.version or apiVersion differ: another installer generation",
    "manifest.form": "per-user vs shared form (onlyAdmin, sharedEntrances, appScope, sub-charts): who gets the app, and its URLs",
    "manifest.entrances": "entrances differ (name, host, port, title, auth level, open method): the app's URLs or access",
    "manifest.envelope": "the resource envelope (required/limited CPU, memory, disk, GPU) differs",
    "manifest.gpu-limit-lower": "the GPU limit is lower than the original's: the engine may not fit",
    "manifest.permission": "permissions differ (app data, cache, user data, system providers)",
    "manifest.options": "options differ (dependencies, API timeout, policies, …)",
    "manifest.envs": "the app's environment settings (envs) differ",
    "manifest.texts": "texts differ (title, description, icon, categories, developer, links, license)",
    "workload.missing": "a workload of the original is not in the other render",
    "workload.added": "the other render runs a workload the original does not",
    "workload.selector": "a workload's pod selector differs: immutable, the users' upgrade is refused",
    "container.missing": "a container of the original is not in the other render",
    "container.added": "the other render runs a container the original does not (e.g. a download step or a proxy)",
    "container.image": "a container runs another image",
    "container.command": "a container's command (its entrypoint, or the wrapper script around the engine) differs",
    "container.args": "a container's arguments differ",
    "container.env": "a container's environment differs",
    "container.ports": "a container's ports differ",
    "container.mounts": "a container's mounts differ (path, volume, content)",
    "container.probes": "a container's probes differ (when it is restarted or receives traffic)",
    "container.resources": "a container's requests or limits differ",
    "service.missing": "a Service of the original is not in the other render (a host other apps or entrances use)",
    "service.added": "the other render adds a Service",
    "service.ports": "a Service's ports differ",
}

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
# manifest keys compared per group; the texts' version-bound fields (version, upgradeDescription)
# are not: a typed import is the next version.
_ENVELOPE = ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk",
             "requiredGpu", "limitedGpu", "requiredGPU", "limitedGPU", "requiredGPUMemory", "limitedGPUMemory")
_TEXTS_MD = ("title", "description", "icon", "categories")
_TEXTS_SPEC = ("fullDescription", "developer", "submitter", "website", "sourceCode", "doc", "license", "locale",
               "versionName")


@dataclass(frozen=True)
class Difference:
    kind: str  # a key of KINDS
    where: str  # "Deployment/x container y", "OlaresManifest spec.limitedGPU", …
    original: Any = None
    other: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "original": self.original, "typed": self.other}

    def text(self) -> str:
        return f"{self.kind}: {self.where}: {_short(self.original)} → {_short(self.other)}"


def _short(v: Any, limit: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def unknown_kinds(kinds: Iterable[str]) -> list[str]:
    return sorted(k for k in kinds if k not in KINDS)


# ---------------------------------------------------------------- manifests


def _gpu_pair(spec: dict[str, Any]) -> tuple[Any, Any]:
    req = spec.get("requiredGPU") or spec.get("requiredGpu") or spec.get("requiredGPUMemory")
    lim = spec.get("limitedGPU") or spec.get("limitedGpu") or spec.get("limitedGPUMemory")
    return req, lim


def _envelopes(m: dict[str, Any]) -> dict[str, dict[str, str]]:
    """mode -> envelope, canonical quantities: 0.12.0's spec.resources per mode, or 0.10.0's flat
    spec keys (mode "any")."""
    spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
    out: dict[str, dict[str, str]] = {}
    per_mode = [r for r in spec.get("resources") or spec.get("accelerator") or [] if isinstance(r, dict)]
    for r in per_mode or [spec]:
        mode = str(r.get("mode", "any"))
        env = {}
        for key in _ENVELOPE:
            if r.get(key) not in (None, ""):
                canon = key.replace("Gpu", "GPU").replace("GPUMemory", "GPU")
                env[canon] = _quantity(r[key])
        out[mode] = env
    if len(out) == 1 and "any" not in out and not per_mode:
        return {"any": next(iter(out.values()))}
    return out


def _same_envelopes(a: dict[str, dict[str, str]], b: dict[str, dict[str, str]]) -> bool:
    """One flat envelope (0.10.0 keys, any mode) is the same as one mode's envelope that says the same."""
    if a == b:
        return True
    return len(a) == 1 and len(b) == 1 and next(iter(a.values())) == next(iter(b.values())) and "any" in {*a, *b}


def _quantity(v: Any) -> str:
    try:
        return f"{quantity.parse(v).normalize():f}"
    except Exception:  # noqa: BLE001 - a value that is not a quantity compares as written
        return str(v)


def _entrances(items: Any) -> list[dict[str, Any]]:
    keys = ("name", "host", "port", "title", "authLevel", "openMethod", "invisible", "icon", "windowPushState")
    return [{k: e.get(k) for k in keys if e.get(k) not in (None, "")} for e in items or [] if isinstance(e, dict)]


def _form(m: dict[str, Any]) -> dict[str, Any]:
    spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
    opts = m.get("options") if isinstance(m.get("options"), dict) else {}
    return {"onlyAdmin": bool(spec.get("onlyAdmin", False)),
            "sharedEntrances": bool(m.get("sharedEntrances")),
            "appScope": opts.get("appScope"),
            "subCharts": [{"name": c.get("name"), "shared": bool(c.get("shared"))} for c in spec.get("subCharts") or []
                          if isinstance(c, dict)]}


# 1.12.6+ refuses 0.10.0 manifests (oac pins them to <1.12.6): a legacy chart's olares window
# ends there whether it says so or not.
_LEGACY_END = "<1.12.6"


def _options(m: dict[str, Any]) -> dict[str, Any]:
    """options as the installer applies them: appScope apart (the form), the olares dependency's
    window as effective for the manifest's generation."""
    opts = {k: v for k, v in (m.get("options") or {}).items() if k != "appScope"}
    legacy = str(m.get("olaresManifest.version", "")).startswith("0.10")
    deps = opts.get("dependencies")
    if legacy and isinstance(deps, list):
        opts["dependencies"] = [
            {**d, "version": f"{d['version']},{_LEGACY_END}"}
            if isinstance(d, dict) and d.get("name") == "olares" and isinstance(d.get("version"), str) and "<" not in d["version"]
            else d for d in deps]
    return opts


def compare_manifests(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """OlaresManifest.yaml of the original (a) against the other (b), semantically."""
    out: list[Difference] = []
    where = "OlaresManifest"
    for key in ("olaresManifest.version", "apiVersion"):
        if str(a.get(key, "")) != str(b.get(key, "")):
            out.append(Difference("manifest.version", f"{where} {key}", a.get(key), b.get(key)))
    if _form(a) != _form(b):
        out.append(Difference("manifest.form", f"{where} form", _form(a), _form(b)))
    for key in ("entrances", "sharedEntrances"):
        if _entrances(a.get(key)) != _entrances(b.get(key)):
            out.append(Difference("manifest.entrances", f"{where} {key}", _entrances(a.get(key)), _entrances(b.get(key))))
    ea, eb = _envelopes(a), _envelopes(b)
    if not _same_envelopes(ea, eb):
        out.append(Difference("manifest.envelope", f"{where} envelope", ea, eb))
        lim_a = [quantity.parse_or_none(e.get("limitedGPU")) for e in ea.values()]
        lim_b = [quantity.parse_or_none(e.get("limitedGPU") or e.get("requiredGPU")) for e in eb.values()]
        if max((x for x in lim_a if x is not None), default=0) > max((x for x in lim_b if x is not None), default=0):
            out.append(Difference("manifest.gpu-limit-lower", f"{where} limitedGPU",
                                  [e.get("limitedGPU") for e in ea.values()], [e.get("limitedGPU") for e in eb.values()]))
    for key, kind in (("permission", "manifest.permission"), ("options", "manifest.options"), ("envs", "manifest.envs")):
        va, vb = a.get(key) or {}, b.get(key) or {}
        if key == "options":
            va, vb = _options(a), _options(b)
        if va != vb:
            out.append(Difference(kind, f"{where} {key}", va, vb))
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    sa, sb = a.get("spec") or {}, b.get("spec") or {}
    for section, keys, da, db in (("metadata", _TEXTS_MD, ma, mb), ("spec", _TEXTS_SPEC, sa, sb)):
        for key in keys:
            if (da.get(key) or None) != (db.get(key) or None):
                out.append(Difference("manifest.texts", f"{where} {section}.{key}", da.get(key), db.get(key)))
    return out


# ---------------------------------------------------------------- workloads


def _name(o: dict[str, Any]) -> str:
    return f"{o.get('kind')}/{(o.get('metadata') or {}).get('name', '')}"


def _pod(o: dict[str, Any]) -> dict[str, Any]:
    spec = o.get("spec") or {}
    if o.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    return ((spec.get("template") or {}).get("spec") or {})


def _volume(v: dict[str, Any], cms: dict[str, dict[str, str]]) -> Any:
    if "hostPath" in v:
        return {"hostPath": (v["hostPath"] or {}).get("path")}
    if "configMap" in v:
        name = (v["configMap"] or {}).get("name")
        return {"configMap": cms.get(name, {"missing": name})}
    if "emptyDir" in v:
        return {"emptyDir": v["emptyDir"] or {}}
    if "persistentVolumeClaim" in v:
        return {"pvc": (v["persistentVolumeClaim"] or {}).get("claimName")}
    if "secret" in v:
        return {"secret": (v["secret"] or {}).get("secretName")}
    return {k: val for k, val in v.items() if k != "name"}


def _mounts(c: dict[str, Any], volumes: dict[str, Any]) -> dict[str, Any]:
    return {str(m.get("mountPath")): {"volume": volumes.get(m.get("name")), "subPath": m.get("subPath"),
                                      "readOnly": bool(m.get("readOnly", False))}
            for m in c.get("volumeMounts") or []}


def _resources(c: dict[str, Any]) -> dict[str, dict[str, str]]:
    res = c.get("resources") or {}
    return {part: {str(k): _quantity(v) for k, v in (res.get(part) or {}).items()} for part in ("requests", "limits")
            if res.get(part)}


def _probe(p: Any, ports: dict[str, int]) -> Any:
    if not isinstance(p, dict):
        return None
    defaults = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3,
                "successThreshold": 1}
    out = {k: p.get(k, d) for k, d in defaults.items()}
    for how in ("httpGet", "tcpSocket", "exec", "grpc"):
        if how in p:
            h = dict(p[how] or {})
            h.pop("scheme", None) if h.get("scheme") == "HTTP" else None
            if isinstance(h.get("port"), str):  # a named port is the number the container gives it
                h["port"] = ports.get(h["port"], h["port"])
            out[how] = h
    return out


def _env(c: dict[str, Any], cms: dict[str, dict[str, str]]) -> dict[str, Any]:
    env: dict[str, Any] = dict(resolve_env(c, cms))
    for e in c.get("env") or []:
        ref = (e.get("valueFrom") or {})
        if ref and "configMapKeyRef" not in ref:
            env[e["name"]] = {"valueFrom": ref}
    for ref in c.get("envFrom") or []:
        if "secretRef" in ref:
            env[f"<secret {ref['secretRef'].get('name')}>"] = "envFrom"
    return env


def _argv(c: dict[str, Any], env: dict[str, Any]) -> tuple[list[str], list[str]]:
    from olares_pack.engines.detect import _K8S_VAR

    def sub(w: Any) -> str:
        return _K8S_VAR.sub(lambda m: str(env.get(m.group(1), m.group(0))), str(w))

    return [sub(w) for w in c.get("command") or []], [sub(w) for w in c.get("args") or []]


def _container_facts(c: dict[str, Any], pod: dict[str, Any], cms: dict[str, dict[str, str]]) -> dict[str, Any]:
    volumes = {v.get("name"): _volume(v, cms) for v in pod.get("volumes") or []}
    env = _env(c, cms)
    command, args = _argv(c, env)
    image = str(c.get("image", ""))
    # the process's argv is command + args (a command word moved to args is the same process); a
    # different program is a command difference, the same program with other words an args one
    argv = [*command, *args]
    return {"image": _image(image), "command": argv[:1] if command else [],
            "args": argv if command else args, "env": env,
            "ports": sorted((int(p.get("containerPort", 0)), str(p.get("protocol", "TCP"))) for p in c.get("ports") or []),
            "mounts": _mounts(c, volumes), "resources": _resources(c),
            "probes": {k: _probe(c.get(k), _port_names(c)) for k in ("startupProbe", "livenessProbe", "readinessProbe") if c.get(k)}}


def _port_names(c: dict[str, Any]) -> dict[str, int]:
    return {str(p["name"]): int(p.get("containerPort", 0)) for p in c.get("ports") or [] if p.get("name")}


_FACT_KIND = {"image": "container.image", "command": "container.command", "args": "container.args",
              "env": "container.env", "ports": "container.ports", "mounts": "container.mounts",
              "resources": "container.resources", "probes": "container.probes"}


def _workloads(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {_name(o): o for o in objs if o.get("kind") in WORKLOAD_KINDS}


def _pair_workloads(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[tuple[str | None, str | None]]:
    """Workloads matched by kind and name; one left on each side is the same workload renamed."""
    pairs: list[tuple[str | None, str | None]] = [(k, k) for k in sorted(a) if k in b]
    rest_a, rest_b = [k for k in sorted(a) if k not in b], [k for k in sorted(b) if k not in a]
    if len(rest_a) == 1 and len(rest_b) == 1 and rest_a[0].split("/")[0] == rest_b[0].split("/")[0]:
        return [*pairs, (rest_a[0], rest_b[0])]
    return [*pairs, *((k, None) for k in rest_a), *((None, k) for k in rest_b)]


def _containers(o: dict[str, Any]) -> dict[str, dict[str, Any]]:
    pod = _pod(o)
    out = {f"init:{c.get('name')}": c for c in pod.get("initContainers") or []}
    out |= {str(c.get("name")): c for c in pod.get("containers") or []}
    return out


def _engines(objs: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    from olares_pack.engines.detect import find_engines

    return {(i.workload, i.container): i for i in find_engines(objs)}


def _engine_words(inv: Any, build_from: Any) -> tuple[list[str], dict[str, str], list[str]] | None:
    """An engine's arguments as the engine reads them: canonical flags and values (their order does
    not matter to llama-server or vLLM), positional words in order, and the words before them (the
    program). None when they cannot be read."""
    from olares_pack.engines import registry
    from olares_pack.engines.normalize import normalize_generic, normalize_llama

    try:
        if inv.kind == "llamacpp":
            _, tag = registry.image_parts(build_from.image, as_written=True)
            build = build_from.build or registry.tag_build(tag)
            args = normalize_llama(inv.argv, registry.resolve("llamacpp", build, "image tag").registry, inv.env)
        else:
            args = normalize_generic(inv.argv[1:] if inv.argv[:1] == ["serve"] else inv.argv)
    except Exception:  # noqa: BLE001 - arguments the registry cannot read are compared as written
        return None
    flags = {k: _number_text(v) for k, v in args.values().items()}
    positional = list(args.positional)
    if inv.kind == "vllm" and not positional and "--model" in flags:
        positional = [flags.pop("--model")]  # `vllm serve --model X` is `vllm serve X`
    return [*inv.argv[:1]] if inv.kind == "vllm" else [], flags, positional


def _number_text(v: str) -> str:
    """A flag's value as the engine's parser reads it: a number (0.60 and 0.6 are one value to
    argparse and to llama.cpp's std::stof), a JSON value (spacing and key order are not read); any
    other value as written."""
    if v[:1] in ("{", "["):  # a JSON value (--chat-template-kwargs, --speculative-config): parsed by the engine
        try:
            return json.dumps(json.loads(v), sort_keys=True, separators=(",", ":"))
        except ValueError:
            return v
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", v):
        return v
    f = float(v)
    return str(int(f)) if f.is_integer() and "." not in v else repr(f)


def _image(ref: str) -> str:
    """An image reference as the runtime pulls it: by digest when it has one (a tag beside a
    digest is not read), docker.io/ implied."""
    ref = ref.removeprefix("docker.io/")
    if "@" in ref:
        name, digest = ref.split("@", 1)
        last = name.rsplit("/", 1)
        if ":" in last[-1]:
            name = name[: name.rfind(":")]
        return f"{name}@{digest}"
    return ref


def _same_engine_args(ia: Any, ib: Any, fa: dict[str, Any], fb: dict[str, Any]) -> bool:
    """Two engine containers whose processes differ only in the order of the engine's flags."""
    if ia is None or ib is None or ia.kind != ib.kind:
        return False
    wa, wb = _engine_words(ia, ia), _engine_words(ib, ia)
    if wa is None or wb is None or wa != wb:
        return False
    from olares_pack import engines

    # the words before the engine's arguments (the program, a wrapper's own words) as written
    full_a, full_b = [*fa["args"]], [*fb["args"]]
    if engines.is_shell(full_a) or engines.is_shell(full_b):
        # a script that holds the engine's invocation: the same script up to the program, the
        # same words after it (the engine's, compared above); any other script is compared whole
        if not (engines.is_shell(full_a) and engines.is_shell(full_b)) or full_a[:2] != full_b[:2]:
            return False
        if not engines.passes_args(full_a[2]) or not engines.passes_args(full_b[2]):
            if len(full_a) != 3 or len(full_b) != 3:
                return False
            head_a, head_b = engines.script_head(full_a[2], ia.kind), engines.script_head(full_b[2], ib.kind)
            return head_a is not None and head_a == head_b and fa["command"] == fb["command"]
    pre_a, pre_b = full_a[: max(len(full_a) - len(ia.argv), 0)], full_b[: max(len(full_b) - len(ib.argv), 0)]
    return pre_a == pre_b and fa["command"] == fb["command"]


def compare_objects(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Difference]:
    """The Kubernetes objects of the original (a) against the other render's (b), semantically."""
    out: list[Difference] = []
    cms_a, cms_b = configmaps(a), configmaps(b)
    eng_a, eng_b = _engines(a), _engines(b)
    wa, wb = _workloads(a), _workloads(b)
    for ka, kb in _pair_workloads(wa, wb):
        if kb is None:
            out.append(Difference("workload.missing", str(ka), "present", None))
            continue
        if ka is None:
            out.append(Difference("workload.added", kb, None, "present"))
            continue
        sel_a = ((wa[ka].get("spec") or {}).get("selector") or {})
        sel_b = ((wb[kb].get("spec") or {}).get("selector") or {})
        if sel_a != sel_b and wa[ka].get("kind") in ("Deployment", "StatefulSet", "DaemonSet"):
            out.append(Difference("workload.selector", ka, sel_a, sel_b))
        ca, cb = _containers(wa[ka]), _containers(wb[kb])
        pairs = [(n, n) for n in ca if n in cb]
        rest_a = [n for n in ca if n not in cb and not n.startswith("init:")]
        rest_b = [n for n in cb if n not in ca and not n.startswith("init:")]
        if len(rest_a) == 1 and len(rest_b) == 1:  # the main container renamed
            pairs.append((rest_a[0], rest_b[0]))
            rest_a, rest_b = [], []
        rest_a += [n for n in ca if n not in cb and n.startswith("init:")]
        rest_b += [n for n in cb if n not in ca and n.startswith("init:")]
        for n in rest_a:
            out.append(Difference("container.missing", f"{ka} container {n}", ca[n].get("image"), None))
        for n in rest_b:
            out.append(Difference("container.added", f"{kb} container {n}", None, cb[n].get("image")))
        for na, nb in pairs:
            fa = _container_facts(ca[na], _pod(wa[ka]), cms_a)
            fb = _container_facts(cb[nb], _pod(wb[kb]), cms_b)
            same_args = fa["args"] != fb["args"] and _same_engine_args(
                eng_a.get((ka, na)), eng_b.get((kb, nb)), fa, fb)
            for key, kind in _FACT_KIND.items():
                if key == "args" and same_args:
                    continue
                if fa[key] != fb[key]:
                    va, vb = fa[key], fb[key]
                    if isinstance(va, dict) and isinstance(vb, dict):  # only what differs
                        keys = sorted(k for k in set(va) | set(vb) if va.get(k) != vb.get(k))
                        va, vb = {k: va.get(k) for k in keys}, {k: vb.get(k) for k in keys}
                    out.append(Difference(kind, f"{ka} container {na}", va, vb))
    names_a = {k: v for w in wa.values() for c in _containers(w).values() for k, v in _port_names(c).items()}
    names_b = {k: v for w in wb.values() for c in _containers(w).values() for k, v in _port_names(c).items()}
    sa = {_name(o): o for o in a if o.get("kind") == "Service"}
    sb = {_name(o): o for o in b if o.get("kind") == "Service"}
    for k in sorted(set(sa) | set(sb)):
        if k not in sb:
            out.append(Difference("service.missing", k, "present", None))
        elif k not in sa:
            out.append(Difference("service.added", k, None, "present"))
        else:
            pa, pb = _service_ports(sa[k], names_a), _service_ports(sb[k], names_b)
            if pa != pb:
                out.append(Difference("service.ports", k, pa, pb))
    return out


def _service_ports(o: dict[str, Any], names: dict[str, int]) -> list[tuple[int, str]]:
    """(port, target) pairs; a named target port is the number the pods give that name."""
    out = []
    for p in (o.get("spec") or {}).get("ports") or []:
        target = p.get("targetPort", p.get("port", ""))
        out.append((int(p.get("port", 0)), str(names.get(target, target) if isinstance(target, str) else target)))
    return sorted(out)


# ---------------------------------------------------------------- charts and apps


def manifest_of(files: dict[str, str], name: str) -> dict[str, Any]:
    from olares_pack.charts import helm
    from olares_pack.common.yamlsrc import safe_load

    data = safe_load(helm.installed_manifest(files, name))
    if not isinstance(data, dict):
        raise InputError("OlaresManifest.yaml is not a mapping")
    return data


def modes(manifest: dict[str, Any]) -> list[str]:
    """The GPU modes the installer renders a chart for: its accelerator modes, else nvidia."""
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    found = [str(r.get("mode")) for r in spec.get("resources") or spec.get("accelerator") or []
             if isinstance(r, dict) and r.get("mode")]
    return sorted(set(found)) or ["nvidia"]


def compare_charts(name: str, original: dict[str, str], other: dict[str, str]) -> list[Difference]:
    """Two charts' files (path -> text), rendered as the installer renders them, compared. A chart
    that cannot be rendered or read gives one `undecidable` difference: equivalence is then not
    known, and never assumed."""
    from olares_pack.render.imported import objects_of

    try:
        ma, mb = manifest_of(original, name), manifest_of(other, name)
        out = compare_manifests(ma, mb)
        for mode in modes(ma):
            objs_a = objects_of(name, original, ma, mode)
            objs_b = objects_of(name, other, mb, mode)
            found = compare_objects(objs_a, objs_b)
            out += [d if mode == "nvidia" else Difference(d.kind, f"{d.where} ({mode} mode)", d.original, d.other)
                    for d in found]
    except Exception as exc:  # noqa: BLE001 - whatever stops the comparison leaves equivalence unknown, never assumed
        return [Difference("undecidable", name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, None)]
    unresolved = [d for d in out if "{{" in json.dumps(d.original, default=str)]
    if unresolved:
        return [Difference("undecidable", d.where, d.original, "a template value the tool cannot resolve")
                for d in unresolved]
    return _dedupe(out)


def _dedupe(diffs: list[Difference]) -> list[Difference]:
    seen, out = set(), []
    for d in diffs:
        key = (d.kind, d.where, json.dumps(d.original, sort_keys=True, default=str), json.dumps(d.other, sort_keys=True, default=str))
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def remaining(diffs: list[Difference], accepted: Iterable[str]) -> list[Difference]:
    """The differences no accepted kind covers; `undecidable` is never accepted."""
    ok = set(accepted) - {"undecidable"}
    return [d for d in diffs if d.kind not in ok]
