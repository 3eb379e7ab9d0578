"""What the GPU runs on synthetic models (measurements/vram) mean to the estimator: the synthetic
model's numbers, a run's settings, and the build before llama.cpp PR #23907 fitted from its runs.

measurements/vram/fit.py writes olares_pack/data/vram-fit.json with these; tests/test_vram.py
re-derives the committed file's parts from the same committed runs.
"""

from __future__ import annotations

from typing import Any

from olares_pack.vram import builds, synth
from olares_pack.vram import estimate as vram
from olares_pack.vram import fit as vramfit
from olares_pack.vram.gguf_meta import ModelMeta

# where the committed runs live in the repository, as vram-fit.json names them
MEASURED = "measurements/vram/measurements.json (measurements/vram/fit.py)"
BEFORE_MEASURED = "measurements/vram/runtime-b9294.raw.json (measurements/vram/fit.py)"
H200 = vram.Device("H200", 143771, 0)


def synthetic_meta(layers: int) -> ModelMeta:
    """The numbers of the synthetic GGUF (olares_pack/vram/synth.py), from its tensor table."""
    tensors = synth.tensors(layers, True)
    sizes = {name: synth.nbytes(shape, q) for name, shape, q in tensors}
    return ModelMeta(
        arch="qwen35", block_count=layers + 1, embedding_length=synth.N_EMBD, head_count=synth.N_HEAD,
        head_count_kv=[synth.N_HEAD_KV] * (layers + 1), key_length=synth.HEAD_DIM, value_length=synth.HEAD_DIM,
        context_length=synth.N_CTX_TRAIN, vocab_size=synth.N_VOCAB, nextn_predict_layers=1, full_attention_interval=4,
        ssm_conv_kernel=synth.SSM_CONV, ssm_state_size=synth.SSM_STATE, ssm_group_count=synth.SSM_K_HEADS,
        ssm_inner_size=synth.SSM_STATE * synth.SSM_V_HEADS, tensor_bytes=sum(sizes.values()),
        token_embd_bytes=sizes["token_embd.weight"],
        nextn_bytes=sum(n for name, n in sizes.items() if name.startswith(f"blk.{layers}.")),
        file=f"qwen35-{layers}L-mtp.gguf", provenance="gguf-header")


def settings(cfg: dict[str, Any]) -> vram.Settings:
    """The estimator's settings of a measured run's configuration."""
    return vram.Settings(ctx=cfg["ctx"], parallel=cfg["parallel"], cache_k=cfg["cache"], cache_v=cfg["cache"],
                         flash_attn=cfg["fa"], ubatch=cfg["ubatch"],
                         spec_type="draft-mtp" if cfg["draft_n"] else None, draft_n_max=cfg["draft_n"] or 3)


def shape(cfg: dict[str, Any]) -> str:
    return (f"{cfg['ctx']:,} tokens, {cfg['cache']}/{cfg['cache']} cache, flash attention {cfg['fa']}, -ub {cfg['ubatch']}, "
            f"{cfg['parallel']} slot(s), MTP draft n {cfg['draft_n']}, {cfg['layers']} layers")


def before_reservation(raws: list[dict[str, Any]], fit: dict[str, Any]) -> dict[str, Any]:
    """What the build before PR #23907 did (its runs, measurements/vram/runtime-b9294.raw.json):
    its growth with the context served and its boot beyond the estimate's terms, fitted
    (olares_pack/vram/fit.py pool_fit). The estimate's boot for each run is taken with that
    build's own boot difference set to 0, so the difference is what the runs measured."""
    (build,) = {r["build"] for r in raws}
    shapes = sorted({shape(r["config"]) for r in raws})
    zero = {"build": build, "shapes": shapes, "served_tokens_measured": [0, 0],
            "constants": {"boot_other_mib": 0.0, "pool_base_mib": 0.0, "pool_copies": 0.0},
            "residuals": {"points": 0, "runs": 0, "growth_worst_abs_mib": 0.0, "boot_worst_abs_mib": 0.0}}
    runs = []
    for raw in raws:
        meta = synthetic_meta(raw["config"]["layers"])
        est = vram.estimate(meta, settings(raw["config"]), H200, measured_gpu=True, build=build,
                            fit={**fit, builds.BEFORE: zero})
        points = vramfit.pool_points(raw, max(meta.head_count_kv), meta.key_length, meta.value_length)
        runs.append((raw["boot_mib"], round(est.boot_mib, 2), points))
    return {"source": BEFORE_MEASURED, "build": build, "gpu": raws[0]["gpu"], "shapes": shapes, **vramfit.pool_fit(runs)}
