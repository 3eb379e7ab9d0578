"""The market source, served for real on loopback and synced exactly as a device does."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, serve_process, serving
from device import Device, Refused, device_lifecycle, installer_gate
from loopback_http import HTTP

from olares_pack.catalogue import ledger as index
from olares_pack.charts import helm
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.market.server import Source

HEADER_TIMEOUT = 1.0  # seconds: short, so that the slow-client test is quick

NAME, VLLM = "llamacppqwen36mtpone", "vllmqwen36turbo27bone"


@contextmanager
def running(root: Path, reload_every: float | None = None) -> Iterator[str]:
    with serving(Source(root, root / "market-index.json"), reload_every=reload_every,
                 header_timeout=HEADER_TIMEOUT) as url:
        yield url


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running(ROOT) as url:
        yield url


# the JSON type of every ApplicationInfoEntry field a device reads (beclab/market types.go)
ENTRY_TYPES = {
    "id": str, "name": str, "cfgType": str, "chartName": str, "icon": str, "description": dict, "appID": str,
    "title": dict, "version": str, "apiVersion": str, "categories": list, "versionName": str, "fullDescription": dict,
    "upgradeDescription": dict, "promoteImage": list, "promoteVideo": str, "subCategory": str, "locale": list,
    "developer": str, "requiredMemory": str, "requiredDisk": str, "requiredGPU": str, "requiredCPU": str,
    "limitedMemory": str, "limitedDisk": str, "limitedCPU": str, "limitedGPU": str, "supportClient": dict,
    "supportArch": list, "rating": int, "target": str, "permission": dict, "entrances": list, "ports": list,
    "tailscale": dict, "middleware": dict, "options": dict, "subCharts": list, "envs": list, "submitter": str,
    "doc": str, "website": str, "featuredImage": str, "sourceCode": str, "license": list, "legal": list, "i18n": dict,
    "modelSize": str, "namespace": str, "onlyAdmin": bool, "lastCommitHash": str, "createTime": int, "updateTime": int,
    "appLabels": list, "count": int, "versionHistory": list, "screenshots": list, "tags": list, "updated_at": str,
}


def device_sync(base: str, os_version: str) -> dict[str, dict]:
    """hash -> info -> details in batches of at most 10 -> chart download, like beclab/market."""
    with httpx.Client(base_url=base, timeout=10) as client:
        h = client.get("/api/v1/appstore/hash", params={"version": os_version}).json()
        assert h["hash"] and h["version"] == os_version
        info = client.get("/api/v1/appstore/info", params={"version": os_version}).json()
        assert info["hash"] == h["hash"] and info["version"] == os_version
        apps = info["data"]["apps"]
        for key, a in apps.items():
            assert key == a["id"] == hashlib.md5(a["name"].encode()).hexdigest()[:8]
        ids = list(apps)
        details: dict[str, dict] = {}
        for i in range(0, len(ids), 10):
            r = client.post("/api/v1/applications/info", json={"app_ids": ids[i:i + 10], "version": os_version}).json()
            assert r["not_found"] == [] and r["version"] == os_version
            details.update(r["apps"])
        assert set(details) == set(ids)
        for e in details.values():
            assert {k for k, t in ENTRY_TYPES.items() if not isinstance(e.get(k), t)} == set(), e["name"]
            chart = client.get(f"/api/v1/applications/{e['name']}/chart",
                               params={"version": os_version, "fileName": e["chartName"]})
            assert chart.status_code == 200 and chart.headers["content-type"] == "application/gzip"
            assert int(chart.headers["content-length"]) == len(chart.content)
            e["_chart"] = chart.content
            e["_etag"] = chart.headers["etag"]
        return {e["name"]: e for e in details.values()} | {"_hash": h, "_info": info}  # type: ignore[return-value]


def test_device_sync_on_1_12_6(base: str) -> None:
    got = device_sync(base, "1.12.6")
    ledger = index.load(ROOT / "market-index.json")
    assert set(got) - {"_hash", "_info"} == {NAME, VLLM}
    e = got[NAME]
    assert (e["version"], e["chartName"], e["apiVersion"]) == ("1.0.15", f"{NAME}-1.0.15.tgz", "v3")
    # the engine's and llm-init's requests and limits together (4 + 0.2 cores, 16 + 1; 20Gi + 256Mi, 40Gi + 2Gi)
    assert (e["requiredCPU"], e["limitedCPU"]) == ("4.2", "17")
    assert (e["requiredMemory"], e["limitedMemory"]) == (str(20 * 2**30 + 256 * 2**20), str(42 * 2**30))
    assert (e["requiredDisk"], e["requiredGPU"]) == (str(25 * 2**30), str(23552 * 2**20))
    assert e["title"] == {"en-US": "Qwen36 27B Long Context", "zh-CN": "Qwen36 27B 长上下文"} and "zh-CN" in e["i18n"]
    assert [h["version"] for h in e["versionHistory"]] == ["1.0.15", "1.0.14", "1.0.13", "1.0.12", "1.0.11", "1.0.10", "1.0.9", "1.0.8",
                                                             "1.0.7", "1.0.5"]
    assert "86.7 % draft acceptance" in e["versionHistory"][6]["upgradeDescription"]
    assert e["updated_at"] == "2026-12-06T00:00:00Z" == got["_hash"]["last_updated"]
    sha = index.recorded_sha(ledger, NAME, "1.0.15", "current")
    assert hashlib.sha256(e["_chart"]).hexdigest() == sha and e["_etag"] == f'"sha256:{sha}"'
    for name in (NAME, VLLM):
        with helm.load_bytes(got[name]["_chart"]) as chart:
            assert (chart.name, chart.version) == (name, got[name]["version"])
    data = got["_info"]["data"]
    assert json.loads(data["pages"]["AI"]["content"])[0]["id"] in data["topics"]
    assert set(data["topic_lists"]["ai-models"]["content"].split(",")) == {e["id"] for n, e in got.items() if not n.startswith("_")}
    assert "AI" in data["tags"] and data["latest"][0] == NAME


def test_the_version_window(base: str) -> None:
    old = device_sync(base, "1.12.5")
    new = device_sync(base, "1.12.6")
    assert set(old) - {"_hash", "_info"} == {NAME}  # the vLLM app has no legacy chart
    assert old[NAME]["apiVersion"] == "v2" and old[NAME]["options"]["dependencies"][0]["version"] == ">=1.12.3-0,<1.12.6"
    assert old["_hash"]["hash"] != new["_hash"]["hash"]
    assert (old[NAME]["version"], old[NAME]["chartName"]) == ("1.0.15-legacy", f"{NAME}-1.0.15-legacy.tgz")
    with helm.load_bytes(old[NAME]["_chart"]) as chart:
        assert chart.version == "1.0.15-legacy"
    assert old[NAME]["_chart"] != new[NAME]["_chart"]
    # the legacy line's history: its own version, then releases whose two charts shared a name
    assert [h["version"] for h in old[NAME]["versionHistory"]][:3] == ["1.0.15-legacy", "1.0.14-legacy", "1.0.13-legacy"]
    none = HTTP.get(f"{base}/api/v1/appstore/info", params={"version": "1.12.2"}).json()
    assert none["data"]["apps"] == {}
    # the hash is stable for the same catalogue
    assert HTTP.get(f"{base}/api/v1/appstore/hash", params={"version": "1.12.6"}).json() == new["_hash"]


def test_1_12_3_syncs_the_legacy_line_as_1_12_5_does(base: str) -> None:
    first, late = device_sync(base, "1.12.3"), device_sync(base, "1.12.5")
    assert first["_hash"]["hash"] == late["_hash"]["hash"]  # one window, one view
    assert set(first) - {"_hash", "_info"} == {NAME} and first[NAME]["_chart"] == late[NAME]["_chart"]
    assert {k: v for k, v in first[NAME].items() if not k.startswith("_")} == {k: v for k, v in late[NAME].items()
                                                                             if not k.startswith("_")}


def test_chart_caching_headers(base: str) -> None:
    url = f"{base}/api/v1/applications/{NAME}/chart"
    r = HTTP.get(url, params={"fileName": f"{NAME}-1.0.5.tgz"})
    assert r.status_code == 200 and "immutable" in r.headers["cache-control"]
    again = HTTP.get(url, params={"fileName": f"{NAME}-1.0.5.tgz"}, headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


@pytest.mark.parametrize("method,path,kwargs,status", [
    ("POST", "/api/v1/applications/info", {"content": b"not json"}, 400),
    ("POST", "/api/v1/applications/info", {"content": b"\xff\xfe"}, 400),
    ("POST", "/api/v1/applications/info", {"json": ["43e83ecd"]}, 400),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": "43e83ecd"}}, 400),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": [1, 2]}}, 400),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": ["a"] * 101}}, 400),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": [], "version": 12}}, 400),
    ("POST", "/api/v1/applications/info", {"content": b'{"app_ids": ["' + b"a" * 70000 + b'"]}'}, 413),
    ("GET", "/api/v1/appstore/hash?version=../../etc", {}, 400),
    ("GET", "/api/v1/appstore/info?version=abc", {}, 400),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName=../../market-index.json", {}, 404),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName=..%2F..%2Fmarket-index.json", {}, 404),
    ("GET", "/api/v1/applications/..%2F..%2Fapps/chart?fileName=x.tgz", {}, 404),
    ("GET", "/api/v1/applications/ghost/chart?fileName=ghost-1.0.0.tgz", {}, 404),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName={NAME}-9.9.9.tgz", {}, 404),
    ("GET", f"/api/v1/applications/{NAME}/chart", {}, 404),
    ("GET", "/icons/..%2F..%2Fmarket-index.png", {}, 404),
    ("GET", "/api/v2/whatever", {}, 404),
    ("DELETE", "/api/v1/appstore/hash", {}, 405),
    ("GET", "/api/v1/applications/info", {}, 405),
])
def test_bad_requests_get_a_json_4xx(base: str, method: str, path: str, kwargs: dict, status: int) -> None:
    r = HTTP.request(method, base + path, **kwargs)
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/json") and r.json()["status"] == status


DEEP = b"[" * 5000 + b"]" * 5000


@pytest.mark.parametrize("method,path,kwargs,status", [
    ("GET", "/api/v1/appstore/hash?version=01.12.6", {}, 200),  # loose, as the installer reads it
    ("GET", "/api/v1/appstore/hash?version=1.12.6-01", {}, 200),
    ("GET", "/api/v1/appstore/hash?version=v1.12.6", {}, 200),
    ("GET", "/api/v1/appstore/info?version=1.12", {}, 200),
    ("GET", "/api/v1/appstore/hash?version=%D9%A1.%D9%A1%D9%A2.%D9%A6", {}, 400),  # Arabic-Indic digits
    ("GET", "/api/v1/appstore/hash?version=" + "9" * 5000, {}, 400),
    ("GET", "/api/v1/appstore/hash?version=", {}, 400),
    ("GET", "/api/v1/appstore/hash?version=1.12.6%00", {}, 400),
    ("GET", "/api/v1/appstore/hash?version=1.12.6%0d%0aX-Injected:%201", {}, 400),
    ("GET", "/api/v1/appstore/info?version=1.12.6&version=2", {}, 200),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": ["43e83ecd"], "version": "01.12.6"}}, 200),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": ["43e83ecd"], "version": "1.12.6-01"}}, 200),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": ["43e83ecd"], "version": "\u0661.\u0661\u0662"}}, 400),
    ("POST", "/api/v1/applications/info", {"content": DEEP}, 400),
    ("POST", "/api/v1/applications/info", {"content": b'{"app_ids": [], "version": "1.12.6", "x": ' + b"9" * 5000 + b"}"}, 400),
    ("POST", "/api/v1/applications/info", {"content": b'{"app_ids": [' + b"1" * 5000 + b"]}"}, 400),
    ("POST", "/api/v1/applications/info", {"content": rb'{"app_ids": ["\u0000", "\ud800"], "version": "1.12.6"}'}, 400),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": ["\u00e9" * 8, "<script>"], "version": "1.12.6"}}, 200),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": [], "version": None}}, 400),
    ("POST", "/api/v1/applications/info", {"json": {"app_ids": [], "version": ["1.12.6"]}}, 400),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName={NAME}-1.0.10.tgz&version=%D9%A1", {}, 200),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName={NAME}-1.0.10.tgz&version=" + "9" * 5000, {}, 200),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName={NAME}-%D9%A1.0.9.tgz", {}, 404),
    ("GET", f"/api/v1/applications/{NAME}/chart?fileName={NAME}-1.0.9.tgz%00", {}, 404),
    ("GET", "/api/v1/applications/%00/chart?fileName=x.tgz", {}, 404),
    ("GET", "/icons/%C3%A9.png", {}, 404),
    ("GET", "/api/v2/catalog?version=1.12.7%00", {}, 400),
    ("GET", "/api/v2/catalog?source_id=%00%ff%0d%0aX:1", {}, 200),
    ("GET", "/api/v2/taxonomy?source_id=" + "%ff" * 300, {}, 400),
    ("GET", "/api/v2/applications?size=" + "9" * 5000, {}, 400),
    ("GET", "/api/v2/applications?size=999999999&page=999999999", {}, 200),
    ("GET", "/api/v2/applications?size=1&page=%D9%A1", {}, 400),
    ("GET", "/api/v2/browse/applications?size=1.5", {}, 400),
    ("GET", f"/api/v2/applications/{NAME}/chart?fileName=../../market-index.json", {}, 404),
    ("GET", "/api/v2/applications/%00/chart?fileName=x.tgz", {}, 404),
])
def test_hostile_requests_never_get_a_5xx(base: str, method: str, path: str, kwargs: dict, status: int) -> None:
    r = HTTP.request(method, base + path, **kwargs)
    assert r.status_code == status, r.text[:300]


@pytest.mark.parametrize("length", [b"-1", b"abc", b"99999999999999999999", b"1, 2"])
def test_odd_content_lengths_get_a_4xx(base: str, length: bytes) -> None:
    import socket

    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /api/v1/applications/info HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n{}")
        status = sock.recv(4096).split(b"\r\n", 1)[0]
    assert status.startswith(b"HTTP/1.1 4"), status


def test_slow_clients_do_not_hold_the_server(base: str) -> None:
    """Connections that trickle their headers (slowloris) do not stop normal requests, and are
    closed after the header deadline."""
    import socket

    host, port = base.removeprefix("http://").split(":")
    slow = []
    for _ in range(20):
        sock = socket.create_connection((host, int(port)))
        sock.sendall(b"GET /api/v1/appstore/hash?version=1.12.6 HTTP/1.1\r\nHost: x\r\n")
        slow.append(sock)
    t = time.monotonic()
    assert HTTP.get(f"{base}/api/v1/appstore/hash", params={"version": "1.12.6"}).status_code == 200
    assert time.monotonic() - t < 1.0
    time.sleep(HEADER_TIMEOUT + 0.5)
    for sock in slow:
        sock.settimeout(2)
        assert sock.recv(100) == b""  # closed by the server
        sock.close()


def test_the_reload_loop_outlives_a_failure(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repo
    calls = {"n": 0}
    original = Source.changed

    def flaky(self: Source) -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("a disk hiccup")
        return original(self)

    monkeypatch.setattr(Source, "changed", flaky)
    with running(root, reload_every=0.05) as url:
        time.sleep(0.2)  # the first check fails
        release_and_wait(root, url, "the reload loop stopped after the failure")
    assert calls["n"] > 1


def release_and_wait(root: Path, url: str, why: str) -> None:
    """Release a patch of the example app and wait until the running server offers it."""
    before = HTTP.get(f"{url}/api/v1/appstore/hash", params={"version": "1.12.6"}).json()["hash"]
    assert main(["release", NAME, "--apps-dir", str(root / "apps"), "--bump", "patch", "--summary", "x",
                 "--date", "2026-06-01"]) == ExitCode.OK
    deadline = time.monotonic() + 10
    while HTTP.get(f"{url}/api/v1/appstore/hash", params={"version": "1.12.6"}).json()["hash"] == before:
        assert time.monotonic() < deadline, why
        time.sleep(0.05)


def test_unknown_ids_are_not_found(base: str) -> None:
    r = HTTP.post(f"{base}/api/v1/applications/info", json={"app_ids": ["ffffffff", "43e83ecd", "43e83ecd"], "version": "1.12.6"})
    doc = r.json()
    assert list(doc["apps"]) == ["43e83ecd"] and doc["not_found"] == ["ffffffff"]


def test_health(base: str) -> None:
    assert HTTP.get(f"{base}/health").json()["status"] == "ok"


def test_publishing_reloads_without_downtime(repo: Path) -> None:
    root = repo
    with running(root, reload_every=0.1) as url:
        release_and_wait(root, url, "the new version was not picked up")
        info = HTTP.get(f"{url}/api/v1/appstore/info", params={"version": "1.12.6"}).json()
        assert info["data"]["apps"]["43e83ecd"]["version"] == "1.0.16"
        current = info["hash"]
        # a ledger that does not load (here: a package it lists is missing) is not served
        ledger = json.loads((root / "market-index.json").read_text())
        ledger["apps"][NAME]["versions"][-1]["charts"]["current"]["file"] = "packages/current/missing.tgz"
        (root / "market-index.json").write_text(json.dumps(ledger))
        time.sleep(0.5)
        assert HTTP.get(f"{url}/api/v1/appstore/hash", params={"version": "1.12.6"}).json()["hash"] == current
        assert HTTP.get(f"{url}/api/v1/applications/{NAME}/chart", params={"fileName": f"{NAME}-1.0.15.tgz"}).status_code == 200


# ---------------------------------------------------------------- a device across an OS upgrade


def test_a_device_upgrading_its_os_gets_only_charts_its_installer_accepts(base: str) -> None:
    device_lifecycle(base)


def test_the_installer_gate_refuses_what_a_device_would(base: str) -> None:
    """The emulator's gate is not a rubber stamp: the charts of the other OS line are refused."""
    dev = Device(base, "1.12.6")
    dev.sync()
    entry, data = dev.chart(NAME)
    installer_gate("1.12.6", NAME, entry["version"], entry["chartName"], data)
    with pytest.raises(Refused, match="does not admit 1.12.5"):
        installer_gate("1.12.5", NAME, entry["version"], entry["chartName"], data)
    old = HTTP.get(f"{base}/api/v1/applications/{NAME}/chart", params={"fileName": f"{NAME}-1.0.10-legacy.tgz"}).content
    with pytest.raises(Refused, match="does not admit 1.12.6"):
        installer_gate("1.12.6", NAME, "1.0.10-legacy", f"{NAME}-1.0.10-legacy.tgz", old)
    with pytest.raises(Refused, match="the market said"):
        installer_gate("1.12.5", NAME, "1.0.10", f"{NAME}-1.0.10.tgz", old)


def test_a_release_before_per_target_versions_is_offered_on_one_line_only(base: str) -> None:
    """1.0.9 was published with both charts named llamacppqwen36mtpone-1.0.9.tgz: the file name is
    the current chart's, and no 1.12.5 device is offered 1.0.9 under it."""
    r = HTTP.get(f"{base}/api/v1/applications/{NAME}/chart", params={"fileName": f"{NAME}-1.0.9.tgz", "version": "1.12.5"})
    installer_gate("1.12.6", NAME, "1.0.9", f"{NAME}-1.0.9.tgz", r.content)


def test_conditional_and_compressed_answers(base: str) -> None:
    url = f"{base}/api/v1/appstore/info?version=1.12.6"
    plain = HTTP.get(url, headers={"Accept-Encoding": "identity"})
    zipped = HTTP.get(url, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip" and zipped.content == plain.content  # httpx decodes it
    assert zipped.headers["etag"] != plain.headers["etag"] and "accept-encoding" in zipped.headers["vary"].lower()
    again = HTTP.get(url, headers={"Accept-Encoding": "identity", "If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    head = HTTP.head(url, headers={"Accept-Encoding": "identity"})
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) == len(plain.content)
    # an answer for another OS window is another body with another tag
    assert HTTP.get(f"{base}/api/v1/appstore/info?version=1.12.5").headers["etag"] != plain.headers["etag"]


def test_the_serve_command_with_two_workers(tmp_path: Path) -> None:
    """The command as a maintainer runs it: its own process, uvloop, two workers on one socket."""
    import subprocess

    proc, base = serve_process("--root", str(ROOT), "--workers", "2", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        device_lifecycle(base)
        digests = {HTTP.get(f"{base}/health", headers={"Connection": "close"}).json()["index_sha256"] for _ in range(20)}
        assert len(digests) == 1  # every worker serves the same catalogue
    finally:
        proc.terminate()
        out = proc.communicate(timeout=10)[0]
    assert proc.returncode in (0, -15), out
    assert "Traceback" not in out, out
