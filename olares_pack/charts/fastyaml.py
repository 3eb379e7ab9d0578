"""yaml.safe_load through libyaml, with the documents' objects built in one pass.

PyYAML's safe loader spends most of a Kubernetes document in Python: the resolver's regexes for
every scalar (called back from libyaml's composer) and the constructor's generic machinery for
every node (a generator per mapping, a memo per object). Rendered charts repeat the same scalars
(`name`, `ports`, `"true"`) thousands of times and are plain maps, lists and scalars; here:

- the resolver's answer for a scalar is kept (it depends only on the scalar's text and style:
  no path resolvers are registered on the safe loader);
- plain maps, lists and string scalars are built by one recursive function; every other scalar
  tag goes to the safe constructor's own function for it, and anything else (a merge key `<<`, a
  non-scalar key, an unknown or collection tag such as `!!set`) makes the whole document go
  through the safe constructor as before.

The result is the safe loader's: the same objects, the same aliases shared, the same errors
(tests/test_fastyaml.py compares them, and every document the bundled charts render). Used where
documents are parsed in bulk: a chart's rendered output (charts.helm.objects) and the manifests a
first serve start reads.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_SPECIAL_KEYS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})  # flatten_mapping's work
_RESOLVED: dict[tuple[Any, Any, Any], str] = {}
_MEMO_MAX_TEXT, _MEMO_MAX_ENTRIES = 64, 100_000


class _Unusual(Exception):
    """A node the one-pass builder leaves to the safe constructor."""


class FastSafeLoader(_BASE):  # type: ignore[misc,valid-type]
    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if value is not None and len(value) > _MEMO_MAX_TEXT:
            return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]
        key = (kind, value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(_RESOLVED) < _MEMO_MAX_ENTRIES:
                _RESOLVED[key] = tag
        return tag  # type: ignore[no-any-return]

    def construct_document(self, node: Any) -> Any:
        try:
            return _build(self, node, {})
        except Exception:  # noqa: BLE001 - anything unusual: the safe constructor decides (and raises its own error)
            return super().construct_document(node)


def _build(loader: Any, node: Any, memo: dict[int, Any]) -> Any:
    cls = node.__class__
    if cls is ScalarNode:
        tag = node.tag
        if tag == _STR:
            return node.value
        make = loader.yaml_constructors.get(tag)
        if make is None:
            raise _Unusual
        return make(loader, node)
    done = memo.get(id(node))  # an alias: the object its anchor built
    if done is not None:
        return done
    if cls is MappingNode and node.tag == _MAP:
        out: dict[Any, Any] = {}
        memo[id(node)] = out
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode or key_node.tag in _SPECIAL_KEYS:
                raise _Unusual
            out[_build(loader, key_node, memo)] = _build(loader, value_node, memo)
        return out
    if cls is SequenceNode and node.tag == _SEQ:
        items: list[Any] = []
        memo[id(node)] = items
        items.extend(_build(loader, item, memo) for item in node.value)
        return items
    raise _Unusual


def safe_load(text: str) -> Any:
    """yaml.safe_load (YAML 1.1, libyaml), as common.yamlsrc.safe_load, faster on bulk documents."""
    return yaml.load(text, Loader=FastSafeLoader)  # noqa: S506 - a safe loader
