"""`bench --launch` and `--sweep`: the engine started with the version's own argv and
environment, configurations ranked, a failing configuration failing its row only, experiments
recorded and compared; bad input refused before anything starts. The engine is the CPU
llama-server b11434 the tests build (test_bench_engine.py) serving a small GGUF whose MTP drafts
are accepted (tinyqwen.py); a wrapper script around it records what it was started with."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tinyqwen
from test_bench_engine import LLAMA

from olares_pack.bench import experiments, records
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode

NAME = "llamacppqwen36mtpone"
CLI = [sys.executable, "-c", "from olares_pack.cli import main; main()"]
needs_llama = pytest.mark.skipif(not LLAMA.is_file(), reason=f"{LLAMA} is not built (`make llama-server`)")


def wrapper(folder: Path, real: Path | None = LLAMA) -> Path:
    """An engine binary that writes its argv, environment and pid beside itself, then becomes the
    real llama-server (or, without one, exits as a server that cannot start would)."""
    w = folder / "llama-server"
    tail = (f'export LD_LIBRARY_PATH={real.parent}\nexec {real} "$@"\n' if real else "exit 3\n")
    w.write_text("#!/bin/sh\n"
                 f'printf "%s\\n" "$@" > {folder}/argv.$$\n'
                 f"env > {folder}/env.$$\necho $$ >> {folder}/pids\n" + tail)
    w.chmod(0o755)
    return w


def started(folder: Path) -> list[tuple[list[str], dict[str, str]]]:
    pids = (folder / "pids").read_text().split() if (folder / "pids").exists() else []
    return [((folder / f"argv.{p}").read_text().splitlines(),
             dict(line.split("=", 1) for line in (folder / f"env.{p}").read_text().splitlines() if "=" in line))
            for p in pids]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tinyqwen.write(tmp_path_factory.mktemp("model") / "tiny-mix80.gguf", "mix80")


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    p = tmp_path / "short.txt"
    p.write_text("Say hello to the world in one sentence.", encoding="utf-8")  # a short prompt: fast runs
    return p


def release_argv() -> list[str]:
    return json.loads((Path(__file__).parent.parent / "apps" / NAME / "releases" / "1.0.15.json").read_text())["engine"]["argv"]


@needs_llama
def test_launch_runs_the_versions_own_argv_and_env(repo: Path, tmp_path: Path, model: Path, prompt: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    w = wrapper(tmp_path)
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--launch", str(w), "--model", str(model),
                 "--engine-log", str(tmp_path), "--runs", "2", "--warmups", "0", "--max-tokens", "32", "--prompt-file", str(prompt), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    [(argv, _)] = started(tmp_path)
    # the released 1.0.15 argv, its model path, host and port swapped and nothing else
    want = release_argv()
    assert len(argv) == len(want)
    changed = {want[i - 1]: (want[i], argv[i]) for i in range(len(want)) if argv[i] != want[i]}
    assert set(changed) == {"--model", "--host", "--port"} and changed["--model"][1] == str(model)
    assert changed["--host"][1] == "127.0.0.1"
    doc = json.loads(out.out)
    assert len(doc["runs"]) == 2 and all(r["draft_n"] for r in doc["runs"]) and doc["model_file"] == str(model)
    assert "11434" in doc["engine_build"]


@needs_llama
def test_sweep_ranks_configurations_and_a_failing_one_fails_its_row(repo: Path, tmp_path: Path, model: Path,
                                                                     prompt: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = wrapper(tmp_path)
    apps = repo / "apps"
    t0 = time.monotonic()
    # `abc` passes the registry (the flag exists) and fails at the engine's start
    code = main(["bench", NAME, "--apps-dir", str(apps), "--launch", str(w), "--model", str(model),
                 "--engine-log", str(tmp_path), "--sweep", "--spec-draft-n-max=2,3,abc", "--sweep-env", "GGML_CUDA_PDL=0", "--one-at-a-time",
                 "--rounds", "2", "--runs", "2", "--warmups", "0", "--max-tokens", "32", "--prompt-file", str(prompt),
                 "--record", "--experiment", "draft-n", "--device", "cpu", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert time.monotonic() - t0 < 60
    doc = json.loads(out.out)
    rows = {c["label"]: c for c in doc["configurations"]}
    # 3 is the version's own value: it is the baseline, not a configuration of its own
    assert set(rows) == {"version's own", "--spec-draft-n-max=2", "--spec-draft-n-max=abc", "GGML_CUDA_PDL=0"}
    bad = rows["--spec-draft-n-max=abc"]
    assert bad["verdict"] == "failed" and not bad["runs"] and "last log lines" in bad["failed"] and "stoi" in bad["failed"]
    for label in ("version's own", "--spec-draft-n-max=2", "GGML_CUDA_PDL=0"):
        assert len(rows[label]["runs"]) == 4 and rows[label]["rounds"] == [1, 1, 2, 2]
    # ranked by mean tokens/s; each against the baseline with an interval
    means = [c["mean"] for c in doc["configurations"] if c["mean"] is not None]
    assert means == sorted(means, reverse=True)
    assert rows["--spec-draft-n-max=2"]["vs_own"]["low"] < rows["--spec-draft-n-max=2"]["vs_own"]["high"]
    # n_max 2 drafts fewer tokens a step than the version's 3: what the engine itself reported
    n2 = rows["--spec-draft-n-max=2"]["runs"][0]
    own = rows["version's own"]["runs"][0]
    assert n2["draft_n"] < own["draft_n"]
    # what each start was given: the swept flag and variable, on top of the version's own
    starts = started(tmp_path)
    assert len(starts) == 4 + 3  # round 1: all four, round 2: the three that started
    pdl = [env for argv, env in starts if env.get("GGML_CUDA_PDL") == "0"]
    assert len(pdl) == 2
    assert sum("2" == argv[argv.index("--spec-draft-n-max") + 1] for argv, _ in starts) == 2
    # recorded append-only, read back by compare
    ef = experiments.read(apps / NAME, "draft-n")
    assert ef is not None and ef.records[0].design == "one-at-a-time" and ef.records[0].version == "1.0.15"
    # the engine's log of each start is attached: the failed start's says why
    logs = [a for a in ef.records[0].attachments if a.startswith("draft-n.raw/0/")]
    assert len(logs) == 7 and "stoi" in (experiments.folder(apps / NAME) / next(a for a in logs if "abc" in a)).read_text()
    assert records.check(apps) == []
    code = main(["compare", NAME, "--apps-dir", str(apps), "draft-n:version's own", "draft-n:--spec-draft-n-max=2"])
    text = capsys.readouterr().out
    assert code == 0 and "verdict:" in text and "95 % CI" in text


@needs_llama
def test_an_engine_that_dies_mid_run_fails_with_its_log(repo: Path, tmp_path: Path, model: Path) -> None:
    w = wrapper(tmp_path)
    proc = subprocess.Popen([*CLI, "bench", NAME, "--apps-dir", str(repo / "apps"), "--launch", str(w), "--model",
                             str(model), "--engine-log", str(tmp_path), "--runs", "50", "--warmups", "0", "--max-tokens", "400"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("run 1 of 50"):
            break
    os.kill(int((tmp_path / "pids").read_text().split()[0]), signal.SIGKILL)
    err = proc.stderr.read()
    assert proc.wait(60) == ExitCode.FINDINGS
    assert "the engine exited" in err and "last log lines" in err


@pytest.mark.parametrize(("args", "says"), [
    (["--sweep", "--no-such-flag=1,2"], "--no-such-flag is not a flag of llama-server ad27757"),
    (["--sweep", "--spec-draft-n-max="], "an empty value"),
    (["--sweep", "--spec-draft-n-max=2,,3"], "an empty value"),
    (["--sweep-env", "GGML_CUDA_PDL="], "an empty value"),
    (["--sweep", "--jinja=1,2"], "a switch without a value"),
    (["--model-is-text"], "not a GGUF file"),
])
def test_bad_sweep_input_is_refused_before_anything_starts(repo: Path, tmp_path: Path, model: Path, args: list[str],
                                                           says: str, capsys: pytest.CaptureFixture[str]) -> None:
    w = wrapper(tmp_path, None)
    m = model
    if args == ["--model-is-text"]:
        m, args = tmp_path / "model.gguf", []
        m.write_text("not a model")
    code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--launch", str(w), "--model", str(m), *args])
    assert code == ExitCode.INPUT
    assert says in capsys.readouterr().err
    assert started(tmp_path) == []  # nothing was started


def test_sweep_configurations_grid_and_one_at_a_time() -> None:
    from olares_pack.bench import launch, sweep

    inv = launch.Invocation(["--model", "m", "--spec-draft-n-max", "3", "--spec-draft-p-min", "0.75"], {}, "b11434", "m")
    reg = launch.registry_of("b11434")
    axes = [sweep.parse_axis("--spec-draft-n-max=2,3", reg, env=False),
            sweep.parse_axis("--spec-draft-p-min=0,0.5", reg, env=False), sweep.parse_axis("GGML_CUDA_PDL=0", None, env=True)]
    grid = [c.label for c in sweep.configurations(axes, inv, reg, one_at_a_time=False)]
    assert grid[0] == "version's own" and len(grid) == 1 + 2 * 2 * 1  # every combination differs in PDL
    one = [c.label for c in sweep.configurations(axes, inv, reg, one_at_a_time=True)]
    assert one == ["version's own", "--spec-draft-n-max=2", "--spec-draft-p-min=0", "--spec-draft-p-min=0.5",
                   "GGML_CUDA_PDL=0"]


def test_the_fake_engine_needs_no_build(tmp_path: Path) -> None:
    # the wrapper without a real engine exits at once: what the refusal test relies on to see a start
    w = wrapper(tmp_path, None)
    assert subprocess.run([str(w), "--x", "1"], check=False).returncode == 3
    assert started(tmp_path)[0][0] == ["--x", "1"]
