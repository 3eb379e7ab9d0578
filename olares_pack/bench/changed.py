"""'What changed' for the history table: the flag-aware diff from the version before, in one line
(published versions), else the version's changelog summary (an unshipped or unreleased one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from olares_pack.bench.history import one_line

if TYPE_CHECKING:
    from olares_pack.catalogue.repo import Repo

SECTIONS = ("arguments", "model", "image", "environment", "resources")


def what_changed(repo: Repo, app_dir: Path, versions: list[str]) -> dict[str, str]:
    from olares_pack import diff
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import MANIFEST_FILE
    from olares_pack.catalogue import records as releases
    from olares_pack.catalogue.checks import version_source

    app = load_app(app_dir / MANIFEST_FILE)
    summaries = {e.version: e.summary for e in app.changelog}
    published = releases.versions(repo, app_dir.name)
    out: dict[str, str] = {}
    facts: dict[str, diff.Facts] = {}

    def facts_of(v: str) -> diff.Facts:
        if v not in facts:
            facts[v] = diff.facts(version_source(repo, app_dir, v, "current"))
        return facts[v]

    for v in versions:
        before = [p for p in published if _key(p) < _key(v)]
        if v in published and before:
            res = diff.compare(facts_of(before[-1]), facts_of(v))
            kept = [(c.section, diff.describe(c, c.key)) for c in res.changes if c.section in SECTIONS]
            out[v] = one_line(kept) if kept else summaries.get(v, "")
        else:
            out[v] = summaries.get(v, "")
    return out


def _key(v: str) -> object:
    from olares_pack.common import versions as appver

    return appver.parse(v)
