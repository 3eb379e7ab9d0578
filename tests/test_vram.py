"""The GPU memory budget: synthetic GGUF files whose terms are computed by hand here, the header
read over HTTP range requests, and the example app's real history."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import gguf
import numpy as np
import pytest
from conftest import APPS
from fakehub import COMMIT, REPO, REVISION, serve

from olares_pack import gguf_meta, vram
from olares_pack.cli import main
from olares_pack.gguf_meta import from_file, from_hub, load_lock
from olares_pack.manifest import load_app

MIB = 1024 * 1024
NAME = "llamacppqwen36mtpone"


def write_hybrid(path: Path, big: int = 0) -> dict[str, int]:
    """A qwen35-layout GGUF: 8 trunk layers (attention on every 4th) + 1 MTP layer."""
    w = gguf.GGUFWriter(str(path), "qwen35")
    w.add_block_count(9)
    w.add_uint32("qwen35.nextn_predict_layers", 1)
    w.add_embedding_length(32)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_key_length(16)
    w.add_value_length(16)
    w.add_context_length(4096)
    w.add_uint32("qwen35.full_attention_interval", 4)
    w.add_uint32("qwen35.ssm.conv_kernel", 4)
    w.add_uint32("qwen35.ssm.state_size", 8)
    w.add_uint32("qwen35.ssm.group_count", 2)
    w.add_uint32("qwen35.ssm.inner_size", 64)
    w.add_uint32("qwen35.vocab_size", 100)
    tensors = {
        "token_embd.weight": np.zeros((100, 32), dtype=np.float32),  # 12800 B
        "output.weight": np.zeros((100, 32), dtype=np.float16),  # 6400 B
        "blk.0.ssm_in.weight": np.zeros((64, 32), dtype=np.float32),  # 8192 B
        "blk.3.attn_q.weight": np.zeros((32, 32), dtype=np.float16),  # 2048 B
        "blk.8.nextn.eh_proj.weight": np.zeros((32, 64), dtype=np.float32),  # 8192 B
    }
    if big:
        tensors["blk.1.ssm_out.weight"] = np.zeros((big // 4,), dtype=np.float32)
    return finish(w, tensors)


def finish(w: gguf.GGUFWriter, tensors: dict[str, np.ndarray]) -> dict[str, int]:
    for name, arr in tensors.items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {name: arr.nbytes for name, arr in tensors.items()}


def write_plain(path: Path) -> dict[str, int]:
    """A plain transformer (llama layout): attention on every layer, no recurrent state."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(4)
    w.add_embedding_length(64)
    w.add_head_count(8)
    w.add_head_count_kv(2)
    w.add_context_length(8192)
    w.add_uint32("llama.vocab_size", 50)
    return finish(w, {"token_embd.weight": np.zeros((50, 64), dtype=np.float32),
                      "blk.0.attn_k.weight": np.zeros((16, 64), dtype=np.float16)})


def term(est: vram.Estimate, name: str) -> float:
    return next(t.mib for t in est.terms if t.name == name) * MIB


DEV = vram.Device("test GPU", 1000, 0)


def test_hybrid_mtp_terms_by_hand(tmp_path: Path) -> None:
    sizes = write_hybrid(tmp_path / "m.gguf")
    meta = from_file(tmp_path / "m.gguf")
    assert (meta.arch, meta.block_count, meta.trunk_layers, meta.recurrent_layers) == ("qwen35", 9, 8, 6)
    s = vram.Settings(ctx=4096, parallel=2, cache_k="q4_0", cache_v="q8_0", flash_attn="on",
                      spec_type="draft-mtp", draft_n_max=3)
    est = vram.estimate(meta, s, DEV)
    assert term(est, "weights") == sum(sizes.values()) - sizes["token_embd.weight"]
    # attention on layers 3 and 7 of the 8-layer trunk; 2 KV heads; q4_0 K (18/32 B), q8_0 V (34/32 B)
    assert term(est, "KV cache") == pytest.approx(4096 * 2 * 2 * (16 * 18 / 32 + 16 * 34 / 32))
    # 6 recurrent layers × ((4-1)(64 + 2·2·8) + 8·64) × 4 B, × 2 slots × (1 + 3) MTP copies
    assert term(est, "recurrent state") == pytest.approx(6 * (3 * (64 + 32) + 512) * 4 * 2 * 4)
    # the MTP layer's own KV at the full context, f16 by default (not the main cache types)
    assert term(est, "MTP draft KV") == pytest.approx(4096 * 1 * 2 * (16 * 2 + 16 * 2))
    assert term(est, "MTP draft overhead") == pytest.approx(vram.CALIBRATED["mtp_overhead_mib"][0] * MIB)
    assert term(est, "compute + CUDA context") == pytest.approx(vram.CALIBRATED["compute_base_mib"][0] * MIB + 4 * 4096)
    # one layer's K and V dequantized to f16 at the full context, only while it fills
    scratch = next(t for t in est.terms if t.name == "FA f16 scratch")
    assert scratch.when == "run" and scratch.mib * MIB == pytest.approx(4096 * 2 * (16 + 16) * 2)
    assert est.total_mib == pytest.approx(sum(t.mib for t in est.terms))


def test_plain_transformer_terms_by_hand(tmp_path: Path) -> None:
    sizes = write_plain(tmp_path / "p.gguf")
    meta = from_file(tmp_path / "p.gguf")
    assert meta.key_length == 8 and meta.recurrent_layers == 0  # 64 / 8 heads
    est = vram.estimate(meta, vram.Settings(ctx=0, cache_k="f16", cache_v="f16"), DEV)
    names = [t.name for t in est.terms]
    assert names == ["weights", "KV cache", "compute + CUDA context"]  # f16 cache: no FA scratch
    assert term(est, "weights") == sizes["blk.0.attn_k.weight"]
    assert term(est, "KV cache") == pytest.approx(8192 * 4 * 2 * (8 * 2 + 8 * 2))  # ctx 0 = trained 8192
    assert any("trained context" in n for n in est.notes)


def test_auto_slots_multiply_the_recurrent_state(tmp_path: Path) -> None:
    write_hybrid(tmp_path / "m.gguf")
    meta = from_file(tmp_path / "m.gguf")
    one = vram.estimate(meta, vram.Settings(ctx=1024, parallel=1), DEV)
    auto = vram.estimate(meta, vram.Settings(ctx=1024, parallel=-1), DEV)
    assert term(auto, "recurrent state") == pytest.approx(4 * term(one, "recurrent state"))


def test_header_read_over_http_ranges_matches_the_gguf_reader(tmp_path: Path) -> None:
    write_hybrid(tmp_path / "m.gguf", big=8 * MIB)
    data = (tmp_path / "m.gguf").read_bytes()
    local = from_file(tmp_path / "m.gguf")
    with serve() as (hub, url):
        hub.files["m.gguf"] = data
        remote = from_hub(REPO, "m.gguf", REVISION, endpoint=url, token="")
    assert (remote.tensor_bytes, remote.token_embd_bytes, remote.head_count_kv) == (local.tensor_bytes, local.token_embd_bytes, local.head_count_kv)
    assert remote.file_size == len(data) and remote.revision == COMMIT
    assert all(r["range"] for r in hub.requests)
    assert hub.bytes_served < len(data) / 4  # the header only, not the weights


# ---- the example app's history (shared/docs/llama-server.md, last table)


def history_meta(file_size_gb: float) -> gguf_meta.ModelMeta:
    base = load_lock(APPS / NAME).models[0]
    return replace(base, tensor_bytes=int(file_size_gb * 1e9), file_size=int(file_size_gb * 1e9))


def history_settings(ctx: int, n: int) -> vram.Settings:
    return vram.Settings(ctx=ctx, parallel=1, cache_k="q4_0", cache_v="q4_0", flash_attn="on", ubatch=512,
                         spec_type="draft-mtp", draft_n_max=n)


HISTORY = {  # version: (file size GB, ctx, MTP n)
    "1.0.1": (16.81, 262144, 5), "1.0.2": (16.81, 32000, 5), "1.0.3": (16.81, 128000, 4),
    "1.0.5": (14.92, 262144, 5), "1.0.7": (12.3, 262144, 5), "1.0.8": (14.8, 262144, 5), "1.0.9": (14.5, 262144, 3),
}


def history() -> dict[str, vram.Estimate]:
    dev = vram.device("olares-one")
    return {v: vram.estimate(history_meta(gb), history_settings(ctx, n), dev) for v, (gb, ctx, n) in HISTORY.items()}


def test_the_architecture_numbers_of_the_docs() -> None:
    est = history()["1.0.5"]
    assert term(est, "KV cache") / MIB == pytest.approx(4608)
    assert term(est, "recurrent state") / MIB == pytest.approx(897.8, abs=0.1)  # 149.6 × 6
    assert term(est, "MTP draft KV") / MIB == pytest.approx(1024)
    assert term(est, "FA f16 scratch") / MIB == pytest.approx(1024)


def test_the_history_verdicts() -> None:
    est = history()
    assert est["1.0.1"].verdict == "does not fit"
    assert est["1.0.5"].verdict == "tight"  # boots, then OOM at run time
    assert est["1.0.7"].verdict == "fits" and est["1.0.7"].headroom_mib > 3000
    assert est["1.0.9"].verdict == "fits"
    assert est["1.0.2"].verdict == "fits" and est["1.0.3"].verdict == "fits"
    # honest near the edge: 1.0.5 (OOM) and 1.0.8 (stable) are a few hundred MiB apart, both tight
    assert est["1.0.8"].verdict == "tight"
    assert abs(est["1.0.5"].total_mib - est["1.0.8"].total_mib) < 300
    # 1.0.1 boots within the card but not with its full-context scratch
    assert est["1.0.1"].boot_mib < vram.device().usable_mib < est["1.0.1"].total_mib + 1000


def test_largest_context_that_fits() -> None:
    meta = history_meta(16.81)
    dev = vram.device()
    best = vram.largest_context(meta, history_settings(262144, 5), dev)
    assert 0 < best < 262144 and best % 1024 == 0
    assert vram.estimate(meta, history_settings(best, 5), dev).verdict == "fits"
    assert vram.estimate(meta, history_settings(best + 1024, 5), dev).verdict != "fits"


def test_vllm_reservation_must_leave_the_reserve() -> None:
    dev = vram.device()
    assert vram.vllm_budget(0.97, dev, 23552).verdict == "fits"
    assert vram.vllm_budget(0.995, dev, None).verdict == "does not fit"


# ---- the command, the lock file, auto GPU memory and lint


def test_vram_command_for_each_published_version(capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = {}
    for v in ("1.0.5", "1.0.7", "1.0.8", "1.0.9"):
        code = main(["vram", NAME, "--version", v, "--format", "json"])
        doc = json.loads(capsys.readouterr().out)
        verdicts[v] = doc["estimates"][0]["verdict"]
        assert code == 0
    assert verdicts == {"1.0.5": "tight", "1.0.7": "fits", "1.0.8": "tight", "1.0.9": "fits"}
    assert main(["vram", NAME, "--gpu-mib", "16000", "--format", "json"]) == 1
    capsys.readouterr()
    assert main(["vram", NAME, "--largest-ctx", "--ctx", "131072"]) == 0
    assert "largest context that fits:" in capsys.readouterr().out


def _app_with_model(tmp_path: Path, gguf_file: Path, gpu: str) -> Path:
    text = (APPS / NAME / "app.yaml").read_text()
    text = text.replace("file: Qwen3.6-27B-UD-Q3_K_XL.gguf", "file: m.gguf").replace("repo: unsloth/Qwen3.6-27B-MTP-GGUF", f"repo: {REPO}")
    text = text.replace("  ctx_size: 262144", "  ctx_size: 4096").replace("  gpu_memory_mib: 23552", f"  gpu_memory_mib: {gpu}")
    d = tmp_path / "apps" / NAME
    d.mkdir(parents=True)
    (d / "app.yaml").write_text(text)
    return d


def test_lock_from_a_local_file_and_auto_gpu_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_hybrid(tmp_path / "m.gguf")
    d = _app_with_model(tmp_path, tmp_path / "m.gguf", "23552")
    assert main(["vram", str(d), "--lock", "--gguf", str(tmp_path / "m.gguf"), "--format", "json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimates"][0]
    lock = json.loads((d / "model.lock.json").read_text())
    assert [m["file"] for m in lock["models"]] == ["m.gguf"] and lock["models"][0]["arch"] == "qwen35"
    # gpu_memory_mib: auto = the full-context estimate, rounded up to 256 MiB
    (d / "app.yaml").write_text((d / "app.yaml").read_text().replace("gpu_memory_mib: 23552", "gpu_memory_mib: auto"))
    app = load_app(d)
    assert app.resources.gpu_memory_mib == math.ceil(est["total_mib"] / 256) * 256


def test_lint_reports_declared_gpu_memory_below_the_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (APPS / NAME / "app.yaml").read_text().replace("  gpu_memory_mib: 23552", "  gpu_memory_mib: 16384")
    d = tmp_path / "apps" / NAME
    d.mkdir(parents=True)
    (d / "app.yaml").write_text(text)
    (d / "model.lock.json").write_text((APPS / NAME / "model.lock.json").read_text())
    assert main(["lint", str(d), "--target", "current", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    msgs = [f["message"] for f in doc["findings"] if f["rule"] == "vram.budget"]
    assert msgs and "declares 16384 MiB" in msgs[0]
    # and a configuration that does not fit at all
    (d / "app.yaml").write_text(text.replace("    type: q4_0", "    type: f16").replace("cache_type: {k: q4_0, v: q4_0}", "cache_type: {k: f16, v: f16}"))
    assert main(["lint", str(d), "--target", "current", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert any(f["message"].startswith("does not fit") for f in doc["findings"] if f["rule"] == "vram.budget")
