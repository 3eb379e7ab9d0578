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


def _differs(a: list[str], b: list[str], image: str = "ghcr.io/ggml-org/llama.cpp:server-cuda-b9101") -> bool:
    command = ["llama-server"] if "llama" in image else ["vllm", "serve", "org/model"]
    ca, cb = ({**_container(x), "image": image, "command": command} for x in (a, b))
    return bool(charts.compare_objects([_deployment(ca)], [_deployment(cb)]))


def test_a_switch_and_its_negation_keep_their_order() -> None:
    # llama-server applies them in argv order (handler_bool(params, is_positive)): the last wins
    assert _differs(["--port", "8080", "--mmap", "--no-mmap"], ["--no-mmap", "--port", "8080", "--mmap"])
    assert _differs(["-nkvo", "--kv-offload"], ["--kv-offload", "--no-kv-offload"])
    assert not _differs(["--no-mmap", "--port", "8080"], ["--port", "8080", "--no-mmap"])


def test_flags_that_append_to_one_list_keep_their_order() -> None:
    # --lora and --lora-scaled both push to params.lora_adapters: the adapter's index is its place
    assert _differs(["--lora", "a.gguf", "--lora-scaled", "b.gguf:0.5"], ["--lora-scaled", "b.gguf:0.5", "--lora", "a.gguf"])
    assert not _differs(["--lora", "a.gguf", "--port", "1"], ["--port", "1", "--lora", "a.gguf"])


def test_a_flag_that_takes_a_value_takes_the_next_word_as_llama_server_does() -> None:
    # `--alias --jinja --mlock`: the model is named "--jinja", --mlock is set and jinja is not
    assert _differs(["--alias", "--jinja", "--mlock"], ["--alias", "--mlock", "--jinja"])
    g = charts._argv_facts(_container(["--alias", "--jinja", "--mlock"]), {})["argv"]
    assert g["flags"] == {"--alias": [["--jinja"]], "--mlock": [[]]}


def test_an_equals_word_is_one_word_for_llama_server_and_a_flag_with_its_value_for_argparse() -> None:
    # llama-server's parser has no `--flag=value` form (an invalid argument); argparse reads it as `--flag value`
    assert _differs(["--port=8080"], ["--port", "8080"])
    vllm = "vllm/vllm-openai:v0.19.0"
    assert not _differs(["--port=8080"], ["--port", "8080"], image=vllm)
    assert _differs(["--max-model-len", "8192", "--", "x", "y"], ["--max-model-len", "8192", "--", "y", "x"], image=vllm)


def test_words_after_a_double_dash_are_positional_in_order() -> None:
    a = argv.group(["serve", "--port", "1", "--", "--model", "m"])
    b = argv.group(["serve", "--model", "m", "--port", "1"])
    assert a != b and a.as_dict()["flags"]["--"] == [["--model", "m"]]


def test_the_words_after_a_script_are_its_dollar_zero_and_arguments() -> None:
    # `sh -c 'exec vllm serve "$@"' -- MODEL --port 8000 --dtype auto`: `--` is $0, the flags reach argparse
    script = ["sh", "-c", 'exec vllm serve "$@"', "--", "org/model"]
    a = _deployment({"name": "s", "image": "vllm/vllm-openai:v0.19.0", "command": [*script, "--port", "8000", "--dtype", "auto"]})
    b = _deployment({"name": "s", "image": "vllm/vllm-openai:v0.19.0", "command": [*script, "--dtype", "auto", "--port", "8000"]})
    assert charts.compare_objects([a], [b]) == []


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
