"""The maintainer's loop as measurements/loop_bench.py runs it (outdated → propose → lint → compare
→ check, each a fresh process, against the loopback registry and the local hub): one pass, and
what each step must answer for the loop to hold."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from registry import MISSING, REQUIRED, SKIP_REASON

sys.path.insert(0, str(ROOT / "measurements"))
import loop_bench  # noqa: E402

pytestmark = pytest.mark.skipif(bool(MISSING) and not REQUIRED, reason=SKIP_REASON)


def test_one_pass_of_the_loop_holds(tmp_path: Path) -> None:
    with loop_bench.loopback() as (upstream, fork, hf):
        root = loop_bench.fresh_catalogue(tmp_path / "catalogue", fork)
        steps = {s.name: s for s in loop_bench.run_loop(root, upstream, loop_bench.loop_env(hf, tmp_path))}
    assert list(steps) == ["outdated", "propose", "lint", "compare", "check"]
    for s in steps.values():
        print(f"{s.name}: exit {s.code}, {s.seconds:.2f} s")
    # outdated: something to do (exit 1), the upstream build and the renamed repository among it
    assert steps["outdated"].code == 1, steps["outdated"].stderr
    kinds = {i["kind"] for i in json.loads(steps["outdated"].stdout)["apps"][0]["items"]}
    assert {"upstream-build", "renamed-value", "moved"} <= kinds, kinds
    # propose: the draft written, nothing else
    assert steps["propose"].code == 0, steps["propose"].stderr
    assert steps["propose"].stdout.split() == [f"apps/{loop_bench.APP}/app.yaml", f"apps/{loop_bench.APP}/model.lock.json"]
    assert "llamacppqwen36mtpone: draft 1.0.9 (after 1.0.8)" in steps["propose"].stderr
    # lint of the draft: clean
    assert steps["lint"].code == 0 and "0 error(s)" in steps["lint"].stderr, steps["lint"].stderr
    # compare of two experiments: a verdict from their per-run figures, with its interval
    assert steps["compare"].code == 0, steps["compare"].stderr
    compared = json.loads(steps["compare"].stdout)
    assert compared["verdict"] in ("faster", "slower", "within noise"), compared
    assert compared["a"]["runs"] > 1 and compared["b"]["runs"] > 1 and compared["tokens_per_s"], compared
    # check of the branch holding the draft: passes, and says that it did not rehearse and why
    assert steps["check"].code == 0, steps["check"].stderr
    summary = json.loads(steps["check"].stdout)
    stages = {s["stage"]: s for s in summary["stages"]}
    assert summary["ok"] is True and summary["changed_apps"] == [loop_bench.APP], summary
    assert all(stages[s]["status"] == "passed" for s in ("lint", "build", "offer", "bench")), stages
    assert stages["rehearse"]["skipped"] == "--skip-rehearsal: loop measurement without the control plane", stages["rehearse"]
