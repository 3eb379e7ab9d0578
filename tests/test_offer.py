"""What the market offers each OS line (market-offer.json, decided by `build` with the installer
rules `lint --olares V` applies), as devices of each line sync it; and a lean `serve` process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, serve_process, serving
from device import Device, V2Device
from loopback_http import HTTP

from olares_pack import olares
from olares_pack.catalogue import ledger, offer
from olares_pack.catalogue.repo import OFFER_FILE
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.market import cloudflare
from olares_pack.market import payloads as market
from olares_pack.market.server import Source

LEGACY = Path(__file__).parent / "data" / "import"
DATE = "2026-12-03"


def imported_repo(tmp_path: Path, *charts: str) -> Path:
    root = tmp_path / "repo"
    (root / "apps").mkdir(parents=True)
    assert main(["import", *(str(LEGACY / c) for c in charts), "--apps-dir", str(root / "apps"), "--date", DATE]) == 0
    return root


def test_offer_constraint_spans_the_releases_not_refused() -> None:
    assert offer.offer_constraint(set()) is None
    assert offer.offer_constraint({"1.12.6", "1.12.7"}) == "<1.12.6-0"
    assert offer.offer_constraint({"1.12.7"}) == "<1.12.7-0"
    assert offer.offer_constraint({"1.12.3", "1.12.4", "1.12.5"}) == ">=1.12.6-0"
    assert offer.offer_constraint({"1.12.5"}) == "<1.12.5-0 || >=1.12.6-0"
    assert offer.offer_constraint(set(olares.KNOWN_RELEASES)) == offer.NOTHING
    for v in ("1.12.3", "1.12.5", "1.12.5-20260101"):
        assert olares.admits("<1.12.6-0", v)
    assert not olares.admits("<1.12.6-0", "1.12.6-0") and not olares.admits(offer.NOTHING, "0.0.1")


def test_an_imported_v2_app_is_offered_only_where_its_installer_accepts_it(tmp_path: Path) -> None:
    """gpuvtwo: apiVersion v2 without spec.subCharts, olares `>=1.12.3-0`. 1.12.3-1.12.5 install it
    (as v1); from 1.12.6 the installer refuses it (`lint --olares 1.12.6`: manifest.schema-version),
    so a 1.12.6 (v1 routes) or 1.12.7 (v2 routes) device is not shown it at all."""
    root = imported_repo(tmp_path, "gpuvtwo")
    decided = json.loads((root / OFFER_FILE).read_text())["charts"]["packages/legacy/gpuvtwo-1.0.5.tgz"]
    assert decided["accepted"] == ["1.12.3", "1.12.4", "1.12.5"] and decided["offer"] == "<1.12.6-0"
    assert set(decided["refused"]) == {"1.12.6", "1.12.7"}
    assert all(any(e.startswith("manifest.schema-version: apiVersion v2 requires spec.subCharts") for e in errs)
               for errs in decided["refused"].values())
    # lint says the same for each release, chart by chart
    pkg = str(root / "packages" / "legacy" / "gpuvtwo-1.0.5.tgz")
    assert main(["lint", pkg, "--olares", "1.12.5"]) == ExitCode.OK
    assert main(["lint", pkg, "--olares", "1.12.6"]) == ExitCode.FINDINGS
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK
    source_bytes = (root / "packages" / "legacy" / "gpuvtwo-1.0.5.tgz").read_bytes()
    with serving(Source(root, root / "market-index.json")) as url:
        old = Device(url, "1.12.5")
        assert old.sync() and old.install("gpuvtwo") == "1.0.5"
        assert old.charts["gpuvtwo-1.0.5.tgz"] == source_bytes  # the published bytes, as they were
        new = Device(url, "1.12.6")
        new.sync()
        assert new.apps == {}
        v2 = V2Device(url, "1.12.7")
        v2.sync()
        assert v2.items == {} and v2.apps == {}
        # a device that fetched the file before keeps getting it by name: the bytes do not move
        r = HTTP.get(f"{url}/api/v1/applications/gpuvtwo/chart", params={"fileName": "gpuvtwo-1.0.5.tgz"})
        assert r.status_code == 200 and r.content == source_bytes
    # the Cloudflare export decides views the same way (the windows its Worker evaluates)
    cat = market.load(root)
    doc = cloudflare.catalogue_doc(cat, "1.12.6")
    for version, listed in (("1.12.5", True), ("1.12.6", False), ("1.12.7", False)):
        mask = "".join("1" if olares.admits(d, version) else "0" for d in cat.dependencies)
        assert (ledger.app_id("gpuvtwo") in doc["views"][doc["masks"][mask]]["fragments"]) is listed, version


def test_build_check_fails_on_a_stale_offer_and_build_writes_it_again(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = imported_repo(tmp_path, "gpuvtwo")
    path = root / OFFER_FILE
    good = path.read_text()
    doc = json.loads(good)
    del doc["charts"]["packages/legacy/gpuvtwo-1.0.5.tgz"]["offer"]  # offered everywhere: 1.12.6 would see it
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.FINDINGS
    assert f"{OFFER_FILE}: differs from what the packages and the installer rules decide" in capsys.readouterr().err
    path.unlink()
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.FINDINGS
    assert main(["build", "--apps-dir", str(root / "apps"), "--out", str(tmp_path / "out")]) == ExitCode.OK
    assert path.read_text() == good  # the same decision, the same bytes


def test_the_bundled_catalogue_records_its_templated_manifests(tmp_path: Path) -> None:
    """The shared-form legacy charts' manifests hold template syntax: their rendered text is in
    the offer file, and the served details are the same as when the server rendered them."""
    decided = json.loads((ROOT / OFFER_FILE).read_text())["charts"]
    templated = sorted(k for k, v in decided.items() if "manifest" in v)
    assert templated == [f"packages/legacy/llamacppqwen36mtpone-1.0.{n}-legacy.tgz" for n in range(12, 16)]
    with_offer = market.load(ROOT).view("1.12.5").fragments
    bare = tmp_path / "bare"
    shutil.copytree(ROOT / "packages", bare / "packages")
    shutil.copy(ROOT / "market-index.json", bare / "market-index.json")
    assert market.load(bare).view("1.12.5").fragments == with_offer  # rendered with Helm, as before


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps")
def test_the_serve_process_maps_no_helm_jinja_or_pydantic(tmp_path: Path) -> None:
    """A real `olares-pack serve` on the bundled catalogue, synced by a 1.12.5, a 1.12.6 and a
    1.12.7 device: the Helm library (a Go runtime), Jinja and pydantic are never loaded, neither
    mapped (/proc/<pid>/maps) nor imported (the interpreter's own import log)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc, base = serve_process("--root", str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        for os_version in ("1.12.5", "1.12.6"):
            dev = Device(base, os_version)
            assert dev.sync()
            for e in list(dev.apps.values()):
                dev.install(e["name"])
        v2 = V2Device(base, "1.12.7")
        assert v2.sync() and len(v2.items) == 2
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
        status = Path(f"/proc/{proc.pid}/status").read_text()
    finally:
        proc.terminate()
        log = proc.communicate(timeout=10)[1]
    mapped = {line.split()[-1] for line in maps.splitlines() if len(line.split()) >= 6}
    assert not [p for p in mapped if any(k in p for k in ("helm", "pydantic", "markupsafe", "jinja"))]
    imported = {line.rsplit("|", 1)[-1].strip() for line in log.splitlines() if line.startswith("import time:")}
    assert "olares_pack.market.server" in imported  # the log is whole
    assert not {m for m in imported if m.split(".")[0] in ("helm_python", "jinja2", "pydantic", "pydantic_core")}
    assert "VmRSS" in status  # the figure itself is measured by measurements/serve_bench.py --rss


def test_a_release_writes_the_offer_of_every_chart_when_the_file_is_missing(repo: Path) -> None:
    """A catalogue from before offers were recorded: the first release decides them all, so that
    build --check agrees at once."""
    (repo / OFFER_FILE).unlink()
    apps = str(repo / "apps")
    assert main(["release", "llamacppqwen36mtpone", "--apps-dir", apps, "--bump", "patch", "--summary", "offers",
                 "--date", DATE]) == ExitCode.OK
    charts = json.loads((repo / OFFER_FILE).read_text())["charts"]
    assert "packages/current/llamacppqwen36mtpone-1.0.15.tgz" in charts and "packages/current/vllmqwen36turbo27bone-2.5.9.tgz" in charts
    assert main(["build", "--apps-dir", apps, "--check"]) == ExitCode.OK


def test_the_market_payloads_and_v2_modules_do_not_name_each_other() -> None:
    """Not even for the type checker: v2 describes what it reads as protocols of its own."""
    import ast

    import olares_pack.market.payloads as payloads_mod
    import olares_pack.market.v2 as v2_mod

    def named(module: object) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                out |= {f"{node.module}.{a.name}" for a in node.names} | {node.module or ""}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
        return out

    assert not {m for m in named(v2_mod) if "payloads" in m}
    assert "olares_pack.market.v2" in named(payloads_mod)  # the one direction
