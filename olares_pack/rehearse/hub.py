"""The model hub a live rehearsal's pods download from: Hugging Face's file endpoint
(`HEAD|GET /<repo>/resolve/<revision>/<file>`, answering `X-Repo-Commit`, `X-Linked-Etag` (the
file's sha256, as the Hub answers for LFS files) and `ETag`), listening on the node's bridge
address, serving a real small GGUF for every file an app names.

The GGUF stands in for the app's model: the architecture of the example app (qwen35 with one MTP
head, olares_pack/vram/synth.py) at test dimensions, about 5 MB, so the CPU engine loads it and
answers in seconds; every report says so. Each GET of a file's bytes is counted: an upgrade that
downloads the model again shows here."""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from olares_pack.cluster import tools

COMMIT = "0" * 8 + hashlib.sha1(b"olares-pack stand-in model").hexdigest()[8:]  # noqa: S324 - a name
# olares_pack/vram/synth.py at test dimensions (tests/tinyqwen.py measured them with llama-server b11434)
SMALL = {"N_EMBD": 256, "N_HEAD": 2, "N_HEAD_KV": 1, "HEAD_DIM": 128, "N_FF": 256, "SSM_STATE": 128,
         "SSM_K_HEADS": 1, "SSM_V_HEADS": 2, "N_VOCAB": 9216}
STANDS_FOR = ("a 5 MB GGUF of the app's architecture (qwen35 + MTP head, olares_pack/vram/synth.py at test "
              "dimensions) under the model's file name")


def write_small(path: Path, layers: int = 4, accept: str = "full") -> Path:
    """olares_pack/vram/synth.py's model at the SMALL dimensions (a fresh copy of the module: its
    dimensions are module globals it reads at call time)."""
    synth_path = Path(__file__).resolve().parent.parent / "vram" / "synth.py"
    spec = importlib.util.spec_from_file_location("olares_pack_synth_small", synth_path)
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    for k, v in SMALL.items():
        setattr(synth, k, v)
    synth.write(path, layers, True, accept)
    return path


def small_gguf() -> bytes:
    """The stand-in model (cached: the same bytes every time)."""
    out = tools.cache_root() / "standins" / "tiny-qwen35-mtp.gguf"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        write_small(tmp)
        tmp.replace(out)
    return out.read_bytes()


@dataclass
class Hub:
    url: str
    data: bytes
    downloads: Counter[str] = field(default_factory=Counter)  # "repo/file" -> GETs of its bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@contextmanager
def serving(host: str) -> Iterator[Hub]:
    hub = Hub("", small_gguf())
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, body: bool) -> None:
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                self.send_error(404, "Entry not found")
                return
            repo, name = "/".join(parts[:2]), "/".join(parts[4:])
            self.send_response(200)
            self.send_header("Content-Length", str(len(hub.data)))
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("X-Linked-Etag", f'"{hub.sha256}"')
            self.send_header("X-Linked-Size", str(len(hub.data)))
            self.send_header("ETag", f'"{hub.sha256}"')
            self.end_headers()
            if body:
                with lock:
                    hub.downloads[f"{repo}/{name}"] += 1
                self.wfile.write(hub.data)

        def do_HEAD(self) -> None:
            self._answer(False)

        def do_GET(self) -> None:
            self._answer(True)

    server = ThreadingHTTPServer((host, 0), Handler)
    hub.url = f"http://{host}:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
