"""Rules on the template files as text: a key written twice in one mapping.

Nothing in the installer reads a template as YAML before Helm renders it (the app service decodes
only rendered output; oac reads templates as text lines), so template syntax in values is fine.
A key written twice, though, renders twice, and which value survives is the decoder's choice, not
the author's: a warning. Keys in the two branches of one if/else render once and are not reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from olares_pack.lint.context import ChartContext

Rule = Callable[[ChartContext], None]

_ACTION_ONLY = re.compile(r"^\s*(\{\{.*?\}\}\s*)+$")
_ACTION = re.compile(r"\{\{-?\s*(\w+)?")
_KEY = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s:#'"{}\[\],&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s|$)""")
_BLOCK_START = re.compile(r"(:\s*|^)[|>][-+0-9]*\s*(#.*)?$")
_OPENERS = {"if", "with", "range", "define", "block"}


def _is_yaml_template(path: str) -> bool:
    """A template of the chart, or of an apiVersion v2 sub-chart (<sub>/templates/...)."""
    return bool(re.match(r"^(?:[^/]+/)?templates/", path)) and path.endswith((".yaml", ".yml")) \
        and not path.rsplit("/", 1)[-1].startswith("_")


@dataclass
class _Mapping:
    indent: int
    keys: dict[str, tuple[int, tuple[tuple[int, int], ...]]] = field(default_factory=dict)  # key -> (line, branch path)


def _diverge(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    """Whether two branch paths part in one if/else (then at most one of them renders)."""
    return any(x[0] == y[0] and x[1] != y[1] for x, y in zip(a, b, strict=False))


# A mapping open at an indent: (indent, key -> (line, branch path)).
_Mapping = tuple[int, dict[str, tuple[int, tuple[tuple[int, int], ...]]]]


@dataclass
class _Scan:
    """One template file read line by line, as YAML reads it where template actions allow: the
    mappings open at each indent, the if/with/range branch each line is in, and the block scalar
    being skipped. A key a mapping already holds in the same branch is reported."""

    ctx: ChartContext
    path: str
    mappings: list[_Mapping] = field(default_factory=list)  # ascending indent order
    branches: list[tuple[int, int]] = field(default_factory=list)  # open if/with/range: (id, branch index)
    next_id: int = 0
    here: tuple[tuple[int, int], ...] = ()  # the branches as a tuple, kept with them
    block_indent: int | None = None  # the indent of the key or item that opened a block scalar
    content_indent: int | None = None

    def run(self, text: str) -> None:
        """Every line of the file. One loop with the state in locals, a key's mapping found and
        checked in it too: the scan reads every template line of a chart (120k lines for the 198
        v3 charts of beclab/apps), where a method call and attribute lookups per line were 10 %
        of lint's time."""
        mappings = self.mappings
        key_match, action_only_match, block_search = _KEY.match, _ACTION_ONLY.match, _BLOCK_START.search
        here = self.here
        n = 0
        for raw in text.split("\n"):
            n += 1
            inside = self.content_indent
            if inside is not None and "{{" not in raw and raw.startswith(" " * inside):
                continue  # a line of a block scalar's text, no template action on it: nothing to read
            line = raw.rstrip("\r")
            stripped = line.strip()
            block = self.block_indent
            if block is None and (not stripped or stripped[0] == "#"):
                continue  # a blank or comment line outside a block scalar opens, closes and holds nothing
            indent = len(line) - len(line.lstrip(" "))
            action_only = "{{" in line and action_only_match(line) is not None
            if action_only:
                self._actions(line)
                here = self.here
            if block is not None and self._in_block(stripped, indent, action_only):
                continue
            if not stripped or stripped[0] == "#" or action_only:
                continue
            if stripped[0] == "-":
                if stripped == "---" or stripped.startswith("--- "):
                    mappings.clear()
                    continue
                body, at = self._items(line, stripped, indent)
                if not body:
                    continue
            else:
                body, at = stripped, indent
            m = key_match(body)
            if m is not None:
                key = m.group("key").strip().strip("'\"")
                while mappings and mappings[-1][0] > at:
                    mappings.pop()
                if not mappings or mappings[-1][0] != at:
                    mappings.append((at, {}))
                keys = mappings[-1][1]
                seen = keys.get(key)
                if seen is None:
                    keys[key] = (n, here)
                elif "{{" not in key and not _diverge(here, seen[1]):
                    self.ctx.add("template.raw-yaml", f"duplicate key {key!r} (first on line {seen[0]})",
                                 file=self.path, line=n, hint="a mapping holds each key once")
            if body[-1] in "|>-+0123456789#" and block_search(body):
                self.block_indent, self.content_indent = (at if m is not None else indent), None

    def _actions(self, line: str) -> None:
        """if/with/range open a branch, else moves to the next, end closes it."""
        for m in _ACTION.finditer(line):
            word = m.group(1)
            if word in _OPENERS:
                self.branches.append((self.next_id, 0))
                self.next_id += 1
            elif word == "else" and self.branches:
                bid, idx = self.branches[-1]
                self.branches[-1] = (bid, idx + 1)
            elif word == "end" and self.branches:
                self.branches.pop()
        self.here = tuple(self.branches)

    def _in_block(self, stripped: str, indent: int, action_only: bool) -> bool:
        """Whether the line is still the block scalar's text (else the block ends here)."""
        assert self.block_indent is not None
        if not stripped:
            return True
        if self.content_indent is None:
            if indent > self.block_indent and not action_only:
                self.content_indent = indent
                return True
        elif indent >= self.content_indent:
            return True
        if action_only:
            return True
        self.block_indent = self.content_indent = None
        return False

    def _items(self, line: str, stripped: str, indent: int) -> tuple[str, int]:
        """The line past its sequence-item dashes, and the indent its content stands at; each item
        opens a new mapping (those deeper than it closed)."""
        body, at = stripped, indent
        mappings = self.mappings
        while body[:1] == "-" and (body == "-" or body[1] == " "):
            body = body[2:].lstrip() if body != "-" else ""
            at = len(line) - len(line.lstrip(" -")) if body else at + 2
            while mappings and mappings[-1][0] > at - 1:
                mappings.pop()
            mappings.append((at, {}))
        return body, at


def raw_yaml(ctx: ChartContext) -> None:
    for path, text in sorted(ctx.source.files.items()):
        if _is_yaml_template(path):
            _Scan(ctx, path).run(text)


RAW_RULES: list[Rule] = [raw_yaml]
