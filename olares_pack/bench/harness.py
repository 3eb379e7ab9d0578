"""The measuring client: one engine's OpenAI-compatible API, one streamed completion per run, the
figures read from what the server itself reports.

Standard library only (http.client), so that it also runs on a GPU machine that has nothing of
olares-pack's dependencies: `python3 -m olares_pack.bench URL` there.

- llama-server: the `timings` object of the stream's last chunk (predicted_per_second,
  prompt_per_second, draft_n, draft_n_accepted); `cache_prompt: false` and a fresh first line per
  run make every run process its whole prompt, and a run whose timings show cached prompt tokens
  fails the bench.
- vLLM: `usage` for the token counts; `/metrics` read before and after each run for the decode and
  prefill seconds and the speculative-decoding counters. The fresh first line defeats
  `--enable-prefix-caching`.
- Time to the first generated token: from sending the request to the first chunk that carries
  generated text, measured here (the servers report no such figure).
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import socket
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from olares_pack.bench.method import Method
from olares_pack.common.errors import BenchFailure, InputError

# vLLM's Prometheus series a run reads (summed over their label sets)
VLLM_DECODE = "vllm:request_decode_time_seconds_sum"
VLLM_PREFILL = "vllm:request_prefill_time_seconds_sum"
VLLM_DRAFTS = "vllm:spec_decode_num_draft_tokens_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PROBE_TIMEOUT = 10.0
# `name{labels} value [timestamp]` of the Prometheus text format
PROM_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{.*\})?\s+(\S+)")


@dataclass(frozen=True)
class Server:
    url: str
    kind: str  # llama-server | vllm | openai
    model: str
    build: str | None = None
    model_file: str | None = None  # the model file the server says it loaded (llama-server /props model_path)


@dataclass
class Run:
    tokens_per_s: float
    tokens: int
    prompt_tokens: int
    prompt_tokens_per_s: float | None = None
    ttft_ms: float | None = None
    draft_n: int | None = None
    draft_accepted: int | None = None
    # what the server itself reported for the run (llama-server's `timings`; vLLM's counter deltas),
    # from which the figures above are read: an imported result is checked against them
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != {}}


@dataclass
class Result:
    server: Server
    method: Method
    runs: list[Run] = field(default_factory=list)
    started: str | None = None  # UTC, ISO 8601: the first measured request was sent
    ended: str | None = None  # the last measured answer was read


def utc_now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


class Client:
    """One base URL (`http://host:port`, with or without `/v1`)."""

    def __init__(self, url: str, stall_timeout: float = 120.0) -> None:
        parsed = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InputError(f"--endpoint {url!r}: expected http(s)://HOST[:PORT][/PATH]")
        self.scheme, self.host = parsed.scheme, parsed.hostname
        try:
            self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        except ValueError:
            raise InputError(f"--endpoint {url!r}: the port is not a number from 1 to 65535") from None
        path = parsed.path.rstrip("/")
        self.prefix = path[:-3] if path.endswith("/v1") else path
        self.url = f"{self.scheme}://{parsed.netloc}{self.prefix}"
        self.stall_timeout = stall_timeout

    def _conn(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def get(self, path: str, timeout: float = PROBE_TIMEOUT) -> tuple[int, bytes]:
        conn = self._conn(timeout)
        try:
            conn.request("GET", self.prefix + path)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def post(self, path: str, body: dict[str, Any], timeout: float) -> tuple[int, bytes]:
        conn = self._conn(timeout)
        try:
            conn.request("POST", self.prefix + path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def stream(self, path: str, body: dict[str, Any]) -> Iterator[tuple[float, dict[str, Any]]]:
        """(arrival time, chunk) of a server-sent-event stream; the request's send time first, as
        (time, {})."""
        conn = self._conn(self.stall_timeout)
        try:
            sent = time.perf_counter()
            conn.request("POST", self.prefix + path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise BenchFailure(f"{self.url}{path} answered HTTP {resp.status}: {_snippet(resp.read())}")
            yield sent, {}
            for raw in resp:
                line = raw.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise BenchFailure(f"{self.url}{path}: a stream chunk is not JSON: {_snippet(data)}") from None
                if isinstance(chunk, dict) and chunk.get("error"):
                    raise BenchFailure(f"{self.url}{path}: the server reported an error: {_snippet(json.dumps(chunk['error']).encode())}")
                yield time.perf_counter(), chunk
            raise BenchFailure(f"{self.url}{path}: the stream ended without [DONE]: the server stopped mid-answer")
        finally:
            conn.close()


def _snippet(data: bytes, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "…"


def probe(client: Client) -> Server:
    """What answers at the endpoint; exit 2 (InputError) when nothing does or it is no LLM server."""
    try:
        status, body = client.get("/v1/models")
    except (OSError, http.client.HTTPException) as exc:
        raise InputError(f"--endpoint {client.url}: cannot reach the server ({_reason(exc)})") from None
    try:
        models = json.loads(body) if status == 200 else None
    except ValueError:
        models = None
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "id" not in data[0]:
        raise InputError(f"--endpoint {client.url}: not an OpenAI-compatible LLM server (GET /v1/models answered "
                         f"HTTP {status}: {_snippet(body, 120)!r}, expected a JSON list of models under \"data\")")
    model = str(data[0]["id"])
    props = _json_get(client, "/props")
    if isinstance(props, dict) and ("build_info" in props or "default_generation_settings" in props):
        return Server(client.url, "llama-server", model, str(props.get("build_info") or "") or None,
                      str(props.get("model_path") or "") or None)
    version = _json_get(client, "/version")
    if _metrics(client) is not None and isinstance(version, dict):
        return Server(client.url, "vllm", model, f"vllm {version.get('version')}" if version.get("version") else None)
    return Server(client.url, "openai", model)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror):
        return f"no such host: {exc.strerror or exc}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: is the engine running and the port forwarded?"
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer in time"
    return f"{type(exc).__name__}: {exc}"


def _json_get(client: Client, path: str) -> Any:
    try:
        status, body = client.get(path)
        return json.loads(body) if status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None


def _metrics(client: Client) -> dict[str, float] | None:
    """vLLM's Prometheus counters, each series summed over its labels; None without vLLM series."""
    try:
        status, body = client.get("/metrics")
    except (OSError, http.client.HTTPException):
        return None
    if status != 200 or b"vllm:" not in body:
        return None
    out: dict[str, float] = {}
    for line in body.decode("utf-8", "replace").splitlines():
        if m := PROM_LINE.match(line):
            try:
                out[m[1]] = out.get(m[1], 0.0) + float(m[2])
            except ValueError:
                continue
    return out


def request_body(server: Server, method: Method, prompt: str | list[int], max_tokens: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": server.model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
                            "stream_options": {"include_usage": True}, **method.sampling()}
    if method.ignore_eos:
        body["ignore_eos"] = True
    if server.kind == "llama-server":
        body["cache_prompt"] = False
    body.update(method.extra)
    return body


def fresh_prompt(method: Method, label: str) -> str:
    """The method's prompt after a first line no earlier request had: no prefix cache can serve it."""
    return f"[{label} {secrets.token_hex(6)}]\n{method.prompt}"


def complete(client: Client, server: Server, method: Method, prompt: str | list[int], max_tokens: int,
             what: str) -> Run:
    """One streamed completion, its figures as the server reports them."""
    before = _metrics(client) if server.kind == "vllm" else None
    first = last = sent = None
    timings = usage = None
    try:
        for at, chunk in client.stream("/v1/completions", request_body(server, method, prompt, max_tokens)):
            if sent is None:
                sent = at
                continue
            choices = chunk.get("choices") or []
            if choices and isinstance(choices[0], dict) and choices[0].get("text"):
                first = first or at
                last = at
            timings = chunk.get("timings") or timings
            usage = chunk.get("usage") or usage
    except (OSError, http.client.HTTPException) as exc:
        raise BenchFailure(f"{what}: the server stopped answering ({_reason(exc)}); is it still running?") from None
    except BenchFailure as exc:
        raise BenchFailure(f"{what}: {exc}") from None
    ttft = (first - sent) * 1000 if first is not None and sent is not None else None
    if server.kind == "llama-server":
        if not isinstance(timings, dict) or "predicted_per_second" not in timings:
            raise BenchFailure(f"{what}: llama-server's answer carries no timings: is this a llama-server?")
        if timings.get("cache_n"):
            raise BenchFailure(f"{what}: {timings['cache_n']} prompt tokens came from the prompt cache; "
                               "every measured run must process its prompt afresh")
        draft_n = timings.get("draft_n")
        kept = {k: float(v) for k, v in sorted(timings.items()) if isinstance(v, int | float) and not isinstance(v, bool)}
        return Run(float(timings["predicted_per_second"]), int(timings["predicted_n"]), int(timings["prompt_n"]),
                   float(timings["prompt_per_second"]), ttft,
                   int(draft_n) if draft_n is not None else None,
                   int(timings["draft_n_accepted"]) if draft_n is not None else None, kept)
    if not isinstance(usage, dict) or "completion_tokens" not in usage:
        raise BenchFailure(f"{what}: the answer carries no usage (token counts)")
    tokens, prompt_tokens = int(usage["completion_tokens"]), int(usage.get("prompt_tokens", 0))
    after = _metrics(client) if before is not None else None
    if before is not None and after is not None and after.get(VLLM_DECODE, 0) > before.get(VLLM_DECODE, 0):
        decode = after[VLLM_DECODE] - before.get(VLLM_DECODE, 0.0)
        prefill = after.get(VLLM_PREFILL, 0.0) - before.get(VLLM_PREFILL, 0.0)
        drafts = after.get(VLLM_DRAFTS, 0.0) - before.get(VLLM_DRAFTS, 0.0)
        accepted = after.get(VLLM_ACCEPTED, 0.0) - before.get(VLLM_ACCEPTED, 0.0)
        spec = VLLM_DRAFTS in after
        kept = {"decode_s": decode, "prefill_s": prefill, "completion_tokens": float(tokens),
                "prompt_tokens": float(prompt_tokens), **({"draft_tokens": drafts, "accepted_tokens": accepted} if spec else {})}
        # decode time runs from the first token to the last: the tokens after the first
        return Run((tokens - 1) / decode, tokens, prompt_tokens, prompt_tokens / prefill if prefill > 0 else None,
                   ttft, int(drafts) if spec else None, int(accepted) if spec else None, kept)
    if first is None or last is None or last <= first:
        raise BenchFailure(f"{what}: too few streamed chunks to time the generation")
    return Run((tokens - 1) / (last - first), tokens, prompt_tokens, None, ttft)


def bench(client: Client, method: Method, progress: Callable[[str], None] = lambda _: None,
          server: Server | None = None) -> Result:
    """Warm-ups, then the measured runs; any failure ends the bench (BenchFailure, exit 1)."""
    server = server or probe(client)
    result = Result(server, method)
    total = method.warmups + method.runs
    for i in range(total):
        warm = i < method.warmups
        if i == method.warmups:
            result.started = utc_now()
        label = f"warm-up {i + 1} of {method.warmups}" if warm else f"run {i - method.warmups + 1} of {method.runs}"
        run = complete(client, server, method, fresh_prompt(method, f"olares-pack bench {label}"), method.max_tokens, label)
        extra = f", drafts {run.draft_accepted}/{run.draft_n}" if run.draft_n is not None else ""
        progress(f"{label}: {run.tokens_per_s:.2f} tokens/s ({run.tokens} tokens{extra})")
        if not warm:
            result.runs.append(run)
    result.ended = utc_now()
    return result
