"""The maintainer's loop, timed as a user meets it: outdated → propose → lint → compare → check,
each a fresh `olares-pack` process, on the bundled app as 1.0.8 published it, against a registry
on loopback (docker-registry, upstream llama.cpp's build tags and the fork's) and the faithful local
Hugging Face server of the tests (the model renamed upstream, a quant added).

    .venv/bin/python measurements/loop_bench.py [--runs 5] [--rehearse]

prints each step's exit code and the median of its wall time over the runs (each run on a fresh
copy of the catalogue, committed in git so that `check --changed-since` sees the draft), and the
whole loop's. `--rehearse` lets `check` rehearse the draft's install and upgrades on the local
control plane (built by `make control-plane`); without it `check --skip-rehearsal` says why.
tests/test_loop.py runs one loop in `make test` and asserts what each step must answer.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = "llamacppqwen36mtpone"


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    code: int
    seconds: float
    stdout: str
    stderr: str


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=loop", "-c", "user.email=loop@example.org", *args],
                   check=True, capture_output=True)


def run_loop(root: Path, upstream_image: str, env: dict[str, str], *, rehearse: bool = False) -> list[Step]:
    """One pass of the loop over the catalogue in `root` (a git repository whose HEAD is the base)."""
    steps: list[Step] = []
    apps = str(root / "apps")

    def step(name: str, *args: str) -> Step:
        argv = (sys.executable, "-m", "olares_pack.cli", *args)
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=600)
        s = Step(name, tuple(args), done.returncode, time.perf_counter() - t0, done.stdout, done.stderr)
        steps.append(s)
        return s

    step("outdated", "outdated", APP, "--apps-dir", apps, "--upstream-image", upstream_image, "--format", "json")
    step("propose", "propose", APP, "--apps-dir", apps, "--upstream-image", upstream_image, "--date", "2026-05-22")
    _git(root, "checkout", "-q", "-b", "draft")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "draft")
    step("lint", "lint", str(root / "apps" / APP / "app.yaml"))
    # the experiment step: the best configurations of the app's two recorded experiments, by
    # Welch's test on their per-run figures (the published versions at 1.0.8 hold one figure each)
    step("compare", "compare", APP, "n-max-pdl-h200", "p-min-h200", "--apps-dir", apps, "--format", "json")
    rehearsal = () if rehearse else ("--skip-rehearsal", "loop measurement without the control plane")
    step("check", "check", "--changed-since", "main", "--apps-dir", apps, "--format", "json", *rehearsal)
    return steps


@contextmanager
def loopback() -> Iterator[tuple[str, str, str]]:
    """The registry and the hub of the tests: (upstream image, fork image, HF endpoint)."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
    import tempfile

    from fakehub import serve
    from registry import Layout, run_registry
    from test_outdated import UPSTREAM_BUILDS, hub_history
    from test_vram import write_hybrid

    with tempfile.TemporaryDirectory(prefix="loop-bench-") as tmp:
        lay = Layout(Path(tmp) / "layout")
        lay.multiarch("0.1.0", created="2026-05-01T10:00:00Z", text="fork")
        tags = [f"server-cuda-{b}" for b in UPSTREAM_BUILDS]
        for t in tags:
            lay.multiarch(t, text=t)
        with run_registry(Path(tmp) / "reg") as reg, serve() as (fake, url):
            reg.push(lay.root, "0.1.0", "aamsellem/llamacpp-mtp")
            for t in tags:
                reg.push(lay.root, t, "ggml-org/llama.cpp")
            gguf = Path(tmp) / "m.gguf"
            write_hybrid(gguf)
            hub_history(fake, gguf.read_bytes())
            yield f"{reg.host}/ggml-org/llama.cpp", f"{reg.host}/aamsellem/llamacpp-mtp", url


def loop_env(hf_endpoint: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "REGISTRY_AUTH_FILE", "DOCKER_AUTH_CONFIG")}
    env.update(HF_ENDPOINT=hf_endpoint, HF_HUB_DISABLE_IMPLICIT_TOKEN="1", DOCKER_CONFIG=str(home / "no-docker-config"),
               NO_COLOR="1", COLUMNS="200")
    return env


def fresh_catalogue(root: Path, fork: str) -> Path:
    """The bundled catalogue at 1.0.8, committed on `main`."""
    sys.path[:0] = [str(ROOT / "tests")]
    from test_outdated import catalogue_at_1_0_8

    if root.exists():
        shutil.rmtree(root)
    catalogue_at_1_0_8(root, fork)
    # the packages of later versions go; build derives market-index.json and market-offer.json again
    for p in (root / "packages").rglob(f"{APP}-*.tgz"):
        version = re.match(r"(\d+)\.(\d+)\.(\d+)", p.name.removeprefix(f"{APP}-"))
        if version and tuple(map(int, version.groups())) > (1, 0, 8):
            p.unlink()
    (root / "market-index.json").unlink()
    subprocess.run([sys.executable, "-m", "olares_pack.cli", "build", "--apps-dir", str(root / "apps"),
                    "--out", str(root / "build" / "charts")], cwd=root, check=True, capture_output=True)
    (root / ".gitignore").write_text("/build/\n.olares-pack/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the catalogue at 1.0.8")
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--verbose", action="store_true", help="print the messages of a step that exits 1 too")
    ap.add_argument("--rehearse", action="store_true", help="check rehearses the draft on the local control plane")
    opts = ap.parse_args()
    import tempfile

    times: dict[str, list[float]] = {}
    codes: dict[str, set[int]] = {}
    with loopback() as (upstream, fork, hf), tempfile.TemporaryDirectory(prefix="loop-") as tmp:
        for i in range(opts.runs):
            root = fresh_catalogue(Path(tmp) / f"run{i}", fork)
            steps = run_loop(root, upstream, loop_env(hf, Path(tmp)), rehearse=opts.rehearse)
            for s in steps:
                times.setdefault(s.name, []).append(s.seconds)
                codes.setdefault(s.name, set()).add(s.code)
            times.setdefault("loop", []).append(sum(s.seconds for s in steps))
            for s in steps:
                if s.code > 1 or (s.code and opts.verbose):
                    print(f"{s.name} exit {s.code}:\n{s.stderr[-2000:]}", file=sys.stderr)
            print(f"run {i + 1}/{opts.runs}: " + ", ".join(f"{s.name} {s.seconds:.2f} s (exit {s.code})" for s in steps),
                  file=sys.stderr)
    print(f"{'step':<10} {'exit':>6} {'median s':>9} {'min s':>7} {'max s':>7}   ({opts.runs} runs)")
    for name, ts in times.items():
        code = ",".join(str(c) for c in sorted(codes.get(name, set()))) or "-"
        print(f"{name:<10} {code:>6} {statistics.median(ts):>9.2f} {min(ts):>7.2f} {max(ts):>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
