"""Drive `olares-pack serve` with concurrent requests (hash, info, details) and compare, in the
same run, with a plain static file server serving the same precomputed JSON (nginx when
installed, else Python's ThreadingHTTPServer). Prints requests per second and p50/p99 latency.

    .venv/bin/python bench/serve_bench.py [REQUESTS_PER_ROUTE] [CONCURRENCY]

Everything runs on loopback; request loops are bounded in count.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
VERSION = "1.12.6"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


async def _fetch(conn: list, host: str, port: int, raw: bytes) -> None:
    """One request on a kept-alive connection (reopened when the server closes it)."""
    if not conn:
        conn.extend(await asyncio.open_connection(host, port))
    reader, writer = conn
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if status >= 400:
        raise SystemExit(f"HTTP {status}")
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    else:
        await reader.read()
    if headers.get("connection", "").lower() == "close" or lines[0].startswith("HTTP/1.0"):
        writer.close()
        conn.clear()


async def drive(requests: list[tuple[str, str, bytes | None]], concurrency: int) -> tuple[float, list[float]]:
    """A lean HTTP/1.1 load generator: the client must not be the slowest part of the test."""
    latencies: list[float] = []
    queue = list(reversed(requests))

    def encode(method: str, url: str, body: bytes | None) -> tuple[str, int, bytes]:
        u = httpx.URL(url)
        head = f"{method} {u.raw_path.decode()} HTTP/1.1\r\nHost: {u.host}:{u.port}\r\n"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        return u.host, u.port or 80, (head + "\r\n").encode() + (body or b"")

    async def worker() -> None:
        conn: list = []
        while queue:
            host, port, raw = encode(*queue.pop())
            t0 = time.perf_counter()
            await _fetch(conn, host, port, raw)
            latencies.append(time.perf_counter() - t0)
        if conn:
            conn[1].close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(requests) / (time.perf_counter() - t0), latencies


def report(label: str, rps: float, lat: list[float]) -> str:
    q = statistics.quantiles(lat, n=100)
    return f"{label:<44} {rps:9.0f} req/s   p50 {q[49] * 1000:6.2f} ms   p99 {q[98] * 1000:6.2f} ms"


def start_static(folder: Path, port: int) -> subprocess.Popen[bytes]:
    nginx = shutil.which("nginx")
    if nginx:
        conf = folder.parent / "nginx.conf"
        conf.write_text(f"daemon off; worker_processes 2; pid {folder.parent}/nginx.pid; error_log stderr;\n"
                        f"events {{}} http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {folder}; }} }}\n")
        return subprocess.Popen([nginx, "-c", str(conf)], stderr=subprocess.DEVNULL)
    return subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    port, static_port = free_port(), free_port()
    server = subprocess.Popen([sys.executable, "-m", "olares_pack.cli", "serve", "--port", str(port), "--root", str(ROOT)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    tmp = Path(tempfile.mkdtemp())
    static = tmp / "static"
    static.mkdir()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_up(f"{base}/health")
        ids = list(httpx.get(f"{base}/api/v1/appstore/info", params={"version": VERSION}).json()["data"]["apps"])
        details_body = json.dumps({"app_ids": ids, "version": VERSION}).encode()
        # the same bytes, precomputed, for the static server
        (static / "hash.json").write_bytes(httpx.get(f"{base}/api/v1/appstore/hash", params={"version": VERSION}).content)
        (static / "info.json").write_bytes(httpx.get(f"{base}/api/v1/appstore/info", params={"version": VERSION}).content)
        (static / "details.json").write_bytes(httpx.post(f"{base}/api/v1/applications/info", content=details_body).content)
        sbase = f"http://127.0.0.1:{static_port}"
        static_proc = start_static(static, static_port)
        try:
            wait_up(f"{sbase}/hash.json")
            kind = "nginx" if shutil.which("nginx") else "python http.server"
            routes = {
                "hash": ("GET", f"{base}/api/v1/appstore/hash?version={VERSION}", None, f"{sbase}/hash.json"),
                "info": ("GET", f"{base}/api/v1/appstore/info?version={VERSION}", None, f"{sbase}/info.json"),
                "details": ("POST", f"{base}/api/v1/applications/info", details_body, f"{sbase}/details.json"),
            }
            print(f"{n} requests per route, concurrency {concurrency}, {os.cpu_count()} CPUs; "
                  f"client and servers share the machine")
            for name, (method, url, body, static_url) in routes.items():
                asyncio.run(drive([(method, url, body)] * 100, concurrency))  # warm up
                rps, lat = asyncio.run(drive([(method, url, body)] * n, concurrency))
                srps, slat = asyncio.run(drive([("GET", static_url, None)] * n, concurrency))
                print(report(f"olares-pack serve  {name}", rps, lat))
                print(report(f"{kind:<18} {name} (static file)", srps, slat))
                print(f"{'':44} ratio serve/static: {rps / srps:.2f}")
        finally:
            static_proc.terminate()
            static_proc.wait(5)
    finally:
        server.terminate()
        server.wait(5)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
