"""vLLM `serve`: typed settings to argv."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olares_pack.apps.manifest import VllmServer


def build_argv(s: VllmServer, model: str, *, download_dir: str | None, revision: str | None) -> list[str]:
    argv = ["serve", "--model", model] if s.model_flag else ["serve", model]
    if revision is not None:
        argv += ["--revision", revision]
    if s.alias:
        argv += ["--served-model-name", s.alias]
    argv += ["--host", s.host, "--port", str(s.port)]
    if download_dir is not None:
        argv += ["--download-dir", download_dir]
    for flag, value in (
        ("--max-model-len", s.max_model_len),
        ("--gpu-memory-utilization", s.gpu_memory_utilization),
        ("--max-num-seqs", s.max_num_seqs),
        ("--max-num-batched-tokens", s.max_num_batched_tokens),
        ("--quantization", s.quantization),
        ("--dtype", s.dtype),
        ("--kv-cache-dtype", s.kv_cache_dtype),
        ("--reasoning-parser", s.reasoning_parser),
        ("--tool-call-parser", s.tool_call_parser),
    ):
        if value is not None:
            argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if s.trust_remote_code:
        argv.append("--trust-remote-code")
    for flag, value in (
        ("prefix-caching", s.enable_prefix_caching),
        ("chunked-prefill", s.enable_chunked_prefill),
    ):
        if value is not None:
            argv.append(f"--enable-{flag}" if value else f"--no-enable-{flag}")
    if s.enable_auto_tool_choice:
        argv.append("--enable-auto-tool-choice")
    if s.speculative_config is not None:
        argv += ["--speculative-config", json.dumps(s.speculative_config, separators=(",", ":"))]
    return argv + list(s.extra_args)
