"""`history APP`: the maintainer's table — version, what changed, tokens/s, acceptance, delta to
the previous version, stability, and what the figures are (measured, transcribed, synthetic) —
from the bench records, one table per device (a synthetic model's device apart).

Every figure says where it came from: a row's `figures` cell names its kind, a delta between
figures of different kinds says so, and LEGEND explains the kinds in words a market page's reader
follows. A published version whose engine changed and that has no record is a row without figures
(a gap is visible, not skipped)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.bench import records
from olares_pack.bench.records import Record
from olares_pack.bench.stats import Summary, delta_text
from olares_pack.common import versions as appver

NO_DEVICE = "no device (no bench record yet)"
KIND_LABEL = {"measured": "measured", "transcribed": "transcribed", "synthetic": "synthetic model"}
LEGEND = [
    "measured: by `olares-pack bench` on the app's own model; tokens/s is the mean (min–max) of the runs, as the "
    "server reported them.",
    "transcribed: copied from the maintainer's published notes, not measured by olares-pack; shown as the notes "
    "give it (a single figure stays a single figure), each record cites the document and quotes its words.",
    "synthetic model: measured by `olares-pack bench` on a made-up model of the app's shape: how the engine "
    "behaves, never the app's speed.",
    "σ: the sample standard deviation of the runs' tokens/s; beside each Δ tokens/s, whether it is more than noise "
    "(Welch's t-test on the two versions' runs, 95 % confidence interval of the change), or that it cannot tell "
    "when a side is a single published figure or its runs drift or cycle (Welch's test assumes independent runs).",
    "stability: a soak's outcome, and the pattern of the runs in the order they ran: steady, a drift, two states "
    "or a cycle (e.g. 5 fast, 4 slow).",
    "imported: recorded by `bench --from-json` from a result file this olares-pack did not write as it measured; "
    "the record keeps the file's SHA-256. Its runs agree with the server timings the file carries, which a "
    "consistent edit of the file would not break.",
    "A Δ between figures of different kinds (e.g. transcribed → measured) is labelled: they were not taken the "
    "same way, so the change is indicative only.",
]


@dataclass
class Row:
    version: str
    changed: str
    summary: Summary | None
    stability: str
    delta_speed: str = "—"
    verdict: str = ""  # whether delta_speed is more than noise (compare.py)
    delta_acceptance: str = "—"
    source: str = ""
    shipped: bool = True
    kind: str = ""  # measured | transcribed | synthetic; "" without figures
    provenance: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # e.g. "unbenched: ...", "rehearsal skipped: ..."

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "changed": self.changed,
                "summary": self.summary.to_dict() if self.summary else None,
                "tokens_per_s": self.summary.range_text() if self.summary else None,
                "acceptance": self.summary.acceptance_text() if self.summary else None,
                "delta_tokens_per_s": self.delta_speed, "verdict": self.verdict or None,
                "delta_acceptance": self.delta_acceptance,
                "stdev": self.summary.stdev if self.summary else None,
                "stability": self.stability, "shipped": self.shipped, "source": self.source,
                "kind": self.kind or None, "provenance": self.provenance or None, "note": self.note or None}


@dataclass
class Table:
    device: str
    synthetic: bool
    rows: list[Row]


def device_label(rec: Record) -> str:
    return f"{rec.device}, synthetic model" if rec.synthetic_model else rec.device


def provenance(rec: Record) -> dict[str, Any]:
    """What a record says about its figures, for JSON and the notes under a table."""
    kind = rec.provenance_kind()
    out: dict[str, Any] = {"kind": kind, "date": rec.date.isoformat(), "device": rec.device}
    if kind == "transcribed":
        out |= {"document": rec.source, "quote": rec.quote or None}
    else:
        out |= {"tool": rec.tool or "olares-pack bench (version not recorded)", "engine": rec.engine,
                "engine_build": rec.engine_build, "model_file": rec.model_file,
                "started": rec.started.isoformat() if rec.started else None,
                "ended": rec.ended.isoformat() if rec.ended else None}
        if kind == "synthetic":
            out["synthetic_model"] = rec.synthetic_model
        if rec.imported_sha256:
            out["imported_sha256"] = rec.imported_sha256
    return {k: v for k, v in out.items() if v is not None}


def stability(recs: list[Record], latest: Record | None = None) -> str:
    """The latest soak's outcome, the run series' own pattern (stability.py: steady, drifting,
    two states or cycling) of the record shown, else the stability a transcribed record states,
    marked as such."""
    from olares_pack.bench.stability import MIN_RUNS, analyse

    parts = []
    soaks = [r.soak for r in recs if r.soak is not None]
    if soaks:
        parts.append({"oom": "OOM (out of memory at run time)", "failed": "soak failed",
                      "passed": "soak passed"}[soaks[-1].outcome])
    if latest is not None and len(latest.runs) >= MIN_RUNS:
        parts.append(analyse([r.tokens_per_s for r in latest.runs]).text())
    stated = [r.stated_stability for r in recs if r.stated_stability]
    if stated:
        parts.append(f"“{stated[-1]}” (transcribed)")
    return "; ".join(parts) or "—"


def verdict(new: Record, old: Record) -> str:
    """Whether the change between two records' runs is more than noise (compare.py's test)."""
    from olares_pack.bench import compare

    def side(r: Record) -> compare.Side:
        return compare.Side(r.date.isoformat(), r.provenance_kind(), list(r.runs), r.method, r.device,
                            r.engine_build, r.model_file, r.published.tokens_per_s if r.published else None)

    c = compare.compare(side(old), side(new))
    if c.speed is None:
        return "cannot tell: one figure" if not old.runs or not new.runs else "cannot tell: one run"
    w, base = c.speed, statistics.fmean(r.tokens_per_s for r in old.runs)
    ci = f"95 % CI {w.low / base * 100:+.1f} … {w.high / base * 100:+.1f} %"
    if c.dependent:  # a drifting or two-state series: Welch's independence does not hold (see stability)
        return f"{compare.NOT_INDEPENDENT}: {ci} only indicative, Welch's test assumes independent runs"
    return f"{c.verdict}, {ci}"


def figures_label(row: Row) -> str:
    """The kind of a row's figures, and `imported (sha256 …)` when they came in a file."""
    sha = row.provenance.get("imported_sha256")
    return kind_label(row.kind) + (f", imported (sha256 {sha[:12]}…)" if sha else "")


def kind_label(kind: str) -> str:
    return KIND_LABEL.get(kind, "—")


def _labelled(delta: str, old: str, new: str) -> str:
    if old == new == "measured" or delta == "—":
        return delta
    return f"{delta} (both {kind_label(new)})" if old == new else f"{delta} ({kind_label(old)} → {kind_label(new)})"


def tables(app_dir: Path, changed: dict[str, str] | None = None, unshipped: frozenset[str] = frozenset(),
           notes: dict[str, str] | None = None, gaps: dict[str, str] | None = None) -> list[Table]:
    """Per device, in the order devices first appear; per version, its latest record with figures
    (records a later one supersedes left out). Deltas are to the previous shipped version with
    figures. `gaps`: versions without records shown as rows without figures (with their note) in
    the tables of real models; `notes`: a note per version (e.g. a skipped rehearsal)."""
    changed, notes, gaps = changed or {}, notes or {}, gaps or {}
    by_device: dict[str, dict[str, list[Record]]] = {}
    for version in records.versions(app_dir):
        bf = records.read(app_dir, version)
        assert bf is not None
        for rec in records.current(bf):
            by_device.setdefault(device_label(rec), {}).setdefault(version, []).append(rec)
    if not by_device and gaps:
        by_device[NO_DEVICE] = {}
    real = [d for d, vs in by_device.items() if not any(r.synthetic_model for v in vs.values() for r in v)]
    out = []
    for device, versions in by_device.items():
        shown = dict(versions)
        if device in real or not real:
            for v in gaps:
                shown.setdefault(v, [])
        rows: list[Row] = []
        prev: tuple[Summary, str, Record] | None = None
        for version in sorted(shown, key=appver.parse):
            recs = shown[version]
            with_figures = [r for r in recs if r.summary() is not None]
            latest = with_figures[-1] if with_figures else None
            summary = latest.summary() if latest else None
            kind = latest.provenance_kind() if latest else ""
            note = "; ".join(n for n in (gaps.get(version, "") if not recs else "", notes.get(version, "")) if n)
            row = Row(version, changed.get(version, ""), summary, stability(recs, latest), source=latest.source if latest else "",
                      shipped=version not in unshipped, kind=kind, provenance=provenance(latest) if latest else {}, note=note)
            if summary and prev:
                speed, acc = delta_text(summary, prev[0])
                row.delta_speed, row.delta_acceptance = _labelled(speed, prev[1], kind), _labelled(acc, prev[1], kind)
                assert latest is not None
                row.verdict = verdict(latest, prev[2])
            if row.shipped and summary and latest is not None:
                prev = (summary, kind, latest)
            rows.append(row)
        out.append(Table(device, any(r.synthetic_model for v in versions.values() for r in v), rows))
    return out


HEADERS = ["version", "what changed", "tokens/s", "σ", "acceptance", "Δ tokens/s", "Δ acceptance", "stability",
           "figures"]


def cells(row: Row) -> list[str]:
    s = row.summary
    stability = row.stability if not row.note else f"{row.stability} ({row.note})" if row.stability != "—" else row.note
    sigma = f"{s.stdev:.2f}" if s and s.stdev is not None else "—"
    delta = f"{row.delta_speed} ({row.verdict})" if row.verdict else row.delta_speed
    return [row.version + ("" if row.shipped else " (not shipped)"), row.changed or "—", s.range_text() if s else "—",
            sigma, s.acceptance_text() if s else "—", delta, row.delta_acceptance, stability, figures_label(row)]


def sources(tabs: list[Table]) -> list[str]:
    """One line per transcribed row: the version, the document and its words."""
    seen: dict[str, str] = {}
    for t in tabs:
        for r in t.rows:
            if r.kind == "transcribed" and r.version not in seen:
                quote = r.provenance.get("quote")
                seen[r.version] = f"{r.version}: {r.source}" + (f" — “{quote}”" if quote else "")
    return list(seen.values())


def to_markdown(app: str, tabs: list[Table]) -> str:
    out = []
    for t in tabs:
        out += [f"### {app}: performance on {t.device}", "", "| " + " | ".join(HEADERS) + " |",
                "|" + "---|" * len(HEADERS)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in t.rows]
        out.append("")
    out += [f"- {line}" for line in LEGEND]
    if src := sources(tabs):
        out += ["", "Transcribed figures come from:", ""] + [f"- {line}" for line in src]
    return "\n".join(out) + "\n"


def to_json(app: str, tabs: list[Table]) -> dict[str, Any]:
    return {"app": app, "legend": LEGEND,
            "devices": [{"device": t.device, "synthetic_model": t.synthetic, "versions": [r.to_dict() for r in t.rows]}
                        for t in tabs]}


def unshipped_versions(app_dir: Path) -> frozenset[str]:
    """Versions whose changelog entry says shipped: false (never published)."""
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import MANIFEST_FILE

    path = app_dir / MANIFEST_FILE
    return frozenset(e.version for e in load_app(path).changelog if not e.shipped) if path.is_file() else frozenset()


def one_line(changes: list[tuple[str, str]], limit: int = 3) -> str:
    """The flag-aware diff in one line: the first few changes, then how many more."""
    texts = [text for _, text in changes]
    more = f" (+{len(texts) - limit} more)" if len(texts) > limit else ""
    return "; ".join(texts[:limit]) + more
