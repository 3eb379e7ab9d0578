"""Changelog entries: written into app.yaml (from the command line or in $EDITOR), and shown as
the market shows them (spec.upgradeDescription, versionHistory).

Shown entries are read as plain data (a ChangelogEntry dumped to JSON, or a ledger entry), so the
market server formats them without loading the manifest models or the YAML writer.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from typing import Any

from olares_pack.common.errors import InputError

# what `release --edit` shows where the command line gave nothing
_PLACEHOLDERS = {"summary": "one line: what changed", "changes": [("fix", "describe it")], "notes": "markdown notes"}
CHANGE_KINDS = ("model", "image", "engine-args", "resources", "packaging", "fix", "docs", "feature")


def entry_map(version: str, date: dt.date, summary: str, changes: list[tuple[str, str]], notes: str) -> Any:
    """A changelog entry as app.yaml holds it: a round-trip mapping (changes in flow style, notes a
    literal block), to append to the changelog with comments and key order kept."""
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


def edit_template(name: str, version: str, date: dt.date, summary: str, changes: list[tuple[str, str]],
                  notes: str) -> str:
    """The entry `release --edit` opens in $EDITOR: what the command line gave, placeholders for the rest."""
    from olares_pack.common.yamlsrc import roundtrip_yaml

    entry = entry_map(version, date, summary or _PLACEHOLDERS["summary"], changes or _PLACEHOLDERS["changes"],
                      notes or _PLACEHOLDERS["notes"])
    buf = io.StringIO()
    roundtrip_yaml().dump(entry, buf)
    return (f"# Changelog entry for {name} {version}. Lines starting with # are ignored.\n"
            f"# kinds: {', '.join(CHANGE_KINDS)}\n" + buf.getvalue())


def read_edited(text: str) -> Any:
    """The entry as the editor left it: a round-trip mapping, under app.yaml's limits."""
    from ruamel.yaml.error import YAMLError

    from olares_pack.common.yamlsrc import fast_load, roundtrip_yaml

    fast_load(text, Path("the edited changelog entry"))  # the same limits as app.yaml (no aliases, UTF-8, size)
    try:
        entry = roundtrip_yaml().load(io.StringIO(text))
    except YAMLError as exc:
        raise InputError(f"the edited changelog entry is not valid YAML: {exc}") from None
    if not isinstance(entry, dict):
        raise InputError("the edited changelog entry is not a mapping (version:, date:, summary:, ...)")
    return entry


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


def next_version(current: str, bump: str) -> str:
    """`current` bumped by `bump` (patch, minor or major): the version a release entry names, in
    `current`'s own scheme (26.08.29 → 26.08.30)."""
    from olares_pack.common import versions as appver

    return appver.bump(current, bump)
