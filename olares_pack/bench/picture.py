"""The history as a picture: tokens/s per version as bars (the min–max range as a whisker),
draft acceptance as a line on its own 0–100 % scale, an OOM record marked. What the figures are
shows in the bar itself: measured bars are solid, transcribed ones hatched and labelled
"transcribed", a synthetic model's grey; the legend says so. One picture per device. SVG written
by hand: no plotting library, no clock, no font metrics — the same records give the same bytes."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from olares_pack.bench.history import Table

W, H = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 60, 60, 48, 84
BAR, LINE, OOM, GRID, TEXT = "#4c78a8", "#f58518", "#d62728", "#dddddd", "#333333"
SYNTHETIC = "#9e9e9e"
FILL = {"measured": BAR, "transcribed": "url(#transcribed)", "synthetic": SYNTHETIC}
HATCH = ('<defs><pattern id="transcribed" width="6" height="6" patternUnits="userSpaceOnUse" '
         f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
         f'<line x1="0" y1="0" x2="0" y2="6" stroke="{BAR}" stroke-width="3"/></pattern></defs>')


def files(path: Path, tabs: list[Table]) -> list[tuple[Path, Table]]:
    """Where each device's picture goes: PATH for one device; PATH's stem, the device, .svg for several."""
    if len(tabs) == 1:
        return [(path, tabs[0])]
    out = []
    for t in tabs:
        slug = re.sub(r"[^a-z0-9]+", "-", t.device.lower()).strip("-") or "device"
        out.append((path.with_name(f"{path.stem}.{slug}{path.suffix or '.svg'}"), t))
    return out


def _n(x: float) -> str:
    """Coordinates with two decimals at most, the same on every platform."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def svg(app: str, table: Table) -> str:
    rows = table.rows
    top = max([r.summary.max or r.summary.mean for r in rows if r.summary] or [1.0])
    scale = _nice(top)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    slot = plot_w / max(len(rows), 1)

    def y_tps(v: float) -> float:
        return TOP + plot_h * (1 - v / scale)

    def y_acc(v: float) -> float:
        return TOP + plot_h * (1 - v)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="#ffffff"/>', HATCH,
           f'<text x="{LEFT}" y="20" font-size="14" fill="{TEXT}">{escape(app)}: tokens/s and draft acceptance per version</text>',
           f'<text x="{LEFT}" y="36" fill="{TEXT}">{escape(table.device)}</text>']
    for k in range(5):
        v = scale * k / 4
        y = y_tps(v)
        out.append(f'<line x1="{LEFT}" y1="{_n(y)}" x2="{W - RIGHT}" y2="{_n(y)}" stroke="{GRID}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{_n(y + 4)}" text-anchor="end" fill="{BAR}">{_n(v)}</text>')
        out.append(f'<text x="{W - RIGHT + 6}" y="{_n(y + 4)}" fill="{LINE}">{k * 25} %</text>')
    out.append(f'<text x="14" y="{_n(TOP + plot_h / 2)}" fill="{BAR}" transform="rotate(-90 14 {_n(TOP + plot_h / 2)})" '
               'text-anchor="middle">tokens/s</text>')
    points = []
    for i, r in enumerate(rows):
        cx = LEFT + slot * (i + 0.5)
        out.append(f'<text x="{_n(cx)}" y="{H - BOTTOM + 16}" text-anchor="middle" fill="{TEXT}">{escape(r.version)}</text>')
        s = r.summary
        if s is not None:
            bw = min(slot * 0.6, 48)
            out.append(f'<rect x="{_n(cx - bw / 2)}" y="{_n(y_tps(s.mean))}" width="{_n(bw)}" '
                       f'height="{_n(TOP + plot_h - y_tps(s.mean))}" fill="{FILL.get(r.kind, BAR)}" stroke="{BAR}">'
                       f'<title>{escape(r.version)}: {escape(s.range_text())} tokens/s ({escape(r.kind)})</title></rect>')
            if r.kind == "transcribed":
                out.append(f'<text x="{_n(cx)}" y="{H - BOTTOM + 44}" text-anchor="middle" fill="{TEXT}" '
                           'font-size="10">transcribed</text>')
            if s.min is not None and s.max is not None:
                out.append(f'<line x1="{_n(cx)}" y1="{_n(y_tps(s.min))}" x2="{_n(cx)}" y2="{_n(y_tps(s.max))}" '
                           f'stroke="{TEXT}" stroke-width="1.5"/>')
            shown = f"{s.mean:.2f}" if not s.stated else s.range_text().split(" ")[0]
            out.append(f'<text x="{_n(cx)}" y="{_n(y_tps(s.max or s.mean) - 6)}" text-anchor="middle" '
                       f'fill="{TEXT}">{escape(shown)}</text>')
            acc = s.acceptance
            if acc is None and s.acceptance_min is not None and s.acceptance_max is not None:
                acc = (s.acceptance_min + s.acceptance_max) / 2
            if acc is not None:
                points.append((cx, y_acc(acc)))
        elif r.note:
            out.append(f'<text x="{_n(cx)}" y="{_n(TOP + plot_h - 6)}" text-anchor="middle" fill="{OOM}" '
                       f'font-size="10">no figures<title>{escape(r.note)}</title></text>')
        if r.stability.startswith("OOM") or r.stability == "soak failed":
            label = "OOM" if r.stability.startswith("OOM") else "failed"
            out.append(f'<text x="{_n(cx)}" y="{H - BOTTOM + 32}" text-anchor="middle" fill="{OOM}" '
                       f'font-weight="bold">{label}</text>')
    if points:
        out.append(f'<polyline points="{" ".join(f"{_n(x)},{_n(y)}" for x, y in points)}" fill="none" '
                   f'stroke="{LINE}" stroke-width="2"/>')
        out += [f'<circle cx="{_n(x)}" cy="{_n(y)}" r="4" fill="{LINE}"/>' for x, y in points]
    ly = H - 4
    out.append(f'<rect x="{LEFT}" y="{ly - 10}" width="12" height="12" fill="{BAR}"/>'
               f'<text x="{LEFT + 16}" y="{ly}" fill="{TEXT}" font-size="11">measured tokens/s (whisker: min–max)</text>')
    kinds = {r.kind for r in rows}
    if "transcribed" in kinds:
        out.append(f'<rect x="{LEFT + 240}" y="{ly - 10}" width="12" height="12" fill="url(#transcribed)" stroke="{BAR}"/>'
                   f'<text x="{LEFT + 256}" y="{ly}" fill="{TEXT}" font-size="11">transcribed from published notes</text>')
    if "synthetic" in kinds:
        out.append(f'<rect x="{LEFT + 240}" y="{ly - 10}" width="12" height="12" fill="{SYNTHETIC}"/>'
                   f'<text x="{LEFT + 256}" y="{ly}" fill="{TEXT}" font-size="11">synthetic model: not the app\'s speed</text>')
    out.append(f'<circle cx="{LEFT + 504}" cy="{ly - 4}" r="4" fill="{LINE}"/>'
               f'<text x="{LEFT + 512}" y="{ly}" fill="{TEXT}" font-size="11">draft acceptance (right scale)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _nice(top: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above top × 1.1."""
    target = top * 1.1
    k = 1.0
    while k * 10 < target:
        k *= 10
    for m in (1, 2, 2.5, 5, 10):
        if k * m >= target:
            return k * m
    return k * 10
