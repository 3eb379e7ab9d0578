"""A local fake of the Hugging Face `resolve` endpoint: serves files, honours HTTP Range requests
like the real one (206 with Content-Range, 416 past the end), reports the commit in
X-Repo-Commit, and records every request."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO, REVISION = "acme/tiny-GGUF", "main"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[dict[str, str | None]] = []
        self.cut_first_after: int | None = None  # drop the first response after this many bytes
        self.bytes_served = 0

    def handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                # The hub answers a resolve of an LFS file with a redirect to its storage, stating
                # the file's sha256 and size (X-Linked-Etag, X-Linked-Size).
                import hashlib

                hub.requests.append({"path": self.path, "range": None, "auth": self.headers.get("Authorization"),
                                     "method": "HEAD"})
                path = urllib.parse.unquote(self.path)
                prefix = f"/{REPO}/resolve/{REVISION}/"
                data = hub.files.get(path[len(prefix):]) if path.startswith(prefix) else None
                if data is None:
                    self.send_error(404)
                    return
                self.send_response(302)
                self.send_header("Location", self.path + "?storage=1")
                self.send_header("X-Linked-Etag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                hub.requests.append({"path": self.path, "range": self.headers.get("Range"),
                                     "auth": self.headers.get("Authorization")})
                # The hub decodes the path: files are named by their decoded name.
                path = urllib.parse.unquote(self.path)
                prefix = f"/{REPO}/resolve/{REVISION}/"
                data = hub.files.get(path[len(prefix):]) if path.startswith(prefix) else None
                if data is None:
                    self.send_error(404)
                    return
                start, end = 0, len(data) - 1
                rng = self.headers.get("Range")
                if rng:
                    first, _, last = rng.removeprefix("bytes=").partition("-")
                    start = int(first)
                    end = min(int(last), len(data) - 1) if last else len(data) - 1
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:end + 1]
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Repo-Commit", COMMIT)
                hub.bytes_served += len(body)
                self.end_headers()
                if hub.cut_first_after is not None:
                    cut, hub.cut_first_after = hub.cut_first_after, None
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        return Handler


@contextmanager
def serve() -> Iterator[tuple[FakeHub, str]]:
    fake = FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
