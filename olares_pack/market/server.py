"""The market source: the four routes an Olares device up to 1.12.6 syncs from, the v2 routes of
the 1.12.7 sync (market_v2), plus icons and health.

An asyncio protocol on httptools' parser (uvloop when installed) that answers from bytes computed
when the catalogue loads (market.View): a GET is a dictionary lookup of its parsed request, a
details POST joins precomputed per-app fragments. Replies are cached by what they depend on and
bounded in bytes (Cache), so no client can grow a worker by varying its requests. Nothing here imports Helm, Jinja or pydantic. A new
catalogue is built aside and swapped in whole, so a reload never serves a half-written one.
With --workers N, N processes share the listening socket, each with its own catalogue.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import hashlib
import logging
import os
import signal
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import orjson

from olares_pack import olares
from olares_pack.catalogue.repo import INDEX_FILE, OFFER_FILE
from olares_pack.common.errors import BadRequest, InputError, OlaresPackError
from olares_pack.common.naming import ANY_LINE_NAME_RE
from olares_pack.market import payloads as market
from olares_pack.market import v2 as market_v2

log = logging.getLogger("olares_pack.server")

MAX_BODY = 64 * 1024  # a details request is a few ids
MAX_HEAD = 16 * 1024  # request line and headers
MAX_IDS = 100  # devices send at most 10 per call
HEADER_TIMEOUT = 10.0  # seconds a client may take to send a request line and headers, or stay idle
BODY_TIMEOUT = 10.0  # seconds a client may take to send a request body
GZIP_MIN = 1024  # smaller bodies are sent as they are
GET_CACHE_BYTES = 8 << 20  # replies kept per worker and catalogue, by parsed request (Cache)
POST_CACHE_BYTES = 4 << 20
ALIAS_ENTRIES = 4096  # raw requests remembered as their parsed key (Aliases) ...
ALIAS_MAX_LEN = 512  # ... when at most this long
JSON = b"application/json"
REASONS = {200: b"OK", 304: b"Not Modified", 400: b"Bad Request", 404: b"Not Found", 405: b"Method Not Allowed",
           408: b"Request Timeout", 413: b"Content Too Large", 414: b"URI Too Long",
           431: b"Request Header Fields Too Large", 500: b"Internal Server Error", 503: b"Service Unavailable"}
ROUTES = frozenset({b"/api/v1/appstore/hash", b"/api/v1/appstore/info", b"/api/v1/applications/info", b"/health",
                    b"/api/v2/catalog", b"/api/v2/taxonomy", b"/api/v2/applications", b"/api/v2/browse/applications"})
CHART_PREFIX, CHART_SUFFIX = b"/api/v1/applications/", b"/chart"
V2_CATALOG, V2_TAXONOMY = b"/api/v2/catalog", b"/api/v2/taxonomy"
V2_APPS, V2_BROWSE = b"/api/v2/applications", b"/api/v2/browse/applications"
V2_ROUTES = frozenset({V2_CATALOG, V2_TAXONOMY, V2_APPS, V2_BROWSE})
V2_CHART_PREFIX = b"/api/v2/applications/"  # the same chart route under v2 (beclab/Olares PR #3958)
ICON_PREFIX, ICON_SUFFIX = b"/icons/", b".png"


@dataclass
class Reply:
    """A response: status, headers without Date and Content-Length, body. `etag` lets a
    conditional GET be answered 304; `gz` is the body gzipped when worth it."""

    status: int
    body: bytes
    content_type: bytes = JSON
    headers: tuple[tuple[bytes, bytes], ...] = ()
    etag: bytes | None = None
    gz: bytes | None = None
    # the common answer (a full body on a kept-alive connection), encoded once per second, by gzip_ok
    wire: dict[bool, tuple[bytes, bytes]] = field(default_factory=dict)

    def encode(self, date: bytes, *, head: bool, gzip_ok: bool, if_none_match: bytes | None, close: bool) -> bytes:
        common = not head and if_none_match is None and not close
        if common:
            cached = self.wire.get(gzip_ok)
            if cached is not None and cached[0] is date:
                return cached[1]
        data = self._encode(date, head=head, gzip_ok=gzip_ok, if_none_match=if_none_match, close=close)
        if common:
            self.wire[gzip_ok] = (date, data)
        return data

    def _encode(self, date: bytes, *, head: bool, gzip_ok: bool, if_none_match: bytes | None, close: bool) -> bytes:
        status, body, extra = self.status, self.body, [*self.headers]
        etag = self.etag
        if gzip_ok and self.gz is not None:
            body, etag = self.gz, etag and etag[:-1] + b'-gz"'
            extra.append((b"Content-Encoding", b"gzip"))
        if self.gz is not None:
            extra.append((b"Vary", b"Accept-Encoding"))
        if etag is not None:
            extra.append((b"ETag", etag))
            if if_none_match is not None and _matches(if_none_match, etag):
                status, body = 304, b""
        lines = [b"HTTP/1.1 %d %s\r\nDate: %s\r\n" % (status, REASONS.get(status, b""), date)]
        if status != 304:
            lines.append(b"Content-Type: %s\r\nContent-Length: %d\r\n" % (self.content_type, len(body)))
        lines += [b"%s: %s\r\n" % kv for kv in extra]
        if close:
            lines.append(b"Connection: close\r\n")
        lines.append(b"\r\n")
        if not head and status != 304:
            lines.append(body)
        return b"".join(lines)


def _matches(if_none_match: bytes, etag: bytes) -> bool:
    return if_none_match.strip() == b"*" or etag in (t.strip().removeprefix(b"W/") for t in if_none_match.split(b","))


def error(status: int, message: str) -> Reply:
    return Reply(status, orjson.dumps({"error": message, "status": status}))


def _zipped(body: bytes) -> bytes | None:
    # mtime 0: the same body always gives the same compressed bytes (and the same ETag)
    return gzip.compress(body, 6, mtime=0) if len(body) >= GZIP_MIN else None


def _json_reply(body: bytes, cache: bytes = b"no-cache") -> Reply:
    etag = b'"%s"' % hashlib.sha256(body).hexdigest()[:32].encode()
    return Reply(200, body, headers=((b"Cache-Control", cache),), etag=etag, gz=_zipped(body))




def os_version(value: object) -> str:
    """The request's Olares version, read loosely as the installer does ('01.12.6' is 1.12.6), as
    the canonical string the views are keyed by; anything else is a 400."""
    if not isinstance(value, str):
        raise BadRequest(400, "version is an Olares version string (e.g. 1.12.6)")
    try:
        return str(olares.parse_os_version(value))
    except InputError as exc:
        raise BadRequest(400, str(exc)) from None


def not_here(url: bytes) -> Reply:
    """A known route asked with the wrong method is a 405, anything else a 404."""
    path = url.partition(b"?")[0]
    known = path in ROUTES or path.startswith((CHART_PREFIX, V2_CHART_PREFIX, ICON_PREFIX))
    return error(405, "method not allowed") if known else error(404, "not found")


def _cost(key: Any, reply: Reply) -> int:
    """Bytes a cached reply holds: its body and gzipped body, the wire copies `encode` keeps of
    each, and the key."""
    return 3 * (len(reply.body) + len(reply.gz or b"")) + len(repr(key)) + 1024


class Cache:
    """Replies by parsed request, at most `max_bytes` of them (oldest out). Keys are what the
    answer depends on (route, canonical OS version, ids, page), never the raw request: padding,
    unknown parameters and reordered fields all land on one entry."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.entries: dict[Any, tuple[Reply, int]] = {}

    def get(self, key: Any) -> Reply | None:
        hit = self.entries.get(key)
        return hit[0] if hit is not None else None

    def put(self, key: Any, reply: Reply) -> None:
        cost = _cost(key, reply)
        if cost > self.max_bytes // 8 or key in self.entries:  # a large chart is answered, not kept
            return
        while self.entries and self.size + cost > self.max_bytes:
            self.size -= self.entries.pop(next(iter(self.entries)))[1]
        self.entries[key] = (reply, cost)
        self.size += cost


class Aliases:
    """Short raw requests already seen -> their parsed key, so that a repeated request skips the
    parsing: bounded in count and in the length of what it keeps."""

    def __init__(self) -> None:
        self.keys: dict[bytes, Any] = {}

    def get(self, raw: bytes) -> Any:
        return self.keys.get(raw)

    def put(self, raw: bytes, key: Any) -> None:
        if len(raw) <= ALIAS_MAX_LEN:
            if len(self.keys) >= ALIAS_ENTRIES:
                self.keys.pop(next(iter(self.keys)))
            self.keys[raw] = key


def _param_int(params: dict[str, str], name: str, default: int, low: int) -> int:
    text = params.get(name)
    if text is None or text == "":
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > 9 or int(text) < low:
        raise BadRequest(400, f"{name} is a whole number of at least {low}")
    return int(text)


@dataclass
class Answers:
    """Every answer one catalogue gives, cached by parsed request (Cache). Swapped whole with its
    catalogue."""

    cat: market.Catalogue
    default_version: str
    gets: Cache = field(default_factory=lambda: Cache(GET_CACHE_BYTES))  # (route, params...) -> reply
    posts: Cache = field(default_factory=lambda: Cache(POST_CACHE_BYTES))  # (version, ids) -> reply
    get_aliases: Aliases = field(default_factory=Aliases)
    post_aliases: Aliases = field(default_factory=Aliases)
    # A whole raw request (request line, headers and any body, as one read delivered it) already
    # answered from `gets` or `posts` -> what its answer is encoded from (Connection.data_received):
    # a device or a load balancer repeating the same bytes is answered without parsing them again.
    raw_requests: dict[bytes, tuple[Reply, bool, bool, bytes | None]] = field(default_factory=dict)

    def remember_raw(self, raw: bytes, answer: tuple[Reply, bool, bool, bytes | None]) -> None:
        if len(raw) <= ALIAS_MAX_LEN:
            if len(self.raw_requests) >= ALIAS_ENTRIES:
                self.raw_requests.pop(next(iter(self.raw_requests)))
            self.raw_requests[raw] = answer

    @property
    def v2_default_version(self) -> str:
        """Only 1.12.7+ devices use the v2 routes: one that names no version is at least that."""
        v = olares.parse_os_version(self.default_version)
        return str(max(v, olares.parse_os_version(market_v2.MIN_OS)))

    def get(self, url: bytes) -> Reply:
        key = self.get_aliases.get(url)
        if key is not None:
            hit = self.gets.get(key)
            if hit is not None:
                return hit
        try:
            key, answer = self._route(url)
        except BadRequest as exc:
            return error(exc.status, str(exc))
        if key is None:
            return answer()
        reply = self.gets.get(key)
        if reply is None:
            reply = answer()
            if reply.status == 200:
                self.gets.put(key, reply)
        if reply.status == 200:
            self.get_aliases.put(url, key)
        return reply

    def _route(self, url: bytes) -> tuple[Any, Callable[[], Reply]]:
        """The request's cache key (None: not kept) and how to answer it."""
        path, _, query = url.partition(b"?")
        path = path.split(b"#", 1)[0]
        try:
            params = dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True, encoding="utf-8", errors="replace",
                                    max_num_fields=32))
        except ValueError:
            raise BadRequest(400, "too many query parameters") from None
        cat = self.cat
        if path == b"/api/v1/appstore/hash" or path == b"/api/v1/appstore/info":
            v = os_version(params.get("version", self.default_version))
            view = cat.view(v)
            body = view.hash_body if path.endswith(b"hash") else view.info_body
            return (path, v), lambda: _json_reply(body(v))
        if path in V2_ROUTES:
            return self._v2(path, params)
        if path == b"/health":
            return None, self._health
        for prefix in (CHART_PREFIX, V2_CHART_PREFIX):
            if path.startswith(prefix) and path.endswith(CHART_SUFFIX):
                name = unquote(path[len(prefix):-len(CHART_SUFFIX)].decode("latin-1"), errors="replace")
                file_name = params.get("fileName", "")
                chart = cat.archive(name, file_name) if ANY_LINE_NAME_RE.match(name) else None
                # the device sends the app version as `version`: the file name alone decides
                return ((b"chart", name, file_name) if chart is not None and not chart.problem else None,
                        lambda: self._chart(name, file_name, chart))  # noqa: B023 - returned at once, inside its turn
        if path.startswith(ICON_PREFIX) and path.endswith(ICON_SUFFIX):
            name = unquote(path[len(ICON_PREFIX):-len(ICON_SUFFIX)].decode("latin-1"), errors="replace")
            data = cat.icons.get(name) if ANY_LINE_NAME_RE.match(name) else None
            if data is None:
                return None, lambda: error(404, "no such icon")
            return (b"icon", name), lambda: Reply(200, data, b"image/png", ((b"Cache-Control", b"public, max-age=86400"),))
        return None, lambda: not_here(url)

    def _v2(self, path: bytes, params: dict[str, str]) -> tuple[Any, Callable[[], Reply]]:
        v = os_version(params.get("version", self.v2_default_version))
        v2 = self.cat.view(v).v2
        if path == V2_CATALOG or path == V2_TAXONOMY:
            # the caller's source_id is echoed; only the source's own id is worth keeping
            own = self.cat.taxonomy.source.source_id
            sid = params.get("source_id") or own
            if len(sid.encode()) > 256:
                raise BadRequest(400, "source_id is at most 256 bytes of UTF-8")
            body = v2.catalog_body if path == V2_CATALOG else v2.taxonomy_body
            return ((path, v) if sid == own else None), lambda: _json_reply(body(sid))
        size = _param_int(params, "size", 0, 0)
        page = _param_int(params, "page", 1, 1) if size else 1  # without size, page means nothing
        return (V2_APPS, v, page, size), lambda: _json_reply(v2.applications_body(page, size))

    def _health(self) -> Reply:
        c = self.cat
        doc: dict[str, Any] = {"status": "degraded" if c.problems else "ok", "apps": len(c.ledger["apps"]),
                               "charts": len(c.charts), "index_sha256": c.ledger_sha256}
        if c.problems:
            doc["unavailable"] = [{"app": x.name, "file": x.file_name, "target": x.target, "problem": x.problem}
                                  for x in c.problems]
        return Reply(200, orjson.dumps(doc), headers=((b"Cache-Control", b"no-cache"),))

    def _chart(self, name: str, file_name: str, chart: market.Chart | None) -> Reply:
        if not ANY_LINE_NAME_RE.match(name):
            return error(404, "no such app")
        if chart is None:
            return error(404, f"no chart {file_name[:200]!r} for {name}")
        data = None
        if chart.problem is None:
            try:
                data = chart.read()
            except InputError as exc:  # changed or removed on disk since the catalogue was loaded
                chart.problem = str(exc).removeprefix(f"{chart.path}: ")
                log.error("%s", exc)
        if data is None:
            return error(503, f"{file_name} is unavailable on this source: {chart.problem}")
        return Reply(200, data, b"application/gzip",
                     ((b"Cache-Control", b"public, max-age=31536000, immutable"),
                      (b"Content-Disposition", b'attachment; filename="%s"' % file_name.encode())),
                     etag=b'"sha256:%s"' % chart.sha256.encode())

    def post(self, url: bytes, body: bytes) -> Reply:
        if url.partition(b"?")[0] != b"/api/v1/applications/info":
            return not_here(url)
        key = self.post_aliases.get(body)
        if key is not None:
            hit = self.posts.get(key)
            if hit is not None:
                return hit
        try:
            key, view, ids, v = self._details_request(body)
        except BadRequest as exc:
            return error(exc.status, str(exc))
        reply = self.posts.get(key) if key is not None else None
        if reply is None:
            out = view.details_body(ids, v)
            reply = Reply(200, out, gz=_zipped(out))
            if key is not None:
                self.posts.put(key, reply)
        if key is not None:
            self.post_aliases.put(body, key)
        return reply

    def _details_request(self, body: bytes) -> tuple[Any, market.View, list[str], str]:
        """The parsed details request: its key (None when unknown ids make it one of a kind), view,
        ids and canonical OS version."""
        try:
            # orjson: nesting deeper than 1024 and integers beyond 64 bits are errors, not crashes
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise BadRequest(400, "the body is not JSON (or nested too deeply, or a number too large)") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("app_ids"), list):
            raise BadRequest(400, 'expected {"app_ids": ["<id>", ...], "version": "<Olares version>"}')
        ids = doc["app_ids"]
        if len(ids) > MAX_IDS:
            raise BadRequest(400, f"{len(ids)} ids: at most {MAX_IDS} per request")
        if not all(isinstance(i, str) for i in ids):
            raise BadRequest(400, "app_ids holds strings")
        v = os_version(doc.get("version", self.default_version))
        view = self.cat.view(v)
        known = view.fragments
        # the answer lists the found ids in order and the unknown ones as asked: with none unknown,
        # the set of ids and the version decide it
        key = None if any(i not in known for i in ids) else (v, tuple(sorted(set(ids))))
        return key, view, ids, v


@dataclass
class Source:
    """The catalogue being served and where it comes from."""

    root: Path
    index_file: Path
    default_version: str = olares.DEFAULT_OS_VERSION
    base_url: str = ""
    strict: bool = False  # a chart that cannot be served stops the start (CI), rather than a 503
    answers: Answers | None = None
    stamp: tuple[int, ...] | None = None
    # The whole answer, Date included, to each raw request already answered in the current second
    # (Connection.data_received): emptied when the second turns (Clock) and when answers are swapped.
    wires: dict[bytes, bytes] = field(default_factory=dict)

    def load(self, *, initial: bool = True) -> market.Catalogue:
        """Load the catalogue and swap it in. At start a catalogue with unavailable charts is served
        (each one named on stderr and in /health, its file answered 503) unless `strict`; a reload
        keeps the previous catalogue when the new one has an unavailable chart the previous one did
        not (a half-copied tree is not swapped in)."""
        cat = market.load(self.root, self.index_file, self.base_url, strict=self.strict)
        bad = {(c.path, c.problem) for c in cat.problems}
        if not initial and self.answers is not None:
            old = {(c.path, c.problem) for c in self.answers.cat.problems}
            if bad - old:
                raise InputError("the new catalogue has unavailable charts:\n" +
                                 "\n".join(f"  {p}: {why}" for p, why in sorted(bad - old)))
        self.answers, self.stamp = Answers(cat, self.default_version), self._stat()  # one swap
        self.wires.clear()
        # The catalogue lives until the next reload: keep the collector from walking it again and
        # again (full collections over 10^5 objects show up as latency spikes in the p99). What a
        # previous load froze is thawed first, so that a replaced catalogue can still be collected.
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        newest: dict[tuple[str, str], Any] = {}  # (app, target) -> the newest offered chart's version
        for o in cat.charts:
            if o.offered and ((o.name, o.target) not in newest or o.order > newest[o.name, o.target]):
                newest[o.name, o.target] = o.order
        for c in cat.shadowed:
            if (c.name, c.target) not in newest or newest[c.name, c.target] < c.order:
                log.warning("%s %s (%s) is not offered: the %s chart of the same release has its file name %s; "
                            "release a new version to give each target its own", c.name, c.release, c.target,
                            olares.CURRENT.name, c.file_name)
        if cat.problems:
            for c in cat.problems:
                log.error("UNAVAILABLE %s %s (%s): %s: %s", c.name, c.version, c.target, c.path, c.problem)
            log.error("DEGRADED: serving %d of %d charts; the %d above answer 503 and no device is offered them "
                      "(an app shows its newest whole chart); see /health. `serve --strict` refuses to start instead",
                      len(cat.charts) - len(cat.problems), len(cat.charts), len(cat.problems))
        return cat

    def reload(self) -> bool:
        """Build the new catalogue aside; keep serving the old one if the new one is not whole."""
        try:
            self.load(initial=False)
        except (OlaresPackError, OSError, ValueError) as exc:
            log.error("reload failed, still serving the previous catalogue: %s", exc)
            return False
        log.info("catalogue reloaded (%s)", self.index_file)
        return True

    def _stat(self) -> tuple[int, ...]:
        """The ledger's and the offer file's mtime and size (an absent offer file: zeros)."""
        st = self.index_file.stat()
        try:
            so = (self.index_file.parent / OFFER_FILE).stat()
            offer = (so.st_mtime_ns, so.st_size)
        except FileNotFoundError:
            offer = (0, 0)
        return (st.st_mtime_ns, st.st_size, *offer)

    def changed(self) -> bool:
        try:
            return self._stat() != self.stamp
        except OSError:
            return False


class Clock:
    """The Date header, formatted once a second rather than per response; the source's `wires`
    emptied when the second turns; and, refreshed by a timer at each second, a deadline for an
    idle connection that a request answered now may take (at most a second late, never early)."""

    def __init__(self, wires: dict[bytes, bytes], header_timeout: float) -> None:
        self.second = 0
        self.value = b""
        self.wires = wires
        self.header_timeout = header_timeout
        self.idle_deadline = time.monotonic() + header_timeout + 1.0
        self.timer: asyncio.TimerHandle | None = None

    def now(self) -> bytes:
        t = int(time.time())
        if t != self.second:
            self.second, self.value = t, formatdate(t, usegmt=True).encode()
            self.wires.clear()
        return self.value

    def tick(self) -> None:
        """Run just after each second turns, so that no kept answer carries the last second's Date."""
        self.now()
        self.idle_deadline = time.monotonic() + self.header_timeout + 1.0
        self.timer = asyncio.get_running_loop().call_later(1.001 - time.time() % 1.0, self.tick)

    def keep(self, raw: bytes, wire: bytes) -> None:
        if len(self.wires) < ALIAS_ENTRIES:
            self.wires[raw] = wire


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: keep-alive, pipelining, a deadline for the request head (slowloris)
    and body, limits on their sizes, and reading paused while the client does not read."""

    def __init__(self, source: Source, clock: Clock, live: set[Connection], header_timeout: float) -> None:
        import httptools

        self.source, self.clock, self.live, self.header_timeout = source, clock, live, header_timeout
        self.wires = source.wires  # the same dict as clock.wires: one attribute read on the hot path
        self.parser = httptools.HttpRequestParser(self)
        self.errors = (httptools.HttpParserError, httptools.HttpParserUpgrade)
        self.transport: asyncio.Transport | None = None
        self.deadline = 0.0
        self.in_message = False  # the parser holds part of a request
        self.completed = 0  # requests answered during the current feed_data
        self.repeatable: tuple[Reply, bool, bool, bytes | None] | None = None
        self.reset()

    def reset(self) -> None:
        self.url = b""
        self.head_bytes = 0
        self.body: list[bytes] = []
        self.body_size = 0
        self.gzip_ok = False
        self.if_none_match: bytes | None = None
        self.failed: Reply | None = None

    # asyncio
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio's classes
        self.live.add(self)
        self.deadline = time.monotonic() + self.header_timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self.live.discard(self)

    def pause_writing(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        # The exact bytes of a whole request answered before from the cache: the same bytes parse to
        # the same request, so they get the same answer. This second's is kept whole (`wires`):
        # a device or a load balancer repeating its request costs a lookup and a write.
        wire = self.wires.get(data)
        if wire is not None and not self.in_message:
            self.transport.write(wire)  # type: ignore[union-attr]  # set before any data arrives
            self.deadline = self.clock.idle_deadline
            return
        answers = self.source.answers
        if not self.in_message and answers is not None:
            hit = answers.raw_requests.get(data)
            if hit is not None:
                t = self.transport
                if t is not None and not t.is_closing():
                    reply, head, gzip_ok, if_none_match = hit
                    wire = reply.encode(self.clock.now(), head=head, gzip_ok=gzip_ok, if_none_match=if_none_match,
                                        close=False)
                    t.write(wire)
                    if self.source.answers is answers:  # not swapped meanwhile by a reload's thread
                        self.clock.keep(data, wire)
                    self.deadline = time.monotonic() + self.header_timeout
                return
        fresh = not self.in_message
        self.completed, self.repeatable = 0, None
        try:
            self.parser.feed_data(data)
        except self.errors as exc:
            # a callback's BadRequest reaches here as the parser's error, the BadRequest its context
            cause = exc.__context__
            self.finish(error(cause.status, str(cause)) if isinstance(cause, BadRequest) else
                        error(400, "not an HTTP/1.1 request this server reads"), close=True)
            return
        # Only a read that held exactly one whole request, answered from the cache, is remembered.
        if fresh and self.completed == 1 and not self.in_message and self.repeatable is not None and answers is not None \
                and self.source.answers is answers:
            answers.remember_raw(data, self.repeatable)

    # httptools
    def on_message_begin(self) -> None:
        self.in_message = True
        self.reset()

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > MAX_HEAD:
            raise BadRequest(414, f"the URL is over {MAX_HEAD} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_bytes += len(name) + len(value)
        if self.head_bytes > MAX_HEAD:
            raise BadRequest(431, f"headers over {MAX_HEAD} bytes")
        name = name.lower()
        if name == b"accept-encoding":
            self.gzip_ok = b"gzip" in value.lower()
        elif name == b"if-none-match":
            self.if_none_match = value
        elif name == b"content-length":
            if not value.strip().isdigit() or len(value) > 9:
                raise BadRequest(400, "Content-Length is not a number")
            if int(value) > MAX_BODY:
                raise BadRequest(413, f"request body over {MAX_BODY} bytes")

    def on_headers_complete(self) -> None:
        # the head is in: the client now has BODY_TIMEOUT for its body, if any
        self.deadline = time.monotonic() + BODY_TIMEOUT

    def on_body(self, body: bytes) -> None:
        self.body_size += len(body)
        if self.body_size > MAX_BODY:
            raise BadRequest(413, f"request body over {MAX_BODY} bytes")
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.in_message = False
        self.completed += 1
        method = self.parser.get_method()
        answers = self.source.answers
        assert answers is not None
        close = not self.parser.should_keep_alive()
        try:
            if method in (b"GET", b"HEAD"):
                reply = answers.get(self.url)
                # answered from the cache (its alias kept), with no body and the connection kept
                if not close and not self.body_size and reply.status == 200 and \
                        answers.get_aliases.get(self.url) is not None:
                    self.repeatable = (reply, method == b"HEAD", self.gzip_ok, self.if_none_match)
            elif method == b"POST":
                body = b"".join(self.body)
                reply = answers.post(self.url, body)
                # answered from the cache (its alias kept): the same bytes are the same ids
                if not close and reply.status == 200 and answers.post_aliases.get(body) is not None:
                    self.repeatable = (reply, False, self.gzip_ok, self.if_none_match)
            else:
                reply = not_here(self.url)
        except Exception:  # noqa: BLE001 - one bad request must not take the connection's others down
            log.exception("unexpected error on %r", self.url[:200])
            reply = error(500, "internal error")
        self.finish(reply, close=close, head=method == b"HEAD")

    def finish(self, reply: Reply, *, close: bool, head: bool = False) -> None:
        t = self.transport
        if t is None or t.is_closing():
            return
        t.write(reply.encode(self.clock.now(), head=head, gzip_ok=self.gzip_ok, if_none_match=self.if_none_match,
                             close=close))
        if close:
            t.close()
        else:
            self.deadline = time.monotonic() + self.header_timeout  # idle, or the next request's head

    def expired(self, now: float) -> bool:
        return now > self.deadline


async def _sweep(live: set[Connection], every: float) -> None:
    """Close connections past their deadline: one timer for all, not one per request."""
    while True:
        await asyncio.sleep(every)
        now = time.monotonic()
        for conn in [c for c in live if c.expired(now)]:
            if conn.transport is not None:
                conn.transport.close()


async def _watch(source: Source, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            if source.changed():
                await asyncio.to_thread(source.reload)
        except Exception:  # noqa: BLE001 - the loop must outlive any one failed reload
            log.exception("reload failed; still serving the previous catalogue and watching")


async def serve(source: Source, sock: socket.socket, *, reload_every: float | None = None,
                tls: ssl.SSLContext | None = None, header_timeout: float = HEADER_TIMEOUT,
                started: Callable[[asyncio.AbstractServer], None] | None = None) -> None:
    """Serve on a bound, listening socket until cancelled."""
    if source.answers is None:
        source.load()
    loop = asyncio.get_running_loop()
    clock, live = Clock(source.wires, header_timeout), set[Connection]()
    clock.tick()
    server = await loop.create_server(lambda: Connection(source, clock, live, header_timeout), sock=sock, ssl=tls,
                                      backlog=1024)
    tasks = [asyncio.create_task(_sweep(live, min(0.25, header_timeout / 4)))]
    if reload_every:
        tasks.append(asyncio.create_task(_watch(source, reload_every)))
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no SIGHUP
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.run_in_executor(None, source.reload))
    if started is not None:
        started(server)
    try:
        await server.serve_forever()
    finally:
        if clock.timer is not None:
            clock.timer.cancel()
        for t in tasks:
            t.cancel()
        for conn in list(live):
            if conn.transport is not None:
                conn.transport.close()
        server.close()


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _run_loop(coro_factory: Callable[[], object]) -> None:
    try:
        import uvloop

        uvloop.run(coro_factory())  # type: ignore[arg-type]
    except ImportError:
        asyncio.run(coro_factory())  # type: ignore[arg-type]


def run(root: Path, *, host: str, port: int, tls_cert: Path | None, tls_key: Path | None,
        reload_every: float | None, default_version: str, base_url: str = "", index_file: Path | None = None,
        workers: int = 1, strict: bool = False) -> None:
    """Serve until interrupted. The catalogue is loaded before the socket is bound, so a broken
    catalogue fails here and not on the first request; each worker process loads its own."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    source = Source(root, index_file or root / INDEX_FILE, default_version, base_url, strict)
    source.load()
    tls = None
    if tls_cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(str(tls_cert), str(tls_key) if tls_key else None)
    sock = listen(host, port)
    log.info("serving %s on %s://%s:%d with %d worker(s)", source.index_file, "https" if tls else "http", host, port,
             workers)

    def one() -> None:
        with contextlib.suppress(KeyboardInterrupt):
            _run_loop(lambda: serve(source, sock, reload_every=reload_every, tls=tls))

    if workers <= 1:
        one()
        return
    children = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # a worker: serve on the shared socket until told to stop
            signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
            try:
                one()
            finally:
                os._exit(0)
        children.append(pid)

    def stop(*_: object) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, lambda *_: [os.kill(pid, signal.SIGHUP) for pid in children])
    try:
        for pid in children:
            os.waitpid(pid, 0)
    except KeyboardInterrupt:
        stop()
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
