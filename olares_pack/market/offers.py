"""The market's offer decisions (market-offer.json, written by `build`: catalogue/offer.py), as the
server reads them: plain JSON, no lint, no Helm. A chart whose entry is missing, or names other
bytes, is offered where its olares dependency admits (a catalogue built before offers were
recorded); `build --check` says when the file is stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from olares_pack.common.errors import InputError
from olares_pack.olares import constraint_terms


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Package file (as the ledger names it) -> its offer entry; {} without the file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); olares-pack build writes it again") from None
    charts = doc.get("charts") if isinstance(doc, dict) else None
    if not isinstance(charts, dict):
        raise InputError(f"{path}: no \"charts\" object; olares-pack build writes it again")
    return {k: v for k, v in charts.items() if isinstance(v, dict)}


def window(dependency: str, offer: str | None) -> str:
    """The OS versions both the chart's dependency and the market's offer admit, as one
    constraint (alternatives distributed: (a || b), (c) is a,c || b,c)."""
    if not offer:
        return dependency
    constraint_terms(offer)  # a malformed offer is an error here, not on a request
    return " || ".join(f"{a.strip()}, {b.strip()}" for a in dependency.split("||") for b in offer.split("||"))
