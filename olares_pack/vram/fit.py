"""The estimator's fitted constants, computed from GPU measurements (measurements/vram/measurements.json).

The shapes come from llama.cpp b11434 (derived, exact where the buffers are: weights, KV cache,
recurrent state, the MTP draft's KV); what llama.cpp allocates beyond them is fitted here, each
constant from the measurements that isolate it:

- `cuda_context_mib`: the process's GPU memory at boot minus every CUDA buffer llama-server
  reports (CUDA context, cuBLAS and driver allocations); `mtp_context_mib` what MTP adds to it.
- compute buffer with flash attention: the KQ mask (ctx per slot x ubatch x 2 B) plus the larger
  of a base (`compute_base_mib + compute_per_ubatch_mib x ubatch`, fitted on f16 caches) and, for
  a quantized cache, one layer's K and V dequantized to f16 at the full context plus
  `dequant_per_ubatch_mib x ubatch`;
- compute buffer without flash attention: the f32 KQ matrix (heads x ctx per slot x ubatch x 4 B)
  plus twice the mask plus `nofa_per_ubatch_mib x ubatch`;
- the MTP draft context's compute: its mask plus `draft_per_ubatch_mib x ubatch`;
- growth after boot, while the context fills: `growth_base_mib + growth_per_ubatch_mib x ubatch`
  (+ `mtp_growth_mib`) with flash attention, plus `nofa_growth_of_kq` x the KQ matrix without,
  the KQ matrix over the tokens the run actually filled (`filled_per_slot`: one run filled 65,536
  of 131,072 tokens, and its growth is half the full context's);
- growth at run time, after the first request (the run-time population: sequences of requests
  with long generations and accepted MTP drafts, measurements/vram/runtime.py): MiB per request, per
  1,000 generated tokens and per 1,000 accepted drafts, each a least-squares slope through the
  origin over every later request of every run, and `runtime_growth_max_mib`, the largest
  growth any run showed after its first request.

The boot-and-fill constants come from the runs that boot and fill once (population "boot and
fill"); the run-time constants from the run-time runs alone.

Every constant is a least-squares line or a median of the isolating measurements, so
`fit(measurements)` is the whole story; tests/test_vram.py re-runs it against the committed
olares_pack/data/vram-fit.json.
"""

from __future__ import annotations

import statistics
from typing import Any

MIB = 1024 * 1024
QUANTIZED = {"q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"}
CACHE_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q5_1": 24 / 32, "q5_0": 22 / 32,
               "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32}


def mask_mib(ctx_seq: int, ubatch: int) -> float:
    return ctx_seq * ubatch * 2 / MIB


def dequant_mib(ctx: int, kv_heads: int, key_length: int, value_length: int) -> float:
    return ctx * kv_heads * (key_length + value_length) * 2 / MIB


def kq_mib(heads: int, ctx_seq: int, ubatch: int) -> float:
    return heads * ctx_seq * ubatch * 4 / MIB


def line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares intercept and slope."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - slope * mx, slope


BOOT_FILL, RUN_TIME = "boot and fill", "run time"


def runtime_points(e: dict[str, Any]) -> list[tuple[float, float, float, float]]:
    """(requests, generated tokens, accepted drafts, growth MiB) since the end of a run-time run's
    first request, at every later request: its growth is the larger of its peak and the memory
    after it, against the memory after the first request (which holds the fill growth)."""
    reqs = e["run_time"]["requests"]
    if len(reqs) < 2:
        return []
    base, out, tokens, accepted = reqs[0]["after_mib"], [], 0.0, 0.0
    for i, q in enumerate(reqs[1:], start=1):
        tokens += q["tokens_predicted"]
        accepted += q["draft_n_accepted"]
        out.append((float(i), tokens, accepted, max(q["peak_mib"], q["after_mib"]) - base))
    return out


def through_origin(xs: list[float], ys: list[float]) -> float:
    sxx = sum(x * x for x in xs)
    return sum(x * y for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


def runtime_fit(entries: list[dict[str, Any]]) -> dict[str, float]:
    points = [p for e in entries if e.get("population") == RUN_TIME for p in runtime_points(e)]
    if not points:
        return {}
    growth = [p[3] for p in points]
    return {"runtime_mib_per_request": through_origin([p[0] for p in points], growth),
            "runtime_mib_per_1k_tokens": through_origin([p[1] / 1000 for p in points], growth),
            "runtime_mib_per_1k_accepted": through_origin([p[2] / 1000 for p in points], growth),
            "runtime_growth_max_mib": max(growth)}


def ctx_seq(cfg: dict[str, Any]) -> int:
    """Context per slot: with -np N given, llama-server splits the context (kv_unified false)."""
    return cfg["ctx"] // max(1, cfg["parallel"])


KV_PAD = 256  # llama.cpp attends over the used KV cells rounded up to 256 (src/llama-kv-cache.cpp, llama_kv_cache::get_n_kv)


def filled_per_slot(e: dict[str, Any]) -> int:
    """The KV cells a run's slot attended over at its fullest: the tokens it filled, rounded up to
    the padding, at most the slot's context."""
    cfg = e["config"]
    filled = -(-e["fill_tokens"] // max(1, cfg["parallel"]) // KV_PAD) * KV_PAD
    return min(ctx_seq(cfg), filled)


def fit(entries: list[dict[str, Any]]) -> dict[str, float]:
    """The constants, from entries of measurements/vram/measurements.json (each with config, model,
    terms and the measured boot and peak)."""
    c: dict[str, float] = runtime_fit(entries)
    ok = [e for e in entries if "measured_mib" in e and e.get("population", BOOT_FILL) == BOOT_FILL]
    reported = [e for e in ok if e["terms"].get("source") == "buffers"]
    plain = [e for e in reported if not e["config"]["draft_n"]]
    mtp = [e for e in reported if e["config"]["draft_n"]]
    c["cuda_context_mib"] = statistics.median(e["boot_mib"] - e["terms"]["cuda_buffers_mib"] for e in plain)
    c["mtp_context_mib"] = statistics.median(e["boot_mib"] - e["terms"]["cuda_buffers_mib"] - c["cuda_context_mib"] for e in mtp)

    def compute(e: dict[str, Any]) -> float:  # reported, or what the boot figure leaves for it
        t = e["terms"]
        if "compute_mib" in t:
            return t["compute_mib"]
        return e["boot_mib"] - c["cuda_context_mib"] - t["weights_mib"] - t["kv_mib"] - t["rs_mib"]

    fa = [e for e in ok if e["config"]["fa"] == "on" and not e["config"]["draft_n"]]
    f16 = [e for e in fa if e["config"]["cache"] == "f16"]
    c["compute_base_mib"], c["compute_per_ubatch_mib"] = line(
        [e["config"]["ubatch"] for e in f16], [compute(e) - mask_mib(ctx_seq(e["config"]), e["config"]["ubatch"]) for e in f16])

    def base(ub: int) -> float:
        return c["compute_base_mib"] + c["compute_per_ubatch_mib"] * ub

    extra = []
    for e in fa:
        cfg, m = e["config"], e["model"]
        if cfg["cache"] in QUANTIZED:
            scratch = dequant_mib(cfg["ctx"], max(m["head_count_kv"]), m["key_length"], m["value_length"])
            rest = compute(e) - mask_mib(ctx_seq(cfg), cfg["ubatch"]) - scratch
            if rest > base(cfg["ubatch"]) - scratch + 16:  # the dequantized K/V, not the base, set the peak
                extra.append(rest / cfg["ubatch"])
    c["dequant_per_ubatch_mib"] = statistics.median(extra)
    nofa = [e for e in ok if e["config"]["fa"] == "off"]
    c["nofa_per_ubatch_mib"] = statistics.median(
        (compute(e) - kq_mib(e["model"]["head_count"], ctx_seq(e["config"]), e["config"]["ubatch"])
         - 2 * mask_mib(ctx_seq(e["config"]), e["config"]["ubatch"])) / e["config"]["ubatch"] for e in nofa)
    c["draft_per_ubatch_mib"] = statistics.median(
        (e["terms"]["draft_compute_mib"] - mask_mib(e["config"]["ctx"], e["config"]["ubatch"])) / e["config"]["ubatch"] for e in mtp)
    c["growth_base_mib"], c["growth_per_ubatch_mib"] = line(
        [e["config"]["ubatch"] for e in fa], [e["measured_mib"] - e["boot_mib"] for e in fa])

    def growth(ub: int) -> float:
        return c["growth_base_mib"] + c["growth_per_ubatch_mib"] * ub

    mtp_fa = [e for e in ok if e["config"]["draft_n"]]
    c["mtp_growth_mib"] = statistics.median(e["measured_mib"] - e["boot_mib"] - growth(e["config"]["ubatch"]) for e in mtp_fa)
    c["nofa_growth_of_kq"] = statistics.median(
        (e["measured_mib"] - e["boot_mib"] - growth(e["config"]["ubatch"]))
        / kq_mib(e["model"]["head_count"], filled_per_slot(e), e["config"]["ubatch"]) for e in nofa)
    return {k: round(v, 4) for k, v in sorted(c.items())}


# ---- builds before llama.cpp PR #23907 (the f16 copy of a quantized cache taken from the CUDA pool)


def pool_points(raw: dict[str, Any], kv_heads: int, key_length: int, value_length: int) -> list[tuple[float, float, int]]:
    """(one layer's K/V in f16 over the longest context served so far, growth since boot, that
    context) at every answered request of one run of a pre-#23907 build: its peak against its
    boot. The context served is the prompt plus what was generated, padded like llama.cpp pads
    the cells it attends over; a request cut short by a crash holds no point."""
    out, longest = [], 0
    for q in raw["requests"]:
        if q.get("error"):
            continue
        served = -(-(q["prompt_tokens"] + q["tokens_predicted"]) // KV_PAD) * KV_PAD
        longest = max(longest, served)
        out.append((dequant_mib(longest, kv_heads, key_length, value_length), q["peak_mib"] - raw["boot_mib"], longest))
    return out


def pool_fit(runs: list[tuple[float, float, list[tuple[float, float, int]]]]) -> dict[str, Any]:
    """The growth of a pre-#23907 build with flash attention and a quantized cache, from its runs:
    (measured boot, the estimate's boot for that build without its own boot difference, points of
    `pool_points`). `pool_copies` (slope) and `pool_base_mib` (intercept): the growth from boot as
    a line in one layer's K/V dequantized to f16 at the context served; `boot_other_mib`: the
    median of what the build's boot holds beyond the estimate's boot terms (compute buffers
    without the reserved copy). The worst residuals say how well one line holds every point."""
    points = [p for _, _, pts in runs for p in pts]
    base, copies = line([p[0] for p in points], [p[1] for p in points])
    other = statistics.median(boot - est for boot, est, _ in runs)
    return {"constants": {"boot_other_mib": round(other, 2), "pool_base_mib": round(base, 2), "pool_copies": round(copies, 4)},
            "residuals": {"points": len(points), "runs": len(runs),
                          "growth_worst_abs_mib": round(max(abs(base + copies * x - y) for x, y, _ in points), 1),
                          "boot_worst_abs_mib": round(max(abs(boot - est - other) for boot, est, _ in runs), 1)},
            "served_tokens_measured": [min(p[2] for p in points), max(p[2] for p in points)]}
