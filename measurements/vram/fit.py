"""From the GPU runs to the estimator: measurements.json, the fitted constants, the residuals.

    .venv/bin/python measurements/vram/fit.py [--check]

Reads measurements/vram/measurements.raw.json (what measure.py wrote on the GPU machine:
runs that boot and fill the context once, population "boot and fill") and
measurements/vram/runtime.raw.json (runtime.py: sequences of requests with long generations
and accepted MTP drafts, population "run time"), writes measurements/vram/measurements.json (one entry
per run: configuration, build, GPU, the synthetic model's numbers, each measured term,
`boot_mib`, the peak as `measured_mib`, llama.cpp's own projection as `llamacpp_fit_mib`,
olares-pack's `estimated_mib`; run-time runs add `run_time`: acceptance, tokens, requests and the
memory around every request), fits the constants (olares_pack/vram/fit.py; the synthetic model's numbers and the
build before PR #23907: olares_pack/vram/calibration.py) into
olares_pack/data/vram-fit.json, and prints every run with its residual. `--check` writes nothing
and exits 1 when either file is not what the runs give.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from olares_pack.vram import builds, synth  # noqa: E402
from olares_pack.vram import estimate as vram  # noqa: E402
from olares_pack.vram import fit as vramfit  # noqa: E402
from olares_pack.vram.calibration import BEFORE_MEASURED, MEASURED, settings, synthetic_meta  # noqa: E402
from olares_pack.vram.calibration import before_reservation as fit_before  # noqa: E402
from olares_pack.vram.gguf_meta import ModelMeta  # noqa: E402

RAW, OUT, FIT = HERE / "measurements.raw.json", HERE / "measurements.json", ROOT / "olares_pack" / "data" / "vram-fit.json"
RUNTIME_RAW = HERE / "runtime.raw.json"
BEFORE_RAW = HERE / "runtime-b9294.raw.json"  # a build before llama.cpp PR #23907 (runtime.py --build b9294)
assert BEFORE_RAW.relative_to(ROOT).as_posix() in BEFORE_MEASURED
MIB = 1024 * 1024


def terms_of(raw: dict[str, Any], meta: ModelMeta) -> dict[str, Any]:
    """The CUDA buffers llama-server reported, in order: model, main KV, RS, main compute, then the
    draft's KV and compute (reserved twice with the same size: counted once). Runs without the
    report (the first call ran at the default log level) get the exact terms from the architecture
    and leave compute to the fit (what boot minus the CUDA context leaves)."""
    cuda = [b for b in raw["buffers"] if b["device"][4:].isdigit() and b["device"].startswith("CUDA")]  # not CUDA_Host
    if not cuda:
        est = vram.estimate(meta, settings(raw["config"]), vram.Device("H200", 143771, 0), measured_gpu=True)
        by = {t.name: t.mib for t in est.terms}
        return {"source": "architecture", "weights_mib": round(by["weights"], 2), "kv_mib": round(by["KV cache"], 2),
                "rs_mib": round(by.get("recurrent state", 0.0), 2)}
    kinds: dict[str, list[float]] = {}
    for b in cuda:
        kinds.setdefault(b["kind"], []).append(b["mib"])
    t = {"source": "buffers", "weights_mib": kinds["model"][0], "kv_mib": kinds["KV"][0], "rs_mib": kinds.get("RS", [0.0])[0],
         "compute_mib": kinds["compute"][0]}
    if len(kinds["KV"]) > 1:
        t["draft_kv_mib"] = kinds["KV"][1]
        t["draft_compute_mib"] = kinds["compute"][1]
    t["cuda_buffers_mib"] = round(sum(v for k, v in t.items() if k.endswith("_mib")) + sum(kinds.get("output", [])), 2)
    return t


def llamacpp_fit_mib(raw: dict[str, Any]) -> float | None:
    out = ((raw.get("llamacpp_fit") or {}).get("stdout") or "").split()
    if len(out) >= 4 and out[0].startswith("CUDA"):
        return float(out[1]) + float(out[2]) + float(out[3])
    return None


def run_time(raw: dict[str, Any]) -> dict[str, Any]:
    """What a run-time run did and the memory around each of its requests."""
    reqs = []
    for q in raw["requests"]:
        t = q.get("timings") or {}
        reqs.append({"prompt_tokens": q["prompt_tokens"], "cached_tokens": t.get("cache_n", 0), "follow_up": q["follow_up"],
                     "tokens_predicted": q["tokens_predicted"], "draft_n": t.get("draft_n", 0),
                     "draft_n_accepted": t.get("draft_n_accepted", 0), "seconds": round(q["t_end_s"] - q["t_start_s"], 1),
                     "before_mib": q["before_mib"], "peak_mib": q["peak_mib"], "after_mib": q["after_mib"]})
    drafted, accepted = sum(q["draft_n"] for q in reqs), sum(q["draft_n_accepted"] for q in reqs)
    device = None
    if "version" in raw:  # a device-* job: the ballast left what the Olares One leaves llama-server
        device = {"version": raw["version"], "free_target_mib": raw["free_target_mib"], "free_mib": raw["free_smi_mib"],
                  "headroom_at_peak_mib": round(raw["free_smi_mib"] - raw["peak_mib"], 1),
                  "crash": raw.get("crash"), "stopped": raw.get("stopped")}
    return {"job": raw["job"], "synthetic_weights": raw["accept"], "cuda_graphs": raw["graphs"], "device": device,
            "expected_accepted_share": round(synth.accepted_share(raw["accept"], raw["draft_n"]), 4),
            "accepted_share": round(accepted / drafted, 4) if drafted else None,
            "requests_n": len(reqs), "tokens_generated": sum(q["tokens_predicted"] for q in reqs),
            "drafts": drafted, "drafts_accepted": accepted,
            "growth_after_first_request_mib": max((g for *_, g in vramfit.runtime_points({"run_time": {"requests": reqs}})), default=None),
            "memory_source": raw["memory_source"], "requests": reqs}


def build() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    raws = json.loads(RAW.read_text())
    entries = []
    for raw in raws:
        cfg = raw["config"]
        meta = synthetic_meta(cfg["layers"])
        entries.append({
            "config": cfg, "build": raw["build"], "gpu": raw["gpu"], "argv": raw["argv"], "group": raw["group"],
            "population": vramfit.BOOT_FILL,
            "model": {k: v for k, v in meta.to_dict().items() if v not in (None, "")},
            "terms": terms_of(raw, meta),
            "boot_mib": raw["boot_mib"], "measured_mib": raw["measured_mib"],
            "llamacpp_fit_mib": llamacpp_fit_mib(raw),
            "fill_tokens": sum((f.get("tokens_evaluated") or 0) for f in raw["fill"]),
        })
    for raw in json.loads(RUNTIME_RAW.read_text()):
        cfg = raw["config"]
        meta = synthetic_meta(cfg["layers"])
        rt = run_time(raw)
        entries.append({
            "config": cfg, "build": raw["build"], "gpu": raw["gpu"], "argv": raw["argv"], "group": "run-time",
            "population": vramfit.RUN_TIME,
            "model": {k: v for k, v in meta.to_dict().items() if v not in (None, "")},
            "terms": terms_of(raw, meta),
            "boot_mib": raw["boot_mib"], "measured_mib": raw["peak_mib"], "llamacpp_fit_mib": None,
            "fill_tokens": max(q["prompt_tokens"] + q["tokens_predicted"] for q in rt["requests"]),
            "run_time": rt,
        })
    constants = vramfit.fit(entries)
    fit = {"source": MEASURED, "build": entries[0]["build"],
           "gpu": entries[0]["gpu"].split(",")[0] + f", driver {entries[0]['gpu'].split(',')[-1].strip()}",
           "layers_measured": sorted({e["config"]["layers"] for e in entries if e["population"] == vramfit.BOOT_FILL}),
           "constants": constants, "residuals": {"worst_abs_pct": 0.0}}
    return entries, fit


def estimate_all(entries: list[dict[str, Any]], fit: dict[str, Any]) -> list[float]:
    """olares-pack's estimate of every run with these constants."""
    return [round(vram.estimate(ModelMeta(**e["model"]), settings(e["config"]), vram.Device("H200", 143771, 0),
                                measured_gpu=True, fit=fit, filled=vramfit.filled_per_slot(e)).total_mib, 1) for e in entries]


def band(entries: list[dict[str, Any]], estimates: list[float]) -> dict[str, Any]:
    rel = [abs(est - e["measured_mib"]) / e["measured_mib"] * 100 for e, est in zip(entries, estimates, strict=True)]
    return {"runs": len(rel), "worst_abs_pct": round(max(rel), 2), "median_abs_pct": round(statistics.median(rel), 2)}


def boot_band(entries: list[dict[str, Any]], fit: dict[str, Any]) -> dict[str, Any]:
    """The estimate's boot terms against the memory measured once /health answered."""
    boots = [vram.estimate(ModelMeta(**e["model"]), settings(e["config"]), vram.Device("H200", 143771, 0),
                           measured_gpu=True, fit=fit).boot_mib for e in entries]
    rel = [abs(b - e["boot_mib"]) / e["boot_mib"] * 100 for e, b in zip(entries, boots, strict=True)]
    return {"runs": len(rel), "worst_abs_pct": round(max(rel), 2), "median_abs_pct": round(statistics.median(rel), 2)}


def residuals(entries: list[dict[str, Any]], fit: dict[str, Any]) -> dict[str, Any]:
    """In-sample residuals per flash-attention mode (the estimator's band), and an out-of-sample
    check: the constants fitted without the 16-layer runs, tried on them."""
    for e, est in zip(entries, estimate_all(entries, fit), strict=True):
        e["estimated_mib"] = est
    out: dict[str, Any] = {}
    for mode in ("on", "off"):
        chosen = [e for e in entries if e["config"]["fa"] == mode]
        out[f"fa_{mode}"] = band(chosen, [e["estimated_mib"] for e in chosen])
    out["worst_abs_pct"] = max(out["fa_on"]["worst_abs_pct"], out["fa_off"]["worst_abs_pct"])
    fill = [e for e in entries if e["population"] == vramfit.BOOT_FILL]
    runtime = [e for e in entries if e["population"] == vramfit.RUN_TIME]
    out["populations"] = {"boot": boot_band(entries, fit), "fill": band(fill, [e["estimated_mib"] for e in fill]),
                          "run_time": band(runtime, [e["estimated_mib"] for e in runtime])}
    small = [e for e in entries if e["config"]["layers"] < 16]
    big = [e for e in entries if e["config"]["layers"] == 16]
    held = {**fit, "constants": vramfit.fit(small)}
    out["held_out_16_layers"] = band(big, estimate_all(big, held))
    # the boot and fill constants come from 4-16 layers: the 64-layer runs (the example model's depth) are held out
    deep = [e for e in entries if e["config"]["layers"] == 64]
    if deep:
        out["held_out_64_layers"] = band(deep, [e["estimated_mib"] for e in deep])
    return out


def main() -> None:
    entries, fit = build()
    fit["residuals"] = residuals(entries, fit)
    fit[builds.BEFORE] = fit_before(json.loads(BEFORE_RAW.read_text()), fit)
    out_text = json.dumps(entries, indent=1, sort_keys=True) + "\n"
    fit_text = json.dumps(fit, indent=1, sort_keys=True) + "\n"
    print(f"{'layers':>6} {'ctx':>7} {'cache':>5} {'fa':>3} {'np':>2} {'ub':>5} {'mtp':>3} {'measured':>9} {'estimate':>9} "
          f"{'resid':>7} {'llama.cpp fit':>13}")
    for e in entries:
        c = e["config"]
        r = (e["estimated_mib"] - e["measured_mib"]) / e["measured_mib"] * 100
        lf = f"{e['llamacpp_fit_mib']:.0f}" if e["llamacpp_fit_mib"] else "-"
        print(f"{c['layers']:>6} {c['ctx']:>7} {c['cache']:>5} {c['fa']:>3} {c['parallel']:>2} {c['ubatch']:>5} {c['draft_n']:>3} "
              f"{e['measured_mib']:>9.0f} {e['estimated_mib']:>9.0f} {r:>+6.1f}% {lf:>13}")
    print(f"constants: {json.dumps(fit['constants'])}")
    print(f"residuals: {json.dumps(fit['residuals'])}")
    print(f"before {builds.PR} ({fit[builds.BEFORE]['build']}): {json.dumps({k: v for k, v in fit[builds.BEFORE].items() if k != 'source'})}")
    if "--check" in sys.argv:
        stale = [p for p, text in ((OUT, out_text), (FIT, fit_text)) if not p.exists() or p.read_text() != text]
        if stale:
            raise SystemExit(f"stale: {', '.join(str(p.relative_to(ROOT)) for p in stale)} (run measurements/vram/fit.py)")
        return
    FIT.parent.mkdir(exist_ok=True)
    OUT.write_text(out_text)
    FIT.write_text(fit_text)


if __name__ == "__main__":
    main()
