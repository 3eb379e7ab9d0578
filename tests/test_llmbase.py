"""The shared LLM form (llmbase): the engine's wrapper verifies the model before the engine starts,
and the rendered chart follows the official base chart of beclab/apps field by field."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import APPS

from olares_pack import fsio, helm, llmbase, render, targets
from olares_pack.manifest import load_app

REPO = "example/tiny-GGUF"
FILE = "tiny-Q4_K_M.gguf"


def _app(tmp_path: Path, *, size: int, sha256: str) -> Path:
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text()
    text = text.replace("repo: unsloth/Qwen3.6-27B-MTP-GGUF", f"repo: {REPO}")
    text = text.replace("file: Qwen3.6-27B-UD-Q3_K_XL.gguf", f"file: {FILE}\n  size: {size}\n  sha256: {sha256}")
    text = text.replace("targets: [current, legacy]", "targets: [current]")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    return app_dir


def _objects(app_dir: Path, tmp_path: Path, gpu: str | None = "nvidia") -> list[dict[str, Any]]:
    files = render.render(load_app(app_dir), targets.CURRENT)
    chart = tmp_path / "chart" / app_dir.name
    fsio.write_tree(files, chart)
    manifest = yaml.safe_load(files["OlaresManifest.yaml"])
    values = helm.installer_values(app_dir.name, [e["name"] for e in manifest["entrances"]], gpu_type=gpu)
    return [o for _, o in helm.objects(helm.render(helm.load(chart), values, namespace="ns"))]


class Device:
    """What the engine container sees, on this machine: the HF cache llm-init filled, its run-state
    folder with the sentinel, the verdicts folder; the engine binary is a stand-in that records
    its argv (the real one needs the GPU)."""

    def __init__(self, tmp_path: Path, objects: list[dict[str, Any]], content: bytes) -> None:
        self.root = tmp_path / "device"
        dep = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] != "llminit")
        self.container = dep["spec"]["template"]["spec"]["containers"][0]
        cm = next(o for o in objects if o["kind"] == "ConfigMap")
        self.script = self.root / "engine.sh"
        self.root.mkdir()
        self.script.write_text(cm["data"]["engine.sh"])
        repo_dir = self.root / "hub" / f"models--{REPO.replace('/', '--')}"
        (repo_dir / "refs").mkdir(parents=True)
        (repo_dir / "refs" / "main").write_text("0" * 40)
        snap = repo_dir / "snapshots" / ("0" * 40)
        snap.mkdir(parents=True)
        blob = repo_dir / "blobs" / "b1"
        blob.parent.mkdir()
        blob.write_bytes(content)
        (snap / FILE).symlink_to(blob)  # the hub cache's layout: snapshot entries link to blobs
        (self.root / "run").mkdir()
        (self.root / "run" / "model_download_finish").write_text("")
        (self.root / "run" / "engine_args").write_text(
            next(e["value"] for e in self.container["env"] if e["name"] == "ENGINE_ARGS"))
        self.engine_log = self.root / "engine-argv"
        fake = self.root / "llama-server"
        fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {self.engine_log}\n')
        fake.chmod(0o755)
        self.blob = blob

    def start(self) -> subprocess.CompletedProcess[str]:
        env = {e["name"]: e["value"] for e in self.container["env"] if "value" in e}
        env.update(PATH=os.environ["PATH"], HF_HUB_CACHE=str(self.root / "hub"), RUN_DIR=str(self.root / "run"),
                   VERIFY_DIR=str(self.root / "verified"), LLAMA_SERVER_BIN=str(self.root / "llama-server"),
                   TERMINATION_LOG=str(self.root / "termination-log"), WAIT_INTERVAL="1")
        if self.engine_log.exists():
            self.engine_log.unlink()
        return subprocess.run(["/bin/sh", str(self.script)], env=env, capture_output=True, text=True, timeout=60)


CONTENT = b"GGUF" + bytes(range(256)) * 64


def test_a_matching_model_starts_the_engine_and_is_hashed_once(tmp_path: Path) -> None:
    app_dir = _app(tmp_path, size=len(CONTENT), sha256=hashlib.sha256(CONTENT).hexdigest())
    device = Device(tmp_path, _objects(app_dir, tmp_path), CONTENT)
    first = device.start()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "checking sha256" in first.stdout and "model verified" in first.stdout
    argv = device.engine_log.read_text().split("\n")
    assert argv[:2] == ["--model", str(device.root / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots" / ("0" * 40) / FILE)]
    assert argv[argv.index("--alias") + 1] == "example/tiny-GGUF:Q4_K_M"
    assert argv[argv.index("--port") + 1] == "8081"
    assert argv[argv.index("--ctx-size") + 1] == "262144"
    assert '{"enable_thinking":false}' in argv  # a JSON argument survives the word split
    # a restart does not hash the file again
    second = device.start()
    assert second.returncode == 0 and "checking sha256" not in second.stdout
    assert "checked before (ok)" in second.stdout


def test_a_wrong_sha256_stops_the_engine_with_the_message(tmp_path: Path) -> None:
    wrong = hashlib.sha256(b"another file").hexdigest()
    app_dir = _app(tmp_path, size=len(CONTENT), sha256=wrong)
    device = Device(tmp_path, _objects(app_dir, tmp_path), CONTENT)
    run = device.start()
    assert run.returncode == 3
    assert not device.engine_log.exists(), "the engine started on a file that differs"
    message = f"MODEL CHECK FAILED: {FILE}: sha256 {hashlib.sha256(CONTENT).hexdigest()}, expected {wrong};"
    assert message in run.stdout
    assert message in (device.root / "termination-log").read_text()
    # once per file: the restart fails again at once, without hashing
    again = device.start()
    assert again.returncode == 3 and "checking sha256" not in again.stdout and message in again.stdout
    # a new download (another file) is checked again
    device.blob.write_bytes(CONTENT + b"x")
    third = device.start()
    assert third.returncode == 3 and f"size {len(CONTENT) + 1} bytes, expected {len(CONTENT)}" in third.stdout


def test_a_truncated_file_is_refused_without_hashing(tmp_path: Path) -> None:
    app_dir = _app(tmp_path, size=len(CONTENT) * 2, sha256=hashlib.sha256(CONTENT).hexdigest())
    device = Device(tmp_path, _objects(app_dir, tmp_path), CONTENT)
    run = device.start()
    assert run.returncode == 3 and "checking sha256" not in run.stdout
    assert f"size {len(CONTENT)} bytes, expected {len(CONTENT) * 2}" in run.stdout
    assert not device.engine_log.exists()


def test_engine_args_refuse_white_space(tmp_path: Path) -> None:
    from olares_pack.errors import InputError

    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text().replace(
        "  chat_template_kwargs: {enable_thinking: false}", "  chat_template_kwargs: {enable_thinking: false}\n  extra_args: [--system-prompt, two words]")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    with pytest.raises(InputError, match="white space"):
        llmbase.engine_args(load_app(app_dir))
