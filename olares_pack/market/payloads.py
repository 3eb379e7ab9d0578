"""The market-source payloads, computed once from market-index.json and the packages.

A device asks with its Olares version; it sees, for each app, the newest published chart whose
olares dependency admits that version, as the official server's version filter picks it. Each
target's chart is a version of its own with its own file name (1.0.9 for 1.12.6+, 1.0.9-legacy
for 1.12.3-1.12.5: olares.chart_version), so the chart route answers by file name alone.
Everything is derived from the ledger and the chart bytes, never from the clock: the same
catalogue gives the same bytes, and the hash changes exactly when what that OS version sees
changes.

Every view any OS version can see is computed at load (olares.probe_versions), with its bodies
as bytes: the server and the Cloudflare export serve these same bytes. Each view carries the
Olares 1.12.7+ (v2) bodies beside the v1 ones (market_v2).

A chart file that is missing, unreadable or not the bytes the ledger records does not stop the
source (unless `strict`): it is named in `Catalogue.problems`, no view offers it (an app shows its
newest chart that is whole, or is not listed), and its file name is answered 503.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import semver
import yaml

from olares_pack import olares
from olares_pack.catalogue import ledger as index
from olares_pack.catalogue.repo import INDEX_FILE, OFFER_FILE
from olares_pack.charts import package
from olares_pack.charts.fastyaml import safe_load
from olares_pack.common import quantity
from olares_pack.common import versions as appver
from olares_pack.common.errors import InputError
from olares_pack.market import ledgerscan, prepared
from olares_pack.market import offers as offers_mod
from olares_pack.market import taxonomy as taxonomy_mod
from olares_pack.market import v2 as market_v2
from olares_pack.olares import admits

CATEGORY = "AI"
EMPTY_TIME = "1970-01-01T00:00:00Z"
RESTORE = "restore the committed file (git checkout -- packages/)"
REPRODUCE = ("restore it: git checkout -- packages/, or olares-pack build, which reproduces a missing package "
             "from its release record")


def file_problem(path: Path, exc: OSError | None, size: int | None = None, recorded: int | None = None) -> str:
    """What is wrong with a listed package file, in words that tell missing from unreadable, and the remedy."""
    if isinstance(exc, FileNotFoundError):
        return f"listed in the ledger but missing; {REPRODUCE}"
    if isinstance(exc, IsADirectoryError):
        return f"unreadable: a directory stands where the package should be; remove it and {REPRODUCE}"
    if isinstance(exc, PermissionError):
        return (f"unreadable: permission denied (the file is there); give the user running the server read access "
                f"(chmod a+r {path})")
    if exc is not None:
        return f"unreadable: {exc.strerror or exc}; check the disk and the file, then {RESTORE}"
    return f"{size} bytes, the ledger records {recorded}: a published package was changed or cut short; {RESTORE}"


def dumps(doc: Any) -> bytes:
    """Compact, key-sorted JSON: the same document always gives the same bytes."""
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


@dataclass
class Chart:
    """One published package, as the ledger lists it. Its bytes and manifest are read when a view
    shows it (the newest chart of an app for some OS version); older charts stay on disk until a
    device asks for one by file name."""

    name: str
    version: str  # the version this chart carries and devices see (1.0.9-legacy)
    release: str  # the release it belongs to (1.0.9)
    target: str
    file_name: str
    path_text: str  # the package's path (a str: a 200-app catalogue lists thousands)
    sha256: str
    dependency: str  # the chart's olares dependency, as recorded
    published: str  # YYYY-MM-DD from the ledger
    # The OS versions whose installer rules accept it (market-offer.json, decided by `build`);
    # None: where its dependency admits.
    offer: str | None = None
    # A templated manifest as the administrator's install renders it (market-offer.json), so that
    # reading it needs no Helm here.
    installed_manifest: str | None = None
    offered: bool = True  # False: another target's chart of the same release owns its file name
    problem: str | None = None  # why this chart cannot be served (missing, unreadable, changed), with the remedy
    order: semver.Version = field(init=False)  # the version, parsed once for comparisons
    window: str = field(init=False)  # the OS versions it is offered to: dependency and offer both admit
    data: bytes | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    i18n: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What every view that shows it holds of it, computed once (Listing); the manifest is then let go.
    listing: Listing | None = None
    # The package file as stat saw it at load (size, mtime, ctime, inode): a stored listing
    # (market.prepared) is used only for the file it was computed from.
    stamp: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        self.order = appver.parse(self.version)
        self.window = offers_mod.window(self.dependency, self.offer)

    @property
    def path(self) -> Path:
        return Path(self.path_text)

    def read(self) -> bytes:
        """The package bytes, refused when they are not the ones the ledger records."""
        if self.data is not None:
            return self.data
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise InputError(f"{self.path}: {file_problem(self.path, exc)}") from None
        if package.sha256(data) != self.sha256:
            raise InputError(f"{self.path}: sha256 {package.sha256(data)} differs from the ledger's {self.sha256}: "
                             f"a published package was changed; {RESTORE}")
        return data

    def load(self) -> Chart:
        """Read the manifest and per-locale files of a chart a view shows (once: its Listing then
        holds what views need of it)."""
        if self.data is None and self.listing is None:
            data = self.read()
            try:
                name, files, _ = package.read_archive_split(data)
                text = files.get("OlaresManifest.yaml", "")
                if "{{" in text:  # a templated manifest (the v2 shared form), as the administrator's install reads it
                    text = self.installed_manifest if self.installed_manifest is not None else _render_manifest(
                        files, name or self.name, self.path)
                self.manifest = safe_load(text) or {}
                self.i18n = {rel.split("/")[1]: safe_load(text) or {} for rel, text in files.items()
                             if rel.startswith("i18n/") and rel.count("/") == 2 and rel.endswith("/OlaresManifest.yaml")}
            except (ValueError, OSError, EOFError, tarfile.TarError, yaml.YAMLError) as exc:
                raise InputError(f"{self.path}: not a readable chart ({exc}): {RESTORE}") from None
            if not isinstance(self.manifest, dict) or not self.manifest:
                raise InputError(f"{self.path}: no readable OlaresManifest.yaml: {RESTORE}")
            self.data = data
        return self


def _render_manifest(files: dict[str, str], name: str, path: Path) -> str:
    """A templated manifest market-offer.json does not hold (a catalogue built before it did):
    rendered here, which loads Helm into the server; `olares-pack build` records it."""
    import logging

    from olares_pack.charts import helm

    logging.getLogger("olares_pack.server").warning(
        "%s: its templated manifest is not in %s: rendering it loads Helm into this process (run olares-pack build)",
        path, OFFER_FILE)
    return helm.installed_manifest(files, name)


@dataclass(frozen=True)
class Listing:
    """A chart as the views that show it hold it: its details entry as bytes, the few fields the
    store's lists read, its v2 item and its locales. The same for every view (the entry depends on
    the chart and the ledger only), so computed once and shared; the parsed manifest, which a
    200-app catalogue would otherwise keep a few MiB of, is not kept."""

    fragment: bytes
    summary: dict[str, Any]  # description (en-US), icon, updated_at
    v2_item: dict[str, Any]
    v2_fragment: bytes  # v2_item as JSON
    locales: frozenset[str]


def listing(cat: Catalogue, c: Chart) -> Listing:
    if c.listing is None:
        e = entry(cat, c)
        codes = {str(x) for x in (c.manifest.get("spec") or {}).get("locale") or []} | set(c.i18n)
        v2_item = market_v2.item(c, e)
        c.listing = Listing(dumps(e), {"description": e["description"]["en-US"], "icon": e["icon"],
                                       "updated_at": e["updated_at"]}, v2_item, market_v2.dumps(v2_item), frozenset(codes))
        c.manifest, c.i18n, c.installed_manifest = {}, {}, None  # its bytes stay: served as verified
    return c.listing


@dataclass
class View:
    """What the OS versions of one window see, as bytes. The hash and info bodies echo the
    request's version, which sorts last among their keys: each is a precomputed prefix and the
    version's JSON string and a brace. Details are one JSON fragment per app id."""

    hash: str
    last_updated: str
    charts: dict[str, Chart]  # app name -> the chart this window installs
    fragments: dict[str, bytes]  # app id -> its ApplicationInfoEntry as JSON
    info_prefix: bytes
    hash_prefix: bytes
    v2: market_v2.V2

    def hash_body(self, version: str) -> bytes:
        return self.hash_prefix + orjson.dumps(version) + b"}"

    def info_body(self, version: str) -> bytes:
        return self.info_prefix + orjson.dumps(version) + b"}"

    def details_body(self, ids: list[str], version: str) -> bytes:
        """{"apps": {...}, "not_found": [...], "version": "..."}, apps in id order as the sorted
        JSON of the whole would have them."""
        wanted = dict.fromkeys(ids)
        found = sorted(i for i in wanted if i in self.fragments)
        missing = [i for i in wanted if i not in self.fragments]
        apps = b",".join(orjson.dumps(i) + b":" + self.fragments[i] for i in found)
        return b'{"apps":{' + apps + b'},"not_found":' + orjson.dumps(missing) + b',"version":' + orjson.dumps(version) + b"}"


@dataclass
class Catalogue:
    # {"apps": {name: what the routes read of its versions, as compact JSON}}: decoded when a
    # chart's details are computed (versions), a fraction of the parsed objects' memory
    ledger: dict[str, Any]
    charts: list[Chart]  # every published chart, all versions, all targets
    icons: dict[str, bytes]
    ledger_sha256: str
    base_url: str = ""  # where this source is reachable: icons in apps/<name>/icon.png are served under it
    strict: bool = False  # a chart that cannot be served is an error, not a 503
    files: dict[str, dict[str, Chart]] = field(default_factory=dict)  # app name -> file name -> chart
    shadowed: list[Chart] = field(default_factory=list)  # charts no device is offered (see index_charts)
    views: dict[tuple[str, ...], View] = field(default_factory=dict)
    by_version: dict[str, View] = field(default_factory=dict)  # canonical OS version -> its view
    taxonomy: taxonomy_mod.Taxonomy = field(default_factory=taxonomy_mod.Taxonomy)

    def versions(self, name: str) -> list[dict[str, Any]]:
        """An app's versions as the ledger lists them, with what the routes read of each."""
        blob = self.ledger["apps"].get(name)
        return orjson.loads(blob)["versions"] if blob else []

    @property
    def problems(self) -> list[Chart]:
        """Listed charts that cannot be served, in ledger order."""
        return [c for c in self.charts if c.problem]

    @property
    def dependencies(self) -> list[str]:
        """The OS windows charts are offered in (each its dependency and the market's offer)."""
        return sorted({c.window for c in self.charts if c.offered})

    def chart_for(self, os_version: str) -> dict[str, Chart]:
        """For each app, the newest offered chart whose window (its olares dependency, narrowed to
        the releases whose installer rules accept it) admits this OS version."""
        admitted = {dep: admits(dep, os_version) for dep in self.dependencies}
        best: dict[str, Chart] = {}
        for c in self.charts:
            if c.offered and not c.problem and admitted[c.window]:
                cur = best.get(c.name)
                if cur is None or c.order > cur.order:
                    best[c.name] = c
        return dict(sorted(best.items()))

    def view(self, os_version: str) -> View:
        """The view of one canonical OS version; resolved once per version string, so the
        constraint parsing stays off the request path."""
        cached = self.by_version.get(os_version)
        if cached is not None:
            return cached
        while True:  # a chart found damaged when read is set aside, and the app's next chart is tried
            charts = self.chart_for(os_version)
            try:
                for loading in charts.values():
                    listing(self, loading.load())  # its manifest let go before the next is parsed
                break
            except InputError as exc:
                bad = loading
                if self.strict:
                    raise
                bad.problem = str(exc).removeprefix(f"{bad.path}: ")
        key = view_key(charts)
        if key not in self.views:
            self.views[key] = build_view(self, charts)
        if len(self.by_version) >= 256:  # bounded: devices send a handful of versions
            self.by_version.pop(next(iter(self.by_version)))
        self.by_version[os_version] = self.views[key]
        return self.views[key]

    def archive(self, name: str, file_name: str) -> Chart | None:
        """The chart a file name names: the device's chart request carries nothing else."""
        return (self.files.get(name) or {}).get(file_name)


def view_key(charts: dict[str, Chart]) -> tuple[str, ...]:
    return tuple(f"{c.name}@{c.version}/{c.target}" for c in charts.values())


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
    versions = cat.versions(c.name)
    history = [h for h in index.version_history({"apps": {c.name: {"versions": versions}}}, c.name, target=c.target)
               if appver.parse(h["version"]) <= c.order]
    first = min((v["published"] for v in versions), default=c.published)
    i18n = {loc: {"metadata": {k: doc.get("metadata", {}).get(k, "") for k in ("title", "description")},
                  "spec": {k: doc.get("spec", {}).get(k, "") for k in ("fullDescription", "upgradeDescription")}}
            for loc, doc in sorted(c.i18n.items())}
    screenshots = [str(x) for x in spec.get("promoteImage") or [] if x] if isinstance(spec.get("promoteImage"), list) else []
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
        "promoteImage": screenshots,
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
        "featuredImage": str(spec.get("featuredImage") or next(iter(screenshots), "")),
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
    listed = {}
    for name, c in charts.items():
        app_id = index.app_id(name)
        one = listed[app_id] = listing(cat, c)
        apps[app_id] = {"id": app_id, "name": name, "version": c.version, "category": CATEGORY,
                        "description": one.summary["description"], "icon": one.summary["icon"], "source": 1,
                        "updated_at": one.summary["updated_at"]}
    last = max((one.summary["updated_at"] for one in listed.values()), default=EMPTY_TIME)
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
    fragments = {i: one.fragment for i, one in sorted(listed.items())}
    digest = hashlib.sha256(dumps(data) + b"".join(i.encode() + f for i, f in fragments.items())).hexdigest()[:32]
    info = dumps({"data": data, "hash": digest, "last_updated": last,
                  "stats": {"appstore_data": {"apps": len(apps)}, "last_updated": last}})
    hashed = dumps({"hash": digest, "last_updated": last})
    return View(digest, last, charts, fragments, info[:-1] + b',"version":', hashed[:-1] + b',"version":',
                market_v2.build(cat.taxonomy, [listed[index.app_id(name)] for name in charts],
                                set().union(*(one.locales for one in listed.values())), digest))


def load(root: Path, index_file: Path | None = None, base_url: str = "", *, strict: bool = False) -> Catalogue:
    """Read market-index.json (and market.yaml, the v2 taxonomy), check every package it lists is
    there, readable, at its recorded size, and compute every view an OS version can see (each chart
    a view shows is read and verified once, here). Neither Helm nor the app manifests are read: the
    ledger and the packages are the published catalogue. A package that fails a check is set aside
    (Catalogue.problems); with `strict` it is an error naming every such package."""
    index_file = index_file or root / INDEX_FILE
    if not index_file.exists():
        raise InputError(f"{index_file}: no market index (publish with olares-pack release)")
    raw = index_file.read_bytes()
    ledger_sha256 = hashlib.sha256(raw).hexdigest()
    rows: list[tuple[str, str, str, str, dict[str, Any]]] = []  # (app, release, published, target, chart record)

    def keep(name: str, app: dict[str, Any]) -> bytes:
        """Only what the routes read (argv, flags and resources of 2,000 versions are not), as
        compact JSON (Catalogue.versions)."""
        versions = []
        for v in app["versions"]:
            rows.extend((name, v["version"], v["published"], target, rec) for target, rec in sorted(v["charts"].items()))
            kept = {k: v[k] for k in ("version", "versionName", "published", "changelog", "unshipped") if k in v}
            kept["charts"] = {t: {"version": r["version"]} if r.get("version") else {} for t, r in v["charts"].items()}
            versions.append(kept)
        return orjson.dumps({"versions": versions})

    slim = ledgerscan.served(raw, index_file, keep)
    del raw
    decided = offers_mod.load(index_file.parent / OFFER_FILE)
    charts: list[Chart] = []
    for name, release, published, target, rec in sorted(rows, key=lambda r: r[0]):
        served = rec.get("version") or release
        offer = decided.get(rec["file"]) or {}
        if offer.get("sha256") != rec["sha256"]:
            offer = {}  # decided on other bytes: stale (build --check says so)
        c = Chart(name, served, release, target, package.archive_name(name, served), str(root / rec["file"]),
                  rec["sha256"], rec.get("olares") or olares.get(target).dependency, published,
                  offer.get("offer"), offer.get("manifest"))
        # Every listed package must be there and readable; its bytes are checked against the
        # sha256 when it is read (at load for the charts a view shows, else when asked for).
        try:
            with c.path.open("rb") as f:
                st = os.fstat(f.fileno())
            size = st.st_size
            c.stamp = (size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if size != rec["size"]:
                c.problem = file_problem(c.path, None, size, rec["size"])
        except OSError as exc:
            c.problem = file_problem(c.path, exc)
        charts.append(c)
    rows.clear()  # the chart records, now in the charts
    del decided
    icons = {}
    for name in slim["apps"]:
        icon = root / "apps" / name / "icon.png"
        if icon.is_file():
            icons[name] = icon.read_bytes()
    cat = Catalogue(slim, charts, icons, ledger_sha256, base_url.rstrip("/"), strict,
                    taxonomy=taxonomy_mod.load(root))
    if strict and cat.problems:
        raise InputError("\n".join(f"{c.path}: {c.problem}" for c in cat.problems))
    index_charts(cat)
    probes = olares.probe_versions(cat.dependencies)
    # Rendered manifests are kept for the charts the views will show; an older chart needs one only
    # when the chart above it is found damaged when read (then Helm renders it, with a warning).
    shown = {id(c) for version in probes for c in cat.chart_for(version).values()}
    # A listing prepared by an earlier start, for the same inputs and the same file, is taken as
    # it is: the package is then neither read nor parsed here (market.prepared).
    store = prepared.Store(root)
    keys = {}
    for c in cat.charts:
        if id(c) not in shown:
            c.installed_manifest = None
        elif not c.problem:
            keys[id(c)] = k = store.key(cat, c)
            c.listing = store.take(k, c, Listing)
    for version in probes:
        cat.view(version)
    cat.by_version.clear()  # probes are not versions devices send
    for c in cat.charts:
        if id(c) in keys and not c.problem:
            store.put(keys[id(c)], c)
    store.save()
    return cat


def index_charts(cat: Catalogue) -> None:
    """File name -> chart, one chart per name. Releases of generation 1 and 2 gave both targets'
    charts the release version, so both are named <name>-<version>.tgz: the current target's
    chart keeps the name, and the other is not offered to any device (a device that fetched it and
    then upgraded its OS would keep installing the chart of its old OS: docs/concepts/targets.md,
    "One version per OS line"). `build --check` names such versions; the next release gives every
    line its own."""
    for c in sorted(cat.charts, key=lambda c: (c.name, c.file_name, c.target != olares.CURRENT.name)):
        owner = cat.files.setdefault(c.name, {}).setdefault(c.file_name, c)
        if owner is not c:
            c.offered = False
            cat.shadowed.append(c)
