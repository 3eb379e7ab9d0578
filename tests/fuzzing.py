"""Strategies shared by the fuzz test (tests/test_fuzz.py) and its longer run (measurements/fuzz_bench.py):
app manifests mutated at random places, and command lines built from the CLI's own vocabulary."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from olares_pack.common.yamlsrc import fast_load

APPS = Path(__file__).resolve().parent.parent / "apps"
BASES = [fast_load((p / "app.yaml").read_text(), p / "app.yaml") for p in sorted(APPS.iterdir()) if (p / "app.yaml").exists()]

# Text that has broken YAML, templates, shells or URLs before, mixed with ordinary text.
NASTY = ["{{", "}}", "{%", "{#", "\r", "\n", "\t", "\x00", "\x85", "\u2028", "\u2029", "\x1b", "'", '"', "\\", ": ", "#",
         "- ", "---", "&a", "*a", "!!python/object", "|", ">", "%", "@", "`", "$(", "..", "/", "//", "[1-2]", " ", "",
         "٣", "🚀", "長", "\ufeff", "\u202e", "0o17", "1e3", "yes", "null", "~", "0x1F", "9" * 40]
texts = st.one_of(st.text(max_size=40), st.lists(st.sampled_from(NASTY), max_size=6).map("".join),
                  st.sampled_from(["262144", "main", "q4_0", "draft-mtp", "https://example.org/x", "1.0.10", "24Gi"]))
scalars = st.one_of(texts, st.integers(min_value=-(10**40), max_value=10**40), st.booleans(), st.none(),
                    st.floats(allow_nan=True, allow_infinity=True))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(texts, inner, max_size=4)), max_leaves=12)


def _paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here] if here else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*here, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*here, i))
    return out


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    """One of the bundled app manifests with one to four places replaced, removed or added."""
    data = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["same type", "same type", "same type", "replace", "remove", "add"]))
        current = parent[path[-1]]
        if action == "remove":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(texts)] = draw(values)
        elif action == "same type" and isinstance(current, (str, bool, int)):
            # A value of the kind the field takes: what gets past the types and reaches a template.
            kind = st.booleans() if isinstance(current, bool) else (
                st.integers(min_value=-(2**70), max_value=2**70) if isinstance(current, int) else texts)
            parent[path[-1]] = draw(kind)
        else:
            parent[path[-1]] = draw(values)
    return data


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)


COMMANDS = {
    "render": ["llamacppqwen36mtpone", "vllmqwen36turbo27bone", "--target", "current", "legacy", "--out", "out"],
    "build": ["--check", "--full", "--target", "legacy", "--out", "out", "--lock-timeout", "1"],
    "package": ["llamacppqwen36mtpone", "--version", "1.0.5", "1.0.9", "2.5.7", "--out", "out"],
    "diff": ["llamacppqwen36mtpone", "1.0.5", "1.0.9", "current", "--format", "json", "markdown", "--all", "--rendered"],
    "lint": ["apps", "packages/current", "--strict", "--format", "json", "github", "--olares", "1.12.5", "1.12.6"],
    "vram": ["llamacppqwen36mtpone", "--ctx", "32768", "--largest-ctx", "--quants", "--format", "json", "--gpu-mib"],
    "release": ["llamacppqwen36mtpone", "--bump", "patch", "minor", "--version", "--summary", "--change", "--notes",
                "--date", "2026-06-01", "--dry-run", "--force", "fix:text"],
}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    cmd = draw(st.sampled_from(sorted(COMMANDS)))
    vocabulary = st.sampled_from(COMMANDS[cmd])
    words = st.one_of(vocabulary, vocabulary, vocabulary, texts.filter(lambda t: "\x00" not in t))
    return [cmd, *draw(st.lists(words, max_size=7))]
