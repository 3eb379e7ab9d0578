"""Everything the rules look at for one chart, computed once: parsed files and Helm renders."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import helm_python
import semver
import yaml

from olares_pack import olares as targets
from olares_pack.charts import helm, package
from olares_pack.charts.source import ChartSource
from olares_pack.common import fsio
from olares_pack.common.errors import InputError
from olares_pack.common.yamlsrc import SourceDoc, compose_lines, node_line, parse_yaml_lines, safe_load
from olares_pack.lint.findings import Finding, Severity, make

MANIFEST = "OlaresManifest.yaml"
OWNERS = (("alice", "alice"), ("bob", "alice"))  # owner == admin, owner != admin
LEGACY_WINDOW = targets.LEGACY.dependency  # where the installer pins v1/v2 manifests


@dataclass
class LintOptions:
    kube_version: str = targets.DEFAULT_KUBE_VERSION
    olares_version: str | None = None  # the OS version the chart must install on
    engine_build: str | None = None  # force a flag registry for hand-written charts
    strict: bool = False
    helm_lint: bool = False  # Helm's own lint: warnings only, and a fifth of lint's time (issue #14)
    allow: tuple[str, ...] = ()  # policy rules whose errors are reported as warnings (--allow)


@dataclass
class Render:
    owner: str
    admin: str
    mode: str | None
    objects: list[dict[str, Any]]
    files: dict[int, str] = field(default_factory=dict)  # id(object) -> template it came from

    def file_of(self, obj: dict[str, Any]) -> str:
        return self.files.get(id(obj), "")


@dataclass
class ChartContext:
    source: ChartSource
    options: LintOptions
    findings: list[Finding] = field(default_factory=list)
    chart: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    manifest_doc: SourceDoc | None = None  # for line numbers (static manifests)
    renders: list[Render] = field(default_factory=list)
    zero_replicas: list[dict[str, Any]] | None = None  # the Deployments and StatefulSets of a render with every replicaCount at 0
    declared_modern: bool = False  # olaresManifest.version >= 0.12.0, read from the text
    olares: str = targets.KNOWN_RELEASES[-1]  # the Olares release whose rule set applies
    olares_how: str = "the newest release olares-pack knows"
    olares_explicit: bool = False  # given (--olares, or the olares-pack target), not inferred
    memo: dict[str, Any] = field(default_factory=dict)  # what several rules need, computed once

    # ---- helpers for rules

    @property
    def label(self) -> str:
        return self.source.label

    def add(self, rule: str, message: str, *, file: str = "", path: str = "", hint: str = "",
            severity: Severity | None = None, loc: tuple[Any, ...] | None = None, line: int | None = None) -> None:
        if loc is not None and self.manifest_doc is not None and file == MANIFEST:
            line = self._line_of(loc)
        self.findings.append(make(rule, self.label, message, file=file, path=path, hint=hint, line=line, severity=severity))

    def _line_of(self, loc: tuple[Any, ...]) -> int | None:
        """1-based line of the deepest node of `loc` in the manifest, from libyaml's node tree
        (composed once: a round-trip parse per finding cost more than the rules)."""
        if "nodes" not in self.memo:
            self.memo["nodes"] = compose_lines(self.manifest_doc.text or "")  # type: ignore[union-attr]
        return None if self.memo["nodes"] is None else node_line(self.memo["nodes"], loc)

    @property
    def name(self) -> str:
        md = self.manifest.get("metadata")
        return str(md.get("name", "")) if isinstance(md, dict) else ""

    @property
    def config_version(self) -> semver.Version | None:
        try:
            return semver.Version.parse(str(self.manifest.get("olaresManifest.version", "")))
        except ValueError:
            return None

    @property
    def modern(self) -> bool:
        key = f"modern {self.manifest.get('olaresManifest.version', '')}"  # rules ask often: read once
        if key not in self.memo:
            v = self.config_version
            self.memo[key] = v is not None and v >= semver.Version.parse(targets.MODERN_MANIFEST)
        return self.memo[key]  # type: ignore[no-any-return]

    @property
    def manifest_type(self) -> str:
        return str(self.manifest.get("olaresManifest.type") or "app")

    @property
    def api_version(self) -> str:
        return str(self.manifest.get("apiVersion") or "v1").strip().lower()

    @property
    def olares_dependency(self) -> dict[str, Any] | None:
        opts = self.manifest.get("options") if isinstance(self.manifest.get("options"), dict) else {}
        for d in opts.get("dependencies") or []:
            if isinstance(d, dict) and d.get("name") == "olares" and d.get("type", "system") == "system":
                return d
        return None

    @property
    def spec(self) -> dict[str, Any]:
        s = self.manifest.get("spec")
        return s if isinstance(s, dict) else {}

    @property
    def accelerators(self) -> list[dict[str, Any]]:
        a = self.spec.get("accelerator") or self.spec.get("resources")
        return [e for e in a if isinstance(e, dict)] if isinstance(a, list) else []

    @property
    def modes(self) -> list[str | None]:
        """GPU.Type values to render with: each declared mode, or the legacy GPU/no-GPU guess."""
        if self.accelerators:
            return [str(e.get("mode")) for e in self.accelerators if e.get("mode")]
        return ["nvidia" if self.spec.get("requiredGpu") else None]

    def envelope(self, mode: str | None) -> dict[str, Any]:
        for e in self.accelerators:
            if e.get("mode") == mode:
                return e
        return self.spec

    @property
    def entrance_names(self) -> list[str]:
        ents = self.manifest.get("entrances")
        return [str(e.get("name")) for e in ents if isinstance(e, dict) and e.get("name")] if isinstance(ents, list) else []

    def templates_text(self) -> dict[str, str]:
        """Template files, those of apiVersion v2's sub-charts (<sub>/templates/) included."""
        subs = tuple(f"{c.get('name')}/templates/" for c in self.spec.get("subCharts") or []
                     if isinstance(c, dict) and c.get("name")) if self.api_version == "v2" else ()
        return {k: v for k, v in self.source.files.items() if k.startswith(("templates/", *subs))}

    @cached_property
    def workload_replicas(self) -> dict[str, Any]:
        wr = self.manifest.get("workloadReplicas")
        return wr if isinstance(wr, dict) else {}

    def values(self, owner: str, admin: str, mode: str | None, **extra: Any) -> dict[str, Any]:
        v = helm.installer_values(self.name or self.source.folder, self.entrance_names, owner=owner, admin=admin, gpu_type=mode,
                                  olares_env=helm.env_defaults(self.manifest))
        if extra:
            v.update(extra)
        return v

    def primary_render(self) -> Render | None:
        return self.renders[0] if self.renders else None

    def engines(self) -> list[Any]:
        """The LLM engines the primary render starts (engines/detect.find_engines), found once."""
        if "engines" not in self.memo:
            from olares_pack.engines.detect import find_engines

            r = self.primary_render()
            self.memo["engines"] = find_engines(r.objects) if r else []
        return self.memo["engines"]  # type: ignore[no-any-return]

    def file_of(self, obj: dict[str, Any]) -> str:
        for r in self.renders:
            if id(obj) in r.files:
                return r.files[id(obj)]
        return ""


def render_templated_manifest(source: ChartSource, text: str) -> str:
    """Render a manifest holding Helm template syntax the way the installer does (owner == admin)."""
    chart_yaml = source.files.get("Chart.yaml", f"apiVersion: v2\nname: {source.folder}\nversion: 0.0.0\n")
    files = {"Chart.yaml": chart_yaml, "values.yaml": source.files.get("values.yaml", ""), "templates/manifest.yaml": text}
    for k, v in source.files.items():
        if k.startswith("templates/_") and k.endswith(".tpl"):
            files[k] = v  # named templates the manifest may include
    data = package.build_archive(source.folder, files)
    chart = helm.load_bytes(data)
    try:
        with chart:
            values = helm.installer_values(source.folder, [], owner="alice", admin="alice", gpu_type="nvidia")
            out = chart.render(values=values, name=source.folder, namespace=f"{source.folder}-alice")
    except helm_python.HelmError as exc:
        raise InputError(str(exc)) from None
    return next(iter(out.values()), "")


_VERSION_RE = re.compile(r"^olaresManifest\.version:\s*['\"]?([0-9][^'\"\s]*)", re.M)


def build_context(source: ChartSource, options: LintOptions) -> ChartContext:
    ctx = ChartContext(source, options)
    files = source.files
    missing = [f for f in ("Chart.yaml", "values.yaml", MANIFEST) if f not in files]
    if missing:
        ctx.add("chart.structure", f"missing {', '.join(missing)}", hint="an Olares chart has Chart.yaml, values.yaml, OlaresManifest.yaml and templates/")
    if not any(k.startswith("templates/") for k in files):
        ctx.add("chart.structure", "no templates/ folder")
    try:
        chart = safe_load(files.get("Chart.yaml", "")) or {}
        ctx.chart = chart if isinstance(chart, dict) else {}
    except yaml.YAMLError as exc:
        ctx.add("manifest.parse", f"Chart.yaml is not valid YAML: {exc}", file="Chart.yaml")
    text = files.get(MANIFEST)
    if text is None:
        ctx.add("manifest.parse", "no OlaresManifest.yaml: the installer has no manifest to read", file=MANIFEST)
        return ctx
    m = _VERSION_RE.search(text)
    declared_modern = ctx.declared_modern = bool(m) and targets.is_modern(m.group(1))
    templated = "{{" in text
    try:
        if templated and not declared_modern:
            rendered = render_templated_manifest(source, text)
            data = safe_load(rendered)
        else:
            ctx.manifest_doc, nodes = parse_yaml_lines(text, Path(MANIFEST))
            if nodes is not None:
                ctx.memo["nodes"] = nodes  # for _line_of: the parse's own node tree, not a second compose
            data = ctx.manifest_doc.data
    except InputError as exc:
        ctx.add("manifest.parse", f"OlaresManifest.yaml does not parse: {exc}", file=MANIFEST,
                hint="a 0.12.0 manifest must be static YAML" if declared_modern else "")
        return ctx
    except yaml.YAMLError as exc:
        ctx.add("manifest.parse", f"rendered OlaresManifest.yaml is not valid YAML: {exc}", file=MANIFEST)
        return ctx
    ctx.manifest = data if isinstance(data, dict) else {}
    if not ctx.manifest:
        ctx.add("manifest.parse", "OlaresManifest.yaml is not a mapping", file=MANIFEST)
    _select_release(ctx)
    return ctx


def _select_release(ctx: ChartContext) -> None:
    """The Olares release whose rules apply: --olares, else the target olares-pack rendered for,
    else the newest known release the chart's own olares dependency admits."""
    if ctx.options.olares_version:
        ctx.olares, ctx.olares_how, ctx.olares_explicit = ctx.options.olares_version, "--olares", True
        return
    dep = ctx.olares_dependency
    constraint = str(dep.get("version") or "") if dep else ""
    if not constraint and not ctx.declared_modern and ctx.manifest:
        # v1/v2 manifests install only inside the legacy window, whatever they declare
        # (from 1.12.6 oac pins them to it; earlier installers accept nothing newer).
        constraint = LEGACY_WINDOW
    if not constraint:
        return
    try:
        admitted = [v for v in targets.KNOWN_RELEASES if targets.admits(constraint, v)]
    except InputError:
        return
    if not ctx.declared_modern:
        # v1/v2 manifests install only inside the legacy window, whatever their own dependency
        # admits: from 1.12.6 oac pins them there ("This app version has been deprecated").
        constraint = f"{constraint} (and {LEGACY_WINDOW})"
        admitted = [v for v in admitted if targets.admits(LEGACY_WINDOW, v)] or admitted
    if admitted:
        ctx.olares, ctx.olares_how = admitted[-1], f"the newest known release its olares dependency {constraint!r} admits"
        ctx.olares_explicit = ctx.source.target is not None


@contextmanager
def _chart_folder(source: ChartSource) -> Iterator[Path]:
    """A folder Helm loads the chart from: the chart's own where it was read from one, else its
    files written to a scratch folder (an archive, a rendered app, a market source's version)."""
    if source.on_disk is not None and source.on_disk.is_dir():
        yield source.on_disk
        return
    with tempfile.TemporaryDirectory(prefix="olares-pack-lint-", dir=fsio.scratch_dir()) as tmp:
        chart_dir = Path(tmp) / source.folder
        fsio.write_tree(source.files, chart_dir)
        fsio.write_binary_files(source.binary, chart_dir)
        yield chart_dir


def run_helm(ctx: ChartContext) -> None:
    """Helm lint and the installer's renders (each owner/admin pairing, each mode)."""
    if not ctx.manifest:
        return
    if "Chart.yaml" not in ctx.source.files:
        ctx.add("helm.render", "no Chart.yaml: Helm cannot load the chart", file="Chart.yaml")
        return
    with _chart_folder(ctx.source) as chart_dir:
        name = ctx.name or ctx.source.folder
        messages: list[helm.HelmMessage] = []
        if ctx.options.helm_lint:
            try:
                values = ctx.values(*OWNERS[0], ctx.modes[0])
                messages = helm.lint(chart_dir, values, namespace=f"{name}-alice", kube_version=ctx.options.kube_version)
            except helm_python.HelmError as exc:
                messages = [helm.HelmMessage("error", "", str(exc))]
        for msg in messages:
            if msg.severity in ("error", "warning"):
                # The installer renders rather than lints: Helm's lint errors are warnings here,
                # and a render that fails is reported as helm.render (an error).
                ctx.add("helm.lint", msg.message, file=msg.path, severity="warning" if msg.severity == "error" else "info")
        # apiVersion v2 installs each spec.subCharts entry as a chart of its own, from the folder of
        # that name (framework/oac chart.go renderAllSubCharts); other apps are one chart.
        parts = [(name, chart_dir, "")]
        if ctx.api_version == "v2":
            subs = [str(c.get("name")) for c in ctx.spec.get("subCharts") or [] if isinstance(c, dict) and c.get("name")]
            parts = [(sub, chart_dir / sub, f"{sub}/") for sub in subs if (chart_dir / sub / "Chart.yaml").is_file()] or parts
        loaded = []
        try:
            for release, folder, prefix in parts:
                loaded.append((release, helm.load(folder), prefix))
        except InputError as exc:
            ctx.add("helm.render", str(exc))
            for _, c, _ in loaded:
                c.close()
            return
        docs: dict[str, Any] = {}  # rendered document text -> object, shared by the renders
        try:
            mode_blind = len(ctx.modes) > 1 and not _reads_gpu(ctx)
            for owner, admin in _owner_scenarios(ctx):
                first: Render | None = None
                for mode in ctx.modes:
                    if mode_blind and first is not None:
                        # no template reads the GPU values: this mode renders what the first did
                        ctx.renders.append(Render(owner, admin, mode, first.objects, first.files))
                        continue
                    objects: list[dict[str, Any]] = []
                    files: dict[int, str] = {}
                    try:
                        for release, chart, prefix in loaded:
                            out = chart.render(values=ctx.values(owner, admin, mode), name=release, namespace=f"{name}-{owner}")
                            pairs = [(p, o) for p, o in helm.objects(out, docs, _as_owner(owner, OWNERS[0][0])) if isinstance(o, dict)]
                            # Helm names templates '<chart>/templates/x.yaml'; findings use the path in the folder linted.
                            files.update({id(o): prefix + (p.split("/", 1)[1] if "/" in p else p) for p, o in pairs})
                            objects += [o for _, o in pairs]
                    except (helm_python.HelmError, yaml.YAMLError) as exc:
                        who = "owner == admin" if owner == admin else "owner != admin"
                        ctx.add("helm.render", f"render fails ({who}, GPU.Type={mode}): {_short(str(exc))}")
                        continue
                    first = Render(owner, admin, mode, objects, files)
                    ctx.renders.append(first)
            ctx.zero_replicas = _render_zero(ctx, loaded[0][1], name, docs) if ctx.modern and len(loaded) == 1 else None
            if _allows_multiple(ctx) and len(loaded) == 1:
                ctx.memo["probes"] = _render_probes(ctx, loaded[0][1], name, docs)
        finally:
            for _, c, _ in loaded:
                c.close()


# "gpu" in any case (no other character lowercases to g, p or u), `.Values` used whole (`{{ .Values }}`,
# `.Values | ...`, `(... .Values)`), or dumped: each pattern starts with a literal the regex engine
# searches for, where one alternation of them tried every position (116 ms over the 4.3 MB of
# templates of the 198 v3 charts, against 30 ms now, with str.lower() dropped too)
_GPU_ANY_CASE = re.compile(r"[gG][pP][uU]")
_VALUES_WHOLE = re.compile(r"\.Values\s*(?:\}\}|\||\))")
_VALUES_DUMPED = re.compile(r"to(?:Yaml|Json|PrettyJson)\s+\$?\.Values\b")


def _reads_gpu(ctx: ChartContext) -> bool:
    """Whether a template can see the compute mode: through .Values.GPU / .Values.gpu (the only
    values that differ between modes), or by dumping .Values whole."""
    texts = [v for k, v in ctx.source.files.items() if "templates/" in k]
    return any(_GPU_ANY_CASE.search(t) or _VALUES_WHOLE.search(t) or _VALUES_DUMPED.search(t) for t in texts)


PROBES = ("oac-lint-probe-a", "oac-lint-probe-b")  # the release names oac renders with (cluster_scoped.go)
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass",
                  "CustomResourceDefinition", "PriorityClass", "MutatingWebhookConfiguration",
                  "ValidatingWebhookConfiguration", "IngressClass", "RuntimeClass"}
# The kinds the probes' renders are read for (template_rules.multiple_install): workloads and cluster-scoped objects.
_PROBED_KINDS = ("Deployment", "StatefulSet", *sorted(CLUSTER_SCOPED))


def _may_be_probed(text: str) -> bool:
    """Whether a document can be of a kind the probes are read for: the kind spelt out in the
    text, unless an escape in a double-quoted scalar spells it."""
    return "\\" in text or any(kind in text for kind in _PROBED_KINDS)


def _allows_multiple(ctx: ChartContext) -> bool:
    opts = ctx.manifest.get("options")
    return isinstance(opts, dict) and opts.get("allowMultipleInstall") is True


def _render_probes(ctx: ChartContext, chart: helm_python.Chart, name: str, docs: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
    """The chart rendered under two other release names, as oac does for options.allowMultipleInstall
    (its workloads and cluster-scoped objects: other documents are not parsed).
    A document the release name does not reach renders as it did under the app's name: `docs`
    (the first renders' documents, by text) spares parsing it again."""
    out = []
    for release in PROBES:
        try:
            rendered = chart.render(values=ctx.values(*OWNERS[0], ctx.modes[0]), name=release, namespace=f"{name}-alice")
            out.append([o for _, o in helm.objects(rendered, docs, wanted=_may_be_probed) if isinstance(o, dict)])
        except (helm_python.HelmError, yaml.YAMLError):
            return None
    return out


def _owner_scenarios(ctx: ChartContext) -> tuple[tuple[str, str], ...]:
    """Both installs (owner == admin, owner != admin) when a template can tell them apart, which
    it can only through .Values.admin; otherwise the second render would differ from the first
    only in the owner's name, which changes no rule's verdict (see _as_owner), so it is skipped."""
    texts = (v for k, v in ctx.source.files.items() if "templates/" in k)
    return OWNERS if any("admin" in t for t in texts) else OWNERS[:1]


def _as_owner(owner: str, first: str) -> Callable[[str], str] | None:
    """How a document of another owner's render is matched with the first render's: the same text
    once the owner's name is swapped back. Such a document differs only in names (namespace, user
    paths), which change no rule's verdict, so the first render's object stands for it."""
    if owner == first:
        return None
    name = re.escape(owner)
    if re.fullmatch(r"\w(?:.*\w)?", owner, re.S):
        # \bNAME\b with the name first: the regex engine then looks for the name itself (a
        # literal search) rather than trying a word boundary at every position, which cost 64 ms
        # over the 2 MB the second owner's renders of the 198 v3 charts hold
        other = re.compile(rf"{name}(?<!\w{name})(?!\w)")
    else:
        other = re.compile(rf"\b{name}\b")
    return lambda text: other.sub(first, text) if owner in text else text


def _render_zero(ctx: ChartContext, chart: helm_python.Chart, name: str, docs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A render with every workloads.<name>.replicaCount set to 0, the way stop works: its
    Deployments and StatefulSets (other documents are not parsed)."""
    keys = set(ctx.workload_replicas)
    if ctx.renders:
        keys |= {o.get("metadata", {}).get("name") for o in ctx.renders[0].objects if o.get("kind") in ("Deployment", "StatefulSet")}
    keys.discard(None)
    if not keys:
        return None
    if _wired_in_text(ctx, keys):
        return []  # each replicas: line is the value itself: the zero render can only say 0
    values = ctx.values(*OWNERS[0], ctx.modes[0])
    values["workloads"] = {k: {"replicaCount": 0} for k in sorted(keys)}
    try:
        out = chart.render(values=values, name=name, namespace=f"{name}-alice")
        return [o for _, o in helm.objects(out, docs, wanted=_may_be_workload) if isinstance(o, dict)]
    except (helm_python.HelmError, yaml.YAMLError):
        return None


def _may_be_workload(text: str) -> bool:
    """Whether a document can be a Deployment or StatefulSet, the only kinds stop's render is read
    for (template_rules.replicas_wiring): its kind is spelt out in the text, unless an escape in a
    double-quoted scalar spells it."""
    return "Deployment" in text or "StatefulSet" in text or "\\" in text


# `^kind: ...` (re.M) with the literal first, so that the engine searches for it: the line start
# is the lookbehind (no character but a newline before it)
_WORKLOAD_KIND = re.compile(r"kind:(?<![^\n]kind:)\s*[\"']?(Deployment|StatefulSet)[\"']?\s*$", re.M)
_WIRED = re.compile(r"^\s*replicas:\s*\{\{-?\s*\.Values\.workloads\.([A-Za-z0-9_]+)\.replicaCount\s*-?\}\}\s*$")


def _replicas_lines(text: str) -> list[str]:
    """The lines `^\\s*replicas:.*$` (re.M) finds, each from its own line's start: the regex tries
    a line start at every position, 35 ms over the templates of the 198 v3 charts; a search for
    the word, then a look at what stands before it on its line, finds the same lines."""
    lines = []
    for m in re.finditer("replicas:", text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start == m.start() or text[start:m.start()].isspace():  # \s is str.isspace() for str patterns
            end = text.find("\n", m.start())
            lines.append(text[start:] if end < 0 else text[start:end])
    return lines


def _wired_in_text(ctx: ChartContext, keys: set[str]) -> bool:
    """Whether every Deployment/StatefulSet template sets `replicas: {{ .Values.workloads.<name>.replicaCount }}`
    and nothing else as its replicas, one line per workload (then stop's render needs no Helm)."""
    for text in ctx.templates_text().values():
        if "Deployment" not in text and "StatefulSet" not in text:
            continue
        kinds = len(_WORKLOAD_KIND.findall(text))
        if not kinds:
            continue
        lines = _replicas_lines(text)
        wired = [m.group(1) for line in lines if (m := _WIRED.match(line))]
        if len(lines) != kinds or len(wired) != kinds or not set(wired) <= keys:
            return False
    return True


def _short(text: str) -> str:
    return text.strip().splitlines()[0][:400] if text.strip() else text
