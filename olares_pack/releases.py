"""Published versions: frozen manifests, reproducible packages, version bumps and immutability."""

from __future__ import annotations

import datetime as dt
import difflib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import semver

from . import fsio, package, render, targets
from .errors import InputError
from .index import PackageRecord, build_index, dumps, load, package_path, recorded_sha
from .lint import LintOptions, lint_source
from .lint.findings import Finding
from .lint.source import ChartSource
from .manifest import MANIFEST_FILE, App, discover, load_app, parse_app
from .yamlsrc import load_yaml, roundtrip_yaml

RELEASES_DIR = "releases"


@dataclass(frozen=True)
class Repo:
    """Where a catalogue lives: apps, packages and the ledger, relative to one root."""

    root: Path
    apps_dir: Path
    packages_dir: Path
    index_file: Path

    @classmethod
    def at(cls, root: Path, apps_dir: Path | None = None) -> Repo:
        return cls(root, apps_dir or root / "apps", root / "packages", root / "market-index.json")

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)


def snapshot_path(app_dir: Path, version: str) -> Path:
    return app_dir / RELEASES_DIR / f"{version}.yaml"


def published(app_dir: Path) -> list[tuple[str, Path]]:
    """(version, frozen manifest) of every published version of one app, oldest first."""
    d = app_dir / RELEASES_DIR
    if not d.is_dir():
        return []
    out = []
    for p in d.glob("*.yaml"):
        try:
            semver.Version.parse(p.stem)
        except ValueError:
            raise InputError(f"{p}: a release file is named after its version (e.g. 1.0.9.yaml)") from None
        out.append((p.stem, p))
    return sorted(out, key=lambda vp: semver.Version.parse(vp[0]))


def load_snapshot(app_dir: Path, version: str, path: Path) -> App:
    app = load_app(path)
    if app.version != version:
        raise InputError(f"{path}: holds version {app.version}, not {version}")
    if app.name != app_dir.name:
        raise InputError(f"{path}: app {app.name!r} in the folder of {app_dir.name!r}")
    if app.changelog_entry is None:
        raise InputError(f"{path}: no changelog entry for {version}")
    return app


@dataclass
class BuiltPackage:
    target: str
    path: Path
    data: bytes

    @property
    def sha256(self) -> str:
        return package.sha256(self.data)


def build_packages(app: App, repo: Repo) -> list[BuiltPackage]:
    out = []
    for name in app.targets:
        t = targets.get(name)
        data = package.build_archive(app.name, render.render(app, t))
        out.append(BuiltPackage(name, package_path(repo.packages_dir, name, app.name, app.version), data))
    return out


def lint_app(app: App, app_dir: Path) -> list[Finding]:
    findings: list[Finding] = []
    for name in app.targets:
        files = render.render(app, targets.get(name))
        src = ChartSource(f"{app.name}@{name}", app.name, files, app=app, target=name, app_dir=app_dir)
        findings.extend(lint_source(src, LintOptions()))
    return findings


def records(packages: list[BuiltPackage], repo: Repo) -> list[PackageRecord]:
    return [PackageRecord(p.target, repo.rel(p.path), p.sha256, len(p.data)) for p in packages]


class ImmutableVersionError(InputError):
    pass


def check_immutable(app: App, built: list[BuiltPackage], index: dict[str, Any]) -> bool:
    """True when this version is already published with exactly these bytes; raises when the bytes differ."""
    known = [recorded_sha(index, app.name, app.version, p.target) for p in built]
    if not any(known):
        return False
    for p, sha in zip(built, known, strict=True):
        if sha is not None and sha != p.sha256:
            raise ImmutableVersionError(
                f"{app.name} {app.version} ({p.target}) is published with sha256 {sha}; rebuilding it gives "
                f"sha256 {p.sha256}. A published version never changes: release a new version "
                f"(olares-pack release {app.name} --bump patch)."
            )
    return all(known)


# ---------------------------------------------------------------- the ledger, derived


@dataclass
class CatalogueState:
    """What the repository says is published, and what would be written to match it."""

    index_text: str
    packages: dict[Path, bytes] = field(default_factory=dict)  # package files a fresh clone lacks


AppVersions = dict[str, list[tuple[App, list[PackageRecord]]]]


def derive(repo: Repo, extra: tuple[App, list[PackageRecord]] | None = None) -> CatalogueState:
    """The ledger derived from the frozen manifests and the package files (plus `extra`, a version
    about to be released), and the packages missing from the tree: rebuilt from their frozen
    manifests, and refused if those bytes differ from what the ledger records."""
    current = load(repo.index_file)
    apps: AppVersions = {}
    missing: dict[Path, bytes] = {}
    for app_dir in discover(repo.apps_dir):
        for version, path in published(app_dir):
            app = load_snapshot(app_dir, version, path)
            recs = []
            for t in app.targets:
                pkg = package_path(repo.packages_dir, t, app.name, version)
                if pkg.exists():
                    data = pkg.read_bytes()
                    sha = recorded_sha(current, app.name, version, t)
                    if sha is not None and sha != package.sha256(data):
                        raise ImmutableVersionError(
                            f"{repo.rel(pkg)} has sha256 {package.sha256(data)} but {repo.rel(repo.index_file)} "
                            f"records {sha} for {app.name} {version}: a published package was changed"
                        )
                else:
                    built = next(b for b in build_packages(app, repo) if b.target == t)
                    check_immutable(app, [built], current)
                    data = missing[pkg] = built.data
                recs.append(PackageRecord(t, repo.rel(pkg), package.sha256(data), len(data)))
            apps.setdefault(app.name, []).append((app, recs))
    if extra is not None:
        apps.setdefault(extra[0].name, []).append(extra)
    return CatalogueState(dumps(build_index(apps)), missing)


def unpublished_edits(repo: Repo) -> list[str]:
    """Apps whose app.yaml renders differently from the published package of the same version."""
    out = []
    index = load(repo.index_file)
    for app_dir in discover(repo.apps_dir):
        app = load_app(app_dir / MANIFEST_FILE)
        built = build_packages(app, repo)
        try:
            check_immutable(app, built, index)
        except ImmutableVersionError:
            out.append(f"{repo.rel(app_dir / MANIFEST_FILE)}: changed since {app.name} {app.version} was published; "
                       f"release a new version (olares-pack release {app.name} --bump patch)")
    return out


# ---------------------------------------------------------------- release


@dataclass
class ReleasePlan:
    app: App
    old_text: str
    new_text: str
    packages: list[BuiltPackage]
    findings: list[Finding]
    already_published: bool
    index_text: str
    snapshot: Path
    manifest_path: Path

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.old_text.splitlines(True), self.new_text.splitlines(True),
                                            str(self.manifest_path), str(self.manifest_path)))


def next_version(current: str, bump: str) -> str:
    v = semver.Version.parse(current)
    return str({"patch": v.bump_patch, "minor": v.bump_minor, "major": v.bump_major}[bump]())


def _entry_map(version: str, date: dt.date, summary: str, changes: list[tuple[str, str]], notes: str) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import LiteralScalarString

    entry = CommentedMap()
    entry["version"] = version
    entry["date"] = date
    entry["summary"] = summary
    if changes:
        seq = CommentedSeq()
        for kind, text in changes:
            item = CommentedMap([("kind", kind), ("text", text)])
            item.fa.set_flow_style()
            seq.append(item)
        entry["changes"] = seq
    if notes.strip():
        entry["notes"] = LiteralScalarString(notes.strip() + "\n")
    return entry


def plan_release(
    repo: Repo,
    app_ref: Path,
    *,
    version: str | None = None,
    bump: str | None = None,
    summary: str | None = None,
    changes: list[tuple[str, str]] | None = None,
    notes: str = "",
    date: dt.date | None = None,
    force: bool = False,
    entry_override: Any = None,
) -> ReleasePlan:
    """Everything a release would write, computed without writing anything."""
    manifest_path = app_ref / MANIFEST_FILE if app_ref.is_dir() else app_ref
    app_dir = manifest_path.parent
    doc = load_yaml(manifest_path)
    old = load_app(manifest_path)
    versions = [v for v, _ in published(app_dir)]
    latest = max(versions, key=semver.Version.parse) if versions else None
    if bump and version:
        raise InputError("give --bump or --version, not both")
    if bump:
        base = max([old.version, *versions], key=semver.Version.parse)
        new_version = next_version(base, bump)
    else:
        new_version = version or old.version
    try:
        semver.Version.parse(new_version)
    except ValueError:
        raise InputError(f"{new_version!r} is not a semantic version") from None
    republish = new_version in versions
    if latest and not republish and semver.Version.parse(new_version) <= semver.Version.parse(latest) and not force:
        raise InputError(f"{old.name} {new_version} does not increase on the latest published version {latest} "
                         "(a device only updates to a higher version; --force to publish it anyway)")

    tree = doc.tree
    tree["version"] = new_version
    log = tree.get("changelog")
    has_entry = any(str(e.get("version")) == new_version for e in (log or []))
    if entry_override is not None or summary:
        if has_entry and not republish:
            raise InputError(f"{manifest_path}: the changelog already has an entry for {new_version}")
        entry = entry_override if entry_override is not None else _entry_map(
            new_version, date or dt.date.today(), summary or "", changes or [], notes)
        if log is None:
            from ruamel.yaml.comments import CommentedSeq

            tree["changelog"] = log = CommentedSeq()
        if not republish:
            log.append(entry)
    elif not has_entry:
        raise InputError(f"{old.name} {new_version} needs a changelog entry: give --summary (and --change, --notes) or --edit")
    buf = io.StringIO()
    roundtrip_yaml().dump(tree, buf)
    new_text = buf.getvalue()
    app = parse_app(new_text, manifest_path)

    packages = build_packages(app, repo)
    already = check_immutable(app, packages, load(repo.index_file))
    if republish and not already:
        already = _matches_committed(app, packages, repo)
    findings = lint_app(app, app_dir)
    index_text = "" if already else derive(repo, (app, records(packages, repo))).index_text
    return ReleasePlan(app, doc.path.read_text(encoding="utf-8"), new_text, packages, findings, already,
                       index_text, snapshot_path(app_dir, new_version), manifest_path)


def _matches_committed(app: App, packages: list[BuiltPackage], repo: Repo) -> bool:
    """A published version the ledger does not list yet: compare with its committed packages."""
    for p in packages:
        if p.path.exists() and p.path.read_bytes() != p.data:
            raise ImmutableVersionError(
                f"{app.name} {app.version} ({p.target}) is published as {repo.rel(p.path)} with sha256 "
                f"{package.sha256(p.path.read_bytes())}; rebuilding it gives sha256 {p.sha256}. A published "
                "version never changes: release a new version."
            )
    return True


def write_release(plan: ReleasePlan, repo: Repo) -> list[Path]:
    """Write what the plan computed: packages and the frozen manifest first, the ledger last."""
    written = []
    for p in plan.packages:
        fsio.write_bytes_atomic(p.path, p.data)
        written.append(p.path)
    fsio.write_text_atomic(plan.snapshot, plan.new_text)
    fsio.write_text_atomic(plan.manifest_path, plan.new_text)
    fsio.write_text_atomic(repo.index_file, plan.index_text)
    return [*written, plan.snapshot, plan.manifest_path, repo.index_file]
