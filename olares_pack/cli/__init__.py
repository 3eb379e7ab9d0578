"""The `olares-pack` command line: thin click commands over the core, one module per room.

Each command imports what it uses inside its function, so that `olares-pack --help` loads neither
pydantic, Jinja, Helm nor the Kubernetes schemas."""

from olares_pack.cli.entry import main
from olares_pack.cli.group import cli

__all__ = ["cli", "main"]
