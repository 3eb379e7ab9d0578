"""market-offer.json: which OS lines the market offers each published chart to, decided when the
catalogue is built, and what the server would otherwise need Helm for.

A chart's olares dependency says where its author meant it to install; the installer of each
release has rules of its own (`lint --olares V` applies them). A published chart is offered to
an OS version only where both agree: for every release olares-pack knows that the dependency
admits, an imported chart (generation 0: a hand-written chart's own bytes) is linted with that
release's rules, and a release whose installer rules refuse it (an installer error, never a
policy one) is left out of its offer. Charts olares-pack rendered are made for their line's
window and linted by `release` before they are published: their window is their offer. An imported
single-chart apiVersion v2 app declaring `>=1.12.3-0` is offered to 1.12.3-1.12.5 only: from
1.12.6 the installer refuses apiVersion v2 without spec.subCharts (framework/oac checkSubCharts),
until `import --upgrade` publishes a chart of its own for the 1.12.6+ line.

Published bytes never move; the offer is the market's decision, so it lives beside the ledger
(not in the frozen records) and is derived again by `build` and checked by `build --check`. A
release R stands for the OS versions from R up to the next known release; the newest known release
for everything after it.

Each entry also holds a templated OlaresManifest.yaml (the v2 shared form) as the administrator's
install renders it, so that `serve` reads every manifest as plain YAML and never loads Helm.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack import olares
from olares_pack.common import fsio, jsontext

if TYPE_CHECKING:
    from olares_pack.catalogue.records import Record
    from olares_pack.catalogue.repo import Repo

FORMAT = 1
NOTHING = "<0.0.0-0"  # a chart no release's installer accepts: offered to no OS version
MANIFEST = "OlaresManifest.yaml"


def _window_of(release: str) -> tuple[str | None, str | None]:
    """The OS versions a known release stands for: from it (inclusive) to the next one (exclusive)."""
    i = olares.KNOWN_RELEASES.index(release)
    nxt = olares.KNOWN_RELEASES[i + 1] if i + 1 < len(olares.KNOWN_RELEASES) else None
    return f"{release}-0", (f"{nxt}-0" if nxt else None)


def offer_constraint(refused: set[str]) -> str | None:
    """The OS versions outside the refused releases' windows, as a constraint (None: every one)."""
    if not refused:
        return None
    releases = olares.KNOWN_RELEASES
    runs: list[tuple[int, int]] = []  # inclusive index ranges of releases not refused
    for i, r in enumerate(releases):
        if r in refused:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    alternatives = []
    for first, last in runs:
        terms = []
        if first > 0:  # below the first known release the dependency alone decides
            terms.append(f">={_window_of(releases[first])[0]}")
        upper = _window_of(releases[last])[1]
        if upper:
            terms.append(f"<{upper}")
        alternatives.append(",".join(terms) or ">=0.0.0-0")
    return " || ".join(alternatives) or NOTHING


def installer_errors(data: bytes, label: str, release: str) -> list[str]:
    """The installer errors `lint --olares RELEASE` gives a packaged chart ("rule: message")."""
    from olares_pack.charts.source import from_archive_bytes
    from olares_pack.lint import LintOptions, lint_chart

    findings = lint_chart(from_archive_bytes(data, label), LintOptions(olares_version=release)).findings
    return sorted({f"{f.rule}: {f.message}" for f in findings if f.severity == "error" and f.kind == "installer"})


def installed_manifest(data: bytes, name: str) -> str | None:
    """A templated OlaresManifest.yaml as the administrator's install reads it; None when static."""
    from olares_pack.charts import helm, package

    _, files, _ = package.read_archive_split(data)
    if "{{" not in files.get(MANIFEST, ""):
        return None
    return helm.installed_manifest(files, name)


def chart_entry(data: bytes, name: str, label: str, dependency: str, *, imported: bool = True) -> dict[str, Any]:
    """What the market decides for one package: the known releases its dependency admits that
    accept it, those that refuse it (with the installer's reasons), the offer constraint, and the
    rendered manifest of a templated one. A chart olares-pack rendered (`imported` False) is made
    for its line's window and was linted by `release` with the rules of that line's newest
    release: its window is its offer, and it is not linted again here (a 200-app catalogue holds
    thousands of them; lint costs ~0.1 s a chart and release)."""
    from olares_pack.common.errors import InputError

    admitted = [r for r in olares.KNOWN_RELEASES if olares.admits(dependency, r)]
    refused = {}
    for r in admitted if imported else []:
        errors = installer_errors(data, label, r)
        if errors:
            refused[r] = errors
    out: dict[str, Any] = {"accepted": [r for r in admitted if r not in refused]}
    if refused:
        out["refused"] = refused
    offer = offer_constraint(set(refused))
    if offer is not None:
        out["offer"] = offer
    try:
        manifest = installed_manifest(data, name)
    except InputError:
        manifest = None  # lint has said why (manifest.parse); the server reads it as written
    if manifest is not None:
        out["manifest"] = manifest
    return out


class _Cache:
    """Entries already derived, by package sha256 and olares-pack's sources (lint's rules among
    them): the same bytes under the same rules give the same decision."""

    def __init__(self, repo: Repo) -> None:
        from olares_pack.render import generation

        self.path = repo.state_dir / "cache" / "offer.json"
        self.keep = repo.state_dir.is_dir()  # a dry run in a fresh checkout leaves nothing behind
        self.stamp = generation.fingerprint()
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = {}
        self.entries: dict[str, Any] = doc.get("entries", {}) if isinstance(doc, dict) and doc.get("stamp") == self.stamp else {}
        self.dirty = False

    def get(self, key: str) -> dict[str, Any] | None:
        hit = self.entries.get(key)
        return hit if isinstance(hit, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.entries[key] = value
        self.dirty = True

    def save(self) -> None:
        if self.dirty and self.keep:
            try:
                fsio.write_text_atomic(self.path, json.dumps({"stamp": self.stamp, "entries": self.entries}, sort_keys=True))
            except OSError:
                pass  # a read-only checkout: derived again next time


def derive(repo: Repo, recs: dict[str, list[Record]], packages: dict[Path, bytes] | None = None) -> dict[str, Any]:
    """The offer document of every published chart. `packages`: bytes not yet on disk (a build
    about to reproduce them), by path."""
    cache = _Cache(repo)
    charts: dict[str, Any] = {}
    for name in sorted(recs):
        for rec in recs[name]:
            for target, ch in sorted(rec.charts.items()):
                path = repo.root / ch.file
                imported = rec.generation == 0  # a hand-written chart's own bytes (olares-pack import)
                key = f"{ch.sha256}:{ch.olares}:{name}:{imported}"
                entry = cache.get(key)
                if entry is None:
                    data = (packages or {}).get(path)
                    if data is None:
                        try:
                            data = path.read_bytes()
                        except OSError:
                            continue  # build --check names the missing package; nothing to decide on
                    entry = chart_entry(data, name, ch.file, ch.olares, imported=imported)
                    cache.put(key, entry)
                charts[ch.file] = {"app": name, "sha256": ch.sha256, "target": target, **entry}
    cache.save()
    return {"format": FORMAT, "charts": charts}


def text(repo: Repo, recs: dict[str, list[Record]], packages: dict[Path, bytes] | None = None) -> str:
    return jsontext.dumps(derive(repo, recs, packages))


def text_with(repo: Repo, rec: Record, packages: dict[Path, bytes]) -> str:
    """The offer file with one new record's charts decided (its packages not yet on disk); the
    other charts' entries carried over as they are, as the ledger's are (releases.ledger_with).
    Without a readable offer file, every chart is decided."""
    path = offer_file(repo)
    try:
        doc = jsontext.loads(path.read_bytes())
        charts = doc["charts"] if isinstance(doc, dict) and doc.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError):
        charts = None
    if not isinstance(charts, dict):
        from olares_pack.catalogue import records

        recs = {n: [records.read(repo, n, v) for v in records.versions(repo, n)] for n in records.published_apps(repo)}
        recs[rec.name] = [*[r for r in recs.get(rec.name, []) if r.version != rec.version], rec]
        return text(repo, recs, packages)
    charts.update(derive(repo, {rec.name: [rec]}, packages)["charts"])
    return jsontext.dumps({"format": FORMAT, "charts": dict(sorted(charts.items()))})


def offer_file(repo: Repo) -> Path:
    from olares_pack.catalogue.repo import OFFER_FILE

    return repo.index_file.parent / OFFER_FILE
