"""`build`: render every app of a catalogue for every target it declares, and bring packages/ and
the ledger up to date with the release records, doing only the work whose inputs changed.

Each app's charts are keyed by what they are made from: its app.yaml and model.lock.json bytes,
the stat of its release records (compared for "edited without a new version"), the targets
asked for, and olares-pack's own sources and template generation (generation.fingerprint). An app
whose key is unchanged and whose chart folders are still there is neither parsed nor rendered;
its warnings were shown when it was rendered (an edit to a published version is shown again every
time). The state lives in OUT/.olares-pack-build.json
and is only a cache: deleting it (or --full) renders everything again, with the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.catalogue.repo import LOCK_FILE, MANIFEST_FILE, OFFER_FILE, Repo
from olares_pack.common import fsio
from olares_pack.render import generation

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App

STATE_FILE = ".olares-pack-build.json"


@dataclass
class BuildResult:
    written: list[Path] = field(default_factory=list)  # chart folders rendered this time
    kept: int = 0  # chart folders whose inputs did not change
    apps: int = 0
    warnings: list[str] = field(default_factory=list)  # to show
    repeated: int = 0  # warnings about unchanged apps, shown when they were new (--full shows them again)


def app_key(repo: Repo, app_dir: Path, only: list[str] | None) -> str:
    h = hashlib.sha256(generation.fingerprint().encode())
    h.update(json.dumps(sorted(only or [])).encode())
    for name in (MANIFEST_FILE, LOCK_FILE):
        p = app_dir / name
        h.update(f"\0{name}\0".encode())
        if p.is_file():
            h.update(p.read_bytes())
    d = repo.records_dir(app_dir.name)
    if d.is_dir():
        for p in sorted(d.iterdir()):
            st = p.stat()
            h.update(f"\0{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    """A cache file, or {} when it is missing or unreadable (a cache is never trusted further)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def app_warnings(repo: Repo, app_dir: Path, app: App) -> tuple[list[str], list[str]]:
    """What a maintainer must see about one app: unpinned inputs, and edits to a published version."""
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import checks as catalogue
    from olares_pack.catalogue import records

    edits = []
    if app.version in records.versions(repo, app.name):
        rec = records.read(repo, app.name, app.version)
        if issue := catalogue.unpublished_edit(repo, app_dir, load_app(app_dir, derive=False), rec):
            edits.append(str(issue))
    return list(app.warnings()), edits


def render_apps(repo: Repo, out: Path, only: list[str] | None = None, *, full: bool = False) -> BuildResult:
    """Render the apps whose inputs changed since the last build into OUT/<target>/<name>/."""
    from olares_pack import olares
    from olares_pack.apps.load import load_app
    from olares_pack.render import app as render
    state_path = out / STATE_FILE
    for folder in (out, *(out / t for t in olares.TARGETS)):
        fsio.sweep(folder)  # what a killed build left (build holds the repository lock)
    state = {} if full else _read_json(state_path)
    if not isinstance(state.get("apps"), dict):
        state = {"apps": {}}
    result = BuildResult()
    new_state: dict[str, Any] = {"apps": {}}
    for app_dir in repo.app_dirs():
        result.apps += 1
        key = app_key(repo, app_dir, only)
        seen = state["apps"].get(app_dir.name)
        if seen and seen.get("key") == key and all((out / c).is_dir() for c in seen.get("charts", [])):
            new_state["apps"][app_dir.name] = seen
            result.kept += len(seen["charts"])
            result.warnings += seen.get("edits", [])  # an edit to a published version is said every time
            result.repeated += len(seen.get("warnings", []))
            continue
        app = load_app(app_dir)
        warnings, edits = app_warnings(repo, app_dir, app)
        charts = []
        for name in app.targets:
            if only and name not in only:
                continue
            rel = f"{name}/{app.name}"
            fsio.write_tree(render.render(app, olares.get(name)), out / rel)
            result.written.append(out / rel)
            charts.append(rel)
        new_state["apps"][app_dir.name] = {"key": key, "charts": charts, "warnings": warnings, "edits": edits}
        result.warnings += warnings + edits
    if new_state != state:
        fsio.write_text_atomic(state_path, json.dumps(new_state, indent=1, sort_keys=True))
    return result


def sync_repository(repo: Repo, *, full: bool = False) -> tuple[dict[Path, bytes], str | None]:
    """Files to write so that packages/ and market-index.json match the release records (missing
    packages reproduced, the ledger derived), and the stamp to remember when there are none.
    Skipped when no record, package or ledger changed (by size and mtime) since the last build
    that found them consistent."""
    from olares_pack.catalogue import checks as catalogue
    from olares_pack.catalogue import offer

    stamp = repository_stamp(repo)
    if not full and _read_json(repo.state_dir / "cache" / "build.json").get("stamp") == stamp:
        return {}, None
    recs = catalogue.load_records(repo)
    writes = dict(sorted(catalogue.missing_packages(repo, recs).items()))
    ledger = catalogue.ledger_text(recs)
    if not repo.index_file.exists() or repo.index_file.read_text(encoding="utf-8") != ledger:
        writes[repo.index_file] = ledger.encode("utf-8")
    offer_path, offers = offer.offer_file(repo), offer.text(repo, recs, writes)
    if not offer_path.exists() or offer_path.read_text(encoding="utf-8") != offers:
        writes[offer_path] = offers.encode("utf-8")
    return writes, stamp


def remember_consistent(repo: Repo, stamp: str) -> None:
    """The repository, as `stamp` describes it, matches its records: remember it, and prepare what
    `serve` shows of it."""
    try:
        fsio.write_text_atomic(repo.state_dir / "cache" / "build.json", json.dumps({"stamp": stamp}))
    except OSError:
        pass  # a read-only checkout: the next build checks again
    prepare_serving(repo)


def prepare_serving(repo: Repo) -> None:
    """Compute the listing of each chart `serve` shows (market.prepared), so that the first start
    after a build reads them rather than unpacking and parsing every shown chart (at 200 apps most
    of a cold start). Done here because the ledger, the offer file and the packages were just found
    consistent; only listings not already stored are computed. A cache: a catalogue serve cannot
    load yet, or a store that cannot be written, is left to serve, which then starts slower."""
    if not repo.index_file.exists():
        return  # nothing released yet
    from olares_pack.common.errors import OlaresPackError
    from olares_pack.market import payloads

    try:
        payloads.load(repo.root, repo.index_file)  # stores the listings it computed
    except (OlaresPackError, OSError, ValueError):
        pass  # serve names what is wrong when it starts


def repository_stamp(repo: Repo) -> str:
    """Size and mtime of the ledger, every record and every package (os.scandir on strings: this
    runs on every build, over thousands of files)."""
    h = hashlib.sha256(generation.fingerprint().encode())
    for label, path in (("ledger", repo.index_file), ("offer", repo.index_file.parent / OFFER_FILE)):
        try:
            st = os.stat(path)
            h.update(f"{label}:{st.st_size}:{st.st_mtime_ns}\0".encode())
        except OSError:
            h.update(f"{label}:missing\0".encode())
    folders = [os.path.join(repo.apps_dir, app, "releases") for app in _names(repo.apps_dir)]
    folders += [os.path.join(repo.packages_dir, t) for t in _names(repo.packages_dir)]
    for folder in folders:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.name.endswith((".json", ".tgz")):
                st = e.stat()
                h.update(f"{folder}/{e.name}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []
