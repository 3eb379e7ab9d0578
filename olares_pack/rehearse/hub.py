"""The model hub a live rehearsal's pods download from, listening on the node's bridge address.
What it answers is what huggingface_hub and llm-init read of Hugging Face (huggingface_hub
file_download.py `get_hf_file_metadata`, hf_api.py `model_info`/`list_repo_tree`):

- `HEAD|GET /<repo>/resolve/<revision>/<file>`: `X-Repo-Commit`; for an LFS file `X-Linked-Etag`
  and `X-Linked-Size` (its sha256 and size) and that `ETag`; for a file kept in git (config.json,
  .gitattributes) only `ETag`, the git blob sha1 (`sha1("blob <size>\0" + bytes)`), as the Hub
  answers; an unknown file: 404 with `X-Error-Code: EntryNotFound`.
- `GET /api/models/<repo>[/revision/<revision>]`: the repo's info with `sha` and `siblings`
  (`?blobs=true`: each with `blobId`, `size` and `lfs`); `GET /api/models/<repo>/tree/<revision>`:
  the file list with `oid`, `size` and `lfs`.

Two stand-in models, both real files of the format the engine loads:
- a file asked for by a name ending in .gguf (an app that names its GGUF file): a real small GGUF
  of the example app's architecture (qwen35 with one MTP head, olares_pack/vram/synth.py) at test
  dimensions, about 5 MB, so the CPU llama-server loads it and answers in seconds;
- a whole repo (what a vLLM app downloads: every file the listing names): a tiny safetensors repo,
  SAFETENSORS_REPO (.gitattributes, config.json of a Qwen3 model at test dimensions with the app's
  AutoRound quantization_config, generation_config.json, tokenizer files, one model.safetensors of
  float16 tensors whose shapes agree with config.json).
Every report says so (STANDS_FOR). Each GET of a file's bytes is counted: an upgrade that downloads
the model again shows here.

It also answers for https://huggingface.co itself: the node's DNS (cluster/dns.py) answers
Hugging Face's names with the address the hub listens on, and the hub serves the same answers over
HTTPS on port 443 with a certificate made here (openssl, self-signed, for huggingface.co, hf.co and
their subdomains). A chart that downloads by URL (an alpine init container's `wget
https://huggingface.co/<repo>/resolve/main/<file>`) gets the stand-in model; busybox's wget does not
verify certificates (a client that does would refuse this one). The hub answers the file itself
(200) where the Hub redirects an LFS file to its CDN (cas-bridge.xethub.hf.co). Each HTTPS request
is counted by the Host it named (`Hub.https`), and a report that had any says REDIRECTED."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import ssl
import struct
import subprocess
import threading
import urllib.parse
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
              "dimensions) under the model's file name; for a whole-repo download (vLLM) a tiny safetensors repo "
              "(Qwen3 config.json at test dimensions, tokenizer files, a 70 KB float16 model.safetensors)")
REDIRECTED = ("huggingface.co answered by the stand-in hub (the node's DNS answers Hugging Face's names with the "
              "hub's address, pods only; HTTPS on 443 with a self-signed certificate made here)")
TLS_NAMES = ("huggingface.co", "*.huggingface.co", "hf.co", "*.hf.co", "*.xethub.hf.co")
GIT_FILES_MAX = 10 * 1024 * 1024  # the Hub keeps larger files in LFS; these small ones are in git


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


def _tensor(name: str, shape: list[int]) -> tuple[str, list[int], bytes]:
    """float16 values in [-0.5, 0.5), the same every time (from the tensor's name)."""
    n = 1
    for d in shape:
        n *= d
    raw = b"".join(hashlib.sha256(f"{name}:{i}".encode()).digest() for i in range((2 * n + 31) // 32))[: 2 * n]
    # keep the exponent small: the high byte's exponent bits set to 0b01110 or below (|x| < 1)
    data = bytearray(raw)
    for i in range(1, len(data), 2):
        data[i] = (data[i] & 0x83) | 0x34
    return name, shape, bytes(data)


def safetensors(tensors: list[tuple[str, list[int], bytes]], metadata: dict[str, str]) -> bytes:
    """The safetensors format (huggingface/safetensors): u64 little-endian header size, the JSON
    header (dtype, shape, data_offsets per tensor, __metadata__), padded with spaces to 8 bytes,
    then the tensors' bytes in header order."""
    header: dict[str, object] = {"__metadata__": metadata}
    offset = 0
    for name, shape, data in tensors:
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(d for _n, _s, d in tensors)


# test dimensions; the keys of a Qwen3 config.json, the AutoRound quantization the app names
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 256}


def safetensors_repo() -> dict[str, bytes]:
    """The tiny safetensors repo: file name -> bytes (the same every time)."""
    h, ff, v, hd = TINY["hidden_size"], TINY["intermediate_size"], TINY["vocab_size"], TINY["head_dim"]
    q, kv = TINY["num_attention_heads"] * hd, TINY["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": [v, h], "model.norm.weight": [h], "lm_head.weight": [v, h]}
    for i in range(TINY["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes |= {p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
                   p + "self_attn.q_proj.weight": [q, h], p + "self_attn.k_proj.weight": [kv, h],
                   p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, q],
                   p + "mlp.gate_proj.weight": [ff, h], p + "mlp.up_proj.weight": [ff, h],
                   p + "mlp.down_proj.weight": [h, ff]}
    weights = safetensors([_tensor(n, shapes[n]) for n in sorted(shapes)], {"format": "pt"})
    config = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **TINY, "hidden_act": "silu",
              "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
              "tie_word_embeddings": False, "torch_dtype": "float16", "bos_token_id": 1, "eos_token_id": 2,
              "quantization_config": {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True,
                                      "packing_format": "auto_round:auto_gptq"},
              "olares_pack_stand_in": "a tiny model at test dimensions, not the app's weights"}
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"<0x{i:02X}>": 3 + i for i in range(253)}
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                 "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    tok_config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                  "unk_token": "<unk>", "model_max_length": 4096,
                  "chat_template": "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"}
    files = {".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
             "config.json": _json(config), "generation_config.json": _json({"bos_token_id": 1, "eos_token_id": 2}),
             "tokenizer.json": _json(tokenizer), "tokenizer_config.json": _json(tok_config),
             "model.safetensors": weights}
    return dict(sorted(files.items()))


def _json(obj: object) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def _lfs(name: str, data: bytes) -> bool:
    return name.endswith((".safetensors", ".gguf", ".bin")) or len(data) > GIT_FILES_MAX


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's object name


SAFETENSORS_REPO = "a tiny safetensors repo (rehearse/hub.py safetensors_repo)"


@dataclass
class Hub:
    url: str
    data: bytes  # the GGUF every *.gguf name gets
    downloads: Counter[str] = field(default_factory=Counter)  # "repo/file" -> GETs of its bytes
    repo: dict[str, bytes] = field(default_factory=dict)  # what every repo's listing holds
    https: Counter[str] = field(default_factory=Counter)  # Host -> HTTPS requests (huggingface.co by name)
    https_port: int | None = None  # where HTTPS is served (None: not served)
    https_error: str = ""  # why HTTPS is not served (the port taken, no openssl)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def file(self, name: str) -> bytes | None:
        if name in self.repo:
            return self.repo[name]
        return self.data if name.endswith(".gguf") else None

    def siblings(self, blobs: bool) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for name, data in self.repo.items():
            entry: dict[str, object] = {"rfilename": name}
            if blobs:
                entry |= {"blobId": git_sha1(data), "size": len(data)}
                if _lfs(name, data):
                    entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            out.append(entry)
        return out

    def tree(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for name, data in self.repo.items():
            entry: dict[str, object] = {"type": "file", "oid": git_sha1(data), "size": len(data), "path": name}
            if _lfs(name, data):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            out.append(entry)
        return out

    def info(self, repo: str, blobs: bool) -> dict[str, object]:
        return {"_id": hashlib.sha1(repo.encode()).hexdigest()[:24], "id": repo, "modelId": repo,  # noqa: S324
                "author": repo.split("/")[0], "sha": COMMIT, "private": False, "gated": False, "disabled": False,
                "downloads": 0, "likes": 0, "tags": ["safetensors"], "library_name": "transformers",
                "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
                "siblings": self.siblings(blobs)}


def certificate() -> tuple[Path, Path]:
    """The hub's certificate and key (made once, cached): self-signed for Hugging Face's names."""
    folder = tools.cache_root() / "standins" / "hub-tls"
    cert, key = folder / "cert.pem", folder / "key.pem"
    if not (cert.is_file() and key.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        san = ",".join(f"DNS:{n}" for n in TLS_NAMES)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj",
                        "/CN=huggingface.co", "-addext", f"subjectAltName={san}", "-keyout", str(key) + ".tmp",
                        "-out", str(cert) + ".tmp"], capture_output=True, check=True)
        Path(str(key) + ".tmp").replace(key)
        Path(str(cert) + ".tmp").replace(cert)
    return cert, key


def tls_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*certificate())
    # busybox 1.35's own TLS (its wget's, where no openssl binary is in the image) offers suites that
    # OpenSSL 3's default security level refuses (handshake failure, alert 40, reproduced here)
    ctx.set_ciphers("ALL:@SECLEVEL=0")
    return ctx


@contextmanager
def serving(host: str, https_port: int | None = 443) -> Iterator[Hub]:
    """The hub on host (HTTP on a free port; HTTPS on https_port, None: none, 0: a free one)."""
    hub = Hub("", small_gguf(), repo=safetensors_repo())
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str], with_body: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def _api(self, parts: list[str], query: str, with_body: bool) -> None:
            # api/models/<org>/<name>[/revision/<rev>] | api/models/<org>/<name>/tree/<rev>[/<path>]
            repo, rest = "/".join(parts[2:4]), parts[4:]
            if rest[:1] == ["tree"]:
                body = json.dumps(hub.tree()).encode()
            elif not rest or rest[:1] == ["revision"]:
                body = json.dumps(hub.info(repo, "blobs=true" in query)).encode()
            else:
                self._send(404, b'{"error":"Not found"}', {"Content-Type": "application/json"}, with_body)
                return
            self._send(200, body, {"Content-Type": "application/json", "X-Repo-Commit": COMMIT}, with_body)

        def _answer(self, with_body: bool) -> None:
            path, _, query = self.path.partition("?")
            parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
            if len(parts) >= 4 and parts[:2] == ["api", "models"]:
                self._api(parts, query, with_body)
                return
            data = hub.file("/".join(parts[4:])) if len(parts) >= 5 and parts[2] == "resolve" else None
            if data is None:
                self._send(404, b"Entry not found", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT},
                           with_body)
                return
            repo, name = "/".join(parts[:2]), "/".join(parts[4:])
            headers = {"X-Repo-Commit": COMMIT, "Content-Type": "application/octet-stream"}
            if _lfs(name, data):
                sha = hashlib.sha256(data).hexdigest()
                headers |= {"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data)), "ETag": f'"{sha}"'}
            else:
                headers["ETag"] = f'"{git_sha1(data)}"'
            if with_body:
                with lock:
                    hub.downloads[f"{repo}/{name}"] += 1
                    if isinstance(self.connection, ssl.SSLSocket):
                        hub.https[str(self.headers.get("Host") or "").split(":")[0]] += 1
            self._send(200, data, headers, with_body)

        def do_HEAD(self) -> None:
            self._answer(False)

        def do_GET(self) -> None:
            self._answer(True)

    server = ThreadingHTTPServer((host, 0), Handler)
    hub.url = f"http://{host}:{server.server_address[1]}"
    servers = [server]
    if https_port is not None:
        try:
            secure = ThreadingHTTPServer((host, https_port), Handler)
        except OSError as exc:  # HTTPS is for charts that download by URL; the rest need only HTTP
            hub.https_error = f"{host}:{https_port}: {exc}"
        else:
            try:
                secure.socket = tls_context().wrap_socket(secure.socket, server_side=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                secure.server_close()
                hub.https_error = f"no certificate: {exc}"
            else:
                hub.https_port = secure.server_address[1]
                servers.append(secure)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield hub
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()
