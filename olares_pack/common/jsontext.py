"""The one JSON text format of committed files (ledger, records): indented by two, keys sorted,
UTF-8, one trailing newline. orjson writes exactly what `json.dumps(indent=2, sort_keys=True,
ensure_ascii=False)` writes, 15x faster on a 200-app ledger (8.5 MB: 0.23 s -> 0.016 s here)."""

from __future__ import annotations

from typing import Any

import orjson


def dumps(doc: Any) -> str:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode("utf-8") + "\n"


loads = orjson.loads
JSONDecodeError = orjson.JSONDecodeError
