"""The `olares-pack` command line: thin click commands over the core, mapping errors to exit codes."""

from olares_pack.cli.commands import cli, main

__all__ = ["cli", "main"]
