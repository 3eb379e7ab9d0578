"""A bench result as data (the JSON `bench --format json` prints) and as the table on stdout."""

from __future__ import annotations

from typing import Any

from olares_pack.bench.harness import Result
from olares_pack.bench.stats import Summary, summarize


def summary_of(result: Result) -> Summary:
    r = result.runs
    return summarize([x.tokens_per_s for x in r], [x.draft_n for x in r], [x.draft_accepted for x in r],
                     [x.prompt_tokens_per_s for x in r], [x.ttft_ms for x in r])


def result_json(result: Result, peak_gpu_mib: float | None = None, gpu_name: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "endpoint": result.server.url, "engine": result.server.kind, "model": result.server.model,
        "engine_build": result.server.build, "method": result.method.to_record(),
        "runs": [r.to_dict() for r in result.runs], "summary": summary_of(result).to_dict()}
    if peak_gpu_mib is not None:
        doc["gpu"] = {"name": gpu_name, "peak_mib": round(peak_gpu_mib, 1)}
    return doc


def table_rows(result: Result) -> list[list[str]]:
    """One row per run, then mean, min, max and σ."""
    def opt(v: float | int | None, fmt: str) -> str:
        return "—" if v is None else format(v, fmt)

    rows = []
    for i, r in enumerate(result.runs, 1):
        acc = f"{r.draft_accepted}/{r.draft_n}" if r.draft_n is not None else "—"
        rows.append([str(i), f"{r.tokens_per_s:.2f}", opt(r.prompt_tokens_per_s, ".1f"), opt(r.ttft_ms, ".0f"),
                     str(r.tokens), acc])
    s = summary_of(result)
    rows.append(["mean", f"{s.mean:.2f}", opt(s.prompt_tokens_per_s, ".1f"), opt(s.ttft_ms, ".0f"), "",
                 s.acceptance_text()])
    rows.append(["min–max", f"{s.min:.2f}–{s.max:.2f}", "", "", "", ""])
    rows.append(["σ", opt(s.stdev, ".2f"), "", "", "", ""])
    return rows


HEADERS = ["run", "tokens/s", "prompt tokens/s", "first token ms", "tokens", "drafts accepted"]
