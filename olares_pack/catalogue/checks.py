"""The repository as a whole: the ledger derived from every record, the checks that hold without
today's renderer, and the reproduction of a package that is missing from the tree."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from olares_pack import olares
from olares_pack.apps.load import load_app
from olares_pack.apps.manifest import App, discover
from olares_pack.catalogue import ledger as index
from olares_pack.catalogue import records
from olares_pack.catalogue.records import ChartRecord, Record
from olares_pack.catalogue.repo import Repo
from olares_pack.charts import package
from olares_pack.charts.objects import download_model
from olares_pack.common import fsio
from olares_pack.common.errors import InputError
from olares_pack.common.yamlsrc import safe_load
from olares_pack.render import app as render
from olares_pack.render import generation

if TYPE_CHECKING:
    from olares_pack.charts.source import ChartSource


@dataclass(frozen=True)
class Issue:
    file: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


def load_records(repo: Repo) -> dict[str, list[Record]]:
    """Every record of every app, oldest version first."""
    return {name: [records.read(repo, name, v) for v in records.versions(repo, name)]
            for name in records.published_apps(repo)}


def ledger_text(recs: dict[str, list[Record]]) -> str:
    return index.dumps(index.build(recs))


# ---------------------------------------------------------------- verdict cache


class VerdictCache:
    """Checks already passed, keyed by everything they depend on (the record's bytes, the
    package's bytes, olares-pack's sources): a key that matches cannot give another verdict."""

    def __init__(self, repo: Repo) -> None:
        self.path = repo.state_dir / "cache" / "verified.json"
        try:
            self.keys: set[str] = set(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            self.keys = set()
        self.used: set[str] = set()

    @staticmethod
    def key(*parts: str) -> str:
        return hashlib.sha256("\0".join((generation.fingerprint(), *parts)).encode()).hexdigest()

    def __contains__(self, key: str) -> bool:
        if key in self.keys:
            self.used.add(key)
            return True
        return False

    def add(self, key: str) -> None:
        self.used.add(key)

    def save(self) -> None:
        """Keep exactly the verdicts this check relied on: those of records, packages or sources
        that are gone are dropped rather than piling up."""
        if self.used != self.keys:
            try:
                fsio.write_text_atomic(self.path, json.dumps(sorted(self.used)))
            except OSError:
                pass  # a read-only checkout: the check still ran in full


# ---------------------------------------------------------------- what a package holds


def package_facts(data: bytes, name: str) -> dict[str, Any]:
    """Name, version, engine image and argv, and model of a chart archive, read through Helm
    with the values the installer injects (owner == admin, nvidia GPU). An apiVersion v2 app is
    read as the installer installs it: its manifest rendered, each spec.subCharts folder a chart
    of its own (beclab/Olares framework/app-service HelmOpsV2.install)."""
    from olares_pack.charts import helm
    from olares_pack.engines.detect import find_engines

    with helm.load_bytes(data) as chart:
        facts: dict[str, Any] = {"name": chart.name, "version": chart.version}
    _, files, _ = package.read_archive_split(data)
    try:
        manifest = safe_load(helm.installed_manifest(files, name)) or {}
        deps = (manifest.get("options") or {}).get("dependencies") or []
        facts["olares"] = next((str(d.get("version")) for d in deps if isinstance(d, dict) and d.get("name") == "olares"), None)
    except (yaml.YAMLError, AttributeError, InputError):
        manifest, facts["olares"] = {}, None
    subs = ([str(c.get("name")) for c in (manifest.get("spec") or {}).get("subCharts") or [] if isinstance(c, dict)]
            if isinstance(manifest, dict) and manifest.get("apiVersion") == "v2" else [])
    parts = [(sub, package.build_archive(sub, {k[len(sub) + 1:]: v for k, v in files.items() if k.startswith(f"{sub}/")}))
             for sub in subs if f"{sub}/Chart.yaml" in files] or [(name, data)]
    objects: list[dict[str, Any]] = []
    for release, archive in parts:
        with helm.load_bytes(archive) as chart:
            rendered = helm.render(chart, helm.installer_values(name, [name]), namespace=f"{release}-alice")
        objects += [o for _, o in helm.objects(rendered) if isinstance(o, dict)]
    engines = find_engines(objects)
    if engines:
        facts["image"], facts["argv"] = engines[0].image, engines[0].argv
    if model := download_model(objects):  # the download step (per-user form), the engine's wrapper (shared form)
        facts["model"] = model
    return facts


def rendered_manifest(data: bytes) -> str:
    _, files, _ = package.read_archive_split(data)
    return files.get("OlaresManifest.yaml", "")


def record_facts(rec: Record, target: str) -> dict[str, Any]:
    if "chart" in rec.manifest or rec.manifest["engine"].get("kind") == "generic":
        # an imported chart (the package is the source's), a generic GPU server (no engine to read): its
        # name, version and window
        facts = {"name": rec.name, "version": rec.chart_version(target), "olares": rec.charts[target].olares}
        if (rec.manifest.get("chart") or {}).get("manifest_text") is not None:
            del facts["olares"]  # a templated manifest states its window only once rendered
        return facts
    img = rec.manifest["engine"]["image"]
    ref = f"{img['repository']}:{img['tag']}" + (f"@{img['digest']}" if img.get("digest") else "")
    model = rec.manifest["model"]
    argv = rec.engine.argv
    if rec.manifest["engine"].get("shared", False):
        from olares_pack import olares
        from olares_pack.render import llmbase

        app = records.app_of(rec)
        if llmbase.active(app, olares.get(target)):
            argv = llmbase.wrapper_argv(app)  # the shared form runs them through its wrapper
    return {"name": rec.name, "version": rec.chart_version(target), "olares": rec.charts[target].olares, "image": ref, "argv": argv,
            "model": {"repo": model["repo"], "revision": model["revision"], "files": [f["name"] for f in model["files"]]}}


# ---------------------------------------------------------------- check


def _check_package(repo: Repo, rec: Record, target: str, ch: ChartRecord, cache: VerdictCache) -> list[Issue]:
    expected = repo.rel(repo.package_path(target, rec.name, rec.chart_version(target)))
    if ch.file != expected:
        return [Issue(repo.rel(records.path_of(repo, rec.name, rec.version)),
                      f"charts.{target}.file is {ch.file}, expected {expected}")]
    path = repo.root / ch.file
    if not path.is_file():
        return [Issue(ch.file, f"missing: {rec.name} {rec.version} ({target}) is published with sha256 {ch.sha256} "
                               "(olares-pack build reproduces it when it can; else restore it from git)")]
    data = path.read_bytes()
    sha = package.sha256(data)
    try:
        content = package.content_digest(data)
    except ValueError as exc:
        return [Issue(ch.file, f"not a gzip archive ({exc}); its record says sha256 {ch.sha256}")]
    if sha != ch.sha256:
        if content == ch.content_sha256:
            return [Issue(ch.file, f"same content, different bytes: sha256 {sha}, record {ch.sha256} (recompressed; "
                                   "a published .tgz is never recompressed: restore the committed file from git)")]
        return [Issue(ch.file, f"changed since publication: sha256 {sha} (content {content}), record says sha256 "
                               f"{ch.sha256} (content {ch.content_sha256})")]
    if content != ch.content_sha256:
        return [Issue(repo.rel(records.path_of(repo, rec.name, rec.version)),
                      f"charts.{target}.content_sha256 is {ch.content_sha256}; the package's content is {content}")]
    key = cache.key("facts", rec.model_dump_json(), sha)
    if key in cache:
        return []
    try:
        found = package_facts(data, rec.name)
    except InputError as exc:
        return [Issue(ch.file, f"not a loadable chart: {exc}")]
    want = record_facts(rec, target)
    issues = []
    for k, v in want.items():
        if k == "model" and k not in found:
            continue  # a chart without olares-pack's download step names its model elsewhere
        if found.get(k) != v:
            issues.append(Issue(ch.file, f"{k} is {json.dumps(found.get(k))} in the package, {json.dumps(v)} in its record"))
    if not issues:
        cache.add(key)
    return issues


def _check_reproduces(repo: Repo, rec: Record, cache: VerdictCache) -> list[Issue]:
    """This olares-pack, at the record's generation, must render the record into its content."""
    key = cache.key("reproduces", rec.model_dump_json())
    if key in cache:
        return []
    app = records.app_of(rec)
    issues = []
    for target, ch in sorted(rec.charts.items()):
        tar = rendered_tar(rec, target, app)
        if package.sha256(tar) != ch.content_sha256:
            issues.append(Issue(
                repo.rel(records.path_of(repo, rec.name, rec.version)),
                f"generation {rec.generation} no longer renders {rec.name} {rec.version} ({target}) into its package: "
                "templates or rendering changed what a chart holds. Raise GENERATION in olares_pack/render/generation.py "
                "(published versions keep their bytes; the next release records the new generation)"))
    if not issues:
        cache.add(key)
    return issues


def rendered_tar(rec: Record, target: str, app: App | None = None) -> bytes:
    """The uncompressed chart this olares-pack renders today from a record (its content digest is
    the record's when the generation still reproduces it)."""
    return package.build_tar(rec.name, render.render(app or records.app_of(rec), olares.get(target)))


def check(repo: Repo, recs: dict[str, list[Record]] | None = None) -> list[Issue]:
    """Everything that must hold between app.yaml files, records, packages and the ledger."""
    recs = load_records(repo) if recs is None else recs
    cache = VerdictCache(repo)
    issues: list[Issue] = []
    current = repo.index_file.read_text(encoding="utf-8") if repo.index_file.exists() else ""
    if current != ledger_text(recs):
        issues.append(Issue(repo.rel(repo.index_file), "differs from the release records (olares-pack build derives it)"))
    issues += offer_issues(repo, recs)
    for rs in recs.values():
        for rec in rs:
            for target, ch in sorted(rec.charts.items()):
                issues += _check_package(repo, rec, target, ch, cache)
        if rs[-1].generation == generation.GENERATION:
            issues += _check_reproduces(repo, rs[-1], cache)
    issues += unpublished_edits(repo, recs)
    from olares_pack.bench.records import check as bench_records  # apps/<name>/bench/*.json (issue #37)

    issues += [Issue(repo.rel(path), problem) for path, problem in bench_records(repo.apps_dir)]
    cache.save()
    return issues


def offer_issues(repo: Repo, recs: dict[str, list[Record]]) -> list[Issue]:
    """market-offer.json against the packages and today's installer rules (catalogue/offer.py)."""
    from olares_pack.catalogue import offer

    path = offer.offer_file(repo)
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current == offer.text(repo, recs):
        return []
    why = "missing" if current is None else "differs from what the packages and the installer rules decide"
    return [Issue(repo.rel(path), f"{why} (olares-pack build derives it)")]


def unpublished_edits(repo: Repo, recs: dict[str, list[Record]]) -> list[Issue]:
    """app.yaml files that change a version that is already published."""
    out = []
    for app_dir in discover(repo.apps_dir):
        raw = load_app(app_dir, derive=False)
        rec = next((r for r in recs.get(raw.name, []) if r.version == raw.version), None)
        if rec is not None and (issue := unpublished_edit(repo, app_dir, raw, rec)):
            out.append(issue)
    return out


def unpublished_edit(repo: Repo, app_dir: Path, raw: App, rec: Record) -> Issue | None:
    """app.yaml (`raw`: `auto` not derived) against the record of the same version."""
    from olares_pack.catalogue.releases import edits_since, immutable_error

    edits = edits_since(raw, rec)
    return Issue(repo.rel(app_dir / "app.yaml"), str(immutable_error(repo, rec, edits))) if edits else None


# ---------------------------------------------------------------- reproduce


def reproduce(repo: Repo, rec: Record, target: str) -> bytes:
    """A published package rendered again from its record, or an error saying why it cannot be:
    another generation, other content, or the same content compressed to other bytes."""
    ch = rec.charts[target]
    if rec.generation != generation.GENERATION:
        raise InputError(f"{ch.file}: {rec.name} {rec.version} was rendered by generation {rec.generation}, this "
                         f"olares-pack renders generation {generation.GENERATION}: only the committed file has its bytes "
                         "(restore it from git)")
    tar = rendered_tar(rec, target)
    if package.sha256(tar) != ch.content_sha256:
        raise InputError(f"{ch.file}: rendering {rec.name} {rec.version} again gives other content "
                         f"({package.sha256(tar)}, record {ch.content_sha256}); restore it from git")
    data = package.compress(tar)
    if package.sha256(data) != ch.sha256:
        raise InputError(f"{ch.file}: same content as published, but this machine's zlib compresses it to other bytes "
                         f"(sha256 {package.sha256(data)}, record {ch.sha256}); restore the committed file from git")
    return data


def published_bytes(repo: Repo, rec: Record, target: str) -> tuple[bytes, str]:
    """The published .tgz: the committed file when it is intact, else an exact reproduction;
    with a word saying which it was."""
    ch = rec.charts[target]
    path = repo.root / ch.file
    if path.is_file():
        data = path.read_bytes()
        if package.sha256(data) == ch.sha256:
            return data, "committed"
    return reproduce(repo, rec, target), "reproduced"


def missing_packages(repo: Repo, recs: dict[str, list[Record]]) -> dict[Path, bytes]:
    """Packages the tree lacks, reproduced; a package that is present but differs is refused."""
    out: dict[Path, bytes] = {}
    for rs in recs.values():
        for rec in rs:
            for target, ch in sorted(rec.charts.items()):
                path = repo.root / ch.file
                if not path.is_file():
                    out[path] = reproduce(repo, rec, target)
                elif package.sha256(path.read_bytes()) != ch.sha256:
                    raise InputError(f"{ch.file}: sha256 {package.sha256(path.read_bytes())} differs from its record "
                                     f"({ch.sha256}): a published package was changed; restore it from git")
    return out


def version_source(repo: Repo, app_dir: Path, version: str, target_name: str) -> ChartSource:
    """app.yaml rendered today (`current`), or a published version as it was published: its
    committed package, read with the app of its record."""
    from olares_pack.catalogue import MANIFEST_FILE
    from olares_pack.charts.source import ChartSource, from_archive_bytes

    if version in ("current", "app.yaml"):
        app = load_app(app_dir / MANIFEST_FILE)
        t = olares.get(target_name if target_name in app.targets else app.targets[0])
        return ChartSource(f"{app.name} {app.version}", app.name, render.render(app, t), app=app, target=t.name)
    rec = records.read(repo, app_dir.name, version)
    target = target_name if target_name in rec.charts else sorted(rec.charts)[0]
    data, _ = published_bytes(repo, rec, target)
    src = from_archive_bytes(data, f"{rec.name} {rec.version}")
    return ChartSource(src.label, src.folder, src.files, app=records.app_of(rec), target=target, binary=src.binary)
