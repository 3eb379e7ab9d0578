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


def _scan(ctx: ChartContext, path: str, text: str) -> None:
    mappings: list[_Mapping] = []
    branches: list[tuple[int, int]] = []  # open if/with/range: (id, branch index)
    next_id = 0
    block_indent: int | None = None  # the indent of the key or item that opened a block scalar
    content_indent: int | None = None
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        action_only = "{{" in line and bool(_ACTION_ONLY.match(line))
        if action_only:
            for m in _ACTION.finditer(line):
                word = m.group(1)
                if word in _OPENERS:
                    branches.append((next_id, 0))
                    next_id += 1
                elif word == "else" and branches:
                    bid, idx = branches[-1]
                    branches[-1] = (bid, idx + 1)
                elif word == "end" and branches:
                    branches.pop()
        if block_indent is not None:
            if not stripped:
                continue
            if content_indent is None:
                if indent > block_indent and not action_only:
                    content_indent = indent
                    continue
            elif indent >= content_indent:
                continue
            if action_only and indent > block_indent:
                continue
            if action_only:
                continue
            block_indent = content_indent = None
        if not stripped or stripped.startswith("#") or action_only:
            continue
        if stripped == "---" or stripped.startswith("--- "):
            mappings.clear()
            continue
        body, at = stripped, indent
        while body.startswith("- ") or body == "-":  # a sequence item opens a new mapping
            body = body[2:].lstrip() if body != "-" else ""
            at = len(line) - len(line.lstrip(" -")) if body else at + 2
            mappings = [m for m in mappings if m.indent < at]
            mappings.append(_Mapping(at))
        if not body:
            continue
        m = _KEY.match(body)
        if m is not None:
            mappings = [x for x in mappings if x.indent <= at]
            if not mappings or mappings[-1].indent != at:
                mappings.append(_Mapping(at))
            key = m.group("key").strip().strip("'\"")
            here = tuple(branches)
            seen = mappings[-1].keys.get(key)
            if seen is not None and "{{" not in key:
                first, there = seen
                if not _diverge(here, there):
                    ctx.add("template.raw-yaml", f"duplicate key {key!r} (first on line {first})", file=path,
                            line=n, hint="a mapping holds each key once")
            mappings[-1].keys.setdefault(key, (n, here))
        if body[-1] in "|>-+0123456789#" and _BLOCK_START.search(body):
            block_indent, content_indent = (at if m is not None else indent), None


def raw_yaml(ctx: ChartContext) -> None:
    for path, text in sorted(ctx.source.files.items()):
        if _is_yaml_template(path):
            _scan(ctx, path, text)


RAW_RULES: list[Rule] = [raw_yaml]
