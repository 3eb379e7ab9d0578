"""`history APP`: the maintainer's table — version, what changed, tokens/s mean (min–max),
acceptance, delta to the previous version, stability — from the bench records, one table per
device (a synthetic model's device apart)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import semver

from olares_pack.bench import records
from olares_pack.bench.records import Record
from olares_pack.bench.stats import Summary, delta_text


@dataclass
class Row:
    version: str
    changed: str
    summary: Summary | None
    stability: str
    delta_speed: str = "—"
    delta_acceptance: str = "—"
    source: str = ""
    shipped: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "changed": self.changed,
                "summary": self.summary.to_dict() if self.summary else None,
                "tokens_per_s": self.summary.range_text() if self.summary else None,
                "acceptance": self.summary.acceptance_text() if self.summary else None,
                "delta_tokens_per_s": self.delta_speed, "delta_acceptance": self.delta_acceptance,
                "stability": self.stability, "shipped": self.shipped, "source": self.source}


@dataclass
class Table:
    device: str
    synthetic: bool
    rows: list[Row]


def device_label(rec: Record) -> str:
    return f"{rec.device}, synthetic model" if rec.synthetic_model else rec.device


def stability(recs: list[Record]) -> str:
    soaks = [r.soak for r in recs if r.soak is not None]
    if not soaks:
        return "—"
    last = soaks[-1]
    return {"oom": "OOM (out of memory at run time)", "failed": "soak failed", "passed": "soak passed"}[last.outcome]


def tables(app_dir: Path, changed: dict[str, str] | None = None, unshipped: frozenset[str] = frozenset()) -> list[Table]:
    """Per device, in the order devices first appear; per version, its latest record with figures.
    Deltas are to the previous shipped version with figures."""
    changed = changed or {}
    by_device: dict[str, dict[str, list[Record]]] = {}
    for version in records.versions(app_dir):
        bf = records.read(app_dir, version)
        assert bf is not None
        for rec in bf.records:
            by_device.setdefault(device_label(rec), {}).setdefault(version, []).append(rec)
    out = []
    for device, versions in by_device.items():
        rows: list[Row] = []
        prev: Summary | None = None
        for version in sorted(versions, key=semver.Version.parse):
            recs = versions[version]
            with_figures = [r for r in recs if r.summary() is not None]
            latest = with_figures[-1] if with_figures else None
            summary = latest.summary() if latest else None
            row = Row(version, changed.get(version, ""), summary, stability(recs), source=latest.source if latest else "",
                      shipped=version not in unshipped)
            if summary and prev:
                row.delta_speed, row.delta_acceptance = delta_text(summary, prev)
            if row.shipped:
                prev = summary or prev
            rows.append(row)
        out.append(Table(device, any(r.synthetic_model for v in versions.values() for r in v), rows))
    return out


HEADERS = ["version", "what changed", "tokens/s mean (min–max)", "acceptance", "Δ tokens/s", "Δ acceptance", "stability"]


def cells(row: Row) -> list[str]:
    s = row.summary
    return [row.version + ("" if row.shipped else " (not shipped)"), row.changed or "—", s.range_text() if s else "—", s.acceptance_text() if s else "—",
            row.delta_speed, row.delta_acceptance, row.stability]


def to_markdown(app: str, tabs: list[Table]) -> str:
    out = []
    for t in tabs:
        out += [f"### {app}: performance on {t.device}", "", "| " + " | ".join(HEADERS) + " |",
                "|" + "---|" * len(HEADERS)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in t.rows]
        out.append("")
    return "\n".join(out)


def to_json(app: str, tabs: list[Table]) -> dict[str, Any]:
    return {"app": app, "devices": [{"device": t.device, "synthetic_model": t.synthetic,
                                     "versions": [r.to_dict() for r in t.rows]} for t in tabs]}


def unshipped_versions(app_dir: Path) -> frozenset[str]:
    """Versions whose changelog entry says shipped: false (never published)."""
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue.repo import MANIFEST_FILE

    path = app_dir / MANIFEST_FILE
    return frozenset(e.version for e in load_app(path).changelog if not e.shipped) if path.is_file() else frozenset()


def one_line(changes: list[tuple[str, str]], limit: int = 3) -> str:
    """The flag-aware diff in one line: the first few changes, then how many more."""
    texts = [text for _, text in changes]
    more = f" (+{len(texts) - limit} more)" if len(texts) > limit else ""
    return "; ".join(texts[:limit]) + more
