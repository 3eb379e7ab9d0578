"""Our harness against llama-benchy on the same server, from an interleaved H200 run
(h200_interleave.sh): per round the tokens/s of each, the means, their difference, and the
prompt sizes the server logged for each tool's requests (the workload the two compared).

    python3 measurements/llama/compare_anchor.py measurements/llama/runs/interleave-b
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path


def main(folder: Path) -> int:
    ours: list[float] = []
    theirs: list[float] = []
    for h in sorted(folder.glob("harness-*.json")):
        b = h.with_name(h.name.replace("harness", "benchy"))
        if not b.exists():
            continue
        hr = [run["tokens_per_s"] for run in json.loads(h.read_text())["runs"]]
        br = json.loads(b.read_text())["benchmarks"][0]["tg_throughput"]["values"]
        print(f"{h.stem.split('-')[1]}: harness {', '.join(f'{x:.2f}' for x in hr)} | "
              f"llama-benchy {', '.join(f'{x:.2f}' for x in br)}")
        ours += hr
        theirs += br
    log = (folder / "server.log").read_text(errors="replace")
    prompts = sorted({int(n) for n in re.findall(r"prompt eval time =\s+[\d.]+ ms /\s+(\d+) tokens", log)})
    mo, mt = statistics.mean(ours), statistics.mean(theirs)
    print(f"means: harness {mo:.2f} t/s ({len(ours)} runs), llama-benchy {mt:.2f} t/s ({len(theirs)} runs): "
          f"{(mo - mt) / mt * 100:+.2f} % (target within 2 %)")
    print(f"prompt sizes the server logged (tokens): {prompts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
