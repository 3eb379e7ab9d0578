"""`diff`: what changed between two versions."""

from __future__ import annotations

import json
from pathlib import Path

import click

from olares_pack import olares
from olares_pack.catalogue.repo import MANIFEST_FILE, Repo
from olares_pack.cli.args import app_folder
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option
from olares_pack.cli.report import print_diff_table
from olares_pack.common.errors import ExitCode


@cli.command("diff")
@click.argument("refs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True,
              help="text: for a terminal; markdown: to paste into changelog notes; json: for scripts.")
@click.option("--all", "show_all", is_flag=True, help="Also list what did not change.")
@click.option("--rendered", is_flag=True, help="Also compare the rendered Kubernetes objects, matched by kind/name.")
@click.option("--target", "target_name", type=click.Choice(sorted(olares.TARGETS)), default="current", show_default=True,
              help="Target to render app versions for.")
@click.option("--engine-build", metavar="BUILD", help="Flag registry for hand-written llama.cpp charts.")
@apps_dir_option
def diff_cmd(refs: tuple[str, ...], fmt: str, show_all: bool, rendered: bool, target_name: str,
             engine_build: str | None, apps_dir: Path) -> int:
    """Compare two versions: `diff APP V1 V2` (published versions, or `current` for app.yaml),
    `diff APP V` (V against `current`) or `diff A B` (chart folders, .tgz files, app manifests).
    Exit 0 equal, 1 different."""
    from olares_pack import diff
    from olares_pack.catalogue.checks import version_source
    from olares_pack.charts.source import single
    from olares_pack.common import console
    from olares_pack.lint import LintOptions

    if len(refs) == 2 and not Path(refs[0]).exists() and (apps_dir / refs[0] / MANIFEST_FILE).is_file() \
            and not Path(refs[1]).exists():
        # `diff APP V`: V against app.yaml, as `git diff REV` compares with the work tree: what the
        # next release would change (release --changes-from-diff reads the same comparison).
        console.info(f"comparing {refs[0]} {refs[1]} with current (app.yaml); `diff {refs[0]} V1 V2` compares two versions")
        refs = (refs[0], refs[1], "current")
    if len(refs) == 3:
        repo, app_dir = Repo.of_apps(apps_dir), app_folder(refs[0], apps_dir)
        a_src = version_source(repo, app_dir, refs[1], target_name)
        b_src = version_source(repo, app_dir, refs[2], target_name)
    elif len(refs) == 2:
        a_src, b_src = (single(Path(r), target_name) for r in refs)
    else:
        raise click.UsageError("give APP V1 V2, APP V (compared with current), or two charts A B")
    options = LintOptions(engine_build=engine_build)
    result = diff.compare(diff.facts(a_src, options), diff.facts(b_src, options), rendered=rendered)
    # the measured delta, when both versions have bench records (issue #37)
    perf = _performance(apps_dir, refs) if len(refs) == 3 else []
    if fmt == "markdown":
        console.out.print(diff.to_markdown(result, show_all=show_all), markup=False, highlight=False)
        for line in perf:
            console.out.print(f"- {line}", markup=False, highlight=False)
    elif fmt == "json":
        doc = diff.to_json(result, show_all=show_all) | ({"performance": perf} if perf else {})
        console.out.print_json(json.dumps(doc, ensure_ascii=False, default=str))
    else:
        print_diff_table(result, show_all)
        for line in perf:
            console.out.print(line, markup=False, highlight=False)
    return ExitCode.OK if result.equal else ExitCode.FINDINGS


def _performance(apps_dir: Path, refs: tuple[str, ...]) -> list[str]:
    """The performance delta, and what the versions' release records say beside it (a skipped
    rehearsal, an unbenched version)."""
    from olares_pack.apps.load import load_app
    from olares_pack.bench import describe, records
    from olares_pack.catalogue.repo import Repo

    app_dir = app_folder(refs[0], apps_dir)
    if not (app_dir / MANIFEST_FILE).is_file():
        return []
    current = load_app(app_dir / MANIFEST_FILE).version
    a, b = (current if v in ("current", "app.yaml") else v for v in refs[1:3])
    perf = describe.delta_lines(app_dir, a, b) if (app_dir / records.FOLDER).is_dir() else []
    return perf + describe.release_lines(Repo.of_apps(apps_dir), app_dir, (a, b))
