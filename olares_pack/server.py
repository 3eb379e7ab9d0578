"""The market source: the four routes an Olares device syncs from, plus icons and health.

An asyncio protocol on httptools' parser (uvloop when installed) that answers from bytes computed
when the catalogue loads (market.View): a GET is a dictionary lookup of its URL, a details POST
joins precomputed per-app fragments. Nothing here imports Helm, Jinja or pydantic. A new
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

from . import market, targets
from .errors import InputError, OlaresPackError
from .naming import NAME_RE
from .repo import INDEX_FILE

log = logging.getLogger("olares_pack.server")

MAX_BODY = 64 * 1024  # a details request is a few ids
MAX_HEAD = 16 * 1024  # request line and headers
MAX_IDS = 100  # devices send at most 10 per call
HEADER_TIMEOUT = 10.0  # seconds a client may take to send a request line and headers, or stay idle
BODY_TIMEOUT = 10.0  # seconds a client may take to send a request body
GZIP_MIN = 1024  # smaller bodies are sent as they are
CACHE_ENTRIES = 4096  # responses kept per catalogue, by request
JSON = b"application/json"
REASONS = {200: b"OK", 304: b"Not Modified", 400: b"Bad Request", 404: b"Not Found", 405: b"Method Not Allowed",
           408: b"Request Timeout", 413: b"Content Too Large", 414: b"URI Too Long",
           431: b"Request Header Fields Too Large", 500: b"Internal Server Error", 503: b"Service Unavailable"}
ROUTES = frozenset({b"/api/v1/appstore/hash", b"/api/v1/appstore/info", b"/api/v1/applications/info", b"/health"})
CHART_PREFIX, CHART_SUFFIX = b"/api/v1/applications/", b"/chart"
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


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.reply = error(status, message)


def os_version(value: object) -> str:
    """The request's Olares version, read loosely as the installer does ('01.12.6' is 1.12.6), as
    the canonical string the views are keyed by; anything else is a 400."""
    if not isinstance(value, str):
        raise BadRequest(400, "version is an Olares version string (e.g. 1.12.6)")
    try:
        return str(targets.parse_os_version(value))
    except InputError as exc:
        raise BadRequest(400, str(exc)) from None


def not_here(url: bytes) -> Reply:
    """A known route asked with the wrong method is a 405, anything else a 404."""
    path = url.partition(b"?")[0]
    known = path in ROUTES or path.startswith((CHART_PREFIX, ICON_PREFIX))
    return error(405, "method not allowed") if known else error(404, "not found")


def _remember(cache: dict[bytes, Reply], key: bytes, answer: Callable[[bytes], Reply]) -> Reply:
    """The cached reply to a request, or a new one, kept when it is a 200 (bounded, oldest out)."""
    reply = cache.get(key)
    if reply is None:
        reply = answer(key)
        if reply.status == 200:
            if len(cache) >= CACHE_ENTRIES:
                cache.pop(next(iter(cache)))
            cache[key] = reply
    return reply


@dataclass
class Answers:
    """Every answer one catalogue gives, cached by request. Swapped whole with its catalogue."""

    cat: market.Catalogue
    default_version: str
    gets: dict[bytes, Reply] = field(default_factory=dict)  # raw URL -> reply (GET routes, 2xx only)
    posts: dict[bytes, Reply] = field(default_factory=dict)  # details body -> reply

    def get(self, url: bytes) -> Reply:
        return _remember(self.gets, url, self._get)

    def _get(self, url: bytes) -> Reply:
        path, _, query = url.partition(b"?")
        path = path.split(b"#", 1)[0]
        try:
            params = dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True, encoding="utf-8", errors="replace",
                                    max_num_fields=32))
        except ValueError:
            return error(400, "too many query parameters")
        try:
            if path == b"/api/v1/appstore/hash":
                v = os_version(params.get("version", self.default_version))
                return _json_reply(self.cat.view(v).hash_body(v))
            if path == b"/api/v1/appstore/info":
                v = os_version(params.get("version", self.default_version))
                return _json_reply(self.cat.view(v).info_body(v))
        except BadRequest as exc:
            return exc.reply
        if path == b"/health":
            c = self.cat
            return Reply(200, orjson.dumps({"status": "ok", "apps": len(c.ledger["apps"]), "charts": len(c.charts),
                                            "index_sha256": c.ledger_sha256}), headers=((b"Cache-Control", b"no-cache"),))
        if path.startswith(CHART_PREFIX) and path.endswith(CHART_SUFFIX):
            return self._chart(unquote(path[len(CHART_PREFIX):-len(CHART_SUFFIX)].decode("latin-1"), errors="replace"),
                               params.get("fileName", ""))
        if path.startswith(ICON_PREFIX) and path.endswith(ICON_SUFFIX):
            name = unquote(path[len(ICON_PREFIX):-len(ICON_SUFFIX)].decode("latin-1"), errors="replace")
            data = self.cat.icons.get(name) if NAME_RE.match(name) else None
            if data is None:
                return error(404, "no such icon")
            return Reply(200, data, b"image/png", ((b"Cache-Control", b"public, max-age=86400"),))
        return not_here(url)

    def _chart(self, name: str, file_name: str) -> Reply:
        if not NAME_RE.match(name):
            return error(404, "no such app")
        # the device sends the app version as `version`: the file name alone decides
        chart = self.cat.archive(name, file_name)
        if chart is None:
            return error(404, f"no chart {file_name[:200]!r} for {name}")
        try:
            data = chart.read()
        except InputError as exc:  # changed or removed on disk since the catalogue was loaded
            log.error("%s", exc)
            return error(503, f"{file_name} is unavailable until the catalogue is reloaded")
        return Reply(200, data, b"application/gzip",
                     ((b"Cache-Control", b"public, max-age=31536000, immutable"),
                      (b"Content-Disposition", b'attachment; filename="%s"' % file_name.encode())),
                     etag=b'"sha256:%s"' % chart.sha256.encode())

    def post(self, url: bytes, body: bytes) -> Reply:
        if url.partition(b"?")[0] != b"/api/v1/applications/info":
            return not_here(url)
        return _remember(self.posts, body, self._details)

    def _details(self, body: bytes) -> Reply:
        try:
            # orjson: nesting deeper than 1024 and integers beyond 64 bits are errors, not crashes
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            return error(400, "the body is not JSON (or nested too deeply, or a number too large)")
        if not isinstance(doc, dict) or not isinstance(doc.get("app_ids"), list):
            return error(400, 'expected {"app_ids": ["<id>", ...], "version": "<Olares version>"}')
        ids = doc["app_ids"]
        if len(ids) > MAX_IDS:
            return error(400, f"{len(ids)} ids: at most {MAX_IDS} per request")
        if not all(isinstance(i, str) for i in ids):
            return error(400, "app_ids holds strings")
        try:
            v = os_version(doc.get("version", self.default_version))
        except BadRequest as exc:
            return exc.reply
        body = self.cat.view(v).details_body(ids, v)
        return Reply(200, body, gz=_zipped(body))


@dataclass
class Source:
    """The catalogue being served and where it comes from."""

    root: Path
    index_file: Path
    default_version: str = "1.12.6"
    base_url: str = ""
    answers: Answers | None = None
    stamp: tuple[int, int] | None = None

    def load(self) -> market.Catalogue:
        cat = market.load(self.root, self.index_file, self.base_url)
        st = self.index_file.stat()
        self.answers, self.stamp = Answers(cat, self.default_version), (st.st_mtime_ns, st.st_size)  # one swap
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
                            targets.CURRENT.name, c.file_name)
        return cat

    def reload(self) -> bool:
        """Build the new catalogue aside; keep serving the old one if the new one is not whole."""
        try:
            self.load()
        except (OlaresPackError, OSError, ValueError) as exc:
            log.error("reload failed, still serving the previous catalogue: %s", exc)
            return False
        log.info("catalogue reloaded (%s)", self.index_file)
        return True

    def changed(self) -> bool:
        try:
            st = self.index_file.stat()
        except OSError:
            return False
        return (st.st_mtime_ns, st.st_size) != self.stamp


class Clock:
    """The Date header, formatted once a second rather than per response."""

    def __init__(self) -> None:
        self.second = 0
        self.value = b""

    def now(self) -> bytes:
        t = int(time.time())
        if t != self.second:
            self.second, self.value = t, formatdate(t, usegmt=True).encode()
        return self.value


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: keep-alive, pipelining, a deadline for the request head (slowloris)
    and body, limits on their sizes, and reading paused while the client does not read."""

    def __init__(self, source: Source, clock: Clock, live: set[Connection], header_timeout: float) -> None:
        import httptools

        self.source, self.clock, self.live, self.header_timeout = source, clock, live, header_timeout
        self.parser = httptools.HttpRequestParser(self)
        self.errors = (httptools.HttpParserError, httptools.HttpParserUpgrade)
        self.transport: asyncio.Transport | None = None
        self.deadline = 0.0
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
        try:
            self.parser.feed_data(data)
        except self.errors as exc:
            # a callback's BadRequest reaches here as the parser's error, the BadRequest its context
            cause = exc.__context__
            self.finish(cause.reply if isinstance(cause, BadRequest) else
                        error(400, "not an HTTP/1.1 request this server reads"), close=True)

    # httptools
    def on_message_begin(self) -> None:
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
        method = self.parser.get_method()
        answers = self.source.answers
        assert answers is not None
        try:
            if method in (b"GET", b"HEAD"):
                reply = answers.get(self.url)
            elif method == b"POST":
                reply = answers.post(self.url, b"".join(self.body))
            else:
                reply = not_here(self.url)
        except Exception:  # noqa: BLE001 - one bad request must not take the connection's others down
            log.exception("unexpected error on %r", self.url[:200])
            reply = error(500, "internal error")
        self.finish(reply, close=not self.parser.should_keep_alive(), head=method == b"HEAD")

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
    clock, live = Clock(), set[Connection]()
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
        workers: int = 1) -> None:
    """Serve until interrupted. The catalogue is loaded before the socket is bound, so a broken
    catalogue fails here and not on the first request; each worker process loads its own."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    source = Source(root, index_file or root / INDEX_FILE, default_version, base_url)
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
