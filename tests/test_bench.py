"""`bench`, `history` and the bench records, against a server that answers like llama-server (or
vLLM) with known per-run timings; the real engine is in test_bench_engine.py."""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest
from fakellama import FakeLlama

from olares_pack.bench import describe, records
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode

NAME = "llamacppqwen36mtpone"


def timings(tps: list[float], drafts: list[int], accepted: list[int]) -> list[dict[str, float]]:
    return [{"prompt_n": 120, "prompt_per_second": 400.0 + i, "predicted_n": 2000, "predicted_per_second": t,
             "draft_n": d, "draft_n_accepted": a} for i, (t, d, a) in enumerate(zip(tps, drafts, accepted, strict=True))]


# two warm-ups whose figures must not count, then the 1.0.9 runs of the history
WARM = [10.0, 11.0]
RUNS = [74.90, 72.60, 75.01, 74.32, 74.31, 73.73, 73.87, 75.14, 74.35, 74.62]
DRAFTS = [1668, 1713, 1653, 1663, 1660, 1672, 1668, 1639, 1659, 1650]
ACCEPTED = [1442, 1428, 1447, 1444, 1445, 1441, 1442, 1452, 1446, 1448]


def bench_json(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict | None, str]:
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--format", "json", *args])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 and out.out.strip() else None), out.err


def test_bench_reports_the_servers_timings_exactly(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, doc, err = bench_json(repo, capsys, "--endpoint", fake.url)
    assert code == 0, err
    s = doc["summary"]
    assert [r["tokens_per_s"] for r in doc["runs"]] == RUNS
    assert s["mean"] == statistics.fmean(RUNS) and f"{s['mean']:.2f}" == "74.28"
    assert (s["min"], s["max"]) == (72.60, 75.14)
    assert s["stdev"] == pytest.approx(statistics.stdev(RUNS), rel=1e-12)
    assert s["acceptance"] == sum(ACCEPTED) / sum(DRAFTS) and f"{s['acceptance'] * 100:.1f}" == "86.7"
    assert s["prompt_tokens_per_s"] == statistics.fmean(402.0 + i for i in range(10))
    assert doc["engine"] == "llama-server" and doc["engine_build"] == "b11434-fake"
    # the method of the history by default; every measured prompt processed afresh
    sent = fake.requests
    assert len(sent) == 12 and {r["max_tokens"] for r in sent} == {2000}
    assert {(r["temperature"], r["top_p"], r["top_k"], r["min_p"]) for r in sent} == {(0.6, 0.95, 20, 0.0)}
    assert all(r["cache_prompt"] is False and r["stream"] for r in sent)
    assert len({r["prompt"].split("\n", 1)[0] for r in sent}) == 12
    assert "run 10 of 10: 74.62 tokens/s" in err


def test_bench_method_is_configurable(repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prompt = tmp_path / "p.txt"
    prompt.write_text("Say hello.", encoding="utf-8")
    with FakeLlama(timings([50.0, 60.0, 70.0], [0, 0, 0], [0, 0, 0])) as fake:
        code, doc, err = bench_json(repo, capsys, "--endpoint", fake.url, "--runs", "2", "--warmups", "1",
                                    "--max-tokens", "64", "--temperature", "0", "--prompt-file", str(prompt),
                                    "--request-json", '{"seed": 7}')
    assert code == 0, err
    assert [r["tokens_per_s"] for r in doc["runs"]] == [60.0, 70.0]
    assert {r["max_tokens"] for r in fake.requests} == {64} and {r["seed"] for r in fake.requests} == {7}
    assert all(r["prompt"].endswith("\nSay hello.") for r in fake.requests)
    assert doc["method"]["prompt_name"] == "p.txt" and doc["summary"]["acceptance"] is None


def test_a_server_that_dies_mid_run_fails_the_bench(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = records.read(repo / "apps" / NAME, "1.0.14")
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED), die_at=4) as fake:
        code, doc, err = bench_json(repo, capsys, "--endpoint", fake.url, "--record", "--device", "x")
    assert code == ExitCode.FINDINGS and doc is None
    assert "run 3 of 10" in err and "stopped mid-answer" in err
    assert records.read(repo / "apps" / NAME, "1.0.14") == before  # nothing recorded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_a_usage_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = bench_json(repo, capsys, "--endpoint", f"http://127.0.0.1:{_free_port()}")
    assert code == ExitCode.INPUT and "cannot reach the server" in err and "connection refused" in err


def test_a_web_server_that_is_no_llm_is_a_usage_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b"<html>hello</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        code, _, err = bench_json(repo, capsys, "--endpoint", f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert code == ExitCode.INPUT and "not an OpenAI-compatible LLM server" in err


def test_vllm_figures_come_from_usage_and_metrics(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = timings([40.0, 88.0, 90.0], [0, 300, 330], [0, 240, 250])
    with FakeLlama(t, vllm=True) as fake:
        code, doc, err = bench_json(repo, capsys, "--endpoint", fake.url, "--runs", "2", "--warmups", "1")
    assert code == 0, err
    assert doc["engine"] == "vllm" and doc["engine_build"] == "vllm 0.20.0"
    assert [r["tokens_per_s"] for r in doc["runs"]] == pytest.approx([88.0, 90.0], rel=1e-9)
    assert doc["summary"]["acceptance"] == pytest.approx(490 / 630)
    assert "cache_prompt" not in fake.requests[0]


def test_record_appends_and_build_check_guards_it(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_dir = repo / "apps" / NAME
    for _ in range(2):
        with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
            code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--record", "--device", "test rig",
                                      "--date", "2026-12-04")
        assert code == 0, err
    bf = records.read(app_dir, "1.0.14")
    mine = bf.records[-2:]
    assert [r.device for r in mine] == ["test rig", "test rig"] and mine[1].prev == records.digest(mine[0])
    assert records.check(repo / "apps") == []
    # an edited measurement breaks the chain: build --check says which and why
    path = records.path_of(app_dir, "1.0.14")
    doc = json.loads(path.read_text())
    doc["records"][0]["runs"][0]["tokens_per_s"] = 99.0
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    problems = records.check(repo / "apps")
    assert [p for _, p in problems if "records.1.prev" in p and "append-only" in p] and len(problems) == 1


def test_build_check_catches_a_rewritten_chain_in_git_history(repo: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "records")
    app_dir = repo / "apps" / NAME
    bf = records.read(app_dir, "1.0.9")
    edited = bf.model_copy(update={"records": [bf.records[0].model_copy(update={"note": "rewritten"})]})
    records.path_of(app_dir, "1.0.9").write_text(records.text_of(edited))  # a consistent chain of one
    problems = [p for f, p in records.check(repo / "apps")]
    assert len(problems) == 1 and "records are append-only" in problems[0]


def test_from_json_records_a_result_measured_elsewhere(repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, doc, _ = bench_json(repo, capsys, "--endpoint", fake.url)
    raw = tmp_path / "anchor.json"  # a .json attachment must not pass for a version's records
    raw.write_text("anchor output\n")
    result = tmp_path / "result.json"
    result.write_text(json.dumps(doc))
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.9", "--from-json", str(result),
                 "--record", "--device", "H200", "--synthetic-model", "64 layers, made-up weights", "--attach", str(raw)])
    assert code == 0
    bf = records.read(repo / "apps" / NAME, "1.0.9")
    assert bf.records[-1].synthetic_model and bf.records[-1].attachments == ["1.0.9.raw/anchor.json"]
    assert (repo / "apps" / NAME / "bench" / "1.0.9.raw" / "anchor.json").read_text() == "anchor output\n"
    assert records.versions(repo / "apps" / NAME) == ["1.0.5", "1.0.6", "1.0.7", "1.0.8", "1.0.9", "1.0.13"]
    assert records.check(repo / "apps") == []
    # a synthetic model's figures never stand for the app's speed
    assert describe.latest_summary(repo / "apps" / NAME, "1.0.9")[0].startswith("Olares One")


def test_history_reproduces_the_maintainers_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", NAME, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (one,) = [d for d in doc["devices"] if d["device"].startswith("Olares One")]
    rows = {r["version"]: r for r in one["versions"]}
    assert rows["1.0.7"]["tokens_per_s"] == "72.14 (68.46–76.25)"
    assert rows["1.0.9"]["tokens_per_s"] == "74.28 (72.60–75.14)" and rows["1.0.9"]["acceptance"] == "86.7 %"
    assert (rows["1.0.9"]["delta_tokens_per_s"], rows["1.0.9"]["delta_acceptance"]) == ("+2.1 %", "+22.7 points")
    assert rows["1.0.5"]["stability"].startswith("OOM") and rows["1.0.6"]["shipped"] is False
    assert "--spec-draft-n-max 5 → 3" in rows["1.0.9"]["changed"]
    assert main(["history", NAME, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| 1.0.9 |" in md and "| 74.28 (72.60–75.14) | 86.7 % | +2.1 % | +22.7 points |" in md


def test_history_picture_is_deterministic_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    assert main(["history", NAME, "--picture", str(a)]) == 0
    assert main(["history", NAME, "--picture", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    root = ET.fromstring(a.read_text())
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "1.0.9" in texts and "74.28" in texts and "OOM" in texts


def test_diff_shows_the_measured_delta(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", NAME, "1.0.8", "1.0.9", "--format", "json"]) == ExitCode.FINDINGS
    perf = json.loads(capsys.readouterr().out)["performance"]
    assert perf and perf[0].endswith("+2.1 %, +22.7 points")


def test_release_writes_the_performance_section_and_cites_the_delta(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_dir = repo / "apps" / NAME
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--version", "1.0.15", "--record",
                                  "--device", "Olares One (RTX 5090 Laptop GPU, 24 GB)")
    assert code == 0, err
    code = main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "s",
                 "--changes-from-diff", "--date", "2026-12-05"])
    assert code == 0, capsys.readouterr().err
    from olares_pack.apps.load import load_app

    app = load_app(app_dir / "app.yaml")
    assert app.version == "1.0.15"
    assert "**Performance on Olares One (RTX 5090 Laptop GPU, 24 GB)**" in app.full_description
    assert "| 1.0.15 | 74.28 (72.60–75.14) | 86.7 % |" in app.full_description
    assert "Measured on Olares One" in app.changelog[-1].notes
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.OK
    # the section is replaced, never stacked
    assert describe.with_section(app.full_description, app_dir, NAME).count("**Performance on") == 1


def test_gpu_sampling_needs_nvml(repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # as where nvidia-ml-py is not installed
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--gpu")
    assert code == ExitCode.INPUT and "pip install nvidia-ml-py" in err and not fake.requests


def test_bench_needs_an_endpoint_or_a_result(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = bench_json(repo, capsys)
    assert code == ExitCode.INPUT and "--endpoint URL" in err
