"""How every command's cost grows with the catalogue: medians of several runs, and ratios.

    .venv/bin/python measurements/scale_bench.py [--sizes 1,2,50,200] [--versions 10] [--runs 5] [--only release,build]

Each figure is a whole command as a user runs it (a new process, imports included), on a copy
of a synthetic catalogue (measurements/catalogue.py) of N apps x V published versions:

  help           olares-pack --help
  build          build of a catalogue whose build/charts is up to date, after touching one app.yaml
  build-fresh    build into an empty build/charts
  check          build --check
  release        release one patch version of one app
  serve          serve's first start after `build` (a fresh copy of the catalogue, built, then
                 served): from spawn to the first answer of /hash, and its peak RSS
  serve-cold     serve's first start with nothing prepared (a fresh copy, not built: every
                 shown chart unpacked and parsed), for comparison
  lint           lint of one published chart (.tgz)

The ratio column divides by the figure of the 2-app catalogue (1-app for release, the goal of
the release-integrity issue).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import catalogue as gen  # noqa: E402

BIN = [sys.executable, "-c", "from olares_pack.cli import main; main()"]


def timed(args: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    proc = subprocess.run([*BIN, *args], cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed in {cwd}:\n{proc.stderr[-2000:]}")
    return elapsed


def touch_one(root: Path, run: int) -> None:
    app_yaml = sorted((root / "apps").glob("*/app.yaml"))[-1]
    text = app_yaml.read_text()
    app_yaml.write_text(text.replace("\ndescription: ", f"\ndescription: (edit {run}) ", 1))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_start(root: Path) -> tuple[float, float]:
    """Seconds from spawn to the first /hash answer, and the server's peak RSS in MiB."""
    port = free_port()
    t = time.perf_counter()
    proc = subprocess.Popen([*BIN, "serve", "--port", str(port), "--root", str(root)], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/api/v1/appstore/hash?version=1.12.6"
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    r.read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit(f"serve exited: {proc.stderr.read()[-2000:]}") from None  # type: ignore[union-attr]
                time.sleep(0.005)
        elapsed = time.perf_counter() - t
        status = Path(f"/proc/{proc.pid}/status").read_text()
        rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    finally:
        proc.terminate()
        proc.wait(10)
    return elapsed, rss


def measure(n: int, versions: int, runs: int, only: set[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="olares-scale-") as tmp:
        root = gen.copy_of(n, versions, Path(tmp) / "repo")
        pkg = next((root / "packages" / "current").iterdir())
        if "help" in only:
            out["help"] = [timed(["--help"], root) for _ in range(runs)]
        if "build-fresh" in only:
            out["build-fresh"] = []
            for _ in range(runs):
                shutil.rmtree(root / "build", ignore_errors=True)
                out["build-fresh"].append(timed(["build"], root))
        if "build" in only:
            timed(["build"], root)
            out["build"] = []
            for r in range(runs):
                touch_one(root, r)
                out["build"].append(timed(["build"], root))
        if "check" in only:
            timed(["build", "--check"], root)  # the verdict cache is warm after the first
            out["check"] = [timed(["build", "--check"], root) for _ in range(runs)]
        if "release" in only:
            out["release"] = [timed(["release", "benchapp0000", "--bump", "patch", "--summary", f"bench {r}",
                                     "--date", "2026-12-01"], root) for r in range(runs)]
        if "serve" in only:
            # Each run a first start as a user meets it: a fresh copy of the catalogue, `build`
            # (which prepares serve's listings), then serve; and the same without the build.
            pairs, cold = [], []
            for r in range(runs):
                fresh = gen.copy_of(n, versions, Path(tmp) / f"serve{r}")
                cold.append(serve_start(fresh)[0])
                shutil.rmtree(fresh)
                fresh = gen.copy_of(n, versions, Path(tmp) / f"serve{r}")
                timed(["build"], fresh)
                pairs.append(serve_start(fresh))
                shutil.rmtree(fresh)
            out["serve"] = [p[0] for p in pairs]
            out["serve-rss"] = [p[1] for p in pairs]
            out["serve-cold"] = cold
        if "lint" in only:
            out["lint"] = [timed(["lint", str(pkg)], root) for _ in range(runs)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,2,50,200")
    ap.add_argument("--versions", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="help,build,build-fresh,check,release,serve,lint")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    only = set(args.only.split(","))
    results = {}
    for n in sizes:
        t = time.perf_counter()
        gen.cached(n, args.versions)
        print(f"catalogue {n} x {args.versions} ready ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
        results[n] = measure(n, args.versions, args.runs, only)
    print(f"medians of {args.runs} runs, {args.versions} versions per app, {os.cpu_count()} cores")
    print(f"{'figure':<12}" + "".join(f"{n:>9} apps" for n in sizes) + "   ratio to " + ("1 (release) / 2 apps"))
    figures = [f for f in ("help", "build", "build-fresh", "check", "release", "serve", "serve-cold", "serve-rss",
                                 "lint")
               if any(f in results[n] for n in sizes)]
    for f in figures:
        meds = {n: statistics.median(results[n][f]) for n in sizes if f in results[n]}
        unit = " MiB" if f == "serve-rss" else " s"
        ref_n = 1 if f == "release" and 1 in meds else 2 if 2 in meds else sizes[0]
        row = "".join(f"{meds[n]:>10.3f}{unit:<4}" if n in meds else f"{'-':>14}" for n in sizes)
        ratios = " ".join(f"{meds[n] / meds[ref_n]:.2f}x" for n in sizes if n in meds)
        print(f"{f:<12}{row}   {ratios} (ref {ref_n})")


if __name__ == "__main__":
    main()
