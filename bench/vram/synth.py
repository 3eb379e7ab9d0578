"""Synthetic GGUFs with the architecture of the example app's model, for measuring llama-server's
GPU memory without the hub.

    python bench/vram/synth.py OUT.gguf LAYERS [--no-mtp]

Qwen3.6-27B (GGUF architecture `qwen35`, a hybrid of gated delta-net and full attention every
4th layer, one MTP/NextN block) with the numbers of apps/llamacppqwen36mtpone/model.lock.json and
the model card (n_embd 5120, 24 query heads, 4 KV heads of 256, n_ff 17408, SSM state 128 with
16 key and 48 value heads, conv kernel 4, vocabulary 248,320), at LAYERS trunk layers instead of
64, plus the MTP block. Tensor names and shapes are those llama.cpp b11434 creates for the
architecture (src/models/qwen35.cpp, load_arch_tensors; names from src/llama-arch.cpp). Weights
are zeros: memory does not depend on their values. Matrices are Q4_K, the output Q6_K, norms
and SSM vectors F32, so the weights term is known exactly from the tensor table. The tokenizer
is a SentencePiece-style vocabulary of the real size (byte tokens, so any text tokenizes); the
measurements send token ids.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:  # on the GPU machine: the gguf-py of the llama.cpp sdist (PYTHONPATH)
    sys.exit("gguf is not importable: set PYTHONPATH to <sdist>/llama.cpp/gguf-py")

ARCH = "qwen35"
N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF = 5120, 24, 4, 256, 17408
SSM_STATE, SSM_K_HEADS, SSM_V_HEADS, SSM_CONV = 128, 16, 48, 4
N_VOCAB, N_CTX_TRAIN = 248320, 262144
Q, OUT, F32 = gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K, gguf.GGMLQuantizationType.F32


def tensors(n_layer: int, mtp: bool) -> list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]:
    """(name, llama.cpp shape ne0..neN, type) of every tensor."""
    key_dim, value_dim = SSM_STATE * SSM_K_HEADS, SSM_STATE * SSM_V_HEADS
    q_out, kv = HEAD_DIM * N_HEAD, HEAD_DIM * N_HEAD_KV
    out = [("token_embd.weight", (N_EMBD, N_VOCAB), Q), ("output_norm.weight", (N_EMBD,), F32),
           ("output.weight", (N_EMBD, N_VOCAB), OUT)]

    def attention(b: str) -> list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]:
        return [(f"{b}.attn_q.weight", (N_EMBD, q_out * 2), Q), (f"{b}.attn_k.weight", (N_EMBD, kv), Q),
                (f"{b}.attn_v.weight", (N_EMBD, kv), Q), (f"{b}.attn_output.weight", (q_out, N_EMBD), Q),
                (f"{b}.attn_q_norm.weight", (HEAD_DIM,), F32), (f"{b}.attn_k_norm.weight", (HEAD_DIM,), F32)]

    def common(b: str) -> list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]:
        return [(f"{b}.attn_norm.weight", (N_EMBD,), F32), (f"{b}.post_attention_norm.weight", (N_EMBD,), F32),
                (f"{b}.ffn_gate.weight", (N_EMBD, N_FF), Q), (f"{b}.ffn_up.weight", (N_EMBD, N_FF), Q),
                (f"{b}.ffn_down.weight", (N_FF, N_EMBD), Q)]

    for il in range(n_layer):
        b = f"blk.{il}"
        out += common(b)
        if (il + 1) % 4 == 0:  # full attention every 4th layer (full_attention_interval)
            out += attention(b)
        else:
            out += [(f"{b}.attn_qkv.weight", (N_EMBD, key_dim * 2 + value_dim), Q),
                    (f"{b}.attn_gate.weight", (N_EMBD, value_dim), Q),
                    (f"{b}.ssm_conv1d.weight", (SSM_CONV, key_dim * 2 + value_dim), F32),
                    (f"{b}.ssm_dt.bias", (SSM_V_HEADS,), F32), (f"{b}.ssm_a", (SSM_V_HEADS,), F32),
                    (f"{b}.ssm_beta.weight", (N_EMBD, SSM_V_HEADS), F32),
                    (f"{b}.ssm_alpha.weight", (N_EMBD, SSM_V_HEADS), F32),
                    (f"{b}.ssm_norm.weight", (SSM_STATE,), F32), (f"{b}.ssm_out.weight", (value_dim, N_EMBD), Q)]
    if mtp:
        b = f"blk.{n_layer}"
        out += common(b) + attention(b)
        out += [(f"{b}.nextn.eh_proj.weight", (2 * N_EMBD, N_EMBD), Q), (f"{b}.nextn.enorm.weight", (N_EMBD,), F32),
                (f"{b}.nextn.hnorm.weight", (N_EMBD,), F32), (f"{b}.nextn.shared_head_norm.weight", (N_EMBD,), F32)]
    return out


def nbytes(shape: tuple[int, ...], qtype: gguf.GGMLQuantizationType) -> int:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = int(np.prod(shape))
    return n // block * size


def write(path: Path, n_layer: int, mtp: bool = True) -> int:
    """Write the GGUF; returns the bytes of its tensors."""
    w = gguf.GGUFWriter(str(path), ARCH)
    n_all = n_layer + (1 if mtp else 0)
    w.add_block_count(n_all)
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10_000_000.0)
    w.add_uint32(f"{ARCH}.rope.dimension_count", 64)
    w.add_array(f"{ARCH}.rope.dimension_sections", [11, 11, 10, 0])
    w.add_uint32(f"{ARCH}.full_attention_interval", 4)
    w.add_uint32(f"{ARCH}.nextn_predict_layers", 1 if mtp else 0)
    w.add_uint32(f"{ARCH}.ssm.conv_kernel", SSM_CONV)
    w.add_uint32(f"{ARCH}.ssm.state_size", SSM_STATE)
    w.add_uint32(f"{ARCH}.ssm.group_count", SSM_K_HEADS)
    w.add_uint32(f"{ARCH}.ssm.time_step_rank", SSM_V_HEADS)
    w.add_uint32(f"{ARCH}.ssm.inner_size", SSM_STATE * SSM_V_HEADS)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    # a SentencePiece vocabulary of the real size: <unk> <s> </s>, the 256 byte tokens, fillers
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    types = [2, 3, 3] + [6] * 256
    tokens += [f"\u2581t{i}" for i in range(N_VOCAB - len(tokens))]
    types += [1] * (N_VOCAB - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * N_VOCAB)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    total = 0
    for name, shape, qtype in tensors(n_layer, mtp):
        size = nbytes(shape, qtype)
        total += size
        rows = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        data = np.zeros((rows, size // rows), dtype=np.uint8)
        if qtype == F32:
            data = np.zeros(tuple(reversed(shape)), dtype=np.float32)
            if name.endswith("ssm_a"):
                data -= 1.0  # A = -exp(A_log): negative, as a trained model has it
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("layers", type=int)
    ap.add_argument("--no-mtp", action="store_true")
    args = ap.parse_args()
    total = write(args.out, args.layers, not args.no_mtp)
    print(f"{args.out}: {args.layers} trunk layers{'' if args.no_mtp else ' + 1 MTP block'}, "
          f"{total / 2**20:.1f} MiB of tensors")


if __name__ == "__main__":
    main()
