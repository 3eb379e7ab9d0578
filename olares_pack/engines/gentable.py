"""The command line shared by the registry generators (argcpp, vllmargs): source folders in, one
JSON table out (to --out, else stdout)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run(argv: list[str], build_table: Callable[[list[Path]], dict[str, Any]], dumps: Callable[[dict[str, Any]], str]) -> int:
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    dirs = [Path(a) for a in argv if not a.startswith("--") and (out is None or Path(a) != out)]
    text = dumps(build_table(dirs))
    if out:
        out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0
