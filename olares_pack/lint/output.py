"""Findings for a terminal (rich, grouped by chart), as JSON, or as GitHub workflow annotations."""

from __future__ import annotations

import json
from collections import Counter
from itertools import groupby

from rich.markup import escape
from rich.table import Table

from .. import console
from .findings import Finding

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def summary(findings: list[Finding], charts: int) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {"charts": charts, "errors": counts["error"], "warnings": counts["warning"], "info": counts["info"]}


def print_text(findings: list[Finding], labels: list[str]) -> None:
    by_chart = {k: list(g) for k, g in groupby(findings, key=lambda f: f.chart)}
    for label in labels:
        items = by_chart.get(label, [])
        # Everything but our own styling is escaped: chart paths and messages quote user text,
        # which may hold [brackets] that rich would read as markup.
        if not items:
            console.out.print(f"[green]✓[/green] {escape(label)}: no findings", markup=True)
            continue
        table = Table(title=escape(label), title_justify="left", show_lines=False, expand=False)
        for col in ("severity", "rule", "where", "message"):
            table.add_column(col, overflow="fold")
        for f in items:
            where = f.file + (f":{f.line}" if f.line else "")
            if f.path:
                where = f"{where} {f.path}".strip()
            msg = escape(f.message) + (f"\n[dim]hint: {escape(f.hint)}[/dim]" if f.hint else "")
            table.add_row(f"[{STYLE[f.severity]}]{f.severity}[/{STYLE[f.severity]}]", escape(f.rule), escape(where), msg)
        console.out.print(table)
    s = summary(findings, len(labels))
    console.err.print(f"{s['charts']} chart(s): {s['errors']} error(s), {s['warnings']} warning(s), {s['info']} info", markup=False)


def print_json(findings: list[Finding], labels: list[str]) -> None:
    doc = {"summary": summary(findings, len(labels)), "findings": [f.to_dict() for f in findings]}
    console.out.print_json(json.dumps(doc, ensure_ascii=False))


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def print_github(findings: list[Finding], labels: list[str]) -> None:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    for f in findings:
        props = [f"title={_escape_property(f.rule)}"]
        if f.file:
            chart_dir = f.chart.split("@")[0]
            path = f.file if chart_dir.endswith((".tgz", ".yaml")) else f"{chart_dir.rstrip('/')}/{f.file}"
            props.insert(0, f"file={_escape_property(path)}")
        if f.line:
            props.insert(1, f"line={f.line}")
        text = f"{f.chart}: {f.path + ': ' if f.path else ''}{f.message}" + (f" (hint: {f.hint})" if f.hint else "")
        console.out.print(f"::{level[f.severity]} {','.join(props)}::{_escape(text)}", markup=False, highlight=False, soft_wrap=True)


PRINTERS = {"text": print_text, "json": print_json, "github": print_github}
