"""Release records: what a published version is, written once at publication and never again.

`apps/<name>/releases/<version>.json` holds the resolved manifest (every default filled in,
`auto` values computed), the engine argv and flags as they were resolved that day, the targets
with each package's file, sha256, size and content digest (sha256 of the uncompressed tar), the
template generation and the olares-pack version that produced it, and the changelog entries this
version adds (unshipped attempts since the previous published version, then its own). Nothing
later (templates, the engine registry, lint rules, this tool's version) reads into a record:
the ledger is a projection of the records, and the committed package is the published bytes.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from olares_pack.apps.load import validate_data
from olares_pack.apps.manifest import App, ChangelogEntry
from olares_pack.catalogue.repo import Repo
from olares_pack.common import jsontext
from olares_pack.common import versions as appver
from olares_pack.common.errors import InputError, Problem

FORMAT = 1
SUFFIX = ".json"
SHA256 = r"^[0-9a-f]{64}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChartRecord(_Model):
    """One target's package of a published version."""

    file: str  # relative to the repository root
    sha256: str = Field(pattern=SHA256)  # of the .tgz as committed and served
    size: int = Field(gt=0)
    content_sha256: str = Field(pattern=SHA256)  # of the uncompressed tar: independent of zlib
    olares: str  # the chart's olares dependency: which OS versions may install it
    # The version this chart carries and is served as (olares.chart_version). Absent in records
    # of generation 1 and 2, published before each target had a version of its own: their
    # charts carry the record's version.
    version: str | None = None


class EngineRecord(_Model):
    kind: str
    build: str | None
    argv: list[str]
    flags: dict[str, str]  # normalised flag -> value, as the registry of the day read argv
    env: dict[str, str]


class RehearsedPair(_Model):
    """One step the release's rehearsal ran: a fresh install, or the upgrade from an older version."""

    line: str  # the OS line (target)
    action: str  # install | upgrade | uninstall-first
    from_version: str | None = None
    version: str
    user: str
    ok: bool
    error: str = ""


class RanStep(_Model):
    """One step `release` ran on a node here (rehearse/live.py): the app installed, its engine
    started and asked, or upgraded to; how long each stage took and the engine's own last lines."""

    line: str
    action: str  # install | upgrade | uninstall
    from_version: str | None = None
    version: str
    user: str
    ok: bool
    error: str = ""
    seconds: dict[str, float] = Field(default_factory=dict)  # stage -> seconds since the step began
    engine_log: list[str] = Field(default_factory=list)


class Rehearsal(_Model):
    """What `release` rehearsed before publishing, or why it did not (--skip-rehearsal REASON)."""

    skipped: str | None = None  # the reason given; then nothing below ran
    api_server: str | None = None  # e.g. "kube-apiserver v1.32.2 (built here)" or a cluster's version
    helm: str | None = None
    steps: list[RehearsedPair] = Field(default_factory=list)
    # Since issue #50, where a node runs here: the node, what stood in for the images and the
    # model, and each step it ran (absent from older records and where no node could run).
    node: str | None = None
    standins: dict[str, str] = Field(default_factory=dict)
    ran: list[RanStep] = Field(default_factory=list)


class Record(_Model):
    format: Literal[1] = FORMAT
    name: str
    version: str
    published: dt.date
    tool: str  # "olares-pack X.Y.Z" that published it
    # The template generation its packages were rendered with; 0: imported (olares-pack import),
    # the packages are the source's own bytes and were never rendered here.
    generation: int = Field(ge=0)
    charts: dict[str, ChartRecord] = Field(min_length=1)
    engine: EngineRecord
    changelog: list[ChangelogEntry] = Field(min_length=1)  # what this version adds; its own entry last
    derived: dict[str, str] = Field(default_factory=dict)  # field path -> what app.yaml said ("auto")
    manifest: dict[str, Any]  # the resolved app manifest, without its changelog
    # Written by releases since issue #42 (absent from older records): what was rehearsed (or why
    # not), and whether the version's engine changed without a measured bench record.
    rehearsal: Rehearsal | None = None
    unbenched: str | None = None

    @property
    def entry(self) -> ChangelogEntry:
        return self.changelog[-1]

    def chart_version(self, target: str) -> str:
        return self.charts[target].version or self.version

    @property
    def unshipped(self) -> list[ChangelogEntry]:
        return [e for e in self.changelog[:-1] if not e.shipped]


def path_of(repo: Repo, name: str, version: str) -> Path:
    return repo.records_dir(name) / f"{version}{SUFFIX}"


def versions(repo: Repo, name: str) -> list[str]:
    """Published versions of one app as written, oldest first (by value, never by directory order)."""
    d = repo.records_dir(name)
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        if p.suffix != SUFFIX:
            continue
        try:
            appver.parse(p.stem)
        except ValueError:
            raise InputError(f"{repo.rel(p)}: a release record is named after its version (e.g. 1.0.9.json)") from None
        out.append(p.stem)
    out.sort(key=appver.parse)
    for a, b in zip(out, out[1:], strict=False):
        if appver.same(a, b):  # one version to a device, whatever the spelling
            raise InputError(f"{repo.rel(d)}: {a} and {b} are one version spelled twice: a device cannot tell them apart")
    return out


def published_models(repo: Repo, name: str) -> frozenset[tuple[str, str, str]]:
    """The model files (repo, file, revision) the published versions of an app read: their entries
    in model.lock.json are theirs, whatever a later draft pins."""
    out: set[tuple[str, str, str]] = set()
    for v in versions(repo, name):
        model = read(repo, name, v).manifest.get("model")
        if not isinstance(model, dict) or not model.get("repo"):
            continue
        files = [model["file"]] if model.get("file") else [f.get("name") for f in model.get("files") or []
                                                           if isinstance(f, dict)]
        out.update((model["repo"], f, str(model.get("revision") or "main")) for f in files if f)
    return frozenset(out)


def published_apps(repo: Repo) -> list[str]:
    """Every app with at least one record, by name."""
    if not repo.apps_dir.is_dir():
        return []
    return sorted(p.name for p in repo.apps_dir.iterdir() if (p / "releases").is_dir() and versions(repo, p.name))


def read(repo: Repo, name: str, version: str) -> Record:
    path = path_of(repo, name, version)
    if not path.is_file():
        known = ", ".join(versions(repo, name)) or "none"
        raise InputError(f"{name} {version} is not published (no {repo.rel(path)}; published: {known})")
    return parse(path.read_bytes(), path, name, version)


def parse(data: bytes, path: Path, name: str | None = None, version: str | None = None) -> Record:
    try:
        rec = Record.model_validate_json(data)
    except ValidationError as exc:
        raise InputError("", [Problem(str(path), None, ".".join(str(x) for x in e["loc"]), e["msg"])
                              for e in exc.errors(include_url=False)]) from None
    if name is not None and (rec.name, rec.version) != (name, version):
        raise InputError(f"{path}: records {rec.name} {rec.version}, not {name} {version}")
    if rec.entry.version != rec.version or not rec.entry.shipped:
        raise InputError(f"{path}: its last changelog entry must be the shipped entry of {rec.version}")
    return rec


def dumps(rec: Record) -> str:
    # fields added later are left out where unset, so an older record reads back to the same text
    later = {k for k in ("rehearsal", "unbenched") if getattr(rec, k) is None}
    data = rec.model_dump(mode="json", exclude=later)
    if rec.rehearsal is not None:  # a skipped rehearsal is its reason alone
        data["rehearsal"] = rec.rehearsal.model_dump(mode="json", exclude_none=True)
        for key in ("standins", "ran"):  # where no node ran: the record as before #50
            if not data["rehearsal"].get(key):
                data["rehearsal"].pop(key, None)
    return jsontext.dumps(data)


def app_of(rec: Record) -> App:
    """The app exactly as it was released (its changelog: the entries this record adds)."""
    data = dict(rec.manifest)
    data["changelog"] = [e.model_dump(mode="json") for e in rec.changelog]
    if isinstance(data.get("engine"), dict) and "shared" not in data["engine"]:
        # released before engine.shared existed (template generation < 5): the per-user form
        data["engine"] = {**data["engine"], "shared": False}
    return validate_data(data, f"{rec.name} {rec.version} (release record)")


def resolved_manifest(app: App) -> dict[str, Any]:
    """The app as data with every default filled in and without its changelog. The one-file
    model shorthand is folded into `files`, so the data validates back into the same app."""
    data = app.model_dump(mode="json", exclude={"changelog"})
    for key in ("file", "size", "sha256"):
        if isinstance(data.get("model"), dict):  # a generic server's model is optional
            data["model"].pop(key, None)
    return data


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Field paths where two manifests disagree, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path} ({json.dumps(a, ensure_ascii=False)} → {json.dumps(b, ensure_ascii=False)})"]
