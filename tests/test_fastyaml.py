"""The one-pass YAML loader gives what the safe loader gives: objects, shared aliases, errors."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from olares_pack.charts import fastyaml, helm
from olares_pack.common.yamlsrc import safe_load as reference

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    "a: 1\nb: true\nc: ~\nd: 1.5\ne: '007'\nf: 0o17\ng: 2026-01-05\nh: 2026-01-05T10:00:00Z\ni: yes\nj: .inf\n",
    "spec:\n  containers:\n  - name: x\n    args: [--ctx-size, '8192', 8192]\n    env: {A: '1', B: on}\n",
    "base: &b {x: 1, y: [1, 2]}\none: *b\ntwo: *b\n",  # aliases: one object, shared
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",  # a merge key
    "a: 1\na: 2\n",  # a key twice: the last wins, in the first's place
    "? [1, 2]\n: x\n",  # a key that is a list: the safe loader refuses it
    "s: !!set {a, b}\no: !!omap [a: 1]\n",
    "b: !!binary aGVsbG8=\nt: !!str 12\nf: !!float '1'\n",
    "x: !custom 1\n",  # a tag the safe loader does not know
    "- &a [*a]\n",  # a list holding itself
    "= : v\n",  # the value key
    "",
    "just a string",
    "1: one\n2.5: two\nnull: three\ntrue: four\n",
    "long: " + "z" * 500 + "\n",
]


def _outcome(load, text: str) -> tuple[str, object]:
    try:
        return "ok", load(text)
    except yaml.YAMLError as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", CASES)
def test_the_same_objects_or_the_same_error_as_the_safe_loader(text: str) -> None:
    fast, ref = _outcome(fastyaml.safe_load, text), _outcome(reference, text)
    assert fast[0] == ref[0]
    if fast[0] == "ok":
        assert repr(fast[1]) == repr(ref[1])  # repr also tells 1 from 1.0 and True from 1
    else:
        assert fast[1] == ref[1]


def test_aliases_are_the_same_object_as_with_the_safe_loader() -> None:
    doc = fastyaml.safe_load(CASES[2])
    assert doc["one"] is doc["two"] is doc["base"]
    loop = fastyaml.safe_load("- &a [*a]\n")
    assert loop[0][0] is loop[0]


def test_every_document_the_bundled_apps_render_parses_alike() -> None:
    from olares_pack import olares as targets
    from olares_pack.apps.load import load_app
    from olares_pack.apps.manifest import discover
    from olares_pack.common import fsio
    from olares_pack.render import app as render

    texts = []
    for folder in discover(ROOT / "apps"):
        app = load_app(folder / "app.yaml")
        for target in app.targets:
            files = render.render(app, targets.get(target))
            texts += [t for p, t in files.items() if p.endswith((".yaml", ".yml"))]
            with tempfile.TemporaryDirectory(dir=fsio.scratch_dir()) as tmp:
                fsio.write_tree(files, Path(tmp) / app.name)
                with helm.load(Path(tmp) / app.name) as chart:
                    out = chart.render(values=helm.installer_values(app.name, []), name=app.name, namespace="x")
            texts += [part for t in out.values() for part in t.split("\n---")]
    assert len(texts) > 20
    for text in texts:
        fast, ref = _outcome(fastyaml.safe_load, text), _outcome(reference, text)
        assert (fast[0], repr(fast[1])) == (ref[0], repr(ref[1]))
