"""The node's parts that need no node: image names on the mirror, what the live run changes in a
chart, the cluster DNS's answers, stand-in layers byte-for-byte reproducible."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import yaml

from olares_pack.cluster import dns, images, mirror
from olares_pack.rehearse import fit


def test_the_mirror_serves_the_chart_s_own_image_names() -> None:
    assert mirror.split("docker.io/beclab/llm-init:v1.3.8") == ("beclab/llm-init", "v1.3.8")
    assert mirror.split("registry.k8s.io/pause:3.10") == ("pause", "3.10")  # library/ is Docker Hub's alone
    assert mirror.split("busybox") == ("library/busybox", "latest")
    assert mirror.split("ghcr.io/olares/busybox:v2") == ("olares/busybox", "v2")


def test_fit_lowers_requests_and_keeps_limits_gpu_and_strategy() -> None:
    doc = {"kind": "Deployment", "spec": {"strategy": {"type": "RollingUpdate"}, "template": {"spec": {"containers": [
        {"name": "e", "resources": {"requests": {"cpu": "4", "memory": "20Gi", "nvidia.com/gpumem": 23552},
                                    "limits": {"cpu": "16", "memory": "40Gi", "nvidia.com/gpumem": 23552}},
         "env": [{"name": "MODEL_FILES", "value": "a.gguf|||u/a.gguf\nb.gguf|12|ab|u/b.gguf"}]}]}}}}
    out = yaml.safe_load(fit.fitted(yaml.safe_dump(doc), "5|ff"))
    c = out["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["requests"] == {"cpu": "50m", "memory": "64Mi", "nvidia.com/gpumem": 23552}
    assert c["resources"]["limits"] == doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert out["spec"]["strategy"] == {"type": "RollingUpdate"}
    # a recorded size|sha256 becomes the stand-in model's; an unrecorded one stays unrecorded
    assert c["env"][0]["value"] == "a.gguf|||u/a.gguf\nb.gguf|5|ff|u/b.gguf"


def _query(name: str, qtype: int = 1) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + labels + struct.pack("!HH", qtype, 1)


def test_the_cluster_dns_answers_services_by_name() -> None:
    services = {("apps-shared", "engine"): "10.96.3.4"}

    def lookup(ns: str, svc: str) -> str | None:
        return services.get((ns, svc))

    out = dns.answer(_query("engine.apps-shared.svc.cluster.local"), lookup)
    assert out is not None and out[3] & 0x0F == 0 and struct.unpack("!H", out[6:8])[0] == 1
    assert socket.inet_ntoa(out[-4:]) == "10.96.3.4"
    # a search-path miss (<svc>.<ns>.<pod ns>.svc...) and an outside name: NXDOMAIN
    assert dns.answer(_query("engine.apps-shared.alice.svc.cluster.local"), lookup)[3] & 0x0F == 3  # type: ignore[index]
    assert dns.answer(_query("example.com"), lookup)[3] & 0x0F == 3  # type: ignore[index]
    # without a hub address Hugging Face is an outside name too
    assert dns.answer(_query("huggingface.co"), lookup)[3] & 0x0F == 3  # type: ignore[index]
    # AAAA of a Service: no records, not an error (the resolver then uses the A record)
    aaaa = dns.answer(_query("engine.apps-shared.svc.cluster.local", 28), lookup)
    assert aaaa is not None and aaaa[3] & 0x0F == 0 and struct.unpack("!H", aaaa[6:8])[0] == 0


def test_a_stand_in_layer_is_the_same_bytes_every_time(tmp_path) -> None:  # noqa: ANN001
    f = tmp_path / "tool"
    f.write_bytes(b"#!/bin/sh\necho hi\n")
    f.chmod(0o755)
    files = {"bin/tool": f, "bin/alias": "link:tool", "etc/conf": b"x=1\n"}
    assert images.layer(files) == images.layer(dict(reversed(list(files.items()))))
    assert images.kind_of("docker.io/beclab/aboveos-busybox:1.37.0") == "busybox"
    assert images.kind_of("docker.io/beclab/aboveos-bitnami-openresty:1.25.3-2") == "proxy"
    assert images.kind_of("docker.io/aamsellem/llama-cpp-mtp:master-ad27757", "llamacpp") == "llama-server"
    assert images.kind_of("docker.io/aamsellem/vllm-qwen36-blackwell:0.20.0-genesis-v3") is None


def test_the_vllm_engine_gets_the_vllm_stand_in_of_its_release() -> None:
    from olares_pack.rehearse import live

    image = "docker.io/aamsellem/vllm-qwen36-blackwell:0.20.0-genesis-v3"
    assert images.kind_of(image, "vllm") == "vllm"
    assert images.vllm_version(image) == "0.20.0"  # the fork's tag names its vLLM release
    assert images.vllm_version("vllm/vllm-openai:v0.21.1") == "0.20.0"  # the nearest older release read
    assert "flag registry of vLLM 0.20.0" in images.stands_for("vllm", image)
    # 2.5.7's engine (the image's entrypoint, `serve` first), 2.5.9+'s wrapper, the official module form
    assert live._engine_kind({"image": image, "args": ["serve", "Lorbus/x", "--port", "8000"]}) == "vllm"
    assert live._engine_kind({"image": image, "command": ["/bin/sh", "/llm-init/wrappers/engine.sh"],
                              "env": [{"name": "ENGINE_KIND", "value": "vllm"}]}) == "vllm"
    assert live._engine_kind({"image": "x/y:1", "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"]}) == "vllm"


def _standin(tmp_path):  # noqa: ANN001, ANN202 - the stand-in program, run from the sources
    import importlib.util
    import json

    from olares_pack.cluster.images import STANDINS_SRC, VLLM_FLAGS

    table = json.loads(VLLM_FLAGS.read_text())
    flags = sorted(f for f, v in table["flags"].items() if "0.20.0" in v)
    (tmp_path / "flags.json").write_text(json.dumps({"version": "0.20.0", "flags": flags}))
    spec = importlib.util.spec_from_file_location("vllm_standin_test", STANDINS_SRC / "vllm_standin.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.TABLE = tmp_path / "flags.json"
    return mod


def test_the_vllm_stand_in_checks_the_argv_against_the_registry(tmp_path, capsys) -> None:  # noqa: ANN001
    import pytest

    mod = _standin(tmp_path)
    argv = ["serve", "/m", "--served-model-name", "a", "b", "--port", "8001", "--kv-cache-dtype", "turboquant_k8v4",
            "--enable_prefix_caching", "--no-enable-chunked-prefill", "--speculative-config.method=mtp",
            "--language-model-only"]
    opts = mod.parse(argv, api_server=False)
    assert opts["--model"] == ["/m"] and opts["--served-model-name"] == ["a", "b"] and opts["--port"] == ["8001"]
    with pytest.raises(SystemExit) as exc:
        mod.parse(["serve", "/m", "--mtp-head", "3", "--port", "1"], api_server=False)
    assert exc.value.code == 2
    assert "unrecognized arguments: --mtp-head 3" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a flag vLLM 0.20.0 does not have yet
        mod.parse(["--model", "/m", "--no-such-flag"], api_server=True)


def test_the_vllm_stand_in_loads_the_hub_s_repo_and_refuses_a_truncated_one(tmp_path, capsys) -> None:  # noqa: ANN001
    import pytest

    from olares_pack.rehearse import hub

    mod = _standin(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, data in hub.safetensors_repo().items():
        (repo / name).write_bytes(data)
    config, tensors = mod.load(repo)
    assert config["model_type"] == "qwen3" and tensors == 12
    weights = repo / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(SystemExit):
        mod.load(repo)
    assert "does not fit its offsets" in capsys.readouterr().err


def test_the_hub_serves_a_whole_repo_as_hugging_face_does(tmp_path) -> None:  # noqa: ANN001
    """huggingface_hub's own snapshot_download against the hub: the listing, the commit, LFS files
    stored under their sha256, git files under their blob sha1 (what llm-init and the old charts'
    download step rely on); an unknown file is the Hub's EntryNotFound."""
    import hashlib
    import urllib.error
    import urllib.request

    import pytest
    from huggingface_hub import snapshot_download

    from olares_pack.rehearse import hub as hubmod

    files = hubmod.safetensors_repo()
    with hubmod.serving("127.0.0.1", https_port=None) as hub:
        path = Path(snapshot_download("Org/Model", revision="main", cache_dir=tmp_path, endpoint=hub.url))
        assert sorted(p.name for p in path.iterdir()) == sorted(files)
        assert path.name == hubmod.COMMIT and (path.parent.parent / "refs" / "main").read_text() == hubmod.COMMIT
        blobs = {p.name for p in (path.parent.parent / "blobs").iterdir()}
        assert hashlib.sha256(files["model.safetensors"]).hexdigest() in blobs
        assert hubmod.git_sha1(files["config.json"]) in blobs
        assert sum(hub.downloads.values()) == len(files)
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(f"{hub.url}/Org/Model/resolve/main/nope.bin")  # noqa: S310
        assert exc.value.code == 404 and exc.value.headers["X-Error-Code"] == "EntryNotFound"


def test_hugging_face_s_names_answer_the_stand_in_hub_s_address() -> None:
    """huggingface.co and the CDN names its downloads redirect to resolve to the hub; a search-path
    try (huggingface.co.<ns>.svc.cluster.local) and other names do not."""
    def lookup(ns: str, svc: str) -> str | None:
        return None

    for name in ("huggingface.co", "cdn-lfs-us-1.hf.co", "cas-bridge.xethub.hf.co", "HF.co"):
        out = dns.answer(_query(name), lookup, "10.88.0.1")
        assert out is not None and out[3] & 0x0F == 0 and socket.inet_ntoa(out[-4:]) == "10.88.0.1", name
    assert dns.answer(_query("huggingface.co.alice.svc.cluster.local"), lookup, "10.88.0.1")[3] & 0x0F == 3  # type: ignore[index]
    assert dns.answer(_query("nothuggingface.co"), lookup, "10.88.0.1")[3] & 0x0F == 3  # type: ignore[index]
    aaaa = dns.answer(_query("huggingface.co", 28), lookup, "10.88.0.1")
    assert aaaa is not None and aaaa[3] & 0x0F == 0 and struct.unpack("!H", aaaa[6:8])[0] == 0


def test_an_alpine_download_script_runs_on_busybox_unless_it_needs_apk() -> None:
    """What the corpus's alpine:3.20 init containers run (wget, mv, ls, base64): all applets; an
    `apk add` that may fail (`|| true`) is tolerated, one the script needs is not."""
    script = """
MODEL_PATH="/models/${MODEL_FILE}"
apk add --no-cache wget >/dev/null 2>&1 || true
if [ -f "$MODEL_PATH" ]; then
  echo "Model already downloaded: $MODEL_PATH"; ls -lh "$MODEL_PATH"
else
  wget -O "$MODEL_PATH.tmp" "$MODEL_URL" && mv "$MODEL_PATH.tmp" "$MODEL_PATH"
fi
echo "$CHAT_TEMPLATE_B64" | base64 -d > /models/chat_template.jinja
"""
    assert images.alpine_missing(script) == []
    assert images.alpine_missing("apk add --no-cache curl\ncurl -fL -o /models/m.gguf $URL") == ["apk", "curl"]
    assert images.kind_of("docker.io/alpine:3.20") == "alpine" and "apk unavailable" in images.stands_for("alpine", "alpine")


def test_the_hub_answers_busybox_wget_over_https(tmp_path) -> None:  # noqa: ANN001
    """busybox's own wget (the alpine stand-in's), over HTTPS with the certificate made here, gets
    the stand-in model byte for byte, counted under the Host it asked."""
    import subprocess

    from olares_pack.rehearse import hub as hubmod

    with hubmod.serving("127.0.0.1", https_port=0) as hub:
        assert hub.https_port, hub.https_error
        url = f"https://127.0.0.1:{hub.https_port}/unsloth/X-GGUF/resolve/main/x-Q4_K_M.gguf"
        # no openssl on PATH: busybox uses its own TLS, as in the image (no other binary there)
        proc = subprocess.run([str(images.BUSYBOX), "wget", "-O", str(tmp_path / "m.gguf"), url], capture_output=True,
                              text=True, env={"PATH": str(tmp_path / "nothing")}, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "m.gguf").read_bytes() == hub.data
        assert hub.https == {"127.0.0.1": 1}


def test_an_alpine_download_step_runs_unless_its_script_needs_apk() -> None:
    """The import's --run: a chart whose alpine:3.20 init container wgets its model from
    https://huggingface.co can run (busybox stands in); one that installs curl with apk cannot."""
    from olares_pack.importing import onnode

    chart = Path(__file__).resolve().parent / "data" / "import" / "node" / "tinychat"
    files = {str(p.relative_to(chart)): p.read_text() for p in chart.rglob("*") if p.is_file()}
    upstream = {"kind": "llamacpp", "image": {"repository": "ghcr.io/ggml-org/llama.cpp", "tag": "server-cuda-b11434"}}
    dep = files["templates/deployment.yaml"].replace("docker.io/library/busybox:1.36", "docker.io/alpine:3.20")
    files["templates/deployment.yaml"] = dep.replace('"$HF_ENDPOINT/', '"https://huggingface.co/')
    assert onnode.why_not("tinychat", files, upstream) is None
    files["templates/deployment.yaml"] = files["templates/deployment.yaml"].replace(
        "set -e", "set -e\n              apk add --no-cache curl").replace("wget -O", "curl -fL -o")
    rule, why, _ = onnode.why_not("tinychat", files, upstream) or ("", "", "")
    assert rule == "standin.image" and "runs apk, curl: the alpine stand-in is busybox 1.35, applets only, no apk" in why


def test_an_argument_the_stand_in_s_newer_build_dropped_is_not_run() -> None:
    """llama.cpp b9101 takes --mlock; the stand-in llama-server b11434 does not (its --load-mode
    replaced it): run, the original would fail for the stand-in's sake, so it is not run and says why."""
    from olares_pack.importing import onnode

    chart = Path(__file__).resolve().parent / "data" / "import" / "node" / "tinychat"
    files = {str(p.relative_to(chart)): p.read_text() for p in chart.rglob("*") if p.is_file()}
    old = {"kind": "llamacpp", "image": {"repository": "ghcr.io/ggml-org/llama.cpp", "tag": "server-cuda-b9101"}}
    dep = files["templates/deployment.yaml"].replace("server-cuda-b11434", "server-cuda-b9101")
    files["templates/deployment.yaml"] = dep
    assert onnode.why_not("tinychat", files, old) is None  # every flag it passes b11434 takes too
    files["templates/deployment.yaml"] = dep.replace('"--jinja"]', '"--jinja", "--mlock"]')
    rule, why, check = onnode.why_not("tinychat", files, old) or ("", "", "")
    assert rule == "standin.build" and "(llama.cpp b9101) is run with --mlock, which the stand-in llama-server b11434" in why
    assert check.endswith("the flags of llama.cpp b9101")
