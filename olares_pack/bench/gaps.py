"""Versions without a measurement, and what a release record says about a version beyond its
figures (a skipped rehearsal): the notes and the figure-less rows `history` shows.

A version is *unbenched* when what decides its speed — the engine's arguments, its image, the
model file — differs from the previous published version's and no measured bench record of it
exists (a transcribed or synthetic one does not count: neither is the app's speed measured)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.bench import records

if TYPE_CHECKING:
    from olares_pack.catalogue.records import EngineRecord
    from olares_pack.catalogue.records import Record as ReleaseRecord
    from olares_pack.catalogue.repo import Repo


def engine_key(engine: EngineRecord, manifest: dict[str, Any]) -> dict[str, Any]:
    """What decides a version's speed, by name: the engine arguments, the image, the model file."""
    eng = manifest.get("engine") if isinstance(manifest.get("engine"), dict) else {}
    model = manifest.get("model") if isinstance(manifest.get("model"), dict) else {}
    image = eng.get("image") if isinstance(eng, dict) else None
    return {"engine arguments": list(engine.argv), "image": image or engine.flags.get("image"),
            "model file": {k: model.get(k) for k in ("repo", "file", "revision")} if model else None}


def changed_parts(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in new if old.get(k) != new.get(k)]


def measured(app_dir: Path, version: str) -> bool:
    bf = records.read(app_dir, version)
    return bf is not None and any(r.provenance_kind() == "measured" and r.summary() is not None
                                  for r in records.current(bf))


def unbenched(app_dir: Path, version: str, previous: str | None, old: dict[str, Any] | None,
              new: dict[str, Any]) -> str | None:
    """The sentence a release record and its output carry, or None (measured, or nothing changed)."""
    if previous is None or old is None or measured(app_dir, version):
        return None
    parts = changed_parts(old, new)
    if not parts:
        return None
    return (f"unbenched: {', '.join(parts)} differ from {previous} and no measured bench record of {version} exists "
            f"(olares-pack bench {app_dir.name} --endpoint URL --record)")


def release_notes(repo: Repo, app_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(notes, gaps) of the published versions: a skipped rehearsal's reason per version, and the
    unbenched versions with their sentence (recorded at release, or worked out for records older
    than that field)."""
    from olares_pack.catalogue import records as releases

    notes: dict[str, str] = {}
    gaps: dict[str, str] = {}
    prev: ReleaseRecord | None = None
    for v in releases.versions(repo, app_dir.name):
        rec = releases.read(repo, app_dir.name, v)
        if rec.rehearsal is not None and rec.rehearsal.skipped:
            notes[v] = f"rehearsal skipped: {rec.rehearsal.skipped}"
        if rec.unbenched is not None:
            gaps[v] = rec.unbenched
        elif prev is not None and records.read(app_dir, v) is None:
            why = unbenched(app_dir, v, prev.version, engine_key(prev.engine, prev.manifest), engine_key(rec.engine, rec.manifest))
            if why:
                gaps[v] = why
        prev = rec
    return notes, gaps
