"""The one console: data on stdout, messages and progress on stderr.

`out` and `err` are rich consoles made on first use: rich's console module and its styles cost
some 30 ms to import, as much as linting a handful of charts. Plain lines for a pipe or a file
(lint's text and JSON, messages on a captured stderr) go through write() and warn/error/info,
which reach rich only where its output would differ from the text itself (a terminal, colour
forced by the environment, a tab to expand)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console

    out: Console
    err: Console

# The control codes rich's Text drops from what it prints (rich.control.STRIP_CONTROL_CODES).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))


def _make(name: str) -> Console:
    from rich.console import Console

    if name == "out":
        # Piped output keeps whole lines: tables are not squeezed into 80 columns. No emoji codes:
        # a message "app.yaml:100: ..." must not print a 💯.
        return Console(highlight=False, emoji=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    return Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


def __getattr__(name: str) -> Any:
    if name in ("out", "err"):
        made = globals()[name] = _make(name)
        return made
    raise AttributeError(name)


def _plain(name: str) -> TextIO | None:
    """The stream behind `out` or `err` when rich would print text to it unstyled and unchanged
    (it is no terminal, and the environment does not say it is one), else None. A rich console
    already made keeps the stream: what it buffers stays in order with what follows."""
    if name in globals() or "idlelib" in sys.modules or "IPython" in sys.modules:
        return None
    if os.environ.get("TTY_COMPATIBLE", "") == "1" or os.environ.get("FORCE_COLOR"):
        return None
    stream = sys.stdout if name == "out" else sys.stderr
    try:
        return None if stream.isatty() else stream
    except (AttributeError, ValueError):
        return None


def _console(name: str) -> Console:
    return getattr(sys.modules[__name__], name)  # made here on first use, as `console.out` is


def is_terminal(name: str = "out") -> bool:
    """What rich's `is_terminal` answers for `out` or `err`, without making the console when it
    can be told otherwise."""
    return _plain(name) is None and _console(name).is_terminal


def _direct(text: str, stream: str) -> TextIO | None:
    # rich expands tabs by cell width, from the start of each print
    return None if "\t" in text else _plain(stream)


def write(text: str, stream: str = "out") -> None:
    """`out.print(text, markup=False, highlight=False, soft_wrap=True)` (or `err`'s): the same
    characters, written directly where rich would change none but its control codes."""
    plain = _direct(text, stream)
    if plain is None:
        _console(stream).print(text, markup=False, highlight=False, soft_wrap=True)
        return
    plain.write(text.translate(_STRIPPED) + "\n")
    plain.flush()


def _labelled(label: str, colour: str, message: str) -> None:
    """`label: message` on stderr, the label coloured where rich prints."""
    if _direct(message, "err") is not None:
        write(f"{label}: {message}", "err")
        return
    err = _console("err")
    err.print(f"[{colour}]{label}:[/{colour}] ", end="", markup=True)
    err.print(message, markup=False)


def warn(message: str) -> None:
    _labelled("warning", "yellow", message)


def error(message: str) -> None:
    for line in message.splitlines() or [""]:
        _labelled("error", "red", line)


def info(message: str) -> None:
    write(message, "err")
