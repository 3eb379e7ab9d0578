"""Write the example app's published figures of 1.0.5 – 1.0.9 as bench records (run once; kept
for provenance: the records under apps/llamacppqwen36mtpone/bench/ are its output).

    .venv/bin/python measurements/history/published_records.py apps/llamacppqwen36mtpone

Every figure is the maintainer's, as published with the version (app.yaml's changelog notes carry
the summaries; the per-run lists are those of the app's performance history). None was measured
here, and the records say so in `source`.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from olares_pack.bench import records
from olares_pack.bench.records import MethodRecord, Published, Record, RunFigures, Soak

DEVICE = "Olares One (RTX 5090 Laptop GPU, 24 GB)"
METHOD = MethodRecord(runs=10, warmups=2, max_tokens=2000, temperature=0.6, top_p=0.95, top_k=20, min_p=0.0,
                      prompt_name="space-invaders", description="Space Invaders HTML prompt, 2000 generated tokens, "
                      "temperature 0.6, top_p 0.95, top_k 20, min_p 0; 10 consecutive runs, one user")
NOTES = "published by the maintainer (aamsellem) in the release notes of llamacppqwen36mtpone {v} (app.yaml changelog)"
RUNS = "published by the maintainer (aamsellem) with llamacppqwen36mtpone {v}: the per-run figures of its performance history"

V107 = [68.60, 71.25, 75.24, 68.46, 76.25, 71.30, 73.12, 68.51, 73.92, 74.70]
V109 = [74.90, 72.60, 75.01, 74.32, 74.31, 73.73, 73.87, 75.14, 74.35, 74.62]
V109_DRAFTS = [1668, 1713, 1653, 1663, 1660, 1672, 1668, 1639, 1659, 1650]
V109_ACCEPTED = [1442, 1428, 1447, 1444, 1445, 1441, 1442, 1452, 1446, 1448]


def published() -> dict[str, Record]:
    base = {"device": DEVICE, "engine": "llama-server", "method": METHOD}
    return {
        "1.0.5": Record(date=dt.date(2026, 5, 9), source=NOTES.format(v="1.0.5"), engine_build="pre-merge MTP branch (PR #22673)",
                        published=Published(tokens_per_s=77, acceptance_min=0.75, acceptance_max=0.80),
                        soak=Soak(outcome="oom", ctx_size=262144, message="boots and benches fine; users then hit CUDA "
                                  "out of memory (exit 139) during MTP drafting at run time"), **base),
        "1.0.6": Record(date=dt.date(2026, 5, 10), source=NOTES.format(v="1.0.6"), engine_build="pre-merge MTP branch (PR #22673)",
                        published=Published(tokens_per_s=65), note="never shipped: a stable fallback at half the context",
                        **base),
        "1.0.7": Record(date=dt.date(2026, 5, 12), source=RUNS.format(v="1.0.7"), engine_build="pre-merge MTP branch (PR #22673)",
                        runs=[RunFigures(tokens_per_s=t) for t in V107], note="stable at the full 262K context with MTP",
                        **base),
        "1.0.8": Record(date=dt.date(2026, 5, 12), source=NOTES.format(v="1.0.8"), engine_build="pre-merge MTP branch (PR #22673)",
                        published=Published(tokens_per_s=72.75, tokens_per_s_min=69.30, tokens_per_s_max=75.95, acceptance=0.64),
                        note="stable at 262K", **base),
        "1.0.9": Record(date=dt.date(2026, 5, 21), source=RUNS.format(v="1.0.9"), engine_build="llama.cpp master ad27757",
                        runs=[RunFigures(tokens_per_s=t, draft_n=d, draft_accepted=a)
                              for t, d, a in zip(V109, V109_DRAFTS, V109_ACCEPTED, strict=True)],
                        note="stable at 262K", **base),
    }


def main(app_dir: Path) -> None:
    for version, rec in published().items():
        if records.read(app_dir, version) is None:
            print(records.append(app_dir, app_dir.name, version, rec))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
