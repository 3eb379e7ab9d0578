"""What the records say where users choose: the "Performance on <device>" section of the full
description, the delta a release's notes cite, and the delta `diff APP V1 V2` prints. Each says
whether its figures were measured or transcribed.

The section is written into app.yaml at release, so it is baked into that release's packages:
a published package keeps the section it was released with (packages never change); a correction
of the records shows from the next release on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.bench import history, records
from olares_pack.bench.stats import Summary, delta_text

if TYPE_CHECKING:
    from olares_pack.catalogue.repo import Repo

HEADING = "**Performance on "
# the generated section runs from its heading to the end of the text
SECTION = re.compile(r"\n*^\*\*Performance on .*\Z", re.MULTILINE | re.DOTALL)
SHOWN = 6  # the latest versions with figures, per device


def latest(app_dir: Path, version: str) -> tuple[str, Summary, str] | None:
    """(device, summary, kind) of the version's latest shown record with figures on a real model."""
    bf = records.read(app_dir, version)
    for rec in reversed(records.current(bf) if bf else []):
        if rec.synthetic_model is None and (s := rec.summary()) is not None:
            return rec.device, s, rec.provenance_kind()
    return None


def latest_summary(app_dir: Path, version: str) -> tuple[str, Summary] | None:
    """(device, summary) of the version's latest record with figures on a real model."""
    found = latest(app_dir, version)
    return (found[0], found[1]) if found else None


def _as(kind: str) -> str:
    return "" if kind == "measured" else f" ({history.kind_label(kind)})"


def delta_lines(app_dir: Path, old: str, new: str) -> list[str]:
    """The change from old to new, when both have figures on the same device; figures that are not
    measured say what they are, and so does a delta between figures of different kinds."""
    a, b = latest(app_dir, old), latest(app_dir, new)
    if a is None or b is None:
        lacking = [v for v, x in ((old, a), (new, b)) if x is None]
        synthetic = [v for v in lacking if records.read(app_dir, v) is not None]
        missing = " and ".join(v for v in lacking if v not in synthetic)
        out = [f"performance: {v} has figures on a synthetic model only (never the app's speed): not compared"
               for v in synthetic]
        return out + ([f"performance: no bench record of {missing} (olares-pack bench --record)"] if missing else [])
    if a[0] != b[0]:
        return [f"performance: {old} was measured on {a[0]}, {new} on {b[0]}: not compared"]
    speed, acc = delta_text(b[1], a[1])
    basis = "" if a[2] == b[2] == "measured" else (
        f" — a delta between {history.kind_label(a[2])} and {history.kind_label(b[2])} figures" if a[2] != b[2]
        else f" — both {history.kind_label(a[2])}")
    return [f"performance on {b[0]}: {old} {a[1].range_text()} tokens/s{_as(a[2])}, {a[1].acceptance_text()} accepted → "
            f"{new} {b[1].range_text()} tokens/s{_as(b[2])}, {b[1].acceptance_text()} accepted: {speed}, {acc}{basis}"]


def release_note(app_dir: Path, old: str | None, new: str) -> str:
    """A sentence for the release notes (release --changes-from-diff); empty without figures for new."""
    mine = latest(app_dir, new)
    if mine is None:
        return ""
    device, s, kind = mine
    verb = {"measured": "Measured", "transcribed": "Transcribed from the maintainer's notes"}.get(kind, "Measured")
    text = f"{verb} on {device}: {s.range_text()} tokens/s"
    if s.acceptance_text() != "—":
        text += f", {s.acceptance_text()} draft acceptance"
    before = latest(app_dir, old) if old else None
    if before is not None and before[0] == device:
        speed, acc = delta_text(s, before[1])
        label = "" if before[2] == kind else f" ({history.kind_label(before[2])} → {history.kind_label(kind)})"
        text += f"; against {old}: {speed} tokens/s" + (f", {acc} acceptance" if acc != "—" else "") + label
    return text + "."


def release_note_for(repo: Repo, app_dir: Path, version: str | None, bump: str | None) -> str:
    """The figures of the version a release is about to publish, against the latest published one
    (release --changes-from-diff); empty without records."""
    from olares_pack.apps.changelog import next_version
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import MANIFEST_FILE
    from olares_pack.catalogue import records as releases
    from olares_pack.common import versions as appver

    published = releases.versions(repo, app_dir.name)
    current = load_app(app_dir / MANIFEST_FILE).version
    new = version or (next_version(max([current, *published], key=appver.parse), bump) if bump else current)
    return release_note(app_dir, published[-1] if published else None, new)


MARKET_LEGEND = {
    "transcribed": "transcribed: copied from the maintainer's published notes, not measured by olares-pack "
                   "(shown as the notes give it)",
    "measured": "measured: by olares-pack bench on this app's model, mean (min–max) of the runs",
}


def section(app_dir: Path, app: str) -> str:
    """The generated section: per device measured on the real model, the latest versions, each
    row saying whether its figures were measured or transcribed, with a legend under the table."""
    out = []
    kinds: set[str] = set()
    for t in history.tables(app_dir, unshipped=history.unshipped_versions(app_dir)):
        if t.synthetic:
            continue
        rows = [r for r in t.rows if r.shipped and (r.summary is not None or r.stability != "—")][-SHOWN:]
        if not rows:
            continue
        kinds |= {r.kind for r in rows if r.kind}
        out += [f"{HEADING}{t.device}**", "",
                "| version | tokens/s | draft acceptance | vs previous | stability | figures |", "|---|---|---|---|---|---|"]
        out += [f"| {r.version} | {r.summary.range_text() if r.summary else '—'} | "
                f"{r.summary.acceptance_text() if r.summary else '—'} | {r.delta_speed} | {r.stability} | "
                f"{history.figures_label(r)} |" for r in rows]
        out.append("")
    if not out:
        return ""
    out += [f"- {MARKET_LEGEND[k]}" for k in ("measured", "transcribed") if k in kinds]
    if len(kinds) > 1:
        out.append("- a change between transcribed and measured figures is labelled: they were not taken the same way")
    out += ["", f"Figures from the app's bench records (apps/{app}/bench/): one user; each record cites its source."]
    return "\n".join(out)


def with_section(text: str, app_dir: Path, app: str) -> str:
    """text with its generated section replaced by today's (or removed when there is none)."""
    base = SECTION.sub("", text).rstrip("\n")
    sec = section(app_dir, app)
    return f"{base}\n\n{sec}\n" if sec else base + "\n"


def update_manifest_tree(tree: Any, app_dir: Path) -> None:
    """The release hook: app.yaml's full_description (a ruamel round-trip mapping's) gains or
    refreshes the section."""
    from ruamel.yaml.scalarstring import LiteralScalarString

    text = tree.get("full_description")
    if not isinstance(text, str) or not (app_dir / records.FOLDER).is_dir():
        return
    new = with_section(text, app_dir, str(tree.get("name")))
    if new != text:
        tree["full_description"] = LiteralScalarString(new)


def release_lines(repo: Repo, app_dir: Path, versions: tuple[str, ...]) -> list[str]:
    """What the release records of these versions say beside the figures: a skipped rehearsal's
    reason, an unbenched version."""
    from olares_pack.bench import gaps

    notes, missing = gaps.release_notes(repo, app_dir)
    return [f"{v}: {text}" for v in versions for text in (notes.get(v), missing.get(v)) if text]
