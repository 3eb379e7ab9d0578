"""Lint a folder of N charts and print charts per second (median of several runs).

    .venv/bin/python bench/lint_bench.py [N] [RUNS]

The charts are the bundled example apps rendered for both targets under N distinct names, so
every chart goes through the full pipeline (manifest rules, Helm lint, 4-5 Helm renders,
Kubernetes schemas, engine rules).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from olares_pack import fsio, render, targets
from olares_pack.lint import lint_sources
from olares_pack.lint.source import resolve
from olares_pack.manifest import discover, parse_app

ROOT = Path(__file__).resolve().parent.parent


def make_charts(root: Path, n: int) -> None:
    texts = [(p.name, (p / "app.yaml").read_text()) for p in discover(ROOT / "apps")]
    for i in range(n):
        name, text = texts[i % len(texts)]
        new = f"{name[:24]}{i:05d}"[:30]
        app = parse_app(text.replace(f"name: {name}", f"name: {new}", 1))
        target = targets.get(app.targets[i // len(texts) % len(app.targets)])
        fsio.write_tree(render.render(app, target), root / new)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        make_charts(Path(tmp), n)
        rates = []
        for _ in range(runs):
            t0 = time.perf_counter()
            sources = resolve([Path(tmp)])
            findings = lint_sources(sources)
            dt = time.perf_counter() - t0
            rates.append(len(sources) / dt)
            errors = sum(f.severity == "error" for f in findings)
        print(f"lint: {len(sources)} charts, {errors} errors; charts/s per run: "
              f"{', '.join(f'{r:.1f}' for r in rates)}; median {statistics.median(rates):.1f} charts/s")


if __name__ == "__main__":
    main()
