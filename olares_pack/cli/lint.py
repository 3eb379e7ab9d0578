"""`lint`: the installer's rules and olares-pack's own."""

from __future__ import annotations

from pathlib import Path

import click

from olares_pack import olares
from olares_pack.cli.group import cli
from olares_pack.cli.lintrun import FORMATS, run
from olares_pack.cli.options import target_option


@cli.command("lint")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="text", show_default=True,
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
    return run(paths, fmt, strict, target_names, olares_version, kube_version, engine_build, helm_lint, jobs, allow,
               explain, online)
