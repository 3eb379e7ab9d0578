"""The command's entry point: run the group, map errors to exit codes."""

from __future__ import annotations

import sys

import click

from olares_pack import __version__
from olares_pack.cli import (
    apps,  # noqa: F401 - registers its commands
    bench,  # noqa: F401 - registers its commands
    catalogue,  # noqa: F401 - registers its commands
    check,  # noqa: F401 - registers its commands
    diff,  # noqa: F401 - registers its commands
    importing,  # noqa: F401 - registers its commands
    lint,  # noqa: F401 - registers its commands
    market,  # noqa: F401 - registers its commands
    rehearse,  # noqa: F401 - registers its commands
    upstream,  # noqa: F401 - registers its commands
    vram,  # noqa: F401 - registers its commands
)
from olares_pack.cli.group import cli, session
from olares_pack.common.errors import ExitCode, OlaresPackError


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    session.debug = False
    try:
        code = cli.main(args=args, prog_name="olares-pack", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = ExitCode.INPUT
    except click.Abort:
        from olares_pack.common import console

        console.error("aborted")
        code = ExitCode.INPUT
    except OlaresPackError as exc:
        from olares_pack.common import console

        console.error(str(exc))
        code = exc.exit_code
    except RecursionError:
        from olares_pack.common import console

        console.error("input nested too deeply to process")
        code = ExitCode.INPUT
    except Exception as exc:  # noqa: BLE001 - a bug: one line and exit 3, the trace on request
        from olares_pack.common import console

        if session.debug:
            console.err.print_exception()
        console.error(f"internal error: {type(exc).__name__}: {exc} (olares-pack {__version__}; please report it, "
                      "with the command and `--debug` output)")
        code = ExitCode.INTERNAL
    if argv is None:
        sys.exit(code or 0)
    return code or 0
