"""Lint a corpus of charts beside a raw render of the same charts, in one run (issue #14's target:
lint within 2x the raw render).

    .venv/bin/python measurements/lint_bench.py [N] [RUNS] [JOBS]

The corpus: the bundled example apps rendered for both targets under N distinct names, plus the
hand-written charts under tests/data/charts/ (multi-container pods, sh -c wrappers, forks). The
raw render is what any tool must do at least: read each chart, render it once with the installer's
values through the same Helm engine, and parse what it renders. Lint does what the installer does
(owner == admin and != admin, each compute mode, stop's zero-replica render) plus its own rules.
Prints the median of RUNS for each and their ratio; with JOBS > 1 also `lint -j JOBS`.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from olares_pack import olares as targets
from olares_pack.apps.load import parse_app
from olares_pack.apps.manifest import discover
from olares_pack.charts import helm
from olares_pack.charts.source import resolve
from olares_pack.common import fsio
from olares_pack.lint import LintOptions, lint_charts
from olares_pack.lint.context import build_context
from olares_pack.render import app as render

ROOT = Path(__file__).resolve().parent.parent
HAND_WRITTEN = ROOT / "tests" / "data" / "charts"


def make_charts(root: Path, n: int) -> None:
    texts = [(p.name, (p / "app.yaml").read_text()) for p in discover(ROOT / "apps")]
    for i in range(n):
        name, text = texts[i % len(texts)]
        new = f"{name[:24]}{i:05d}"[:30]
        app = parse_app(text.replace(f"name: {name}", f"name: {new}", 1))
        target = targets.get(app.targets[i // len(texts) % len(app.targets)])
        fsio.write_tree(render.render(app, target), root / new)
    if HAND_WRITTEN.is_dir():
        for chart in sorted(HAND_WRITTEN.iterdir()):
            if (chart / "Chart.yaml").exists():
                shutil.copytree(chart, root / chart.name)


def raw_render(root: Path) -> int:
    """Each chart read from disk, rendered once, its documents parsed."""
    count = 0
    for source in resolve([root]):
        ctx = build_context(source, LintOptions())
        with tempfile.TemporaryDirectory(dir=fsio.scratch_dir()) as tmp:  # where lint puts them too
            fsio.write_tree(source.files, Path(tmp) / source.folder)
            with helm.load(Path(tmp) / source.folder) as chart:
                name = ctx.name or source.folder
                out = chart.render(values=ctx.values("alice", "alice", ctx.modes[0]), name=name, namespace=f"{name}-alice")
                count += len(helm.objects(out))
    return count


def lint(root: Path, jobs: int) -> int:
    return sum(f.severity == "error" for r in lint_charts(resolve([root]), LintOptions(), jobs) for f in r.findings)


def timed(fn, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_charts(root, n)
        charts = len(resolve([root]))
        raw_render(root)  # warm: the Helm engine and the schemas load once per process
        lint(root, 1)
        raw = statistics.median(timed(lambda: raw_render(root), runs))
        serial = statistics.median(timed(lambda: lint(root, 1), runs))
        print(f"{charts} charts, median of {runs}: raw render {raw:.2f} s ({charts / raw:.0f} charts/s), "
              f"lint {serial:.2f} s ({charts / serial:.0f} charts/s): lint/raw = {serial / raw:.2f}")
        if jobs > 1:
            par = statistics.median(timed(lambda: lint(root, jobs), runs))
            print(f"lint -j {jobs}: {par:.2f} s ({charts / par:.0f} charts/s): {serial / par:.2f}x lint -j 1")


if __name__ == "__main__":
    main()
