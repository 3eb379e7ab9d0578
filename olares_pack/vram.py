"""The GPU memory budget of one llama-server (single GPU, everything offloaded), term by term.

Derived terms follow the model's architecture (shared docs, llama-server.md); the terms that
are calibrated on published measurements rather than derived are all in CALIBRATED, below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .gguf_meta import ModelMeta

MIB = 1024 * 1024

# Constants measured, not derived. Each says what it was calibrated on.
CALIBRATED: dict[str, tuple[float, str]] = {
    "compute_base_mib": (900.0, "compute buffers + CUDA context at -ub 512, from published Qwen3.6-27B boot logs"),
    "compute_bytes_per_token": (4.0, "growth of the compute buffers with the context (4 KiB per 1024 tokens)"),
    "mtp_overhead_mib": (600.0, "MTP draft context: compute, logits and graphs beyond its KV cache (boot logs)"),
    "auto_parallel": (4.0, "slots llama-server picks for -np -1 (auto)"),
    "tight_margin_mib": (2048.0, "headroom below which a chart is 'tight': llama.cpp's 1024 MiB --fit-target plus "
                                 "run-time allocator growth; placed between 1.0.5 (OOM at run time) and 1.0.9 (stable)"),
}

# Bytes per element of each KV cache type (block-quantized types carry their scales).
CACHE_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q5_1": 24 / 32, "q5_0": 22 / 32,
               "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32}
QUANTIZED_CACHE = {"q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"}
MTP_TYPES = {"mtp", "draft-mtp"}


@dataclass(frozen=True)
class Device:
    name: str
    total_mib: int
    reserve_mib: int  # desktop, display and driver

    @property
    def usable_mib(self) -> int:
        return self.total_mib - self.reserve_mib


DEVICES = {
    # RTX 5090 Laptop GPU as its driver reports it; a laptop keeps a desktop on the same GPU.
    "olares-one": Device("Olares One (RTX 5090 Laptop, 24 GB)", 24463, 300),
}


def device(name: str = "olares-one", gpu_mib: int | None = None, reserve_mib: int | None = None) -> Device:
    base = DEVICES.get(name)
    if base is None and gpu_mib is None:
        raise ValueError(f"unknown device {name!r} (known: {', '.join(DEVICES)}; or give --gpu-mib)")
    if gpu_mib is not None:
        return Device(f"{gpu_mib} MiB GPU", gpu_mib, reserve_mib if reserve_mib is not None else (base.reserve_mib if base else 300))
    assert base is not None
    return base if reserve_mib is None else Device(base.name, base.total_mib, reserve_mib)


@dataclass(frozen=True)
class Settings:
    """The llama-server arguments that move the budget."""

    ctx: int
    parallel: int = 1
    cache_k: str = "f16"
    cache_v: str = "f16"
    flash_attn: str = "auto"
    ubatch: int = 512
    gpu_layers: int | str = "all"
    spec_type: str | None = None
    draft_n_max: int = 3  # upstream default since PR #23269
    draft_cache_k: str = "f16"
    draft_cache_v: str = "f16"


@dataclass
class Term:
    name: str
    mib: float
    formula: str
    when: str = "boot"  # boot: allocated at start; run: grows while the context fills


@dataclass
class Estimate:
    settings: Settings
    device: Device
    terms: list[Term] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tight_margin_mib: float = CALIBRATED["tight_margin_mib"][0]

    @property
    def boot_mib(self) -> float:
        return sum(t.mib for t in self.terms if t.when == "boot")

    @property
    def total_mib(self) -> float:
        return sum(t.mib for t in self.terms)

    @property
    def headroom_mib(self) -> float:
        return self.device.usable_mib - self.total_mib

    @property
    def verdict(self) -> str:
        if self.headroom_mib < 0:
            return "does not fit"
        if self.headroom_mib < self.tight_margin_mib:
            return "tight"
        return "fits"

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": {"name": self.device.name, "total_mib": self.device.total_mib, "reserve_mib": self.device.reserve_mib},
            "settings": self.settings.__dict__,
            "terms": [t.__dict__ | {"mib": round(t.mib, 1)} for t in self.terms],
            "boot_mib": round(self.boot_mib, 1), "total_mib": round(self.total_mib, 1),
            "headroom_mib": round(self.headroom_mib, 1), "verdict": self.verdict, "notes": self.notes,
        }


def _b(t: str) -> float:
    return CACHE_BYTES[t]


def estimate(meta: ModelMeta, s: Settings, dev: Device) -> Estimate:
    est = Estimate(s, dev)
    ctx = s.ctx or meta.context_length
    np_ = int(CALIBRATED["auto_parallel"][0]) if s.parallel < 1 else s.parallel
    if s.ctx == 0:
        est.notes.append(f"--ctx-size 0: the trained context, {meta.context_length}")

    # 1. weights: every tensor but token_embd (llama.cpp keeps the embedding table in host memory)
    on_gpu = meta.tensor_bytes - meta.token_embd_bytes
    layers = meta.block_count if str(s.gpu_layers) in ("all", "auto") else min(int(s.gpu_layers), meta.block_count)
    if layers < meta.block_count:
        on_gpu = on_gpu * layers / meta.block_count
        est.notes.append(f"--n-gpu-layers {layers} of {meta.block_count}: weights scaled by layer count")
    est.terms.append(Term("weights", on_gpu / MIB, f"tensors {meta.tensor_bytes / MIB:.0f} MiB − token_embd {meta.token_embd_bytes / MIB:.0f} MiB"
                          + (f", × {layers}/{meta.block_count} layers" if layers < meta.block_count else "")))

    # 2. main KV cache: attention layers of the trunk (the MTP block is not part of it)
    attn = [i for i in range(meta.trunk_layers) if meta.has_attention(i)]
    per_tok = sum(meta.head_count_kv[i] * (meta.key_length * _b(s.cache_k) + meta.value_length * _b(s.cache_v)) for i in attn)
    est.terms.append(Term("KV cache", ctx * per_tok / MIB,
                          f"{ctx} × {len(attn)} attention layers × {meta.head_count_kv[attn[0]] if attn else 0} KV heads × "
                          f"({meta.key_length}·{_b(s.cache_k):g} + {meta.value_length}·{_b(s.cache_v):g}) B"
                          f" [{s.cache_k}/{s.cache_v}]"))

    # 3. recurrent state (hybrid layouts), per sequence, with MTP rollback copies
    mtp = (s.spec_type or "").split(",")[0] in MTP_TYPES and meta.nextn_predict_layers > 0
    if meta.recurrent_layers:
        per_seq = meta.recurrent_layers * ((meta.ssm_conv_kernel - 1) * (meta.ssm_inner_size + 2 * meta.ssm_group_count * meta.ssm_state_size)
                                           + meta.ssm_state_size * meta.ssm_inner_size) * 4
        copies = (1 + s.draft_n_max) if mtp else 1
        est.terms.append(Term("recurrent state", per_seq * np_ * copies / MIB,
                              f"{per_seq / MIB:.1f} MiB/sequence × {np_} slot(s)" + (f" × (1 + {s.draft_n_max}) MTP copies" if mtp else "")))
        if s.parallel < 1:
            est.notes.append(f"-np auto: {np_} slots, each with its own recurrent state")

    # 4. the MTP draft context: its own KV for the nextn layer(s) at the full context
    if mtp:
        nextn = range(meta.trunk_layers, meta.block_count)
        draft_kv = ctx * sum(meta.head_count_kv[i] * (meta.key_length * _b(s.draft_cache_k) + meta.value_length * _b(s.draft_cache_v)) for i in nextn)
        est.terms.append(Term("MTP draft KV", draft_kv / MIB, f"{ctx} × {len(nextn)} nextn layer(s) [{s.draft_cache_k}/{s.draft_cache_v}]"))
        est.terms.append(Term("MTP draft overhead", CALIBRATED["mtp_overhead_mib"][0], "calibrated: mtp_overhead_mib"))
    elif (s.spec_type or "none") in MTP_TYPES:
        est.notes.append("--spec-type mtp on a model without an MTP block: no draft context")

    # 5. compute buffers and CUDA context
    base = CALIBRATED["compute_base_mib"][0] * max(1.0, s.ubatch / 512)
    est.terms.append(Term("compute + CUDA context", base + CALIBRATED["compute_bytes_per_token"][0] * ctx / MIB,
                          f"calibrated: {base:.0f} MiB at -ub {s.ubatch} + 4 B × {ctx}"))

    # 6. flash-attention scratch for a quantized cache: grows as the context fills, not reserved at boot
    if s.flash_attn != "off" and (s.cache_k in QUANTIZED_CACHE or s.cache_v in QUANTIZED_CACHE) and attn:
        kv_heads = max(meta.head_count_kv[i] for i in attn)
        est.terms.append(Term("FA f16 scratch", ctx * kv_heads * (meta.key_length + meta.value_length) * 2 / MIB,
                              f"{ctx} × {kv_heads} × ({meta.key_length} + {meta.value_length}) × 2 B (one layer, dequantized K/V)", when="run"))
        est.notes.append("the FA scratch is not reserved at boot: a chart can boot, then run out of memory as the context fills")
    if meta.provenance != "gguf-header":
        est.notes.append(f"model numbers: {meta.provenance} ({meta.notes})" if meta.notes else f"model numbers: {meta.provenance}")
    return est


def largest_context(meta: ModelMeta, s: Settings, dev: Device, want: str = "fits", step: int = 1024) -> int:
    """The largest --ctx-size (a multiple of `step`, up to the trained context) whose verdict is
    `want` ("fits") or better; 0 when none is."""
    ok = {"fits"} if want == "fits" else {"fits", "tight"}
    hi = meta.context_length // step
    lo, best = 1, 0
    while lo <= hi:  # the budget grows with the context: bisect
        mid = (lo + hi) // 2
        if estimate(meta, Settings(**{**s.__dict__, "ctx": mid * step}), dev).verdict in ok:
            best, lo = mid * step, mid + 1
        else:
            hi = mid - 1
    return best


def gpu_request_mib(est: Estimate, granularity: int = 256) -> int:
    """The nvidia.com/gpumem request for an estimate: its full-context total, rounded up."""
    return int(math.ceil(est.total_mib / granularity) * granularity)


def vllm_budget(utilization: float, dev: Device, declared_mib: int | None) -> Estimate:
    """vLLM takes `--gpu-memory-utilization` of the memory it sees (the HAMi grant, when one is set)
    and its own profiler splits it between weights, activations and KV cache."""
    visible = min(dev.total_mib, declared_mib) if declared_mib else dev.total_mib
    est = Estimate(Settings(ctx=0), dev, tight_margin_mib=0)  # vLLM sizes its KV cache to what is left
    est.terms.append(Term("vLLM reservation", utilization * visible,
                          f"--gpu-memory-utilization {utilization:g} × {visible} MiB visible"))
    est.notes.append("vLLM's own profiler decides weights, activations and KV cache inside this reservation")
    if declared_mib and declared_mib > dev.total_mib:
        est.notes.append(f"declared GPU memory {declared_mib} MiB exceeds the device's {dev.total_mib} MiB")
    return est
