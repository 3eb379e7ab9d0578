"""`import`: hand-written charts into apps."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from pathlib import Path

import click

from olares_pack import olares
from olares_pack.catalogue.repo import Repo
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option, lock_timeout_option
from olares_pack.cli.report import print_import_table
from olares_pack.common.errors import ExitCode


@cli.command("import")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@apps_dir_option
@click.option("--date", "date", type=click.DateTime(["%Y-%m-%d"]), metavar="YYYY-MM-DD",
              help="Publication date of versions whose source names none (default: today).")
@click.option("--os-version", "os_versions", multiple=True, metavar="VERSION",
              help="OS versions to read a live source's catalogue for "
              f"(default: {' and '.join(olares.LIVE_SOURCE_OS_VERSIONS)}).")
@click.option("--strict", is_flag=True, help="Also fail (exit 1) on notes: anything mapped, changed or not kept "
              "(without it, only a chart that was not imported fails).")
@click.option("--upgrade", is_flag=True, help="Convert legacy charts (manifest 0.10.0/0.11.0, apiVersion v1 or v2, "
              "sub-charts flattened) to 0.12.0/v3 for Olares 1.12.6+, as the next version to release; the imported "
              "versions stay published for 1.12.3-1.12.5. The report says what that took, or what blocks it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a summary table; json: the same for scripts.")
@click.option("--structured", is_flag=True, help="Give charts whose engine olares-pack models (llama.cpp, vLLM) "
              "its typed app manifest, as the next version to release; the report lists what renders differently.")
@click.option("--accept", "accept", multiple=True, metavar="KIND",
              help="With --structured: a kind of difference between the chart and its typed render to take on "
              "purpose (e.g. manifest.form); the typed app records what was accepted. Repeatable. Kinds: "
              "docs/how-to/import.md.")
@click.option("--run", "live", is_flag=True,
              help="With --structured: run each typed app on a node here as `rehearse --run` does (stand-in images "
              "and model), both ways: the original chart at its own version and the typed render, then the upgrade "
              "from the original; both must answer the same served model name on the same entrance port. An app "
              "no stand-in runs (an engine fork, vLLM, another server) says so and which check stood instead. A "
              "failure or a mismatch fails the import (exit 1) with the engine's own log lines; nothing is written.")
@click.option("--rename", is_flag=True, help="Give charts whose name the target line refuses the proposed valid name "
              "(a new app, to be released: its published packages name the old one). With --upgrade the target is "
              "1.12.6+, which takes at most 30 characters; 1.12.3-1.12.5 charts keep longer names without it.")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; write nothing.")
@lock_timeout_option
def import_cmd(sources: tuple[str, ...], apps_dir: Path, date: dt.datetime | None, os_versions: tuple[str, ...],
               strict: bool, upgrade: bool, fmt: str, structured: bool, accept: tuple[str, ...], live: bool, rename: bool,
               dry_run: bool, lock_timeout: float) -> int:
    """Import hand-written charts: chart folders, .tgz packages, folders of them, or the base URL
    of a live market source. Each app becomes apps/<name>/app.yaml (the chart as written) and one
    release record per version whose package is the source's own bytes."""
    from rich.progress import Progress

    from olares_pack.common import console
    from olares_pack.equivalence import KINDS as REPORT_KINDS
    from olares_pack.importing import importer
    from olares_pack.proof.charts import KINDS as PROOF_KINDS
    from olares_pack.proof.charts import NEVER_ACCEPTED

    KINDS = {**REPORT_KINDS, **PROOF_KINDS}  # noqa: N806 - the kinds --accept names
    if bad := [k for k in accept if k not in KINDS or k in NEVER_ACCEPTED]:
        raise click.UsageError(f"--accept {', '.join(bad)}: not a kind of difference (expected one of {', '.join(sorted(KINDS))})")
    if accept and not structured:
        raise click.UsageError("--accept takes differences of the typed render: use it with --structured")
    if live and not structured:
        raise click.UsageError("--run runs the typed render beside the original: use it with --structured")
    repo = Repo.of_apps(apps_dir)
    found = []
    said: list[str] = []  # what a live source lists, names and serves
    with Progress(console=console.err, transient=True) as progress:
        for source in sources:
            found += importer.find(source, os_versions=os_versions or olares.LIVE_SOURCE_OS_VERSIONS, progress=progress, report=said)
    # A dry run writes nothing, not even the lock file: without olares-pack state there is no
    # other olares-pack run to keep out.
    held = repo.open(write=not dry_run, timeout=lock_timeout, purpose="import") \
        if not dry_run or repo.state_dir.exists() else contextlib.nullcontext(repo)
    with held:
        plan = importer.plan(repo, found, (date or dt.datetime.now()).date(), upgrade=upgrade, rename=rename,
                             structured=structured, accept=accept)
        runs = _run_on_node(plan) if live else None
        failed = (live and runs is None) or any(not r.ok for r in (runs or {}).values())
        if not dry_run and not failed:
            plan.write(repo)
    rows = plan.rows()
    if fmt == "json":
        console.out.print_json(json.dumps({"charts": rows, "apps": plan.apps, "sources": said,
                                           **({"node": {k: r.to_dict() for k, r in runs.items()}} if runs is not None else {})},
                                          ensure_ascii=False))
    else:
        print_import_table(rows)
        for name, r in sorted((runs or {}).items()):
            console.out.print(f"{name} on the node:", markup=False)
            for line in r.lines():
                console.out.print(f"  {line}", markup=False)
    if failed:
        console.error("--run: " + ("no node here to run on" if runs is None else
                                   "an app did not answer alike both ways on the node") + "; nothing written")
        return ExitCode.FINDINGS
    for line in said:
        console.info(line)
    ok, noted, refused = plan.counts()
    console.info(f"{len(plan.results)} chart(s): {ok} imported ({noted} with notes), {refused} not imported; "
                 f"{len(plan.apps)} app(s) {'would be ' if dry_run else ''}written under {repo.rel(repo.apps_dir)}")
    if refused or (strict and noted):
        return ExitCode.FINDINGS
    return ExitCode.OK


def _run_on_node(plan) -> dict | None:  # noqa: ANN001 - an importer.Plan; NodeRun by app
    """Every typed app of the plan run both ways on a node here (importing/onnode.py); None when no
    node can run here (the reason said). Each app's row gets a note of what ran."""
    from olares_pack.cluster import node as nodemod
    from olares_pack.common import console
    from olares_pack.importing import onnode

    def node_of():  # noqa: ANN202 - started only when an app can run on it
        if (why := nodemod.unavailable()) is not None:
            raise nodemod.NodeUnavailable(why)
        return nodemod.running(console.info)

    try:
        runs = onnode.plan_runs(plan, node_of, say=console.info)
    except nodemod.NodeUnavailable as exc:
        console.error(f"--run: no node here to run on: {exc}")
        return None
    for name, r in runs.items():
        newest = plan.typed[name][0]
        newest.notes.append(onnode.note(r))
        newest.structured = {**(newest.structured or {}), "node": {"ran": r.ran, "ok": r.ok, "not_run": r.not_run or None, "why_not": r.why_not or None,
                                                                    "check": r.check or None, "failures": r.failures}}
    return runs
