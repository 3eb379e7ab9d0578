"""A server that answers like llama-server b11434's OpenAI-compatible API (GET /v1/models, /props,
/health; POST /v1/completions streamed as server-sent events ending in `timings` and [DONE]),
with per-request timings given by the test, so that a bench's means, ranges and acceptance can be
checked exactly. It can also die in the middle of an answer, or answer like vLLM (`usage` and
Prometheus /metrics instead of timings). `cycling` and `drifting` make the per-request timings of
a server whose speed alternates between two states (the 5-fast/4-slow kind) or slides run after
run."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _timing(tps: float, i: int) -> dict[str, Any]:
    return {"prompt_n": 120, "prompt_per_second": 400.0, "predicted_n": 2000, "predicted_per_second": tps,
            "draft_n": 1600, "draft_n_accepted": 1400 + i % 3}


def cycling(fast: float, slow: float, n_fast: int, n_slow: int, requests: int, warmups: int = 0) -> list[dict[str, Any]]:
    """n_fast requests at `fast` tokens/s, then n_slow at `slow`, over and over, the measured runs
    starting the cycle (after `warmups` requests at `fast`); a little jitter that stays in its state."""
    period = n_fast + n_slow
    out = [_timing(fast, i) for i in range(warmups)]
    for i in range(requests):
        base = fast if i % period < n_fast else slow
        out.append(_timing(base + (i % 3 - 1) * 0.05 * abs(fast - slow) / 10, i))
    return out


def drifting(start: float, step: float, requests: int, warmups: int = 0) -> list[dict[str, Any]]:
    """Each measured request `step` tokens/s from the one before (negative: slowing down), with a
    small jitter that alternates."""
    out = [_timing(start, i) for i in range(warmups)]
    out += [_timing(start + step * i + (0.1 if i % 2 else -0.1), i) for i in range(requests)]
    return out


class FakeLlama:
    def __init__(self, timings: list[dict[str, Any]], *, die_at: int | None = None, vllm: bool = False,
                 chunks: int = 4) -> None:
        self.timings = timings  # one per request, in order (warm-ups included)
        self.die_at = die_at  # request index whose answer stops mid-stream
        self.vllm = vllm
        self.chunks = chunks
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []  # the paths asked for with GET (a probe is one)
        self.metrics = {"vllm:request_decode_time_seconds_sum": 0.0, "vllm:request_prefill_time_seconds_sum": 0.0,
                        "vllm:spec_decode_num_draft_tokens_total": 0.0, "vllm:spec_decode_num_accepted_tokens_total": 0.0}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _json(self, doc: Any, status: int = 200) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake.gets.append(self.path)
                if self.path == "/v1/models":
                    self._json({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "llamacpp"}]})
                elif self.path == "/props" and not fake.vllm:
                    self._json({"build_info": "b11434-fake", "model_path": "/models/fake-Q4_K_M.gguf",
                                "default_generation_settings": {}})
                elif self.path == "/version" and fake.vllm:
                    self._json({"version": "0.20.0"})
                elif self.path == "/metrics" and fake.vllm:
                    text = "".join(f"# TYPE {k} counter\n{k}{{model_name=\"fake-model\"}} {v}\n" for k, v in fake.metrics.items())
                    body = text.encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif self.path == "/health":
                    self._json({"status": "ok"})
                else:
                    self._json({"error": {"code": 404, "message": "File Not Found"}}, 404)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                index = len(fake.requests)
                fake.requests.append(body)
                t = fake.timings[index]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for i in range(fake.chunks):
                    chunk = {"choices": [{"index": 0, "text": f"tok{i} ", "finish_reason": None}], "object": "text_completion"}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if fake.die_at == index and i == 1:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                final: dict[str, Any] = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
                if fake.vllm:
                    final["usage"] = {"prompt_tokens": t["prompt_n"], "completion_tokens": t["predicted_n"]}
                    m = fake.metrics
                    m["vllm:request_decode_time_seconds_sum"] += (t["predicted_n"] - 1) / t["predicted_per_second"]
                    m["vllm:request_prefill_time_seconds_sum"] += t["prompt_n"] / t["prompt_per_second"]
                    m["vllm:spec_decode_num_draft_tokens_total"] += t.get("draft_n", 0)
                    m["vllm:spec_decode_num_accepted_tokens_total"] += t.get("draft_n_accepted", 0)
                else:
                    final["timings"] = {"cache_n": 0, "prompt_n": t["prompt_n"], "prompt_per_second": t["prompt_per_second"],
                                        "prompt_ms": t["prompt_n"] / t["prompt_per_second"] * 1000,
                                        "predicted_n": t["predicted_n"], "predicted_per_second": t["predicted_per_second"],
                                        "predicted_ms": t["predicted_n"] / t["predicted_per_second"] * 1000,
                                        **({"draft_n": t["draft_n"], "draft_n_accepted": t["draft_n_accepted"]}
                                           if "draft_n" in t else {})}
                self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeLlama:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
