"""llama-server: typed settings to argv (long-form flags, every server-critical flag explicit)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olares_pack.apps.manifest import LlamaServer

# Index of the value following --n-gpu-layers in the argv built below: the chart swaps it for 0
# in cpu mode.
GPU_LAYERS_FLAG = "--n-gpu-layers"


def build_argv(s: LlamaServer, model_path: str) -> list[str]:
    argv = ["--model", model_path]
    if s.alias:
        argv += ["--alias", s.alias]
    # Host, port and slots are always explicit: their defaults changed upstream (127.0.0.1,
    # 8080 -> 9931, -np auto = 4 slots that multiply recurrent state).
    argv += ["--host", s.host, "--port", str(s.port), "--parallel", str(s.parallel)]
    argv += ["--ctx-size", str(s.ctx_size)]
    argv += [GPU_LAYERS_FLAG, str(s.gpu_layers)]
    argv += ["--flash-attn", s.flash_attn]
    argv += ["--cache-type-k", s.cache_type.k, "--cache-type-v", s.cache_type.v]
    if s.batch_size is not None:
        argv += ["--batch-size", str(s.batch_size)]
    if s.ubatch_size is not None:
        argv += ["--ubatch-size", str(s.ubatch_size)]
    if s.threads is not None:
        argv += ["--threads", str(s.threads)]
    if s.jinja is not None:
        argv.append("--jinja" if s.jinja else "--no-jinja")
    if s.speculative is not None:
        sp = s.speculative
        argv += ["--spec-type", sp.type]
        if sp.draft_n_max is not None:
            argv += ["--spec-draft-n-max", str(sp.draft_n_max)]
        if sp.draft_n_min is not None:
            argv += ["--spec-draft-n-min", str(sp.draft_n_min)]
        if sp.draft_p_min is not None:
            argv += ["--spec-draft-p-min", f"{sp.draft_p_min:g}"]
        if sp.draft_cache_type is not None:
            argv += ["--spec-draft-type-k", sp.draft_cache_type.k, "--spec-draft-type-v", sp.draft_cache_type.v]
    if s.chat_template_kwargs:
        argv += ["--chat-template-kwargs", json.dumps(s.chat_template_kwargs, separators=(", ", ": "))]
    return argv + list(s.extra_args)
