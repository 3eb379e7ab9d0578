"""The model download step, run for real (sh + curl) against a local fake of the Hugging Face
`resolve` endpoint that honours HTTP Range requests like the real one."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import pytest
from fakehub import REPO, REVISION, FakeHub, serve

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
SH = shutil.which("sh") or "/bin/sh"


@pytest.fixture
def hub() -> Iterator[tuple[FakeHub, str]]:
    with serve() as served:
        served[0].redirect_lfs = False  # these tests count requests to the resolve URL itself
        yield served


def models(tmp_path: Path) -> Path:
    """The app's own folder of the store, as the chart lays it out (MODELS_ROOT/hf-files/<repo>/<rev>)."""
    return tmp_path / "store" / "hf-files" / REPO / REVISION


def run_script(tmp_path: Path, endpoint: str, files: str, token: str = "",
               model_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "download.sh"
    script.write_text(resources.files("olares_pack.templates").joinpath("download.sh").read_text())
    env = {
        "PATH": os.environ["PATH"],
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": token,
        "MODEL_REPO": REPO,
        "MODEL_REVISION": REVISION,
        "MODELS_ROOT": str(tmp_path / "store"),
        "MODEL_DIR": str(model_dir or models(tmp_path)),
        "MODEL_CACHE": str(tmp_path / "hub"),
        "MODEL_FILES": files,
        "DOWNLOAD_ATTEMPTS": "3",
        "DOWNLOAD_RETRY_DELAY": "0",
    }
    return subprocess.run([SH, str(script)], env=env, capture_output=True, text=True, timeout=60)


def line(name: str, data: bytes, sha: bool = True) -> str:
    """A MODEL_FILES line as render.py writes it: name|size|sha256|percent-encoded URL path."""
    return f"{name}|{len(data)}|{hashlib.sha256(data).hexdigest() if sha else ''}|{urlpath(name)}"


def urlpath(name: str) -> str:
    return f"{quote(REPO)}/resolve/{quote(REVISION)}/{quote(name)}"


def test_fresh_download_without_token(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (models(tmp_path) / "model.gguf").read_bytes() == PAYLOAD
    assert not (models(tmp_path) / "model.gguf.part").exists()
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
    models(tmp_path).mkdir(parents=True)
    (models(tmp_path) / "model.gguf.part").write_bytes(PAYLOAD[:300_000])
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    assert fake.requests[0]["range"] == "bytes=300000-"
    assert (models(tmp_path) / "model.gguf").read_bytes() == PAYLOAD


def test_retries_after_a_dropped_connection_and_resumes(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    fake.cut_first_after = 100_000
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(fake.requests) == 2 and fake.requests[1]["range"] == "bytes=100000-"
    assert (models(tmp_path) / "model.gguf").read_bytes() == PAYLOAD


def test_skips_a_verified_file(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    models(tmp_path).mkdir(parents=True)
    (models(tmp_path) / "model.gguf").write_bytes(PAYLOAD)
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    assert fake.requests == []
    assert "present and verified, skipped" in proc.stdout


def test_replaces_a_file_with_the_wrong_size(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    models(tmp_path).mkdir(parents=True)
    (models(tmp_path) / "model.gguf").write_bytes(b"x" * 10)
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    assert (models(tmp_path) / "model.gguf").read_bytes() == PAYLOAD


def test_checksum_mismatch_fails_and_keeps_nothing(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    wrong = f"model.gguf|{len(PAYLOAD)}|{'0' * 64}|{urlpath('model.gguf')}"
    proc = run_script(tmp_path, url, wrong)
    assert proc.returncode != 0
    assert not (models(tmp_path) / "model.gguf").exists()
    assert "does not match" in proc.stdout


def test_missing_file_fails(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    _, url = hub
    proc = run_script(tmp_path, url, f"absent.gguf|||{urlpath('absent.gguf')}")
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
    assert (models(tmp_path) / "q3" / "part-00002-of-00002.gguf").read_bytes() == b


def test_python_fallback_when_the_image_has_no_curl(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    """vLLM images ship python3 but not always curl or wget: the script falls back to urllib."""
    fake, url = hub
    fake.files["model.safetensors"] = PAYLOAD
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    os.symlink(os.path.realpath(sys.executable), bin_dir / "python3")
    for tool in ("wc", "tr", "cut", "mkdir", "mv", "rm", "dirname", "basename", "sleep", "sha256sum"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    models(tmp_path).mkdir(parents=True)
    (models(tmp_path) / "model.safetensors.part").write_bytes(PAYLOAD[:4096])
    old_path = os.environ["PATH"]
    os.environ["PATH"] = str(bin_dir)
    try:
        proc = run_script(tmp_path, url, line("model.safetensors", PAYLOAD))
    finally:
        os.environ["PATH"] = old_path
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fake.requests[0]["range"] == "bytes=4096-"
    assert (models(tmp_path) / "model.safetensors").read_bytes() == PAYLOAD


def _recording(tmp_path: Path, tool: str) -> tuple[Path, Path]:
    """A wrapper of TOOL on PATH that records its argv (what `ps` shows every user), then runs it."""
    bin_dir, log = tmp_path / "bin", tmp_path / f"{tool}.argv"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / tool
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{log}"\nexec {shutil.which(tool)} "$@"\n')
    wrapper.chmod(0o755)
    return bin_dir, log


def test_the_token_never_reaches_a_command_line(tmp_path: Path, hub: tuple[FakeHub, str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    bin_dir, log = _recording(tmp_path, "curl")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD), token='hf_se"cr\\et')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fake.requests[0]["auth"] == 'Bearer hf_se"cr\\et'  # quotes and backslashes survive curl's config
    argv = log.read_text()
    assert "hf_se" not in argv and "-g" in argv.split()


@pytest.mark.skipif(shutil.which("wget") is None, reason="no wget here")
def test_gnu_wget_reads_the_token_from_a_private_wgetrc(tmp_path: Path, hub: tuple[FakeHub, str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fake, url = hub
    fake.files["model.gguf"] = PAYLOAD
    bin_dir, log = _recording(tmp_path, "wget")
    for tool in ("sh", "wc", "tr", "cut", "mkdir", "mv", "rm", "dirname", "basename", "sleep", "sha256sum", "grep",
                 "mktemp", "cat", "kill"):
        if shutil.which(tool) and not (bin_dir / tool).exists():
            os.symlink(shutil.which(tool), bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))  # no curl
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD), token="hf_wgettoken")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fake.requests[-1]["auth"] == "Bearer hf_wgettoken"
    assert "hf_wgettoken" not in log.read_text()
    assert not [p for p in Path(tempfile.gettempdir()).glob("tmp*") if p.is_file() and "hf_wgettoken" in p.read_text(errors="ignore")]


def test_file_names_are_data_not_globs_or_paths(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    """A space, '+', '=' or brackets in a file name reach the hub percent-encoded, and curl does not
    expand [1-2] as a glob."""
    fake, url = hub
    name = "q [1-2] +x=y.gguf"
    fake.files[name] = PAYLOAD[:5000]
    proc = run_script(tmp_path, url, line(name, PAYLOAD[:5000]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (models(tmp_path) / name).read_bytes() == PAYLOAD[:5000]
    assert fake.requests[0]["path"] == "/" + urlpath(name)


@pytest.mark.parametrize("name", ["../other/model.gguf", "/etc/passwd", "a/../../b.gguf", "./x.gguf", "a//b.gguf"])
def test_a_name_outside_the_app_folder_is_refused(tmp_path: Path, hub: tuple[FakeHub, str], name: str) -> None:
    fake, url = hub
    neighbour = tmp_path / "store" / "hf-files" / REPO / "other"
    neighbour.mkdir(parents=True)
    (neighbour / "model.gguf").write_bytes(b"another app's file")
    own = str(models(tmp_path))

    def outside() -> list[str]:
        return sorted(str(p) for p in tmp_path.rglob("*") if p.name != "download.sh" and not str(p).startswith(own))

    before = outside()
    proc = run_script(tmp_path, url, f"{name}|5||{urlpath('x')}")
    assert proc.returncode != 0 and "refusing file name" in proc.stdout
    assert (neighbour / "model.gguf").read_bytes() == b"another app's file"
    assert outside() == before and fake.requests == []


def test_a_model_dir_outside_the_store_is_refused(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    _, url = hub
    for bad in (tmp_path / "elsewhere", tmp_path / "store" / "hf-files" / ".." / "x"):
        proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD), model_dir=bad)
        assert proc.returncode != 0 and "MODEL_DIR" in proc.stdout
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "store" / "x").exists()


def test_follows_the_hubs_redirect_to_its_cdn_without_the_token(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    fake, url = hub
    fake.redirect_lfs = True  # as huggingface.co answers for LFS files: 302 to another origin
    fake.files["model.gguf"] = PAYLOAD
    proc = run_script(tmp_path, url, line("model.gguf", PAYLOAD), token="hf_abc")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (models(tmp_path) / "model.gguf").read_bytes() == PAYLOAD
    assert [(str(r["path"]).startswith("/lfs/"), r["auth"]) for r in fake.requests] == [(False, "Bearer hf_abc"), (True, None)]


def test_without_a_recorded_sha256_the_one_hugging_face_publishes_is_checked(tmp_path: Path, hub: tuple[FakeHub, str]) -> None:
    """The resolve URL answers an LFS file with X-Linked-Etag (its sha256) and X-Linked-Size before
    redirecting: a download the app version records no checksum for is checked against those."""
    fake, url = hub
    fake.redirect_lfs = True
    fake.files["model.gguf"] = PAYLOAD
    unrecorded = f"model.gguf|||{urlpath('model.gguf')}"
    proc = run_script(tmp_path, url, unrecorded)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"checking against the one Hugging Face publishes ({hashlib.sha256(PAYLOAD).hexdigest()})" in proc.stdout
    assert (models(tmp_path) / "model.gguf").read_bytes() == PAYLOAD
    # a damaged partial download (other bytes before the resume point) is caught and removed
    shutil.rmtree(tmp_path / "store")
    models(tmp_path).mkdir(parents=True)
    (models(tmp_path) / "model.gguf.part").write_bytes(b"\0" * 300_000)
    proc = run_script(tmp_path, url, unrecorded)
    assert proc.returncode != 0
    assert "size or sha256 does not match" in proc.stdout
    assert not (models(tmp_path) / "model.gguf").exists() and not (models(tmp_path) / "model.gguf.part").exists()
    # a file Hugging Face publishes no sha256 for (kept in git, not LFS) is fetched and said to be unverified
    fake.redirect_lfs = False
    shutil.rmtree(tmp_path / "store")
    proc = run_script(tmp_path, url, unrecorded)
    assert proc.returncode == 0 and "model.gguf: NOT VERIFIED" in proc.stdout
