"""YAML documents that remember where each value came from, for file:line errors."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from olares_pack.common.errors import InputError, Problem


@dataclass
class SourceDoc:
    """A parsed YAML file: plain Python data, and (parsed again only when asked for) the lines of
    its values and the round-trip tree that keeps comments for editing."""

    path: Path
    text: str | None
    data: Any
    _tree: Any = field(default=None, repr=False)
    _nodes: Any = field(default=None, repr=False)  # compose_lines(text); False: it does not compose

    @property
    def tree(self) -> Any:
        if self._tree is None and self.text is not None:
            self._tree = _roundtrip_tree(self.text, self.path)
        return self._tree

    def line_of(self, loc: tuple[Any, ...]) -> int | None:
        """1-based line of the deepest node of `loc` that exists in the file. From libyaml's node
        tree: the round-trip tree (kept for editing) took 0.2 s to read a manifest, on every error."""
        if self.text is None:
            return None
        if self._nodes is None:
            self._nodes = compose_lines(self.text) or False
        return node_line(self._nodes or None, loc)

    def problem(self, loc: tuple[Any, ...], message: str) -> Problem:
        return Problem(str(self.path), self.line_of(loc), format_loc(loc), message)


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def roundtrip_yaml() -> Any:
    """ruamel's round-trip reader and writer (comments, order and spelling kept), for editing."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    # ruamel writes None as an empty value; keep the user's explicit `null`
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
    return yaml


_SAFE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x the pure-Python reader


def safe_load(text: str) -> Any:
    """yaml.safe_load (YAML 1.1, as Helm and the device read charts) through libyaml."""
    return yaml.load(text, Loader=_SAFE)  # noqa: S506 - a safe loader


def safe_load_all(text: str) -> list[Any]:
    """yaml.safe_load_all of a multi-document stream (a `helm template` output), through libyaml."""
    return list(yaml.load_all(text, Loader=_SAFE))  # noqa: S506 - a safe loader


class _Yaml12Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """libyaml's parser with the YAML 1.2 core schema the round-trip loader uses: `on`, `yes`,
    `0555` and `1:30` mean what they say, and a key given twice is an error."""


_BOOL, _INT, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
# Underscores between digits, as ruamel's reader accepts them.
_Yaml12Loader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9][0-9_]*|0o[0-7_]+|0x[0-9a-fA-F_]+)$"),
                                    list("-+0123456789"))
_Yaml12Loader.add_implicit_resolver(
    _FLOAT, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))


def compose_lines(text: str) -> yaml.Node | None:
    """libyaml's node tree of `text`, for lines only (several times faster than the round-trip
    reader that keeps comments); None when the text does not parse."""
    try:
        return yaml.compose(text, Loader=_SAFE)
    except yaml.YAMLError:
        return None


def node_line(root: yaml.Node | None, loc: tuple[Any, ...]) -> int:
    """1-based line of the deepest node of `loc` that a composed tree holds (1 for none)."""
    node, line = root, 1
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(key)), None)
            if hit is None:
                break
            line, node = hit[0].start_mark.line + 1, hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _int12(loader: _Yaml12Loader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node).replace("_", "")
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)  # decimal, leading zeros included (YAML 1.1 would read 0555 as octal)


def _mapping12(loader: _Yaml12Loader, node: yaml.MappingNode) -> dict[str, Any]:
    loader.flatten_mapping(node)
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (dict, list)):
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                    "a mapping key must be a scalar", key_node.start_mark)
        key = str(key)  # what the round-trip reader's keys become too
        if key in out:
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                    f"found duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_Yaml12Loader.add_constructor(_INT, _int12)
_Yaml12Loader.add_constructor("tag:yaml.org,2002:map", _mapping12)


def _syntax_error(path: Path, exc: Exception) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    # "did not find expected ',' or ']'": the scanner notices at the next token, often the next
    # line; the flow collection left open is where the fault is (its context mark)
    if str(getattr(exc, "problem", "")).startswith("did not find expected") and getattr(exc, "context_mark", None):
        mark = exc.context_mark  # type: ignore[attr-defined]
    line = mark.line + 1 if mark else None
    reason = getattr(exc, "problem", None) or getattr(exc, "context", None) or "invalid YAML"
    return InputError("", [Problem(str(path), line, "", f"YAML syntax error: {reason}")])


# One manifest: olares-pack's own bound (the bundled ones are 5 KB; an imported chart lives in its
# app.yaml, and the largest of the official catalogue, beclab/apps chaosmesh, is 3.1 MB).
MAX_BYTES = 16 << 20
MAX_DEPTH = 32  # nesting of mappings and lists (the manifest needs 5)


def _check_node(root: yaml.Node, path: Path) -> None:
    """No alias (each node reached once: `*ref` and `<<: *ref` would share one) and bounded depth,
    before anything is constructed: a 3 KB alias bomb never expands."""
    seen: set[int] = set()
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise _problem(path, node.start_mark.line + 1, "this value (&anchor) is used again through an alias "
                           "(*anchor or <<: *anchor); aliases are not accepted: write the value out")
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise _problem(path, node.start_mark.line + 1, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, yaml.MappingNode):
            stack.extend((n, depth + 1) for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((n, depth + 1) for n in node.value)


def _problem(path: Path, line: int | None, message: str) -> InputError:
    return InputError("", [Problem(str(path), line, "", message)])


# Characters a manifest file never needs raw: YAML readers disagree on them (YAML 1.1, libyaml and
# the device's Go reader break lines on U+0085/2028/2029; YAML 1.2 does not), so a value would
# mean one thing here and another there. Escaped in a quoted string they are data, and the
# manifest boundary (fields.text_problems) refuses them in values too.
_RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]|\r(?!\n)")


def fast_load(text: str, path: Path) -> Any:
    """Plain data from YAML text through libyaml (10-20x the round-trip reader)."""
    return _fast_load(text, path)[1]


def _fast_load(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    if len(text) > MAX_BYTES:
        raise _problem(path, None, f"{len(text):,} characters: a manifest is at most {MAX_BYTES:,} bytes")
    if m := _RAW_CONTROL.search(text):
        from olares_pack.common.fields import describe

        raise _problem(path, text.count("\n", 0, m.start()) + 1, f"holds {describe(m.group())}: a manifest is "
                       "plain text (write it as an escape in a quoted string if it is data)")
    loader = _Yaml12Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _check_node(node, path)
        return node, loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(path, exc) from None
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError) as exc:
        raise _problem(path, None, f"YAML error: {type(exc).__name__}: {str(exc)[:200]}") from None
    finally:
        loader.dispose()


def _roundtrip_tree(text: str, path: Path) -> Any:
    from ruamel.yaml.error import MarkedYAMLError

    try:
        return roundtrip_yaml().load(io.StringIO(text))
    except MarkedYAMLError as exc:
        raise _syntax_error(path, exc) from None


def parse_yaml(text: str, path: Path) -> SourceDoc:
    return SourceDoc(path=path, text=text, data=fast_load(text, path))


def parse_yaml_lines(text: str, path: Path) -> tuple[SourceDoc, yaml.Node | None]:
    """parse_yaml, and the node tree compose_lines(text) would give, from the same parse where it
    can: a merge key (`<<`) is flattened into its mapping's nodes by the constructor, so a text
    that may hold one is composed again. None: compose it when asked."""
    node, data = _fast_load(text, path)
    return SourceDoc(path=path, text=text, data=data), (node if node is not None and "<<" not in text else None)


def load_yaml(path: Path) -> SourceDoc:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise _problem(path, None, f"{size:,} bytes: a manifest is at most {MAX_BYTES:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_yaml(decode(data, path), path)


def decode(data: bytes, path: Path) -> str:
    """UTF-8 text (a byte-order mark is dropped), or an error naming the line of the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _problem(path, line, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
