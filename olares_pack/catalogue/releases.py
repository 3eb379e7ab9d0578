"""Publishing a version: the bump and its changelog entry, packages, the frozen record, and one
transaction that writes them with the ledger."""

from __future__ import annotations

import datetime as dt
import difflib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack import __version__, engines, olares
from olares_pack.apps.changelog import entry_map, next_version
from olares_pack.apps.load import parse_app, validate_doc
from olares_pack.apps.manifest import App, ChangelogEntry, ChartApp
from olares_pack.catalogue import ledger as index
from olares_pack.catalogue import offer, records
from olares_pack.catalogue.journal import Transaction
from olares_pack.catalogue.records import ChartRecord, EngineRecord, Record
from olares_pack.catalogue.repo import MANIFEST_FILE, Repo
from olares_pack.charts import package
from olares_pack.common import versions as appver
from olares_pack.common.errors import ImmutableVersionError, InputError
from olares_pack.common.yamlsrc import load_yaml, roundtrip_yaml
from olares_pack.render import app as render
from olares_pack.render import generation

if TYPE_CHECKING:
    from olares_pack.lint.findings import Finding

TOOL = f"olares-pack {__version__}"




@dataclass
class BuiltPackage:
    target: str
    version: str  # the version this target's chart carries (olares.chart_version)
    path: Path
    files: dict[str, str]  # the rendered chart
    tar: bytes
    data: bytes  # the .tgz

    @property
    def sha256(self) -> str:
        return package.sha256(self.data)

    @property
    def content_sha256(self) -> str:
        return package.sha256(self.tar)


def build_packages(app: App, repo: Repo) -> list[BuiltPackage]:
    out = []
    for name in app.targets:
        target = olares.get(name)
        files = render.render(app, target)
        tar = package.build_tar(app.name, files)
        # a chart app has one line: its chart carries the release version (chartrender.render)
        version = app.version if isinstance(app, ChartApp) else olares.chart_version(app.version, target)
        out.append(BuiltPackage(name, version, repo.package_path(name, app.name, version), files, tar, package.compress(tar)))
    return out


def unpublished_packages(app: App, repo: Repo) -> list[BuiltPackage]:
    """The packages of app.yaml's version before it is released (`package`); an unshipped version
    is never packaged."""
    entry = app.changelog_entry
    if entry is not None and not entry.shipped:
        raise InputError(f"{app.name} {app.version} is marked shipped: false: an unshipped version is never packaged")
    return build_packages(app, repo)


def lint_app(app: App, app_dir: Path, built: list[BuiltPackage], allow: tuple[str, ...] = ()) -> list[Finding]:
    from olares_pack.charts.source import ChartSource
    from olares_pack.lint import LintOptions, lint_source

    findings: list[Finding] = []
    for b in built:
        src = ChartSource(f"{app.name}@{b.target}", app.name, b.files, app=app, target=b.target, app_dir=app_dir)
        findings.extend(lint_source(src, LintOptions(allow=allow)))
    return findings


def engine_record(app: App) -> EngineRecord:
    if isinstance(app, ChartApp):
        return chart_engine(app)
    return EngineRecord(kind=app.engine.kind, build=app.engine.build, argv=engines.build_argv(app),
                        flags=engines.normalized_flags(app), env=dict(sorted(app.env.items())))


def chart_engine(app: ChartApp) -> EngineRecord:
    """What an imported chart runs, read from its render the way lint reads hand-written charts
    (sh -c wrappers, ${VAR:-default}, LLAMA_ARG_* and ConfigMap env): the engine's argv and its
    flags by canonical name, or kind "chart" (with the images) when no engine is recognised."""
    from olares_pack.engines import registry
    from olares_pack.engines.detect import find_engines
    from olares_pack.engines.normalize import normalize_generic, normalize_llama
    from olares_pack.render import imported as chartrender

    images = {"image": ", ".join(app.images())} if app.images() else {}
    try:
        invs = find_engines(chartrender.objects(app))
    except Exception:  # noqa: BLE001 - a chart that does not render still imports; lint says why
        invs = []
    if not invs:
        return EngineRecord(kind="chart", build=None, argv=[], flags=images, env={})
    inv = invs[0]
    if inv.kind == "llamacpp":
        tagged = inv.build or registry.tag_build(registry.image_parts(inv.image)[1])
        reg = registry.resolve("llamacpp", tagged, "image tag").registry
        flags = normalize_llama(inv.argv, reg, inv.env).values()
        build = tagged
    else:
        flags, build = normalize_generic(inv.argv[1:] if inv.argv[:1] == ["serve"] else inv.argv).values(), None
    return EngineRecord(kind=inv.kind, build=build, argv=inv.argv, flags={**flags, "image": inv.image}, env=dict(sorted(inv.env.items())))


def make_record(app: App, built: list[BuiltPackage], repo: Repo, adds: list[ChangelogEntry],
                derived: dict[str, str]) -> Record:
    entry = adds[-1]
    return Record(
        name=app.name, version=app.version, published=entry.date, tool=TOOL, generation=generation.GENERATION,
        charts={b.target: ChartRecord(file=repo.rel(b.path), sha256=b.sha256, size=len(b.data),
                                      content_sha256=b.content_sha256, olares=olares.get(b.target).dependency,
                                      version=b.version)
                for b in built},
        engine=engine_record(app), changelog=adds, derived=derived, manifest=records.resolved_manifest(app))


def derived_fields(raw: App) -> dict[str, str]:
    """Fields app.yaml leaves to olares-pack (`auto`), by path, so a later estimate that differs
    is not mistaken for an edit."""
    if isinstance(raw, ChartApp):
        return {}
    return {"resources.gpu_memory_mib": "auto"} if raw.resources.gpu_memory_mib == "auto" else {}


def edits_since(raw: App, rec: Record) -> list[str]:
    """What app.yaml (with `auto` not yet derived) changes in a published version, by field path."""
    mine = records.resolved_manifest(raw)
    for path in rec.derived:
        head, _, key = path.rpartition(".")
        node: Any = mine
        for part in head.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(key) == rec.derived[path]:
            node[key] = _at(rec.manifest, path)
    out = records.differences(rec.manifest, mine)
    entry = raw.changelog_entry
    theirs = rec.entry.model_dump(mode="json")
    out += records.differences(theirs, entry.model_dump(mode="json") if entry else None, f"changelog[{rec.version}]")
    return out


def _at(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def immutable_error(repo: Repo, rec: Record, edits: list[str]) -> ImmutableVersionError:
    shown = "; ".join(edits[:5]) + (f"; and {len(edits) - 5} more" if len(edits) > 5 else "")
    return ImmutableVersionError(
        f"{rec.name} {rec.version} is published ({repo.rel(records.path_of(repo, rec.name, rec.version))}); "
        f"app.yaml differs from it at {shown}. A published version never changes, and devices would never see "
        f"the edit: their catalogue hash changes only when a version is added, removed or renamed. Release a new "
        f"version (olares-pack release {rec.name} --bump patch).")


# ---------------------------------------------------------------- release


@dataclass
class ReleasePlan:
    app: App
    old_text: str
    new_text: str
    manifest_path: Path
    findings: list[Finding]
    already_published: bool
    packages: list[BuiltPackage]
    record: Record | None
    record_path: Path
    index_text: str

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.old_text.splitlines(True), self.new_text.splitlines(True),
                                            str(self.manifest_path), str(self.manifest_path)))


@dataclass(frozen=True)
class VersionAsked:
    """Which version to release: exactly `version`, the latest bumped by `bump`, or app.yaml's."""

    version: str | None = None
    bump: str | None = None
    force: bool = False  # a version that does not increase on the latest published one


@dataclass(frozen=True)
class EntryAsked:
    """The changelog entry to add: from the command line, or as written in $EDITOR (`edited`)."""

    summary: str | None = None
    changes: tuple[tuple[str, str], ...] = ()
    notes: str = ""
    date: dt.date | None = None
    edited: Any = None

    @property
    def given(self) -> bool:
        return self.edited is not None or bool(self.summary)


def plan_release(repo: Repo, app_ref: Path, asked: VersionAsked, entry: EntryAsked,
                 allow: tuple[str, ...] = ()) -> ReleasePlan:
    """Everything a release would write, computed without writing anything. It reads this app's
    manifest and records and the ledger, nothing of the other apps."""
    manifest_path = app_ref / MANIFEST_FILE if app_ref.is_dir() else app_ref
    doc = load_yaml(manifest_path)
    old = validate_doc(doc)
    published = records.versions(repo, old.name)
    new_version = _version(old, published, asked)
    old_text = doc.path.read_text(encoding="utf-8")
    if new_version in published:
        return _already_published(repo, old, new_version, old_text, manifest_path)
    tree = doc.tree
    tree["version"] = new_version
    _add_entry(tree, new_version, entry, manifest_path, old.name)
    from olares_pack.bench.describe import update_manifest_tree  # "Performance on <device>" (issue #37)

    update_manifest_tree(tree, manifest_path.parent)
    buf = io.StringIO()
    roundtrip_yaml().dump(tree, buf)
    new_text = buf.getvalue()
    if ALLOW_VRAM in allow and _note_over_budget(tree, new_version, parse_app(new_text, manifest_path), manifest_path.parent):
        buf = io.StringIO()
        roundtrip_yaml().dump(tree, buf)
        new_text = buf.getvalue()
    raw = parse_app(new_text, manifest_path, derive=False)
    app = parse_app(new_text, manifest_path)
    adds = _entries_recorded(app, published, manifest_path)
    built = build_packages(app, repo)
    findings = lint_app(app, manifest_path.parent, built, allow)
    from olares_pack.catalogue import moved
    from olares_pack.render.generation import GENERATION

    findings += moved.findings(repo, app, GENERATION, allow)  # the store folders of older versions
    rec = make_record(app, built, repo, adds, derived_fields(raw))
    rec = rec.model_copy(update={"unbenched": _unbenched(repo, manifest_path.parent, rec, published)})
    return ReleasePlan(app, old_text, new_text, manifest_path, findings, False, built, rec,
                       records.path_of(repo, app.name, new_version), ledger_with(repo, rec))


ALLOW_VRAM = "vram.budget"


def _unbenched(repo: Repo, app_dir: Path, rec: Record, published: list[str]) -> str | None:
    """The sentence saying the version's engine, image or model file changed since the previous
    published version and no measured bench record of it exists (bench/gaps.py); None otherwise."""
    from olares_pack.bench import gaps

    below = [v for v in published if appver.parse(v) < appver.parse(rec.version)]
    if not below:
        return None
    prev = records.read(repo, rec.name, below[-1])
    return gaps.unbenched(app_dir, rec.version, prev.version, gaps.engine_key(prev.engine, prev.manifest),
                          gaps.engine_key(rec.engine, rec.manifest))


def _note_over_budget(tree: Any, version: str, app: App, app_dir: Path) -> bool:
    """Released with `--allow vram.budget` over a verdict other than `fits`: the version's changelog
    entry says so, with the verdict's figures and reasons (generated, so users of the version read
    what the maintainer allowed). False when the verdict is `fits` or nothing is estimated."""
    from olares_pack.vram import gate

    v = gate.of_catalogue(app, app_dir)
    if v is None or v.verdict == "fits":
        return False
    line = f"Released over the GPU memory check (`release --allow {ALLOW_VRAM}`): {v.line()}."
    own = next(e for e in tree["changelog"] if str(e.get("version")) == version)
    notes = str(own.get("notes") or "").strip()
    if line not in notes:
        from ruamel.yaml.scalarstring import LiteralScalarString

        own["notes"] = LiteralScalarString((f"{notes}\n\n" if notes else "") + line + "\n")
    return True


def _version(old: App, published: list[str], asked: VersionAsked) -> str:
    """The version to release, checked: semver, not a target line's name, increasing (unless forced
    or already published)."""
    if asked.bump and asked.version:
        raise InputError("give --bump or --version, not both")
    if asked.bump:
        new_version = next_version(max([old.version, *published], key=appver.parse), asked.bump)
    else:
        new_version = asked.version or old.version
    try:
        appver.parse(new_version)
    except ValueError:
        raise InputError(f"{new_version!r} is not a semantic version") from None
    if (line := olares.line_clash(new_version)) is not None:
        raise InputError(f"{old.name} {new_version}: versions whose pre-release starts with {line!r} name the "
                         f"{line} target's chart of a release; choose another pre-release")
    if new_version in published:
        if new_version != old.version:
            raise InputError(f"{old.name} {new_version} is already published; app.yaml holds {old.version}")
        return new_version
    if (twin := next((v for v in published if appver.same(v, new_version)), None)) is not None:
        raise InputError(f"{old.name} {new_version} is {twin}, already published, spelled another way: a device "
                         "reads both as one version")
    latest = published[-1] if published else None
    if latest and appver.parse(new_version) <= appver.parse(latest) and not asked.force:
        raise InputError(f"{old.name} {new_version} does not increase on the latest published version {latest} "
                         "(a device only updates to a higher version; --force to publish it anyway)")
    return new_version


def _already_published(repo: Repo, old: App, version: str, text: str, manifest_path: Path) -> ReleasePlan:
    """app.yaml still says a published version: nothing to do, unless it was edited since."""
    rec = records.read(repo, old.name, version)
    if edits := edits_since(old, rec):
        raise immutable_error(repo, rec, edits)
    return ReleasePlan(records.app_of(rec), text, text, manifest_path, [], True, [], rec,
                       records.path_of(repo, old.name, version), "")


def _add_entry(tree: Any, version: str, entry: EntryAsked, manifest_path: Path, name: str) -> None:
    """The changelog entry asked for, appended to app.yaml's changelog (comments kept); without one,
    app.yaml must hold it already."""
    log = tree.get("changelog")
    has_entry = any(str(e.get("version")) == version for e in (log or []))
    if not entry.given:
        if not has_entry:
            raise InputError(f"{name} {version} needs a changelog entry: give --summary (and --change, --notes) or --edit")
        return
    if has_entry:
        raise InputError(f"{manifest_path}: the changelog already has an entry for {version}")
    added = entry.edited if entry.edited is not None else entry_map(
        version, entry.date or dt.date.today(), entry.summary or "", list(entry.changes), entry.notes)
    added["version"] = version  # the editor was opened before the version was final
    if log is None:
        from ruamel.yaml.comments import CommentedSeq

        tree["changelog"] = log = CommentedSeq()
    log.append(added)


def _entries_recorded(app: App, published: list[str], manifest_path: Path) -> list[ChangelogEntry]:
    """The entries the record of this version carries: its own, and those of the unshipped
    versions since the latest published one below it. Its own must be shipped."""
    own = app.changelog_entry
    assert own is not None
    if not own.shipped:
        raise InputError(f"{manifest_path}: the changelog entry of {app.version} says shipped: false; an unshipped "
                         "version is never packaged or published (remove shipped: false to publish it)")
    top = appver.parse(app.version)
    below = [appver.parse(v) for v in published if appver.parse(v) < top]
    floor = max(below) if below else None
    return sorted((e for e in app.changelog
                   if (floor is None or appver.parse(e.version) > floor) and appver.parse(e.version) <= top
                   and (e.version == app.version or not e.shipped)),
                  key=lambda e: appver.parse(e.version))


def ledger_with(repo: Repo, rec: Record) -> str:
    """The ledger with one app's entry derived again from its records (plus `rec`); the other
    apps' entries are carried over as they are."""
    ledger = index.load(repo.index_file)
    recs = [records.read(repo, rec.name, v) for v in records.versions(repo, rec.name) if v != rec.version]
    ledger["apps"][rec.name] = index.app_entry(rec.name, [*recs, rec])
    return index.dumps(ledger)


def write_release(plan: ReleasePlan, repo: Repo) -> list[Path]:
    """One transaction: packages, the record, app.yaml, the ledger (renamed into place in that order)."""
    assert plan.record is not None
    txn = Transaction(repo.root)
    for p in plan.packages:
        txn.write(p.path, p.data)
    txn.write(plan.record_path, records.dumps(plan.record))
    txn.write(plan.manifest_path, plan.new_text)
    txn.write(repo.index_file, plan.index_text)
    txn.write(offer.offer_file(repo), offer.text_with(repo, plan.record, {p.path: p.data for p in plan.packages}))
    return txn.commit()
