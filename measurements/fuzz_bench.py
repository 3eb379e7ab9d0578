"""The fuzz test's longer run: mutated manifests and random command lines, counted by outcome.

    .venv/bin/python measurements/fuzz_bench.py [MANIFESTS] [COMMAND_LINES]   (defaults 5000 and 1000)

Every manifest must load and render, or be refused with an InputError; every command line must
exit 0, 1 or 2. Anything else is printed and makes the run fail.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import command_lines, dump, manifests  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

from olares_pack import olares as targets  # noqa: E402
from olares_pack.apps.load import parse_app  # noqa: E402
from olares_pack.cli import main  # noqa: E402
from olares_pack.common.errors import InputError  # noqa: E402
from olares_pack.render import app as render  # noqa: E402

outcomes: Counter[str] = Counter()
failures: list[str] = []


def run_manifests(n: int) -> None:
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(manifests())
    def one(data: dict) -> None:
        try:
            app = parse_app(dump(data), Path("app.yaml"))
            for name in app.targets:
                render.render(app, targets.get(name))
            outcomes["manifest rendered"] += 1
        except InputError:
            outcomes["manifest refused (exit 2)"] += 1
        except Exception:  # noqa: BLE001 - what the run is looking for
            outcomes["manifest CRASH"] += 1
            failures.append(dump(data)[:2000] + "\n" + traceback.format_exc())

    one()


def run_commands(n: int, workdir: Path) -> None:
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(command_lines())
    def one(args: list[str]) -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(args)
        outcomes[f"command exit {code}"] += 1
        if code not in (0, 1, 2):
            failures.append(repr(args))

    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        one()
    finally:
        os.chdir(cwd)


if __name__ == "__main__":
    n_manifests = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    n_commands = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    t = time.perf_counter()
    run_manifests(n_manifests)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="olares-fuzz-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(ROOT / "apps", repo / "apps")
        shutil.copytree(ROOT / "packages", repo / "packages")
        shutil.copy(ROOT / "market-index.json", repo / "market-index.json")
        run_commands(n_commands, repo)
    t2 = time.perf_counter()
    print(f"{sum(v for k, v in outcomes.items() if k.startswith('manifest'))} manifests in {t1 - t:.0f} s, "
          f"{sum(v for k, v in outcomes.items() if k.startswith('command'))} command lines in {t2 - t1:.0f} s")
    for k, v in sorted(outcomes.items()):
        print(f"  {v:6d}  {k}")
    print(f"failures: {len(failures)}")
    for f in failures[:10]:
        print(f)
    sys.exit(1 if failures else 0)
