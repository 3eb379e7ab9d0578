"""The `olares-pack` click group and what its own options set for the run."""

from __future__ import annotations

import click

from olares_pack import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="olares-pack")
@click.option("--debug", is_flag=True, help="Show the full trace of an internal error.")
def cli(debug: bool) -> None:
    """Turn app manifests for GPU LLM servers into Olares app charts."""
    session.debug = debug


class Session:
    """What the group's own options set for the run; main() reads it when a command fails."""

    debug = False


session = Session()
