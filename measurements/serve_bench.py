"""`olares-pack serve` beside nginx serving the same bytes, in one run.

    .venv/bin/python measurements/serve_bench.py [--runs N] [--floor] [--pin] [SECONDS] [CONNECTIONS] [APPS...]
    .venv/bin/python measurements/serve_bench.py --rss [N]          # memory under N distinct padded requests
    .venv/bin/python measurements/serve_bench.py --pipelined [SECONDS]  # req/s without wrk or nginx

`--rss` starts `olares-pack serve` on the bundled catalogue, syncs it as a device does, then
sends N (default 5,000) distinct padded POSTs and N padded GETs (4 KiB of padding each, in an
unknown parameter or field: every one a 200) and prints the server's RSS before and after and
its peak (VmHWM). `--pipelined` needs neither wrk nor nginx: one client process keeps 64
requests in flight on one connection per route (v1 and v2) and prints requests per second,
median of three runs; run it with PYTHONPATH pointing at another checkout's olares_pack to
compare two versions of the server on the same machine.

For each catalogue (the bundled one, and a synthetic one per APPS count, e.g. 200), the bench
starts `olares-pack serve` and an nginx (Debian package `nginx-light`) with a config it writes:
one process each, nginx answering the same paths from files holding the bytes serve answers
(the details POST too, through nginx's `error_page 405 =200` trick). Load comes from `wrk`
(Debian package) with 2 threads and CONNECTIONS connections for SECONDS per route, N times
(default 3), serve and nginx alternately, so that each ratio is taken between neighbours: the
medians of the requests per second, of the p99 latency and of each server's CPU time per request
are printed for both, and the median of the runs' ratios. Everything is on loopback; on this
2-core machine the load generator shares the cores with the server it measures.

`--pin` gives the load generator a core of its own, as a market source's devices are other
machines: `wrk -t1` on CPU 0, each server (nginx's worker, serve, the floor) on the other CPUs.
Shared, the two servers' ratio is held down by what wrk and the kernel's loopback cost on the
same cores (docs/developer/performance.md, "the hash route at the event loop's floor").

`--floor` adds a third server to each run: the least any server on this event loop can do (a
uvloop protocol that writes the route's bytes for every read, with no parsing, no routing and no
Date), so that what serve costs above the loop and the kernel is seen beside it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import Request, urlopen

from procstat import cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "measurements"))
VERSION = "1.12.6"
# --pin: the load generator on CPU 0 (one wrk thread), the server measured on the others, as a
# market source's clients are on other machines than its server
PIN = False
CLIENT_CPUS = {0}
SERVER_CPUS = set(range(1, os.cpu_count() or 2))
V2_VERSION = "1.12.7"
RUNS = 3
FLOOR = """
import asyncio, sys, uvloop
WIRE = open(sys.argv[2], "rb").read()
class P(asyncio.Protocol):
    def connection_made(self, t): self.t = t
    def data_received(self, d): self.t.write(WIRE)
async def main():
    s = await asyncio.get_running_loop().create_server(P, "127.0.0.1", int(sys.argv[1]), backlog=1024)
    await s.serve_forever()
uvloop.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, body: bytes | None = None) -> bytes:
    with urlopen(Request(url, data=body, headers={"Content-Type": "application/json"} if body else {}), timeout=10) as r:
        return r.read()


def wait_up(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fetch(url)
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def start_nginx(folder: Path, port: int, routes: dict[str, str]) -> subprocess.Popen[bytes]:
    """nginx with one worker, its temp and pid files in the bench folder, answering each route's
    path (query ignored) from a file."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        raise SystemExit("nginx is not installed: apt-get install nginx-light wrk")
    locations = "".join(f"location = {path} {{ default_type application/json; alias {folder / file}; "
                        f"error_page 405 =200 $uri; }}\n" for path, file in routes.items())
    temp = folder / "tmp"
    temp.mkdir()
    conf = folder / "nginx.conf"
    conf.write_text(
        f"daemon off; worker_processes 1; pid {folder}/nginx.pid; error_log {folder}/error.log;\n"
        + ("user root;\n" if os.geteuid() == 0 else "")  # the worker reads files under a 0700 temp folder
        + "events { worker_connections 4096; }\n"
        f"http {{ access_log off; client_body_temp_path {temp}; proxy_temp_path {temp}; fastcgi_temp_path {temp};\n"
        f"uwsgi_temp_path {temp}; scgi_temp_path {temp};\n"
        f"server {{ listen 127.0.0.1:{port}; {locations} }} }}\n")
    return subprocess.Popen([nginx, "-c", str(conf), "-p", str(folder)], stderr=subprocess.DEVNULL)


def wrk(url: str, seconds: int, connections: int, script: Path | None, pids: list[int]) -> tuple[float, float, float]:
    """Requests per second, p99 in ms, and the server's CPU microseconds per request."""
    cmd = ["wrk", "-t1" if PIN else "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if script:
        cmd[1:1] = ["-s", str(script)]
    for pid in pids if PIN else []:
        os.sched_setaffinity(pid, SERVER_CPUS)
    before = cpu_seconds(*pids)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         preexec_fn=(lambda: os.sched_setaffinity(0, CLIENT_CPUS)) if PIN else None).stdout
    used = cpu_seconds(*pids) - before
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    if "Non-2xx" in out:
        raise SystemExit(f"{url}: non-2xx answers\n{out}")
    return rps, p99, used / (rps * seconds) * 1e6


def workers_of(nginx: subprocess.Popen[bytes]) -> list[int]:
    """The nginx master's worker process (the one that answers)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kids = [int(p) for p in Path(f"/proc/{nginx.pid}/task/{nginx.pid}/children").read_text().split()]
        if kids:
            return kids
        time.sleep(0.05)
    raise SystemExit("nginx started no worker")


def bench(root: Path, label: str, seconds: int, connections: int, tmp: Path, floor: bool) -> dict[str, dict[str, float]]:
    port, nport = free_port(), free_port()
    server = subprocess.Popen([sys.executable, "-m", "olares_pack.cli", "serve", "--port", str(port), "--root", str(root)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    folder = tmp / label
    folder.mkdir()
    folder.chmod(0o755)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_up(f"{base}/health")
        info = json.loads(fetch(f"{base}/api/v1/appstore/info?version={VERSION}"))
        ids = sorted(info["data"]["apps"])[:10]  # a device asks for at most 10 per call
        body = json.dumps({"app_ids": ids, "version": VERSION}).encode()
        paths = {"hash": "/api/v1/appstore/hash", "info": "/api/v1/appstore/info", "details": "/api/v1/applications/info",
                 "v2cat": "/api/v2/catalog", "v2apps": "/api/v2/applications"}
        # v1 routes as a 1.12.6 device asks them, v2 routes as a 1.12.7 device does
        query = {"hash": f"?version={VERSION}", "info": f"?version={VERSION}", "details": "",
                 "v2cat": f"?version={V2_VERSION}", "v2apps": f"?version={V2_VERSION}"}
        for route, path in paths.items():
            (folder / f"{route}.json").write_bytes(fetch(f"{base}{path}{query[route]}", body if route == "details" else None))
        script = folder / "post.lua"
        script.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(body.decode())}\n'
                          'wrk.headers["Content-Type"] = "application/json"\n')
        nginx = start_nginx(folder, nport, {p: f"{k}.json" for k, p in paths.items()})
        nbase = f"http://127.0.0.1:{nport}"
        floors: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        try:
            wait_up(f"{nbase}{paths['hash']}")
            assert fetch(f"{nbase}{paths['info']}") == (folder / "info.json").read_bytes()
            nginx_pids = workers_of(nginx)
            out: dict[str, dict[str, float]] = {}
            for route in paths:
                q = query[route]
                s = script if route == "details" else None
                if floor:  # the route's whole answer, as serve wrote it, written back for every read
                    wire = folder / f"{route}.wire"
                    wire.write_bytes(raw_answer(port, paths[route] + q, body if route == "details" else None))
                    fport = free_port()
                    proc = subprocess.Popen([sys.executable, "-c", FLOOR, str(fport), str(wire)])
                    floors[route] = (proc, fport)
                    wait_up(f"http://127.0.0.1:{fport}/")
                wrk(f"{base}{paths[route]}{q}", 1, connections, s, [server.pid])  # warm up
                runs: dict[str, list[tuple[float, float, float]]] = {"serve": [], "nginx": [], "floor": []}
                for _ in range(RUNS):  # alternately, so that each ratio is taken between neighbours
                    runs["serve"].append(wrk(f"{base}{paths[route]}{q}", seconds, connections, s, [server.pid]))
                    runs["nginx"].append(wrk(f"{nbase}{paths[route]}{q}", seconds, connections, s, nginx_pids))
                    if floor:
                        fproc, fport = floors[route]
                        runs["floor"].append(wrk(f"http://127.0.0.1:{fport}{paths[route]}{q}", seconds, connections, s,
                                                 [fproc.pid]))
                out[route] = {f"{who}_{what}": statistics.median(r[i] for r in rs)
                              for who, rs in runs.items() if rs for i, what in enumerate(("rps", "p99", "us"))}
                out[route]["ratio"] = statistics.median(a[0] / b[0] for a, b in zip(runs["serve"], runs["nginx"], strict=True))
                if floor:
                    out[route]["floor_ratio"] = statistics.median(a[0] / b[0] for a, b in zip(runs["floor"], runs["nginx"], strict=True))
                    floors.pop(route)[0].terminate()
            return out
        finally:
            for proc, _ in floors.values():
                proc.terminate()
            nginx.terminate()
            nginx.wait(5)
    finally:
        server.terminate()
        server.wait(5)


def raw_answer(port: int, target: str, body: bytes | None) -> bytes:
    """The bytes of one whole answer, as they came off the wire."""
    method = b"POST" if body is not None else b"GET"
    req = b"%s %s HTTP/1.1\r\nHost: x\r\n" % (method, target.encode())
    req += (b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)) if body else b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(req)
        buf = bytearray()
        while not answers(buf.copy()):
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise SystemExit("the server closed the connection")
            buf += chunk
    return bytes(buf)


def start_serve(root: Path = ROOT) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    # not run from the checkout, so that PYTHONPATH decides which olares_pack serves
    proc = subprocess.Popen([sys.executable, "-m", "olares_pack.cli", "serve", "--port", str(port), "--root", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    wait_up(f"http://127.0.0.1:{port}/health")
    return proc, port


def answers(buf: bytearray) -> int:
    """Complete responses at the front of buf, removed from it."""
    n = 0
    while True:
        head_end = buf.find(b"\r\n\r\n")
        if head_end < 0:
            return n
        m = re.search(rb"\r\nContent-Length: (\d+)", bytes(buf[:head_end]))
        end = head_end + 4 + (int(m.group(1)) if m else 0)
        if len(buf) < end:
            return n
        if not buf.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"not a 200: {bytes(buf[:200])!r}")
        del buf[:end]
        n += 1


def pipeline(port: int, requests: list[bytes], depth: int = 64) -> float:
    """Send every request on one connection, `depth` in flight; seconds taken."""
    t = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        buf = bytearray()
        for n in range(0, len(requests), depth):
            chunk = requests[n:n + depth]
            sock.sendall(b"".join(chunk))
            got = 0
            while got < len(chunk):
                data = sock.recv(1 << 20)
                if not data:
                    raise SystemExit("the server closed the connection")
                buf += data
                got += answers(buf)
    return time.perf_counter() - t


def proc_memory(pid: int) -> tuple[float, float]:
    """RSS and peak RSS in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def rss_main(n: int) -> None:
    proc, port = start_serve()
    try:
        base = f"http://127.0.0.1:{port}"
        try:
            fetch(f"{base}/api/v2/catalog")
            v2 = True
        except OSError:  # a version of the server before the v2 routes
            v2 = False
        for v in ("1.12.5", "1.12.6", "1.12.7"):  # a device's sync, so that the steady state is cached
            for path in ("/api/v1/appstore/hash", "/api/v1/appstore/info") + (("/api/v2/catalog", "/api/v2/applications")
                                                                               if v2 else ()):
                fetch(f"{base}{path}?version={v}")
        ids = sorted(json.loads(fetch(f"{base}/api/v1/appstore/info?version={VERSION}"))["data"]["apps"])
        fetch(f"{base}/api/v1/applications/info", json.dumps({"app_ids": ids, "version": VERSION}).encode())
        before = proc_memory(proc.pid)
        pad = b"x" * 4096
        paths = [b"/api/v1/appstore/info", b"/api/v1/appstore/hash"] + ([b"/api/v2/applications"] if v2 else [])
        gets = [b"GET %s?version=1.12.6&pad=%d%s HTTP/1.1\r\nHost: x\r\n\r\n" % (paths[i % len(paths)], i, pad)
                for i in range(n)]
        posts = []
        for i in range(n):
            body = json.dumps({"app_ids": ids, "version": VERSION, "pad": f"{i}{pad.decode()}"}).encode()
            posts.append(b"POST /api/v1/applications/info HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(body), body))
        took = pipeline(port, gets + posts)
        after = proc_memory(proc.pid)
        print(f"{n:,} padded GETs + {n:,} padded POSTs, all 200, in {took:.1f} s; serve RSS {before[0]:.1f} MiB before, "
              f"{after[0]:.1f} MiB after, peak {after[1]:.1f} MiB")
    finally:
        proc.terminate()
        proc.wait(5)


def pipelined_main(seconds: float) -> None:
    proc, port = start_serve()
    try:
        base = f"http://127.0.0.1:{port}"
        ids = sorted(json.loads(fetch(f"{base}/api/v1/appstore/info?version={VERSION}"))["data"]["apps"])
        body = json.dumps({"app_ids": ids, "version": VERSION}).encode()
        routes = {
            "hash": f"GET /api/v1/appstore/hash?version={VERSION}",
            "info": f"GET /api/v1/appstore/info?version={VERSION}",
            "details": "POST /api/v1/applications/info",
            "v2 catalog": "GET /api/v2/catalog?version=1.12.7",
            "v2 apps": "GET /api/v2/applications?version=1.12.7",
        }
        print(f"one client, 64 requests in flight on one connection, {seconds:g} s per run, median of {RUNS}")
        for label, line in routes.items():
            method, path = line.split(" ", 1)
            req = (f"{method} {path} HTTP/1.1\r\nHost: x\r\n".encode()
                   + (b"Content-Length: %d\r\n\r\n%s" % (len(body), body) if method == "POST" else b"\r\n"))
            if fetch(f"{base}/health") and method == "GET":
                try:
                    fetch(base + path)
                except OSError:
                    print(f"{label:<12}not answered by this version")
                    continue
            rates = []
            for _ in range(RUNS):
                done, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < seconds:
                    pipeline(port, [req] * 6400)
                    done += 6400
                rates.append(done / (time.perf_counter() - t0))
            print(f"{label:<12}{statistics.median(rates):>10,.0f} req/s  (runs: {', '.join(f'{r:,.0f}' for r in rates)})")
    finally:
        proc.terminate()
        proc.wait(5)


def main() -> None:
    if sys.argv[1:2] == ["--rss"]:
        rss_main(int(sys.argv[2]) if len(sys.argv) > 2 else 5000)
        return
    if sys.argv[1:2] == ["--pipelined"]:
        pipelined_main(float(sys.argv[2]) if len(sys.argv) > 2 else 3)
        return
    global RUNS, PIN
    args = sys.argv[1:]
    floor = "--floor" in args
    PIN = "--pin" in args
    args = [a for a in args if a not in ("--floor", "--pin")]
    if "--runs" in args:
        at = args.index("--runs")
        RUNS = int(args[at + 1])
        del args[at:at + 2]
    seconds = int(args[0]) if args else 3
    connections = int(args[1]) if len(args) > 1 else 64
    sizes = [int(a) for a in args[2:]]
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install nginx-light wrk")
    tmp = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    tmp.chmod(0o755)
    where = (f"wrk on CPU {sorted(CLIENT_CPUS)}, servers on CPU {sorted(SERVER_CPUS)}" if PIN
             else f"{os.cpu_count()} CPUs shared with the load generator")
    print(f"wrk -t{1 if PIN else 2} -c{connections}, {seconds} s per run, {RUNS} runs alternately, medians; one process each; "
          f"{where}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'catalogue':<10}{'route':<9}{'serve req/s':>12}{'nginx req/s':>12}{'ratio':>7}{'serve us':>9}{'nginx us':>9}"
          f"{'serve p99':>11}{'nginx p99':>11}" + (f"{'floor req/s':>12}{'ratio':>7}{'floor us':>9}" if floor else ""))
    try:
        catalogues = [("bundled", ROOT)]
        for n in sizes:
            from catalogue import copy_of

            catalogues.append((f"{n} apps", copy_of(n, 2, tmp / f"cat{n}")))
        for label, root in catalogues:
            for route, r in bench(root, label.replace(" ", "-"), seconds, connections, tmp, floor).items():
                print(f"{label:<10}{route:<9}{r['serve_rps']:>12,.0f}{r['nginx_rps']:>12,.0f}{r['ratio']:>7.2f}"
                      f"{r['serve_us']:>9.2f}{r['nginx_us']:>9.2f}{r['serve_p99']:>9.2f}ms{r['nginx_p99']:>9.2f}ms"
                      + (f"{r['floor_rps']:>12,.0f}{r['floor_ratio']:>7.2f}{r['floor_us']:>9.2f}" if floor else ""),
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
