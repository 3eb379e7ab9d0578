"""`rehearse`: install and upgrade published versions on a real Kubernetes API server."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import click

from olares_pack import olares
from olares_pack.cli.args import app_folder
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option
from olares_pack.common.errors import ExitCode, InputError


@cli.command("rehearse")
@click.argument("app_ref", metavar="APP")
@click.option("--version", "version", metavar="V", help="The version to install and upgrade to (default: the newest published).")
@click.option("--from", "froms", multiple=True, metavar="V0",
              help="Upgrade from this published version (default: the previous one on each OS line). Repeatable.")
@click.option("--from-all", is_flag=True, help="Upgrade from every older published version, each from a clean slate.")
@click.option("--target", "targets", multiple=True, type=click.Choice(sorted(olares.TARGETS)),
              help="Only this OS line. Repeatable.")
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Rehearse on this cluster (a dev cluster, a device you administer): users, namespaces and release "
              "names of this run only, removed afterwards, every workload created held (no pod starts beside the "
              "installed app); default: a kube-apiserver started here on loopback.")
@click.option("--reuse-values", is_flag=True,
              help="Upgrade with Helm's ReuseValues, as app-service did before ResetThenReuseValues (the old chart's "
              "defaults are kept: a value the new chart adds is missing).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a table per step; json: the whole report as data.")
@click.option("--run", "live", is_flag=True,
              help="Run it on a node started here (kubelet, containerd, stand-in images and model): each line's install "
              "for each user form must download, start the engine and answer /v1/models and a chat completion through "
              "the entrance's Service; then upgrade from every older published version (or --from) without a second "
              "download, and uninstall. Needs root; `make node` builds the node once.")
@apps_dir_option
def rehearse_cmd(app_ref: str, version: str | None, froms: tuple[str, ...], from_all: bool, targets: tuple[str, ...],
                 kubeconfig: Path | None, reuse_values: bool, fmt: str, live: bool, apps_dir: Path) -> int:
    """Install APP's published VERSION as app-service does on each OS line (its release names,
    namespaces and injected values; the administrator and a second user), and upgrade to it from
    the previous published version (or --from). Reports per step what the server refused and why,
    and after each upgrade the objects created, changed and removed, a renamed workload, a moved
    persistent path. Exit 1 when a step fails or a policy finding is an error."""
    from olares_pack.catalogue import checks, records
    from olares_pack.catalogue.repo import Repo
    from olares_pack.rehearse import flow

    if from_all and froms:
        raise click.UsageError("give --from V0 (these versions) or --from-all (every older one), not both")
    repo = Repo.of_apps(apps_dir)
    name = app_folder(app_ref, apps_dir).name
    with repo.open(write=False):
        published = records.versions(repo, name)
        if not published:
            raise InputError(f"{name}: no published version to rehearse")
        version = version or published[-1]
        for v in (version, *froms):
            if v not in published:
                raise InputError(f"{name} {v} is not published (published: {', '.join(published)})")
        recs = {v: records.read(repo, name, v) for v in published}
        lines: dict[str, list[str]] = {}
        for v, rec in recs.items():
            for t in rec.charts:
                if not targets or t in targets:
                    lines.setdefault(t, []).append(v)
        charts = {(v, t): checks.published_bytes(repo, recs[v], t)[0] for t, vs in lines.items() for v in vs}
    chosen = [v for v in published if v != version and _older(v, version)] if from_all else (list(froms) or None)
    if live:
        if kubeconfig is not None:
            raise click.UsageError("--run starts its own node; it does not run on --kubeconfig")
        return _run_live(name, version, lines, charts, list(froms) or None, fmt)
    steps = _run(name, version, lines, charts, chosen, kubeconfig, reuse_values)
    _print(steps, fmt)
    return ExitCode.FINDINGS if flow.failed(steps) or any(
        f.severity == "error" and f.policy for s in steps for f in s.findings) else ExitCode.OK


def _run_live(name: str, version: str, lines: dict[str, list[str]], charts: dict[tuple[str, str], bytes],
              froms: list[str] | None, fmt: str) -> int:
    from olares_pack.cluster import node
    from olares_pack.common import console
    from olares_pack.rehearse import live

    try:
        with node.running(console.info) as n:
            report = live.run(n, name, version, lines, lambda v, t: charts.get((v, t)), froms, console.info)
    except node.NodeUnavailable as exc:
        console.error(f"no node here to run on: {exc}")
        return ExitCode.FINDINGS
    print_live(report, fmt)
    return ExitCode.OK if report.ok else ExitCode.FINDINGS


def print_live(report, fmt: str) -> None:  # noqa: ANN001 - a live.LiveReport
    from rich.table import Table

    from olares_pack.common import console

    if fmt == "json":
        console.out.print_json(json.dumps(report.to_dict(), ensure_ascii=False))
        return
    table = Table("line", "step", "version", "user", "result", "seconds", "what happened")
    for s in report.steps:
        what = [s.error] if s.error else []
        if s.ok and s.action != "uninstall":
            what.append(f"served {s.served!r}, answered {s.answer!r}; model downloads: {s.downloads}")
        if s.note:
            what.append(s.note)
        if not s.ok and s.engine_log:
            what += ["engine log:", *s.engine_log[-8:]]
        secs = ", ".join(f"{k} {v}" for k, v in s.seconds.items())
        table.add_row(s.line, s.action, s.label, s.user, "ok" if s.ok else "FAILED", secs, "\n".join(what) or "-")
    console.out.print(table)
    console.info(f"ran on node {report.node} with stand-ins: "
                 + "; ".join(f"{img}: {what}" for img, what in sorted(report.standins.items()))
                 + f"; model: {report.model}; changed for the node: {'; '.join(report.changes)}")


def _older(a: str, b: str) -> bool:
    from olares_pack.common import versions as appver

    return appver.parse(a) < appver.parse(b)


def _run(name: str, version: str, lines: dict[str, list[str]], charts: dict[tuple[str, str], bytes],
         froms: list[str] | None, kubeconfig: Path | None, reuse_values: bool) -> list:
    from olares_pack.cluster import controlplane, tools
    from olares_pack.common import console
    from olares_pack.rehearse import cleanup, flow

    def chart_of(v: str, t: str) -> bytes | None:
        return charts.get((v, t))

    if kubeconfig is None:
        with controlplane.running(tools.ensure(console.info)) as cluster:
            console.info(f"kube-apiserver {cluster.version} on {cluster.server}, helm {tools.HELM_VERSION}")
            return flow.rehearse(cluster, name, version, lines, chart_of, froms, reuse_values=reuse_values)
    run_id = "rh" + secrets.token_hex(3)
    names = flow.Names.of_run(run_id)
    cluster = controlplane.from_kubeconfig(kubeconfig, tools.ensure_helm(console.info))
    console.info(f"rehearsing on {kubeconfig} in namespaces and releases ending in {run_id} (removed afterwards); "
                 "every workload is created held: nothing starts beside what the cluster runs")
    try:
        return flow.rehearse(cluster, name, version, lines, chart_of, froms, names, reuse_values, held=True)
    finally:
        cleanup.namespaces(kubeconfig, run_id)


def _print(steps: list, fmt: str) -> None:
    from rich.table import Table

    from olares_pack.common import console
    from olares_pack.rehearse import objects

    if fmt == "json":
        console.out.print_json(json.dumps({"steps": [s.to_dict() for s in steps]}, ensure_ascii=False))
        return
    table = Table("line", "step", "version", "user", "result", "what happened", show_lines=False)
    for s in steps:
        what = [s.error] if s.error else []
        what += [f"refused {r}" for r in s.refused]
        if s.changes and s.ok:
            ch = s.changes
            what += [f"{label}: {', '.join(items)}" for label, items in (
                ("created", [objects.show(k) for k in ch.created]), ("changed", [objects.show(k) for k in ch.changed]),
                ("removed", [objects.show(k) for k in ch.removed])) if items]
        what += [f"{f.rule}: {f.message.split(': ', 1)[-1]}" for f in s.findings
                 if f.rule not in ("rehearse.removed", "rehearse.refused", "rehearse.immutable-field")]
        if s.note:
            what.append(s.note)
        table.add_row(s.line, s.action, s.label, s.user, "ok" if s.ok else "FAILED", "\n".join(what) or "-")
    console.out.print(table)
