"""Two charts compared as the installer installs them: both rendered with Helm for every GPU mode
the original declares and for both user forms (the admin installs it; a second user installs it),
then object by object. A container's arguments are grouped (proof/argv.py) and, for llama-server,
each flag's spelling resolved through the flag table of the image's build; everything else of a
container, a workload and the other objects is compared as written. The manifests are compared key
by key as rendered (OlaresManifest.yaml), except the version and what belongs to a version (its
upgrade text), which an import that writes the next version changes on purpose.

Differences use the kinds of the import report (the same ids `--accept` takes)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Any

from olares_pack.proof import argv as argvmod

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# labels and annotations that name the tool or the chart's version, not the app: a render by
# another tool or of another version writes its own
_TOOL_KEYS = re.compile(r"^(olares-pack/|helm\.sh/chart$|app\.kubernetes\.io/(version|managed-by)$)")
_LEGACY_END = "<1.12.6"  # 1.12.6+ refuses 0.10.0 manifests: a legacy chart's window ends there
SECOND_USER = "bob"


@dataclass(frozen=True)
class Difference:
    kind: str
    where: str
    original: Any = None
    other: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "original": self.original, "typed": self.other}

    def text(self) -> str:
        def short(v: Any) -> str:
            s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
            return s if len(s) <= 160 else s[:159] + "…"
        return f"{self.kind}: {self.where}: {short(self.original)} → {short(self.other)}"


@dataclass(frozen=True)
class Proof:
    differences: list[Difference]
    window: str | None  # how the olares window where the app is offered changed; None: it did not
    ran: list[str]  # what was compared: "mode nvidia, admin", …
    engine: list[str] = field(default_factory=list)  # which parser read each llama-server argv, and what it said


# kinds the proof reports beyond the import report's (olares_pack.equivalence.KINDS)
KINDS: dict[str, str] = {
    "engine.refused": "llama-server's own parser refuses the typed render's arguments (the engine does not start)",
    "chart.other": "a Chart.yaml field differs (description, icon, home, sources, maintainers, keywords, …)",
    "chart.appversion-lower": "Chart.yaml appVersion is older than the original's",
    "container.other": "a container field other than image, command, args, env, ports, mounts, probes, resources differs",
    "workload.other": "a workload field beside its containers differs (replicas, strategy, volumes, pod fields)",
    "object.missing": "an object of the original (not a workload or Service) is not in the other render",
    "object.added": "the other render adds an object (not a workload or Service)",
    "object.changed": "an object other than a workload or Service differs",
}
NEVER_ACCEPTED = ("undecidable", "engine.refused")


# ---------------------------------------------------------------- manifests


def _manifest(files: dict[str, str], name: str) -> dict[str, Any]:
    from olares_pack.charts import helm
    from olares_pack.common.yamlsrc import safe_load

    data = safe_load(helm.installed_manifest(files, name))
    if not isinstance(data, dict):
        raise ValueError("OlaresManifest.yaml is not a mapping")
    return data


def _olares_window(m: dict[str, Any]) -> str | None:
    legacy = str(m.get("olaresManifest.version", "")).startswith("0.10")
    for d in (m.get("options") or {}).get("dependencies") or []:
        if isinstance(d, dict) and d.get("name") == "olares":
            v = str(d.get("version", ""))
            return f"{v},{_LEGACY_END}" if legacy and "<" not in v else v
    return None


def _walk(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    """Every leaf that differs; a key whose value is null is the key left out (YAML and the API
    server read both as unset), an empty string is not."""
    if isinstance(a, dict) and isinstance(b, dict):
        a = {k: v for k, v in a.items() if v is not None}
        b = {k: v for k, v in b.items() if v is not None}
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                out.append((f"{path}.{k}".lstrip("."), a[k], "(absent)"))
            elif k not in a:
                out.append((f"{path}.{k}".lstrip("."), "(absent)", b[k]))
            else:
                _walk(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if _unset_dropped(a) != _unset_dropped(b):  # a null inside an entry is unset there too (env `value: null`)
            out.append((path.lstrip("."), a, b))
    elif a != b or type(a) is not type(b):
        out.append((path.lstrip("."), a, b))


def _unset_dropped(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _unset_dropped(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_unset_dropped(x) for x in v]
    return v


_MANIFEST_KIND = (("metadata.version", None), ("spec.upgradeDescription", None), ("options.dependencies", "manifest.options"),
                  ("olaresManifest.version", "manifest.version"), ("apiVersion", "manifest.version"),
                  ("spec.accelerator", "manifest.envelope"), ("spec.resources", "manifest.envelope"),
                  ("spec.required", "manifest.envelope"), ("spec.limited", "manifest.envelope"),
                  ("entrances", "manifest.entrances"), ("sharedEntrances", "manifest.form"), ("spec.subCharts", "manifest.form"),
                  ("spec.onlyAdmin", "manifest.form"), ("options.appScope", "manifest.form"), ("permission", "manifest.permission"),
                  ("options", "manifest.options"), ("envs", "manifest.envs"), ("spec.envs", "manifest.envs"))


def compare_manifests(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[Difference], str | None]:
    """Key by key; the version and its upgrade text are the import's to change; the olares window
    is reported apart when only the cap the installer applies anyway is written out."""
    found: list[tuple[str, Any, Any]] = []
    _walk(a, b, "", found)
    out: list[Difference] = []
    window = None
    wa, wb = _olares_window(a), _olares_window(b)
    if wa != wb:
        window = f"{wa} → {wb}"
    for path, va, vb in found:
        kind = next((k for p, k in _MANIFEST_KIND if path == p or path.startswith(p + ".") or path.startswith(p + "[")
                     or (p.endswith(("required", "limited")) and path.startswith(p))), "manifest.texts")
        if path in ("metadata.version", "spec.upgradeDescription"):
            continue
        if path.startswith("options.dependencies") and _deps_same(a, b):
            continue  # the same window once the installer's own cap is applied: reported as `window`
        out.append(Difference(kind, f"OlaresManifest {path}", va, vb))
    return out, window


def _deps_same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def deps(m: dict[str, Any]) -> list[Any]:
        return [{**d, "version": _olares_window(m)} if isinstance(d, dict) and d.get("name") == "olares" else d
                for d in (m.get("options") or {}).get("dependencies") or []]
    return deps(a) == deps(b)


# ---------------------------------------------------------------- objects


def _name(o: dict[str, Any]) -> str:
    return f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}"


def _strip_tool(o: Any, top: bool = True) -> Any:
    """An object less what names the tool, and less what the cluster writes, never the chart
    (`status`, `creationTimestamp`: the API server drops both from what is applied)."""
    if isinstance(o, dict):
        out = {}
        for k, v in o.items():
            if (top and k == "status") or k == "creationTimestamp":
                continue
            if k in ("labels", "annotations") and isinstance(v, dict):
                v = {kk: vv for kk, vv in v.items() if not _TOOL_KEYS.match(str(kk))}
                if not v:
                    continue
            out[k] = _strip_tool(v, False)
        return out
    if isinstance(o, list):
        return [_strip_tool(x, False) for x in o]
    return o


def _pod(o: dict[str, Any]) -> dict[str, Any]:
    spec = o.get("spec") or {}
    if o.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    return ((spec.get("template") or {}).get("spec") or {})


def _configmaps(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str((o.get("metadata") or {}).get("name")): dict(o.get("data") or {}) for o in objs if o.get("kind") == "ConfigMap"}


def _env(c: dict[str, Any], cms: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The values Kubernetes gives `$(VAR)` in command and args: envFrom ConfigMaps, then env in
    order (a value may itself name an earlier variable)."""
    env: dict[str, str] = {}
    for ref in c.get("envFrom") or []:
        name = (ref.get("configMapRef") or {}).get("name")
        env.update({str(k): str(v) for k, v in (cms.get(str(name)) or {}).items()})
    for e in c.get("env") or []:
        if "value" in e and e["value"] is not None:
            env[str(e["name"])] = _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), str(e["value"]))
        elif (ref := (e.get("valueFrom") or {}).get("configMapKeyRef")) and ref.get("key") in (cms.get(str(ref.get("name"))) or {}):
            env[str(e["name"])] = str(cms[str(ref["name"])][ref["key"]])
    return env


def _words(c: dict[str, Any], cms: dict[str, dict[str, Any]]) -> list[str]:
    env = _env(c, cms)
    return [_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), str(w)) for w in [*(c.get("command") or []), *(c.get("args") or [])]]


# flags that append to one list with another flag (llama.cpp common/arg.cpp at b11434: `--lora` and
# `--lora-scaled` push to params.lora_adapters, `--control-vector` and `--control-vector-scaled`
# to params.control_vectors): their relative order is the list's
_SHARED_LISTS = {"--lora-scaled": "--lora", "--control-vector-scaled": "--control-vector"}


def _reader(image: str, words: list[str]) -> argvmod.Reader | None:
    """How llama-server of the image's build reads its words (its own flag table; a fork reads
    upstream's table of its base), None for another program: spellings as written."""
    from olares_pack.engines import registry

    repo, tag = registry.image_parts(image)
    images = {*registry.upstream_images(), *(i for f in registry.forks().values() for i in f.images)}
    llama = repo in images or any(w.rsplit("/", 1)[-1] == "llama-server" for w in words[:3])
    if not llama:
        return None
    table = registry.resolve("llamacpp", registry.tag_build(tag), "image tag").registry

    def canonical(flag: str) -> str:
        spec = table.lookup(flag)
        if spec is None:
            return flag
        return spec.negations[0] if flag in spec.negations else spec.canonical

    def setting(flag: str) -> str:
        spec = table.lookup(flag)
        return _SHARED_LISTS.get(flag, spec.canonical if spec is not None else flag)

    def takes_value(flag: str) -> bool:
        # a value the help writes optional (`-fa [on|off|auto]` of some builds) is not taken blindly
        spec = table.lookup(flag)
        return bool(spec is not None and spec.takes_value and not spec.optional_value and flag not in spec.negations)

    return argvmod.Reader(canonical, setting, takes_value)


def _argv_facts(c: dict[str, Any], cms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    words = _words(c, cms)
    reader = _reader(str(c.get("image", "")), words)
    script = argvmod.shell_script(words)
    if script is not None:
        shell, text, rest = script
        return {"shell": shell, "script": text, "after": argvmod.group(rest, reader=reader, options_end=False).as_dict()}
    return {"argv": argvmod.group(words, reader=reader).as_dict()}


def _container_diffs(where: str, ca: dict[str, Any], cb: dict[str, Any], cms_a: dict[str, Any], cms_b: dict[str, Any]) -> list[Difference]:
    out = []
    fa, fb = _argv_facts(ca, cms_a), _argv_facts(cb, cms_b)
    if fa != fb:
        kind = "container.command" if ("script" in fa) != ("script" in fb) or fa.get("script") != fb.get("script") \
            or fa.get("shell") != fb.get("shell") else "container.args"
        keys = [k for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]
        out.append(Difference(kind, where, {k: fa.get(k) for k in keys}, {k: fb.get(k) for k in keys}))
    rest_a = {k: v for k, v in ca.items() if k not in ("command", "args")}
    rest_b = {k: v for k, v in cb.items() if k not in ("command", "args")}
    found: list[tuple[str, Any, Any]] = []
    _walk(_strip_tool(rest_a), _strip_tool(rest_b), "", found)
    kinds = {"image": "container.image", "env": "container.env", "envFrom": "container.env", "ports": "container.ports",
             "volumeMounts": "container.mounts", "resources": "container.resources", "startupProbe": "container.probes",
             "livenessProbe": "container.probes", "readinessProbe": "container.probes"}
    for path, va, vb in found:
        top = re.split(r"[.\[]", path, maxsplit=1)[0]
        out.append(Difference(kinds.get(top, "container.other"), f"{where} {path}", va, vb))
    return out


def compare_objects(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Difference]:
    out: list[Difference] = []
    oa, ob = {_name(o): o for o in a}, {_name(o): o for o in b}
    cms_a, cms_b = _configmaps(a), _configmaps(b)
    for k in sorted(set(oa) | set(ob)):
        kind = k.split("/", 1)[0]
        if k not in ob:
            out.append(Difference("workload.missing" if kind in WORKLOADS else "service.missing" if kind == "Service"
                                  else "object.missing", k, "present", None))
            continue
        if k not in oa:
            out.append(Difference("workload.added" if kind in WORKLOADS else "service.added" if kind == "Service"
                                  else "object.added", k, None, "present"))
            continue
        x, y = _strip_tool(oa[k]), _strip_tool(ob[k])
        if kind not in WORKLOADS:
            found: list[tuple[str, Any, Any]] = []
            _walk(x, y, "", found)
            out += [Difference("service.ports" if kind == "Service" else "object.changed", f"{k} {p}", va, vb) for p, va, vb in found]
            continue
        pa, pb = _pod(x), _pod(y)
        for part in ("initContainers", "containers"):
            ca = {str(c.get("name")): c for c in pa.get(part) or []}
            cb = {str(c.get("name")): c for c in pb.get(part) or []}
            if [*ca] != [*cb] and set(ca) == set(cb):
                out.append(Difference("container.order", f"{k} {part}", [*ca], [*cb]))
            for n in sorted(set(ca) | set(cb)):
                where = f"{k} container {'init:' if part == 'initContainers' else ''}{n}"
                if n not in cb:
                    out.append(Difference("container.missing", where, ca[n].get("image"), None))
                elif n not in ca:
                    out.append(Difference("container.added", where, None, cb[n].get("image")))
                else:
                    out += _container_diffs(where, ca[n], cb[n], cms_a, cms_b)
        # the workload beside its containers, as written
        def frame(o: dict[str, Any]) -> dict[str, Any]:
            o = json.loads(json.dumps(o))
            pod = _pod(o)
            pod.pop("containers", None)
            pod.pop("initContainers", None)
            return o
        found = []
        _walk(frame(x), frame(y), "", found)
        out += [Difference("workload.selector" if ".selector" in p else "workload.other", f"{k} {p}", va, vb) for p, va, vb in found]
    return out


# ---------------------------------------------------------------- the engine's own parser

# llama-server's own parser on every llama-server a chart starts (engines/argv_check: the real
# binary of the image's build when this machine has it, else the newest binary here with what that
# build does not know set aside, else the flag registry): a typed render the engine refuses is
# never called the same app, whatever the comparison of words says (`-fa --mtp-head x` reads
# `--mtp-head` as -fa's value).


@dataclass(frozen=True)
class EngineVerdict:
    where: str  # "Deployment/x container y"
    image: str
    refused: bool
    error: str  # the engine's own text when refused
    used: str  # which parser said so (the build's own binary, another build's, the registry)


def _fork(image: str) -> tuple[bool, str | None]:
    """(whether the image is not upstream llama.cpp's, the build its tag names)."""
    from olares_pack.engines import registry

    repo, tag = registry.image_parts(image)
    upstream = any(fnmatch(repo, p) or fnmatch(f"{repo}:{tag}", p) for p in registry.upstream_images("llamacpp"))
    return not upstream, registry.tag_build(tag)


def engine_verdicts(objects: list[dict[str, Any]]) -> list[EngineVerdict]:
    """One verdict per container that starts llama-server (by name, through `sh -c`, or a llama.cpp
    image's entrypoint)."""
    from olares_pack.engines import argv_check

    cms = _configmaps(objects)
    out = []
    for o in objects:
        if o.get("kind") not in WORKLOADS:
            continue
        for c in [*(_pod(o).get("initContainers") or []), *(_pod(o).get("containers") or [])]:
            if not isinstance(c, dict):
                continue
            env = argv_check.container_env(c, cms)
            argv = argv_check.engine_argv(c, env)
            if argv is None:
                continue
            where = f"{_name(o)} container {c.get('name')}"
            image = str(c.get("image", ""))
            if left := argv_check.unresolved(argv):
                out.append(EngineVerdict(where, image, False, "", f"not parsed: {', '.join(left)} is not resolved from the chart"))
                continue
            fork, build = _fork(image)
            done = argv_check.check(argv, build, env, fork=fork)
            r = done.result
            out.append(EngineVerdict(where, image, done.refused, r.error if r is not None and not r.ok else "",
                                     done.used(build, image if fork else None)))
    return out


# ---------------------------------------------------------------- charts


def modes(m: dict[str, Any]) -> list[str]:
    spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
    found = [str(r.get("mode")) for r in spec.get("resources") or spec.get("accelerator") or [] if isinstance(r, dict) and r.get("mode")]
    return sorted(set(found)) or ["nvidia"]


def _objects(name: str, files: dict[str, str], m: dict[str, Any], mode: str, owner: str) -> list[dict[str, Any]]:
    from olares_pack.render.imported import objects_of

    return objects_of(name, files, m, mode, owner=owner, admin="alice")


def prove(name: str, original: dict[str, str], other: dict[str, str]) -> Proof:
    """Every difference between two charts' installs; one `undecidable` when a chart does not render."""
    ran: list[str] = []
    parsed: list[str] = []
    try:
        ma, mb = _manifest(original, name), _manifest(other, name)
        out, window = compare_manifests(ma, mb)
        out += _chart_yaml(original, other)
        for mode in modes(ma):
            for owner in ("alice", SECOND_USER):
                form = "admin" if owner == "alice" else "second user"
                oa, ob = _objects(name, original, ma, mode, owner), _objects(name, other, mb, mode, owner)
                found = compare_objects(oa, ob)
                ran.append(f"{mode} mode, {form}")
                out += [Difference(d.kind, f"{d.where} ({mode} mode, {form})", d.original, d.other) for d in found]
                # the engine's own parser on both: the words may compare equal and still not start it
                said = {v.where: v for v in engine_verdicts(oa)}
                for v in engine_verdicts(ob):
                    parsed.append(f"{v.where} ({mode} mode, {form}): {'refused' if v.refused else 'accepted'} by {v.used}")
                    if v.refused:
                        was = said.get(v.where)
                        out.append(Difference("engine.refused", f"{v.where} ({mode} mode, {form})",
                                              ("refused too: " + was.error) if was and was.refused else "accepted", v.error))
    except Exception as exc:  # noqa: BLE001 - whatever stops the comparison leaves equivalence unknown
        return Proof([Difference("undecidable", name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)], None, ran)
    return Proof(_dedupe(out), window, ran, list(dict.fromkeys(parsed)))


def _chart_yaml(a: dict[str, str], b: dict[str, str]) -> list[Difference]:
    """Chart.yaml as written, but its version (the next one); appVersion never goes backwards."""
    from olares_pack.common.yamlsrc import safe_load

    ca, cb = safe_load(a.get("Chart.yaml", "")) or {}, safe_load(b.get("Chart.yaml", "")) or {}
    out = []
    for k in sorted(set(ca) | set(cb)):
        if k == "version":
            continue
        if k == "appVersion" and k in ca and k in cb:
            if _older(str(cb[k]), str(ca[k])):
                out.append(Difference("chart.appversion-lower", "Chart.yaml appVersion", ca[k], cb[k]))
            continue
        if ca.get(k) != cb.get(k):
            out.append(Difference("chart.other", f"Chart.yaml {k}", ca.get(k), cb.get(k)))
    return out


def _older(x: str, y: str) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", v))
    return key(x) < key(y)


def _dedupe(diffs: list[Difference]) -> list[Difference]:
    """One difference the same in every mode and form is reported once (its first place)."""
    seen, out = set(), []
    for d in diffs:
        key = (d.kind, re.sub(r" \([a-z]+ mode, [a-z ]+\)$", "", d.where), json.dumps(d.original, sort_keys=True, default=str),
               json.dumps(d.other, sort_keys=True, default=str))
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
