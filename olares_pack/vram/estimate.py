"""The GPU memory budget of one llama-server (single GPU, everything offloaded), term by term.

Weights, KV caches and recurrent state follow the model's architecture exactly (checked against
llama-server's own buffer report, measurements/vram/measurements.json). What llama.cpp allocates beyond
them (compute buffers, CUDA context, growth while the context fills) uses constants fitted from
those measurements (olares_pack/vram/fit.py, olares_pack/data/vram-fit.json): those, and only
those, are "calibrated". The rest are assumptions, each in ASSUMED with its source.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from olares_pack.vram import builds
from olares_pack.vram.fit import CACHE_BYTES, QUANTIZED, dequant_mib, kq_mib, mask_mib
from olares_pack.vram.gguf_meta import ModelMeta

MIB = 1024 * 1024


@lru_cache(maxsize=1)
def calibration() -> dict[str, Any]:
    """The fitted constants and the residuals of the fit (measurements/vram/fit.py writes the file)."""
    return json.loads(resources.files("olares_pack").joinpath("data/vram-fit.json").read_text())


def calibrated(name: str, fit: dict[str, Any] | None = None) -> float:
    return float((fit or calibration())["constants"][name])


# Not measured here: each says where it comes from.
ASSUMED: dict[str, tuple[float, str]] = {
    "auto_parallel": (4.0, "slots llama-server picks when --parallel is left on auto: ggml-org/llama.cpp "
                           "tools/server/server.cpp main(), 'setting n_parallel = 4 and kv_unified = true' (PR #16736)"),
    "other_gpu_context_mib": (256.0, "how far the CUDA context of a GPU other than the measured H200 may differ "
                                     "(driver 580, CUDA 13); added to the uncertainty, not to the total"),
    "runtime_requests": (1000.0, "requests a server answers between restarts, for the run-time growth term: "
                                 "an assumption, 100 times the longest measured sequence"),
    "runtime_tokens_per_request": (2000.0, "generated tokens per request, for the run-time growth term: as measured"),
}
# What neither the estimate nor its band holds, because nothing here measured it (named in every
# estimate for a GPU other than the measured one).
# Growth under memory pressure was measured (measurements/vram device-* runs: 64 MiB left free, no growth).
NOT_MEASURED = ("the chart's engine build where it is not the measured one", "sm_120 kernels against the measured sm_90",
                "the device's driver", "HAMi's own use of the GPU", "the desktop reserve (assumed, see the device)")
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
    # RTX 5090 Laptop GPU as its driver reports it; a laptop keeps a desktop on the same GPU. The
    # 300 MiB reserve for it is an assumption, not a measurement (--reserve-mib overrides it).
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
    uncertainty_pct: float = 0.0  # the fit's worst relative residual over the measurements
    extra_uncertainty_mib: float = 0.0  # what was not measured (another GPU's CUDA context)
    runtime_band_mib: float = 0.0  # the largest growth any measured run showed after its first request
    pool_band_mib: float = 0.0  # a pre-#23907 build: the worst residuals of its growth line and boot difference

    @property
    def boot_mib(self) -> float:
        return sum(t.mib for t in self.terms if t.when == "boot")

    @property
    def total_mib(self) -> float:
        return sum(t.mib for t in self.terms)

    @property
    def uncertainty_mib(self) -> float:
        return self.total_mib * self.uncertainty_pct / 100 + self.extra_uncertainty_mib + self.runtime_band_mib + self.pool_band_mib

    @property
    def headroom_mib(self) -> float:
        return self.device.usable_mib - self.total_mib

    @property
    def verdict(self) -> str:
        """`does not fit` when the estimate exceeds the device; `tight` when it fits but not by
        more than its uncertainty (the fit's worst residual, plus what was not measured)."""
        if self.headroom_mib < 0:
            return "does not fit"
        if self.headroom_mib < self.uncertainty_mib:
            return "tight"
        return "fits"

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": {"name": self.device.name, "total_mib": self.device.total_mib, "reserve_mib": self.device.reserve_mib},
            "settings": self.settings.__dict__,
            "terms": [t.__dict__ | {"mib": round(t.mib, 1)} for t in self.terms],
            "boot_mib": round(self.boot_mib, 1), "total_mib": round(self.total_mib, 1),
            "uncertainty_mib": round(self.uncertainty_mib, 1),
            "headroom_mib": round(self.headroom_mib, 1), "verdict": self.verdict, "notes": self.notes,
        }


def _b(t: str) -> float:
    return CACHE_BYTES[t]


@dataclass(frozen=True)
class _Run:
    """What every term of one estimate reads: the model, the settings, the fitted constants, and
    the shape they give (context, slots, MTP, flash attention, micro-batch, attention layers)."""

    meta: ModelMeta
    s: Settings
    fit: dict[str, Any]
    ctx: int
    np_: int  # slots
    per_slot: int  # context per slot
    auto_slots: bool
    mtp: bool
    fa: bool
    ub: int
    attn: list[int]  # attention layers of the trunk
    kv_heads: int
    filled: int | None = None  # KV cells a slot holds when the growth is read (None: its whole context)
    pool: str | None = None  # 'before'/'maybe': the build takes the f16 copy of a quantized cache from the pool (PR #23907)
    build: str | None = None

    def c(self, name: str) -> float:
        return calibrated(name, self.fit)


def _run(meta: ModelMeta, s: Settings, fit: dict[str, Any], filled: int | None = None, build: str | None = None) -> _Run:
    ctx = s.ctx or meta.context_length
    pool = None
    if s.flash_attn != "off" and (s.cache_k in QUANTIZED or s.cache_v in QUANTIZED) and builds.BEFORE in fit:
        pool = builds.predates_reserved_dequant(build)
    auto_slots = s.parallel < 1
    np_ = int(ASSUMED["auto_parallel"][0]) if auto_slots else s.parallel
    attn = [i for i in range(meta.trunk_layers) if meta.has_attention(i)]
    return _Run(meta, s, fit, ctx, np_, per_slot=ctx if auto_slots else ctx // np_,  # -np N splits the context; auto slots share one (kv_unified)
                auto_slots=auto_slots, mtp=(s.spec_type or "").split(",")[0] in MTP_TYPES and meta.nextn_predict_layers > 0,
                fa=s.flash_attn != "off", ub=s.ubatch, attn=attn,
                kv_heads=max((meta.head_count_kv[i] for i in attn), default=0), filled=filled, pool=pool, build=build)


def estimate(meta: ModelMeta, s: Settings, dev: Device, *, measured_gpu: bool = False, build: str | None = None,
             fit: dict[str, Any] | None = None, filled: int | None = None) -> Estimate:
    """`measured_gpu`: the device is the GPU the constants were measured on (no extra allowance).
    `build`: the llama.cpp build the chart runs, when known. `fit`: other constants than the
    committed ones (measurements/vram/fit.py tries the ones it is fitting). `filled`: the KV cells a slot
    holds when the growth is read (default: its whole context, the verdict's case); measurements/vram
    compares a run that filled part of its context with what it filled."""
    fit = fit or calibration()
    mode = "fa_off" if s.flash_attn == "off" else "fa_on"
    est = Estimate(s, dev, uncertainty_pct=fit["residuals"].get(mode, fit["residuals"])["worst_abs_pct"],
                   extra_uncertainty_mib=0.0 if measured_gpu else ASSUMED["other_gpu_context_mib"][0])
    if s.ctx == 0:
        est.notes.append(f"--ctx-size 0: the trained context, {meta.context_length}")
    run = _run(meta, s, fit, filled, build)
    for term in (_weights, _kv_cache, _recurrent_state, _compute_buffers, _mtp_draft, _cuda_context, _boot_before_reservation,
                 _growth_while_filling, _growth_in_pool, _growth_at_run_time):
        term(run, est)
    _notes(est, meta, fit, measured_gpu=measured_gpu, build=build)
    return est


def _weights(r: _Run, est: Estimate) -> None:
    """1. weights: token_embd stays in host memory; the MTP block is loaded only for MTP drafting."""
    meta, s = r.meta, r.s
    nextn = meta.nextn_bytes
    if meta.nextn_predict_layers and not nextn:
        nextn = int((meta.tensor_bytes - meta.token_embd_bytes) * meta.nextn_predict_layers / meta.block_count)
        est.notes.append("MTP block size not in the lock: taken as its share of the layers (re-lock from the GGUF header)")
    on_gpu = meta.tensor_bytes - meta.token_embd_bytes - (0 if r.mtp else nextn)
    layers = meta.block_count if str(s.gpu_layers) in ("all", "auto") else min(int(s.gpu_layers), meta.block_count)
    if layers < meta.block_count:
        on_gpu = on_gpu * layers / meta.block_count
        est.notes.append(f"--n-gpu-layers {layers} of {meta.block_count}: weights scaled by layer count")
    est.terms.append(Term("weights", on_gpu / MIB, f"tensors {meta.tensor_bytes / MIB:.0f} MiB − token_embd "
                          f"{meta.token_embd_bytes / MIB:.0f} MiB" + ("" if r.mtp or not nextn else f" − MTP block {nextn / MIB:.0f} MiB")
                          + (f", × {layers}/{meta.block_count} layers" if layers < meta.block_count else "")))


def _kv_cache(r: _Run, est: Estimate) -> None:
    """2. main KV cache: attention layers of the trunk."""
    meta, s = r.meta, r.s
    per_tok = sum(meta.head_count_kv[i] * (meta.key_length * _b(s.cache_k) + meta.value_length * _b(s.cache_v)) for i in r.attn)
    est.terms.append(Term("KV cache", r.ctx * per_tok / MIB,
                          f"{r.ctx} × {len(r.attn)} attention layers × {r.kv_heads} KV heads × "
                          f"({meta.key_length}·{_b(s.cache_k):g} + {meta.value_length}·{_b(s.cache_v):g}) B"
                          f" [{s.cache_k}/{s.cache_v}]"))


def _recurrent_state(r: _Run, est: Estimate) -> None:
    """3. recurrent state (hybrid layouts), per slot, with MTP rollback copies."""
    meta, s = r.meta, r.s
    if not meta.recurrent_layers:
        return
    per_seq = meta.recurrent_layers * ((meta.ssm_conv_kernel - 1) * (meta.ssm_inner_size + 2 * meta.ssm_group_count * meta.ssm_state_size)
                                       + meta.ssm_state_size * meta.ssm_inner_size) * 4
    copies = (1 + s.draft_n_max) if r.mtp else 1
    est.terms.append(Term("recurrent state", per_seq * r.np_ * copies / MIB,
                          f"{per_seq / MIB:.1f} MiB/slot × {r.np_} slot(s)" + (f" × (1 + {s.draft_n_max}) MTP copies" if r.mtp else "")))
    if r.auto_slots:
        est.notes.append(f"-np auto: {r.np_} slots, each with its own recurrent state")


def _compute_buffers(r: _Run, est: Estimate) -> None:
    """4. compute buffers (calibrated)."""
    meta, s, ub = r.meta, r.s, r.ub
    mask = mask_mib(r.per_slot, ub)
    if r.fa:
        base = r.c("compute_base_mib") + r.c("compute_per_ubatch_mib") * ub
        formula = f"mask {mask:.0f} + base {base:.0f} MiB at -ub {ub}"
        compute = mask + base
        if r.pool:
            formula += (f" (no f16 copy of the {s.cache_k}/{s.cache_v} cache reserved: {r.build} "
                        f"{'predates' if r.pool == 'before' else 'may predate'} {builds.PR}, see the pool term)")
        elif s.cache_k in QUANTIZED or s.cache_v in QUANTIZED:
            scratch = dequant_mib(r.ctx, r.kv_heads, meta.key_length, meta.value_length) + r.c("dequant_per_ubatch_mib") * ub
            if scratch > base:
                compute, formula = mask + scratch, f"mask {mask:.0f} + one layer's K/V dequantized to f16 {scratch:.0f} MiB"
    else:
        kq = kq_mib(meta.head_count, r.per_slot, ub)
        compute = kq + 2 * mask + r.c("nofa_per_ubatch_mib") * ub
        formula = f"f32 KQ {kq:.0f} + 2 × mask {mask:.0f} MiB (no flash attention)"
    est.terms.append(Term("compute buffers", compute, "calibrated: " + formula))


def _mtp_draft(r: _Run, est: Estimate) -> None:
    """5. the MTP draft context: its KV for the nextn layer(s) at the full context, its compute."""
    meta, s, ctx, ub = r.meta, r.s, r.ctx, r.ub
    if r.mtp:
        nextn_layers = range(meta.trunk_layers, meta.block_count)
        draft_kv = ctx * sum(meta.head_count_kv[i] * (meta.key_length * _b(s.draft_cache_k) + meta.value_length * _b(s.draft_cache_v))
                             for i in nextn_layers)
        est.terms.append(Term("MTP draft KV", draft_kv / MIB, f"{ctx} × {len(nextn_layers)} nextn layer(s) [{s.draft_cache_k}/{s.draft_cache_v}]"))
        draft = mask_mib(ctx, ub) + r.c("draft_per_ubatch_mib") * ub
        est.terms.append(Term("MTP draft compute", draft, f"calibrated: mask + {r.c('draft_per_ubatch_mib'):.3f} MiB × -ub {ub}"))
    elif (s.spec_type or "none") in MTP_TYPES:
        est.notes.append("--spec-type mtp on a model without an MTP block: no draft context")


def _cuda_context(r: _Run, est: Estimate) -> None:
    """6. CUDA context, cuBLAS and driver allocations (calibrated on the measured GPU)."""
    context = r.c("cuda_context_mib") + (r.c("mtp_context_mib") if r.mtp else 0.0)
    est.terms.append(Term("CUDA context", context, f"calibrated on {r.fit['gpu']}"))


def _growth_while_filling(r: _Run, est: Estimate) -> None:
    """7. growth after boot, while the context fills (calibrated). A pre-#23907 build's own
    growth line (the pool term) holds its first batches' workspaces too."""
    if r.pool:
        return
    growth = r.c("growth_base_mib") + r.c("growth_per_ubatch_mib") * r.ub + (r.c("mtp_growth_mib") if r.mtp else 0.0)
    note = "calibrated: workspaces allocated on the first batches"
    if not r.fa:
        growth += r.c("nofa_growth_of_kq") * kq_mib(r.meta.head_count, min(r.per_slot, r.filled or r.per_slot), r.ub)
        note += f", + {r.c('nofa_growth_of_kq'):.2f} × the KQ matrix without flash attention"
        est.notes.append("without flash attention the process grows after boot while the context fills")
    est.terms.append(Term("growth while filling", growth, note, when="run"))


def _before(r: _Run) -> dict[str, Any]:
    return r.fit[builds.BEFORE]


def _boot_before_reservation(r: _Run, est: Estimate) -> None:
    """6b. a pre-#23907 build: what its boot holds beyond the terms above (measured at the shapes
    the runs had; elsewhere taken as constant)."""
    if not r.pool:
        return
    b = _before(r)
    est.terms.append(Term(f"boot of a build before {builds.PR}", b["constants"]["boot_other_mib"],
                          f"measured on {b['build']}: its boot minus the terms above, median of {b['residuals']['runs']} runs "
                          f"at {'; '.join(b['shapes'])} (any other shape: extrapolated, the difference taken as constant)"))


def _growth_in_pool(r: _Run, est: Estimate) -> None:
    """7b. a pre-#23907 build: flash attention converts the quantized cache it attends over to
    f16 in the CUDA pool, at the size of the cells in use, and the pool keeps what it took; the
    process grows along a line in one layer's K/V in f16 at the longest context served, fitted
    on the measured build's requests."""
    if not r.pool:
        return
    b, meta = _before(r), r.meta
    served = min(r.per_slot, r.filled or r.per_slot)
    copy = dequant_mib(served, r.kv_heads, meta.key_length, meta.value_length)
    c = b["constants"]
    lo, hi = b["served_tokens_measured"]
    where = (f"measured from {lo:,} to {hi:,} tokens served" + ("" if served <= hi else f"; {served:,}: extrapolated"))
    when = "predates" if r.pool == "before" else "may predate"
    est.terms.append(Term(f"f16 copy in the CUDA pool ({r.build} {when} {builds.PR})", c["pool_base_mib"] + c["pool_copies"] * copy,
                          f"fitted on {b['build']}: {c['pool_base_mib']:g} + {c['pool_copies']:g} × one layer's K/V in f16 at "
                          f"{served:,} tokens ({copy:,.0f} MiB); {where}", when="run"))
    est.pool_band_mib = b["residuals"]["growth_worst_abs_mib"] + b["residuals"]["boot_worst_abs_mib"]


def _growth_at_run_time(r: _Run, est: Estimate) -> None:
    """8. growth at run time, request after request (calibrated on the run-time runs, which all
    drafted with MTP: the same slopes are used without it, where they can only overstate). Each
    slope alone accounts for the whole measured growth, so the term is the largest projection,
    not their sum."""
    if "runtime_mib_per_request" not in r.fit["constants"]:
        return
    s, mtp = r.s, r.mtp
    requests, tokens = ASSUMED["runtime_requests"][0], ASSUMED["runtime_tokens_per_request"][0]
    accepted = tokens * s.draft_n_max / (s.draft_n_max + 1) if mtp else 0.0  # every draft accepted: the most
    per_req, per_tok, per_acc = r.c("runtime_mib_per_request"), r.c("runtime_mib_per_1k_tokens"), r.c("runtime_mib_per_1k_accepted")
    est.terms.append(Term("growth at run time", requests * max(per_req, per_tok * tokens / 1000, per_acc * accepted / 1000),
                          f"calibrated: {requests:,.0f} requests × the largest of {per_req:g} MiB a request, "
                          f"{per_tok:g} MiB × {tokens / 1000:g}k tokens"
                          + (f", {per_acc:g} MiB × {accepted / 1000:.2f}k accepted drafts" if mtp else ""),
                          when="run"))
    est.runtime_band_mib = r.c("runtime_growth_max_mib")


def _notes(est: Estimate, meta: ModelMeta, fit: dict[str, Any], *, measured_gpu: bool, build: str | None) -> None:
    """What the estimate does not hold, and where it extrapolates."""
    if not measured_gpu:
        est.notes.append("not measured, in neither the total nor the band: " + "; ".join(NOT_MEASURED))
    if meta.provenance != "gguf-header":
        est.notes.append(f"model numbers: {meta.provenance} ({meta.notes})" if meta.notes else f"model numbers: {meta.provenance}")
    if build and build != fit["build"]:
        est.notes.append(f"measured on llama.cpp {fit['build']}; this chart runs {build}, whose allocations were not measured")
        s = est.settings
        if note := builds.pool_note(build, fit, flash_attn=s.flash_attn != "off", cache_k=s.cache_k, cache_v=s.cache_v):
            est.notes.append(note)
    measured_layers = fit.get("layers_measured", [])
    if measured_layers and meta.trunk_layers > max(measured_layers):
        held = fit["residuals"].get(f"held_out_{meta.trunk_layers}_layers")
        est.notes.append(f"extrapolated: {meta.trunk_layers} layers; compute and context were measured at "
                         f"{', '.join(map(str, measured_layers))} layers (they did not change with the layer count)"
                         + (f"; {held['runs']} run(s) at {meta.trunk_layers} layers, left out of those constants, are within "
                            f"{held['worst_abs_pct']:g} %" if held else ""))


def largest_context(meta: ModelMeta, s: Settings, dev: Device, want: str = "fits", step: int = 1024,
                    build: str | None = None) -> int:
    """The largest --ctx-size (a multiple of `step`, up to the trained context) whose verdict is
    `want` ("fits") or better on `build`; 0 when none is."""
    ok = {"fits"} if want == "fits" else {"fits", "tight"}
    hi = meta.context_length // step
    lo, best = 1, 0
    while lo <= hi:  # the budget grows with the context: bisect
        mid = (lo + hi) // 2
        if estimate(meta, Settings(**{**s.__dict__, "ctx": mid * step}), dev, build=build).verdict in ok:
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
    est = Estimate(Settings(ctx=0), dev)  # vLLM sizes its KV cache to what is left: no uncertainty band
    est.terms.append(Term("vLLM reservation", utilization * visible,
                          f"--gpu-memory-utilization {utilization:g} × {visible} MiB visible"))
    est.notes.append("vLLM's own profiler decides weights, activations and KV cache inside this reservation")
    if declared_mib and declared_mib > dev.total_mib:
        est.notes.append(f"declared GPU memory {declared_mib} MiB exceeds the device's {dev.total_mib} MiB")
    return est
