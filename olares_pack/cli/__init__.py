"""The `olares-pack` command line: thin click commands over the core, one module per room.

The group imports a command's module only when that command runs (olares_pack.cli.group), and
each command imports what it uses inside its function, so that `olares-pack --help` loads
neither pydantic, Jinja, Helm nor the Kubernetes schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from olares_pack.cli.entry import main

if TYPE_CHECKING:
    import click

    cli: click.Group

__all__ = ["cli", "main"]


def __getattr__(name: str) -> Any:
    # `olares_pack.cli.cli` is the group with every command registered, for what walks
    # `cli.commands` (the reference generator, tests); main() itself loads only the one it runs.
    if name == "cli":
        from olares_pack.cli.group import load_all

        return load_all()
    raise AttributeError(name)
