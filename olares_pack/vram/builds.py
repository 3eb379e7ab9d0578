"""llama.cpp builds that allocate differently from the measured one, by a known upstream change.

The estimate's constants come from b11434. One change before it moves memory from run time to
boot, and a build from before it was measured (bench/vram/runtime-b9294.raw.json, README "GPU
memory budget"): ggml-org/llama.cpp PR #23907, "cuda: reserve space for quantize kv-cache at
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
from dataclasses import dataclass
from functools import lru_cache

from olares_pack.engines import registry
from olares_pack.vram.fit import QUANTIZED


@dataclass(frozen=True)
class Measured:
    """What the build before the change did in bench/vram runtime.py's device-1.0.5-full-n5-graphs
    job (1.0.5's configuration, 64 layers, behind the ballast that leaves the Olares One's memory
    free). tests/test_vram.py recomputes every figure from bench/vram/runtime-b9294.raw.json."""

    build: str
    boot_mib: float
    peak_mib: float
    context_tokens: int  # the context in use at the peak
    free_mib: float  # what the ballast left free for llama-server

    @property
    def growth_mib(self) -> float:
        return self.peak_mib - self.boot_mib

    @property
    def left_mib(self) -> float:
        return self.free_mib - self.peak_mib


DEQUANT_IN_POOL = Measured(build="b9294", boot_mib=22600.0, peak_mib=24804.0, context_tokens=258000, free_mib=24988.0)
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


def run_time_warning(build: str | None, *, flash_attn: bool, cache_k: str, cache_v: str) -> str | None:
    """The warning for a chart whose build grows at run time where the measured one does not."""
    when = predates_reserved_dequant(build)
    if when is None or not flash_attn or not (cache_k in QUANTIZED or cache_v in QUANTIZED):
        return None
    m = DEQUANT_IN_POOL
    return (f"llama.cpp {build} {'predates' if when == 'before' else 'may predate'} upstream {PR} (quantized KV cache's "
            f"f16 copy for flash attention reserved at boot): before it the process grows with the context in use. "
            f"Measured on {m.build} with 1.0.5's configuration: +{m.growth_mib:,.0f} MiB from boot to "
            f"{m.context_tokens:,} tokens, {m.left_mib:,.0f} MiB left of the Olares One's memory, CUDA graphs on or off; "
            f"this estimate is b11434's, which reserves that copy at boot (README \"GPU memory budget\")")
