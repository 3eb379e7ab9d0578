"""The part of market-index.json the market routes read, taken one app at a time.

A 200-app ledger is 8 MB of JSON whose engine argv, flags, images and resources no route reads;
parsed whole it costs the server ~40 MiB at its peak, which CPython keeps afterwards (the arenas
of what was freed stay mapped around what was kept). The ledger is always written in one layout
(common/jsontext: indented by two, keys sorted, and `build --check` holds the committed file to
it), in which each app of the `apps` object starts on a line of its own indented by four (a JSON
string holds no raw newline, so such a line is always a key of `apps`). Each app is parsed from
its slice of the bytes and cut down by `keep` before the next one: the peak is one app. A ledger
in another layout is parsed whole by `ledger.loads`, whose error names the line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from olares_pack.catalogue import ledger as index

_APPS = b'{\n  "apps": {\n'
_APP = b'\n    "'  # a key of `apps`
_END = b'\n  },\n  "format": %d\n}\n' % index.FORMAT


def served(raw: bytes, path: Path, keep: Callable[[str, dict[str, Any]], Any]) -> dict[str, Any]:
    """{"format": ..., "apps": {name: keep(name, app)}} of a ledger, one app parsed at a time."""
    apps: dict[str, Any] = {}
    if raw.startswith(_APPS) and raw.endswith(_END):
        view, limit = memoryview(raw), len(raw) - len(_END)  # slices of a memoryview copy nothing
        starts = []
        at = raw.find(_APP, len(_APPS) - 1, limit)
        while at != -1:
            starts.append(at)
            at = raw.find(_APP, at + 1, limit)
        try:
            for i, start in enumerate(starts):
                end = starts[i + 1] if i + 1 < len(starts) else limit
                colon = raw.index(b": ", start, end)
                name = orjson.loads(view[start:colon])
                app = orjson.loads(bytes(view[colon + 2:end]).rstrip(b",\n "))
                if not isinstance(name, str) or not isinstance(app, dict):
                    raise ValueError(start)
                apps[name] = keep(name, app)
            return {"format": index.FORMAT, "apps": apps}
        except (orjson.JSONDecodeError, ValueError, KeyError, TypeError):
            apps = {}  # not the layout after all: read whole below
    ledger = index.loads(raw, path)
    return {**ledger, "apps": {name: keep(name, app) for name, app in ledger["apps"].items()}}
