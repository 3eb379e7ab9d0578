"""Where a maintainer fixes a finding: the file and line in the repository, not in the render.

Lint reads an app manifest (or a published `.tgz` of one) as the chart it renders to, so its
findings name rendered files (`templates/deployment.yaml`, `OlaresManifest.yaml`) that exist in
no repository: GitHub cannot place an annotation there. This moves each finding of an app
manifest or an archive onto what is edited — `apps/<name>/app.yaml` at the field's line (an
imported chart's template at its line inside `chart.files`), or olares-pack's own Jinja template
under `templates/` for what no manifest field decides — and keeps the rendered place in the
message. Chart folders are files of their own and keep their paths.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from olares_pack.catalogue import MANIFEST_FILE
from olares_pack.charts.source import ChartSource
from olares_pack.lint.findings import Finding
from olares_pack.lint.runner import ChartResult

# Manifest keys the app's own fields hold (OlaresManifest.yaml key -> app.yaml field).
_OWN_FIELDS = {"name": "name", "title": "title", "description": "description", "icon": "icon", "version": "version",
               "categories": "categories", "versionName": "version_name", "fullDescription": "full_description",
               "developer": "developer", "submitter": "submitter", "website": "website", "sourceCode": "source_code",
               "doc": "doc", "license": "license", "entrances": "entrance", "upgradeDescription": "changelog"}

# For apps olares-pack renders: the app.yaml fields that decide what a rule looks at, first present wins.
_RULE_FIELDS: dict[str, tuple[tuple[Any, ...], ...]] = {
    "image.unpinned": (("engine", "image"),),
    "engine.build": (("engine", "build"), ("engine", "image", "tag")),
    "engine.flag": (("server",),),
    "engine.value": (("server",),),
    "engine.parse": (("server",), ("engine", "build")),
    "engine.defaults": (("server",),),
    "engine.port": (("server", "port"),),
    "gpu.hami-limit": (("env", "CUDA_DEVICE_MEMORY_LIMIT_0"), ("resources", "gpu_memory_mib")),
    "vram.budget": (("resources", "gpu_memory_mib"),),
    "template.gpu-memory": (("resources", "gpu_memory_mib"),),
    "template.resources": (("resources",),),
    "template.envelope": (("resources",),),
    "manifest.resources": (("resources",),),
    "manifest.entrances": (("entrance",),),
    "manifest.mode-arch": (("modes",),),
    "manifest.os-window": (("targets",),),
    "manifest.olares-dependency": (("targets",),),
    "manifest.i18n": (("locales",),),
    "secret.plaintext": (("env",),),
    "chart.name": (("name",),),
    "chart.version": (("version",),),
    "chart.app-version": (("version_name",), ("engine", "image", "tag")),
}
_CONTAINER = re.compile(r"(initContainers|containers)\[([^\]]+)\]")
# containers of the shared form whose image is not engine.image (templates/llmbase/llm-init.yaml.j2)
_HELPER_IMAGES = {"llm-init": "llm_init", "init-chown": "chown_image", "adopt-model": "chown_image", "proxy": "proxy_image"}


def place_results(results: list[ChartResult], sources: list[ChartSource], cwd: Path | None = None) -> list[ChartResult]:
    """`results` (in the order of `sources`) with each finding of an app manifest or archive
    placed on the file a maintainer edits."""
    cwd = (cwd or Path.cwd()).resolve()
    out = []
    for result, source in zip(results, sources, strict=True):
        placer = _placer(source, cwd)
        out.append(result if placer is None else dataclasses.replace(result, findings=[placer.place(f) for f in result.findings]))
    return out


class _Placer:
    def __init__(self, app_yaml: Path | None, archive: str | None, app: Any, cwd: Path) -> None:
        self.app_yaml, self.archive, self.app, self.cwd = app_yaml, archive, app, cwd
        self._doc: _Lines | None = None

    @property
    def doc(self) -> _Lines:
        if self._doc is None:
            self._doc = _Lines(self.app_yaml.read_text(encoding="utf-8"))  # type: ignore[union-attr]
        return self._doc

    def _line(self, loc: tuple[Any, ...]) -> int | None:
        return self.doc.line_of(loc)

    def _has(self, loc: tuple[Any, ...]) -> bool:
        node = self.doc.data
        for key in loc:
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                node = node[key]
            else:
                return False
        return True

    def place(self, f: Finding) -> Finding:
        # a finding about the app manifest itself (the online checks) names no rendered file
        rendered = "" if f.file == "app.yaml" else f.file + (f":{f.line}" if f.line and f.file else "")
        if self.app_yaml is None:  # an archive of no app here: the archive itself, the member in the message
            return self._moved(f, self.archive or f.chart, None, rendered, "in")
        file, line = self._where(f)
        return self._moved(f, file, line, rendered, "rendered")

    def _moved(self, f: Finding, file: str, line: int | None, rendered: str, how: str) -> Finding:
        message = f"{f.message} ({how} {rendered})" if rendered and rendered != file else f.message
        return dataclasses.replace(f, file=file, line=line, message=message)

    def _where(self, f: Finding) -> tuple[str, int | None]:
        app_yaml = str(self.app_yaml)
        chart = getattr(self.app, "chart", None)
        if chart is not None and f.file in chart.files:  # an imported chart's file, kept in app.yaml as written
            return app_yaml, self._chart_file_line(f, chart.files[f.file])
        if f.file == "OlaresManifest.yaml" and f.path:
            loc = _loc(f.path)
            own = loc[1] if loc[:1] in (("metadata",), ("spec",)) and len(loc) > 1 else (loc[0] if loc else None)
            for candidate in ((_OWN_FIELDS[own],) if own in _OWN_FIELDS else (), ("chart", "manifest", *loc) if loc else ()):
                if candidate and self._has(candidate[:2 if candidate[0] == "chart" else 1]):
                    return app_yaml, self._line(candidate)
        if f.file.startswith("i18n/") and self._has(("locales",)):
            return app_yaml, self._line(("locales", f.file.split("/")[1]))
        if chart is None:
            for loc in _RULE_FIELDS.get(f.rule, ()):
                if self._has(loc):
                    return app_yaml, self._line(self._item(f, loc))
            template = self._template(f.file)
            if template is not None:
                return template, None
        elif f.file == "Chart.yaml" and self._has(("chart", "chart_yaml")):
            return app_yaml, self._line(("chart", "chart_yaml"))
        return app_yaml, self._line(("name",)) if not f.file else None

    def _item(self, f: Finding, loc: tuple[Any, ...]) -> tuple[Any, ...]:
        """An engine flag written in server.extra_args: that item; a helper container's image
        (the shared form's llm-init and its chown step): its own field, or `engine` when it keeps
        the default."""
        helper = _HELPER_IMAGES.get(m.group(2)) if loc == ("engine", "image") and (m := _CONTAINER.search(f.path)) else None
        if helper is not None:
            return ("engine", helper) if self._has(("engine", helper)) else ("engine",)
        if loc == ("server",) and self._has(("server", "extra_args")):
            for i, arg in enumerate(self.doc.data["server"]["extra_args"] or []):
                flag = str(arg).split("=", 1)[0]
                if flag.startswith("-") and re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", f.message):
                    return ("server", "extra_args", i)
        return loc

    def _chart_file_line(self, f: Finding, text: str) -> int | None:
        key = self._line(("chart", "files", f.file))
        if key is None:
            return None
        line = f.line or _find(text, f)
        raw = self.doc.lines[key - 1] if key <= len(self.doc.lines) else ""
        # A block scalar (`path: |`) holds the file from the next line on; a quoted one-liner has no lines to point at.
        return key + line if line and re.search(r":\s*[|>][-+0-9]*\s*(#.*)?$", raw) else key

    def _template(self, rendered: str) -> str | None:
        """olares-pack's own template of a rendered file, when this repository holds it."""
        from olares_pack.render.app import CHART_FILES, V2_SERVER_TEMPLATES

        # a v2 sub-chart's file (<sub>/templates/x.yaml): the template of its file in the sub-chart
        sub = rendered.split("/", 1)[1] if re.match(r"[^/]+/templates/", rendered) else None
        name = (CHART_FILES.get(rendered) or ("i18n.yaml.j2" if rendered.startswith("i18n/") else None)
                or (V2_SERVER_TEMPLATES.get(sub) if sub else None)
                or ("sharedv2/client.yaml.j2" if sub == "templates/client.yaml" else None))
        return self._template_path(name) if name else None

    def _template_path(self, name: str) -> str | None:
        path = (Path(__file__).resolve().parent.parent.parent / "templates" / name)
        try:
            return path.relative_to(self.cwd).as_posix() if path.is_file() else None
        except ValueError:  # an installed olares-pack: its templates are no file of this repository
            return None


class _Lines:
    """An app.yaml's data and the line of each of its keys, from libyaml's node tree (the
    round-trip reader that keeps comments is several times slower on an imported chart's
    app.yaml, and only lines are wanted here)."""

    def __init__(self, text: str) -> None:
        from olares_pack.common.yamlsrc import compose_lines, safe_load

        self.lines = text.splitlines()
        self.data = safe_load(text)
        self.root = compose_lines(text)

    def line_of(self, loc: tuple[Any, ...]) -> int | None:
        """1-based line of the deepest key of `loc` that the file holds (1 for none)."""
        from olares_pack.common.yamlsrc import node_line

        return node_line(self.root, loc)


def _find(text: str, f: Finding) -> int | None:
    """The line of a template that holds the container a finding names (templates say their
    container names literally; a finding about an object has no line of its own): its `name:`
    after the `containers:` (or `initContainers:`) key."""
    m = _CONTAINER.search(f.path)
    if m is None:
        return None
    section = re.compile(rf"^\s*{m.group(1)}:\s*$")
    pattern = re.compile(rf"""^\s*-?\s*name:\s*["']?{re.escape(m.group(2))}["']?\s*$""")
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        inside = inside or bool(section.match(line))
        if inside and pattern.match(line):
            return n
    return None


def _loc(path: str) -> tuple[Any, ...]:
    """'spec.accelerator[0].mode' -> ('spec', 'accelerator', 0, 'mode'); a finding's path may end in words."""
    out: list[Any] = []
    for part in re.findall(r"[^.\[\]\s:]+|\[\d+\]", path.split(":")[0].split(" ")[0]):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def _placer(source: ChartSource, cwd: Path) -> _Placer | None:
    label = source.label
    if source.app is not None:  # labelled <app.yaml>@<target>
        return _Placer(Path(label.rsplit("@", 1)[0]), None, source.app, cwd)
    if not label.endswith((".tgz", ".tar.gz")):
        return None  # a chart folder: its files are the repository's files
    app_yaml = _app_of_archive(Path(label), source.folder)
    app = None
    if app_yaml is not None:
        from olares_pack.apps.load import load_app
        from olares_pack.common.errors import OlaresPackError

        try:
            app = load_app(app_yaml)
        except OlaresPackError:
            app_yaml = None
    return _Placer(app_yaml, label, app, cwd)


def _app_of_archive(archive: Path, name: str) -> Path | None:
    """apps/<name>/app.yaml of the repository the archive was published in (packages/<target>/…)."""
    for parent in archive.parents:
        candidate = parent / "apps" / name / MANIFEST_FILE
        if candidate.is_file():
            return candidate
    return None
