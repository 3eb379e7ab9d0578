"""What a published version did on devices, as its app's own records say: the `fix` entries of
later versions' changelogs that name the version and say it ran out of GPU memory. `vram`
prints them beside its verdict, so a verdict that a recorded outcome contradicts is reported,
not hidden (docs/concepts/gpu-memory.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    named = re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\d)")
    try:
        this = appver.parse(version)
    except ValueError:
        return []
    out = []
    for later in records.versions(repo, name):
        if appver.parse(later) <= this:
            continue
        for entry in records.read(repo, name, later).changelog:
            out += [Outcome(version, entry.version, c.text) for c in entry.changes
                    if c.kind == "fix" and named.search(c.text) and OUT_OF_MEMORY.search(c.text)]
    return out
