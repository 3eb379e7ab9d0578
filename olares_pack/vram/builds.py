"""llama.cpp builds that allocate differently from the measured one, by a known upstream change.

The estimate's constants come from b11434. One change before it moves memory from run time to
boot, and a build from before it was measured (measurements/vram/runtime-b9294.raw.json;
docs/concepts/gpu-memory.md): ggml-org/llama.cpp PR #23907, "cuda: reserve space for quantize kv-cache at
startup". With flash attention and a quantized KV cache, CUDA converts the cache it attends over
to f16 first. b11434 reserves that copy at boot, for the whole context, in the flash-attention
node's own allocation (ggml/src/ggml-cuda/fattn-common.cuh,
`ggml_cuda_flash_attn_ext_get_f16_extra_data`), which is the compute-buffer term here. Before
the change, `launch_fattn` takes it from the CUDA memory pool (`ggml_cuda_pool_alloc<half>
K_f16(pool)`) at the size of the cells in use, and the pool keeps what it took, so the process
grows with the longest context it has served.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from olares_pack.engines import registry
from olares_pack.vram.fit import QUANTIZED

# the key of olares_pack/data/vram-fit.json that holds what the measured pre-#23907 build did
# (measurements/vram/fit.py fits it from measurements/vram/runtime-b9294.raw.json)
BEFORE = "before_pr23907"
PR = "PR #23907"
# The sdists read: b9294 (2026-05-23) takes the copy from the pool, b9538 (2026-06-07) and every
# later one reserve it.
LAST_WITHOUT, FIRST_WITH = ("9294", "2026-05-23"), ("9538", "2026-06-07")


@lru_cache(maxsize=1)
def _dates() -> dict[str, str]:
    """Known llama.cpp builds by name (commits, forks) with their dates (the flag registry's history)."""
    return {b: info["date"] for b, info in registry.builds("llamacpp").items() if "date" in info}


def predates_reserved_dequant(build: str | None) -> str | None:
    """'before' when the build takes flash attention's f16 copy of a quantized cache from the
    pool at run time, 'maybe' when it falls between the last build read without the change and
    the first with it, None when it has the change or is unknown. A bNNNN build is placed by its
    number, any other (a commit, a fork) by the date the history file gives it."""
    if not build:
        return None
    if m := re.fullmatch(r"b([0-9]+)", build):
        at: int | str = int(m.group(1))
        last, first = int(LAST_WITHOUT[0]), int(FIRST_WITH[0])
    elif (date := _dates().get(build)) is not None:
        at, last, first = date, LAST_WITHOUT[1], FIRST_WITH[1]
    else:
        return None
    return "before" if at <= last else "maybe" if at < first else None  # type: ignore[operator]


def pool_note(build: str | None, fit: dict[str, Any], *, flash_attn: bool, cache_k: str, cache_v: str) -> str | None:
    """What the estimate of a pre-#23907 build holds, and which of its figures were measured."""
    when = predates_reserved_dequant(build)
    if when is None or BEFORE not in fit or not flash_attn or not (cache_k in QUANTIZED or cache_v in QUANTIZED):
        return None
    b = fit[BEFORE]
    lo, hi = b["served_tokens_measured"]
    return (f"llama.cpp {build} {'predates' if when == 'before' else 'may predate'} upstream {PR} (the {cache_k}/{cache_v} cache's "
            f"f16 copy for flash attention reserved at boot): it takes that copy from the CUDA pool as the context fills, and "
            f"the pool keeps it. The pool term and the boot term are measured on {b['build']} (an upstream build before the change; "
            f"{'; '.join(b['shapes'])}; {b['residuals']['points']} requests, {lo:,} to {hi:,} tokens served; H200 with the device's free "
            f"memory left by a ballast)" + ("" if build == b["build"] else f"; {build} itself was not measured: its figures are "
                                             f"{b['build']}'s") + "; other shapes and longer contexts are extrapolated along the line")
