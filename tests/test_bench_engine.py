"""`bench` against the real engine: llama-server b11434 for CPU (`make llama-server` builds it once
per machine into ~/.cache/olares-pack) serving a small GGUF of the example app's architecture
whose MTP drafts are accepted (tests/tinyqwen.py)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import tinyqwen

from olares_pack.bench import harness
from olares_pack.bench.method import Method
from olares_pack.common.cache import cache_root

ROOT = Path(__file__).resolve().parent.parent
CACHE = cache_root()  # where `make llama-server` builds it ($OLARES_PACK_CACHE)
LLAMA = CACHE / "llama-server-b11434-cpu" / "bin" / "llama-server"
CLI = [sys.executable, "-c", "from olares_pack.cli import main; main()"]
NAME = "llamacppqwen36mtpone"

pytestmark = pytest.mark.skipif(not LLAMA.is_file(), reason=f"{LLAMA} is not built: `make llama-server` builds it "
                                f"(once per machine; see {CACHE}/build-cpu.log if it failed)")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    def __init__(self, model: Path, log: Path, ctx: int = 4096, draft_n: int = 3) -> None:
        self.port = _port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        # one thread: ggml's threads spin at every barrier, and on a busy 2-core machine (the suite
        # runs on both cores) two of them answered 5x slower than one (24 against 144 tokens/s)
        self.proc = subprocess.Popen(
            [str(LLAMA), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "-c", str(ctx), "-np", "1",
             "-t", "1", "--spec-type", "draft-mtp", "--spec-draft-n-max", str(draft_n), "--alias", "tiny"],
            stdout=log.open("w"), stderr=subprocess.STDOUT, env={**os.environ, "LD_LIBRARY_PATH": str(LLAMA.parent)})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama-server did not come up: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def logged(self, requests: int) -> tuple[list[float], list[tuple[int, int]]]:
        """The server's own log: generation tokens/s and (accepted, drafted) of each request. The
        server logs a request's timings after answering it: wait for the requests' lines."""
        deadline = time.monotonic() + 10
        while len(re.findall("draft acceptance =", text := self.log.read_text())) < requests and time.monotonic() < deadline:
            time.sleep(0.1)
        tps = [float(m) for m in re.findall(r"\|\s+eval time = .*?,\s+([\d.]+) tokens per second", text)]
        drafts = [(int(a), int(g)) for a, g in re.findall(r"draft acceptance = [\d.]+ \(\s*(\d+) accepted /\s*(\d+) generated", text)]
        return tps, drafts


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    return {a: tinyqwen.write(d / f"tiny-{a}.gguf", a) for a in ("full", "mix80")}


@pytest.fixture
def engine(models: dict[str, Path], tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Engine]:
    accept, ctx = getattr(request, "param", ("full", 4096))
    e = Engine(models[accept], tmp_path / "server.log", ctx)
    try:
        yield e
    finally:
        e.stop()


def test_harness_figures_are_the_servers_own(engine: Engine) -> None:
    result = harness.bench(harness.Client(engine.url), Method(runs=3, warmups=1, max_tokens=300))
    assert result.server.kind == "llama-server" and result.server.build and "11434" in result.server.build
    logged_tps, logged_drafts = engine.logged(4)
    runs = result.runs
    # the log prints tokens/s with two decimals: the measured runs are the last three requests
    assert [round(r.tokens_per_s, 2) for r in runs] == logged_tps[-3:]
    assert [(r.draft_accepted, r.draft_n) for r in runs] == logged_drafts[-3:]
    assert all(r.tokens == 300 and r.draft_n and r.draft_accepted == r.draft_n for r in runs)  # `full`: all accepted
    # every measured prompt was processed afresh: its whole length, no cached tokens
    assert len({r.prompt_tokens for r in runs}) == 1 and runs[0].prompt_tokens > 300
    assert all(r.ttft_ms and r.ttft_ms > 0 for r in runs)
    # what a record keeps of the server, as it reports it (/props model_path), and a result that
    # `--from-json` accepts: every run's figures read again from the server's own timings
    assert result.server.model_file and result.server.model_file.endswith("tiny-full.gguf")
    from olares_pack.bench import report

    doc = report.result_json(result)
    assert report.check_imported(doc, "result").tool == doc["tool"]


@pytest.mark.parametrize("engine", [("mix80", 4096)], indirect=True)
def test_acceptance_is_what_the_model_makes(engine: Engine) -> None:
    result = harness.bench(harness.Client(engine.url), Method(runs=2, warmups=0, max_tokens=400))
    drafted = sum(r.draft_n or 0 for r in result.runs)
    accepted = sum(r.draft_accepted or 0 for r in result.runs)
    # synth.py's loop simulation of draft-and-verify on the mix80 cycle, at draft n 3: 0.78
    assert accepted / drafted == pytest.approx(tinyqwen.expected_share("mix80", 3), abs=0.03)


def test_a_server_killed_mid_run_fails_the_bench(engine: Engine, tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    import shutil

    shutil.copytree(ROOT / "apps" / NAME, apps / NAME)
    proc = subprocess.Popen([*CLI, "bench", NAME, "--apps-dir", str(apps), "--endpoint", engine.url, "--runs", "50",
                             "--warmups", "0", "--max-tokens", "600", "--record", "--device", "cpu"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # the first run is done: the server dies during a later one
        if line.startswith("run 1 of 50"):
            break
    engine.proc.kill()
    err = proc.stderr.read()
    assert proc.wait(60) == 1
    assert "run 2 of 50" in err and ("stopped answering" in err or "stopped mid-answer" in err)
    assert (apps / NAME / "bench" / "1.0.13.json").read_bytes() == (ROOT / "apps" / NAME / "bench" / "1.0.13.json").read_bytes()


@pytest.mark.parametrize("engine", [("full", 2048)], indirect=True)
def test_fill_soak_drives_the_context_to_its_size(engine: Engine, tmp_path: Path) -> None:
    out = subprocess.run([*CLI, "bench", NAME, "--endpoint", engine.url, "--fill", "--ctx-size", "2048",
                          "--fill-steps", "3", "--fill-tokens", "64", "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["soak"]["outcome"] == "passed" and doc["steps"] == [640, 1280, 1920]
    assert [r["prompt_tokens"] for r in doc["runs"]] == [640, 1280, 1920]
    assert doc["soak"]["filled_to"] == 1920 + 64 and all(r["draft_n"] for r in doc["runs"])
    assert doc["soak"]["estimate_mib"] > 20000  # vram's estimate of the real app, printed beside any peak


@pytest.mark.parametrize("engine", [("full", 1024)], indirect=True)
def test_fill_soak_fails_when_a_step_does_not_fit(engine: Engine) -> None:
    # the version says 4096, the server was started with 1024: the soak's larger steps fail
    out = subprocess.run([*CLI, "bench", NAME, "--endpoint", engine.url, "--fill", "--ctx-size", "4096",
                          "--fill-steps", "2", "--fill-tokens", "32"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 1
    assert "soak FAILED" in out.stdout and "soak step 1 of 2" in out.stderr
