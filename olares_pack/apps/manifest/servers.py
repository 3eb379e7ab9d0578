"""The engines' server settings: llama-server and vLLM serve, as flags."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictInt,
    field_validator,
    model_validator,
)

from olares_pack.apps.manifest.base import Model_
from olares_pack.common.fields import (
    Count,
    Flag,
    Fraction,
    Port,
)

UPSTREAM_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
# upstream's types, or a fork's own (turbo3 …) that the fork registry lists, on an image not upstream's
# (engines/data/llamacpp-history.yaml `forks`); LlamaCppApp checks which.
CacheType = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,16}$")]
def fork_cache_types() -> tuple[str, ...]:
    from olares_pack.engines import registry

    return tuple(sorted({v for f in registry.forks("llamacpp").values() for flag in ("--cache-type-k", "--cache-type-v")
                         for v in f.values.get(flag, ())}))


class CacheTypes(Model_):
    k: CacheType = Field("f16", description="KV cache type of K (--cache-type-k)")
    v: CacheType = Field("f16", description="KV cache type of V (--cache-type-v)")

    @field_validator("k", "v")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in UPSTREAM_CACHE_TYPES and v not in fork_cache_types():
            raise ValueError(f"{v!r} is not a KV cache type: llama.cpp's {', '.join(UPSTREAM_CACHE_TYPES)}, or a "
                             f"fork's {', '.join(fork_cache_types())} (the fork registry)")
        return v


class Speculative(Model_):
    type: str = Field(pattern=r"^[a-z0-9-]+(,[a-z0-9-]+)*$", description="--spec-type, e.g. draft-mtp")
    draft_n_max: Count | None = Field(None, description="--spec-draft-n-max")
    draft_n_min: Count | None = Field(None, description="--spec-draft-n-min")
    draft_p_min: Fraction | None = Field(None, description="--spec-draft-p-min")
    draft_cache_type: CacheTypes | None = Field(None, description="KV cache types of the draft context")

    @model_validator(mode="after")
    def _min_le_max(self) -> Speculative:
        if self.draft_n_min is not None and self.draft_n_max is not None and self.draft_n_min > self.draft_n_max:
            raise ValueError("draft_n_min must be <= draft_n_max")
        return self


def _on_off(v: Any) -> Any:
    # YAML 1.1 readers turn `on`/`off` into booleans; accept both spellings.
    if v is True:
        return "on"
    if v is False:
        return "off"
    return v


class _ExtraArgs(Model_):
    extra_args: list[str] = Field(default_factory=list, description="passed through verbatim, after the typed flags")

    @field_validator("extra_args", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        # `--threads 16` written as a YAML list gives an int; argv items are strings.
        if isinstance(v, list):
            return [str(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else a for a in v]
        return v


class LlamaServer(_ExtraArgs):
    """llama-server settings rendered to long-form flags (see engines/llamacpp.py)."""

    port: Port = Field(8000, description="--port: the port the engine listens on")
    host: str = Field("0.0.0.0", description="--host")
    alias: str | None = Field(None, description="--alias: the model name the API answers to")
    ctx_size: Annotated[Count, Field(description="--ctx-size; 0 = the model's trained context")]
    parallel: Annotated[StrictInt, Field(ge=1, le=1024, description="--parallel (slots)")] = 1
    gpu_layers: Annotated[StrictInt, Field(ge=0, le=100000)] | Literal["auto", "all"] = Field("all", description="--n-gpu-layers: a number, all or auto")
    flash_attn: Literal["on", "off", "auto"] = Field("on", description="--flash-attn: on, off or auto")
    cache_type: CacheTypes = Field(description="KV cache types (--cache-type-k, --cache-type-v)", default_factory=CacheTypes)
    batch_size: Annotated[Count, Field(ge=1)] | None = Field(None, description="--batch-size")
    ubatch_size: Annotated[Count, Field(ge=1)] | None = Field(None, description="--ubatch-size")
    threads: Annotated[StrictInt, Field(ge=-1, le=4096)] | None = Field(None, description="--threads")
    jinja: Flag | None = Field(None, description="--jinja (true) or --no-jinja (false); absent: the build's default")
    speculative: Speculative | None = Field(None, description="speculative decoding (--spec-type and its draft settings)")
    chat_template_kwargs: dict[str, Any] = Field(description="--chat-template-kwargs, rendered as JSON", default_factory=dict)
    # An imported chart that does not state a flag leaves it to the build's default: rendering it
    # would start another process. Its typed value is then olares-pack's reading of that default.
    unset: list[Literal["--host", "--port", "--parallel", "--ctx-size", "--n-gpu-layers", "--flash-attn", "--cache-type-k",
                        "--cache-type-v"]] | None = Field(
        None, description="flags left to the engine build's default and not rendered (an imported chart that does not state them); their typed values are olares-pack's reading of that default")

    _fa = field_validator("flash_attn", mode="before")(classmethod(lambda cls, v: _on_off(v)))


class VllmServer(_ExtraArgs):
    """vLLM `serve` settings rendered to long-form flags (see engines/vllm.py)."""

    port: Port = Field(8000, description="--port")
    host: str = Field("0.0.0.0", description="--host")
    alias: str | None = Field(default=None, description="--served-model-name")
    model_flag: Flag | None = Field(None, description="true: the model is named as `serve --model REPO`, as an imported chart writes it; absent: `serve REPO`")
    max_model_len: Annotated[Count, Field(ge=1)] | None = Field(None, description="--max-model-len: the context")
    gpu_memory_utilization: Annotated[Fraction, Field(gt=0)] | None = Field(None, description="--gpu-memory-utilization: the share of the visible GPU memory vLLM takes")
    max_num_seqs: Annotated[Count, Field(ge=1)] | None = Field(None, description="--max-num-seqs")
    max_num_batched_tokens: Annotated[Count, Field(ge=1)] | None = Field(None, description="--max-num-batched-tokens")
    dtype: str | None = Field(None, description="--dtype")
    quantization: str | None = Field(None, description="--quantization")
    kv_cache_dtype: str | None = Field(None, description="--kv-cache-dtype")
    speculative_config: dict[str, Any] | None = Field(None, description="--speculative-config, a mapping rendered as JSON")
    trust_remote_code: Flag = Field(False, description="--trust-remote-code")
    enable_prefix_caching: Flag | None = Field(None, description="--enable-prefix-caching (true) or --no-enable-prefix-caching (false)")
    enable_chunked_prefill: Flag | None = Field(None, description="--enable-chunked-prefill (true) or --no-enable-chunked-prefill (false)")
    enable_auto_tool_choice: Flag = Field(False, description="--enable-auto-tool-choice")
    reasoning_parser: str | None = Field(None, description="--reasoning-parser")
    tool_call_parser: str | None = Field(None, description="--tool-call-parser")


# The model-serving helper of the official catalogue's LLM apps (beclab/apps llamacppllmbasev3
# templates/llm-init.yaml, 1.2.33): the newest tag an official chart runs.
