"""Header-only GGUFs that declare the real architecture of the example model (Qwen3.6-27B, qwen35:
64 trunk layers, the tensor table of olares_pack/vram/synth.py) at a chosen quant type: metadata and
tensor table as gguf.GGUFWriter writes them, no tensor data. A few hundred KiB each, yet the
budget reads the same numbers from them as from the real multi-GB files (it reads only the header).
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from olares_pack.vram import synth

T = gguf.GGMLQuantizationType
QUANTS = {"Q2_K": (T.Q2_K, T.Q6_K), "Q3_K_M": (T.Q3_K, T.Q6_K), "Q4_K_M": (T.Q4_K, T.Q6_K),
          "Q5_K_M": (T.Q5_K, T.Q6_K), "Q6_K": (T.Q6_K, T.Q6_K), "Q8_0": (T.Q8_0, T.Q8_0)}
LAYERS = 64


def _writer(path: Path, mtp: bool) -> gguf.GGUFWriter:
    a = synth.ARCH
    w = gguf.GGUFWriter(str(path), a)
    w.add_block_count(LAYERS + (1 if mtp else 0))
    w.add_context_length(synth.N_CTX_TRAIN)
    w.add_embedding_length(synth.N_EMBD)
    w.add_feed_forward_length(synth.N_FF)
    w.add_head_count(synth.N_HEAD)
    w.add_head_count_kv(synth.N_HEAD_KV)
    w.add_key_length(synth.HEAD_DIM)
    w.add_value_length(synth.HEAD_DIM)
    w.add_uint32(f"{a}.full_attention_interval", 4)
    w.add_uint32(f"{a}.nextn_predict_layers", 1 if mtp else 0)
    w.add_uint32(f"{a}.ssm.conv_kernel", synth.SSM_CONV)
    w.add_uint32(f"{a}.ssm.state_size", synth.SSM_STATE)
    w.add_uint32(f"{a}.ssm.group_count", synth.SSM_K_HEADS)
    w.add_uint32(f"{a}.ssm.time_step_rank", synth.SSM_V_HEADS)
    w.add_uint32(f"{a}.ssm.inner_size", synth.SSM_STATE * synth.SSM_V_HEADS)
    w.add_uint32(f"{a}.vocab_size", synth.N_VOCAB)
    return w


def _table(quant: str, mtp: bool) -> list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]:
    matrix, output = QUANTS[quant]
    out = []
    for name, shape, qtype in synth.tensors(LAYERS, mtp):
        out.append((name, shape, matrix if qtype == synth.Q else output if qtype == synth.OUT else qtype))
    return out


def _close(w: gguf.GGUFWriter, table: list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]) -> None:
    for name, shape, qtype in table:
        w.add_tensor_info(name, tuple(reversed(shape)), np.dtype(np.float32), synth.nbytes(shape, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()


def write(path: Path, quant: str, mtp: bool = False) -> None:
    _close(_writer(path, mtp), _table(quant, mtp))


def write_split(paths: list[Path], quant: str, mtp: bool = False) -> None:
    """One model split in parts as gguf-split writes it: the metadata in the first part, the
    tensor table shared out, split.* keys in every part."""
    table = _table(quant, mtp)
    n = len(paths)
    share = -(-len(table) // n)
    for i, path in enumerate(paths):
        w = _writer(path, mtp) if i == 0 else gguf.GGUFWriter(str(path), synth.ARCH)
        w.add_uint16("split.no", i)
        w.add_uint16("split.count", n)
        w.add_int32("split.tensors.count", len(table))
        _close(w, table[i * share:(i + 1) * share])
