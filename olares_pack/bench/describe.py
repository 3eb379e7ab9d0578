"""What the records say where users choose: the "Performance on <device>" section of the full
description (written at release, so the market page shows it), the measured delta a release's
notes cite, and the delta `diff APP V1 V2` prints."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from olares_pack.bench import history, records
from olares_pack.bench.stats import Summary, delta_text

HEADING = "**Performance on "
# the generated section runs from its heading to the end of the text
SECTION = re.compile(r"\n*^\*\*Performance on .*\Z", re.MULTILINE | re.DOTALL)
SHOWN = 6  # the latest versions with figures, per device


def latest_summary(app_dir: Path, version: str) -> tuple[str, Summary] | None:
    """(device, summary) of the version's latest record with figures on a real model."""
    bf = records.read(app_dir, version)
    for rec in reversed(bf.records if bf else []):
        if rec.synthetic_model is None and (s := rec.summary()) is not None:
            return rec.device, s
    return None


def delta_lines(app_dir: Path, old: str, new: str) -> list[str]:
    """The measured change from old to new, when both have figures on the same device."""
    a, b = latest_summary(app_dir, old), latest_summary(app_dir, new)
    if a is None or b is None:
        missing = " and ".join(v for v, x in ((old, a), (new, b)) if x is None)
        return [f"performance: no bench record of {missing} (olares-pack bench --record)"]
    if a[0] != b[0]:
        return [f"performance: {old} was measured on {a[0]}, {new} on {b[0]}: not compared"]
    speed, acc = delta_text(b[1], a[1])
    return [f"performance on {b[0]}: {old} {a[1].range_text()} tokens/s, {a[1].acceptance_text()} accepted → "
            f"{new} {b[1].range_text()} tokens/s, {b[1].acceptance_text()} accepted: {speed}, {acc}"]


def release_note(app_dir: Path, old: str | None, new: str) -> str:
    """A sentence for the release notes (release --changes-from-diff); empty without figures for new."""
    mine = latest_summary(app_dir, new)
    if mine is None:
        return ""
    device, s = mine
    text = f"Measured on {device}: {s.range_text()} tokens/s"
    if s.acceptance_text() != "—":
        text += f", {s.acceptance_text()} draft acceptance"
    before = latest_summary(app_dir, old) if old else None
    if before is not None and before[0] == device:
        speed, acc = delta_text(s, before[1])
        text += f"; against {old}: {speed} tokens/s" + (f", {acc} acceptance" if acc != "—" else "")
    return text + "."


def section(app_dir: Path, app: str) -> str:
    """The generated section: per device measured on the real model, the latest versions."""
    out = []
    for t in history.tables(app_dir, unshipped=history.unshipped_versions(app_dir)):
        if t.synthetic:
            continue
        rows = [r for r in t.rows if r.shipped and (r.summary is not None or r.stability != "—")][-SHOWN:]
        if not rows:
            continue
        out += [f"{HEADING}{t.device}**", "", "| version | tokens/s mean (min–max) | draft acceptance | vs previous | stability |",
                "|---|---|---|---|---|"]
        out += [f"| {r.version} | {r.summary.range_text() if r.summary else '—'} | "
                f"{r.summary.acceptance_text() if r.summary else '—'} | {r.delta_speed} | {r.stability} |" for r in rows]
        out.append("")
    if not out:
        return ""
    out.append(f"Figures from the app's bench records (apps/{app}/bench/): 2,000 generated tokens a run, "
               "one user; see each record for its method and source.")
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
