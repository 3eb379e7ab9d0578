"""`check`'s report: a summary table for a terminal, JSON for scripts, and GitHub workflow
annotations (`::error file=…,line=…,title=<rule>::…`) that GitHub shows on the pull request's diff
at the line each finding comes from."""

from __future__ import annotations

import json

from rich.markup import escape
from rich.table import Table

from olares_pack.ci.findings import Report
from olares_pack.common import console

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
STYLE = {"passed": "green", "failed": "bold red", "skipped": "yellow"}


def _data(text: str) -> str:
    # workflow command escaping (actions/toolkit packages/core/src/command.ts escapeData)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    # escapeProperty: ':' and ',' separate properties
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: object) -> str:
    """One workflow command for one finding (a CheckFinding)."""
    props = []
    if f.file:  # type: ignore[attr-defined]
        props.append(f"file={_property(f.file)}")  # type: ignore[attr-defined]
        if f.line:  # type: ignore[attr-defined]
            props.append(f"line={f.line}")  # type: ignore[attr-defined]
    props.append(f"title={_property(f.rule)}")  # type: ignore[attr-defined]
    return f"::{LEVEL[f.severity]} {','.join(props)}::{_data(f.message)}"  # type: ignore[attr-defined]


def print_github(report: Report) -> None:
    for f in report.findings:
        console.out.print(annotation(f), markup=False, highlight=False, soft_wrap=True)
    _summary_lines(report)


def print_json(report: Report) -> None:
    doc = {"ok": not report.failed, "changed_since": report.changed_since, "changed_apps": report.changed_apps,
           "stages": [s.to_dict() for s in report.stages], "findings": [f.to_dict() for f in report.findings]}
    console.out.print(json.dumps(doc, indent=2, ensure_ascii=False), markup=False, highlight=False)


def print_text(report: Report) -> None:
    table = Table("stage", "result", "errors", "warnings", "checked", title="olares-pack check", title_justify="left")
    for s in report.stages:
        table.add_row(s.name, f"[{STYLE[s.status]}]{s.status}[/{STYLE[s.status]}]", str(s.errors), str(s.warnings),
                      escape(s.skipped or s.checked))
    console.out.print(table)
    shown = report.findings
    if shown:
        found = Table("severity", "rule", "where", "message", title="findings", title_justify="left")
        for f in shown:
            where = f"{f.file}:{f.line}" if f.line else f.file
            found.add_row(f.severity, escape(f.rule), escape(where), escape(f.message))
        console.out.print(found)


def _summary_lines(report: Report) -> None:
    """For the job's log (stderr): each stage's result in one line."""
    for s in report.stages:
        console.info(f"{s.name}: {s.status}: {s.skipped or s.checked} ({s.errors} error(s), {s.warnings} warning(s))")


PRINTERS = {"text": print_text, "json": print_json, "github": print_github}
