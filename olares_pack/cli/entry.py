"""The command's entry point: run the group, map errors to exit codes.

A plain `lint` call runs without click (olares_pack.cli.lintrun), and `--help` on a terminal of
80 columns or more prints click's rendering kept in olares_pack.cli.helptext: click and the group
are imported only for the other commands, for a command's help, and for a lint argv read otherwise."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

from olares_pack import __version__
from olares_pack.common.errors import ExitCode, OlaresPackError


def _click_main(args: list[str]) -> int:
    from olares_pack.cli.group import cli

    return cli.main(args=args, prog_name="olares-pack", standalone_mode=False)


def _plain(command: Callable[[], int]) -> int:
    """A command run without click, with what click's main does around one: an interrupt is an
    abort (a blank line, then main's "aborted"), a closed pipe on output exits 1 quietly."""
    try:
        return command()
    except (EOFError, KeyboardInterrupt) as exc:
        import click

        click.echo(file=sys.stderr)
        raise click.Abort() from exc
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # the reader left (`olares-pack lint ... | head`): what is still buffered for it goes to
        # the null device, so that the flush at exit does not fail and print again
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        sys.exit(1)


def _group_help() -> int:
    from olares_pack.cli.helptext import TEXT

    sys.stdout.write(TEXT)
    sys.stdout.flush()
    return 0


def _help_as_kept(args: list[str]) -> bool:
    """Whether click would print helptext.TEXT for ARGS: the group's help, on a terminal (or the
    COLUMNS a pipe is given, 80 without) at least helptext.WIDTH wide."""
    if args not in (["--help"], ["-h"]):
        return False
    import shutil

    from olares_pack.cli.helptext import WIDTH

    return shutil.get_terminal_size().columns >= WIDTH


def _debug() -> bool:
    """Whether --debug was given: the group's option, so never on a run the group did not read."""
    group = sys.modules.get("olares_pack.cli.group")
    return bool(group is not None and group.session.debug)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if (group := sys.modules.get("olares_pack.cli.group")) is not None:
        group.session.debug = False  # a previous main() in this process may have set it
    try:
        command = None
        if args and args[0] == "lint":
            from olares_pack.cli.lintrun import plain_command

            command = plain_command(args[1:])
        elif _help_as_kept(args):
            command = _group_help
        code = _plain(command) if command is not None else _click_main(args)
    except Exception as exc:  # noqa: BLE001 - each kind mapped to its exit code below
        code = _failed(exc)
    if argv is None:
        sys.exit(code or 0)
    return code or 0


def _failed(exc: Exception) -> int:
    """Report a command's failure; its exit code. click's own exceptions are looked for only
    where click was imported (a plain lint run raises none)."""
    if "click" in sys.modules:
        import click

        if isinstance(exc, click.exceptions.Exit):
            return exc.exit_code
        if isinstance(exc, click.ClickException):
            exc.show()
            return ExitCode.INPUT
        if isinstance(exc, click.Abort):
            from olares_pack.common import console

            console.error("aborted")
            return ExitCode.INPUT
    from olares_pack.common import console

    if isinstance(exc, OlaresPackError):
        console.error(str(exc))
        return exc.exit_code
    if isinstance(exc, RecursionError):
        console.error("input nested too deeply to process")
        return ExitCode.INPUT
    # a bug: one line and exit 3, the trace on request
    if _debug():
        console.err.print_exception()
    console.error(f"internal error: {type(exc).__name__}: {exc} (olares-pack {__version__}; please report it, "
                  "with the command and `--debug` output)")
    return ExitCode.INTERNAL
