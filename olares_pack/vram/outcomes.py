"""What a published version did on devices, as its app's own records say: the `fix` entries of
later versions' changelogs that name the version and say it ran out of GPU memory. `vram`
prints them beside its verdict, so a verdict that a recorded outcome contradicts is reported,
not hidden (docs/concepts/gpu-memory.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import semver

from olares_pack.catalogue import records
from olares_pack.catalogue.repo import Repo
from olares_pack.common import versions as appver

OUT_OF_MEMORY = re.compile(r"out[ -]of[ -](?:CUDA |GPU )?memory|\bOOM\b", re.IGNORECASE)


@dataclass(frozen=True)
class Outcome:
    version: str  # the version whose record ran out of memory
    recorded_in: str  # the version whose changelog entry says so
    text: str

    def contradicts(self, verdict: str) -> bool:
        """An out-of-memory record against a verdict that says the version fits with a margin
        ('tight' already says the margin is within the estimate's uncertainty)."""
        return verdict == "fits"

    def to_dict(self, verdict: str) -> dict[str, object]:
        return {"version": self.version, "recorded_in": self.recorded_in, "kind": "fix", "text": self.text,
                "verdict": verdict, "contradicts": self.contradicts(verdict)}


def recorded(repo: Repo, name: str, version: str) -> list[Outcome]:
    """Out-of-memory outcomes of `version` that the app's later release records state."""
    try:
        this = appver.parse(version)
    except ValueError:
        return []
    return _named_in(version, this, _records(repo, name, after=this))


def by_version(repo: Repo, name: str) -> dict[str, list[Outcome]]:
    """`recorded` of every published version, each record read once (a release lints the app
    twice, and each lint asked this of every version: the records were read V² times)."""
    published = _records(repo, name)
    return {version: _named_in(version, this, published) if this is not None else []
            for version, this, _ in published}


def _records(repo: Repo, name: str, after: semver.Version | None = None
             ) -> list[tuple[str, semver.Version | None, records.Record]]:
    """The app's records with their versions' values, read once; with `after`, only later ones."""
    out = []
    for version in records.versions(repo, name):
        try:
            parsed: semver.Version | None = appver.parse(version)
        except ValueError:
            parsed = None
        if after is None or (parsed is not None and parsed > after):
            out.append((version, parsed, records.read(repo, name, version)))
    return out


def _named_in(version: str, this: semver.Version,
              published: list[tuple[str, semver.Version | None, records.Record]]) -> list[Outcome]:
    """What the records of versions after `version` (its value `this`) fixed of its running out of memory."""
    named = re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\d)")
    out = []
    for _, parsed, rec in published:
        if parsed is None or parsed <= this:
            continue
        for entry in rec.changelog:
            out += [Outcome(version, entry.version, c.text) for c in entry.changes
                    if c.kind == "fix" and named.search(c.text) and OUT_OF_MEMORY.search(c.text)]
    return out
