"""Olares 1.12.7 devices: the v2 sync, served for real on loopback (over TLS too), decoded with the
device's types; the taxonomy file; caches no client can inflate; a start with a chart missing."""

from __future__ import annotations

import calendar
import datetime as dt
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    chart_olares_range,
    decode,
    device_lifecycle,
    device_lifecycle_v2,
    envelope,
)
from loopback_http import HTTP

from olares_pack.catalogue import ledger as index
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.market import payloads as market
from olares_pack.market import server
from olares_pack.market.server import Source


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        yield url


def get(base: str, path: str, **params: object) -> httpx.Response:
    return HTTP.get(base + path, params=params, headers={"Accept-Encoding": "identity"})  # type: ignore[arg-type]


def versions_of(name: str, root: Path = ROOT) -> list[str]:
    """The app's published versions, oldest first (the ledger's order is not assumed)."""
    import semver

    ledger = json.loads((root / "market-index.json").read_text())
    return sorted((v["version"] for v in ledger["apps"][name]["versions"]), key=semver.Version.parse)


def next_patch(version: str) -> str:
    import semver

    return str(semver.Version.parse(version).bump_patch())


def epoch_ms(date_text: str) -> int:
    return calendar.timegm(dt.date.fromisoformat(date_text).timetuple()) * 1000


# ---------------------------------------------------------------- the v2 sequence


def test_a_device_moving_from_1_12_6_to_1_12_7_syncs_over_v2(base: str) -> None:
    device_lifecycle_v2(base)


@pytest.mark.parametrize("os_version,line", [("1.12.5", "legacy"), ("1.12.6", "current"), ("1.12.7", "current"),
                                             ("1.13.0", "current")])
def test_each_item_is_what_that_os_line_is_offered(base: str, os_version: str, line: str) -> None:
    """Version, constraint and times are exact per OS line: the chart the line installs, its own
    olares range, its publication date from the ledger (epoch ms; updated_at in seconds)."""
    ledger = index.load(ROOT / "market-index.json")
    doc = decode(get(base, "/api/v2/applications", version=os_version).json(), envelope(V2_APPLICATIONS))["data"]
    items = {i["name"]: i for i in doc["items"]}
    dev = Device(base, os_version)
    dev.sync()
    assert set(items) == {e["name"] for e in dev.apps.values()}  # the same apps as the v1 sync of that version
    for name, item in items.items():
        entry = next(e for e in dev.apps.values() if e["name"] == name)
        assert item["version"] == entry["version"] and item["app_id"] == entry["id"]
        _, data = dev.chart(name)
        assert item["olares_version_constraint"] == chart_olares_range(data)
        published = next(v["published"] for v in ledger["apps"][name]["versions"]
                         if any((ch.get("version") or v["version"]) == item["version"] and t == line
                                for t, ch in v["charts"].items()))
        assert item["last_modify_time"] == epoch_ms(published) and item["updated_at"] == epoch_ms(published) // 1000
    if line == "legacy":
        assert items[NAME]["version"] == f"{versions_of(NAME)[-1]}-legacy" and items[NAME]["olares_version_constraint"] == ">=1.12.3-0,<1.12.6"
        assert VLLM not in items
    assert doc["max_last_modify_time"] == max(i["last_modify_time"] for i in items.values())
    probe = decode(get(base, "/api/v2/catalog", version=os_version).json(), envelope(V2_CATALOG))["data"]
    assert probe["apps_last_modify_time"] == doc["max_last_modify_time"]


def test_the_digest_follows_what_a_device_would_fetch(base: str) -> None:
    def probe(v: str) -> dict:
        return get(base, "/api/v2/catalog", version=v).json()["data"]

    same = {probe(v)["apps_filter_digest"] for v in ("1.12.6", "1.12.7", "01.12.7", "1.13.0")}
    assert len(same) == 1  # one window, one view
    assert probe("1.12.5")["apps_filter_digest"] not in same
    # no version: a v2 caller is at least 1.12.7
    assert probe("1.12.7") == get(base, "/api/v2/catalog").json()["data"]


def test_a_release_changes_the_digest_and_times_from_the_release_date(repo: Path) -> None:
    with serving(Source(repo, repo / "market-index.json"), reload_every=0.05) as url:
        before = get(url, "/api/v2/catalog").json()["data"]
        assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "x",
                     "--date", "2027-01-15"]) == ExitCode.OK
        deadline = time.monotonic() + 10
        while (after := get(url, "/api/v2/catalog").json()["data"]) == before:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert after["apps_filter_digest"] != before["apps_filter_digest"]
        assert after["apps_last_modify_time"] == epoch_ms("2027-01-15")
        items = {i["name"]: i for i in get(url, "/api/v2/applications").json()["data"]["items"]}
        assert items[NAME]["version"] == next_patch(versions_of(NAME)[-1]) and items[NAME]["last_modify_time"] == epoch_ms("2027-01-15")
        assert items[VLLM]["last_modify_time"] < epoch_ms("2027-01-15")  # untouched apps keep their date


def test_paging_only_when_size_is_given(base: str) -> None:
    def apps(**params: object) -> dict:
        r = get(base, "/api/v2/applications", **params)
        assert r.status_code == 200, r.text
        return decode(r.json(), envelope(V2_APPLICATIONS))["data"]

    whole = apps()
    assert (whole["page"], whole["page_size"], whole["total"], whole["has_more"]) == (1, 2, 2, False)
    assert [i["name"] for i in whole["items"]] == [NAME, VLLM]
    assert apps(page=2) == whole and apps(size=0) == whole  # page means nothing without size
    first, second, past = apps(size=1), apps(size=1, page=2), apps(size=1, page=3)
    assert (first["items"], first["has_more"]) == (whole["items"][:1], True)
    assert (second["items"], second["has_more"], second["page"]) == (whole["items"][1:], False, 2)
    assert (past["items"], past["has_more"], past["total"]) == ([], False, 2)
    assert get(base, "/api/v2/browse/applications", size=1, page=2).content == get(base, "/api/v2/applications", size=1, page=2).content
    # what the answer does not depend on leaves the bytes as they are
    assert get(base, "/api/v2/applications", size=1, page=2, sort="x", q="y").content == get(base, "/api/v2/applications", size=1, page=2).content
    for bad in ({"size": "x"}, {"size": "-1"}, {"size": "1", "page": "0"}, {"size": "9" * 12}, {"version": "abc"}):
        r = get(base, "/api/v2/applications", **bad)
        assert r.status_code == 400 and r.json()["status"] == 400, bad


def test_catalog_and_taxonomy_echo_the_callers_source_id(base: str) -> None:
    for sid in ("my source", "é\"\\<>", "x" * 256):
        for route in ("/api/v2/catalog", "/api/v2/taxonomy"):
            doc = get(base, route, source_id=sid).json()["data"]
            assert (doc["source_id"] if route.endswith("catalog") else doc["source"]["source_id"]) == sid
    assert get(base, "/api/v2/catalog", source_id="x" * 257).status_code == 400
    tax = decode(get(base, "/api/v2/taxonomy").json(), envelope(V2_TAXONOMY))["data"]
    assert tax["source"]["source_id"] == "olares-pack" and tax["source"]["is_official"] is False
    assert [c["id"] for c in tax["categories"]] == tax["nav"] == ["AI"]
    assert tax["languages"][0]["code"] == "en-US" and tax["tags"] == tax["topics"] == []


@pytest.mark.parametrize("method,path", [("POST", "/api/v2/catalog"), ("DELETE", "/api/v2/applications"),
                                         ("POST", f"/api/v2/applications/{NAME}/chart")])
def test_v2_routes_take_get(base: str, method: str, path: str) -> None:
    assert HTTP.request(method, base + path).status_code == 405


# ---------------------------------------------------------------- the taxonomy file


TAXONOMY = """\
source:
  source_id: gpu-market
  short_label: GPU
  display_name: {en-US: GPU servers, fr-FR: Serveurs GPU}
  icon: https://market.example.org/source.png
categories:
  - id: Chat
    title: {en-US: Chat, fr-FR: Discussion}
    description: {en-US: Chat models}
  - id: AI
    title: {en-US: Artificial intelligence}
languages:
  - {code: en-US, display_name: English}
  - {code: fr-FR, display_name: Français}
updated: 2027-03-01
"""


def test_the_taxonomy_comes_from_market_yaml_and_leaves_v1_alone(repo: Path) -> None:
    plain = market.load(repo)
    (repo / "market.yaml").write_text(TAXONOMY)
    cat = market.load(repo)
    for v in ("1.12.5", "1.12.6"):
        a, b = plain.view(v), cat.view(v)
        assert (a.hash_body(v), a.info_body(v), a.fragments) == (b.hash_body(v), b.info_body(v), b.fragments)
    with serving(Source(repo, repo / "market-index.json")) as url:
        tax = decode(get(url, "/api/v2/taxonomy").json(), envelope(V2_TAXONOMY))["data"]
        probe = get(url, "/api/v2/catalog").json()["data"]
    assert tax["source"] == {"source_id": "gpu-market", "short_label": "GPU", "icon": "https://market.example.org/source.png",
                             "display_name": {"en-US": "GPU servers", "fr-FR": "Serveurs GPU"}, "is_official": False}
    assert [(c["id"], c["sort"], c["title"]) for c in tax["categories"]] == [
        ("Chat", 1, {"en-US": "Chat", "fr-FR": "Discussion"}), ("AI", 2, {"en-US": "Artificial intelligence"})]
    assert tax["nav"] == ["AI"]  # Chat has no app yet
    assert [lang["code"] for lang in tax["languages"]] == ["en-US", "fr-FR"]
    assert tax["last_modify_time"] == probe["taxonomy_last_modify_time"] == epoch_ms("2027-03-01")
    assert probe["source_id"] == "gpu-market"
    assert probe["apps_filter_digest"] != plain.view("1.12.7").v2.digest  # a device refetches the taxonomy


@pytest.mark.parametrize("text,where", [
    ("source:\n  source_id: gpu-market\n  colour: red\n", "market.yaml:3: source.colour: unknown field"),
    ("categories:\n  - id: AI\n  - id: AI\n", "market.yaml:3: categories[1].id: category 'AI' is listed twice"),
    ("languages:\n  - {code: english, display_name: English}\n", "market.yaml:2: languages[0].code"),
    ("- a list\n", "market.yaml:1: expected a mapping"),
])
def test_a_bad_market_yaml_is_refused_with_its_line(repo: Path, capsys: pytest.CaptureFixture[str], text: str, where: str) -> None:
    (repo / "market.yaml").write_text(text)
    assert main(["export", "cloudflare", str(repo / "out"), "--root", str(repo)]) == ExitCode.INPUT
    assert where in capsys.readouterr().err
    assert not (repo / "out").exists()


# ---------------------------------------------------------------- serve as a maintainer runs it


@contextmanager
def serve_command(root: Path, *args: str, scheme: str = "http", verify: object = True) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "olares_pack.cli", "serve", "--root", str(root), "--port", str(port),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"{scheme}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1, verify=verify)  # type: ignore[arg-type]
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.1)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def self_signed(folder: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (apt-get install openssl)")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
    return cert, key


def test_serve_over_https_with_a_self_signed_certificate(tmp_path: Path) -> None:
    """What a 1.12.7 device needs (it refuses a source that is not https: beclab/Olares PR #3985):
    the whole v2 sequence and the v1 sync over TLS, the certificate verified."""
    cert, key = self_signed(tmp_path)
    trust = ssl.create_default_context(cafile=str(cert))
    with serve_command(ROOT, "--tls-cert", str(cert), "--tls-key", str(key), scheme="https", verify=trust) as (url, _):
        device_lifecycle_v2(url, verify=trust)
        dev = Device(url, "1.12.5", verify=trust)
        assert dev.sync() and dev.install(NAME) == f"{versions_of(NAME)[-1]}-legacy"
        with pytest.raises(httpx.ConnectError):  # not trusted without the certificate
            HTTP.get(f"{url}/health")
        with pytest.raises(httpx.HTTPError):  # and not served in clear text
            HTTP.get(url.replace("https:", "http:") + "/health", timeout=3)


# ---------------------------------------------------------------- memory no client can inflate


def pipelined(url: str, requests: list[bytes], batch: int = 200) -> list[bytes]:
    """Send raw requests on one kept-alive connection, `batch` at a time; the status lines back."""
    host, port = url.removeprefix("http://").split(":")
    statuses: list[bytes] = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for n in range(0, len(requests), batch):
            chunk = requests[n:n + batch]
            sock.sendall(b"".join(chunk))
            buf = b""
            while buf.count(b"HTTP/1.1 ") < len(chunk) or not buf.endswith((b"}", b"\r\n\r\n")):
                data = sock.recv(1 << 20)
                assert data, "the server closed the connection"
                buf += data
            statuses += [line.split(b"\r\n", 1)[0] for line in buf.split(b"HTTP/1.1 ")[1:]]
    return statuses


def rss() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_padded_requests_land_on_one_cache_entry(repo: Path) -> None:
    """3,000 distinct padded GETs and 3,000 distinct padded POSTs, all answered 200, leave one
    cache entry per thing actually asked and the memory where it was (before: one entry per raw
    request, 31 -> 462 MiB for 5,000 of them; measurements/serve_bench.py --rss measures a whole server)."""
    n, pad = 3000, b"x" * 4000
    source = Source(repo, repo / "market-index.json")
    with serving(source) as url:
        warm = [b"GET /api/v1/appstore/hash?version=1.12.6 HTTP/1.1\r\nHost: x\r\n\r\n"] * 10
        assert set(pipelined(url, warm)) == {b"200 OK"}
        gets = [b"GET %s?version=1.12.6&pad=%d%s&size=1 HTTP/1.1\r\nHost: x\r\n\r\n" % (path, i, pad)
                for i in range(n) for path in (b"/api/v1/appstore/info", b"/api/v2/applications")][:n]
        posts = []
        for i in range(n):
            body = b'{"app_ids": ["43e83ecd", "901d20e0"], "version": "1.12.6", "pad": "%d%s"}' % (i, pad)
            posts.append(b"POST /api/v1/applications/info HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        before = rss()  # the requests are built: what grows now is the server's
        assert set(pipelined(url, gets + posts)) == {b"200 OK"}
        grown = rss() - before
        answers = source.answers
        assert answers is not None
        assert len(answers.gets.entries) == 3 and len(answers.posts.entries) == 1  # hash, info, applications; details
        assert not answers.get_aliases.keys.keys() - {warm[0].split(b" ")[1]}  # long requests are not remembered
    # the pipelined client shares this process (and, in a whole test run, the heap of every test
    # before it): a bound well under the unbounded cache's growth on the same requests (~104 MiB)
    assert grown < 32 << 20, f"RSS grew by {grown >> 20} MiB"


def test_the_caches_stay_within_their_bytes_when_every_request_differs(base: str) -> None:
    """Distinct answers (a thousand OS versions, each its own echoed body) fill the cache up to its
    bound and no further; unknown ids are answered and never kept."""
    answers = Answers(market.load(ROOT), "1.12.6")
    for i in range(1000):
        assert answers.get(b"/api/v1/appstore/info?version=1.12.6-%d" % i).status == 200
        body = b'{"app_ids": ["43e83ecd", "f%07d"], "version": "1.12.6"}' % i
        assert answers.post(b"/api/v1/applications/info", body).status == 200
    assert 0 < answers.gets.size <= server.GET_CACHE_BYTES and len(answers.gets.entries) < 1000
    assert answers.gets.size == sum(cost for _, cost in answers.gets.entries.values())
    assert answers.posts.entries == {}
    # the bound holds for a cache of any size
    small = Answers(market.load(ROOT), "1.12.6", gets=server.Cache(512 << 10))
    for i in range(300):
        small.get(b"/api/v1/appstore/info?version=1.12.6-%d" % i)
    assert 0 < small.gets.size <= 512 << 10 and len(small.gets.entries) < 300


Answers = server.Answers


# ---------------------------------------------------------------- one missing chart


def break_two_charts(repo: Path) -> tuple[str, str]:
    """Remove the newest current chart of the llama.cpp app and put a folder where its 1.0.8
    current chart was (unreadable, not missing); their file names."""
    ledger = json.loads((repo / "market-index.json").read_text())
    versions = {v["version"]: v for v in ledger["apps"][NAME]["versions"]}
    missing = repo / versions[versions_of(NAME, repo)[-1]]["charts"]["current"]["file"]
    unreadable = repo / versions["1.0.8"]["charts"]["current"]["file"]
    missing.unlink()
    unreadable.unlink()
    unreadable.mkdir()
    return missing.name, unreadable.name


def test_serve_starts_with_charts_missing_and_serves_the_rest(repo: Path) -> None:
    missing, unreadable = break_two_charts(repo)
    with serve_command(repo) as (url, proc):
        health = HTTP.get(f"{url}/health").json()
        assert health["status"] == "degraded"
        problems = {u["file"]: u["problem"] for u in health["unavailable"]}
        assert set(problems) == {missing, unreadable}
        assert "missing" in problems[missing] and "olares-pack build" in problems[missing]
        assert problems[unreadable].startswith("unreadable") and "but missing" not in problems[unreadable]
        r = HTTP.get(f"{url}/api/v1/applications/{NAME}/chart", params={"fileName": missing})
        assert r.status_code == 503 and "missing" in r.json()["error"] and missing in r.json()["error"]
        assert HTTP.get(f"{url}/api/v2/applications/{NAME}/chart", params={"fileName": unreadable}).status_code == 503
        # everything else: the vLLM app, the legacy line, and the llama.cpp app at its newest whole chart
        newest, whole, vllm = versions_of(NAME, repo)[-1], versions_of(NAME, repo)[-2], versions_of(VLLM, repo)[-1]
        dev = Device(url, "1.12.6")
        dev.sync()
        assert dev.install(VLLM) == vllm and dev.install(NAME) == whole
        device_lifecycle_v2_items = V2Device(url, "1.12.7")
        device_lifecycle_v2_items.sync()
        assert {i["name"]: i["version"] for i in device_lifecycle_v2_items.items.values()} == {NAME: whole, VLLM: vllm}
        old = Device(url, "1.12.5")
        old.sync()
        assert old.install(NAME) == f"{newest}-legacy"
    out = proc.stdout.read() if proc.stdout else ""
    assert f"UNAVAILABLE {NAME} {newest} (current)" in out and "DEGRADED: serving" in out and "--strict" in out


def test_serve_strict_refuses_to_start_naming_each_chart(repo: Path) -> None:
    missing, unreadable = break_two_charts(repo)
    proc = subprocess.run([sys.executable, "-m", "olares_pack.cli", "serve", "--root", str(repo), "--port", "0", "--strict"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == ExitCode.INPUT
    assert missing in proc.stderr and "missing" in proc.stderr
    assert unreadable in proc.stderr and "unreadable" in proc.stderr


def test_a_reload_does_not_swap_in_a_catalogue_with_a_chart_missing(repo: Path) -> None:
    """At start the rest is served; on a reload the whole catalogue being served stays."""
    with serving(Source(repo, repo / "market-index.json"), reload_every=0.05) as url:
        before = get(url, "/api/v2/catalog").content
        break_two_charts(repo)
        os.utime(repo / "market-index.json", ns=(time.time_ns(), time.time_ns() + 10**9))
        time.sleep(0.5)
        assert get(url, "/api/v2/catalog").content == before
        assert HTTP.get(f"{url}/health").json()["status"] == "ok"
        device_lifecycle(url)


# ---------------------------------------------------------------- import from a v2 source


def test_a_live_source_with_only_the_v2_routes_imports_the_same_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live-source import reads a source the way a 1.12.7 device does: the app list from
    /api/v2/applications, charts under /api/v2; here the source answers 404 on the v1 list and
    chart routes, and the same charts come back as from the v1 routes."""
    from olares_pack.market import client as marketclient

    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        whole = marketclient.fetch(url, ("1.12.5", "1.12.7"))
    original = server.Answers._route
    asked: list[bytes] = []

    def v2_only(self: server.Answers, url: bytes):  # noqa: ANN202
        path = url.partition(b"?")[0]
        asked.append(path)
        if path.startswith(b"/api/v1/appstore/") or (path.startswith(b"/api/v1/applications/") and path.endswith(b"/chart")):
            return None, lambda: server.error(404, "not found")
        return original(self, url)

    monkeypatch.setattr(server.Answers, "_route", v2_only)
    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        found = marketclient.fetch(url, ("1.12.5", "1.12.7"))
    assert len(found) >= 8 and [(f.folder, f.package, f.date) for f in found] == [(f.folder, f.package, f.date) for f in whole]
    assert all("/api/v2/applications/" in f.label for f in found)
    assert b"/api/v2/applications" in asked and not any(p.startswith(b"/api/v1/appstore/") for p in asked)
