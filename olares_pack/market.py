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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import semver
import yaml

from . import index, package, quantity, targets
from .errors import InputError
from .lint.context import LintOptions, build_context
from .lint.manifest_rules import admits
from .lint.source import from_archive_bytes
from .repo import INDEX_FILE

CATEGORY = "AI"
EMPTY_TIME = "1970-01-01T00:00:00Z"


def dumps(doc: Any) -> bytes:
    """Compact, key-sorted JSON: the same document always gives the same bytes."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


@dataclass
class Chart:
    """One published package: its bytes, and what its manifest tells the market."""

    name: str
    version: str
    target: str
    file_name: str
    data: bytes
    sha256: str
    manifest: dict[str, Any]
    i18n: dict[str, dict[str, Any]]
    dependency: str
    published: str  # YYYY-MM-DD from the ledger


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
        best: dict[str, Chart] = {}
        for c in self.charts:
            if not admits(c.dependency, os_version):
                continue
            cur = best.get(c.name)
            if cur is None or semver.Version.parse(c.version) > semver.Version.parse(cur.version):
                best[c.name] = c
        return dict(sorted(best.items()))

    def view(self, os_version: str) -> View:
        """The view of one version string; resolving the windows once per string keeps the
        constraint parsing off the request path."""
        cached = self.by_version.get(os_version)
        if cached is not None:
            return cached
        charts = self.chart_for(os_version)
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


def load(root: Path, index_file: Path | None = None, base_url: str = "") -> Catalogue:
    """Read market-index.json and every package it lists; refuse bytes the ledger does not record."""
    index_file = index_file or root / INDEX_FILE
    if not index_file.exists():
        raise InputError(f"{index_file}: no market index (publish with olares-pack release)")
    raw = index_file.read_bytes()
    ledger = index.load(index_file)
    charts: list[Chart] = []
    for name, app in sorted(ledger["apps"].items()):
        for v in app["versions"]:
            for target, rec in sorted(v["charts"].items()):
                path = root / rec["file"]
                try:
                    data = path.read_bytes()
                except OSError:
                    raise InputError(f"{path}: listed in {index_file.name} but missing") from None
                if package.sha256(data) != rec["sha256"]:
                    raise InputError(f"{path}: sha256 {package.sha256(data)} differs from the ledger's {rec['sha256']}")
                src = from_archive_bytes(data, rec["file"])
                ctx = build_context(src, LintOptions())
                if not ctx.manifest:
                    raise InputError(f"{path}: no readable OlaresManifest.yaml")
                i18n = {}
                for rel, text in src.files.items():
                    parts = rel.split("/")
                    if len(parts) == 3 and parts[0] == "i18n" and parts[2] == "OlaresManifest.yaml":
                        i18n[parts[1]] = yaml.safe_load(text) or {}
                dep = next((str(d.get("version")) for d in (ctx.manifest.get("options") or {}).get("dependencies") or []
                            if isinstance(d, dict) and d.get("name") == "olares"), "*")
                charts.append(Chart(name, v["version"], target, package.archive_name(name, v["version"]), data,
                                    rec["sha256"], ctx.manifest, i18n, dep, v["published"]))
    icons = {}
    apps_dir = root / "apps"
    for name in ledger["apps"]:
        icon = apps_dir / name / "icon.png"
        if icon.is_file():
            icons[name] = icon.read_bytes()
    return Catalogue(ledger, charts, icons, hashlib.sha256(raw).hexdigest(), base_url.rstrip("/"))
