"""Changelog entries as the market shows them (spec.upgradeDescription, versionHistory)."""

from __future__ import annotations

from .manifest import ChangelogEntry


def upgrade_description(entry: ChangelogEntry, locale: str = "en-US") -> str:
    """Markdown "what's new" for one version, in one locale (falling back to the entry's text)."""
    loc = entry.locales.get(locale)
    summary = loc.summary if loc else entry.summary
    notes = loc.notes if loc and loc.notes else entry.notes
    status = "" if entry.shipped else ", never shipped"
    parts = [f"**{entry.version}** ({entry.date.isoformat()}{status}): {summary}"]
    if entry.changes:
        parts.append("\n".join(f"- {c.kind}: {c.text}" for c in entry.changes))
    if notes.strip():
        parts.append(notes.strip())
    return "\n\n".join(parts) + "\n"
