"""A small GGUF of the example app's architecture (qwen35: gated delta-net with full attention
every 4th layer, one MTP block) whose MTP drafts the main model accepts: olares_pack/vram/synth.py's
`full`/`mix80` recipe at test dimensions (n_embd 256, 2 query and 1 KV head of 128, vocabulary
9,216), 4 trunk layers (1 layer has no attention layer, and llama.cpp aborts). About 5 MB: the
CPU engine answers 2,000 tokens in seconds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SYNTH = Path(__file__).resolve().parent.parent / "olares_pack" / "vram" / "synth.py"
SMALL = {"N_EMBD": 256, "N_HEAD": 2, "N_HEAD_KV": 1, "HEAD_DIM": 128, "N_FF": 256, "SSM_STATE": 128,
         "SSM_K_HEADS": 1, "SSM_V_HEADS": 2, "N_VOCAB": 9216}


def write(path: Path, accept: str = "full", layers: int = 4) -> Path:
    spec = importlib.util.spec_from_file_location("synth_small", SYNTH)
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    for k, v in SMALL.items():  # the module reads its dimensions at call time
        setattr(synth, k, v)
    synth.write(path, layers, True, accept)
    return path


def expected_share(accept: str, n_max: int) -> float:
    spec = importlib.util.spec_from_file_location("synth_share", SYNTH)
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    return synth.accepted_share(accept, n_max)
