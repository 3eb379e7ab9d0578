"""What commands print for people: tables and lines on stdout, warnings on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App
    from olares_pack.apps.new_llamacpp import NewPlan
    from olares_pack.diff import DiffResult
    from olares_pack.vram.estimate import Estimate


def show_warnings(app: App) -> None:
    from olares_pack.common import console
    for w in app.warnings():
        console.warn(w)


def print_diff_table(result: DiffResult, show_all: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from olares_pack.common import console
    table = Table(title=f"{result.a} → {result.b}", title_justify="left")
    for col in ("section", "what", "old", "new", "note"):
        table.add_column(col, overflow="fold")
    style = {"added": "green", "removed": "red", "changed": "yellow", "unchanged": "dim"}
    for c in result.changes + (result.unchanged if show_all else []):
        s = style[c.kind]
        table.add_row(escape(c.section), f"[{s}]{escape(c.key)}[/{s}]", "—" if c.old is None else escape(str(c.old)),
                      "—" if c.new is None else escape(str(c.new)), escape(c.note))
    if result.equal and not show_all:
        console.out.print(f"{result.a} and {result.b}: no difference", markup=False)
    else:
        console.out.print(table)


def largest_ctx_lines(lc: dict[str, int]) -> list[str]:
    """`vram --largest-ctx` in words: the largest context and its verdict, one line each."""
    fits, tight, trained = lc["fits"], lc["tight"], lc["trained"]

    def ctx(n: int) -> str:
        return f"{n} (the model's trained context: none larger exists)" if n == trained else str(n)

    if not tight:
        return ["no context fits on this device, not even 1024 tokens (a smaller quant, or a larger GPU)"]
    lines = [f"largest context that fits: {ctx(fits)}" if fits else "no context fits with a margin on this device"]
    if tight > fits:
        lines.append(f"largest context that is tight: {ctx(tight)} (it fits by less than the estimate's uncertainty)")
    return lines


def print_ladder(p: NewPlan) -> None:
    from rich.table import Table

    from olares_pack.common import console
    table = Table(title=f"{p.repo}@{p.commit[:12]} at --ctx-size {p.server.ctx_size} on {p.device.name}",
                  title_justify="left")
    for col, justify in (("quant", "left"), ("file", "left"), ("GiB", "right"), ("total MiB", "right"),
                         ("headroom MiB", "right"), ("verdict", "left"), ("largest ctx that fits", "right"), ("MTP", "left")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    picked = p.picked["file"] if p.picked else None
    for r in p.rows:
        color = {"fits": "green", "tight": "yellow", "does not fit": "red"}[r["verdict"]]
        table.add_row(r["quant"] + (" ←" if r["file"] == picked else ""), r["file"] + (f" (+{r['parts'] - 1} parts)" if r["parts"] > 1 else ""),
                      f"{(r['size'] or 0) / 2**30:.2f}", f"{r['total_mib']:,}", f"{r['headroom_mib']:,}",
                      f"[{color}]{r['verdict']}[/{color}]", str(r["largest_ctx"]), "yes" if r["mtp"] else "no")
    console.out.print(table)


def print_estimate(title: str, e: Estimate, verdict: str | None = None, reasons: tuple[str, ...] = ()) -> None:
    """The estimate term by term; `verdict` and `reasons`: the gates' (vram/verdict.py), when given."""
    from rich.markup import escape
    from rich.table import Table

    from olares_pack.common import console
    table = Table(title=f"{title} at --ctx-size {e.settings.ctx} on {e.device.name}", title_justify="left")
    for col, justify in (("term", "left"), ("MiB", "right"), ("when", "left"), ("how", "left")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for t in e.terms:
        table.add_row(t.name, f"{t.mib:,.0f}", t.when, escape(t.formula))
    table.add_row("total", f"{e.total_mib:,.0f}", "", f"boot {e.boot_mib:,.0f} MiB; full context {e.total_mib:,.0f} MiB")
    table.add_row("device", f"{e.device.usable_mib:,}", "", f"{e.device.total_mib} MiB − {e.device.reserve_mib} MiB desktop/driver reserve")
    verdict = verdict or e.verdict
    color = {"fits": "green", "tight": "yellow", "does not fit": "red"}[verdict]
    table.add_row("headroom", f"{e.headroom_mib:,.0f}", "", f"[{color}]{verdict}[/{color}]")
    table.add_row("uncertainty", f"±{e.uncertainty_mib:,.0f}", "",
                  f"the fit's worst residual {e.uncertainty_pct:g} % (measurements/vram) + {e.extra_uncertainty_mib:,.0f} MiB for a "
                  f"GPU that was not measured + {e.runtime_band_mib:,.0f} MiB, the largest growth a measured run showed after "
                  "its first request" + (f" + {e.pool_band_mib:,.0f} MiB, the worst residuals of the pre-#23907 build's fit"
                                         if e.pool_band_mib else "") + "; 'tight' when the headroom is smaller")
    console.out.print(table)
    for r in reasons:
        console.out.print(f"  verdict {verdict}: {r}", markup=False)
    for n in e.notes:
        console.out.print(f"  note: {n}", markup=False)


def print_import_table(rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from olares_pack.common import console

    table = Table(title="import", title_justify="left")
    for col in ("app", "version", "from", "engine", "status", "notes"):
        table.add_column(col, overflow="fold")
    for row in rows:
        # escaped: notes quote patterns such as ^[a-z0-9]{1,30}$, which rich would read as markup
        table.add_row(*(escape(str(row[k])) for k in ("app", "version", "from", "engine", "status")),
                      escape("\n".join(row["notes"])))
    console.out.print(table)
