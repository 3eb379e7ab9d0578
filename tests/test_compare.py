"""`compare`, the stability of a run series and their place in `bench` and `history`, driven by
servers of known per-run timings (fakellama.py: steady, cycling, drifting)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from fakellama import FakeLlama, cycling, drifting

from olares_pack.bench import records
from olares_pack.bench.stability import analyse
from olares_pack.bench.welch import t_quantile, t_sf2, welch
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode

NAME = "llamacppqwen36mtpone"


def steady(mean: float, n: int, spread: float = 0.6, warmups: int = 2) -> list[dict[str, float]]:
    offsets = [-1.0, 0.5, -0.25, 1.0, 0.25, -0.5, 0.75, -0.75, 0.0, 0.0][:n]
    return [{"prompt_n": 120, "prompt_per_second": 400.0, "predicted_n": 2000, "predicted_per_second": mean,
             "draft_n": 1600, "draft_n_accepted": 1300} for _ in range(warmups)] + [
        {"prompt_n": 120, "prompt_per_second": 400.0, "predicted_n": 2000, "predicted_per_second": mean + o * spread,
         "draft_n": 1600, "draft_n_accepted": 1300 + i} for i, o in enumerate(offsets)]


def record(repo: Path, capsys: pytest.CaptureFixture[str], version: str, timings: list[dict[str, float]],
           *args: str) -> dict:
    with FakeLlama(timings) as fake:
        code = main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--endpoint", fake.url, "--version", version,
                     "--record", "--device", "test rig", "--date", "2026-12-05", "--format", "json", *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def compare(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["compare", NAME, "--apps-dir", str(repo / "apps"), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- the statistics


def test_t_distribution_matches_the_tables() -> None:
    # two-sided 95 % and 99 % critical values of Student's t (any statistics table)
    assert t_quantile(0.975, 10) == pytest.approx(2.228139, abs=1e-6)
    assert t_quantile(0.995, 10) == pytest.approx(3.169273, abs=1e-6)
    assert t_quantile(0.975, 1) == pytest.approx(12.706205, abs=1e-5)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959966, abs=1e-5)
    assert t_sf2(2.228139, 10) == pytest.approx(0.05, abs=1e-7)


def test_welch_is_the_textbook_formula() -> None:
    a = np.array([74.90, 72.60, 75.01, 74.32, 74.31, 73.73, 73.87, 75.14, 74.35, 74.62])
    b = np.array([76.1, 75.4, 76.9, 75.8, 76.3, 75.2])
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    w = welch(a.tolist(), b.tolist())
    assert w.diff == pytest.approx(b.mean() - a.mean()) and w.df == pytest.approx(df)
    assert w.t == pytest.approx((b.mean() - a.mean()) / math.sqrt(va + vb))
    half = t_quantile(0.975, df) * math.sqrt(va + vb)
    assert (w.low, w.high) == pytest.approx((w.diff - half, w.diff + half)) and w.real and w.p < 0.001


def test_stability_names_steady_drift_and_cycles() -> None:
    assert analyse([74.90, 72.60, 75.01, 74.32, 74.31, 73.73, 73.87, 75.14, 74.35, 74.62]).pattern == "steady"
    d = analyse([t["predicted_per_second"] for t in drifting(100, -0.8, 10)])
    assert d.pattern == "drift" and d.drift_pct == pytest.approx(-0.8 * 9 / statistics.fmean(100 - 0.8 * i for i in range(10)) * 100, rel=0.02)
    c = analyse([t["predicted_per_second"] for t in cycling(80, 70, 5, 4, 18)])
    assert c.pattern == "periodic" and c.period == 9 and c.text().startswith("cycles every 9 runs: 5 fast, 4 slow")
    once = analyse([t["predicted_per_second"] for t in cycling(80, 70, 5, 4, 10)])
    assert once.pattern == "two-state" and once.blocks == [5, 4, 1] and once.states == "FFFFFSSSSF"
    # a slow slide is a drift, not two states, however its sorted values split
    assert analyse([100 - 0.8 * i for i in range(10)]).pattern == "drift"


# ---------------------------------------------------------------- bench, record, history


def test_bench_reports_a_cycle_in_its_summary_json_and_record(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = record(repo, capsys, "1.0.15", cycling(80.0, 70.0, 5, 4, 18, warmups=2), "--runs", "18")
    assert doc["stability"]["pattern"] == "periodic" and doc["stability"]["period"] == 9
    rec = records.read(repo / "apps" / NAME, "1.0.15").records[-1]
    assert rec.stability is not None and rec.stability.pattern == "periodic" and rec.stability.states == "FFFFFSSSS" * 2
    assert records.check(repo / "apps") == []
    with FakeLlama(cycling(80.0, 70.0, 5, 4, 9, warmups=2)) as fake:
        assert main(["bench", NAME, "--apps-dir", str(repo / "apps"), "--endpoint", fake.url, "--runs", "9"]) == 0
    assert "two states: 5 fast, 4 slow" in capsys.readouterr().out  # the table's stability line
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "test rig", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["devices"][0]["versions"][-1]
    assert row["version"] == "1.0.15" and row["stability"].startswith("cycles every 9 runs: 5 fast, 4 slow")


def test_history_gives_sigma_and_a_verdict_beside_each_delta(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(repo, capsys, "1.0.15", steady(70.0, 10))
    record(repo, capsys, "1.0.16", steady(74.0, 10))  # +5.7 %, far outside a 0.6 spread
    record(repo, capsys, "1.0.17", steady(74.1, 10))  # +0.1 tokens/s: noise
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "test rig", "--format", "json"]) == 0
    rows = {r["version"]: r for r in json.loads(capsys.readouterr().out)["devices"][0]["versions"]}
    assert rows["1.0.16"]["verdict"].startswith("faster, 95 % CI +")
    assert rows["1.0.17"]["verdict"].startswith("within noise")
    assert rows["1.0.16"]["stdev"] == pytest.approx(statistics.stdev(t["predicted_per_second"] for t in steady(74.0, 10)[2:]))
    assert rows["1.0.16"]["stability"].startswith("steady (σ")


# ---------------------------------------------------------------- compare


def test_compare_gives_a_verdict_and_an_interval(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = record(repo, capsys, "1.0.15", steady(70.0, 10))
    b = record(repo, capsys, "1.0.16", steady(71.0, 10))
    code, out, err = compare(repo, capsys, "1.0.15", "1.0.16", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    ta, tb = [r["tokens_per_s"] for r in a["runs"]], [r["tokens_per_s"] for r in b["runs"]]
    w = welch(ta, tb)
    assert doc["verdict"] == "faster" and doc["tokens_per_s"]["low"] == pytest.approx(w.low) and w.low > 0
    assert doc["tokens_per_s"]["pct"] == pytest.approx((statistics.fmean(tb) - statistics.fmean(ta)) / statistics.fmean(ta) * 100)
    acc_a = [r["draft_accepted"] / r["draft_n"] for r in a["runs"]]
    acc_b = [r["draft_accepted"] / r["draft_n"] for r in b["runs"]]
    assert doc["acceptance"]["diff"] == pytest.approx(statistics.fmean(acc_b) - statistics.fmean(acc_a))
    code, out, _ = compare(repo, capsys, "1.0.16", "1.0.15")
    assert code == 0 and "verdict: slower" in out and "95 % CI" in out


def test_compare_of_equal_servers_is_within_noise(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(repo, capsys, "1.0.15", steady(70.0, 10, spread=2.0))
    record(repo, capsys, "1.0.16", steady(70.3, 10, spread=2.0))
    code, out, _ = compare(repo, capsys, "1.0.15", "1.0.16")
    assert code == 0 and out.strip().endswith("verdict: within noise")


def test_compare_with_a_single_published_figure_cannot_tell(capsys: pytest.CaptureFixture[str]) -> None:
    # 1.0.9's notes give a mean and a range, not the runs
    # they ran different engine builds: a refusal (exit 1) unless allowed, even with no runs to test
    assert main(["compare", NAME, "1.0.7", "1.0.9"]) == ExitCode.FINDINGS
    assert "measured differently: engine build" in capsys.readouterr().err
    code = main(["compare", NAME, "1.0.7", "1.0.9", "--allow-method-change"])
    out = capsys.readouterr().out
    assert code == 0 and "verdict: cannot tell: one figure (1.0.9)" in out and "Welch" not in out


def test_compare_refuses_different_methods_unless_allowed(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(repo, capsys, "1.0.15", steady(70.0, 10))
    record(repo, capsys, "1.0.16", steady(71.0, 10), "--max-tokens", "1000")
    code, out, err = compare(repo, capsys, "1.0.15", "1.0.16")
    assert code == ExitCode.FINDINGS and out == "" and "generated tokens: 2000 → 1000" in err
    code, out, _ = compare(repo, capsys, "1.0.15", "1.0.16", "--allow-method-change")
    assert code == 0 and out.startswith("METHODS DIFFER (--allow-method-change): generated tokens: 2000 → 1000")
    code, _, err = compare(repo, capsys, "1.0.15", "nosuch")
    assert code == ExitCode.INPUT and "neither a version with bench records nor an experiment" in err


def test_bench_reports_a_drift(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = record(repo, capsys, "1.0.15", drifting(100.0, -0.8, 10, warmups=2))
    s = doc["stability"]
    assert s["pattern"] == "drift" and s["text"].startswith("drifts -7.") and s["drift_p"] < 0.05


def test_experiment_files_are_append_only(repo: Path) -> None:
    import datetime as dt

    from olares_pack.bench import experiments
    from olares_pack.bench.records import MethodRecord, RunFigures

    app_dir = repo / "apps" / NAME

    def rec(tps: float) -> experiments.ExperimentRecord:
        runs = [RunFigures(tokens_per_s=tps + i) for i in range(3)]
        return experiments.ExperimentRecord(
            date=dt.date(2026, 12, 5), kind="measured", tool="olares-pack 0.1.0", version="1.0.14", device="rig",
            design="grid", rounds=1, method=MethodRecord(runs=3),
            configurations=[experiments.Configuration(label="version's own", baseline=True, runs=runs)])

    experiments.append(app_dir, NAME, "e1", rec(70.0))
    experiments.append(app_dir, NAME, "e1", rec(80.0))
    assert records.check(repo / "apps") == []
    path = experiments.path_of(app_dir, "e1")
    doc = json.loads(path.read_text())
    doc["records"][0]["configurations"][0]["runs"][0]["tokens_per_s"] = 99.0
    path.write_text(experiments.text_of(experiments.ExperimentFile.model_validate(doc)))
    assert [p.split(":")[0] for _, p in records.check(repo / "apps")] == ["records.1.prev"]
    # compare reads an experiment by name (its best configuration) or NAME:LABEL
    from olares_pack.bench import compare

    assert compare.side_of(app_dir, "e1").tps == [80.0, 81.0, 82.0]
    assert compare.side_of(app_dir, "e1:version's own").label == "e1:version's own"


# ---------------------------------------------------------------- issue 52: off the happy path


def same(mean: float, n: int, drafted: list[int] | None = None, accepted: list[int] | None = None) -> list[dict[str, float]]:
    """Runs the server reports with one and the same tokens/s (a deterministic engine, a cache)."""
    drafted, accepted = drafted or [1600] * (n + 2), accepted or [1300] * (n + 2)
    return [{"prompt_n": 120, "prompt_per_second": 400.0, "predicted_n": 2000, "predicted_per_second": mean,
             "draft_n": drafted[i], "draft_n_accepted": accepted[i]} for i in range(n + 2)]


def test_identical_runs_are_recorded_and_history_reads_them(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # every run 70.0 tokens/s: bench crashed in stability's split (min() of an empty group), exit 3
    doc = record(repo, capsys, "1.0.15", same(70.0, 6), "--runs", "6")
    assert doc["stability"]["pattern"] == "steady" and doc["stability"]["cv_pct"] == 0
    assert records.read(repo / "apps" / NAME, "1.0.15").records[-1].runs[0].tokens_per_s == 70.0
    for device in ("test rig", "RTX 5090"):  # the record's own device, and a filter that leaves it out
        code = main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", device, "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "test rig", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["devices"][0]["versions"][-1]
    assert row["stability"] == "steady (σ 0.0 %)"


def test_compare_pools_acceptance_as_history_does(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # runs of 100/100 and 500/1000 accepted drafts: per-run mean 75 %, pooled 600/1100 = 54.5 %
    drafted, accepted = [100, 1000] * 4, [100, 500] * 4
    record(repo, capsys, "1.0.15", same(70.0, 6, drafted, accepted), "--runs", "6")
    record(repo, capsys, "1.0.16", same(70.0, 6, drafted, accepted), "--runs", "6")
    code, out, err = compare(repo, capsys, "1.0.15", "1.0.16", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["a"]["acceptance"] == pytest.approx(600 / 1100)
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "test rig", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["devices"][0]["versions"][-1]
    assert row["acceptance"] == "54.5 %"
    code, out, _ = compare(repo, capsys, "1.0.15", "1.0.16")
    assert "acceptance 54.5 % (pooled)" in out and "75.0" not in out


def test_no_confident_verdict_on_a_drifting_or_cycling_series(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(repo, capsys, "1.0.15", steady(80.0, 10))
    record(repo, capsys, "1.0.16", drifting(80.0, -1.0, 10, warmups=2))  # mean 75.5: "slower" by Welch alone
    record(repo, capsys, "1.0.17", cycling(80.0, 70.0, 5, 4, 18, warmups=2), "--runs", "18")
    assert welch([t["predicted_per_second"] for t in steady(80.0, 10)[2:]],
                 [t["predicted_per_second"] for t in drifting(80.0, -1.0, 10)]).real  # what a bare test would claim
    code, out, _ = compare(repo, capsys, "1.0.15", "1.0.16")
    assert code == 0
    assert "verdict: cannot tell: runs not independent (1.0.16: drifts" in out and "verdict: slower" not in out
    assert "Welch's test assumes independent runs" in out
    code, out, _ = compare(repo, capsys, "1.0.15", "1.0.17", "--format", "json")
    doc = json.loads(out)
    assert doc["verdict"].startswith("cannot tell: runs not independent (1.0.17: cycles every 9 runs")
    assert doc["runs_not_independent"] and doc["tokens_per_s"]["low"] < doc["tokens_per_s"]["high"]
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--device", "test rig", "--format", "json"]) == 0
    rows = {r["version"]: r for r in json.loads(capsys.readouterr().out)["devices"][0]["versions"]}
    assert rows["1.0.16"]["verdict"].startswith("cannot tell: runs not independent")
    assert rows["1.0.17"]["verdict"].startswith("cannot tell: runs not independent")


def test_compare_with_a_method_difference_exits_1_even_without_runs(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(repo, capsys, "1.0.15", steady(70.0, 10))
    record(repo, capsys, "1.0.16", steady(70.0, 1, warmups=0), "--runs", "1", "--warmups", "0", "--max-tokens", "1000")
    code, out, err = compare(repo, capsys, "1.0.15", "1.0.16")
    assert code == ExitCode.FINDINGS and out == "" and "generated tokens: 2000 → 1000" in err
    code, out, _ = compare(repo, capsys, "1.0.15", "1.0.16", "--allow-method-change")
    assert code == 0 and "verdict: cannot tell: one run (1.0.16)" in out
