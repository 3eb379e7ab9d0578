"""olares-pack's stand-in for a vLLM engine image (cluster/images.py builds it into the image as
`vllm` and as `python3 -m vllm.entrypoints.openai.api_server`). Not vLLM: no torch, no GPU, no
generation. What it does of vLLM's job, so that a chart's mistakes show on the node:

1. the argument list: every option, after vLLM's own rewriting of the argv (FlexibleArgumentParser,
   read by olares_pack/engines/vllmargs.serve_flags, bundled beside this file), must be a flag of
   the vLLM release in olares-pack's flag registry (olares_pack/engines/data/vllm-flags.json, read
   from the release's own sources), `--no-<flag>` included; otherwise it exits 2 with argparse's
   "unrecognized arguments". Only names are checked: the registry has no value types, so a value
   the fork accepts and stock vLLM refuses (`--kv-cache-dtype turboquant_k8v4`) passes, and so does
   a wrong one.
2. the model: the folder given, or a repo id resolved as vLLM's weight loader does
   (huggingface_hub snapshot_download with cache_dir=--download-dir, revision=--revision, local
   files only under HF_HUB_OFFLINE); config.json must name architectures and model_type; every
   safetensors file's header must be valid and agree with its size (dtype x shape = data_offsets,
   the last offset = the data's size); the embedding must have config.json's vocab_size x
   hidden_size; a tokenizer file must be there.
3. the server on --host/--port: /health, /version, /v1/models (the --served-model-name, else the
   model as given), /v1/chat/completions (404 for another model name, as vLLM answers; the answer
   says it is the stand-in's).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import vllmargs  # olares_pack/engines/vllmargs.py, bundled beside this file in the image
except ImportError:  # run from olares-pack's sources (tests/test_node_parts.py)
    from olares_pack.engines import vllmargs

TABLE = Path(os.environ.get("OLARES_PACK_VLLM_FLAGS", str(HERE / "vllm-flags.json")))
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}
TAG = "[olares-pack vllm stand-in]"


def log(msg: str) -> None:
    print(f"INFO {time.strftime('%m-%d %H:%M:%S')} {TAG} {msg}", flush=True)


def fail(msg: str, code: int = 1) -> None:
    print(f"ERROR {time.strftime('%m-%d %H:%M:%S')} {TAG} {msg}", file=sys.stderr, flush=True)
    try:
        Path("/dev/termination-log").write_text(msg + "\n")
    except OSError:
        pass
    raise SystemExit(code)


def table() -> tuple[str, set[str]]:
    data = json.loads(TABLE.read_text())
    return data["version"], set(data["flags"])


def parse(argv: list[str], api_server: bool) -> dict[str, list[str]]:
    """Options -> their values (words after them that are not options). Refuses an option the
    registry does not have, naming every one, as argparse does."""
    version, flags = table()
    opts: dict[str, list[str]] = {}
    words = list(argv)
    if not api_server:
        if not words or words[0] != "serve":
            fail(f"the stand-in runs only `vllm serve` (got: {' '.join(words[:1]) or 'nothing'})", 2)
        words = words[1:]
        if words and not words[0].startswith("-"):
            opts["--model"] = [words.pop(0)]
    unknown: list[str] = []
    current: str | None = None
    for word in words:
        found = vllmargs.serve_flags([word])  # the word as vLLM's argv rewriting names it, if an option
        name = found[0][0] if found else None
        if name is None:
            if current is None:
                unknown.append(word)
            else:
                opts[current].append(word)
            continue
        if name not in flags and not (name.startswith("--no-") and "--" + name[5:] in flags):
            unknown.append(word)
            current = None
            continue
        current = name
        opts.setdefault(name, [])
        if "=" in word:
            opts[name].append(word.split("=", 1)[1])
    if unknown:
        fail(f"vllm serve: error: unrecognized arguments: {' '.join(unknown)} (checked against olares-pack's "
             f"flag registry of vLLM {version}: the image's own parser is not here)", 2)
    log(f"arguments checked against olares-pack's flag registry of vLLM {version} (option names only)")
    return opts


def resolve(model: str, opts: dict[str, list[str]]) -> Path:
    if Path(model).is_dir():
        return Path(model)
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(model, revision=(opts.get("--revision") or [None])[0],
                                 cache_dir=(opts.get("--download-dir") or [None])[0], local_files_only=offline)
    except Exception as exc:  # noqa: BLE001 - vLLM stops on any of them, with the library's words
        fail(f"cannot resolve model {model}: {type(exc).__name__}: {exc}")
    return Path(path)


def check_safetensors(path: Path) -> tuple[int, dict[str, list[int]]]:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            fail(f"{path.name}: not a safetensors file ({size} bytes)")
        n = struct.unpack("<Q", head)[0]
        if n > size - 8 or n > 100_000_000:
            fail(f"{path.name}: header of {n} bytes in a file of {size}: not a safetensors file or truncated")
        try:
            header = json.loads(f.read(n))
        except ValueError as exc:
            fail(f"{path.name}: header is not JSON: {exc}")
    data, end, shapes = size - 8 - n, 0, {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for d in t["shape"]:
            count *= d
        lo, hi = t["data_offsets"]
        if t["dtype"] not in DTYPE_BYTES or hi - lo != count * DTYPE_BYTES[t["dtype"]] or hi > data:
            fail(f"{path.name}: tensor {name} ({t['dtype']} {t['shape']}) does not fit its offsets {lo}-{hi} "
                 f"in {data} bytes of data")
        end, shapes[name] = max(end, hi), list(t["shape"])
    if end != data:
        fail(f"{path.name}: {data} bytes of data, the tensors end at {end} (truncated or padded file)")
    return len(shapes), shapes


def load(folder: Path) -> tuple[dict[str, object], int]:
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        fail(f"no config.json in {folder}")
    config = json.loads(cfg_path.read_text())
    if not config.get("architectures") or not config.get("model_type"):
        fail(f"{cfg_path}: no architectures or model_type")
    index = folder / "model.safetensors.index.json"
    files = (sorted({folder / f for f in json.loads(index.read_text())["weight_map"].values()}) if index.is_file()
             else sorted(folder.glob("*.safetensors")))
    if not files:
        fail(f"Cannot find any model weights with `{folder}`")
    shapes: dict[str, list[int]] = {}
    for f in files:
        if not f.is_file():
            fail(f"{f.name} (named by model.safetensors.index.json) is missing")
        shapes |= check_safetensors(f)[1]
    emb = shapes.get("model.embed_tokens.weight")
    want = [config.get("vocab_size"), config.get("hidden_size")]
    if emb is not None and None not in want and emb != want:
        fail(f"model.embed_tokens.weight is {emb}, config.json says vocab_size x hidden_size = {want}")
    if not any((folder / t).is_file() for t in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        fail(f"no tokenizer files in {folder}")
    log(f"model {config['architectures'][0]} ({config['model_type']}): {len(shapes)} tensors in "
        f"{len(files)} safetensors file(s), shapes agree with config.json")
    return config, len(shapes)


def serve(opts: dict[str, list[str]], model: str, folder: Path, tensors: int) -> None:
    served = opts.get("--served-model-name") or [model]
    host, port = (opts.get("--host") or ["0.0.0.0"])[0], int((opts.get("--port") or ["8000"])[0])  # noqa: S104
    max_len = int((opts.get("--max-model-len") or ["0"])[0] or 0)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _json(self, status: int, obj: object) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/version":
                self._json(200, {"version": f"{table()[0]} (olares-pack stand-in)"})
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [
                    {"id": s, "object": "model", "created": 0, "owned_by": "vllm", "root": str(folder),
                     "parent": None, "max_model_len": max_len} for s in served]})
            else:
                self._json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self._json(404, {"detail": "Not Found"})
                return
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "invalid JSON", "type": "BadRequestError", "code": 400}})
                return
            if req.get("model") not in served:
                self._json(404, {"error": {"message": f"The model `{req.get('model')}` does not exist.",
                                           "type": "NotFoundError", "param": "model", "code": 404}})
                return
            text = f"olares-pack's vLLM stand-in answers: {tensors} tensors of {model} loaded (no generation)"
            self._json(200, {"id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
                             "model": req["model"], "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": text}}],
                             "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

    # as a container's PID 1 a signal without a handler is ignored: without this the pod would
    # take its whole grace period to stop (vLLM's server stops on SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = ThreadingHTTPServer((host, port), Handler)
    log(f"serving {', '.join(served)} on http://{host}:{port} (/health, /v1/models, /v1/chat/completions)")
    server.serve_forever()


def main(argv: list[str]) -> int:
    api_server = bool(argv) and argv[0] == "--api-server"
    opts = parse(argv[1:] if api_server else argv, api_server)
    model = (opts.get("--model") or [""])[0]
    if not model:
        fail("no model given (`vllm serve MODEL` or --model)", 2)
    log(f"model {model}: resolving")
    folder = resolve(model, opts)
    _config, tensors = load(folder)
    serve(opts, model, folder, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
