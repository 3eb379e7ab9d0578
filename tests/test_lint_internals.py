"""Shortcuts lint takes for speed give what the plain way gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from olares_pack.common import yamlsrc
from olares_pack.lint.context import _as_owner


@pytest.mark.parametrize("text", ["bob", "bobcat", "x bob y", "_bob", "bob_", "-bob-", "ébob", "bobé", "bob\nbob",
                                  "a.bob.b", "", "namespace: app-bob\npath: /olares/bob/x\nbobby: bob2"])
def test_the_second_owner_is_swapped_back_at_word_boundaries(text: str) -> None:
    assert _as_owner("bob", "alice")(text) == re.sub(r"\bbob\b", "alice", text)  # type: ignore[misc]
    assert _as_owner("b.b", "alice")(text) == re.sub(r"\bb\.b\b", "alice", text)  # type: ignore[misc]


def _shape(node: yaml.Node | None) -> object:
    if isinstance(node, yaml.MappingNode):
        return [(_shape(k), _shape(v)) for k, v in node.value]
    if isinstance(node, yaml.SequenceNode):
        return [_shape(v) for v in node.value]
    return None if node is None else (node.value, node.start_mark.line)


@pytest.mark.parametrize("text", ["a: 1\nb:\n  - x\n  - {c: 2}\n", "metadata:\n  name: x  # c\nspec: [1, 2]\n",
                                  "base: &b {x: 1}\n"])
def test_the_manifest_parse_keeps_the_node_tree_compose_gives(text: str) -> None:
    _, nodes = yamlsrc.parse_yaml_lines(text, Path("OlaresManifest.yaml"))
    assert _shape(nodes) == _shape(yamlsrc.compose_lines(text))


def test_a_merge_key_is_composed_again() -> None:
    # the constructor folds `<<` into its mapping's nodes: that tree no longer gives the lines
    _, nodes = yamlsrc.parse_yaml_lines("a:\n  <<: {x: 1}\n  y: 2\n", Path("OlaresManifest.yaml"))
    assert nodes is None


def test_the_workload_and_replicas_lines_are_those_the_line_regexes_find() -> None:
    import random

    from olares_pack.lint import context

    kind = re.compile(r"^kind:\s*[\"']?(Deployment|StatefulSet)[\"']?\s*$", re.M)
    replicas = re.compile(r"^\s*replicas:.*$", re.M)
    words = ["kind:", " ", "\n", "Deployment", "StatefulSet", '"', "'", "replicas:", "\t", "x", "\r", "\u00a0", "\x0b",
             "{{ .Values.workloads.a.replicaCount }}"]
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        assert context._WORKLOAD_KIND.findall(text) == kind.findall(text)
        wired = [m.group(1) if (m := context._WIRED.match(line)) else None for line in replicas.findall(text)]
        assert [m.group(1) if (m := context._WIRED.match(line)) else None for line in context._replicas_lines(text)] == wired


def test_a_template_reads_the_gpu_values_as_the_one_regex_said() -> None:
    import random

    from olares_pack.lint import context

    whole = re.compile(r"\.Values\s*(\}\}|\||\))|(toYaml|toJson|toPrettyJson)\s+\$?\.Values\b")
    words = [".Values", " ", "}}", "|", ")", "toYaml", "toJson", "toPrettyJson", "$", "x", "\n", "GpU", "g", "pu", "İ",
             "Values", "\t"]
    rng = random.Random(2)
    for _ in range(3000):
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 20)))
        one = bool("gpu" in text.lower() or whole.search(text))
        assert bool(context._GPU_ANY_CASE.search(text) or context._VALUES_WHOLE.search(text)
                    or context._VALUES_DUMPED.search(text)) == one, text
