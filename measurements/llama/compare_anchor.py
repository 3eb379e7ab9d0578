"""Our harness against llama-benchy on the same server, from an interleaved H200 run
(h200_interleave.sh): per round the tokens/s of each, the means, their difference, and the
prompt sizes the server logged for each tool's requests (the workload the two compared: equal
prompts, or the comparison compares different work).

    python3 measurements/llama/compare_anchor.py measurements/llama/runs/interleave-b
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

from olares_pack.bench.welch import welch


def main(folder: Path) -> int:
    ours: list[float] = []
    theirs: list[float] = []
    per_round: list[int] = []  # the harness's requests a round (warm-ups and runs), in the log's order
    for h in sorted(folder.glob("harness-*.json")):
        b = h.with_name(h.name.replace("harness", "benchy"))
        if not b.exists():
            continue
        hdoc = json.loads(h.read_text())
        hr = [run["tokens_per_s"] for run in hdoc["runs"]]
        per_round.append(int(hdoc["method"].get("warmups") or 0) + len(hr))
        br = json.loads(b.read_text())["benchmarks"][0]["tg_throughput"]["values"]
        print(f"{h.stem.split('-')[1]}: harness {', '.join(f'{x:.2f}' for x in hr)} | "
              f"llama-benchy {', '.join(f'{x:.2f}' for x in br)}")
        ours += hr
        theirs += br
    log = (folder / "server.log").read_text(errors="replace")
    logged = [int(n) for n in re.findall(r"prompt eval time =\s+[\d.]+ ms /\s+(\d+) tokens", log)]
    mo, mt = statistics.mean(ours), statistics.mean(theirs)
    print(f"means: harness {mo:.2f} t/s ({len(ours)} runs), llama-benchy {mt:.2f} t/s ({len(theirs)} runs): "
          f"{(mo - mt) / mt * 100:+.2f} % (target within 2 %)")
    if len(ours) > 1 and len(theirs) > 1:
        w = welch(theirs, ours)
        print(f"harness − llama-benchy: 95 % CI {w.low / mt * 100:+.2f} … {w.high / mt * 100:+.2f} % (Welch, df {w.df:.1f}): "
              f"{'within noise' if not w.real else 'a real difference'}")
    # rounds run harness then llama-benchy: each round's first requests in the log are the harness's
    harness_sizes: list[int] = []
    benchy_sizes: list[int] = []
    per = len(logged) // len(per_round) if per_round and len(logged) % len(per_round) == 0 else None
    if per is None:
        print(f"prompt sizes the server logged (tokens, both tools): {sorted(set(logged))}")
        return 0
    for r, n in enumerate(per_round):
        chunk = logged[r * per:(r + 1) * per]
        harness_sizes += chunk[:n]
        benchy_sizes += chunk[n:]
    print(f"prompt sizes the server logged, harness (tokens): {_span(harness_sizes)}")
    print(f"prompt sizes the server logged, llama-benchy (tokens; its warm-up and latency probes included): "
          f"{_span(benchy_sizes)}")
    return 0


def _span(sizes: list[int]) -> str:
    return f"{', '.join(map(str, sizes))} ({len(sizes)} requests, in order)" if sizes else "none"


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
