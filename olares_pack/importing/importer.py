"""`olares-pack import`: hand-written charts (folders, .tgz packages, folders of many, or a live
market source) become apps of this repository: `apps/<name>/app.yaml` holding the chart as it
was written (a ChartApp), and one release record per version whose package is the source's own
bytes (generation 0: never rendered here). Nothing is dropped silently: what an app manifest
cannot hold is listed by path in the report, and `--strict` fails on it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from olares_pack import __version__, olares
from olares_pack.apps.load import validate_data
from olares_pack.apps.manifest import ChangelogEntry, ChartApp
from olares_pack.catalogue import checks as catalogue
from olares_pack.catalogue import records
from olares_pack.catalogue.records import ChartRecord, EngineRecord, Record
from olares_pack.catalogue.repo import MANIFEST_FILE, Repo
from olares_pack.charts import package
from olares_pack.charts.source import ChartSource, is_archive, packaged, walk
from olares_pack.common import versions as appver
from olares_pack.common.errors import InputError, UpgradeBlocked
from olares_pack.common.naming import MAX_TITLE, NAME_RE, RESERVED_NAMES, name_re
from olares_pack.common.yamlsrc import safe_load
from olares_pack.render import imported as chartrender

TOOL = f"olares-pack {__version__}"
MANIFEST = "OlaresManifest.yaml"
# OlaresManifest.yaml keys the app's own fields hold (chartrender writes them back).
_SPEC_TEXTS = {**chartrender.SPEC_FIELDS, "license": "license", "upgradeDescription": None}


@dataclass
class Imported:
    """A chart version as an app, what it took, and what could not be kept."""

    found: ChartSource
    app: ChartApp
    line: str = ""  # the target its manifest generation installs on
    notes: list[str] = field(default_factory=list)  # changed or not representable, by path
    publishable: bool = True  # False: imported as a version still to be released (not recorded)
    engine: EngineRecord | None = None  # the engine its render runs, flags parsed back
    # --structured: typed or kept as written, why, and the differences the comparison found
    structured: dict[str, Any] | None = None

    @property
    def engine_text(self) -> str:
        e = self.engine
        if e is None or e.kind == "chart":
            return "chart" + (f" ({e.flags.get('image')})" if e and e.flags.get("image") else "")
        build = f" {e.build}" if e.build else ""
        return f"{e.kind}{build}: {e.flags.get('image', '')}, {len(e.flags) - 1} flags"

    @property
    def name(self) -> str:
        return self.app.name

    @property
    def chart_version(self) -> str:
        return str(safe_load(self.found.files.get("Chart.yaml", "")).get("version", ""))


@dataclass
class Refused:
    """A chart version that is not imported, and why."""

    found: ChartSource
    problem: str
    notes: list[str] = field(default_factory=list)
    app: None = None  # reports read a refused chart beside the imported ones
    engine: None = None

    @property
    def name(self) -> str:
        return self.found.folder


# ---------------------------------------------------------------- sources


def find(source: str, *, os_versions: tuple[str, ...] = olares.LIVE_SOURCE_OS_VERSIONS, progress: Any = None,
         report: list[str] | None = None) -> list[ChartSource]:
    """Every chart version in `source`: a chart folder, a .tgz, a folder of those, or the base URL
    of a market source (every app's details and every version it lets a device download; what it
    lists, names in versionHistory and serves is said in `report`)."""
    if re.match(r"^https?://", source):
        from olares_pack.market import client as marketclient

        return marketclient.fetch(source, os_versions, progress, report)
    path = Path(source)
    if not path.exists():
        raise InputError(f"{source}: no such file or folder (or an http(s):// market source)")
    return [packaged(p) for p in _charts(path)]


def _charts(path: Path) -> list[Path]:
    if path.is_file():
        if is_archive(path):
            return [path]
        raise InputError(f"{path}: not a chart folder, a .tgz chart or a folder of charts")
    if (path / "Chart.yaml").exists():
        return [path]
    if not (found := walk(path, apps=False)):
        raise InputError(f"{path}: holds no chart folder or chart archive")
    return found


# ---------------------------------------------------------------- one chart -> an app


def proposed_name(name: str) -> str:
    """A valid app name close to `name` (lowercase letters and digits, at most 30)."""
    out = re.sub(r"[^a-z0-9]", "", name.lower())[:30] or "app"
    return out if out not in RESERVED_NAMES else f"{out}app"[:30]


# Markdown emphasis around words (**New**, _fast_), never a character inside a word: "KV cache
# q4_0" is a quantization's name and reaches the market as written.
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1(?![\w*])")


def shorter_title(title: str, limit: int = MAX_TITLE) -> str:
    """A title of at most `limit` characters: whole words while they fit, else the words cut."""
    words, out = title.split(), ""
    for w in words:
        if len(f"{out} {w}".strip()) > limit:
            break
        out = f"{out} {w}".strip()
    return out or title[:limit].strip()


def _first_line(text: str) -> str:
    """The first line of a "what's new" text that says something, without its list or heading
    marks and the emphasis around words; every other character kept."""
    for line in text.splitlines():
        if re.fullmatch(r"[-*#_=\s]*", line):  # blank, a rule or a bare mark
            continue
        line = _EMPHASIS.sub(r"\2", re.sub(r"^(?:#+\s+|[*+-]\s+)+", "", line.strip())).strip()
        if line:
            return line[:200]
    return ""


def _manifest(found: ChartSource, notes: list[str]) -> tuple[dict[str, Any], str | None]:
    """The manifest as data, and its text when it holds template syntax (kept verbatim)."""
    from olares_pack.charts.source import ChartSource
    from olares_pack.lint.context import render_templated_manifest

    text = found.files.get(MANIFEST)
    if text is None:
        raise InputError("no OlaresManifest.yaml")
    m = re.search(r"^olaresManifest\.version:\s*['\"]?([0-9][^'\"\s]*)", text, re.M)
    if "{{" in text and not (m and olares.is_modern(m.group(1))):
        rendered = render_templated_manifest(ChartSource(found.label, found.folder, found.files), text)
        notes.append(f"{MANIFEST}: holds template syntax; kept as its text (texts are read from a render; "
                     "edit the text to change them)")
        data = safe_load(rendered)
        return (data if isinstance(data, dict) else {}), text
    data = safe_load(text)
    if not isinstance(data, dict):
        raise InputError(f"{MANIFEST} is not a mapping")
    return data, None


def _renamed(found: ChartSource, old: str, new: str, notes: list[str]) -> ChartSource:
    """The chart with its app name replaced wherever it stands as a name (not inside other words)."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(old)}(?![A-Za-z0-9_])")
    files = {}
    for path, text in found.files.items():
        files[path], n = pattern.subn(new, text)
        if n:
            notes.append(f"{path}: the name {old!r} → {new!r} ({n}x) (--rename)")
    return replace(found, folder=new, files=files,
                   package=package.compress(package.build_tar(new, {**files, **found.binary})))


def to_app(found: ChartSource, default_date: dt.date, *, rename: bool = False, notes: list[str] | None = None,
           publishable: bool = True, for_current: bool = False) -> Imported | Refused:
    """One chart version as an app. Its name is checked as the installers of the line it is
    written for check it (a 0.10.0 chart keeps a 31-character name: only 1.12.6+ refuses it);
    `for_current` (import --upgrade --rename) holds it to the 1.12.6+ rule as well."""
    notes = [] if notes is None else notes
    try:
        chart = safe_load(found.files.get("Chart.yaml", "")) or {}
        if not isinstance(chart, dict):
            raise InputError("Chart.yaml is not a mapping")
        manifest, manifest_text = _manifest(found, notes)
    except (InputError, yaml.YAMLError) as exc:
        return Refused(found, str(exc).splitlines()[0])
    md = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    name = str(md.get("name") or chart.get("name") or found.folder)
    current = for_current or olares.own_target(str(manifest.get("olaresManifest.version") or "")) == olares.CURRENT.name
    if not name_re(current).match(name) or name in RESERVED_NAMES:
        new = proposed_name(name)
        if not rename:
            return Refused(found, f"app name {name!r} is not valid on Olares (^[a-z0-9]{{1,30}}$); "
                           f"a valid one would be {new!r} (--rename applies it)")
        # The chart's own bytes name the old app: a renamed app is a new app, to be released.
        found = _renamed(found, name, new, notes)
        return to_app(found, default_date, rename=False, notes=notes, publishable=False, for_current=for_current)
    written = str(md.get("version") or chart.get("version") or "")
    # A version in the maintainer's own spelling (26.08.29) stays as written (common/versions.py);
    # another form devices read (v1.2) takes its strict spelling, as a version still to be released.
    if (version := written if appver.is_version(written) else _strict_version(written)) is None:
        return Refused(found, f"version {written!r} is not a version")
    if version != written:
        notes.append(f"metadata.version: {written!r} is not strict semver: the app is {version}, to be released "
                     "(its original package is not recorded as published)")
        publishable = False
    data = _app_data(found, chart, manifest, manifest_text, name, version, default_date, notes)
    line = olares.own_target(data["chart"]["manifest_version"])
    data["targets"] = [line]
    representable(data, notes)
    try:
        app = validate_data(data, found.label)
    except InputError as exc:
        detail = "; ".join(f"{p.path}: {p.message}" for p in exc.problems) or str(exc)
        return Refused(found, f"not representable as an app manifest: {detail}")
    assert isinstance(app, ChartApp)
    notes += round_trip(found, app, line)
    from olares_pack.catalogue.releases import chart_engine

    notes[:] = list(dict.fromkeys(notes))  # a renamed chart is read twice: each note once
    return Imported(found, app, line, notes, publishable=publishable, engine=chart_engine(app))


def _strict_version(version: str) -> str | None:
    """The version in strict semver: as written, or the strict spelling of a version devices read
    loosely; None when it is no version."""
    try:
        appver.parse(version)
        return version
    except ValueError:
        pass
    try:
        return str(olares.parse_os_version(version))
    except InputError:
        return None


def _app_data(found: ChartSource, chart: dict[str, Any], manifest: dict[str, Any], manifest_text: str | None,
              name: str, version: str, default_date: dt.date, notes: list[str]) -> dict[str, Any]:
    """The app manifest's data: the texts and fields OlaresManifest.yaml and Chart.yaml give the
    app, the rest of the chart kept as written (what a manifest cannot hold noted)."""
    md = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    rest = {k: v for k, v in manifest.items()}
    rest["metadata"] = {k: v for k, v in md.items() if k not in chartrender.METADATA_FIELDS}
    rest["spec"] = {k: v for k, v in spec.items() if k not in _SPEC_TEXTS}
    if not rest["metadata"]:
        del rest["metadata"]
    if not rest["spec"]:
        del rest["spec"]
    # The chart's own "what's new" is kept verbatim (render writes it back); a source's version
    # history only words the summary when the chart says nothing.
    upgrade = spec.get("upgradeDescription")
    locales, locale_changes = _locales(found, notes)
    summary = _first_line(str(upgrade or "")) or _first_line(found.upgrade or "") or chartrender.imported_summary(version)
    entry: dict[str, Any] = {"version": version, "date": (found.date or default_date).isoformat(), "summary": summary,
                             "notes": str(upgrade) if upgrade else "", "locales": locale_changes}
    files = {k: v for k, v in found.files.items()
             if k not in ("Chart.yaml", MANIFEST) and not re.match(r"^i18n/[^/]+/OlaresManifest\.yaml$", k)}
    for k in sorted(k for k in files if k.startswith("i18n/")):
        # the market and the installer read only i18n/<locale>/OlaresManifest.yaml
        notes.append(f"{k}: not an i18n/<locale>/OlaresManifest.yaml file, which no device reads: not kept")
        del files[k]
    for path in sorted(found.binary):
        notes.append(f"{path}: a binary file; an app manifest holds text only: not kept")
    data: dict[str, Any] = {
        "name": name, "version": version, "title": md.get("title"), "description": md.get("description"),
        "icon": md.get("icon"), "categories": md.get("categories") or [],
        "developer": spec.get("developer") or _developer(spec, name, notes), "changelog": [entry], "locales": locales,
        "chart": {"manifest_version": str(manifest.get("olaresManifest.version") or ""), "manifest": rest,
                  "manifest_text": manifest_text,
                  "chart_yaml": {k: v for k, v in chart.items() if k not in chartrender.CHART_FIELDS},
                  "files": files},
    }
    for key, fld in chartrender.SPEC_FIELDS.items():
        if key != "developer" and spec.get(key) is not None:
            data[fld] = str(spec[key])
    if isinstance(spec.get("license"), list):
        data["license"] = spec["license"]
    return data


# Texts an app manifest cannot hold but a device shows: template delimiters are refused in app
# manifests (fields.TEMPLATE_DELIMITERS: olares-pack renders texts into Helm templates), while a
# hand-written chart's manifest may hold them as text (a lone `}}` is literal to Go templates;
# a 0.12.0 manifest is not rendered at all). A space between the two characters keeps the text
# readable and representable.
_DELIMITER = re.compile(r"\{\{|\{%|\{#")  # a lone `}}` is text (fields.TEMPLATE_DELIMITERS)
# Optional fields whose empty value a device takes as unset (the market shows nothing).
_OPTIONAL = ("version_name", "full_description", "developer", "submitter", "website", "source_code", "doc")


def representable(data: dict[str, Any], notes: list[str]) -> None:
    """Map device-accepted values an app manifest cannot hold into ones it can, each with a note:
    an empty optional text is absent, template delimiters in texts are spaced."""
    for key in _OPTIONAL:
        if key in data and isinstance(data[key], str) and not data[key].strip():
            notes.append(f"{key}: {data[key]!r} (empty) taken as absent, as a device shows it; the next render leaves it out")
            del data[key]

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, str) and _DELIMITER.search(value):
            found = sorted(set(_DELIMITER.findall(value)))
            notes.append(f"{path}: {', '.join(repr(d) for d in found)} in a text → "
                         f"{', '.join(repr(d[0] + ' ' + d[1]) for d in found)} (app manifests hold no template "
                         "delimiters; the published package keeps the original)")
            return _DELIMITER.sub(lambda m: f"{m.group()[0]} {m.group()[1]}", value)
        return value

    for key in [k for k in data if k not in ("chart", "name", "version", "targets")]:
        data[key] = walk(data[key], key)
    for loc, texts in (data.get("locales") or {}).items():
        if isinstance(texts, dict) and isinstance(texts.get("full_description"), str) and not texts["full_description"].strip():
            notes.append(f"locales.{loc}.full_description: empty, taken as absent")
            del texts["full_description"]


def _developer(spec: dict[str, Any], name: str, notes: list[str]) -> str:
    """A chart without spec.developer installs (the market shows none), while an app manifest
    names one: the submitter, else the app's name, said in the report."""
    who = str(spec.get("submitter") or "").strip() or name
    notes.append(f"spec.developer: {'empty' if 'developer' in spec else 'absent'} (a device shows none); the app "
                 f"manifest names {who!r} ({'the submitter' if spec.get('submitter') else 'the app name'})")
    return who


def _locales(found: ChartSource, notes: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per-locale texts (i18n/<locale>/OlaresManifest.yaml) and per-locale "what's new"."""
    texts: dict[str, Any] = {}
    changes: dict[str, Any] = {}
    for path, text in sorted(found.files.items()):
        m = re.match(r"^i18n/([^/]+)/OlaresManifest\.yaml$", path)
        if not m:
            continue
        loc = m.group(1)
        try:
            doc = safe_load(text) or {}
        except yaml.YAMLError:
            notes.append(f"{path}: not valid YAML: not kept")
            continue
        md, spec = doc.get("metadata") or {}, doc.get("spec") or {}
        if loc == "en-US":
            notes.append(f"{path}: en-US texts are the app's own (metadata/spec): this file is not kept")
            continue
        if md.get("title") and md.get("description"):
            texts[loc] = {"title": md["title"], "description": md["description"]}
            if spec.get("fullDescription"):
                texts[loc]["full_description"] = spec["fullDescription"]
        if spec.get("upgradeDescription"):
            changes[loc] = {"summary": _first_line(spec["upgradeDescription"]) or "-", "notes": spec["upgradeDescription"]}
        kept = {("metadata", "title"), ("metadata", "description"), ("spec", "fullDescription"), ("spec", "upgradeDescription")}
        for section, value in doc.items():
            for key in (value or {}) if isinstance(value, dict) else [None]:
                if (section, key) not in kept:
                    notes.append(f"{path}: {section}{'.' + key if key else ''} is not a per-locale text: not kept")
    return texts, changes


def _yaml_docs(text: str) -> list[Any] | None:
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return None


def round_trip(found: ChartSource, app: ChartApp, line: str) -> list[str]:
    """What rendering the app gives that the original did not say, file by file (data, not text,
    for the files render() composes; templates and values are compared as text)."""
    rendered = chartrender.render(app, olares.get(line))
    out = []
    for path in sorted(set(found.files) | set(rendered)):
        a, b = found.files.get(path), rendered.get(path)
        if a == b:
            continue
        if a is None or b is None:
            if b is None and re.match(r"^i18n/en-US/OlaresManifest\.yaml$", path):
                continue  # said once already (_locales: the en-US texts are the app's own)
            out.append(f"{path}: {'added' if a is None else 'not kept'} by the import")
            continue
        if path in ("Chart.yaml", MANIFEST) or path.startswith("i18n/"):
            da, db = _yaml_docs(a), _yaml_docs(b)
            if da is not None and da == db:
                continue
            if isinstance(da, list) and isinstance(db, list) and len(da) == len(db) == 1:
                diffs = records.differences(da[0], db[0])
                out += [f"{path}: {d}" for d in diffs]
                continue
        out.append(f"{path}: differs after the import")
    return out


# ---------------------------------------------------------------- a catalogue -> apps and records


@dataclass
class Plan:
    writes: dict[Path, bytes | str] = field(default_factory=dict)
    results: list[Imported | Refused] = field(default_factory=list)
    apps: dict[str, list[str]] = field(default_factory=dict)  # app name -> versions imported
    skipped: dict[str, str] = field(default_factory=dict)  # app name -> why not
    # --structured: app name -> (the chart it replaces, the typed app's data), for `--run`
    typed: dict[str, tuple[Imported, dict[str, Any]]] = field(default_factory=dict)
    charts: dict[str, list[Imported]] = field(default_factory=dict)  # app name -> its published charts

    def status(self, r: Imported | Refused) -> str:
        if isinstance(r, Refused):
            return "refused"
        if r.name in self.skipped:
            return "skipped"
        return "to release" if not r.publishable else "with notes" if r.notes else "imported"

    def rows(self) -> list[dict[str, Any]]:
        """One row per chart version, as the report shows it: app, version, source, engine, status, notes."""
        return [{"app": r.name, "version": r.app.version if r.app else "", "from": r.found.label,
                 "engine": r.engine_text if r.app else "", "status": self.status(r),
                 "notes": [r.problem] if isinstance(r, Refused) else [self.skipped[r.name]] if r.name in self.skipped else r.notes,
                 **({"structured": r.structured} if getattr(r, "structured", None) is not None else {})}
                for r in sorted(self.results, key=lambda r: (r.name, r.found.label))]

    def counts(self) -> tuple[int, int, int]:
        """(imported, with notes, not imported) chart versions."""
        ok = sum(1 for r in self.results if isinstance(r, Imported) and r.name not in self.skipped)
        noted = sum(1 for r in self.results if r.notes)
        refused = sum(1 for r in self.results if isinstance(r, Refused) or r.name in self.skipped)
        return ok, noted, refused

    def write(self, repo: Repo) -> list[Path]:
        """Every file of the plan, in one transaction."""
        from olares_pack.catalogue.journal import Transaction

        txn = Transaction(repo.root)
        for path, data in sorted(self.writes.items()):
            txn.write(path, data)
        return txn.commit()


def _base_version(version: str, line: str) -> str:
    """The release a chart belongs to: an olares-pack legacy line (1.0.10-legacy) is 1.0.10's."""
    v = appver.parse(version)
    if line == olares.LEGACY.name and v.prerelease and str(v.prerelease).split(".")[0] == "legacy":
        return appver.without_prerelease(version)
    return version


def _dependency(found: ChartSource, line: str) -> str:
    data = safe_load(found.files.get(MANIFEST, "")) if "{{" not in found.files.get(MANIFEST, "") else {}
    for d in ((data or {}).get("options") or {}).get("dependencies") or []:
        if isinstance(d, dict) and d.get("name") == "olares" and d.get("version"):
            return str(d["version"])
    return olares.get(line).dependency


def plan(repo: Repo, founds: list[ChartSource], date: dt.date, *, upgrade: bool = False, rename: bool = False,
         structured: bool = False, accept: tuple[str, ...] = ()) -> Plan:
    """Every file an import writes, computed without writing: per app, one record per published
    release (each target's package the source's own bytes), app.yaml (the newest chart, or the
    newest still to be released; --upgrade and --structured make it the next version), the ledger."""
    out = Plan()
    by_file: dict[tuple[str, str], ChartSource] = {}
    for f in founds:
        by_file.setdefault((f.folder, package.sha256(f.package or b"")), f)  # a chart seen twice (two OS views)
    # --upgrade --rename: a name the 1.12.6+ line refuses is renamed (a new app); without --rename
    # the 1.12.3-1.12.5 line takes it as it is and the upgrade says what it needs
    out.results = [to_app(f, date, rename=rename, for_current=upgrade and rename) for f in by_file.values()]
    groups: dict[str, list[Imported]] = defaultdict(list)
    for imp in out.results:
        if isinstance(imp, Imported):
            groups[imp.name].append(imp)
    existing = records.published_apps(repo)
    all_recs = catalogue.load_records(repo)
    for name, imps in sorted(groups.items()):
        if name in existing or (repo.apps_dir / name).exists():
            out.skipped[name] = f"apps/{name} already exists"
            continue
        published = [i for i in imps if i.publishable]
        by_release = _releases(published)
        if isinstance(by_release, str):
            out.skipped[name] = by_release
            continue
        recs, entries = _records(repo, name, by_release, out.writes)
        app_data = _newest_app(recs, entries, [i for i in imps if not i.publishable])
        if app_data is None:
            out.skipped[name] = "no version to import"
            continue
        newest = max(published or imps, key=lambda i: appver.parse(i.app.version))
        if upgrade and app_data["targets"] == [olares.LEGACY.name]:
            app_data = _upgraded(app_data, date, newest)
        if structured:
            app_data = _typed(app_data, date, newest, published=[r.version for r in recs], accept=accept)
            if (newest.structured or {}).get("typed"):
                out.typed[name] = (newest, app_data)
        out.charts[name] = published
        out.writes[repo.apps_dir / name / MANIFEST_FILE] = dump_app(app_data)
        out.apps[name] = [r.version for r in recs]
        if recs:
            all_recs[name] = recs
    if out.apps:
        out.writes[repo.index_file] = catalogue.ledger_text(all_recs)
        from olares_pack.catalogue import offer

        out.writes[offer.offer_file(repo)] = offer.text(
            repo, all_recs, {p: d for p, d in out.writes.items() if isinstance(d, bytes)})
    return out


def _releases(imps: list[Imported]) -> dict[str, dict[str, Imported]] | str:
    """The published charts by release and target line, or why they cannot be imported."""
    by_release: dict[str, dict[str, Imported]] = defaultdict(dict)
    for imp in imps:
        base = _base_version(imp.app.version, imp.line)
        if imp.line in by_release[base]:
            return f"two {imp.line} charts of version {base} with different bytes"
        by_release[base][imp.line] = imp
    return by_release


def _records(repo: Repo, name: str, by_release: dict[str, dict[str, Imported]],
             writes: dict[Path, bytes | str]) -> tuple[list[Record], list[ChangelogEntry]]:
    """One release record per release, oldest first (its packages added to `writes`), and the
    changelog entries they carry."""
    primary = olares.CURRENT.name if any(olares.CURRENT.name in r for r in by_release.values()) else olares.LEGACY.name
    recs: list[Record] = []
    entries: list[ChangelogEntry] = []
    for base in sorted(by_release, key=appver.parse):
        lines = by_release[base]
        lead = lines.get(primary) or next(iter(lines.values()))
        app = lead.app.model_copy(update={"version": base})
        entry = app.changelog[0].model_copy(update={"version": base})
        entries.append(entry)
        charts = {}
        for line, imp in sorted(lines.items()):
            version, data = imp.chart_version, imp.found.package or b""
            path = repo.package_path(line, name, version)
            writes[path] = data
            charts[line] = ChartRecord(file=repo.rel(path), sha256=package.sha256(data), size=len(data),
                                       content_sha256=package.content_digest(data), olares=_dependency(imp.found, line),
                                       version=version)
        rec = Record(name=name, version=base, published=entry.date, tool=TOOL, generation=0, charts=charts,
                     engine=lead.engine, changelog=[entry], manifest=records.resolved_manifest(app))
        recs.append(rec)
        writes[records.path_of(repo, name, base)] = records.dumps(rec)
    return recs, entries


def _newest_app(recs: list[Record], entries: list[ChangelogEntry], pending: list[Imported]) -> dict[str, Any] | None:
    """app.yaml's data: the newest chart still to be released when it is newer than every record,
    else the newest record's manifest; the changelog of both."""
    newest_pending = max(pending, key=lambda i: appver.parse(i.app.version), default=None)
    if newest_pending is not None and (not recs or appver.parse(newest_pending.app.version) >
                                       appver.parse(recs[-1].version)):
        app_data = records.resolved_manifest(newest_pending.app)
        entries = [*entries, newest_pending.app.changelog[0]]
    elif recs:
        app_data = dict(recs[-1].manifest)
    else:
        return None
    app_data["changelog"] = [e.model_dump(mode="json", exclude_defaults=True) for e in entries]
    return app_data


def _upgraded(app_data: dict[str, Any], date: dt.date, newest: Imported) -> dict[str, Any]:
    """The app as a 0.12.0/v3 chart, a version to release; what it took, and what the 1.12.6
    rules still refuse, go to the newest chart's notes."""
    from olares_pack.charts.source import ChartSource
    from olares_pack.importing import upgrade
    from olares_pack.lint import LintOptions, lint_chart

    if not NAME_RE.match(app_data["name"]):
        newest.notes.append(f"--upgrade: not converted (the app stays {app_data['version']} for 1.12.3-1.12.5, which "
                            f"take its name): the 1.12.6+ installer takes app names of at most 30 characters "
                            f"(^[a-z0-9]{{1,30}}$), {app_data['name']!r} has {len(app_data['name'])}; import with "
                            f"--upgrade --rename (a new app, {proposed_name(app_data['name'])!r})")
        return app_data
    app = validate_data(app_data, newest.found.label)
    assert isinstance(app, ChartApp)
    if len(app.title) > MAX_TITLE:
        short = shorter_title(app.title)
        newest.notes.append(f"--upgrade: title {app.title!r} ({len(app.title)} characters) → {short!r}: the 1.12.6+ "
                            f"installer takes at most {MAX_TITLE}; 1.12.3-1.12.5 keep the published title (edit `title` "
                            "in app.yaml before the release)")
        app = app.model_copy(update={"title": short})
    try:
        new, notes = upgrade.to_current(app, date)
    except UpgradeBlocked as exc:
        newest.notes.append(f"--upgrade: not converted (the app stays {app.version} for 1.12.3-1.12.5): {exc}")
        return app_data
    newest.notes += [f"--upgrade to {new.version}: {n}" for n in notes]
    files = chartrender.render(new, olares.CURRENT)
    findings = lint_chart(ChartSource(f"{new.name}@current", new.name, files), LintOptions(olares_version=olares.DEFAULT_OS_VERSION)).findings
    newest.notes += [f"--upgrade: still refused by {olares.DEFAULT_OS_VERSION}: {f.rule}: {f.message}" for f in findings if f.severity == "error"]
    data = records.resolved_manifest(new)
    data["changelog"] = [e.model_dump(mode="json", exclude_defaults=True) for e in new.changelog]
    return data


def _typed(app_data: dict[str, Any], date: dt.date, newest: Imported, published: list[str],
           accept: tuple[str, ...] = ()) -> dict[str, Any]:
    """The app in olares-pack's typed form when its engine fits it and the typed render makes the
    same app as the original (the independent proof, olares_pack/proof/), every OS line it targets; else the chart as
    written, the differences in the report. `accept` names kinds of difference taken on purpose:
    the typed app keeps them (`imported.accepted`), so the release record of its first version does."""
    from olares_pack.importing import structure

    app = validate_data(app_data, newest.found.label)
    assert isinstance(app, ChartApp)
    try:
        try:
            typed, notes = structure.structured(app)
        except InputError as exc:
            if "an engine olares-pack does not model" not in str(exc):
                raise
            typed, notes = structure.generic(app)  # a GPU server of another kind, typed as written
    except (InputError, ValueError) as exc:
        reason = str(exc).splitlines()[0]
        newest.notes.append(f"--structured: kept as written: {reason}")
        newest.structured = {"typed": False, "reason": reason, "differences": [], "accepted": []}
        return app_data
    data = records.resolved_manifest(typed)
    # what the typed app keeps of the chart, as the chart writes it: no field it does not set
    from olares_pack.apps.kept import k8s

    for key in ("workload", "olares"):
        if getattr(typed, key, None) is not None:
            data[key] = k8s(getattr(typed, key))
    if getattr(typed, "objects", None):
        data["objects"] = [k8s(o) for o in typed.objects]  # type: ignore[union-attr]
    entries = list(typed.changelog)
    if typed.version in published:  # a published version keeps its record: the typed form is the next version
        version = appver.bump(appver.newest([typed.version, *published]), "patch")
        data["version"] = version
        entries.append(ChangelogEntry(version=version, date=date, summary="olares-pack's typed app manifest "
                                      "(olares-pack import --structured)"))
    data["changelog"] = [e.model_dump(mode="json", exclude_defaults=True) for e in entries]
    # The claim "the same app" is the independent proof's (olares_pack/proof/: flags keep the words
    # written after them, aliases only through the build's own table, scripts as text, the
    # engine's own parser on every llama-server), on every line the app targets and every user form.
    from olares_pack.proof import charts as proof

    diffs: list[Any] = []
    parsed: list[str] = []
    for line in app.targets:
        try:
            files = render_app(data, line)
        except (InputError, ValueError) as exc:
            diffs.append(proof.Difference("undecidable", f"typed render for {line}", str(exc).splitlines()[0], None))
            continue
        # the chart the typed app replaces: the source's own, or with --upgrade its 0.12.0 conversion
        original = newest.found.files if line == newest.line else chartrender.render(app, olares.get(line))
        p = proof.prove(app.name, original, files)
        diffs += [replace(d, where=f"{line}: {d.where}") if len(app.targets) > 1 else d for d in p.differences]
        parsed += [f"{line}: {e}" if len(app.targets) > 1 else e for e in p.engine]
        if p.window:
            newest.notes.append(f"--structured: {line}: the olares window where the app is offered: {p.window}")
    left = [d for d in diffs if d.kind in proof.NEVER_ACCEPTED or d.kind not in accept]
    taken = [d for d in diffs if d not in left]
    newest.notes += [f"--structured: {n}" for n in notes]
    newest.notes += [f"--structured: llama-server's parser: {e}" for e in parsed]
    if left:
        kinds = sorted({d.kind for d in left})
        reason = ("equivalence cannot be decided" if "undecidable" in kinds else
                  "llama-server refuses the typed render's arguments: " + next(d.other for d in left if d.kind == "engine.refused")
                  .splitlines()[0] if "engine.refused" in kinds else
                  f"the typed render differs ({len(left)} difference(s): {', '.join(kinds)})")
        newest.notes.append(f"--structured: kept as written: {reason}")
        newest.notes += [f"--structured differs: {d.text()}" for d in left]
        newest.structured = {"typed": False, "reason": reason, "differences": [d.to_dict() for d in left],
                             "accepted": [d.to_dict() for d in taken]}
        return app_data
    if taken:
        data["imported"] = {"original": app.version, "accepted": [{"kind": d.kind, "where": d.where} for d in taken]}
        newest.notes += [f"--structured accepted: {d.text()}" for d in taken]
    newest.structured = {"typed": True, "reason": None, "differences": [], "accepted": [d.to_dict() for d in taken]}
    return data


def render_app(data: dict[str, Any], line: str) -> dict[str, str]:
    from olares_pack.render import app as render

    return render.render(validate_data(data, data.get("name", "app")), olares.get(line))


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not re.search(r"[ \t]\n|[^\S\n]$|\r", value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_app(data: dict[str, Any]) -> str:
    """app.yaml of an imported chart: plain YAML, multi-line texts and files as literal blocks."""
    head = ("# Imported by olares-pack from a hand-written chart: `chart.files` are its files as they were, and\n"
            "# `chart.manifest` its OlaresManifest.yaml less what the fields above say. Edit, then release.\n"
            if "chart" in data else
            "# Imported by olares-pack (--structured): the chart's engine, model and resources as typed settings.\n")
    body = yaml.dump({k: v for k, v in data.items() if v not in (None, [], {})}, Dumper=_Dumper, sort_keys=False,
                     allow_unicode=True, width=4096, default_flow_style=False)
    return head + body
