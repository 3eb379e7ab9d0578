"""`check` (the pull-request gate) and `init --ci github` (the workflow that runs it)."""

from __future__ import annotations

from pathlib import Path

import click

from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option
from olares_pack.common.errors import ExitCode


@cli.command("check")
@click.option("--changed-since", "changed_since", metavar="REF",
              help="A git commit, branch or tag (a pull request's base, e.g. origin/main): the apps whose app.yaml or "
              "release records changed since its merge base with HEAD (every app when templates/ changed) have their "
              "install and the upgrade from every older published version rehearsed on the local control plane, and, "
              "where a node can run here (root, `make node`), run on it as `release` does. Without it nothing is "
              "rehearsed.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text: a summary table and the findings; json: for scripts; github: workflow annotations "
              "(::error file=…,line=…,title=<rule>::…) on the lines the findings come from.")
@click.option("--skip-rehearsal", "skip_rehearsal", metavar="REASON",
              help="Do not rehearse the changed apps (no control plane here); the summary says why.")
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Rehearse on this cluster instead of the control plane built here.")
@apps_dir_option
def check_cmd(changed_since: str | None, fmt: str, skip_rehearsal: str | None, kubeconfig: Path | None,
              apps_dir: Path) -> int:
    """The whole gate a pull request must pass, in one exit code: every app manifest rendered and
    linted for each of its OS lines; `build --check` (market-index.json, packages and records
    consistent, today's renderer reproducing the newest versions, published versions unchanged);
    market-offer.json; the bench records; and with --changed-since, the install and upgrades of
    the changed apps rehearsed. Exit 1 on any error finding (warnings do not fail), 2 on bad
    input (a REF that does not exist)."""
    from olares_pack.catalogue.repo import Repo
    from olares_pack.ci import annotations
    from olares_pack.ci.check import Options, run
    from olares_pack.common import console

    if skip_rehearsal is not None and not skip_rehearsal.strip():
        raise click.BadParameter("say why the rehearsal is skipped", param_hint="--skip-rehearsal")
    repo = Repo.of_apps(apps_dir)
    repo.app_dirs()  # no apps folder: exit 2 before anything runs
    report = run(repo, Options(changed_since, skip_rehearsal, kubeconfig), console.info)
    annotations.PRINTERS[fmt](report)
    if report.failed:
        n = sum(s.errors for s in report.stages)
        console.error(f"check failed: {n} error(s) in {', '.join(s.name for s in report.stages if s.errors)}")
        return ExitCode.FINDINGS
    return ExitCode.OK


@cli.command("init")
@click.option("--ci", "ci", type=click.Choice(["github"]), required=True,
              help="github: .github/workflows/olares-pack.yml (pull requests checked, main published to Cloudflare, "
              "upstream watched nightly).")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."), show_default=True,
              help="The catalogue repository.")
@click.option("--install", "install", metavar="REQUIREMENT",
              help="What the jobs give `pip install` (default: olares-pack at this version; a git URL or a path "
              "for an unreleased one).")
@click.option("--branch", default="main", show_default=True, help="The branch that is published.")
@click.option("--cron", default="17 4 * * *", show_default=True, help="When the upstream watch runs (UTC).")
@click.option("--force", is_flag=True, help="Replace a workflow file that differs.")
def init_cmd(ci: str, root: Path, install: str | None, branch: str, cron: str, force: bool) -> int:
    """Write the CI workflow of a catalogue repository. An identical file is left as it is; a
    different one is kept (exit 2) unless --force."""
    from olares_pack.ci import workflow
    from olares_pack.common import console

    settings = workflow.Settings(branch=branch, cron=cron, **({"install": install} if install else {}))
    done = workflow.write(root, settings, force)
    console.out.print(str(done.path), markup=False)
    console.info(f"{done.path}: {done.how}" + ("" if done.how == "unchanged" else
                 "; commit it, then add the CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID secrets to publish "
                 "(how-to: Publish from GitHub)"))
    return ExitCode.OK
