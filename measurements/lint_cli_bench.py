"""`olares-pack lint --olares VERSION FOLDER` as a user runs it, beside a raw Helm render of the
same charts, both as fresh processes, in one run.

    .venv/bin/python measurements/lint_cli_bench.py FOLDER [--olares 1.12.6] [--runs 5] [--python PY]

The raw render is what any tool must do at least: start, import the Helm engine, read each chart,
render it once with the installer's values and parse what it renders (corpus_bench's raw_render,
in its own process). Lint and the raw render take turns --runs times (the machine's load moves;
each run's ratio is of neighbouring timings); printed: the median times and the median of the
runs' lint/raw ratios, in wall-clock time and in the CPU time each process used (less moved by
other work on a shared machine). --python names another checkout's interpreter (its venv), to measure two
versions on the same machine in one sitting.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RAW = """
import sys, tempfile
from pathlib import Path
from olares_pack.charts import helm
from olares_pack.charts.source import resolve
from olares_pack.common import fsio
from olares_pack.lint import LintOptions
from olares_pack.lint.context import build_context
count = 0
for source in resolve([Path(sys.argv[1])]):
    ctx = build_context(source, LintOptions())
    with tempfile.TemporaryDirectory(dir=fsio.scratch_dir()) as tmp:
        fsio.write_tree(source.files, Path(tmp) / source.folder)
        try:
            with helm.load(Path(tmp) / source.folder) as chart:
                name = ctx.name or source.folder
                out = chart.render(values=ctx.values("alice", "alice", ctx.modes[0]), name=name,
                                   namespace=f"{name}-alice")
                count += len(helm.objects(out))
        except Exception:
            pass
print(count)
"""


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds, and the CPU seconds (user and system) the process used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed:\n{done.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--olares", default="1.12.6")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    lint = [args.python, "-c", "from olares_pack.cli import main; main()", "lint", "--olares", args.olares,
            str(args.folder)]
    raw = [args.python, "-c", RAW, str(args.folder)]
    timed(raw), timed(lint)  # warm the page cache and the bytecode
    runs = [(timed(raw), timed(lint)) for _ in range(args.runs)]
    pairs = [(a[0], b[0]) for a, b in runs]
    cpus = [(a[1], b[1]) for a, b in runs]
    r, x = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    ratio = statistics.median(b / a for a, b in pairs)
    cpu = statistics.median(b / a for a, b in cpus)
    print(f"{args.folder} (--olares {args.olares}), {args.runs} runs: raw render {r:.2f} s, lint {x:.2f} s: "
          f"lint/raw = {ratio:.2f} wall (runs: {', '.join(f'{b / a:.2f}' for a, b in pairs)}), "
          f"{cpu:.2f} CPU time (runs: {', '.join(f'{b / a:.2f}' for a, b in cpus)})")


if __name__ == "__main__":
    main()
