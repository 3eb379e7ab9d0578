"""The GPU memory budget of an app: its server settings, its locked model metadata, its device."""

from __future__ import annotations

from pathlib import Path

from olares_pack.apps.manifest import App, LlamaCppApp, LlamaServer, VllmApp
from olares_pack.common.errors import InputError
from olares_pack.vram import estimate as vram
from olares_pack.vram import gguf_meta


def settings_for(s: LlamaServer, ctx: int | None = None) -> vram.Settings:
    sp = s.speculative
    draft = sp.draft_cache_type if sp and sp.draft_cache_type else None
    return vram.Settings(
        ctx=s.ctx_size if ctx is None else ctx,
        parallel=s.parallel,
        cache_k=s.cache_type.k,
        cache_v=s.cache_type.v,
        flash_attn=s.flash_attn,
        ubatch=s.ubatch_size or 512,
        gpu_layers=s.gpu_layers,
        spec_type=sp.type if sp else None,
        draft_n_max=sp.draft_n_max if sp and sp.draft_n_max is not None else 3,
        draft_cache_k=draft.k if draft else "f16",
        draft_cache_v=draft.v if draft else "f16",
    )


def app_dir_of(manifest_path: Path) -> Path:
    """The app folder of an app.yaml (where model.lock.json lives)."""
    return manifest_path.parent


def model_meta(app: LlamaCppApp, app_dir: Path) -> gguf_meta.ModelMeta:
    lock = gguf_meta.load_lock(app_dir)
    f = app.model.files[0]
    meta = lock.find(app.model.repo, f.name, app.model.revision)
    if meta is None:
        raise InputError(f"{app.name}: {app.model.repo}/{f.name}@{app.model.revision} is not in "
                         f"{app_dir / gguf_meta.LOCK_FILE}: run `olares-pack vram {app.name} --lock` "
                         "(reads the GGUF header from Hugging Face) or `--lock --gguf FILE`")
    return meta


def lock_model(app: LlamaCppApp, app_dir: Path, gguf_file: Path | None = None) -> gguf_meta.ModelMeta:
    """Read the model's metadata (local file, or the Hugging Face header) and record it in the lock."""
    f = app.model.files[0]
    meta = gguf_meta.from_file(gguf_file) if gguf_file else gguf_meta.from_hub(app.model.repo, f.name, app.model.revision)
    meta.repo, meta.file = app.model.repo, f.name
    meta.revision = meta.revision if gguf_file is None else app.model.revision
    if f.size is not None and meta.file_size is not None and meta.file_size != f.size:
        raise InputError(f"{app.name}: {f.name} has {meta.file_size} bytes, the manifest says {f.size}")
    if f.sha256 is not None and meta.sha256 is not None and meta.sha256 != f.sha256:
        raise InputError(f"{app.name}: {f.name} has sha256 {meta.sha256}, the manifest says {f.sha256}")
    lock = gguf_meta.load_lock(app_dir)
    lock.put(meta)
    from olares_pack.common.fsio import write_text_atomic

    write_text_atomic(app_dir / gguf_meta.LOCK_FILE, lock.dumps())
    if meta.sha256 and meta.file_size and f.sha256 is None:
        record_checksum(app_dir, f.name, meta.file_size, meta.sha256)
    return meta


def quant_row(meta: gguf_meta.ModelMeta, s: vram.Settings, dev: vram.Device, build: str | None = None) -> dict[str, object]:
    """One rung of the quant ladder (`vram --quants`, `new`): the estimate at `s` on `build`, its
    headroom and the gates' verdict (vram/verdict.py), and the largest context that fits."""
    from olares_pack.vram import verdict

    e = vram.estimate(meta, s, dev, build=build)
    return {"file": meta.file, "size": meta.file_size, "total_mib": round(e.total_mib), "headroom_mib": round(e.headroom_mib),
            "uncertainty_mib": round(e.uncertainty_mib), "verdict": verdict.judge(e).verdict,
            "largest_ctx": vram.largest_context(meta, s, dev, "fits", build=build), "mtp": meta.nextn_predict_layers > 0}


def record_checksum(app_dir: Path, file: str, size: int, sha256: str) -> None:
    """Write a model file's size and sha256 into app.yaml (comments and order kept): what the
    shared form's wrapper checks the downloaded file against before the engine starts."""
    import io

    from olares_pack.catalogue import MANIFEST_FILE
    from olares_pack.common.fsio import write_text_atomic
    from olares_pack.common.yamlsrc import load_yaml, roundtrip_yaml

    path = app_dir / MANIFEST_FILE
    tree = load_yaml(path).tree
    model = tree["model"]
    if model.get("file") == file:
        target = model
    else:
        target = next((e for e in model.get("files") or [] if e.get("name") == file), None)
    if target is None:
        return
    target["size"], target["sha256"] = size, sha256
    buf = io.StringIO()
    roundtrip_yaml().dump(tree, buf)
    write_text_atomic(path, buf.getvalue())


def app_estimate(app: App, app_dir: Path, dev: vram.Device, ctx: int | None = None) -> vram.Estimate:
    if isinstance(app, VllmApp):
        util = app.server.gpu_memory_utilization or 0.9  # vLLM's default
        declared = app.resources.gpu_memory_mib if isinstance(app.resources.gpu_memory_mib, int) else None
        return vram.vllm_budget(util, dev, declared)
    assert isinstance(app, LlamaCppApp)
    return vram.estimate(model_meta(app, app_dir), settings_for(app.server, ctx), dev, build=app.engine.build)


def largest_contexts(app: LlamaCppApp, app_dir: Path, dev: vram.Device) -> dict[str, int]:
    """The largest context that fits with a margin, the largest that fits at all ("tight"), and the
    model's trained context (`vram --largest-ctx`)."""
    meta = model_meta(app, app_dir)
    s = settings_for(app.server)
    b = app.engine.build
    return {"fits": vram.largest_context(meta, s, dev, "fits", build=b), "tight": vram.largest_context(meta, s, dev, "tight", build=b),
            "trained": meta.context_length}


def quant_rows(app: LlamaCppApp, app_dir: Path, dev: vram.Device, ctx: int | None) -> list[dict[str, object]]:
    """Each locked quant of the app's repository at this context (`vram --quants`)."""
    at = settings_for(app.server, ctx)
    return [quant_row(m, at, dev, app.engine.build) for m in gguf_meta.load_lock(app_dir).models if m.repo == app.model.repo]
