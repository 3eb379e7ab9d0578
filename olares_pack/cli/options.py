"""Options that several commands share, declared once."""

from __future__ import annotations

from pathlib import Path

import click

from olares_pack import olares as targets
from olares_pack.catalogue.repo import DEFAULT_LOCK_TIMEOUT

DEFAULT_APPS = Path("apps")


DEFAULT_OUT = Path("build/charts")


apps_dir_option = click.option(
    "--apps-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_APPS,
    show_default=True,
    help="Folder holding one <name>/app.yaml per app.",
)


lock_timeout_option = click.option(
    "--lock-timeout", type=float, default=DEFAULT_LOCK_TIMEOUT, show_default=True, metavar="SECONDS",
    help="How long to wait while another olares-pack command holds the repository.")


target_option = click.option(
    "--target",
    "target_names",
    type=click.Choice(sorted(targets.TARGETS)),
    multiple=True,
    help="Olares target: current (1.12.6+, manifest 0.12.0/v3) or legacy (1.12.3-1.12.5, manifest "
    "0.10.0/v2 shared, 0.10.0/v1 per-user). Repeatable. Default: the targets the app declares.",
)
