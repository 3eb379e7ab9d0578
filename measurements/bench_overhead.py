"""Harness overhead: does streaming through olares-pack's harness slow the server it measures?

    python3 measurements/bench_overhead.py URL [PAIRS] [MAX_TOKENS] [--json OUT]

Against a running llama-server, PAIRS times (default 5): one completion through the harness
(streamed, parsed chunk by chunk) and one plain non-streamed request with the same method, in the
order A B, B A, A B, ... (a drifting server favours neither),
each read from the server's own `timings.predicted_per_second`. Prints the medians and their
ratio (the target: the harness costs at most 1 % of the server-reported tokens/s), and the
harness's own CPU time per run. Standard library only: it runs on the GPU machine too.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from olares_pack.bench import harness
from olares_pack.bench.method import Method


def plain(client: harness.Client, server: harness.Server, method: Method, max_tokens: int) -> float:
    body = harness.request_body(server, method, harness.fresh_prompt(method, "plain"), max_tokens) | {"stream": False}
    body.pop("stream_options")
    status, data = client.post("/v1/completions", body, timeout=600)
    if status != 200:
        sys.exit(f"plain request: HTTP {status}: {data[:200]!r}")
    return float(json.loads(data)["timings"]["predicted_per_second"])


def main(argv: list[str]) -> int:
    url = argv[0]
    pairs = int(argv[1]) if len(argv) > 1 and not argv[1].startswith("--") else 5
    max_tokens = int(argv[2]) if len(argv) > 2 and not argv[2].startswith("--") else 2000
    out = Path(argv[argv.index("--json") + 1]) if "--json" in argv else None
    client = harness.Client(url)
    server = harness.probe(client)
    method = Method(max_tokens=max_tokens)
    harness.complete(client, server, method, harness.fresh_prompt(method, "warm-up"), max_tokens, "warm-up")
    ours, theirs, cpu = [], [], []
    for i in range(pairs):
        if i % 2:  # A B, then B A: a server that speeds up or slows down over time favours neither
            theirs.append(plain(client, server, method, max_tokens))
        c0 = time.process_time()
        run = harness.complete(client, server, method, harness.fresh_prompt(method, f"pair {i}"), max_tokens, f"pair {i}")
        cpu.append((time.process_time() - c0) / (run.tokens / run.tokens_per_s))
        ours.append(run.tokens_per_s)
        if not i % 2:
            theirs.append(plain(client, server, method, max_tokens))
        print(f"pair {i + 1}: harness {ours[-1]:.2f}  plain {theirs[-1]:.2f} tokens/s", file=sys.stderr, flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    doc = {"server": server.kind, "build": server.build, "pairs": pairs, "max_tokens": max_tokens,
           "harness_tokens_per_s": ours, "plain_tokens_per_s": theirs,
           "median_harness": mo, "median_plain": mt, "overhead_pct": (mt - mo) / mt * 100,
           "harness_cpu_share_of_generation_pct": statistics.median(cpu) * 100}
    print(f"median tokens/s: harness {mo:.2f}, plain {mt:.2f}: overhead {doc['overhead_pct']:+.2f} % "
          f"(target ≤ 1 %); harness CPU {doc['harness_cpu_share_of_generation_pct']:.2f} % of the generation time")
    if out:
        out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
