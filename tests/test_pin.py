"""`olares-pack pin`, `lint --online`, `release --online`: against a real registry on loopback
(Debian's docker-registry, images pushed by skopeo; tests/registry.py) and the local hub
(tests/fakehub.py). No network: everything listens on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import APPS
from fakehub import COMMIT, REPO, FakeHub, serve
from registry import (
    MISSING,
    REQUIRED,
    SKIP_REASON,
    Layout,
    Registry,
    free_port,
    run_registry,
    token_front,
)
from test_vram import write_hybrid

from olares_pack.apps.load import parse_app
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.remote import oci

LLAMA, VLLM = "llamacppqwen36mtpone", "vllmqwen36turbo27bone"
USER, PASSWORD = "alice", "s3cret"
VLLM_REPO = "acme/tiny-vllm"
VLLM_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"

needs_registry = pytest.mark.skipif(bool(MISSING) and not REQUIRED, reason=SKIP_REASON)


@dataclass
class Images:
    reg: Registry
    layout: Path
    multi: str  # digest of the multi-arch index (amd64 + arm64) tagged "multi"
    arm: str  # an arm64-only image tagged "arm"
    dock: str  # digest skopeo reads for "dock", a Docker v2 manifest

    @property
    def repository(self) -> str:
        return f"{self.reg.host}/acme/llama"


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Images]:
    if MISSING:
        pytest.fail(f"{SKIP_REASON}; on CI they must be there") if REQUIRED else pytest.skip(SKIP_REASON)
    tmp = tmp_path_factory.mktemp("registry")
    lay = Layout(tmp / "layout")
    multi = lay.multiarch("multi")
    arm = lay.single("arm", "arm64")
    lay.single("dock", "amd64")
    lay.multiarch("other", ("amd64", "arm64", "ppc64le"))
    with run_registry(tmp / "reg", user=USER, password=PASSWORD) as reg:
        for tag in ("multi", "arm", "dock"):
            reg.push(tmp / "layout", tag, "acme/llama", docker_v2=tag == "dock")
        yield Images(reg, tmp / "layout", multi, arm, reg.raw_digest("acme/llama", "dock"))


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with serve() as (fake, url):
        gguf = tmp_path / "m.gguf"
        write_hybrid(gguf, big=2 * 1024 * 1024)
        fake.files["m.gguf"] = gguf.read_bytes()
        fake.files["README.md"] = b"# tiny\n"
        fake.add_commit(VLLM_REPO, VLLM_COMMIT, {"config.json": b'{"model_type": "qwen3"}\n',
                                                  "model.safetensors": b"\0" * 4096}, "main")
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
        yield fake


def docker_config(tmp: Path, monkeypatch: pytest.MonkeyPatch, host: str, user: str, password: str) -> None:
    d = tmp / "docker"
    d.mkdir(exist_ok=True)
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (d / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(d))
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    monkeypatch.delenv("DOCKER_AUTH_CONFIG", raising=False)


def make_apps(tmp: Path, repository: str, tag: str, shared: bool = False) -> Path:
    """The two bundled apps, their image on the test registry and their models on the local hub
    (per-user unless `shared`: the shared form's helper images then come from the test registry too)."""
    apps = tmp / "apps"
    for name in (LLAMA, VLLM):
        (apps / name).mkdir(parents=True)
        text = (APPS / name / "app.yaml").read_text()
        helpers = (f"  llm_init: {{repository: {repository}, tag: {tag}}}\n  chown_image: {{repository: {repository}, tag: {tag}}}\n"
                   f"  proxy_image: {{repository: {repository}, tag: {tag}}}\n" if shared else "  shared: false\n")
        text = text.replace("\nmodel:\n", f"{helpers}\nmodel:\n", 1)
        text = text.replace("repository: docker.io/aamsellem/llama-cpp-mtp", f"repository: {repository}")
        text = text.replace("repository: docker.io/aamsellem/vllm-qwen36-blackwell", f"repository: {repository}")
        text = text.replace("tag: master-ad27757", f"tag: {tag}").replace("tag: 0.20.0-genesis-v3", f"tag: {tag}")
        text = text.replace("repo: unsloth/Qwen3.6-27B-MTP-GGUF", f"repo: {REPO}").replace("file: Qwen3.6-27B-UD-Q3_K_XL.gguf", "file: m.gguf")
        text = text.replace("repo: Lorbus/Qwen3.6-27B-int4-AutoRound", f"repo: {VLLM_REPO}")
        (apps / name / "app.yaml").write_text(text)
    return apps


def snapshot(apps: Path) -> dict[str, bytes]:
    return {str(p.relative_to(apps)): p.read_bytes() for p in sorted(apps.rglob("*"))
            if p.is_file() and ".olares-pack" not in p.parts}  # the repository lock file says who held it


def err_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


# ---------------------------------------------------------------- pin against the real registry


@needs_registry
def test_pin_all_writes_the_registry_digest_and_the_hub_commit(images: Images, hub: FakeHub, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    apps = make_apps(tmp_path, images.repository, "multi")
    before = (apps / LLAMA / "app.yaml").read_text()
    assert main(["pin", "--all", "--apps-dir", str(apps)]) == ExitCode.OK
    out, err = capsys.readouterr()
    assert f"apps/{LLAMA}/app.yaml" in out and f"apps/{VLLM}/model.lock.json" in out
    assert "OCI index: linux/amd64, linux/arm64" in err
    after = (apps / LLAMA / "app.yaml").read_text()
    # the index digest skopeo pushed (the sha256 of the index bytes the layout holds) and that skopeo reads back
    assert images.multi == images.reg.raw_digest("acme/llama", "multi")
    assert f"    digest: {images.multi}\n" in after
    data = hub.files["m.gguf"]
    assert f"  revision: {COMMIT}\n" in after
    assert f"  size: {len(data)}\n  sha256: {hashlib.sha256(data).hexdigest()}\n" in after
    # comments and key order kept: only the pinned lines differ
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]
    assert [a.strip() for a, _ in changed][:2] == ["digest: null", "revision: main"]
    assert "# Only the prefix sha256:7451496e224c9 was ever published" in after
    lock = json.loads((apps / LLAMA / "model.lock.json").read_text())
    assert lock["revisions"][0]["commit"] == COMMIT and lock["revisions"][0]["revision"] == "main"
    files = {f["path"]: f for f in lock["revisions"][0]["files"]}
    assert files["m.gguf"]["sha256"] == hashlib.sha256(data).hexdigest() and files["README.md"]["sha256"] is None
    assert [(m["file"], m["revision"], m["arch"]) for m in lock["models"]] == [("m.gguf", COMMIT, "qwen35")]
    vllm = (apps / VLLM / "app.yaml").read_text()
    assert f"revision: {VLLM_COMMIT}" in vllm and f"digest: {images.multi}" in vllm
    vlock = json.loads((apps / VLLM / "model.lock.json").read_text())
    assert [f["path"] for f in vlock["revisions"][0]["files"]] == ["config.json", "model.safetensors"]
    # pinned apps no longer warn, and vram reads the lock offline
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert main(["vram", str(apps / LLAMA), "--format", "json"]) in (0, 1)
    assert "not pinned" not in capsys.readouterr().err
    # a second pin finds nothing to change
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    state = snapshot(apps)
    assert main(["pin", LLAMA, VLLM, "--apps-dir", str(apps)]) == ExitCode.OK
    assert "already pinned" in capsys.readouterr().err
    assert snapshot(apps) == state


@needs_registry
def test_a_shared_app_pins_its_helper_images_too(images: Images, hub: FakeHub, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The shared form runs llm-init and its chown step (current) and a proxy client (legacy)
    beside the engine: pin resolves all four."""
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    apps = make_apps(tmp_path, images.repository, "multi", shared=True)
    helper = f"{images.reg.host}/acme/helper"
    images.reg.push(images.layout, "multi", "acme/helper")
    text = (apps / LLAMA / "app.yaml").read_text().replace(f"{{repository: {images.repository}, tag: multi}}",
                                                            f"{{repository: {helper}, tag: multi}}")
    (apps / LLAMA / "app.yaml").write_text(text)
    assert main(["pin", LLAMA, "--image", "--apps-dir", str(apps)]) == ExitCode.OK
    app = parse_app((apps / LLAMA / "app.yaml").read_text())
    assert app.engine.proxy_image is not None
    assert {app.engine.image.digest, app.engine.llm_init.digest, app.engine.chown_image.digest,
            app.engine.proxy_image.digest} == {images.multi}
    assert capsys.readouterr().err.count("OCI index: linux/amd64, linux/arm64") == 4

    def online() -> list[tuple[str, str]]:
        main(["lint", str(apps / LLAMA), "--target", "current", "--format", "json", "--online"])
        return sorted((f["rule"], f["path"]) for f in json.loads(capsys.readouterr().out)["findings"]
                      if f["rule"].endswith("-online") or f["rule"] == "image.tag-moved")

    assert online() == []
    # the helpers' tag moves: `lint --online` checks them too
    images.reg.push(images.layout, "other", "acme/helper")
    auth = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}
    with urllib.request.urlopen(urllib.request.Request(  # noqa: S310 - loopback
            f"http://{images.reg.host}/v2/acme/helper/manifests/other", headers={"Accept": oci.OCI_INDEX, **auth})) as r:
        other = r.read()
    urllib.request.urlopen(urllib.request.Request(  # noqa: S310 - loopback
        f"http://{images.reg.host}/v2/acme/helper/manifests/multi", data=other, method="PUT",
        headers={"Content-Type": oci.OCI_INDEX, **auth})).close()
    assert online() == [("image.tag-moved", "engine.chown_image.tag"), ("image.tag-moved", "engine.llm_init.tag"),
                        ("image.tag-moved", "engine.proxy_image.tag")]


@needs_registry
def test_dry_run_shows_the_diff_and_writes_nothing(images: Images, hub: FakeHub, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    apps = make_apps(tmp_path, images.repository, "multi")
    state = snapshot(apps)
    assert main(["pin", VLLM, "--apps-dir", str(apps), "--dry-run", "--image"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert f"-    digest: null\n+    digest: {images.multi}\n" in out
    assert "revision" not in out and "model.lock.json" not in out  # --image: the model is left alone
    assert main(["pin", VLLM, "--apps-dir", str(apps), "--dry-run", "--model"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert f"+  revision: {VLLM_COMMIT}" in out and "--- /dev/null" in out and "digest" not in out.split("model.lock.json")[0]
    assert snapshot(apps) == state


@needs_registry
def test_a_docker_v2_manifest_is_pinned_by_its_digest(images: Images, hub: FakeHub, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    apps = make_apps(tmp_path, images.repository, "dock")
    assert main(["pin", VLLM, "--image", "--apps-dir", str(apps)]) == ExitCode.OK
    assert "Docker v2 manifest: linux/amd64" in capsys.readouterr().err
    assert f"digest: {images.dock}" in (apps / VLLM / "app.yaml").read_text()


@needs_registry
@pytest.mark.parametrize(("tag", "creds", "expected"), [
    ("arm", PASSWORD, "offers linux/arm64 only; the Olares One runs linux/amd64"),
    ("mult", PASSWORD, "not found on 127.0.0.1:{port} (MANIFEST_UNKNOWN: manifest unknown); nearest tags: multi"),
    ("multi", "wrong", "unauthorised: 127.0.0.1:{port} refused the credentials of alice from {config}"),
    ("multi", None, "unauthorised: 127.0.0.1:{port} needs a user and password"),
])
def test_registry_errors_are_one_line_exit_2_and_write_nothing(images: Images, hub: FakeHub, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               tag: str, creds: str | None, expected: str) -> None:
    if creds is None:
        monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "empty"))
    else:
        docker_config(tmp_path, monkeypatch, images.reg.host, USER, creds)
    apps = make_apps(tmp_path, images.repository, tag)
    state = snapshot(apps)
    # both apps: the good one is not written either when the other fails
    assert main(["pin", "--all", "--apps-dir", str(apps)]) == ExitCode.INPUT
    err = capsys.readouterr().err
    lines = err_lines(err)
    assert len(lines) == 1, err
    port = images.reg.host.split(":")[1]
    assert expected.format(port=port, config=tmp_path / "docker" / "config.json") in lines[0]
    assert snapshot(apps) == state


@needs_registry
def test_the_bearer_token_challenge(images: Images, hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    with token_front(images.reg, "bob", "token-pw") as (host, log):
        docker_config(tmp_path, monkeypatch, host, "bob", "token-pw")
        apps = make_apps(tmp_path, f"{host}/acme/llama", "multi")
        assert main(["pin", VLLM, "--image", "--apps-dir", str(apps)]) == ExitCode.OK
        assert f"digest: {images.multi}" in (apps / VLLM / "app.yaml").read_text()
        # challenged, then a token from the realm for the credentials, then the manifest with it
        assert log[:3] == ["GET /v2/acme/llama/manifests/multi -",
                           "GET /token?scope=repository%3Aacme%2Fllama%3Apull&service=olares-pack-test&client_id=olares-pack Basic",
                           "GET /v2/acme/llama/manifests/multi Bearer"]
        docker_config(tmp_path, monkeypatch, host, "bob", "nope")
        apps2 = make_apps(tmp_path / "2", f"{host}/acme/llama", "multi")
        assert main(["pin", VLLM, "--image", "--apps-dir", str(apps2)]) == ExitCode.INPUT
        assert "unauthorised: the token service" in capsys.readouterr().err


# ---------------------------------------------------------------- what a registry may answer


@pytest.fixture
def stub() -> Iterator[list[tuple[int, dict[str, str], bytes]]]:
    """A loopback server answering what it is told to (a registry's refusals the real one cannot be made to give)."""
    answers: list[tuple[int, dict[str, str], bytes]] = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            status, headers, body = answers.pop(0) if answers else (404, {}, b"")
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    answers.append((0, {"port": str(server.server_address[1])}, b""))
    try:
        yield answers
    finally:
        server.shutdown()
        server.server_close()


def _resolve(host: str) -> str:
    client = oci.RegistryClient(credentials=lambda _: None)
    try:
        oci.resolve_amd64(client, f"{host}/acme/llama", "v1")
    except oci.RegistryError as exc:
        return str(exc)
    return "resolved"


def test_refusals_each_get_one_line(stub: list[tuple[int, dict[str, str], bytes]]) -> None:
    port = stub.pop(0)[1]["port"]
    host = f"127.0.0.1:{port}"
    stub.append((429, {"Retry-After": "30"}, b""))
    assert _resolve(host) == f"{host}/acme/llama: rate-limited: {host} answered 429 Too Many Requests; retry after 30 s " \
                             "(an anonymous pull limit: docker login raises it)"
    stub.append((503, {"Content-Type": "application/json"}, b'{"errors":[{"code":"UNAVAILABLE","message":"maintenance"}]}'))
    assert "is refusing requests (UNAVAILABLE: maintenance)" in _resolve(host)
    stub.append((200, {"Content-Type": "application/vnd.docker.distribution.manifest.v1+prettyjws"}, b'{"schemaVersion": 1}'))
    assert "unknown media type 'application/vnd.docker.distribution.manifest.v1+prettyjws'" in _resolve(host)
    # a private repository: an anonymous token is handed, the pull is refused (Docker Hub, ghcr.io)
    challenge = {"WWW-Authenticate": f'Bearer realm="http://{host}/token",service="s"'}
    stub += [(401, challenge, b""), (200, {}, b'{"token": "anon"}'),
             (401, {}, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}')]
    assert "unauthorised: a private repository, or none of that name (UNAUTHORIZED: authentication required)" in _resolve(host)
    closed = f"127.0.0.1:{free_port()}"
    assert "cannot reach the registry (no network?)" in _resolve(closed)


def test_image_names_and_loopback_as_docker_reads_them() -> None:
    assert oci.ImageName.parse("nginx") == oci.ImageName("docker.io", "library/nginx")
    assert oci.ImageName.parse("docker.io/org/x").base_url == "https://registry-1.docker.io/v2/org/x"
    assert oci.ImageName.parse("ghcr.io/ggml-org/llama.cpp").base_url == "https://ghcr.io/v2/ggml-org/llama.cpp"
    assert oci.ImageName.parse("localhost:5000/a/b").base_url == "http://localhost:5000/v2/a/b"
    assert oci.ImageName.parse("127.0.0.1:5000/a").base_url == "http://127.0.0.1:5000/v2/a"
    assert oci.ImageName.parse("10.0.0.1:5000/a").base_url == "https://10.0.0.1:5000/v2/a"


def test_docker_config_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    auth = base64.b64encode(b"u:p").decode()
    (tmp_path / "config.json").write_text(json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": auth},
                                                                "ghcr.io": {"identitytoken": "tok"}}}))
    monkeypatch.delenv("DOCKER_AUTH_CONFIG", raising=False)
    assert oci.credentials_for("docker.io") == oci.Credentials("u", "p", str(tmp_path / "config.json"))
    assert oci.credentials_for("ghcr.io").identity_token == "tok"  # type: ignore[union-attr]
    assert oci.credentials_for("quay.io") is None
    monkeypatch.setenv("DOCKER_AUTH_CONFIG", json.dumps({"auths": {"quay.io": {"username": "q", "password": "w"}}}))
    assert oci.credentials_for("quay.io") == oci.Credentials("q", "w", "DOCKER_AUTH_CONFIG")


# ---------------------------------------------------------------- the hub's errors


def test_hub_errors_are_one_line(hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = make_apps(tmp_path, "docker.io/org/x", "v1")
    text = (apps / VLLM / "app.yaml").read_text()
    (apps / VLLM / "app.yaml").write_text(text.replace(f"repo: {VLLM_REPO}", "repo: acme/secret"))
    state = snapshot(apps)
    assert main(["pin", VLLM, "--model", "--apps-dir", str(apps)]) == ExitCode.INPUT
    assert err_lines(capsys.readouterr().err) == [
        "error: acme/secret@main: no such model, or a private one (HTTP 401); set HF_TOKEN if it is yours"]
    (apps / VLLM / "app.yaml").write_text(text.replace("revision: main", "revision: v9"))
    assert main(["pin", VLLM, "--model", "--apps-dir", str(apps)]) == ExitCode.INPUT
    assert "no such revision" in capsys.readouterr().err
    (apps / VLLM / "app.yaml").write_text(text)
    hub.fail_next.append((429, {"Retry-After": "12"}))
    assert main(["pin", VLLM, "--model", "--apps-dir", str(apps)]) == ExitCode.INPUT
    assert err_lines(capsys.readouterr().err) == [f"error: {VLLM_REPO}@main: rate-limited by Hugging Face (429); retry after 12 s"]
    (apps / LLAMA / "app.yaml").write_text((apps / LLAMA / "app.yaml").read_text().replace("file: m.gguf", "file: gone.gguf"))
    assert main(["pin", LLAMA, "--model", "--apps-dir", str(apps)]) == ExitCode.INPUT
    assert f"gone.gguf is not in {REPO} at main (commit {COMMIT})" in capsys.readouterr().err
    assert snapshot(apps) == {**state, f"{VLLM}/app.yaml": text.encode(),
                              f"{LLAMA}/app.yaml": (apps / LLAMA / "app.yaml").read_bytes()}


def test_vram_lock_reads_the_header_through_the_hub(hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = make_apps(tmp_path, "docker.io/org/x", "v1")
    assert main(["vram", str(apps / LLAMA), "--lock", "--format", "json"]) in (0, 1)
    lock = json.loads((apps / LLAMA / "model.lock.json").read_text())
    assert [(m["file"], m["revision"], m["file_size"]) for m in lock["models"]] == [("m.gguf", COMMIT, len(hub.files["m.gguf"]))]
    reads = [r for r in hub.requests if r["path"].startswith("/lfs/")]  # type: ignore[union-attr]
    assert reads and all(r["range"] for r in reads)
    assert hub.bytes_served < len(hub.files["m.gguf"]) / 2


# ---------------------------------------------------------------- --online


@needs_registry
def test_lint_and_release_online(images: Images, hub: FakeHub, tmp_path: Path, repo: Path,
                                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    docker_config(tmp_path, monkeypatch, images.reg.host, USER, PASSWORD)
    apps = make_apps(tmp_path, f"{images.reg.host}/acme/online", "multi")
    images.reg.push(images.layout, "multi", "acme/online")
    assert main(["pin", VLLM, "--apps-dir", str(apps)]) == ExitCode.OK
    capsys.readouterr()

    def online() -> list[dict[str, str]]:
        main(["lint", str(apps / VLLM), "--target", "current", "--format", "json", "--online"])
        return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"].endswith("-online") or f["rule"] == "image.tag-moved"]

    assert online() == []
    # the tag moves to another image: a warning naming both digests
    images.reg.push(images.layout, "other", "acme/online")
    with urllib.request.urlopen(urllib.request.Request(  # noqa: S310 - loopback
            f"http://{images.reg.host}/v2/acme/online/manifests/other",
            headers={"Accept": oci.OCI_INDEX, "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})) as r:
        other = r.read()
    put = urllib.request.Request(f"http://{images.reg.host}/v2/acme/online/manifests/multi", data=other, method="PUT",
                                 headers={"Content-Type": oci.OCI_INDEX, "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
    urllib.request.urlopen(put).close()  # noqa: S310 - loopback
    moved = "sha256:" + hashlib.sha256(other).hexdigest()
    found = online()
    assert [(f["rule"], f["severity"]) for f in found] == [("image.tag-moved", "warning")]
    assert found[0]["message"] == f"{images.reg.host}/acme/online:multi now names {moved}, not the pinned {images.multi}"
    # pin again follows the tag, and says it moved
    assert main(["pin", VLLM, "--image", "--dry-run", "--apps-dir", str(apps)]) == ExitCode.OK
    out, err = capsys.readouterr()
    assert f"acme/online:multi moved from {images.multi} to {moved}" in err and f"+    digest: {moved}" in out
    # the pinned digest is deleted from the registry: an error
    delete = urllib.request.Request(f"http://{images.reg.host}/v2/acme/online/manifests/{images.multi}", method="DELETE",
                                    headers={"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
    urllib.request.urlopen(delete).close()  # noqa: S310 - loopback
    assert ("image.digest-online", "error") in [(f["rule"], f["severity"]) for f in online()]
    # offline, lint says nothing of it (and asks nobody)
    main(["lint", str(apps / VLLM), "--target", "current", "--format", "json"])
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if "online" in f["rule"] or f["rule"] == "image.tag-moved"]
    # release --online refuses to publish it; nothing is written
    shutil.copy(apps / VLLM / "app.yaml", repo / "apps" / VLLM / "app.yaml")
    shutil.copy(apps / VLLM / "model.lock.json", repo / "apps" / VLLM / "model.lock.json")
    state = snapshot(repo)
    code = main(["release", VLLM, "--bump", "patch", "--summary", "pinned", "--online", "--apps-dir", str(repo / "apps")])
    err = capsys.readouterr().err
    assert code == 1 and "image.digest-online" in err and "nothing was released" in err
    assert snapshot(repo) == state


def test_lint_online_reports_a_commit_gone_from_the_hub(hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = make_apps(tmp_path, "docker.io/org/x", "v1")  # digest null: nothing to ask a registry
    assert main(["pin", VLLM, "--model", "--apps-dir", str(apps)]) == ExitCode.OK
    capsys.readouterr()

    def online() -> list[tuple[str, str, str]]:
        code = main(["lint", str(apps / VLLM), "--target", "current", "--format", "json", "--online"])
        found = [(f["rule"], f["severity"], f["message"]) for f in json.loads(capsys.readouterr().out)["findings"]
                 if f["rule"] == "model.revision-online"]
        assert code == (1 if found else 0)
        return found

    assert online() == []
    del hub.repos[VLLM_REPO].commits[VLLM_COMMIT]  # history rewritten (a force-push, a squash)
    assert online() == [("model.revision-online", "error",
                         f"{VLLM_REPO}@{VLLM_COMMIT}: the pinned commit no longer exists on Hugging Face")]


@pytest.mark.parametrize(("answers", "expected"), [
    ([(429, {"Retry-After": "30"}, b"")], "answered 429 Too Many Requests; retry after 30 s"),
    ([(200, {"Content-Type": "application/vnd.docker.distribution.manifest.v1+prettyjws"}, b"{}")], "unknown media type"),
    ([(401, {"WWW-Authenticate": 'Bearer realm="http://{host}/token",service="s"'}, b""), (200, {}, b'{"token": "anon"}'),
      (401, {}, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}')], "a private repository"),
])
def test_pin_refused_by_a_registry_exits_2_writing_nothing(stub: list[tuple[int, dict[str, str], bytes]], hub: FakeHub,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str],
                                                            answers: list[tuple[int, dict[str, str], bytes]], expected: str) -> None:
    host = f"127.0.0.1:{stub.pop(0)[1]['port']}"
    stub += [(status, {k: v.replace("{host}", host) for k, v in headers.items()}, body) for status, headers, body in answers]
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "none"))
    apps = make_apps(tmp_path, f"{host}/acme/llama", "v1")
    state = snapshot(apps)
    assert main(["pin", "--all", "--apps-dir", str(apps)]) == ExitCode.INPUT
    lines = err_lines(capsys.readouterr().err)
    assert len(lines) == 1 and expected in lines[0], lines
    assert snapshot(apps) == state
