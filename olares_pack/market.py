"""The market-source payloads, computed once from market-index.json and the packages.

A device asks with its Olares version; it sees, for each app, the newest published version
whose chart's olares dependency admits that version. Everything it reads is derived from the
ledger and the chart bytes, never from the clock, so the same catalogue always gives the same
bytes and the hash changes exactly when what that OS version sees changes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import semver
import yaml

from . import index, package, quantity, targets
from .errors import InputError
from .repo import INDEX_FILE
from .targets import admits
from .yamlsrc import safe_load

CATEGORY = "AI"
EMPTY_TIME = "1970-01-01T00:00:00Z"


def dumps(doc: Any) -> bytes:
    """Compact, key-sorted JSON: the same document always gives the same bytes."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


@dataclass
class Chart:
    """One published package, as the ledger lists it. Its bytes and manifest are read when a view
    shows it (the newest chart of an app for some OS version); older charts stay on disk until a
    device asks for one by file name."""

    name: str
    version: str
    target: str
    file_name: str
    path: Path
    sha256: str
    dependency: str  # the chart's olares dependency, as recorded
    published: str  # YYYY-MM-DD from the ledger
    order: semver.Version = field(init=False)  # the version, parsed once for comparisons
    data: bytes | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    i18n: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.order = semver.Version.parse(self.version)

    def read(self) -> bytes:
        """The package bytes, refused when they are not the ones the ledger records."""
        if self.data is not None:
            return self.data
        try:
            data = self.path.read_bytes()
        except OSError:
            raise InputError(f"{self.path}: listed in the ledger but missing") from None
        if package.sha256(data) != self.sha256:
            raise InputError(f"{self.path}: sha256 {package.sha256(data)} differs from the ledger's {self.sha256}")
        return data

    def load(self) -> Chart:
        """Keep the bytes and read the manifest and per-locale files (a chart a view shows)."""
        if self.data is None:
            data = self.read()
            try:
                _, files, _ = package.read_archive_split(data)
                self.manifest = safe_load(files.get("OlaresManifest.yaml", "")) or {}
                self.i18n = {rel.split("/")[1]: safe_load(text) or {} for rel, text in files.items()
                             if rel.startswith("i18n/") and rel.count("/") == 2 and rel.endswith("/OlaresManifest.yaml")}
            except (ValueError, OSError, EOFError, tarfile.TarError, yaml.YAMLError) as exc:
                raise InputError(f"{self.path}: not a readable chart: {exc}") from None
            if not isinstance(self.manifest, dict) or not self.manifest:
                raise InputError(f"{self.path}: no readable OlaresManifest.yaml")
            self.data = data
        return self


@dataclass
class View:
    """What one Olares version sees; precomputed bodies keyed by the request's version string."""

    hash: str
    last_updated: str
    data: dict[str, Any]
    details: dict[str, dict[str, Any]]  # app id -> ApplicationInfoEntry
    charts: dict[str, Chart]  # app name -> the chart this OS version installs
    bodies: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Catalogue:
    ledger: dict[str, Any]
    charts: list[Chart]  # every published chart, all versions, all targets
    icons: dict[str, bytes]
    ledger_sha256: str
    base_url: str = ""  # where this source is reachable: icons in apps/<name>/icon.png are served under it
    views: dict[tuple[str, ...], View] = field(default_factory=dict)
    by_version: dict[str, View] = field(default_factory=dict)  # request version string -> its view

    def chart_for(self, os_version: str) -> dict[str, Chart]:
        """For each app, the newest chart whose olares dependency admits this OS version."""
        admitted = {dep: admits(dep, os_version) for dep in {c.dependency for c in self.charts}}
        best: dict[str, Chart] = {}
        for c in self.charts:
            if admitted[c.dependency]:
                cur = best.get(c.name)
                if cur is None or c.order > cur.order:
                    best[c.name] = c
        return dict(sorted(best.items()))

    def view(self, os_version: str) -> View:
        """The view of one version string; resolving the windows once per string keeps the
        constraint parsing off the request path."""
        cached = self.by_version.get(os_version)
        if cached is not None:
            return cached
        charts = {name: c.load() for name, c in self.chart_for(os_version).items()}
        key = tuple(f"{c.name}@{c.version}/{c.target}" for c in charts.values())
        if key not in self.views:
            self.views[key] = build_view(self, charts)
        if len(self.by_version) >= 256:  # bounded: devices send a handful of versions
            self.by_version.pop(next(iter(self.by_version)))
        self.by_version[os_version] = self.views[key]
        return self.views[key]

    def archive(self, name: str, file_name: str, os_version: str | None) -> Chart | None:
        matches = [c for c in self.charts if c.name == name and c.file_name == file_name]
        if len(matches) > 1 and os_version:
            admitted = [c for c in matches if admits(c.dependency, os_version)]
            matches = admitted or matches
        # both targets share the name: without a usable OS version, the current target's wins
        matches.sort(key=lambda c: c.target != targets.CURRENT.name)
        return matches[0] if matches else None


def _epoch(date_text: str) -> int:
    return int(dt.datetime.fromisoformat(date_text).replace(tzinfo=dt.timezone.utc).timestamp())


def _bytes_str(value: Any) -> str:
    return str(quantity.to_bytes(value)) if value not in (None, "") else ""


def _cores_str(value: Any) -> str:
    return quantity.cores_string(value) if value not in (None, "") else ""


def _locale_map(c: Chart, section: str, key: str, fallback: str = "") -> dict[str, str]:
    main = (c.manifest.get(section) or {}).get(key) or fallback
    out = {"en-US": str(main)}
    for loc, doc in c.i18n.items():
        value = (doc.get(section) or {}).get(key)
        if value:
            out[loc] = str(value)
    return out


def entry(cat: Catalogue, c: Chart) -> dict[str, Any]:
    """The ApplicationInfoEntry a device stores, every field with the JSON type it expects."""
    m = c.manifest
    md, spec = m.get("metadata") or {}, m.get("spec") or {}
    envelope = next((e for e in spec.get("accelerator") or [] if e.get("mode") == "nvidia"),
                    (spec.get("accelerator") or [spec])[0])
    app_id = index.app_id(c.name)
    history = [h for h in index.version_history(cat.ledger, c.name)
               if semver.Version.parse(h["version"]) <= semver.Version.parse(c.version)]
    versions = [v for v in (cat.ledger["apps"].get(c.name) or {}).get("versions", [])]
    first = min((v["published"] for v in versions), default=c.published)
    i18n = {loc: {"metadata": {k: doc.get("metadata", {}).get(k, "") for k in ("title", "description")},
                  "spec": {k: doc.get("spec", {}).get(k, "") for k in ("fullDescription", "upgradeDescription")}}
            for loc, doc in sorted(c.i18n.items())}
    gpu_req = envelope.get("requiredGPUMemory") or envelope.get("requiredGpu")
    gpu_lim = envelope.get("limitedGPUMemory") or envelope.get("limitedGpu")
    return {
        "id": app_id,
        "name": c.name,
        "cfgType": str(m.get("olaresManifest.type") or "app"),
        "chartName": c.file_name,
        "icon": f"{cat.base_url}/icons/{c.name}.png" if cat.base_url and c.name in cat.icons else str(md.get("icon", "")),
        "description": _locale_map(c, "metadata", "description"),
        "appID": app_id,
        "title": _locale_map(c, "metadata", "title"),
        "version": c.version,
        "apiVersion": str(m.get("apiVersion") or "v1"),
        "categories": [str(x) for x in md.get("categories") or [CATEGORY]],
        "versionName": str(spec.get("versionName", "")),
        "fullDescription": _locale_map(c, "spec", "fullDescription"),
        "upgradeDescription": _locale_map(c, "spec", "upgradeDescription"),
        "promoteImage": [],
        "promoteVideo": "",
        "subCategory": "",
        "locale": [str(x) for x in spec.get("locale") or ["en-US"]],
        "developer": str(spec.get("developer", "")),
        "requiredMemory": _bytes_str(envelope.get("requiredMemory")),
        "requiredDisk": _bytes_str(envelope.get("requiredDisk")),
        "requiredGPU": _bytes_str(gpu_req),
        "requiredCPU": _cores_str(envelope.get("requiredCpu")),
        "limitedMemory": _bytes_str(envelope.get("limitedMemory")),
        "limitedDisk": _bytes_str(envelope.get("limitedDisk")),
        "limitedCPU": _cores_str(envelope.get("limitedCpu")),
        "limitedGPU": _bytes_str(gpu_lim),
        "supportClient": {},
        "supportArch": [str(x) for x in spec.get("supportArch") or []],
        "rating": 0,
        "target": "",
        "permission": m.get("permission") or {},
        "entrances": m.get("entrances") or [],
        "ports": [],
        "tailscale": {},
        "middleware": m.get("middleware") or {},
        "options": m.get("options") or {},
        "subCharts": [],
        "envs": m.get("envs") or [],
        "submitter": str(spec.get("submitter", "")),
        "doc": str(spec.get("doc", "")),
        "website": str(spec.get("website", "")),
        "featuredImage": "",
        "sourceCode": str(spec.get("sourceCode", "")),
        "license": spec.get("license") or [],
        "legal": [],
        "i18n": i18n,
        "modelSize": "",
        "namespace": "",
        "onlyAdmin": bool(spec.get("onlyAdmin", False)),
        "lastCommitHash": c.sha256,
        "createTime": _epoch(first),
        "updateTime": _epoch(c.published),
        "appLabels": [],
        "count": 0,
        "versionHistory": history,
        "screenshots": [],
        "tags": [CATEGORY],
        "updated_at": index.merged_at(c.published),
    }


def build_view(cat: Catalogue, charts: dict[str, Chart]) -> View:
    apps = {}
    details = {}
    for name, c in charts.items():
        app_id = index.app_id(name)
        e = entry(cat, c)
        details[app_id] = e
        apps[app_id] = {"id": app_id, "name": name, "version": c.version, "category": CATEGORY,
                        "description": e["description"]["en-US"], "icon": e["icon"], "source": 1,
                        "updated_at": e["updated_at"]}
    last = max((e["updated_at"] for e in details.values()), default=EMPTY_TIME)
    ids = ",".join(sorted(apps))
    # One "AI" page, topic, topic list and tag so the apps show in the store's sidebar.
    data = {
        "apps": apps,
        "recommends": {},
        "pages": {CATEGORY: {"category": CATEGORY, "content": json.dumps([{"type": "Topic", "id": "ai-models"}]),
                             "source": 1, "updated_at": last, "createdAt": last}},
        "topics": {"ai-models": {"_id": "ai-models", "name": "ai-models", "source": 1, "updated_at": last, "createdAt": last,
                                 "data": {"en-US": {"group": CATEGORY, "title": "Local LLM servers", "des": "GPU LLM servers for Olares",
                                                    "iconimg": "", "detailimg": "", "richtext": "", "mobileDetailImg": "",
                                                    "mobileRichtext": "", "backgroundColor": "", "apps": ",".join(charts),
                                                    "isdelete": False}}}},
        "topic_lists": {"ai-models": {"name": "ai-models", "type": "Topic", "description": "Local LLM servers", "content": ids,
                                      "title": {"en-US": "Local LLM servers"}, "source": 1, "updated_at": last, "createdAt": last}},
        "tops": [],
        # newest publication first; apps published the same day in name order
        "latest": [name for name, _ in sorted(sorted(charts.items()), key=lambda nc: nc[1].published, reverse=True)],
        "tags": {CATEGORY: {"_id": CATEGORY.lower(), "name": CATEGORY, "title": {"en-US": CATEGORY}, "icon": "",
                            "sort": 1, "source": 1, "updated_at": last, "createdAt": last}},
    }
    digest = hashlib.sha256(dumps({"data": data, "details": details})).hexdigest()[:32]
    return View(digest, last, data, details, charts)


def load(root: Path, index_file: Path | None = None, base_url: str = "", probes: tuple[str, ...] = ()) -> Catalogue:
    """Read market-index.json, verify every package it lists, and build the view of each probe
    version (the default one, and the lowest version each olares window admits), so that the
    charts any device can be offered are read once, at start. Neither Helm nor the app manifests
    are read: the ledger and the packages are the published catalogue."""
    index_file = index_file or root / INDEX_FILE
    if not index_file.exists():
        raise InputError(f"{index_file}: no market index (publish with olares-pack release)")
    raw = index_file.read_bytes()
    ledger = index.loads(raw, index_file)
    charts: list[Chart] = []
    slim: dict[str, Any] = {"apps": {}}
    for name, app in sorted(ledger["apps"].items()):
        # Only what the routes read is kept: argv, flags and resources of 2,000 versions are not.
        slim["apps"][name] = {"versions": [{k: v[k] for k in ("version", "versionName", "published", "changelog",
                                                             "unshipped") if k in v} for v in app["versions"]]}
        for v in app["versions"]:
            for target, rec in sorted(v["charts"].items()):
                c = Chart(name, v["version"], target, package.archive_name(name, v["version"]), root / rec["file"],
                          rec["sha256"], rec.get("olares") or targets.get(target).dependency, v["published"])
                # Every listed package must be there; its bytes are checked against the sha256
                # when it is read (at start for the charts a view shows, else when it is asked for).
                try:
                    size = c.path.stat().st_size
                except OSError:
                    raise InputError(f"{c.path}: listed in {index_file.name} but missing") from None
                if size != rec["size"]:
                    raise InputError(f"{c.path}: {size} bytes, the ledger records {rec['size']}")
                charts.append(c)
    del ledger
    icons = {}
    for name in slim["apps"]:
        icon = root / "apps" / name / "icon.png"
        if icon.is_file():
            icons[name] = icon.read_bytes()
    cat = Catalogue(slim, charts, icons, hashlib.sha256(raw).hexdigest(), base_url.rstrip("/"))
    for version in {*probes, *window_floors(charts)}:
        cat.view(version)
    return cat


def window_floors(charts: list[Chart]) -> set[str]:
    """The lowest OS version each distinct olares window admits (1.12.3 for >=1.12.3-0,<1.12.6)."""
    out = set()
    for dep in {c.dependency for c in charts}:
        for m in re.finditer(r">=\s*v?(\d+\.\d+\.\d+)", dep):
            out.add(m.group(1))
    return out
