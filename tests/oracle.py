"""The official chart checker (oac) as a test oracle: oracle/bin/oac-oracle, built by `make oracle`.

`verdict(folder)` runs it on a chart folder; `verdict_files(name, files)` writes the files to a
folder named after the app first (oac checks the folder name against Chart.yaml and the
manifest). The `oracle` fixture skips a test with the build's own error when the binary could
not be built (the Go module proxy may refuse the oac module).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "oracle" / "bin" / "oac-oracle"
BUILD_ERROR = ROOT / "oracle" / "bin" / "build-error.txt"


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    errors: list[str]
    oac: str  # the oac module version that judged


def available() -> str | None:
    """None when the oracle can run, else why not (the build's error)."""
    if BINARY.is_file():
        return None
    if BUILD_ERROR.is_file():
        return "oac oracle not built: " + BUILD_ERROR.read_text(encoding="utf-8").strip()
    return "oac oracle not built: run `make oracle`"


def verdict(folder: Path, timeout: float = 120) -> Verdict:
    out = subprocess.run([str(BINARY), str(folder)], capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"oac-oracle {folder}: exit {out.returncode}: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    return Verdict(bool(doc["accepted"]), list(doc["errors"]), str(doc["oac"]))


def verdict_files(name: str, files: dict[str, str], binary: dict[str, bytes] | None = None) -> Verdict:
    with tempfile.TemporaryDirectory(prefix="oac-oracle-") as tmp:
        folder = Path(tmp) / name
        for rel, text in sorted(files.items()):
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text, encoding="utf-8")
        for rel, data in sorted((binary or {}).items()):
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        return verdict(folder)


@pytest.fixture
def oracle() -> object:
    """The oracle module itself (verdict, verdict_files), or a skip saying why it cannot run."""
    why = available()
    if why:
        pytest.skip(why)
    import oracle as module  # this file, imported the way the tests import their helpers

    return module
