"""The model download step, run for real (sh + curl) against a local fake of the Hugging Face
`resolve` endpoint that honours HTTP Range requests like the real one."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from fakehub import REPO, REVISION, FakeHub, serve

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
SH = shutil.which("sh") or "/bin/sh"


@pytest.fixture
def hub() -> Iterator[tuple[FakeHub, str]]:
    with serve() as served:
        yield served


def run_script(tmp_path: Path, endpoint: str, files: str, token: str = "") -> subprocess.CompletedProcess[str]:
    script = tmp_path / "download.sh"
    script.write_text(resources.files("olares_pack.templates").joinpath("download.sh").read_text())
    env = {
        "PATH": os.environ["PATH"],
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": token,
        "MODEL_REPO": REPO,
        "MODEL_REVISION": REVISION,
        "MODEL_DIR": str(tmp_path / "models"),
        "MODEL_CACHE": str(tmp_path / "hub"),
        "MODEL_FILES": files,
        "DOWNLOAD_ATTEMPTS": "3",
        "DOWNLOAD_RETRY_DELAY": "0",
    }
    return subprocess.run([SH, str(script)], env=env, capture_output=True, text=True, timeout=60)


def line(name: str, data: bytes, sha: bool = True) -> str:
    return f"{name}|{len(data)}|{hashlib.sha256(data).hexdigest() if sha else ''}"


def test_fresh_download_without_token(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "models" / "model.gguf").read_bytes() == PAYLOAD
    assert not (tmp_path / "models" / "model.gguf.part").exists()
    assert [r["auth"] for r in fake.requests] == [None]
    assert "model.gguf: done" in proc.stdout


def test_token_is_sent_when_given(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD), token="hf_abc")
    assert proc.returncode == 0, proc.stderr
    assert fake.requests[0]["auth"] == "Bearer hf_abc"
    assert "hf_abc" not in proc.stdout + proc.stderr  # never logged


def test_resumes_a_partial_file(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "model.gguf.part").write_bytes(PAYLOAD[:300_000])
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    assert fake.requests[0]["range"] == "bytes=300000-"
    assert (tmp_path / "models" / "model.gguf").read_bytes() == PAYLOAD


def test_retries_after_a_dropped_connection_and_resumes(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    fake.cut_first_after = 100_000
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(fake.requests) == 2 and fake.requests[1]["range"] == "bytes=100000-"
    assert (tmp_path / "models" / "model.gguf").read_bytes() == PAYLOAD


def test_skips_a_verified_file(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "model.gguf").write_bytes(PAYLOAD)
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    assert fake.requests == []
    assert "present and verified, skipped" in proc.stdout


def test_replaces_a_file_with_the_wrong_size(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "model.gguf").write_bytes(b"x" * 10)
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "models" / "model.gguf").read_bytes() == PAYLOAD


def test_checksum_mismatch_fails_and_keeps_nothing(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    wrong = f"model.gguf|{len(PAYLOAD)}|{'0' * 64}"
    proc = run_script(tmp_path, url, wrong)
    assert proc.returncode != 0
    assert not (tmp_path / "models" / "model.gguf").exists()
    assert "does not match" in proc.stdout


def test_missing_file_fails(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    _, url = hub
    proc = run_script(tmp_path, url, "absent.gguf||")
    assert proc.returncode != 0
    assert "failed after 3 attempts" in proc.stdout


def test_several_files_in_subfolders(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    a, b = PAYLOAD[:1000], PAYLOAD[1000:5000]
    fake.files["q3/part-00001-of-00002.gguf"] = a
    fake.files["q3/part-00002-of-00002.gguf"] = b
    files = "\n".join([line("q3/part-00001-of-00002.gguf", a), line("q3/part-00002-of-00002.gguf", b, sha=False)])
    proc = run_script(tmp_path, url, files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "models" / "q3" / "part-00002-of-00002.gguf").read_bytes() == b


def test_python_fallback_when_the_image_has_no_curl(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    """vLLM images ship python3 but not always curl or wget: the script falls back to urllib."""
    fake, url = hub
    fake.files["model.safetensors"] = PAYLOAD
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    os.symlink(os.path.realpath(sys.executable), bin_dir / "python3")
    for tool in ("wc", "tr", "cut", "mkdir", "mv", "rm", "dirname", "basename", "sleep", "sha256sum"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "model.safetensors.part").write_bytes(PAYLOAD[:4096])
    old_path = os.environ["PATH"]
    os.environ["PATH"] = str(bin_dir)
    try:
        proc = run_script(tmp_path, url, line("model.safetensors", PAYLOAD))
    finally:
        os.environ["PATH"] = old_path
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fake.requests[0]["range"] == "bytes=4096-"
    assert (tmp_path / "models" / "model.safetensors").read_bytes() == PAYLOAD
