"""The independent proof of `import --structured` (olares_pack/proof/): flags keep the words
written after them, and the proof shares no reading with the importer."""

from __future__ import annotations

import ast
from pathlib import Path

from olares_pack.proof import argv, charts

PROOF = Path(__file__).resolve().parents[1] / "olares_pack" / "proof"


def _container(args: list[str]) -> dict:
    return {"name": "server", "image": "ghcr.io/ggml-org/llama.cpp:server-cuda-b9101", "command": ["llama-server"], "args": args}


def _deployment(c: dict) -> dict:
    return {"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": {"spec": {"containers": [c]}}}}


def test_a_flag_that_loses_its_value_is_a_difference() -> None:
    # `-fa on` written by the maintainer; a render that moves `on` to the end is another argv
    # for llama-server (`-fa --mtp-head x`: the next flag read as -fa's value)
    original = _deployment(_container(["--port", "8080", "-fa", "on", "--mtp-head", "/m/x.gguf"]))
    moved = _deployment(_container(["--port", "8080", "-fa", "--mtp-head", "/m/x.gguf", "on"]))
    found = charts.compare_objects([original], [moved])
    assert [d.kind for d in found] == ["container.args"]


def test_aliases_resolve_through_the_build_table_and_order_of_flags_does_not_matter() -> None:
    a = _deployment(_container(["-c", "4096", "-fa", "on", "--port", "8080"]))
    b = _deployment(_container(["--port", "8080", "--flash-attn", "on", "--ctx-size", "4096"]))
    assert charts.compare_objects([a], [b]) == []


def test_repeated_flags_keep_their_order() -> None:
    g1 = argv.group(["--lora", "a", "--lora", "b"])
    g2 = argv.group(["--lora", "b", "--lora", "a"])
    assert g1 != g2


def test_a_script_is_compared_as_its_text() -> None:
    a = _deployment({"name": "s", "image": "x", "command": ["sh", "-c", 'exec llama-server --model "$MODELS_DIR/$F"']})
    b = _deployment({"name": "s", "image": "x", "command": ["sh", "-c", "exec llama-server --model /models/f.gguf"]})
    assert [d.kind for d in charts.compare_objects([a], [b])] == ["container.command"]


def test_the_envelope_form_is_compared_as_written() -> None:
    flat = {"spec": {"requiredCpu": "4", "requiredGpu": 1}}
    per_mode = {"spec": {"requiredCpu": "4", "accelerator": [{"mode": "nvidia", "requiredCpu": "4", "requiredGPUMemory": "1"}]}}
    diffs, _ = charts.compare_manifests(flat, per_mode)
    assert {d.kind for d in diffs} == {"manifest.envelope"}


def test_the_proof_does_not_import_the_importers_reading() -> None:
    shared = {"olares_pack.engines.normalize", "olares_pack.engines.detect", "olares_pack.equivalence", "olares_pack.importing"}
    for path in PROOF.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if any(n == s or n.startswith(s + ".") for s in shared)], path
