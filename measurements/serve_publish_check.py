"""Errors and torn reads of `olares-pack serve --reload-on-change` while releases publish.

    .venv/bin/python measurements/serve_publish_check.py [RELEASES] [CLIENTS]

On a copy of this checkout's catalogue (apps, packages, market-index.json, market-offer.json), a
server reloads on change while CLIENTS threads sync as devices do (hash, info, details, the
newest chart of each app, and the v2 catalog and applications), and RELEASES patch releases of
one app publish. Counted: errors (a connection error or a status other than 200) and torn reads:
a body that is not whole JSON, an info body whose hash no hash answer ever gave, a details body
naming a version the same sync's info did not list and no later info lists, a chart whose bytes
are not its ETag's sha256. Prints the counts, the requests made and the hashes seen.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = "llamacppqwen36mtpone"
CLI = [sys.executable, "-c", "from olares_pack.cli import main; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.errors = self.torn = 0
        self.hashes: set[str] = set()
        self.info_hashes: set[str] = set()
        self.versions: set[tuple[str, str]] = set()  # (app id, version) any info listed
        self.details: list[tuple[str, str]] = []
        self.notes: list[str] = []

    def note(self, kind: str, text: str) -> None:
        with self.lock:
            setattr(self, kind, getattr(self, kind) + 1)
            if len(self.notes) < 20:
                self.notes.append(f"{kind}: {text}")


def get(t: Tally, url: str, body: bytes | None = None) -> tuple[bytes, dict[str, str]] | None:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    with t.lock:
        t.requests += 1
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read(), {k.lower(): v for k, v in r.headers.items()}
    except (urllib.error.URLError, OSError) as exc:
        t.note("errors", f"{url}: {exc}")
        return None


def sync(t: Tally, base: str, stop: threading.Event) -> None:
    while not stop.is_set():
        got = get(t, f"{base}/api/v1/appstore/hash?version=1.12.6")
        if got:
            try:
                with t.lock:
                    t.hashes.add(json.loads(got[0])["hash"])
            except (ValueError, KeyError):
                t.note("torn", "hash body")
        got = get(t, f"{base}/api/v1/appstore/info?version=1.12.6")
        if not got:
            continue
        try:
            info = json.loads(got[0])
            apps = info["data"]["apps"]
        except (ValueError, KeyError):
            t.note("torn", "info body")
            continue
        with t.lock:
            t.info_hashes.add(info["hash"])
            t.versions.update((i, a["version"]) for i, a in apps.items())
        got = get(t, f"{base}/api/v1/applications/info", json.dumps({"app_ids": sorted(apps), "version": "1.12.6"}).encode())
        if got:
            try:
                details = json.loads(got[0])["apps"]
                with t.lock:
                    t.details += [(i, d["version"]) for i, d in details.items()]
            except (ValueError, KeyError):
                t.note("torn", "details body")
            for d in (json.loads(got[0]).get("apps") or {}).values():
                chart = get(t, f"{base}/api/v1/applications/{d['name']}/chart?fileName={d['chartName']}")
                if chart and chart[1].get("etag") != f'"sha256:{hashlib.sha256(chart[0]).hexdigest()}"':
                    t.note("torn", f"chart {d['chartName']}: bytes are not its ETag")
        for path in ("/api/v2/catalog?version=1.12.7", "/api/v2/applications?version=1.12.7"):
            got = get(t, base + path)
            if got:
                try:
                    json.loads(got[0])
                except ValueError:
                    t.note("torn", path)


def main() -> None:
    releases = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory(prefix="publish-check-") as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(ROOT / "apps", root / "apps")
        shutil.copytree(ROOT / "packages", root / "packages")
        for f in ("market-index.json", "market-offer.json"):
            shutil.copy(ROOT / f, root / f)
        port = free_port()
        server = subprocess.Popen([*CLI, "serve", "--port", str(port), "--root", str(root), "--reload-on-change"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        t = Tally()
        stop = threading.Event()
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{base}/health", timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("serve did not come up") from None
                    time.sleep(0.05)
            threads = [threading.Thread(target=sync, args=(t, base, stop)) for _ in range(clients)]
            for th in threads:
                th.start()
            for n in range(releases):
                done = subprocess.run([*CLI, "release", APP, "--apps-dir", str(root / "apps"), "--bump", "patch",
                                       "--summary", f"publish check {n}", "--date", "2026-12-01"],
                                      capture_output=True, text=True, cwd=root)
                if done.returncode != 0:
                    raise SystemExit(f"release failed:\n{done.stderr[-2000:]}")
                time.sleep(2.5)  # the server notices within 2 s
            stop.set()
            for th in threads:
                th.join(30)
        finally:
            server.terminate()
            server.wait(10)
        for info_hash in t.info_hashes - t.hashes:
            t.note("torn", f"info hash {info_hash} never answered by the hash route")
        for pair in set(t.details) - t.versions:
            t.note("torn", f"details {pair} listed by no info")
        print(f"{releases} releases published, {clients} syncing clients: {t.requests} requests, {t.errors} errors, "
              f"{t.torn} torn reads; {len(t.hashes)} catalogue hashes seen")
        for line in t.notes:
            print(f"  {line}")
        raise SystemExit(1 if t.errors or t.torn else 0)


if __name__ == "__main__":
    main()
