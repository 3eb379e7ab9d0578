"""`olares-pack import --upgrade`: an imported legacy chart (manifest 0.10.0/0.11.0, apiVersion v1
or v2) as a 0.12.0/v3 chart for Olares 1.12.6 and newer, a patch version up, with the list of
what that took, by path. Each mapping follows a public source:

- Envelope: the flat `spec.requiredCpu/limitedCpu/requiredMemory/limitedMemory/requiredDisk/
  limitedDisk/requiredGpu/limitedGpu` become one `spec.accelerator` entry (nvidia when the chart
  asks for a GPU, else cpu) holding all six quantities and, for nvidia, requiredGPUMemory/
  limitedGPUMemory; the flat fields go (beclab/Olares framework/oac README "1.3 spec" and
  "2.2 Rule 4 / Rule 7", internal/manifest/resources.go; the YAML keys are those of beclab/api
  manifest/types.go: AppSpec.Accelerator `accelerator`, ResourceRequirement `requiredGPUMemory`). Each value is raised to the sum of the
  Deployment/StatefulSet containers' requests (required*) or limits (limited*) where lower:
  oac internal/resources/limits.go CheckResourceLimits refuses less ("resources mode=<mode>").
  `nvidia` needs `amd64` in spec.supportArch (Rule 1).
- `options.dependencies` olares `>=1.12.6-0`: the 0.12.0 window (oac options.go).
- `workloadReplicas` lists every rendered Deployment/StatefulSet, and each one's `spec.replicas`
  reads `.Values.workloads.<name>.replicaCount` (a hyphenated name through `index`), with the
  default in values.yaml: the wiring beclab applied to its own catalogue (oac
  scripts/wire_workload_replicas.py; internal/manifest/validate.go workloadReplicas).
- `envs[].envName` starting with OLARES_USER becomes an app-local name (oac internal/manifest/
  envs.go validateV3Envs: "declare an app-local name and map user variables with
  valueFrom.envName"); user variables keep `valueFrom.envName: OLARES_USER_*` as beclab/apps
  difyv3 does (SMTP_PORT from OLARES_USER_SMTP_PORT). The two Hugging Face variables map to the
  system-level ones, as beclab/apps acestep15v3 did in its own v2 -> v3 move ("Map HF_TOKEN /
  HF_ENDPOINT from OLARES_SYSTEM_HUGGINGFACE_TOKEN / OLARES_SYSTEM_HUGGINGFACE_SERVICE"):
  OLARES_USER_HUGGINGFACE_SERVICE -> HF_ENDPOINT, OLARES_USER_HUGGINGFACE_TOKEN -> HF_TOKEN.
  Templates and values.yaml read the local name (`.Values.olaresEnv.<local name>`).
- `permission.<x>: true` for each `.Values.userspace.<x>` the templates use (oac appdata.go
  checkAppDataUsage); top-level `provider` and `permission.provider` removed (validate.go 0.12.0
  provider rules); `spec.supportedGpu` removed.
- Sub-charts (apiVersion v2 `spec.subCharts`): beclab's own v2 -> v3 moves (beclab/apps
  acestep15v2 -> acestep15v3: "flattened the acestep15v2/acestep15v2server sub-charts into a
  single chart ... Cross-namespace backend references now resolve within the release
  namespace"; fishspeechv3, deepseekocrwebuiv3: `spec.onlyAdmin: true` (beclab/api AppSpec.OnlyAdmin),
  no `options.appScope`)
  merge every sub-chart's templates into one chart (templates/<sub>/...), its values into
  values.yaml, name `.Release.Name`/`.Chart.Name` of a sub-chart by the sub-chart's name (its
  release name under v2), and rewrite the shared sub-chart's namespace (`<sub>-shared`) to the
  release namespace. What blocks that (colliding named templates or values, a sub-chart folder
  that is missing, nested charts/) is said, and the app is left as it was.

The containers stay as they were: image, argv, env values, resources, ports, probes, volumes;
only the names above change where they are written."""

from __future__ import annotations

import collections
import copy
import re
from decimal import ROUND_CEILING, Decimal
from typing import Any

import yaml

from olares_pack import olares
from olares_pack.apps.manifest import ChangelogEntry, ChartApp
from olares_pack.charts.objects import containers
from olares_pack.common import quantity
from olares_pack.common import versions as appver
from olares_pack.common.errors import UpgradeBlocked
from olares_pack.common.yamlsrc import safe_load

ENVELOPE = ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk")
FLAT = (*ENVELOPE, "requiredGpu", "limitedGpu", "supportedGpu")
V3_WINDOW = olares.CURRENT.dependency
USERSPACE = ("appData", "appCache", "userData", "appCommon")
# 0.10.0 user-level Hugging Face variables -> (app-local name, the 0.12.0 system variable).
HUGGINGFACE = {"OLARES_USER_HUGGINGFACE_SERVICE": ("HF_ENDPOINT", "OLARES_SYSTEM_HUGGINGFACE_SERVICE"),
               "OLARES_USER_HUGGINGFACE_TOKEN": ("HF_TOKEN", "OLARES_SYSTEM_HUGGINGFACE_TOKEN")}
_USER_VAR = re.compile(r"\bOLARES_USER_[A-Z0-9_]+\b")
# Where a template reads an env value: `.Values.olaresEnv.NAME` or `index .Values.olaresEnv "NAME"`
# (also through a variable holding .Values.olaresEnv). Elsewhere the name may be one a container
# reads (an env var of its own): it is left as written and lint names it.
_READ = re.compile(r"""(olaresEnv\.|olaresEnv\s+["']|\$[A-Za-z_][A-Za-z0-9_]*\.)(OLARES_USER_[A-Z0-9_]+)\b""")




def _plain(note: str) -> str:
    """A note as changelog text (app manifests hold no template delimiters)."""
    return re.sub(r"\{\{-?\s*|\s*-?\}\}", "", note)[:500]


def _memory(v: Decimal) -> str:
    n = int(v.to_integral_value(rounding=ROUND_CEILING))
    for suffix, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def _sums(workloads: list[dict[str, Any]]) -> dict[str, Decimal]:
    """The containers' requests and limits over the Deployments and StatefulSets, summed as the
    installer sums them (oac CheckResourceLimits: init containers and Jobs are not counted)."""
    sums = {k: Decimal(0) for k in ("requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory")}
    pairs = {"requiredCpu": ("requests", "cpu"), "limitedCpu": ("limits", "cpu"),
             "requiredMemory": ("requests", "memory"), "limitedMemory": ("limits", "memory")}
    for o in workloads:
        for _, c in containers(o, init=False):
            for key, (section, res) in pairs.items():
                sums[key] += quantity.parse_or_none(((c.get("resources") or {}).get(section) or {}).get(res)) or 0
    return sums


# ---------------------------------------------------------------- sub-charts


def _merge(base: dict[str, Any], extra: dict[str, Any], where: str) -> None:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v, f"{where}.{k}")
        elif k in base and base[k] != v:
            raise UpgradeBlocked(f"values.yaml: {where}.{k} is {base[k]!r} in one chart and {v!r} in another: "
                          "one values.yaml cannot hold both")
        else:
            base[k] = copy.deepcopy(v)


_DEFINE = re.compile(r"""\{\{-?\s*define\s+"([^"]+)"\s*-?\}\}""")


_OWN_ACTION = re.compile(r"\{\{\s*\.(?:Release|Chart)\.Name\s*\}\}")
_OWN = re.compile(r"\.(?:Release|Chart)\.Name\b")


def _own_name(text: str, sub: str) -> tuple[str, int]:
    """A sub-chart's `.Release.Name`/`.Chart.Name` as the name it had under v2: a whole action
    becomes the literal name, one inside a pipeline the quoted string."""
    text, n = _OWN_ACTION.subn(sub, text)
    text, m = _OWN.subn(f'"{sub}"', text)
    return text, n + m


def _flatten(app: ChartApp, m: dict[str, Any], notes: list[str]) -> dict[str, str]:
    """The chart's files as one chart: each v2 sub-chart's templates under templates/<sub>/."""
    files = dict(app.chart.files)
    spec = m.get("spec") or {}
    subs = [c for c in spec.get("subCharts") or [] if isinstance(c, dict) and c.get("name")]
    if str(m.get("apiVersion", "v1")).lower() != "v2":
        return files
    spec.pop("subCharts", None)
    if not subs:
        notes.append("apiVersion v2 without spec.subCharts: one chart, installed through the v1 path up to 1.12.5")
        return files
    shared = [str(c["name"]) for c in subs if c.get("shared")]
    names = [str(c["name"]) for c in subs]
    out = {k: v for k, v in files.items() if not any(k.startswith(f"{s}/") for s in names)}
    # A multi-chart v2 app installs its sub-charts only, each from its own folder with its own
    # values.yaml and the installer's values (framework/app-service HelmOpsV2.install:
    # helm.InstallCharts(chart.Name, chart.ChartPath(app), chart.Namespace(owner), values)): the
    # root chart's templates and values.yaml reach no device, so the one chart does not take them.
    for path in sorted(p for p in out if p.startswith("templates/")):
        if re.search(r"\.(ya?ml|tpl|json)$", path):
            notes.append(f"{path}: the root chart's template, which v2 never installed: not kept")
            del out[path]
    root_values = safe_load(files.get("values.yaml", "")) or {}
    values: dict[str, Any] = {}
    defines: dict[str, str] = {}
    for s in names:
        part = {k[len(s) + 1:]: v for k, v in files.items() if k.startswith(f"{s}/")}
        if not part:
            if s == app.name and any(k.startswith("templates/") for k in out):
                continue  # the sub-chart is the chart's own root
            raise UpgradeBlocked(f"spec.subCharts names {s!r}, but the chart has no {s}/ folder")
        for path, text in sorted(part.items()):
            if path.startswith("charts/"):
                raise UpgradeBlocked(f"{s}/{path}: a sub-chart with its own charts/ (nested Helm dependencies) cannot be flattened")
            if path == "values.yaml":
                sub_values = safe_load(text) or {}
                if not isinstance(sub_values, dict):
                    raise UpgradeBlocked(f"{s}/values.yaml is not a mapping")
                _merge(values, sub_values, "")
                continue
            if not path.startswith("templates/"):
                notes.append(f"{s}/{path}: a sub-chart's own {path} is not part of one chart: not kept")
                continue
            for d in _DEFINE.findall(text):
                if d in defines:
                    raise UpgradeBlocked(f"{s}/{path} defines the template {d!r}, which {defines[d]} defines too")
                defines[d] = f"{s}/{path}"
            new, n = _own_name(text, s)
            if n:
                notes.append(f"{s}/{path}: .Release.Name/.Chart.Name → \"{s}\" ({n}x): its release name under v2")
            out[f"templates/{s}/{path[len('templates/'):]}"] = new
        notes.append(f"{s}/: its templates are templates/{s}/ of the one chart (beclab/apps acestep15v3 flattened its "
                     "sub-charts the same way)")
    for sh in shared:
        pattern = re.compile(rf"(?<![A-Za-z0-9-]){re.escape(sh)}-shared(?![A-Za-z0-9-])")
        for path, text in sorted(out.items()):
            if path.startswith("templates/") and pattern.search(text):
                out[path], n = pattern.subn("{{ .Release.Namespace }}", text)
                notes.append(f"{path}: the shared namespace {sh}-shared → the release namespace ({n}x): one chart, one namespace")
    dropped = sorted(k for k in (root_values if isinstance(root_values, dict) else {}) if k not in values)
    if dropped:
        notes.append(f"values.yaml: the root chart's {', '.join(dropped)}, which v2 installs of the sub-charts never "
                     "read: not kept (the render stays the one devices installed)")
    if values != root_values:
        out["values.yaml"] = yaml.safe_dump(values, sort_keys=False, allow_unicode=True) if values else "{}\n"
        notes.append("values.yaml: the sub-charts' values (rewritten: comments are gone)")
    if shared:
        spec["onlyAdmin"] = True
        notes.append(f"spec.onlyAdmin: true: the shared sub-chart ({', '.join(shared)}) ran once for every user of the "
                     "cluster; the one v3 chart is installed by the admin (as beclab/apps fishspeechv3, acestep15v3); "
                     "other users reach it through sharedEntrances" + ("" if m.get("sharedEntrances") else
                                                                        " (this app declares none)"))
    opts = m.get("options") or {}
    if opts.pop("appScope", None) is not None:
        notes.append("options.appScope: removed (the cluster-scoped v2 install of a shared sub-chart)")
    deps = opts.get("dependencies") or []
    kept = [d for d in deps if not (isinstance(d, dict) and d.get("type") == "application" and d.get("name") in {app.name, *names})]
    if len(kept) != len(deps):
        opts["dependencies"] = kept
        notes.append("options.dependencies: the app's dependency on its own sub-chart removed")
    return out


# ---------------------------------------------------------------- OLARES_USER names


def _local_name(var: str) -> str:
    return HUGGINGFACE[var][0] if var in HUGGINGFACE else var[len("OLARES_USER_"):]


def _user_env(m: dict[str, Any], files: dict[str, str], notes: list[str]) -> dict[str, str]:
    envs = [e for e in m.get("envs") or [] if isinstance(e, dict)]
    taken = {str(e.get("envName")) for e in envs}
    renames: dict[str, str] = {}
    for i, e in enumerate(envs):
        name = str(e.get("envName", ""))
        src = e.get("valueFrom") if isinstance(e.get("valueFrom"), dict) else None
        if name.startswith("OLARES_USER_"):
            local = _local_name(name)
            if local in taken:
                raise UpgradeBlocked(f"envs[{i}].envName {name}: its app-local name {local} is declared already")
            taken.add(local)
            renames[name] = local
            e["envName"] = local
            frm = str((src or {}).get("envName") or name)
            notes.append(f"envs[{i}].envName: {name} → {local} (oac envs.go: no OLARES_USER envName on v3)")
        else:
            frm = str((src or {}).get("envName") or "")
        if frm in HUGGINGFACE:
            e["valueFrom"] = {**(src or {}), "envName": HUGGINGFACE[frm][1]}
            notes.append(f"envs[{i}].valueFrom.envName: {frm} → {HUGGINGFACE[frm][1]} (system-level on 0.12.0)")
        elif name.startswith("OLARES_USER_"):
            e["valueFrom"] = {**(src or {}), "envName": frm}
    used = sorted({mo.group(2) for path, text in files.items() if path.startswith("templates/") or path == "values.yaml"
                   for mo in _READ.finditer(text)})
    for var in used:
        if var not in renames:
            local = _local_name(var)
            if local in taken:
                raise UpgradeBlocked(f"the templates read {var}, whose app-local name {local} is declared already")
            renames[var] = local
            taken.add(local)
            envs.append({"envName": local, "required": False, "applyOnChange": True,
                         "valueFrom": {"envName": HUGGINGFACE.get(var, (None, var))[1]}})
            notes.append(f"envs: {local} from {HUGGINGFACE.get(var, (None, var))[1]} declared (the templates read {var})")
    if envs:
        m["envs"] = envs
    out = dict(files)
    for path, text in files.items():
        if path.startswith("templates/") or path == "values.yaml":
            read = sorted({mo.group(2) for mo in _READ.finditer(text)})
            new, n = _READ.subn(lambda mo: mo.group(1) + renames.get(mo.group(2), mo.group(2)), text)
            if n:
                out[path] = new
                notes.append(f"{path}: .Values.olaresEnv.{{{', '.join(read)}}} → "
                             f"{{{', '.join(renames[v] for v in read)}}} ({n}x)")
            for var in sorted(set(_USER_VAR.findall(new))):
                notes.append(f"{path}: {var} outside .Values.olaresEnv: left as written (a container may read it by "
                             "that name); 1.12.6 refuses the string OLARES_USER in templates")
    return out


# ---------------------------------------------------------------- replicas


def _doc_name(doc: str, app_name: str) -> str | None:
    doc = doc.replace("\r\n", "\n")  # charts written on Windows
    # the metadata block: indented lines, blank lines and template actions (if/else around a name)
    m = re.search(r"(?m)^metadata:[ \t]*\n((?:[ \t]+.*\n|[ \t]*\n|\{\{.*\n)*)", doc + "\n")
    if not m:
        return None
    line = re.search(r"(?m)^[ \t]{1,4}name:[ \t]*(.+?)[ \t]*$", m.group(1))
    if not line:
        return None
    raw = line.group(1).strip().strip("'\"")
    raw = re.sub(r"\{\{-?\s*\.Release\.Name\s*-?\}\}", app_name, raw)
    raw = re.sub(r"""\{\{-?\s*"([A-Za-z0-9.-]+)"\s*-?\}\}""", r"\1", raw)
    return None if "{{" in raw else raw


def _wire_replicas(files: dict[str, str], names: list[str], app_name: str, notes: list[str]) -> dict[str, str]:
    """`replicas: N` of each workload's document becomes the value stop and resume set."""
    out = dict(files)
    wired: set[str] = set()
    for path, text in sorted(files.items()):
        if not path.startswith("templates/"):
            continue
        docs = re.split(r"(?m)^---(?=[ \t]*\r?$)", text)
        changed = False
        for i, doc in enumerate(docs):
            kind = re.search(r"(?m)^kind:\s*['\"]?(Deployment|StatefulSet)\b", doc)
            name = _doc_name(doc, app_name) if kind else None
            if not kind or name not in names:
                continue
            ref = f".Values.workloads.{name}.replicaCount" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) \
                else f'(index .Values.workloads "{name}").replicaCount'
            wired_line = f"replicas: {{{{ {ref} }}}}"
            old = re.search(r"(?m)^  replicas:([^\r\n]*)", doc)
            if old:
                docs[i] = doc[:old.start()] + "  " + wired_line + doc[old.end():]
            elif re.search(r"(?m)^spec:[ \t]*\r?$", doc):
                docs[i] = re.sub(r"(?m)^spec:[ \t]*(\r?)$", lambda mo: f"spec:{mo.group(1)}\n  {wired_line}{mo.group(1)}", doc,  # noqa: B023 - called at once
                                 count=1)
            else:
                continue
            changed = True
            wired.add(name)
            notes.append(f"{path}: {kind.group(1)} {name}: spec.replicas{old.group(1) if old else ' (unset)'} → "
                         f"{{{{ {ref} }}}} (stop and resume set it)")
        if changed:
            out[path] = "---".join(docs)
    missing = sorted(set(names) - wired)
    if missing:
        raise UpgradeBlocked(f"workload {', '.join(missing)}: its template's metadata.name is computed, so its spec.replicas "
                      "cannot be wired to .Values.workloads.<name>.replicaCount by name; write the name literally")
    return out


def _values_with_workloads(text: str, names: list[str], notes: list[str]) -> str:
    """values.yaml with workloads.<name>.replicaCount: 1, appended as text (its comments kept)."""
    data = safe_load(text) or {}
    if not isinstance(data, dict):
        raise UpgradeBlocked("values.yaml is not a mapping")
    if "workloads" not in data:
        block = "workloads:\n" + "".join(f"  {n}:\n    replicaCount: 1\n" if re.fullmatch(r"[A-Za-z0-9_-]+", n)
                                         else f"  {n!r}:\n    replicaCount: 1\n" for n in names)
        notes.append(f"values.yaml: workloads.<name>.replicaCount: 1 for {', '.join(names)}")
        if not data:  # comments only, or an empty flow mapping `{}` that cannot take a block after it
            text = "".join(line for line in text.splitlines(keepends=True) if line.strip() != "{}")
        head = text.rstrip("\n")
        return (head + "\n\n" if head.strip() else "") + block
    for n in names:
        data["workloads"].setdefault(n, {})["replicaCount"] = 1
    notes.append("values.yaml: workloads.<name>.replicaCount: 1 (rewritten: its comments are gone)")
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


# ---------------------------------------------------------------- the whole conversion


def _render(app: ChartApp, m: dict[str, Any], files: dict[str, str], mode: str) -> list[dict[str, Any]]:
    from olares_pack.render import imported as chartrender

    one = {**m, "apiVersion": "v1"}
    chart = app.chart.model_copy(update={"manifest": one, "manifest_text": None, "files": files})
    return chartrender.objects(app.model_copy(update={"chart": chart}), mode)


def to_current(app: ChartApp, date: Any) -> tuple[ChartApp, list[str]]:
    """The app converted to manifest 0.12.0/v3, a patch version up, and what changed (by path);
    UpgradeBlocked says exactly what stops it."""
    notes: list[str] = []
    m = copy.deepcopy(app.chart.manifest)
    if app.chart.manifest_text is not None:
        notes.append("OlaresManifest.yaml: its template branches resolved as the admin installs it (owner == admin, "
                     "GPU.Type nvidia): a 0.12.0 manifest is static YAML (oac template_syntax.go)")
    api = str(m.get("apiVersion", "v1")).lower()
    if api not in ("v1", "v2"):
        raise UpgradeBlocked(f"apiVersion {api}: not a legacy chart")
    files = _flatten(app, m, notes)
    files = _user_env(m, files, notes)
    m["olaresManifest.version"], m["apiVersion"] = olares.CURRENT.manifest_version, olares.CURRENT.api_version
    notes.append(f"olaresManifest.version {app.chart.manifest_version} → 0.12.0, apiVersion {api} → v3")
    spec = m.setdefault("spec", {})
    text = "\n".join(t for p, t in files.items() if p.startswith("templates/"))
    gpu = any(spec.get(k) for k in ("requiredGpu", "limitedGpu")) or "nvidia.com/" in text or "gpu-inject" in text
    mode = "nvidia" if gpu else "cpu"
    try:
        rendered = _render(app, m, files, mode)
    except Exception as exc:  # noqa: BLE001 - Helm's own message says what does not render
        raise UpgradeBlocked(f"the converted chart does not render: {str(exc).splitlines()[0]}") from None
    # Sub-charts installed in namespaces of their own may reuse a name; merged into one release
    # namespace, Kubernetes (and Helm's install) refuse a second object of one kind and name.
    seen = collections.Counter((str(o.get("kind")), str((o.get("metadata") or {}).get("name"))) for o in rendered)
    twice = sorted(f"{kind} {name}" for (kind, name), n in seen.items() if n > 1)
    if twice:
        raise UpgradeBlocked(f"merged into one namespace, the chart renders {', '.join(twice)} more than once (the sub-charts "
                      "reuse the name in namespaces of their own); rename one of them in chart.files")
    workloads = [o for o in rendered if o.get("kind") in ("Deployment", "StatefulSet")]
    sums = _sums(workloads)
    env: dict[str, Any] = {"mode": mode}
    for key in ENVELOPE:
        value = spec.get(key)
        if value in (None, "") and key == "limitedDisk":
            value = spec.get("requiredDisk")
        if value in (None, ""):
            raise UpgradeBlocked(f"spec.{key} is not set: the {mode} envelope needs all six quantities")
        env[key] = str(value)
        if key in sums and (quantity.parse_or_none(value) or 0) < sums[key]:
            env[key] = quantity.cores_string(sums[key]) if key.endswith("Cpu") else _memory(sums[key])
            notes.append(f"spec.accelerator[{mode}].{key}: {value} → {env[key]}, the containers' "
                         f"{'requests' if key.startswith('required') else 'limits'} summed (1.12.6 refuses less)")
    for req, lim in (("requiredCpu", "limitedCpu"), ("requiredMemory", "limitedMemory"), ("requiredDisk", "limitedDisk")):
        if (quantity.parse_or_none(env[lim]) or 0) < (quantity.parse_or_none(env[req]) or 0):
            notes.append(f"spec.accelerator[{mode}].{lim}: {env[lim]} → {env[req]} (limited >= required, oac Rule 5)")
            env[lim] = env[req]
    if gpu:
        required = spec.get("requiredGpu") or spec.get("limitedGpu")
        if not required:
            raise UpgradeBlocked("the chart asks for a GPU but declares no spec.requiredGpu: the nvidia envelope needs "
                          "requiredGPUMemory (set spec.requiredGpu in chart.manifest of app.yaml, then import again)")
        env["requiredGPUMemory"] = str(required)
        env["limitedGPUMemory"] = str(spec.get("limitedGpu") or required)
    for key in FLAT:
        spec.pop(key, None)
    spec["accelerator"] = [env]
    notes.append(f"spec.accelerator: the flat resources as the {mode} envelope (the flat fields removed)")
    if mode == "nvidia" and "amd64" not in (spec.get("supportArch") or []):
        spec["supportArch"] = [*(spec.get("supportArch") or []), "amd64"]
        notes.append("spec.supportArch: amd64 added (nvidia needs it)")
    names = sorted({str((o.get("metadata") or {}).get("name")) for o in workloads})
    if names:
        m["workloadReplicas"] = {n: 1 for n in names}
        notes.append(f"workloadReplicas: {', '.join(names)}")
    for key in ("provider",):
        if m.pop(key, None) is not None:
            notes.append(f"{key}: removed (0.12.0 has none)")
    perm = m.get("permission") if isinstance(m.get("permission"), dict) else {}
    if perm.pop("provider", None) is not None:
        notes.append("permission.provider: removed (0.12.0 has none)")
    for key in USERSPACE:
        # oac appdata.go reads the lower-case spelling too: `.Values.userspace.appdata` needs appData
        used = [f".Values.userspace.{k}" for k in {key, key.lower()} if re.search(rf"\.Values\.userspace\.{k}\b", text)]
        if used and not perm.get(key):
            perm[key] = True
            notes.append(f"permission.{key}: true (the templates use {used[0]})")
    if perm:
        m["permission"] = perm
    opts = m.setdefault("options", {})
    deps = [d for d in opts.get("dependencies") or [] if not (isinstance(d, dict) and d.get("name") == "olares")]
    opts["dependencies"] = [*deps, {"name": "olares", "type": "system", "version": V3_WINDOW}]
    notes.append(f"options.dependencies: olares {V3_WINDOW}")
    if names:
        files = _wire_replicas(files, names, app.name, notes)
        files["values.yaml"] = _values_with_workloads(files.get("values.yaml", ""), names, notes)
    version = appver.bump(app.version, "patch")
    entry = ChangelogEntry(version=version, date=date,
                           summary="manifest 0.12.0/v3 for Olares 1.12.6 and newer (olares-pack import --upgrade)",
                           changes=[{"kind": "packaging", "text": _plain(n)} for n in notes[:20]])  # type: ignore[list-item]
    chart = app.chart.model_copy(update={"manifest_version": olares.CURRENT.manifest_version, "manifest": m, "manifest_text": None, "files": files})
    upgraded = app.model_copy(update={"version": version, "targets": ["current"], "chart": chart,
                                      "changelog": [*app.changelog, entry]})
    return ChartApp.model_validate(upgraded.model_dump(mode="json")), notes
