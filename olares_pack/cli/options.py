"""Options that several commands share, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from olares_pack import olares
from olares_pack.catalogue import DEFAULT_LOCK_TIMEOUT

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_APPS = Path("apps")
DEFAULT_OUT = Path("build/charts")


def _together(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Several options as one decorator, listed in --help in the order given."""

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


apps_dir_option = click.option(
    "--apps-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_APPS,
    show_default=True,
    help="Folder holding one <name>/app.yaml per app.",
)


lock_timeout_option = click.option(
    "--lock-timeout", type=click.FloatRange(min=0), default=DEFAULT_LOCK_TIMEOUT, show_default=True, metavar="SECONDS",
    help="How long to wait while another olares-pack command holds the repository.")


target_option = click.option(
    "--target",
    "target_names",
    type=click.Choice(sorted(olares.TARGETS)),
    multiple=True,
    help="Olares target: current (1.12.6+, manifest 0.12.0/v3) or legacy (1.12.3-1.12.5, manifest "
    "0.10.0/v2 shared, 0.10.0/v1 per-user). Repeatable. Default: the targets the app declares.",
)

# the GPU an estimate is for (vram, new)
device_options = _together(
    click.option("--device", "device_name", default="olares-one", show_default=True, help="Device profile."),
    click.option("--gpu-mib", type=int, help="GPU memory of another device, in MiB."),
    click.option("--reserve-mib", type=int, help="Memory the desktop/driver keeps (default: the profile's)."),
)
# the repository a market source is made from (serve, export)
root_option = click.option("--root", type=click.Path(path_type=Path, file_okay=False, exists=True), default=Path("."),
                           show_default=True, help="Repository holding market-index.json, packages/ and apps/.")
default_version_option = click.option("--default-version", default=olares.DEFAULT_OS_VERSION, show_default=True,
                                      help="Olares version assumed when a request names none.")


def charts_out_option(help_text: str) -> Callable[[F], F]:
    """--out: where rendered charts go (render, build)."""
    return click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_OUT,
                        show_default=True, help=help_text)
