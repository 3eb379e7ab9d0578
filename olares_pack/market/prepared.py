"""What the server prepared of each shown chart, kept between starts (.olares-pack/cache/serve-listings.json).

A chart's Listing (its details entry and v2 item as bytes, the fields the lists read, its
locales) is a function of the chart's bytes, its templated manifest as the offer file records it,
its app's slice of the ledger, the source's base URL and whether the app has an icon, and of
this code. Computing it means gunzipping the package and parsing its OlaresManifest.yaml and
locale files: most of a start. So each listing is stored under a key of all those inputs, and a
start (or a reload after a release) computes only the listings of charts it has not seen.

A stored listing is used only while the package file is the one whose bytes were verified when
it was computed (same size, mtime, ctime and inode): a package rewritten since is read and
verified again, as on a first start. The served bytes are verified against the ledger's sha256
whenever they are read (payloads.Chart.read) either way. The store is plain JSON, never code; a
store that cannot be read is ignored and one that cannot be written is not written (a read-only
source still serves, it only starts slower).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson

from olares_pack import __version__


# What this module reads of payloads' Catalogue, Chart and Listing, declared here (the lower room):
# payloads imports this module, so naming its classes here would close a circle (issue #53).
class Listing(Protocol):
    fragment: bytes
    summary: dict[str, Any]
    v2_item: dict[str, Any]
    v2_fragment: bytes
    locales: frozenset[str]


class Chart(Protocol):
    name: str
    version: str
    release: Any
    target: str
    file_name: str
    sha256: str
    published: Any
    dependency: Any
    installed_manifest: Any
    stamp: tuple[Any, ...] | None
    listing: Listing | None


class Catalogue(Protocol):
    ledger: dict[str, Any]
    base_url: str
    icons: Any


L = TypeVar("L", bound=Listing)

STORE = Path(".olares-pack") / "cache" / "serve-listings.json"  # under the catalogue root, with its other caches
FORMAT = 1
# The modules whose code decides a listing's bytes: a change to any of them invalidates the store.
_CODE = ("olares_pack.market.payloads", "olares_pack.market.v2", "olares_pack.catalogue.ledger",
         "olares_pack.common.quantity")

log = logging.getLogger("olares_pack.server")


def _code_fingerprint() -> str:
    import importlib.util

    h = hashlib.sha256(f"{FORMAT} {__version__}".encode())
    for name in _CODE:
        spec = importlib.util.find_spec(name)  # the file, not the module: no import of payloads here
        origin = spec.origin if spec else None
        h.update(Path(origin).read_bytes() if origin else name.encode())
    return h.hexdigest()


def key(cat: Catalogue, c: Chart, code: str) -> str:
    """Every input of the chart's listing, hashed."""
    parts = [code, c.name, c.version, c.release, c.target, c.file_name, c.sha256, c.published, c.dependency,
             c.installed_manifest, cat.ledger["apps"].get(c.name), cat.base_url, c.name in cat.icons]
    return hashlib.sha256(orjson.dumps(parts, default=lambda b: b.decode() if isinstance(b, bytes) else str(b))
                          ).hexdigest()


class Store:
    """The stored listings of one catalogue root, read at once and written back when it grew."""

    def __init__(self, root: Path) -> None:
        self.path = root / STORE
        self.code = _code_fingerprint()
        self.entries: dict[str, dict[str, Any]] = {}
        self.used: dict[str, dict[str, Any]] = {}
        self.dirty = False
        try:
            doc = orjson.loads(self.path.read_bytes())
            if isinstance(doc, dict) and doc.get("format") == FORMAT and isinstance(doc.get("listings"), dict):
                self.entries = doc["listings"]
        except (OSError, orjson.JSONDecodeError):
            pass  # none yet, or unreadable: computed afresh

    def key(self, cat: Catalogue, c: Chart) -> str:
        """Chart C's key: taken before its listing is computed, which lets its manifest go."""
        return key(cat, c, self.code)

    def take(self, k: str, c: Chart, make: Callable[..., L]) -> L | None:
        """The stored listing under K, when chart C's file is the one it was made from; `make` is
        payloads.Listing, passed in so this module does not import the one that imports it."""
        e = self.entries.get(k)
        if e is None or c.stamp is None or e.get("stamp") != list(c.stamp):
            return None
        try:
            listing = make(e["fragment"].encode(), e["summary"], e["v2_item"], e["v2_fragment"].encode(),
                              frozenset(e["locales"]))
        except (KeyError, TypeError, AttributeError):
            return None
        self.used[k] = e
        return listing

    def put(self, k: str, c: Chart) -> None:
        """Record chart C's listing under K, computed this start from bytes verified at C.stamp."""
        if k in self.used or c.listing is None or c.stamp is None:
            return
        one = c.listing
        self.used[k] = {"stamp": list(c.stamp), "fragment": one.fragment.decode(), "summary": one.summary,
                        "v2_item": one.v2_item, "v2_fragment": one.v2_fragment.decode(),
                        "locales": sorted(one.locales)}
        self.dirty = True

    def save(self) -> None:
        """Keep what this catalogue uses (listings of charts no longer shown are dropped)."""
        if not self.dirty and len(self.used) == len(self.entries):
            return
        from olares_pack.common.fsio import write_bytes_atomic

        try:
            write_bytes_atomic(self.path, orjson.dumps({"format": FORMAT, "listings": self.used},
                                                       option=orjson.OPT_SORT_KEYS))
        except OSError as exc:
            log.info("not keeping the prepared listings (%s): the next start prepares them again", exc)
