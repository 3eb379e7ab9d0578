"""A bench result as data (the JSON `bench --format json` prints) and as the table on stdout, and
the check an imported result must pass before it becomes a record (`bench --from-json`).

The JSON carries everything needed to derive its summary again: the per-run figures with the
timings the server itself reported for each run, the method, the olares-pack that measured, the
engine's build and model file as the server reported them, and when the runs started and ended.
An imported file is believed only as far as it agrees with itself: every run's figures are read
again from its server timings and the summary is computed again from the runs."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from olares_pack import __version__
from olares_pack.bench.harness import Result
from olares_pack.bench.stability import analyse
from olares_pack.bench.stats import Summary, summarize
from olares_pack.common.errors import InputError

TOOL = f"olares-pack {__version__}"
ENGINES = ("llama-server", "vllm")  # the engines whose answers carry their own per-run figures


def summary_of(result: Result) -> Summary:
    r = result.runs
    return summarize([x.tokens_per_s for x in r], [x.draft_n for x in r], [x.draft_accepted for x in r],
                     [x.prompt_tokens_per_s for x in r], [x.ttft_ms for x in r])


def result_json(result: Result, peak_gpu_mib: float | None = None, gpu_name: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "tool": TOOL, "endpoint": result.server.url, "engine": result.server.kind, "model": result.server.model,
        "engine_build": result.server.build, "model_file": result.server.model_file,
        "started": result.started, "ended": result.ended, "method": result.method.to_record(),
        "runs": [r.to_dict() for r in result.runs], "summary": summary_of(result).to_dict(),
        "stability": analyse([r.tokens_per_s for r in result.runs]).to_dict()}
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
    rows.append(["stability", analyse([r.tokens_per_s for r in result.runs]).text(), "", "", "", ""])
    return rows


HEADERS = ["run", "tokens/s", "prompt tokens/s", "first token ms", "tokens", "drafts accepted"]


# ---------------------------------------------------------------- --from-json


@dataclass(frozen=True)
class Checked:
    """An imported result that agrees with itself."""

    doc: dict[str, Any]
    tool: str
    started: dt.datetime
    ended: dt.datetime


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _when(doc: dict[str, Any], key: str, where: str) -> dt.datetime:
    text = doc.get(key)
    try:
        when = dt.datetime.fromisoformat(str(text))
    except ValueError:
        raise InputError(f"{where}: {key}: expected the UTC time `bench --format json` writes (ISO 8601), "
                         f"got {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _run_problem(engine: str, run: dict[str, Any]) -> str | None:
    """Why a run's figures are not what its server timings say; None when they are."""
    t = run.get("timings")
    if not isinstance(t, dict) or not t:
        return "no `timings`: the figures the server reported for the run are missing"
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in t.values()):
        return "timings: expected numbers"
    want: dict[str, float | None] = {}
    if engine == "llama-server":
        if "predicted_per_second" not in t or "predicted_n" not in t:
            return "timings: expected llama-server's predicted_per_second and predicted_n"
        want = {"tokens_per_s": t["predicted_per_second"], "tokens": t["predicted_n"], "prompt_tokens": t.get("prompt_n"),
                "prompt_tokens_per_s": t.get("prompt_per_second"), "draft_n": t.get("draft_n"),
                "draft_accepted": t.get("draft_n_accepted") if t.get("draft_n") is not None else None}
    else:
        if not t.get("decode_s") or "completion_tokens" not in t:
            return "timings: expected vLLM's decode_s and completion_tokens"
        prefill = t.get("prefill_s") or 0
        want = {"tokens_per_s": (t["completion_tokens"] - 1) / t["decode_s"], "tokens": t["completion_tokens"],
                "prompt_tokens": t.get("prompt_tokens"),
                "prompt_tokens_per_s": t["prompt_tokens"] / prefill if prefill > 0 and "prompt_tokens" in t else None,
                "draft_n": t.get("draft_tokens"), "draft_accepted": t.get("accepted_tokens")}
    for key, value in want.items():
        got = run.get(key)
        if value is None and got is None:
            continue
        if value is None or not isinstance(got, int | float) or not _close(float(got), float(value)):
            return f"{key} is {got!r}, its server timings say {value!r}"
    return None


def check_imported(doc: Any, where: str) -> Checked:
    """The imported result, or InputError (exit 2) naming the first field that does not hold."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected the JSON object `bench --format json` writes")
    for key in ("tool", "engine", "method", "runs", "summary", "started", "ended", "engine_build"):
        if key not in doc:
            raise InputError(f"{where}: {key}: missing; an imported result carries what `bench --format json` writes "
                             "(tool, engine, engine_build, started, ended, method, runs with their server timings, "
                             "summary)")
    if not isinstance(doc["tool"], str) or not doc["tool"].startswith("olares-pack "):
        raise InputError(f"{where}: tool: expected the olares-pack that measured (\"olares-pack X.Y.Z\"), got {doc['tool']!r}")
    if doc["engine"] not in ENGINES:
        raise InputError(f"{where}: engine: {doc['engine']!r} reports no per-run figures of its own; only results "
                         f"measured on {' or '.join(ENGINES)} can be imported")
    if not isinstance(doc["engine_build"], str) or not doc["engine_build"]:
        raise InputError(f"{where}: engine_build: expected the build string the server reported")
    started, ended = _when(doc, "started", where), _when(doc, "ended", where)
    if ended < started:
        raise InputError(f"{where}: ended ({doc['ended']}) is before started ({doc['started']})")
    runs = doc["runs"]
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise InputError(f"{where}: runs: expected a list of runs, each with its figures and server timings")
    for i, run in enumerate(runs):
        if (why := _run_problem(doc["engine"], run)) is not None:
            raise InputError(f"{where}: runs.{i}: {why}")
    method = doc["method"]
    if not isinstance(method, dict) or method.get("runs") != len(runs):
        raise InputError(f"{where}: method.runs: {method.get('runs') if isinstance(method, dict) else method!r}, "
                         f"but the file holds {len(runs)} run(s)")
    again = summarize([float(r["tokens_per_s"]) for r in runs], [r.get("draft_n") for r in runs],
                      [r.get("draft_accepted") for r in runs], [r.get("prompt_tokens_per_s") for r in runs],
                      [r.get("ttft_ms") for r in runs]).to_dict()
    said = doc["summary"]
    if not isinstance(said, dict):
        raise InputError(f"{where}: summary: expected the summary `bench --format json` writes")
    for key in sorted(set(again) | set(said)):
        a, b = said.get(key), again.get(key)
        same = a == b or (isinstance(a, int | float) and isinstance(b, int | float) and _close(float(a), float(b)))
        if not same:
            raise InputError(f"{where}: summary.{key}: the file says {a!r}, its runs give {b!r}: "
                             "the summary does not match the runs")
    return Checked(doc, doc["tool"], started, ended)
