"""Argument lists as an engine's parser meets them: the words before the first flag (the program
and its positional words) in order, then each flag with every word after it up to the next flag.
Without the engine's table nothing is read as a switch or as taking a value: `-fa on` is the flag
`-fa` with `on`, and `-fa` followed by `--mtp-head x` is `-fa` with nothing, a different group.

Order is kept where the parser gives it a meaning; elsewhere flags are compared as a set:

- a flag given twice keeps its values in order (`--lora a --lora b`: llama-server's list, argparse's
  append; or the last one wins);
- one setting written by several flags keeps their order too: a switch and its negation
  (`--mmap … --no-mmap`, the last wins: llama-server's handler_bool(params, is_positive) in argv
  order), and flags that append to one list (`--lora` and `--lora-scaled` both push to
  params.lora_adapters, `--control-vector` and `--control-vector-scaled` to params.control_vectors:
  llama.cpp common/arg.cpp, b11434);
- with the engine's table (llama-server: `Reader`), a flag that takes a value takes the next word
  whatever it looks like, as llama-server does (`argv[++i]`, common_params_parse_ex): `--alias
  --jinja --mlock` names the model `--jinja`, which `--alias --mlock --jinja` does not; a
  `--flag=value` word is one word (llama-server has no `=` form), and `--a_b` is `--a-b` (its parser
  turns `_` into `-` in `--` words);
- without a table (vLLM's argparse) `--flag=value` is the flag and its value, and words after `--`
  are positional words, in order (not after `sh -c SCRIPT`, where `--` is the script's $0)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
SHELLS = ("sh", "bash", "ash", "dash", "zsh")
END = "--"  # argparse: the words after it are positional


def is_flag(word: str) -> bool:
    """A word that starts an option: `-x`, `--long`, `--long=value`; not `-`, `--` alone nor a
    negative number."""
    return word.startswith("-") and word not in ("-", "--") and not _NUMBER.fullmatch(word)


@dataclass(frozen=True)
class Reader:
    """What an engine's own flag table says of a word (llama-server's, for one build)."""

    canonical: Callable[[str], str]  # a spelling -> the table's (an alias to its first long name)
    setting: Callable[[str], str]  # a canonical spelling -> the setting it writes (a negation its switch's)
    takes_value: Callable[[str], bool]  # whether the parser takes the next word as its value
    equals: bool = False  # whether `--flag=value` is the flag and its value


@dataclass(frozen=True)
class Grouped:
    head: tuple[str, ...]  # words before the first flag, in order
    # setting -> its occurrences in order: (the flag as spelled canonically, its words); settings sorted
    flags: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...]

    def as_dict(self) -> dict[str, object]:
        """{setting: [words, …]}; an occurrence by another flag of the setting (a negation, a list
        sibling) as {flag: words}."""
        return {"head": list(self.head),
                "flags": {s: [list(w) if f == s else {f: list(w)} for f, w in occ] for s, occ in self.flags}}


def _plain(flag: str) -> str:
    return flag


def group(words: list[str], canonical: Callable[[str], str] = _plain, reader: Reader | None = None,
          options_end: bool = True) -> Grouped:
    """`words` grouped; `canonical` names a flag's spelling as the engine's table does (aliases);
    `reader` reads them as the engine's parser does (it has its own `canonical`). options_end=False:
    `--` is a word like another (the words after `sh -c SCRIPT`: there `--` is $0)."""
    canon = reader.canonical if reader else canonical
    setting = reader.setting if reader else _plain
    head: list[str] = []
    seen: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    current: list[str] | None = None
    flag = ""
    needs_value = False
    positional = False

    def close() -> None:
        if current is not None:
            seen.setdefault(setting(flag), []).append((flag, tuple(current)))

    for w in words:
        if current is not None and (needs_value or positional):
            current.append(w)  # the flag's value, whatever it looks like; after `--`, every word
            needs_value = False
            continue
        if w == END and reader is None and options_end:
            close()
            flag, current, positional = END, [], True
            continue
        if is_flag(w):
            close()
            if reader is None or reader.equals:
                name, eq, value = w.partition("=") if w.startswith("--") else (w, "", "")
            else:
                name, eq, value = (w.replace("_", "-") if w.startswith("--") else w), "", ""
            flag, current = canon(name), [value] if eq else []
            needs_value = bool(reader and not eq and reader.takes_value(flag))
        elif current is None:
            head.append(w)
        else:
            current.append(w)
    close()
    return Grouped(tuple(head), tuple(sorted((s, tuple(o)) for s, o in seen.items())))


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
