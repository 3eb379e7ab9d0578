"""`lint`: the installer's rules and olares-pack's own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from olares_pack import olares
from olares_pack.cli.group import cli
from olares_pack.cli.options import target_option
from olares_pack.common import console
from olares_pack.common.errors import ExitCode, InputError

if TYPE_CHECKING:
    from olares_pack.charts.source import ChartSource
    from olares_pack.lint.runner import ChartResult


@cli.command("lint")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text: tables for a terminal; json: for scripts; github: workflow annotations.")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1), and an unpinned image is an error.")
@target_option
@click.option("--olares", "olares_version", metavar="VERSION",
              help="The Olares release whose rules apply (e.g. 1.12.5 for a source that serves 1.12.3-1.12.5 "
              "devices). Of an app manifest, only the targets offered to that release are linted (with --target, the targets named); charts whose olares dependency excludes it are errors. Default: the newest known "
              "release each chart's own olares dependency admits.")
@click.option("--kube-version", default=olares.DEFAULT_KUBE_VERSION, show_default=True,
              help="Kubernetes version whose schemas validate the rendered objects (Olares ships k3s 1.32).")
@click.option("--engine-build", metavar="BUILD",
              help="Flag registry for llama-server containers whose build olares-pack cannot tell (e.g. b11434).")
@click.option("--helm-lint", is_flag=True, help="Also run Helm's own lint (warnings only: the installer renders, it does not lint).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Lint this many charts at once.")
@click.option("--allow", "allow", multiple=True, metavar="RULE",
              help="Report errors of this olares-pack policy rule as warnings (as `release --allow` does). Repeatable.")
@click.option("--explain", "explain", metavar="RULE", help="Print what RULE checks, its source and its releases, and exit.")
@click.option("--online", is_flag=True, help="Also ask the registries and Hugging Face whether the pinned digests and "
              "commits of app manifests still resolve, and whether image tags still name their digests.")
def lint_cmd(paths: tuple[Path, ...], fmt: str, strict: bool, target_names: tuple[str, ...],
             olares_version: str | None, kube_version: str, engine_build: str | None, helm_lint: bool, jobs: int,
             allow: tuple[str, ...], explain: str | None, online: bool) -> int:
    """Lint chart folders, .tgz charts, app manifests (rendered for each target) or folders of them."""
    from olares_pack.lint import LintOptions, lint_charts
    from olares_pack.lint.output import PRINTERS, print_rule

    if explain:
        return print_rule(explain)
    if not paths:
        raise InputError("lint needs a chart, an app or a folder (or --explain RULE)")
    from olares_pack.charts.source import offered_to, resolve

    if olares_version:
        olares.parse_os_version(olares_version)
    from olares_pack.lint.findings import allowable
    for rule in allow:
        allowable(rule)
    sources = resolve(list(paths), list(target_names) or None)
    if olares_version and not target_names:
        sources, skipped = offered_to(sources, olares_version)
        for src in skipped:
            profile = olares.get(src.target or "")
            console.info(f"{src.label}: not offered to Olares {olares_version} (the {profile.name} target serves "
                         f"{profile.olares}); not linted (--target {profile.name} lints it anyway)")
    options = LintOptions(kube_version=kube_version, olares_version=olares_version, engine_build=engine_build,
                          strict=strict, helm_lint=helm_lint, allow=tuple(sorted(set(allow))))
    from olares_pack.lint.place import place_results

    results = lint_charts(sources, options, jobs)
    if online:
        _add_online_findings(sources, results)
    results = place_results(results, sources)
    PRINTERS[fmt](results)
    failing = {"error", "warning"} if strict else {"error"}
    return ExitCode.FINDINGS if any(f.severity in failing for r in results for f in r.findings) else ExitCode.OK


def _add_online_findings(sources: list[ChartSource], results: list[ChartResult]) -> None:
    """One check per app manifest (its targets share the image and model), reported on each of its charts."""
    from olares_pack.lint.findings import Finding
    seen: dict[str, list[tuple[str, str, str, str]]] = {}
    for src, result in zip(sources, results, strict=True):
        if src.app is None:
            continue
        key = src.app.model_dump_json()
        if key not in seen:
            from olares_pack.cli.apps import online_check  # --online only: the catalogue's modules stay unloaded

            seen[key] = online_check(src.app)
        checked = seen[key]
        result.findings.extend(Finding(rule, severity, result.label, "app.yaml", path, message)  # type: ignore[arg-type]
                               for rule, severity, path, message in checked)  # severity: "error" or "warning"
        result.findings.sort(key=Finding.sort_key)
