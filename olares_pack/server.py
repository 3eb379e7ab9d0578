"""The market source: the four routes an Olares device syncs from, plus icons and health.

ASGI (Starlette) on uvicorn. Response bodies are computed once per catalogue (and per distinct
`version` string, which the responses echo); the POST details route is the only one assembled
per request. A new catalogue is built aside and swapped in whole, so a reload never serves a
half-written one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import market, targets
from .errors import InputError, OlaresPackError
from .naming import NAME_RE
from .repo import INDEX_FILE

log = logging.getLogger("olares_pack.server")

MAX_BODY = 64 * 1024  # a details request is a few ids
MAX_IDS = 100  # devices send at most 10 per call
HEADER_TIMEOUT = 10.0  # seconds a client may take to send a request line and headers
BODY_TIMEOUT = 10.0  # seconds a client may take to send a request body
ID_RE = re.compile(r"^[0-9a-f]{8}$")
JSON_TYPE = "application/json"


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)


@dataclass
class Source:
    """The catalogue being served and where it comes from."""

    root: Path
    index_file: Path
    default_version: str = "1.12.6"
    base_url: str = ""
    catalogue: market.Catalogue | None = None
    stamp: tuple[int, int] | None = None

    def load(self) -> market.Catalogue:
        cat = market.load(self.root, self.index_file, self.base_url, probes=(self.default_version,))
        st = self.index_file.stat()
        self.catalogue, self.stamp = cat, (st.st_mtime_ns, st.st_size)  # one assignment: an atomic swap
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


def os_version(value: object) -> str:
    """The request's Olares version, read loosely as the installer does ('01.12.6' is 1.12.6), as
    the canonical string the views are keyed by; anything else is a 400."""
    if not isinstance(value, str):
        raise HTTPException(400, "version is an Olares version string (e.g. 1.12.6)")
    try:
        return str(targets.parse_os_version(value))
    except InputError as exc:
        raise HTTPException(400, str(exc)) from None


def _os_version(request: Request, default: str) -> str:
    return os_version(request.query_params.get("version", default))


def _cached(view: market.View, key: str, build: Any) -> Response:
    body = view.bodies.get(key)
    if body is None:
        body = view.bodies[key] = market.dumps(build())
        if len(view.bodies) > 256:  # bounded: one entry per distinct version string
            view.bodies.pop(next(iter(view.bodies)))
    return Response(body, media_type=JSON_TYPE, headers={"Cache-Control": "no-cache", "ETag": f'"{view.hash}"'})


def create_app(source: Source, *, reload_every: float | None = None) -> Starlette:
    if source.catalogue is None:
        source.load()

    def cat() -> market.Catalogue:
        assert source.catalogue is not None
        return source.catalogue

    async def hash_route(request: Request) -> Response:
        v = _os_version(request, source.default_version)
        view = cat().view(v)
        return _cached(view, f"hash:{v}", lambda: {"hash": view.hash, "last_updated": view.last_updated, "version": v})

    async def info_route(request: Request) -> Response:
        v = _os_version(request, source.default_version)
        view = cat().view(v)
        return _cached(view, f"info:{v}", lambda: {
            "version": v, "hash": view.hash, "last_updated": view.last_updated, "data": view.data,
            "stats": {"appstore_data": {"apps": len(view.data["apps"])}, "last_updated": view.last_updated}})

    async def details_route(request: Request) -> Response:
        declared = request.headers.get("content-length") or "0"
        if not declared.isascii() or not declared.isdigit():
            return error(400, "Content-Length is not a number")
        if len(declared) > 9 or int(declared) > MAX_BODY:
            return error(413, f"request body over {MAX_BODY} bytes")
        body = b""
        try:
            async with asyncio.timeout(BODY_TIMEOUT):
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > MAX_BODY:
                        return error(413, f"request body over {MAX_BODY} bytes")
        except TimeoutError:
            return error(408, f"the request body took over {BODY_TIMEOUT:g} s")
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
        v = os_version(doc.get("version", source.default_version))
        view = cat().view(v)
        found = {i: view.details[i] for i in dict.fromkeys(ids) if ID_RE.match(i) and i in view.details}
        missing = [i for i in dict.fromkeys(ids) if i not in found]
        return Response(market.dumps({"apps": found, "version": v, "not_found": missing}), media_type=JSON_TYPE)

    async def chart_route(request: Request) -> Response:
        name = request.path_params["name"]
        file_name = request.query_params.get("fileName", "")
        if not NAME_RE.match(name):
            return error(404, "no such app")
        if not re.fullmatch(rf"{re.escape(name)}-\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\.tgz", file_name):
            return error(404, f"no such chart file for {name}")
        try:
            asked = os_version(request.query_params["version"]) if "version" in request.query_params else None
        except HTTPException:
            asked = None  # the device sends the app version here; the file name decides
        chart = cat().archive(name, file_name, asked)
        if chart is None:
            return error(404, f"no chart {file_name}")
        etag = f'"sha256:{chart.sha256}"'
        headers = {"ETag": etag, "Cache-Control": "public, max-age=31536000, immutable",
                   "Content-Disposition": f'attachment; filename="{file_name}"'}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        try:
            data = chart.read()
        except InputError as exc:  # changed or removed on disk since the catalogue was loaded
            log.error("%s", exc)
            return error(503, f"{file_name} is unavailable until the catalogue is reloaded")
        return Response(data, media_type="application/gzip", headers=headers)

    async def icon_route(request: Request) -> Response:
        name = request.path_params["name"]
        data = cat().icons.get(name) if NAME_RE.match(name) else None
        if data is None:
            return error(404, "no such icon")
        return Response(data, media_type="image/png", headers={"Cache-Control": "public, max-age=86400"})

    async def health_route(request: Request) -> Response:
        c = cat()
        return JSONResponse({"status": "ok", "apps": len(c.ledger["apps"]), "charts": len(c.charts),
                             "index_sha256": c.ledger_sha256})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error(exc.status_code, str(exc.detail))

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s", request.url.path)
        return error(500, "internal error")

    async def watch() -> None:
        while True:
            await asyncio.sleep(reload_every or 2.0)
            try:
                if source.changed():
                    await asyncio.to_thread(source.reload)
            except Exception:  # noqa: BLE001 - the loop must outlive any one failed reload
                log.exception("reload failed; still serving the previous catalogue and watching")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, lambda: loop.run_in_executor(None, source.reload))
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests), or no SIGHUP
            pass
        task = asyncio.create_task(watch()) if reload_every else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()

    routes = [
        Route("/api/v1/appstore/hash", hash_route, methods=["GET"]),
        Route("/api/v1/appstore/info", info_route, methods=["GET"]),
        Route("/api/v1/applications/info", details_route, methods=["POST"]),
        Route("/api/v1/applications/{name}/chart", chart_route, methods=["GET"]),
        Route("/icons/{name}.png", icon_route, methods=["GET"]),
        Route("/health", health_route, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: internal_error},
                     lifespan=lifespan)


def run(root: Path, *, host: str, port: int, tls_cert: Path | None, tls_key: Path | None,
        reload_every: float | None, default_version: str, base_url: str = "", index_file: Path | None = None) -> None:
    import uvicorn

    source = Source(root, index_file or root / INDEX_FILE, default_version, base_url)
    source.load()
    app = create_app(source, reload_every=reload_every)
    uvicorn.run(app, host=host, port=port, ssl_certfile=str(tls_cert) if tls_cert else None,
                ssl_keyfile=str(tls_key) if tls_key else None, log_level="info", access_log=False, server_header=False,
                http=guarded_protocol(HEADER_TIMEOUT))


def guarded_protocol(header_timeout: float) -> type:
    """uvicorn's httptools protocol, with a deadline for the request line and headers: a client that
    trickles them (slowloris) is disconnected instead of holding the connection for ever."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class Guarded(HttpToolsProtocol):  # type: ignore[misc]
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._deadline is None:
                self._deadline = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Guarded
