"""Synthetic GGUFs with the architecture of the example app's model, for measuring llama-server's
GPU memory without the hub (measurements/vram) and for the tests' small models (tests/tinyqwen.py,
tests/ggufrepo.py). Needs only gguf and numpy: the GPU jobs copy this file beside their scripts.

    python -m olares_pack.vram.synth OUT.gguf LAYERS [--no-mtp] [--accept zero|full|mix|mix80]

Qwen3.6-27B (GGUF architecture `qwen35`, a hybrid of gated delta-net and full attention every
4th layer, one MTP/NextN block) with the numbers of apps/llamacppqwen36mtpone/model.lock.json and
the model card (n_embd 5120, 24 query heads, 4 KV heads of 256, n_ff 17408, SSM state 128 with
16 key and 48 value heads, conv kernel 4, vocabulary 248,320), at LAYERS trunk layers instead of
64, plus the MTP block. Tensor names and shapes are those llama.cpp b11434 creates for the
architecture (src/models/qwen35.cpp, load_arch_tensors; names from src/llama-arch.cpp). Matrices
are Q4_K, the output Q6_K, norms and SSM vectors F32, so the weights term is known exactly from
the tensor table whatever the values. The tokenizer is a SentencePiece-style vocabulary of the
real size (byte tokens, so any text tokenizes); the measurements send token ids.

The values decide whether the MTP head's drafts are accepted (`--accept`):

- `zero`: every weight zero. Every logit ties; the main model and the draft break the tie on
  different tokens, so no draft is ever accepted.
- `full`: a cycle of 9 token classes (class = token id mod 9, CYCLES). `token_embd` is one-hot
  on the class's dimension; every trunk matrix stays zero, so the residual stream carries the
  embedding through the trunk unchanged; `output_norm` is 1 and the output row of token
  `cycle_token(c + 1)` reads dimension c, so after a token of class c the main model emits the
  next token of the cycle. The MTP block (llama.cpp graph_mtp: eh_proj over
  concat(enorm(embed(x_{p+1})), hnorm(h_p)), a zero-weight block, shared_head_norm, the same
  output) copies the embedding half through eh_proj, so it predicts the token after x_{p+1}:
  every draft is what the main model then emits.
- `mix`: as `full`, but eh_proj sends class 0 (WRONG) to another class, so one draft in
  every cycle is wrong and the chain stops there: for greedy requests the accepted share is
  2/3 at draft n 3 and 0.70 at n 5 (`accepted_share` simulates llama.cpp's draft-and-verify
  loop on the cycle), near the 0.64–0.80 recorded on the device.
- `mix80`: a cycle of 20 classes with two classes sent elsewhere (0 and 3): 0.80 accepted at
  draft n 5 and 0.78 at n 3, the top of the range recorded for 1.0.5, and the chains stop at
  varying lengths (2, 4 and 5 drafts accepted at n 5, where `mix` alternates 5 and 2), so the
  verification batches vary in size as they do on real text.
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
CYCLE_BASE, WRONG_SHIFT = 9000, 5
# per model: the cycle's length (CYCLE_BASE % length == 0: token t has class t % length) and the
# classes eh_proj sends elsewhere
CYCLES = {"zero": 9, "full": 9, "mix": 9, "mix80": 20}
WRONG = {"mix": (0,), "mix80": (0, 3)}
ACCEPT = tuple(CYCLES)


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


def cycle_token(c: int, accept: str = "full") -> int:
    """The token the main model emits after a token of class c - 1."""
    return CYCLE_BASE + c % CYCLES[accept]


def draft_class(c: int, accept: str) -> int:
    """The class eh_proj sends the embedding of a class-c token to."""
    return (c + WRONG_SHIFT) % CYCLES[accept] if c in WRONG.get(accept, ()) else c


def accepted_share(accept: str, n_max: int, start: int = 1, steps: int = 600) -> float:
    """Accepted drafts over drafted ones for greedy requests, by llama.cpp's loop (common/speculative.cpp,
    draft-mtp): from the last token x (class c) the head drafts n_max tokens in a chain, each from the
    one before; the target accepts the leading drafts it would have emitted itself and emits one more."""
    if accept == "zero":
        return 0.0
    n = CYCLES[accept]
    c, accepted = start % n, 0
    for _ in range(steps):
        x, a = c, 0
        for _ in range(n_max):
            d = (draft_class(x, accept) + 1) % n
            if d != (x + 1) % n:
                break
            a, x = a + 1, d
        accepted += a
        c = (c + a + 1) % n
    return accepted / (steps * n_max)


def _q4k_onehot(cols: list[int]) -> bytes:
    """One Q4_K block (256 values) that is 1.0 at cols and 0 elsewhere: d 1, dmin 0, every
    sub-block scale 1 and min 0, quant 1 at cols (ggml dequantize_row_q4_K)."""
    qs = bytearray(128)
    for p in cols:
        chunk, lane = divmod(p, 64)
        qs[32 * chunk + lane % 32] |= 1 << (4 if lane >= 32 else 0)
    scales = bytes([1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1])
    return np.float16(1.0).tobytes() + np.float16(0.0).tobytes() + scales + bytes(qs)


def _q6k_onehot(col: int) -> bytes:
    """One Q6_K block that is 1.0 at col and 0 elsewhere: d 1, scales 1, quant 32 (zero) everywhere
    but 33 at col (ggml dequantize_row_q6_K)."""
    ql, qh = bytearray(128), bytearray([0xAA] * 64)  # high bits 2 in every lane: q = 32
    half, r = divmod(col, 128)
    quarter, lane = divmod(r, 32)
    ql[64 * half + lane + (32 if quarter in (1, 3) else 0)] |= 1 << (4 if quarter >= 2 else 0)
    return bytes(ql) + bytes(qh) + bytes([1] * 16) + np.float16(1.0).tobytes()


def _values(name: str, shape: tuple[int, ...], data: np.ndarray, n_layer: int, accept: str) -> None:
    """Fill in the non-zero values of the `full` and `mix` models (see the module docstring)."""
    norms = ("output_norm.weight", f"blk.{n_layer}.nextn.enorm.weight", f"blk.{n_layer}.nextn.hnorm.weight",
             f"blk.{n_layer}.nextn.shared_head_norm.weight")
    n = CYCLES[accept]
    if name in norms:
        data[:] = 1.0
    elif name == "token_embd.weight":  # row t: one-hot at t % n
        blocks = np.frombuffer(b"".join(_q4k_onehot([c]) for c in range(n)), np.uint8).reshape(n, -1)
        rows = np.arange(shape[1]) % n
        data[:, :blocks.shape[1]] = blocks[rows]
    elif name == "output.weight":  # row cycle_token(c + 1) reads dimension c
        for c in range(n):
            row = np.frombuffer(_q6k_onehot(c), np.uint8)
            data[cycle_token(c + 1, accept), :row.size] = row
    elif name == f"blk.{n_layer}.nextn.eh_proj.weight":  # output row r sums the embedding-half inputs sent to r
        for r in range(n):
            cols = [c for c in range(n) if draft_class(c, accept) == r]
            if cols:
                row = np.frombuffer(_q4k_onehot(cols), np.uint8)
                data[r, :row.size] = row


def write(path: Path, n_layer: int, mtp: bool = True, accept: str = "zero") -> int:
    """Write the GGUF; returns the bytes of its tensors."""
    if accept not in ACCEPT:
        raise ValueError(f"accept: expected one of {', '.join(ACCEPT)}, got {accept!r}")
    if accept != "zero" and not mtp:
        raise ValueError("accept: full, mix and mix80 need the MTP block")
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
        if accept != "zero":
            _values(name, shape, data, n_layer, accept)
        if qtype == F32:
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
    ap.add_argument("--accept", choices=ACCEPT, default="zero", help="which drafts the MTP head gets accepted")
    args = ap.parse_args()
    total = write(args.out, args.layers, not args.no_mtp, args.accept)
    share = ", ".join(f"n {n}: {accepted_share(args.accept, n):.3f}" for n in (3, 5))
    print(f"{args.out}: {args.layers} trunk layers{'' if args.no_mtp else ' + 1 MTP block'}, "
          f"{total / 2**20:.1f} MiB of tensors, accepted share expected {share}")


if __name__ == "__main__":
    main()
