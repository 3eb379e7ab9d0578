"""`olares-pack new`: a repository of header-only GGUFs of the example model's real architecture
(tests/ggufrepo.py) on the local hub, the engine image on the loopback registry of test_pin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import ggufrepo
import pytest
from conftest import tree_digest
from fakehub import FakeHub, serve
from test_pin import PASSWORD, USER, Images, docker_config, images, needs_registry  # noqa: F401 - the fixture

from olares_pack.apps.load import load_app
from olares_pack.apps.new_llamacpp import server_for
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.vram import budget, gguf_meta
from olares_pack.vram import estimate as vram

REPO = "acme/Qwen3.6-27B-GGUF"
COMMIT = "1111111111111111111111111111111111111111"
NO_MTP = "acme/Qwen3.6-27B-noMTP-GGUF"
SAFETENSORS = "acme/Qwen3.6-27B"
GATED = "acme/Qwen3.6-27B-gated-GGUF"
CARD = b"---\nlicense: apache-2.0\nbase_model: Qwen/Qwen3.6-27B\ntags: [gguf]\n---\n# Qwen3.6-27B GGUF\n"
SINGLE = ["Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K"]  # Q5_K_M carries the MTP block; Q8_0 is split in two


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    d = tmp_path_factory.mktemp("gguf")
    out: dict[str, bytes] = {}
    for q in SINGLE:
        ggufrepo.write(d / f"Qwen3.6-27B-{q}.gguf", q, mtp=q == "Q5_K_M")
    parts = [d / f"Qwen3.6-27B-Q8_0-0000{i}-of-00002.gguf" for i in (1, 2)]
    ggufrepo.write_split(parts, "Q8_0")
    for p in sorted(d.iterdir()):
        out[p.name] = p.read_bytes()
    out["mmproj-F16.gguf"] = out["Qwen3.6-27B-Q2_K.gguf"]  # a vision projector: not a model to serve
    return out


@pytest.fixture
def hub(files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with serve() as (fake, url):
        fake.add_commit(REPO, COMMIT, files | {"README.md": CARD}, "main")
        fake.add_commit(NO_MTP, COMMIT, {"Qwen3.6-27B-Q4_K_M.gguf": files["Qwen3.6-27B-Q4_K_M.gguf"]}, "main")
        fake.add_commit(SAFETENSORS, COMMIT, {"config.json": b'{"model_type": "qwen3"}\n', "model.safetensors": b"\0" * 64}, "main")
        fake.add_commit(GATED, COMMIT, {"Qwen3.6-27B-Q4_K_M.gguf": files["Qwen3.6-27B-Q4_K_M.gguf"]}, "main")
        fake.repos[GATED].gated = True
        fake.token = "hf_secret"
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
        yield fake


def expected_pick(tmp: Path, ctx: int, mtp: bool = False) -> str:
    """The largest quant whose estimate fits with a margin, from the local files (gguf_meta.from_file)."""
    best, best_bytes = "", -1
    s = budget.settings_for(server_for("x", ctx, mtp))
    for q in SINGLE + ["Q8_0"]:
        path = tmp / q
        if q == "Q8_0":
            ggufrepo.write_split([tmp / "p1", tmp / "p2"], q)
            a, b = gguf_meta.from_file(tmp / "p1"), gguf_meta.from_file(tmp / "p2")
            meta = a
            meta.tensor_bytes += b.tensor_bytes
        else:
            ggufrepo.write(path, q, mtp=q == "Q5_K_M")
            meta = gguf_meta.from_file(path)
        if mtp and not meta.nextn_predict_layers:
            continue
        if vram.estimate(meta, s, vram.device()).verdict == "fits" and meta.tensor_bytes > best_bytes:
            best, best_bytes = q, meta.tensor_bytes
    return best


def new(repo_dir: Path, *args: str) -> int:
    return main(["new", *args, "--apps-dir", str(repo_dir / "apps")])


def on_registry(images: Images) -> list[str]:  # noqa: F811
    """The engine image and the shared form's helper images, all from the loopback registry."""
    ref = f"{images.repository}:multi"
    return ["--image", ref, "--llm-init-image", ref, "--chown-image", ref, "--proxy-image", ref]


def ladder_json(capsys: pytest.CaptureFixture[str], code: int) -> dict:
    out = capsys.readouterr().out
    return json.loads(out[: out.rindex("}") + 1]) if code == 0 or out.strip() else {}


@needs_registry
def test_new_picks_what_the_estimate_says_and_writes_a_releasable_app(
        images: Images, hub: FakeHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    before = tree_digest(repo)
    assert new(repo, "qwen27bnew", "--hf", REPO, *on_registry(images), "--dry-run") == 0
    dry = capsys.readouterr().out
    assert "name: qwen27bnew" in dry and tree_digest(repo) == before
    code = new(repo, "qwen27bnew", "--hf", REPO, *on_registry(images), "--format", "json")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    want = expected_pick(tmp_path, 32768)
    assert want == "Q6_K"  # the fixture is meant to make the pick a real choice: Q8_0 does not fit, Q6_K does
    assert doc["picked"] == f"Qwen3.6-27B-{want}.gguf" and doc["reason"].startswith(f"{want}: the largest quant that fits")
    assert [r["quant"] for r in doc["ladder"]] == ["Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0"]
    assert next(r for r in doc["ladder"] if r["quant"] == "Q8_0")["parts"] == 2
    assert "mmproj" not in json.dumps(doc["ladder"])
    # progress on stderr: one line per header read (seven files), never the weights
    assert captured.err.count("read the header of") == 7
    reads = [r for r in hub.requests if r["method"] == "GET" and str(r["path"]).startswith("/lfs/")]
    assert reads and all(r["range"] for r in reads)  # range requests (huggingface_hub's HfFileSystem), not downloads
    app_dir = repo / "apps" / "qwen27bnew"
    assert dry.endswith((app_dir / "app.yaml").read_text())  # what --dry-run shows is what is written, byte for byte
    app = load_app(app_dir)
    assert app.model.revision == COMMIT and app.model.files[0].name == "Qwen3.6-27B-Q6_K.gguf"
    assert app.model.files[0].sha256 and app.engine.shared
    assert {app.engine.image.digest, app.engine.llm_init.digest, app.engine.chown_image.digest} == {images.multi}
    assert app.license[0].text == "apache-2.0"
    assert "a quant of Qwen/Qwen3.6-27B" in (app.full_description or "")
    # the ladder equals `vram --quants` on the written locks
    assert main(["vram", "qwen27bnew", "--apps-dir", str(repo / "apps"), "--quants", "--format", "json"]) == ExitCode.OK
    quants = json.loads(capsys.readouterr().out)["quants"]
    assert quants == [{k: v for k, v in r.items() if k not in ("quant", "parts")}
                      for r in sorted(doc["ladder"], key=lambda r: r["file"])]
    # lints clean (no warning either: --strict) for both targets, and a release dry-run succeeds
    assert main(["lint", str(app_dir), "--strict", "--target", "current", "--target", "legacy"]) == ExitCode.OK, capsys.readouterr()
    assert main(["release", "qwen27bnew", "--apps-dir", str(repo / "apps"), "--version", "1.0.0", "--summary",
                 "first version", "--dry-run"]) == ExitCode.OK, capsys.readouterr().err
    capsys.readouterr()
    # never overwrites: a second run is an error and changes nothing
    before = tree_digest(repo)
    assert new(repo, "qwen27bnew", "--hf", REPO, *on_registry(images)) == 2
    assert "already exists" in capsys.readouterr().err and tree_digest(repo) == before


@needs_registry
def test_draft_mtp_and_a_larger_context(images: Images, hub: FakeHub, repo: Path, tmp_path: Path,  # noqa: F811
                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    code = new(repo, "qwenmtp", "--hf", REPO, "--image", f"{images.repository}:multi", "--per-user", "--draft", "mtp",
               "--ctx", "65536",
               "--format", "json")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert [r["quant"] for r in doc["ladder"]] == ["Q5_K_M"] and expected_pick(tmp_path, 65536, mtp=True) == "Q5_K_M"
    app = load_app(repo / "apps" / "qwenmtp")
    assert app.server.speculative is not None and app.server.speculative.type == "draft-mtp"
    assert app.server.ctx_size == 65536 and not app.engine.shared  # --per-user: no helper images to pin
    # the MTP block and the draft context are in the estimate: more than the same quant without drafting
    meta = gguf_meta.load_lock(repo / "apps" / "qwenmtp").models[0]
    plain = vram.estimate(meta, budget.settings_for(server_for("x", 65536, False)), vram.device())
    assert doc["ladder"][0]["total_mib"] > round(plain.total_mib)
    assert main(["lint", str(repo / "apps" / "qwenmtp"), "--strict"]) == ExitCode.OK


def test_refusals_are_one_line_exit_2_and_write_nothing(hub: FakeHub, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    cases = [
        (["x1", "--hf", SAFETENSORS], "no GGUF file in the repository"),
        (["x2", "--hf", GATED], "a gated model: accept its terms on Hugging Face and set HF_TOKEN"),
        (["x3", "--hf", NO_MTP, "--draft", "mtp"], "--draft mtp needs a GGUF with MTP (NextN) tensors"),
        (["x7", "--hf", REPO, "--draft", "mtp", "--quant", "Q4_K_M"], "--quant Q4_K_M has no MTP tensors"),
        (["x8", "--hf", REPO, "--quant", "Q7_X"], "no quant 'Q7_X'"),
        (["x4", "--hf", REPO, "--gpu-mib", "8192"], "no quant fits with a margin"),
        (["x5", "--hf", REPO, "--quant", "Q8_0"], "Q8_0 does not fit at --ctx-size 32768"),
        (["x6", "--hf", REPO, "--ctx", "1000000"], "larger than the model's trained context"),
    ]
    for args, message in cases:
        assert new(repo, *args) == 2, args
        err = capsys.readouterr().err
        assert message in err, (args, err)
    assert tree_digest(repo) == before


def test_no_fit_prints_the_ladder_and_the_largest_context_that_would(hub: FakeHub, repo: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert new(repo, "x", "--hf", REPO, "--ctx", "262144", "--format", "json") == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["picked"] is None and all(r["verdict"] != "fits" for r in doc["ladder"])
    best = max(doc["ladder"], key=lambda r: r["largest_ctx"])
    assert best["quant"] == "Q2_K" and best["largest_ctx"] > 0
    assert f"the largest context that would fit: {best['largest_ctx']} with Q2_K" in captured.err



# ---------------------------------------------------------------- vLLM

# Qwen3-0.6B's config.json (Hugging Face Qwen/Qwen3-0.6B): 28 layers, 8 KV heads of 128, bf16
QWEN3_SMALL = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28,
               "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 1024,
               "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}
WEIGHTS = 2 * 32 * 2**20  # two 32 MiB safetensors files: sizes come from the tree


@pytest.fixture
def vllm_hub(hub: FakeHub) -> FakeHub:
    hub.add_commit(SAFETENSORS, COMMIT, {"config.json": json.dumps(QWEN3_SMALL).encode(), "README.md": CARD,
                                         "model-00001-of-00002.safetensors": b"\0" * (WEIGHTS // 2),
                                         "model-00002-of-00002.safetensors": b"\1" * (WEIGHTS // 2)}, "main")
    return hub


@needs_registry
def test_vllm_sizes_the_grant_and_utilization_from_config_and_tree(
        images: Images, vllm_hub: FakeHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.apps.new_vllm import OVERHEAD_MIB

    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    common = ["--hf", SAFETENSORS, "--engine", "vllm", "--gpu-mib", "4096", *on_registry(images)]
    # by hand: KV per token = 28 layers x 8 heads x 128 x (K + V) x 2 bytes
    per_token = 28 * 8 * 128 * 2 * 2
    usable = 4096 - 300
    largest = int(((usable - OVERHEAD_MIB) * 2**20 - WEIGHTS) // per_token) // 1024 * 1024
    assert new(repo, "qsmall", *common, "--ctx", "16384") == 2
    assert f"the largest context that would fit: {largest}" in capsys.readouterr().err
    assert new(repo, "qsmall", *common, "--ctx", "4096", "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    need = WEIGHTS / 2**20 + 4096 * per_token / 2**20 + OVERHEAD_MIB
    grant = -(-need // 256) * 256
    assert (doc["total_mib"], doc["gpu_memory_mib"], doc["largest_ctx"]) == (round(need), grant, largest)
    app = load_app(repo / "apps" / "qsmall")
    assert app.engine.kind == "vllm" and app.model.revision == COMMIT and app.server.max_model_len == 4096
    assert app.resources.gpu_memory_mib == grant
    # vLLM's reservation (utilization x the grant) holds the estimate, and fits the device
    assert need <= app.server.gpu_memory_utilization * grant <= usable
    assert main(["vram", "qsmall", "--apps-dir", str(repo / "apps"), "--gpu-mib", "4096"]) == ExitCode.OK
    assert main(["lint", str(repo / "apps" / "qsmall"), "--strict"]) == ExitCode.OK, capsys.readouterr()
    assert main(["release", "qsmall", "--apps-dir", str(repo / "apps"), "--version", "1.0.0", "--summary", "first",
                 "--dry-run"]) == ExitCode.OK


@needs_registry
def test_a_split_quant_is_one_model_of_several_files(images: Images, hub: FakeHub, repo: Path, tmp_path: Path,  # noqa: F811
                                                     monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    apps = str(repo / "apps")
    assert new(repo, "qwenbig", "--hf", REPO, *on_registry(images), "--gpu-mib", "40960", "--quant", "Q8_0") == 0
    assert "Q8_0 does not fit the Olares One" in capsys.readouterr().err
    app = load_app(repo / "apps" / "qwenbig")
    assert [f.name for f in app.model.files] == [f"Qwen3.6-27B-Q8_0-0000{i}-of-00002.gguf" for i in (1, 2)]
    assert all(f.size and f.sha256 for f in app.model.files)
    meta = gguf_meta.load_lock(repo / "apps" / "qwenbig").find(REPO, app.model.files[0].name, COMMIT)
    assert meta is not None and meta.file_size == sum(f.size for f in app.model.files)  # both parts' tensors and bytes
    capsys.readouterr()
    assert main(["vram", "qwenbig", "--apps-dir", apps, "--gpu-mib", "40960"]) == ExitCode.OK
    capsys.readouterr()
    # lint judges the fit on the Olares One, the catalogue's device: Q8_0 (27 GiB of weights) is
    # refused there, and that is the only thing it refuses
    assert main(["lint", str(repo / "apps" / "qwenbig"), "--strict", "--format", "json"]) == ExitCode.FINDINGS
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert {f["rule"] for f in findings if f["severity"] != "info"} == {"vram.budget"}
