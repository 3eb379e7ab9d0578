"""Where olares-pack keeps what it builds or learns once per machine: the control plane's programs,
the stand-in images, llama-server's answers to argument lists, compiled chart templates."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$OLARES_PACK_CACHE, default ~/.cache/olares-pack."""
    return Path(os.environ.get("OLARES_PACK_CACHE") or Path.home() / ".cache" / "olares-pack")
