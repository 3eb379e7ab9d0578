"""A small GGUF of the example app's architecture (qwen35: gated delta-net with full attention
every 4th layer, one MTP block) whose MTP drafts the main model accepts: olares_pack/vram/synth.py's
`full`/`mix80` recipe at test dimensions (n_embd 256, 2 query and 1 KV head of 128, vocabulary
9,216), 4 trunk layers (1 layer has no attention layer, and llama.cpp aborts). About 5 MB: the
CPU engine answers 2,000 tokens in seconds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from olares_pack.rehearse.hub import write_small

SYNTH = Path(__file__).resolve().parent.parent / "olares_pack" / "vram" / "synth.py"


def write(path: Path, accept: str = "full", layers: int = 4) -> Path:
    return write_small(path, layers, accept)


def expected_share(accept: str, n_max: int) -> float:
    spec = importlib.util.spec_from_file_location("synth_share", SYNTH)
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    return synth.accepted_share(accept, n_max)
