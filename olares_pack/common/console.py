"""The one console: data on stdout, messages and progress on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

# Piped output keeps whole lines: tables are not squeezed into 80 columns. No emoji codes: a
# message "app.yaml:100: ..." must not print a 💯.
out = Console(highlight=False, emoji=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


def warn(message: str) -> None:
    err.print("[yellow]warning:[/yellow] ", end="", markup=True)
    err.print(message, markup=False)


def error(message: str) -> None:
    for line in message.splitlines() or [""]:
        err.print("[red]error:[/red] ", end="", markup=True)
        err.print(line, markup=False)


def info(message: str) -> None:
    err.print(message, markup=False)
