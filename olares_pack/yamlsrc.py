"""YAML documents that remember where each value came from, for file:line errors."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from .errors import InputError, Problem


@dataclass
class SourceDoc:
    """A parsed YAML file: plain Python data plus the round-trip tree for positions."""

    path: Path
    tree: Any
    data: Any

    def line_of(self, loc: tuple[Any, ...]) -> int | None:
        """1-based line of the deepest node of `loc` that exists in the file."""
        node = self.tree
        line = 1
        for key in loc:
            if isinstance(node, CommentedMap) and key in node:
                line = node.lc.key(key)[0] + 1
                node = node[key]
            elif isinstance(node, CommentedSeq) and isinstance(key, int) and 0 <= key < len(node):
                line = node.lc.item(key)[0] + 1
                node = node[key]
            else:
                break
        return line

    def problem(self, loc: tuple[Any, ...], message: str) -> Problem:
        line = self.line_of(loc) if self.tree is not None else None
        return Problem(str(self.path), line, format_loc(loc), message)


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def to_plain(node: Any) -> Any:
    """ruamel's round-trip types to plain dict/list/str/int/float/bool/None."""
    if isinstance(node, dict):
        return {str(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [to_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def roundtrip_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    # ruamel writes None as an empty value; keep the user's explicit `null`
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
    return yaml


def parse_yaml(text: str, path: Path) -> SourceDoc:
    try:
        tree = roundtrip_yaml().load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        reason = exc.problem or exc.context or "invalid YAML"
        raise InputError("", [Problem(str(path), line, "", f"YAML syntax error: {reason}")]) from None
    return SourceDoc(path=path, tree=tree, data=to_plain(tree))


def load_yaml(path: Path) -> SourceDoc:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_yaml(text, path)
