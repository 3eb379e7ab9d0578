"""The Kubernetes schema check: an object with unknown fields is worded without the Python
validator, as that validator words it (charts/kube._first_unknown_field)."""

from __future__ import annotations

import copy
import json
import os
import random
from typing import Any

import pytest

from olares_pack.charts import kube

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80}],
                     "resources": {"limits": {"cpu": "1", "memory": 100}}},
                    {"name": "b", "image": "busybox:1", "env": [{"name": "X", "value": "1"}]},
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
            },
        },
    },
}


def _strip(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip(v) for k, v in schema.items() if not (k == "additionalProperties" and v is False)}
    return [_strip(v) for v in schema] if isinstance(schema, list) else schema


def test_the_strict_schemas_only_add_no_unknown_fields() -> None:
    # what the walk relies on: an object the loose schema accepts breaks the strict one only there
    root = kube._schemas_root()
    strict = kube._schema_dir(kube.DEFAULT_KUBE_VERSION, True)
    loose = kube._schema_dir(kube.DEFAULT_KUBE_VERSION, False)
    for name in sorted(os.listdir(os.path.join(root, strict))):
        with open(os.path.join(root, strict, name)) as a, open(os.path.join(root, loose, name)) as b:
            assert _strip(json.load(a)) == _strip(json.load(b)), name


def _with_unknown_fields(rng: random.Random) -> dict[str, Any]:
    obj = copy.deepcopy(DEPLOYMENT)
    maps: list[dict[str, Any]] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            maps.append(node)
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    collect(obj)
    for _ in range(rng.choice([1, 1, 2, 3])):
        target = rng.choice(maps)
        items = list(target.items())
        items.insert(rng.randrange(len(items) + 1), (rng.choice(["zz", "aa", "strategy", "Extra", "1x"]),
                                                     rng.choice([1, "x", {"a": 1}, [1], None])))
        target.clear()
        target.update(items)
    return obj


@pytest.mark.parametrize("seed", range(40))
def test_unknown_fields_are_worded_as_the_python_validator_words_them(seed: int) -> None:
    version = kube.DEFAULT_KUBE_VERSION
    strict = kube._schema_dir(version, True)
    loose = kube._fast_validator(kube._schema_dir(version, False), "Deployment", "apps/v1")
    rng = random.Random(seed)
    # a field added to a map of strings (labels) breaks the loose schema too: not the case here
    obj = next(o for o in (_with_unknown_fields(rng) for _ in range(100)) if loose.is_valid(o))
    mine = kube._first_unknown_field(obj, strict, "Deployment", "apps/v1")
    python = kube._first_error(obj, version, strict=True)
    assert mine is None or mine == python
    if python is not None:
        assert kube.check(obj) == ("warning", f"{python} (the API server drops unknown fields)")
