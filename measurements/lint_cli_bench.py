"""`olares-pack lint --olares VERSION FOLDER` as a user runs it, beside a raw Helm render of the
same charts, both as fresh processes, in one run.

    .venv/bin/python measurements/lint_cli_bench.py [FOLDER] [--third-party ORALES AIMIGHTY] [--v3-of APPS]
                                                     [--olares 1.12.6] [--runs 5] [--python PY] [--no-bytecode]

The charts: FOLDER, and/or charts a maintainer did not write, gathered into a temporary folder:
--third-party takes checkouts of aamsellem/orales-one-market (its app folders at the top level) and
bayerhazard/aimighty-market (the base64 .tgz charts its worker serves, in functions/_lib.ts): 48
charts; --v3-of takes a beclab/apps checkout and keeps its apiVersion v3 charts (199 at 83b36160).

The raw render is what any tool must do at least: start, import the Helm engine, read each chart,
render it once with the installer's values and parse each document it renders with PyYAML's
libyaml safe loader (not olares-pack's own parser: the baseline does not move with lint's code).
Lint and the raw render take turns --runs times (the machine's load moves; each run's ratio is of
neighbouring timings); printed: the median times and the median of the runs' lint/raw ratios, in
wall-clock time and in the CPU time each process used (less moved by other work on a shared
machine). Both run with their bytecode cached, as an installed package has it (pip compiles it;
a checkout writes it on its first run): a PYTHONDONTWRITEBYTECODE=1 in the environment is left
out. --no-bytecode measures the other case (each process compiles olares-pack's modules from
source, as in an environment that never writes bytecode): lint imports more of olares-pack than
the raw render, so its ratio is higher there. --python names another checkout's interpreter (its
venv), to measure two versions on the same machine in one sitting.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAW = """
import sys, tempfile
from pathlib import Path
import yaml
from olares_pack.charts import helm
from olares_pack.charts.source import resolve
from olares_pack.common import fsio
from olares_pack.lint import LintOptions
from olares_pack.lint.context import build_context
SEPARATOR = __import__("re").compile(r"(?:^|\\n)---\\s*")  # Helm's own document separator
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
            for path in sorted(out):
                if path.endswith((".yaml", ".yml", ".json")):
                    for part in SEPARATOR.split(out[path].strip()):
                        if part.strip() and yaml.load(part, Loader=yaml.CSafeLoader):
                            count += 1
        except Exception:
            pass
print(count)
"""


def third_party(orales: Path, aimighty: Path, into: Path) -> int:
    """The app folders of orales-one-market and the charts aimighty-market's worker serves."""
    n = 0
    for folder in sorted(orales.iterdir()):
        if folder.is_dir() and (folder / "Chart.yaml").is_file():
            shutil.copytree(folder, into / folder.name)
            n += 1
    text = (aimighty / "functions" / "_lib.ts").read_text()
    for name, data in re.findall(r'"([^"/]+\.tgz)":\s*"([A-Za-z0-9+/=]+)"', text):
        (into / name).write_bytes(base64.b64decode(data))
        n += 1
    return n


def official_v3(apps: Path, into: Path) -> int:
    """The apiVersion v3 charts of a beclab/apps checkout."""
    n = 0
    for manifest in sorted(apps.glob("*/OlaresManifest.yaml")):
        if re.search(r"^apiVersion:\s*['\"]?v3['\"]?\s*$", manifest.read_text(errors="replace"), re.M):
            shutil.copytree(manifest.parent, into / manifest.parent.name)
            n += 1
    return n


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall seconds, and the CPU seconds (user and system) the process used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed:\n{done.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--third-party", nargs=2, type=Path, metavar=("ORALES", "AIMIGHTY"))
    ap.add_argument("--v3-of", type=Path, metavar="APPS")
    ap.add_argument("--olares", default="1.12.6")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--no-bytecode", action="store_true")
    args = ap.parse_args()
    if not (args.folder or args.third_party or args.v3_of):
        ap.error("name a FOLDER, --third-party or --v3-of")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="lint-bench-") as tmp:
        if args.no_bytecode:
            # olares-pack's modules from a copy without their bytecode, which is never written;
            # the libraries keep theirs (pip compiled them), as in an environment with
            # PYTHONDONTWRITEBYTECODE=1 around an editable install
            where = subprocess.run([args.python, "-c", "import olares_pack, os; print(os.path.dirname(olares_pack.__file__))"],
                                   capture_output=True, text=True, check=True, cwd=tmp).stdout.strip()
            shutil.copytree(where, Path(tmp) / "src" / "olares_pack", ignore=shutil.ignore_patterns("__pycache__"))
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["PYTHONPATH"] = str(Path(tmp) / "src")
        folder = args.folder
        if args.third_party or args.v3_of:
            folder = Path(tmp) / "charts"
            shutil.copytree(args.folder, folder) if args.folder else folder.mkdir()
            n = (third_party(*args.third_party, folder) if args.third_party else 0) + \
                (official_v3(args.v3_of, folder) if args.v3_of else 0)
            print(f"{n} charts gathered into {folder}", file=sys.stderr)
        lint = [args.python, "-c", "from olares_pack.cli import main; main()", "lint", "--olares", args.olares, str(folder)]
        raw = [args.python, "-c", RAW, str(folder)]
        timed(raw, env, tmp), timed(lint, env, tmp)  # warm the page cache and write the bytecode
        runs = [(timed(raw, env, tmp), timed(lint, env, tmp)) for _ in range(args.runs)]
    pairs = [(a[0], b[0]) for a, b in runs]
    cpus = [(a[1], b[1]) for a, b in runs]
    r, x = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    ratio = statistics.median(b / a for a, b in pairs)
    cpu = statistics.median(b / a for a, b in cpus)
    what = args.folder or " + ".join(([f"third-party ({args.third_party[0].name}, {args.third_party[1].name})"]
                                      if args.third_party else []) + ([f"v3 of {args.v3_of}"] if args.v3_of else []))
    print(f"{what} (--olares {args.olares}{', no bytecode' if args.no_bytecode else ''}), {args.runs} runs: "
          f"raw render {r:.2f} s, lint {x:.2f} s: lint/raw = {ratio:.2f} wall (runs: "
          f"{', '.join(f'{b / a:.2f}' for a, b in pairs)}), {cpu:.2f} CPU time (runs: "
          f"{', '.join(f'{b / a:.2f}' for a, b in cpus)}); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
