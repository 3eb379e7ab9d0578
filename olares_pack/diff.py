"""What changed between two chart versions, in the terms a maintainer thinks in: engine flags
(whatever their spelling), image, model, resources, environment, manifest fields, and on request
the rendered Kubernetes objects matched by kind and name."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.charts.objects import container, download_model, obj_name
from olares_pack.charts.source import ChartSource
from olares_pack.common import quantity
from olares_pack.common.errors import InputError
from olares_pack.engines import registry
from olares_pack.engines.detect import Invocation, find_engines
from olares_pack.engines.normalize import normalize_generic, normalize_llama
from olares_pack.lint.context import LintOptions, build_context, run_helm

if TYPE_CHECKING:
    from olares_pack.catalogue.repo import Repo

# The texts a store shows: upgradeDescription is the "what's new" of the version, a text like the others.
TEXT_FIELDS = (("metadata", "title"), ("metadata", "description"), ("spec", "fullDescription"), ("spec", "upgradeDescription"))
# Arguments that name the model: compared in the model section, not as flags.
MODEL_FLAGS = {"--model", "--hf-repo", "--hf-file", "--served-model-name"}
# Arguments whose values are secrets: a diff says whether they are set, never what they are.
SECRET_FLAGS = {"--hf-token", "--api-key", "--api-key-file"}


@dataclass
class Facts:
    """One chart, reduced to what a maintainer compares."""

    label: str
    manifest: dict[str, Any]
    engine: Invocation | None
    build: str | None
    flags: dict[str, str]
    renamed_flags: dict[str, str]  # spelling as written -> flag it stands for (removed upstream)
    image: dict[str, str | None]
    model: dict[str, Any]
    resources: dict[str, str]
    env: dict[str, str]
    objects: list[dict[str, Any]]


@dataclass
class Change:
    section: str  # arguments | image | model | resources | environment | manifest | objects
    key: str
    old: Any
    new: Any
    note: str = ""

    @property
    def kind(self) -> str:
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        return "changed" if self.old != self.new else "unchanged"

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "key": self.key, "kind": self.kind, "old": self.old, "new": self.new, "note": self.note}


@dataclass
class DiffResult:
    a: str
    b: str
    changes: list[Change] = field(default_factory=list)
    unchanged: list[Change] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.changes


def _split_image(image: str) -> dict[str, str | None]:
    ref, _, digest = image.partition("@")
    last = ref.rsplit("/", 1)[-1]
    repo, tag = (ref.rsplit(":", 1) if ":" in last else (ref, "latest"))
    return {"repository": repo, "tag": tag, "digest": digest or None}


def _model(objects: list[dict[str, Any]], inv: Invocation | None, flags: dict[str, str]) -> dict[str, Any]:
    """The model as olares-pack's download step names it, else as the engine's arguments do."""
    if found := download_model(objects):
        return {"repo": found["repo"], "files": found["files"], "revision": found["revision"]}
    from olares_pack.importing.llmbase import download_env

    if env := download_env(objects):  # llm-init's MODEL_SOURCE (the official llmbase charts)
        return {"repo": env["MODEL_REPO"], "files": [f for f in env.get("MODEL_FILES", "").splitlines() if f],
                "revision": env.get("MODEL_REVISION")}
    model: dict[str, Any] = {}
    if inv is not None:
        for key in ("--hf-repo", "-hf"):
            if key in flags:
                model["repo"] = flags[key]
        if "--hf-file" in flags:
            model["files"] = [flags["--hf-file"]]
        if "--model" in flags:
            model.setdefault("files", [flags["--model"].rsplit("/", 1)[-1]])
        args = normalize_generic(inv.argv[1:]) if inv.kind == "vllm" and inv.argv[:1] == ["serve"] else None
        if args and args.positional:
            model["repo"] = args.positional[0]
        for k in ("MODEL_NAME", "MODEL", "HF_MODEL", "MODEL_SOURCE"):
            if inv.env.get(k) and "repo" not in model:
                model["repo"] = inv.env[k]
    return model


def _json_value(value: str) -> str:
    """A JSON argument in one spelling ({"a": 1} and {"a":1} are the same argument)."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.dumps(json.loads(value), separators=(",", ":"), sort_keys=True)
        except ValueError:
            pass
    return value


def _command(objects: list[dict[str, Any]], inv: Invocation) -> list[str]:
    c = container(objects, inv.workload, inv.container)
    return [str(w) for w in c.get("command") or []]


def _resources(manifest: dict[str, Any], inv: Invocation | None, objects: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    for env in spec.get("accelerator") or []:
        for k, v in sorted(env.items()):
            if k != "mode":
                out[f"manifest {env.get('mode')} {k}"] = str(v)
    for k in ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk", "requiredGpu", "limitedGpu"):
        if k in spec:
            out[f"manifest {k}"] = str(spec[k])
    if inv is not None:
        c = container(objects, inv.workload, inv.container)
        for section in ("requests", "limits"):
            for k, v in sorted(((c.get("resources") or {}).get(section) or {}).items()):
                out[f"container {section}.{k}"] = str(v)
    return out


def _canonical_quantity(key: str, value: str) -> str:
    """24Gi and 25769803776 are the same memory; 4 and 4000m the same CPU."""
    try:
        if "cpu" in key.lower():
            return quantity.cores_string(value)
        if any(w in key.lower() for w in ("memory", "disk", "gpu")) and not value.isdigit():
            return str(quantity.to_bytes(value))
    except quantity.QuantityError:
        pass
    return value


def facts(source: ChartSource, options: LintOptions | None = None) -> Facts:
    ctx = build_context(source, options or LintOptions())
    if not ctx.manifest:
        problems = "; ".join(f.message for f in ctx.findings) or "no OlaresManifest.yaml"
        raise InputError(f"{source.label}: cannot read the chart: {problems}")
    run_helm(ctx)
    render = next((r for r in ctx.renders if r.owner == r.admin), None)
    if render is None:
        raise InputError(f"{source.label}: the chart does not render: " + "; ".join(f.message for f in ctx.findings if f.rule == "helm.render"))
    objects = render.objects
    engines = find_engines(objects)
    inv = engines[0] if engines else None
    flags: dict[str, str] = {}
    renamed: dict[str, str] = {}
    build = None
    env: dict[str, str] = {}
    if inv is not None:
        if inv.kind == "llamacpp":
            build = (options.engine_build if options else None) or inv.build
            try:
                reg = registry.load("llamacpp", build)
            except InputError:
                reg = registry.load("llamacpp")
            norm = normalize_llama(inv.argv, reg, inv.env)
            for canonical, arg in norm.args.items():
                spec = reg.lookup(canonical)
                if spec is not None and spec.removed and spec.replacement:
                    renamed[arg.spelled.split()[0]] = spec.replacement
                    flags[spec.replacement] = arg.value
                else:
                    flags[canonical] = arg.value
            env = {k: v for k, v in inv.env.items() if k not in reg.by_env}
        else:
            argv = inv.argv[1:] if inv.argv[:1] == ["serve"] else inv.argv
            flags = normalize_generic(argv).values()
            env = dict(inv.env)
    if inv is not None and "/llm-init/wrappers/" in " ".join(_command(objects, inv)):
        # The llmbase form: ENGINE_ARGS is the arguments, compared flag by flag above; the model's
        # env is compared in the model section.
        for k in ("ENGINE_ARGS", "MODEL_NAME", "MODEL_REPO", "MODEL_REVISION", "MODEL_FILES", "MODEL_SOURCE"):
            env.pop(k, None)
    flags = {k: ("(set)" if v else "(empty)") if k in SECRET_FLAGS else v for k, v in flags.items()}
    return Facts(
        label=source.label,
        manifest=ctx.manifest,
        engine=inv,
        build=build,
        flags=flags,
        renamed_flags=renamed,
        image=_split_image(inv.image) if inv else {},
        model=_model(objects, inv, flags),
        resources=_resources(ctx.manifest, inv, objects),
        env=env,
        objects=objects,
    )


# ---------------------------------------------------------------- comparing


def _flag_note(flag: str, old: str | None, new: str | None, build_b: str | None) -> str:
    for ev in registry.history("llamacpp"):
        if ev.flag != flag:
            continue
        if ev.kind == "rename-value" and old == ev.old and new == ev.new:
            return f"same mode, renamed upstream on {ev.date}"
        if ev.kind == "default" and new == ev.new and old is not None:
            return f"{new} is the upstream default since {ev.ref or ev.date}"
    if new is None and old is not None:
        spec = registry.load("llamacpp", build_b if build_b in registry.builds() else None).lookup(flag)
        if spec is not None and spec.default is not None and spec.default == old:
            return f"{old} is the default of this build"
    return ""


def _dict_changes(section: str, a: dict[str, Any], b: dict[str, Any], note: Any = None) -> tuple[list[Change], list[Change]]:
    changed, same = [], []
    for key in sorted(set(a) | set(b)):
        old, new = a.get(key), b.get(key)
        c = Change(section, key, old, new, note(key, old, new) if note else "")
        (same if old == new else changed).append(c)
    return changed, same


def _window(manifest: dict[str, Any]) -> str | None:
    opts = manifest.get("options") if isinstance(manifest.get("options"), dict) else {}
    for d in opts.get("dependencies") or []:
        if isinstance(d, dict) and d.get("name") == "olares":
            return str(d.get("version"))
    return None


def _manifest_facts(m: dict[str, Any]) -> dict[str, Any]:
    md = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
    spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
    out = {
        "version": md.get("version"),
        "versionName": spec.get("versionName"),
        "manifest generation": f"{m.get('olaresManifest.version')}/{m.get('apiVersion') or 'v1'}",
        "olares dependency": _window(m),
    }
    for e in m.get("entrances") or []:
        if isinstance(e, dict):
            out[f"entrance {e.get('name')}"] = f"{e.get('host')}:{e.get('port')} {e.get('authLevel', '')}/{e.get('openMethod', '')} {e.get('title', '')!r}"
    # the shared form (one engine for every user) and the gateway
    options = m.get("options") if isinstance(m.get("options"), dict) else {}
    for key, value in (("shared", options.get("shared")), ("onlyAdmin", spec.get("onlyAdmin")),
                       ("LLM gateway", options.get("LLMGatewaySupported"))):
        if value is not None:
            out[key] = value
    for e in m.get("sharedEntrances") or []:
        if isinstance(e, dict):
            out[f"shared entrance {e.get('name')}"] = f"{e.get('host')}:{e.get('port')} {e.get('authLevel', '')}"
    replicas = m.get("workloadReplicas")
    if isinstance(replicas, dict):
        out["workloads"] = ", ".join(sorted(str(k) for k in replicas))
    return out


def _texts(m: dict[str, Any]) -> dict[str, str]:
    out = {}
    for section, key in TEXT_FIELDS:
        part = m.get(section) if isinstance(m.get(section), dict) else {}
        out[f"{section}.{key}"] = str(part.get(key, ""))
    return out


def _rendered_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Change]:
    from deepdiff import DeepDiff

    ma, mb = {obj_name(o): o for o in a}, {obj_name(o): o for o in b}
    out = []
    for key in sorted(set(ma) | set(mb)):
        if key not in ma or key not in mb:
            out.append(Change("objects", key, "present" if key in ma else None, "present" if key in mb else None))
            continue
        dd = DeepDiff(ma[key], mb[key], ignore_order=False, verbose_level=2)
        for kind in ("values_changed", "type_changes"):
            for path, d in (dd.get(kind) or {}).items():
                out.append(Change("objects", f"{key} {_path(path)}", d.get("old_value"), d.get("new_value")))
        for kind, (old, new) in (("dictionary_item_added", (None, "x")), ("iterable_item_added", (None, "x")),
                                 ("dictionary_item_removed", ("x", None)), ("iterable_item_removed", ("x", None))):
            for path, value in (dd.get(kind) or {}).items():
                out.append(Change("objects", f"{key} {_path(path)}", value if old else None, value if new else None))
    return out


def _path(deepdiff_path: str) -> str:
    return re.sub(r"\['([^']*)'\]", r".\1", deepdiff_path.removeprefix("root")).replace("][", "].[").lstrip(".")


def compare(a: Facts, b: Facts, *, rendered: bool = False) -> DiffResult:
    res = DiffResult(a.label, b.label)

    def add(pair: tuple[list[Change], list[Change]]) -> None:
        res.changes.extend(pair[0])
        res.unchanged.extend(pair[1])

    flags_a = {k: _json_value(v) for k, v in a.flags.items() if k not in MODEL_FLAGS}
    flags_b = {k: _json_value(v) for k, v in b.flags.items() if k not in MODEL_FLAGS}
    add(_dict_changes("arguments", flags_a, flags_b, lambda k, o, n: _flag_note(k, o, n, b.build)))
    for spelled, flag in sorted({**a.renamed_flags, **b.renamed_flags}.items()):
        res.unchanged.append(Change("arguments", spelled, spelled, flag, f"{spelled} was renamed {flag} upstream"))
    add(_dict_changes("image", a.image, b.image))
    model_a = {k: (", ".join(v) if isinstance(v, list) else v) for k, v in a.model.items()}
    model_b = {k: (", ".join(v) if isinstance(v, list) else v) for k, v in b.model.items()}
    add(_dict_changes("model", model_a, model_b))
    res_a = {k: _canonical_quantity(k, v) for k, v in a.resources.items()}
    res_b = {k: _canonical_quantity(k, v) for k, v in b.resources.items()}
    changed, same = _dict_changes("resources", res_a, res_b)
    for c in changed:  # show what the files say, compare what they mean
        c.old, c.new = a.resources.get(c.key), b.resources.get(c.key)
    res.changes.extend(changed)
    res.unchanged.extend(same)
    add(_dict_changes("environment", a.env, b.env))
    add(_dict_changes("manifest", _manifest_facts(a.manifest), _manifest_facts(b.manifest)))
    ta, tb = _texts(a.manifest), _texts(b.manifest)
    changed_texts = [k for k in ta if ta[k] != tb.get(k)]
    if changed_texts:
        res.changes.append(Change("manifest", "texts", "", f"changed: {', '.join(changed_texts)}"))
    else:
        res.unchanged.append(Change("manifest", "texts", "same", "same"))
    add(_workload_changes(a.objects, b.objects))
    if rendered:
        res.changes.extend(_rendered_changes(a.objects, b.objects))
    return res


# What the sections above do not hold of the workloads, as `import --structured` compares them
# (olares_pack/equivalence.py): containers and workloads added or removed, programs, mounts,
# probes, Services.
_WORKLOAD_KINDS = ("workload.missing", "workload.added", "container.missing", "container.added", "container.command",
                   "container.mounts", "container.probes", "service.missing", "service.added", "service.ports")


def _workload_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[Change], list[Change]]:
    from olares_pack import equivalence

    found = [d for d in equivalence.compare_objects(a, b) if d.kind in _WORKLOAD_KINDS]
    return [Change("workloads", f"{d.where} ({d.kind})", *_brief(d.original, d.other)) for d in found], []


def _brief(old: Any, new: Any, limit: int = 100) -> tuple[Any, Any]:
    """What a reader needs of two changed values: of two mappings only the keys that differ, and a
    long value (a whole mounted script) cut to its start, so one changed line does not print pages."""
    if isinstance(old, dict) and isinstance(new, dict):
        a, b = _leaves(old), _leaves(new)
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        old, new = {k: a[k] for k in keys if k in a}, {k: b[k] for k in keys if k in b}

    def cut(v: Any) -> Any:
        text = str(v)
        return v if v is None or len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"

    return cut(old), cut(new)


def _leaves(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping as 'a.b.c' -> leaf, so the one line that changed is named by its path."""
    out: dict[str, Any] = {}
    for k, v in value.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        out.update(_leaves(v, path) if isinstance(v, dict) and v else {path: v})
    return out


# ---------------------------------------------------------------- output


def _fmt(v: Any) -> str:
    return "—" if v is None else str(v)


def describe(c: Change, key: str) -> str:
    """'<key> old → new', '<key> new added', ... with the note that explains it."""
    text = {"added": f"{key} {_fmt(c.new)} added", "removed": f"{key} {_fmt(c.old)} removed",
            "unchanged": f"{key} {_fmt(c.new)} (unchanged)"}.get(c.kind, f"{key} {_fmt(c.old)} → {_fmt(c.new)}")
    return text + (f" ({c.note})" if c.note else "")


def to_markdown(res: DiffResult, *, show_all: bool = False) -> str:
    lines = [f"Changes from {res.a} to {res.b}:", ""]
    if res.equal:
        lines.append("- no change")
    lines += [f"- {c.section}: {describe(c, f'`{c.key}`')}" for c in res.changes + (res.unchanged if show_all else [])]
    return "\n".join(lines) + "\n"


def to_json(res: DiffResult, *, show_all: bool = False) -> dict[str, Any]:
    return {"a": res.a, "b": res.b, "equal": res.equal, "changes": [c.to_dict() for c in res.changes],
            "unchanged": [c.to_dict() for c in res.unchanged] if show_all else []}


CHANGE_KIND = {"arguments": "engine-args", "image": "image", "model": "model", "resources": "resources",
               "environment": "engine-args", "manifest": "packaging", "objects": "packaging"}


def suggested_changes(res: DiffResult) -> list[tuple[str, str]]:
    """Changelog `changes` pre-filled from a diff (release --changes-from-diff)."""
    return [(CHANGE_KIND[c.section], describe(c, c.key)) for c in res.changes
            if not (c.section == "manifest" and c.key in ("version", "texts"))]


def changes_since_latest(repo: Repo, app_dir: Path) -> list[tuple[str, str]]:
    """The changelog changes (kind, text) from the latest published version to app.yaml
    (release --changes-from-diff)."""
    from olares_pack.catalogue import records
    from olares_pack.catalogue.checks import version_source

    versions = records.versions(repo, app_dir.name)
    if not versions:
        return []
    a = facts(version_source(repo, app_dir, versions[-1], "current"))
    b = facts(version_source(repo, app_dir, "current", "current"))
    return [c for c in suggested_changes(compare(a, b)) if not c[1].startswith("version ")]
