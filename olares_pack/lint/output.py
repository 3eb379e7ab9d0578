"""Findings for a terminal (rich, grouped by chart), as JSON, or as GitHub workflow annotations."""

from __future__ import annotations

import json
from collections import Counter

from olares_pack.common import console
from olares_pack.common.errors import InputError
from olares_pack.lint.findings import ALL_RELEASES, RULES, Finding
from olares_pack.lint.runner import ChartResult

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def summary(findings: list[Finding], charts: int) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    policy = sum(f.severity == "error" and f.kind == "policy" for f in findings)
    return {"charts": charts, "errors": counts["error"], "warnings": counts["warning"], "info": counts["info"],
            "policy_errors": policy}


def rule_label(f: Finding) -> str:
    """The rule id, marked when it is olares-pack's own policy rather than an installer's refusal."""
    return f"{f.rule} (policy)" if f.kind == "policy" else f.rule


def _where(f: Finding) -> str:
    where = f.file + (f":{f.line}" if f.line else "")
    return f"{where} {f.path}".strip() if f.path else where


def _print_plain(results: list[ChartResult]) -> None:
    """The tables' content for a pipe or a file: one line per finding (its message whole, for
    grep), columns aligned per chart, its hint on the line below. Laying out rich tables costs
    more than linting a chart (hundreds of findings: a fifth of a second)."""
    lines: list[str] = []
    for r in results:
        rules = f" (rules of Olares {r.olares})" if r.olares else ""
        if not r.findings:
            lines.append(f"✓ {r.label}: no findings{rules}")
            continue
        rows = [(f.severity, rule_label(f), _where(f), f) for f in r.findings]
        w_rule = max(len(row[1]) for row in rows)
        w_where = max(len(row[2]) for row in rows)
        lines.append(f"{r.label}{rules}")
        for severity, rule, where, f in rows:
            lines.append(f"  {severity:<8}{rule:<{w_rule}}  {where:<{w_where}}  {f.message}".rstrip())
            if f.hint:
                lines.append(f"  {'':<8}hint: {f.hint}")
    if lines:
        console.write("\n".join(lines))


def print_text(results: list[ChartResult]) -> None:
    if not console.is_terminal():
        _print_plain(results)
        _print_summary(results)
        return
    from rich.markup import escape
    from rich.table import Table

    for r in results:
        items = r.findings
        # Everything but our own styling is escaped: chart paths and messages quote user text,
        # which may hold [brackets] that rich would read as markup.
        rules = f"[dim](rules of Olares {escape(r.olares)})[/dim]" if r.olares else ""
        if not items:
            console.out.print(f"[green]✓[/green] {escape(r.label)}: no findings {rules}", markup=True)
            continue
        table = Table(title=f"{escape(r.label)} {rules}", title_justify="left", show_lines=False, expand=False)
        for col in ("severity", "rule", "where", "message"):
            table.add_column(col, overflow="fold")
        for f in items:
            where = _where(f)
            msg = escape(f.message) + (f"\n[dim]hint: {escape(f.hint)}[/dim]" if f.hint else "")
            table.add_row(f"[{STYLE[f.severity]}]{f.severity}[/{STYLE[f.severity]}]", escape(rule_label(f)), escape(where), msg)
        console.out.print(table)
    _print_summary(results)


def _print_summary(results: list[ChartResult]) -> None:
    s = summary([f for r in results for f in r.findings], len(results))
    policy = f" ({s['policy_errors']} of olares-pack policy)" if s["policy_errors"] else ""
    console.write(f"{s['charts']} chart(s): {s['errors']} error(s){policy}, {s['warnings']} warning(s), {s['info']} info",
                  "err")


def print_findings(findings: list[Finding], labels: list[str]) -> None:
    """print_text for findings gathered elsewhere (release, export), one table per label."""
    print_text([ChartResult(label, "", "", [f for f in findings if f.chart == label]) for label in labels])


def print_json(results: list[ChartResult]) -> None:
    findings = [f for r in results for f in r.findings]
    doc = {"summary": summary(findings, len(results)),
           "charts": [{"chart": r.label, "olares": r.olares, "olares_from": r.olares_how} for r in results],
           "findings": [f.to_dict() for f in findings]}
    if console.is_terminal():
        console.out.print_json(json.dumps(doc, ensure_ascii=False))
        return
    # rich's print_json: the same document indented by 2, nothing escaped but what JSON must
    console.write(json.dumps(doc, ensure_ascii=False, indent=2))


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def print_github(results: list[ChartResult]) -> None:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    for f in (f for r in results for f in r.findings):
        props = [f"title={_escape_property(rule_label(f))}"]
        if f.file:
            chart_dir = f.chart.split("@")[0]
            # App manifests and archives are placed on repository files already (lint/place.py).
            path = f.file if chart_dir.endswith((".tgz", ".tar.gz", ".yaml", ".yml")) else f"{chart_dir.rstrip('/')}/{f.file}"
            props.insert(0, f"file={_escape_property(path)}")
        if f.line:
            props.insert(1, f"line={f.line}")
        text = f"{f.chart}: {f.path + ': ' if f.path else ''}{f.message}" + (f" (hint: {f.hint})" if f.hint else "")
        console.write(f"::{level[f.severity]} {','.join(props)}::{_escape(text)}")


PRINTERS = {"text": print_text, "json": print_json, "github": print_github}


def print_rule(rule: str) -> int:
    """`lint --explain RULE`: what it checks, its severity, its releases and its source."""
    info = RULES.get(rule)
    if info is None:
        raise InputError(f"no rule {rule!r} (rules: {', '.join(sorted(RULES))})")
    releases = "every release olares-pack knows" if info.olares == ALL_RELEASES else \
        f"Olares {info.olares} (a warning for earlier releases)"
    for label, value in (("rule", rule), ("severity", info.severity), ("class", info.kind), ("checks", info.summary),
                         ("applies to", releases), ("source", info.source)):
        console.write(f"{label + ':':<12}{value}")
    return 0
