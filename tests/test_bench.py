"""`bench`, `history` and the bench records, against a server that answers like llama-server (or
vLLM) with known per-run timings; the real engine is in test_bench_engine.py."""

from __future__ import annotations

import hashlib
import json
import socket
import statistics
import subprocess
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest
from conftest import tree_digest
from fakellama import FakeLlama

from olares_pack import __version__
from olares_pack.bench import describe, records
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode, InputError

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
    before = records.read(repo / "apps" / NAME, "1.0.15")
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED), die_at=4) as fake:
        code, doc, err = bench_json(repo, capsys, "--endpoint", fake.url, "--record", "--device", "x")
    assert code == ExitCode.FINDINGS and doc is None
    assert "run 3 of 10" in err and "stopped mid-answer" in err
    assert records.read(repo / "apps" / NAME, "1.0.15") == before  # nothing recorded


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
    # its figures are read again from vLLM's counters when the result is imported
    from olares_pack.bench import report

    assert report.check_imported(json.loads(json.dumps(doc)), "vllm.json").tool == doc["tool"]
    doc["runs"][1]["timings"]["decode_s"] *= 2
    with pytest.raises(InputError, match="runs.1: tokens_per_s"):
        report.check_imported(doc, "vllm.json")


def test_record_appends_and_build_check_guards_it(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_dir = repo / "apps" / NAME
    for _ in range(2):
        with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
            code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--record", "--device", "test rig",
                                      "--date", "2026-12-04")
        assert code == 0, err
    bf = records.read(app_dir, "1.0.15")
    mine = bf.records[-2:]
    assert [r.device for r in mine] == ["test rig", "test rig"] and mine[1].prev == records.digest(mine[0])
    assert records.check(repo / "apps") == []
    # an edited measurement breaks the chain: build --check says which and why
    path = records.path_of(app_dir, "1.0.15")
    doc = json.loads(path.read_text())
    doc["records"][0]["runs"][0]["tokens_per_s"] = 99.0
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    problems = sorted(p.split(":")[0] for _, p in records.check(repo / "apps"))
    # the chain breaks at the next record, and the edited run no longer gives the recorded stability
    assert problems == ["records.0.stability", "records.1.prev"]


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
    # everything to derive the summary again travels with the result
    assert doc["tool"] == f"olares-pack {__version__}" and doc["model_file"] == "/models/fake-Q4_K_M.gguf"
    assert doc["started"] <= doc["ended"] and doc["runs"][0]["timings"]["predicted_per_second"] == RUNS[0]
    doc["tool"] = "olares-pack 0.0.9"  # measured by another version of olares-pack, elsewhere
    raw = tmp_path / "anchor.json"  # a .json attachment must not pass for a version's records
    raw.write_text("anchor output\n")
    result = tmp_path / "result-from-the-gpu-box.json"
    result.write_text(json.dumps(doc))
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.9", "--from-json", str(result),
                 "--record", "--device", "H200", "--synthetic-model", "64 layers, made-up weights", "--attach", str(raw)])
    assert code == 0
    bf = records.read(repo / "apps" / NAME, "1.0.9")
    rec = bf.records[-1]
    assert rec.provenance_kind() == "synthetic" and rec.attachments == ["1.0.9.raw/anchor.json"]
    # the file's own provenance, never its name
    assert (rec.tool, rec.engine_build, rec.model_file) == ("olares-pack 0.0.9", "b11434-fake", "/models/fake-Q4_K_M.gguf")
    assert rec.started is not None and rec.runs[0].timings["predicted_n"] == 2000
    assert "result-from-the-gpu-box" not in records.path_of(repo / "apps" / NAME, "1.0.9").read_text()
    # imported, not measured here: the record keeps the file's digest and history says so (issue 52.11)
    assert rec.imported_sha256 == hashlib.sha256(result.read_bytes()).hexdigest()
    assert f"imported from a file of SHA-256 {rec.imported_sha256}" in capsys.readouterr().err
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "H200", "--format", "json"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out)["devices"][0]["versions"] if r["version"] == "1.0.9")
    assert row["provenance"]["imported_sha256"] == rec.imported_sha256
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "H200", "--format", "markdown"]) == 0
    assert f"synthetic model, imported (sha256 {rec.imported_sha256[:12]}…)" in capsys.readouterr().out
    assert (repo / "apps" / NAME / "bench" / "1.0.9.raw" / "anchor.json").read_text() == "anchor output\n"
    assert records.versions(repo / "apps" / NAME) == ["1.0.5", "1.0.6", "1.0.7", "1.0.8", "1.0.9", "1.0.13"]
    assert records.check(repo / "apps") == []
    # a synthetic model's figures never stand for the app's speed
    assert describe.latest_summary(repo / "apps" / NAME, "1.0.9")[0].startswith("Olares One")


def _measured(repo: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, doc, err = bench_json(repo, capsys, "--endpoint", fake.url)
    assert code == 0, err
    return doc


def _lies(doc: dict) -> list[tuple[str, dict]]:
    """Results that do not agree with themselves, and the field the refusal must name."""
    import copy

    summary = copy.deepcopy(doc)
    summary["summary"]["mean"] = 120.0
    run = copy.deepcopy(doc)
    run["runs"][3]["tokens_per_s"] = 99.0  # and the summary made to match it: the server timings still say 74.32
    figures = [r["tokens_per_s"] for r in run["runs"]]
    run["summary"]["mean"], run["summary"]["max"] = statistics.fmean(figures), max(figures)
    run["summary"]["stdev"] = statistics.stdev(figures)
    no_timings = copy.deepcopy(doc)
    for r in no_timings["runs"]:
        del r["timings"]
    no_tool = copy.deepcopy(doc)
    del no_tool["tool"]
    return [("summary.mean", summary), ("runs.3: tokens_per_s", run), ("runs.0: no `timings`", no_timings),
            ("tool: missing", no_tool),
            ("tool: missing", {"runs": [{"tokens_per_s": 999}], "method": {}}),  # hand-written (issue #42)
            ("runs.0: no `timings`", {**doc, "runs": [{"tokens_per_s": 999}], "method": {**doc["method"], "runs": 1}})]


def test_from_json_refuses_a_result_that_does_not_agree_with_itself(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    doc = _measured(repo, capsys)
    before = tree_digest(repo)
    for field, lie in _lies(doc):
        path = tmp_path / "lie.json"
        path.write_text(json.dumps(lie))
        code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.15", "--from-json", str(path),
                     "--record", "--device", "H200", "--attach", str(path)])
        err = capsys.readouterr().err
        assert code == ExitCode.INPUT and field in err, (field, err)
        assert tree_digest(repo) == before  # nothing written, not even the attachment


def test_from_json_needs_record_and_record_needs_a_device_before_any_request(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                            tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_measured(repo, capsys)))
    before = tree_digest(repo)
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--from-json", str(path)])
    assert code == ExitCode.INPUT and "give --record" in capsys.readouterr().err
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--from-json", str(path), "--record"])
    assert code == ExitCode.INPUT and "--record needs --device" in capsys.readouterr().err
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--record")
    assert code == ExitCode.INPUT and "--record needs --device" in err
    assert fake.requests == [] and fake.gets == []  # not a single request was sent
    assert tree_digest(repo) == before


def test_a_measured_record_keeps_what_the_server_said(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--version", "1.0.15", "--record",
                                  "--device", "Olares One (RTX 5090 Laptop GPU, 24 GB)")
    assert code == 0, err
    rec = records.read(repo / "apps" / NAME, "1.0.15").records[-1]
    assert rec.kind == "measured" and rec.tool == f"olares-pack {__version__}"
    assert (rec.engine_build, rec.model_file) == ("b11434-fake", "/models/fake-Q4_K_M.gguf")
    assert rec.started is not None and rec.ended is not None and rec.started <= rec.ended
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--format", "json"]) == 0
    (one,) = [d for d in json.loads(capsys.readouterr().out)["devices"] if d["device"].startswith("Olares One")]
    row = {r["version"]: r for r in one["versions"]}["1.0.15"]
    assert row["kind"] == "measured" and row["provenance"]["model_file"] == "/models/fake-Q4_K_M.gguf"
    # a delta between a transcribed figure (1.0.9) and a measured one says so
    assert row["delta_tokens_per_s"].endswith("(transcribed → measured)")


TRANSCRIBED = ["1.0.5", "1.0.6", "1.0.7", "1.0.8", "1.0.9"]


def test_history_marks_transcribed_and_synthetic_figures_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", NAME, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (one,) = [d for d in doc["devices"] if d["device"].startswith("Olares One")]
    (h200,) = [d for d in doc["devices"] if d["synthetic_model"]]
    rows = {r["version"]: r for r in one["versions"]}
    assert {v: r["kind"] for v, r in rows.items()} == dict.fromkeys(TRANSCRIBED, "transcribed")
    assert [(r["version"], r["kind"]) for r in h200["versions"]] == [("1.0.13", "synthetic")]
    assert all(rows[v]["provenance"]["document"].startswith("https://github.com/aamsellem/") for v in TRANSCRIBED)
    # only what the notes state: a single figure stays single, an extrapolation says so
    assert rows["1.0.5"]["tokens_per_s"] == "77" and rows["1.0.5"]["acceptance"] == "75–80 %"
    assert rows["1.0.6"]["tokens_per_s"] == "≈65 (extrapolated)"
    assert rows["1.0.7"]["tokens_per_s"] == "72.14 (68.46–76.25)"
    assert rows["1.0.9"]["tokens_per_s"] == "74.28 (72.60–75.14)" and rows["1.0.9"]["acceptance"].startswith("86.7 %")
    assert rows["1.0.9"]["delta_tokens_per_s"] == "+2.1 % (both transcribed)"
    # 1.0.5's OOM is the users' report the notes state, not a soak; 1.0.7's stated stability is shown
    assert rows["1.0.5"]["stability"] == "“runtime MTP CUDA OOM reported” (transcribed)"
    assert "10 clean runs" in rows["1.0.7"]["stability"] and rows["1.0.7"]["stability"].endswith("(transcribed)")
    assert rows["1.0.6"]["shipped"] is False and "--spec-draft-n-max 5 → 3" in rows["1.0.9"]["changed"]
    assert any("transcribed" in line for line in doc["legend"])


def test_history_marks_them_in_text_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", NAME, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    lines = {ln.split(" | ")[0].lstrip("| "): ln for ln in md.splitlines() if ln.startswith("| 1.0.")}
    assert all(lines[v].endswith("| transcribed |") for v in ["1.0.5", "1.0.6 (not shipped)", *TRANSCRIBED[2:]])
    assert lines["1.0.13"].endswith("| synthetic model |")
    # a single published figure: σ unknown, and no verdict on the change
    assert "| 74.28 (72.60–75.14) | — | 86.7 % (83.4–88.6 %) | +2.1 % (both transcribed) (cannot tell: one figure) |" in md
    assert "- transcribed: copied from the maintainer's published notes" in md
    assert "- 1.0.7: https://github.com/aamsellem/orales-one-market/blob/" in md
    assert main(["history", NAME]) == 0
    text = capsys.readouterr().out
    assert "synthetic model" in text and "transcribed: copied from the maintainer's published notes" in text
    for v in TRANSCRIBED:  # each transcribed version named with its document under the tables
        assert f"- {v}: https://github.com/aamsellem/" in text


def test_history_picture_draws_every_device_deterministically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", NAME, "--picture", str(tmp_path / "a.svg")]) == 0
    assert main(["history", NAME, "--picture", str(tmp_path / "b.svg")]) == 0
    a = sorted(tmp_path.glob("a.*.svg"))
    assert [p.name for p in a] == ["a.nvidia-h200-lent-gpu-machine-synthetic-model.svg",
                                   "a.olares-one-rtx-5090-laptop-gpu-24-gb.svg"]
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in sorted(tmp_path.glob("b.*.svg"))]

    def texts(path: Path) -> list[str]:
        return [t.text for t in ET.fromstring(path.read_text()).iter("{http://www.w3.org/2000/svg}text")]

    one, h200 = texts(a[1]), texts(a[0])
    assert "1.0.9" in one and "74.28" in one and "77" in one and "OOM" not in one  # no soak ran
    assert one.count("transcribed") == 5 and "transcribed from published notes" in one
    assert "1.0.13" in h200 and "synthetic model: not the app's speed" in h200
    # one device asked for: one picture at the path given
    assert main(["history", NAME, "--device", "H200", "--picture", str(tmp_path / "one.svg")]) == 0
    assert "1.0.13" in texts(tmp_path / "one.svg")


def test_diff_labels_a_delta_between_transcribed_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", NAME, "1.0.8", "1.0.9", "--format", "json"]) == ExitCode.FINDINGS
    perf = json.loads(capsys.readouterr().out)["performance"]
    assert perf and "72.75 (69.30–75.95) tokens/s (transcribed)" in perf[0]
    assert perf[0].endswith("+2.1 %, +22.7 points — both transcribed")
    assert main(["diff", NAME, "1.0.9", "1.0.13", "--format", "json"]) == ExitCode.FINDINGS
    assert json.loads(capsys.readouterr().out)["performance"] == [
        "performance: 1.0.13 has figures on a synthetic model only (never the app's speed): not compared"]


def test_release_writes_the_performance_section_and_cites_the_delta(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_dir = repo / "apps" / NAME
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--version", "1.0.16", "--record",
                                  "--device", "Olares One (RTX 5090 Laptop GPU, 24 GB)")
    assert code == 0, err
    code = main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "s",
                 "--changes-from-diff", "--date", "2026-12-05", "--skip-rehearsal", "bench test"])
    assert code == 0, capsys.readouterr().err
    from olares_pack.apps.load import load_app

    app = load_app(app_dir / "app.yaml")
    assert app.version == "1.0.16"
    text = app.full_description
    assert "**Performance on Olares One (RTX 5090 Laptop GPU, 24 GB)**" in text
    assert "| 1.0.16 | 74.28 (72.60–75.14) | 86.7 % | +0.0 % (transcribed → measured) |" in text
    assert "| 1.0.9 | 74.28 (72.60–75.14) | 86.7 % (83.4–88.6 %) |" in text and "| transcribed |" in text
    assert "- transcribed: copied from the maintainer's published notes" in text  # the legend under the table
    assert app.changelog[-1].notes.startswith("Measured on Olares One")
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.OK
    # the section is replaced, never stacked
    assert describe.with_section(text, app_dir, NAME).count("**Performance on") == 1


def test_gpu_sampling_needs_nvml(repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # as where nvidia-ml-py is not installed
    with FakeLlama(timings(WARM + RUNS, [5, 5] + DRAFTS, [1, 1] + ACCEPTED)) as fake:
        code, _, err = bench_json(repo, capsys, "--endpoint", fake.url, "--gpu")
    assert code == ExitCode.INPUT and "pip install nvidia-ml-py" in err and not fake.requests


def test_bench_needs_an_endpoint_or_a_result(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = bench_json(repo, capsys)
    assert code == ExitCode.INPUT and "--endpoint URL" in err
