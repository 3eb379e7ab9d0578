"""The Cloudflare export, run in Cloudflare's own runtime (workerd, through `wrangler dev` from
node/, fully offline on loopback): the same device across an OS upgrade, and the same bytes as
`olares-pack serve` on every route."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, serving
from device import (
    NAME,
    V2_APPLICATIONS,
    V2_CATALOG,
    V2_TAXONOMY,
    VLLM,
    Device,
    V2Device,
    decode,
    device_lifecycle,
    device_lifecycle_v2,
    envelope,
)
from loopback_http import HTTP

from olares_pack.catalogue import ledger as index
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.market import cloudflare
from olares_pack.market.server import Source

WRANGLER = ROOT / "node" / "node_modules" / ".bin" / "wrangler"
pytestmark = pytest.mark.skipif(not WRANGLER.exists(), reason="wrangler is not installed (make installs it into node/)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_worker(ROOT, tmp_path_factory.mktemp("cf") / "worker") as base:
        yield base


@contextlib.contextmanager
def running_worker(root: Path, out: Path) -> Iterator[str]:
    """The Worker exported from the catalogue at `root`, under `wrangler dev` on a loopback port."""
    assert main(["export", "cloudflare", str(out), "--root", str(root)]) == ExitCode.OK
    port = free_port()
    # offline: no telemetry, no update check, no Request.cf download
    env = {**os.environ, "WRANGLER_SEND_METRICS": "false", "CI": "1", "CLOUDFLARE_CF_FETCH_ENABLED": "false",
           "WRANGLER_HIDE_BANNER": "true", "XDG_CONFIG_HOME": str(out.parent / "xdg")}
    proc = subprocess.Popen([str(WRANGLER), "dev", "--ip", "127.0.0.1", "--port", str(port)], cwd=out, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if HTTP.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"wrangler dev did not start:\n{proc.stdout.read() if proc.stdout else ''}")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def python_server() -> Iterator[str]:
    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        yield url


def test_a_device_upgrading_its_os_on_the_worker(worker: str) -> None:
    device_lifecycle(worker)


def test_a_1_12_7_device_syncs_the_worker_over_v2(worker: str) -> None:
    device_lifecycle_v2(worker)


V2_QUERIES = [{}, {"size": "1"}, {"size": "1", "page": "2"}, {"size": "1", "page": "3"}, {"size": "0", "page": "7"},
              {"size": "x"}, {"size": "1", "page": "0"}, {"page": "2", "q": "z"}, {"source_id": "my source"},
              {"source_id": "é\"\\<>\u2028"}, {"source_id": "a", "source_id2": "b"}, {"source_id": "x" * 257}, {"source_id": "\U0001f600" * 64}, {"source_id": "\U0001f600" * 65}]


@pytest.mark.parametrize("version", [None, "1.12.2", "1.12.5", "1.12.6", "1.12.7", "v1.12.7", "1.13", "abc"])
def test_the_worker_answers_the_v2_bytes_serve_answers(worker: str, python_server: str, version: str | None) -> None:
    for route in ("/api/v2/catalog", "/api/v2/taxonomy", "/api/v2/applications", "/api/v2/browse/applications"):
        for query in V2_QUERIES:
            params = query if version is None else {**query, "version": version}
            a = HTTP.get(worker + route, params=params)
            b = HTTP.get(python_server + route, params=params, headers={"Accept-Encoding": "identity"})
            assert (a.status_code, a.headers["content-type"]) == (b.status_code, b.headers["content-type"]), (route, params)
            if a.status_code == 200:
                assert a.content == b.content and a.headers["etag"] == b.headers["etag"], (route, params)
                spec = {"catalog": V2_CATALOG, "taxonomy": V2_TAXONOMY}.get(route.rsplit("/", 1)[1], V2_APPLICATIONS)
                decode(a.json(), envelope(spec))


@pytest.mark.parametrize("version", ["1.12.2", "1.12.3", "1.12.5", "1.12.6-0", "1.12.6", "01.12.6", "v1.12.7", "1.13",
                                     "2.0.0-rc.1"])
def test_the_worker_answers_the_bytes_serve_answers(worker: str, python_server: str, version: str) -> None:
    ledger = index.load(ROOT / "market-index.json")
    ids = [index.app_id(n) for n in ledger["apps"]] + ["ffffffff", "<script>"]
    for route in ("hash", "info"):
        a = HTTP.get(f"{worker}/api/v1/appstore/{route}", params={"version": version})
        b = HTTP.get(f"{python_server}/api/v1/appstore/{route}", params={"version": version},
                      headers={"Accept-Encoding": "identity"})
        assert (a.status_code, a.content) == (b.status_code, b.content), route
        assert a.headers["etag"] == b.headers["etag"]
    body = {"app_ids": ids, "version": version}
    a = HTTP.post(f"{worker}/api/v1/applications/info", json=body)
    b = HTTP.post(f"{python_server}/api/v1/applications/info", json=body, headers={"Accept-Encoding": "identity"})
    assert (a.status_code, a.content) == (b.status_code, b.content)


def test_charts_are_the_published_bytes_by_file_name(worker: str) -> None:
    ledger = index.load(ROOT / "market-index.json")
    for name, app in ledger["apps"].items():
        for v in app["versions"]:
            for target, ch in v["charts"].items():
                file_name = f"{name}-{ch.get('version') or v['version']}.tgz"
                r = HTTP.get(f"{worker}/api/v1/applications/{name}/chart", params={"fileName": file_name, "version": "9"})
                assert r.status_code == 200 and r.headers["content-type"] == "application/gzip"
                r2 = HTTP.get(f"{worker}/api/v2/applications/{name}/chart", params={"fileName": file_name})
                assert (r2.status_code, r2.content, r2.headers["etag"]) == (200, r.content, r.headers["etag"])
                data = (ROOT / ch["file"]).read_bytes()
                shadowed = target != "current" and "version" not in ch  # named like its current chart (1.0.9)
                assert (r.content == data) != shadowed, file_name
                again = HTTP.get(r.url, headers={"If-None-Match": r.headers["etag"]})
                assert again.status_code == 304


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/api/v1/appstore/hash?version=abc", 400),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName=../../market-index.json", 404),
    ("GET", f"/api/v1/applications/{VLLM}/chart?fileName={NAME}-1.0.10.tgz", 404),
    ("GET", "/api/v1/applications/%E0%A4%A/chart?fileName=x.tgz", 404),
    ("POST", "/api/v1/appstore/info", 405),
    ("POST", "/api/v2/catalog", 405),
    ("GET", f"/api/v2/applications/{VLLM}/chart?fileName={NAME}-1.0.10.tgz", 404),
    ("GET", "/api/v2/applications?size=-1", 400),
    ("GET", "/api/v2/nothing", 404),
    ("GET", "/api/v1/applications/info", 405),
    ("GET", "/nothing", 404),
])
def test_the_worker_refuses_what_serve_refuses(worker: str, python_server: str, method: str, path: str, status: int) -> None:
    for base in (worker, python_server):
        r = HTTP.request(method, base + path)
        assert r.status_code == status and r.json()["status"] == status, base


def test_the_export_is_deterministic_and_whole(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    cloudflare.export(ROOT, a, name="olares-market")
    cloudflare.export(ROOT, b, name="olares-market")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert Path("wrangler.toml") in files and Path("worker.js") in files


def test_the_worker_offers_an_imported_v2_app_only_where_its_installer_accepts_it(tmp_path: Path) -> None:
    """Imported single-chart v2 apps (one with a 31-character name, which 1.12.3-1.12.5 take):
    the Worker lists them to 1.12.5 and serves their charts, and lists neither to 1.12.6 (v1) nor
    to 1.12.7 (v2), whose installers refuse them (market-offer.json)."""
    data = Path(__file__).parent / "data"
    root = tmp_path / "repo"
    (root / "apps").mkdir(parents=True)
    assert main(["import", str(data / "import" / "gpuvtwo"), str(data / "thirdparty" / "llamacppnemotrondiffusion14bone"),
                 "--apps-dir", str(root / "apps"), "--date", "2026-12-03"]) == ExitCode.OK
    with running_worker(root, tmp_path / "worker") as base:
        old = Device(base, "1.12.5")
        assert old.sync() and {e["name"] for e in old.apps.values()} == {"gpuvtwo", "llamacppnemotrondiffusion14bone"}
        assert old.install("llamacppnemotrondiffusion14bone") == "1.0.2"
        new = Device(base, "1.12.6")
        new.sync()
        assert new.apps == {}
        v2 = V2Device(base, "1.12.7")
        v2.sync()
        assert v2.items == {}
