"""Argument lists as an engine's parser meets them: the words before the first flag (the program
and its positional words) in order, then each flag with every word after it up to the next flag.
Nothing is read as a switch or as taking a value: `-fa on` is the flag `-fa` with `on`, and `-fa`
followed by `--mtp-head x` is `-fa` with nothing, a different group. Repeated flags keep their
order (llama-server and argparse read them in order: `--lora a --lora b`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
SHELLS = ("sh", "bash", "ash", "dash", "zsh")


def is_flag(word: str) -> bool:
    """A word that starts an option: `-x`, `--long`, `--long=value`; not `-`, `--` alone nor a
    negative number."""
    return word.startswith("-") and word not in ("-", "--") and not _NUMBER.fullmatch(word)


@dataclass(frozen=True)
class Grouped:
    head: tuple[str, ...]  # words before the first flag, in order
    flags: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]  # flag -> its groups of words, in order, flags sorted

    def as_dict(self) -> dict[str, object]:
        return {"head": list(self.head), "flags": {f: [list(g) for g in groups] for f, groups in self.flags}}


def group(words: list[str], canonical: Callable[[str], str] = lambda f: f) -> Grouped:
    """`words` grouped; `canonical` names a flag's spelling as the engine's table does (aliases)."""
    head: list[str] = []
    seen: dict[str, list[tuple[str, ...]]] = {}
    current: list[str] | None = None
    flag = ""
    for w in [*words, "--end-of-words--"]:
        if is_flag(w):
            if current is not None:
                seen.setdefault(flag, []).append(tuple(current))
            name, eq, value = w.partition("=") if w.startswith("--") else (w, "", "")
            flag, current = canonical(name), [value] if eq else []
        elif current is None:
            head.append(w)
        else:
            current.append(w)
    return Grouped(tuple(head), tuple(sorted((f, tuple(g)) for f, g in seen.items())))


def shell_script(words: list[str]) -> tuple[list[str], str, list[str]] | None:
    """(shell and its options, script text, the words after the script: $0 and "$@") of `sh -c
    SCRIPT …`; None when the words are no shell script."""
    if len(words) < 3 or words[0].rsplit("/", 1)[-1] not in SHELLS:
        return None
    for i, w in enumerate(words[1:], 1):
        if not w.startswith("-"):
            return None
        if "c" in w.lstrip("-") and not w.startswith("--") and i + 1 < len(words):
            return words[: i + 1], words[i + 1], words[i + 2:]
    return None
