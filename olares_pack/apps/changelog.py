"""Changelog entries as the market shows them (spec.upgradeDescription, versionHistory).

Entries are read as plain data (a ChangelogEntry dumped to JSON, or a ledger entry), so the
market server formats them without loading the manifest models.
"""

from __future__ import annotations

from typing import Any


def upgrade_description(entry: dict[str, Any], locale: str = "en-US") -> str:
    """Markdown "what's new" for one version, in one locale (falling back to the entry's text)."""
    loc = (entry.get("locales") or {}).get(locale) or {}
    summary = loc.get("summary") or entry["summary"]
    notes = loc.get("notes") or entry.get("notes") or ""
    status = "" if entry.get("shipped", True) else ", never shipped"
    parts = [f"**{entry['version']}** ({entry['date']}{status}): {summary}"]
    if entry.get("changes"):
        parts.append("\n".join(f"- {c['kind']}: {c['text']}" for c in entry["changes"]))
    if notes.strip():
        parts.append(notes.strip())
    return "\n\n".join(parts) + "\n"
