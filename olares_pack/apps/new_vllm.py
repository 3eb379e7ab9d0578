"""`olares-pack new --engine vllm`: a safetensors repository → a vLLM app sized for the GPU.

The architecture comes from the repository's config.json (the text model's, for a multimodal
one), the weights' bytes from the sizes of its *.safetensors files at the pinned commit. vLLM
sizes its KV cache itself inside `--gpu-memory-utilization` × the memory it sees (HAMi's grant,
`gpu_memory_mib`); what `new` derives is a grant and a utilization that hold the weights, one
sequence's KV cache at `--ctx` and vLLM's own overhead, within the device.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from olares_pack.common.errors import InputError
from olares_pack.remote import hub
from olares_pack.vram import estimate as vram

MIB = 2**20
# Not measured here (unlike llama.cpp's constants, measurements/vram): the CUDA context, vLLM's
# activation peak from its profiling run and its CUDA graphs, at max_num_seqs 1. An assumption.
OVERHEAD_MIB = 3072
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "half": 2}
UPSTREAM_IMAGE = ("docker.io/vllm/vllm-openai", "v0.34.0")  # vLLM's own image, the newest version of the flag table


@dataclass
class VllmEstimate:
    weights_bytes: int
    kv_bytes_per_token: int
    attention_layers: int
    ctx: int
    trained_ctx: int
    device: vram.Device
    notes: list[str] = field(default_factory=list)

    @property
    def needed_mib(self) -> float:
        return self.weights_bytes / MIB + self.ctx * self.kv_bytes_per_token / MIB + OVERHEAD_MIB

    def largest_ctx(self, step: int = 1024) -> int:
        room = (self.device.usable_mib - OVERHEAD_MIB) * MIB - self.weights_bytes
        if room <= 0 or not self.kv_bytes_per_token:
            return 0 if room <= 0 else self.trained_ctx
        return min(self.trained_ctx, int(room // self.kv_bytes_per_token) // step * step)

    def grant_mib(self) -> int:
        """nvidia.com/gpumem: the need, rounded up to 256 MiB."""
        return int(math.ceil(self.needed_mib / 256) * 256)

    def utilization(self) -> float:
        """vLLM's share of the grant: the need over the grant, rounded up to 0.01 (at most 1)."""
        return min(1.0, math.ceil(self.needed_mib / self.grant_mib() * 100) / 100)

    def to_dict(self) -> dict[str, Any]:
        return {"weights_mib": round(self.weights_bytes / MIB), "kv_mib": round(self.ctx * self.kv_bytes_per_token / MIB),
                "overhead_mib": OVERHEAD_MIB, "total_mib": round(self.needed_mib),
                "headroom_mib": round(self.device.usable_mib - self.needed_mib),
                "verdict": "fits" if self.needed_mib <= self.device.usable_mib else "does not fit",
                "largest_ctx": self.largest_ctx(), "gpu_memory_mib": self.grant_mib(),
                "gpu_memory_utilization": self.utilization(), "notes": self.notes}


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    inner = config.get("text_config")
    return {**config, **inner} if isinstance(inner, dict) else config


def estimate(config: dict[str, Any], weights_bytes: int, ctx: int | None, dev: vram.Device) -> VllmEstimate:
    c = text_config(config)
    try:
        layers = int(c["num_hidden_layers"])
        heads = int(c["num_attention_heads"])
        kv_heads = int(c.get("num_key_value_heads") or heads)
        head_dim = int(c.get("head_dim") or int(c["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"config.json: no {exc} for the architecture (num_hidden_layers, num_attention_heads, "
                         "hidden_size or head_dim)") from None
    notes = []
    types = c.get("layer_types")
    if isinstance(types, list) and types:
        attention = sum(1 for t in types if t == "full_attention")
        notes.append(f"{attention} of {layers} layers have a KV cache (layer_types); the linear-attention "
                     "layers' state is left to the overhead")
    elif c.get("full_attention_interval"):
        n = int(c["full_attention_interval"])
        attention = sum(1 for i in range(layers) if (i + 1) % n == 0)
        notes.append(f"{attention} of {layers} layers have a KV cache (full_attention_interval {n})")
    else:
        attention = layers
    dtype = str(c.get("torch_dtype") or c.get("dtype") or "bfloat16")
    per_token = attention * kv_heads * head_dim * 2 * DTYPE_BYTES.get(dtype, 2)
    trained = int(c.get("max_position_embeddings") or 0) or 32768
    want = ctx if ctx is not None else min(32768, trained)
    if want > trained:
        raise InputError(f"--ctx {want}: larger than the model's trained context, {trained} (max_position_embeddings)")
    notes.append(f"overhead {OVERHEAD_MIB} MiB assumed (CUDA context, activations, CUDA graphs): not measured")
    return VllmEstimate(weights_bytes, per_token, attention, want, trained, dev, notes)


@dataclass
class VllmPlan:
    name: str
    repo: str
    commit: str
    est: VllmEstimate
    card_files: tuple[str, ...]


def plan(name: str, repo: str, revision: str, ctx: int | None, dev: vram.Device,
         progress: Callable[[str], None]) -> tuple[VllmPlan, hub.ModelPin]:
    pin = hub.resolve_model(repo, revision)
    weights = [f for f in pin.files if f.path.endswith(".safetensors")]
    if not weights:
        raise InputError(f"{repo}@{pin.commit}: no *.safetensors file: vLLM needs the weights as safetensors "
                         "(a GGUF repository is for --engine llamacpp)")
    if pin.file("config.json") is None:
        raise InputError(f"{repo}@{pin.commit}: no config.json: the architecture is unknown")
    with hub.open_file(repo, "config.json", pin.commit) as f:
        raw = f.read()
    try:
        config = json.loads(raw)
    except ValueError as exc:
        raise InputError(f"{repo}/config.json@{pin.commit}: not JSON: {exc}") from None
    progress(f"{repo}@{pin.commit}: {len(weights)} safetensors file(s), {sum(w.size for w in weights) / 2**30:.2f} GiB; "
             f"config.json: {', '.join(text_config(config).get('architectures') or config.get('architectures') or ['?'])}")
    est = estimate(config, sum(w.size for w in weights), ctx, dev)
    return VllmPlan(name, repo, pin.commit, est, tuple(f.path for f in pin.files)), pin


def app_yaml(p: VllmPlan, pin: hub.ModelPin, card: dict[str, Any], image_repo: str, image_tag: str, digest: str,
             helpers: dict[str, tuple[str, str, str]] | None) -> str:
    from olares_pack.apps.new_llamacpp import (
        engine_form_lines,
        entrance_lines,
        gib_up,
        listing_lines,
        title_of,
        yaml_scalar,
    )

    e = p.est
    d = e.to_dict()
    title = title_of(p.repo)
    page = f"https://huggingface.co/{p.repo}"
    base_model = card.get("base_model")
    base_model = base_model[0] if isinstance(base_model, list) and base_model else base_model
    size = e.weights_bytes
    lines = [
        f"# {p.repo} with vLLM at a {e.ctx}-token context on {e.device.name}.",
        (f"# Written by `olares-pack new --engine vllm`: weights {d['weights_mib']} MiB + one sequence's KV cache "
         f"{d['kv_mib']} MiB + {OVERHEAD_MIB} MiB assumed overhead = {d['total_mib']} MiB."),
        f"name: {p.name}",
        "version: 1.0.0",
        f"title: {yaml_scalar(title)}",
        f"description: {yaml_scalar(f'{title} with vLLM at {e.ctx} context')}",
        "full_description: |",
        f"  **{title} on vLLM, {e.ctx}-token context**",
        "",
        f"  Serves {p.repo} ({size / 1e9:.2f} GB of safetensors)"
        + (f", from {base_model}," if isinstance(base_model, str) else "") + " with vLLM, one sequence at a time.",
        "",
        f"  - OpenAI-compatible API on port 8000, model name `{p.name}`",
        "",
        "  The model is downloaded into the shared Hugging Face store on first start.",
        *listing_lines(p.repo, page, "https://github.com/vllm-project/vllm", card),
    ]
    lines += [
        "targets: [current]",
        "",
        "engine:",
        "  kind: vllm",
        "  image:",
        f"    repository: {image_repo}",
        f"    tag: {yaml_scalar(image_tag)}",
        f"    digest: {digest}",
        *engine_form_lines(helpers),
        "",
        "model:",
        f"  repo: {p.repo}",
        f"  revision: {yaml_scalar(p.commit)}  # pinned: the commit `new` read (vLLM downloads the snapshot)",
        "",
        "server:",
        "  port: 8000",
        f"  alias: {p.name}",
        f"  max_model_len: {e.ctx}",
        "  # vLLM's share of the memory it sees (gpu_memory_mib below): the estimate over the grant;",
        "  # what the weights and overhead leave inside it becomes KV cache",
        f"  gpu_memory_utilization: {d['gpu_memory_utilization']}",
        "  max_num_seqs: 1",
        "",
        "resources:",
        "  cpu: {request: 4, limit: 16}",
        "  memory: {request: 16Gi, limit: 32Gi}",
        "  # the safetensors with a margin; the download lands in the shared store",
        f"  disk: {{request: {gib_up(int(size * 1.1)) + 1}Gi, limit: {2 * (gib_up(int(size * 1.1)) + 1)}Gi}}",
        f"  gpu_memory_mib: {d['gpu_memory_mib']}  # the estimate, {d['total_mib']} MiB, rounded up to 256 MiB",
        "",
        *entrance_lines(title),
        "  # the first start downloads the model and profiles the GPU: allow 40 minutes",
        "  startup: {initial_delay_seconds: 60, period_seconds: 15, failure_threshold: 160}",
        "  liveness: {initial_delay_seconds: 300, period_seconds: 30, failure_threshold: 5}",
        "",
    ]
    return "\n".join(lines)
