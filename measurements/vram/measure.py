"""Measure llama-server's GPU memory, term by term, on synthetic GGUFs (olares_pack/vram/synth.py).

On the GPU machine (standard library only; gguf-py from the llama.cpp sdist for synth.py):

    python measurements/vram/measure.py run SERVER MODELS_DIR OUT.json [--only GROUP,...] [--build b11434]

For each configuration it starts llama-server (`--fit off`, every layer on the GPU), waits for
/health, reads the process's GPU memory (nvidia-smi) and llama-server's own buffer report (model,
KV, recurrent-state, compute and output buffers, per context: the main one, then the MTP draft's),
then fills every slot's context with a prompt of token ids and samples the process's memory every
50 ms until the answer is back: `measured_mib` is the peak. Each run is appended to OUT.json as it
finishes, so a run cut short keeps what it measured.

Back here, measurements/vram/fit.py turns what it wrote (measurements/vram/measurements.raw.json) into
measurements/vram/measurements.json with olares-pack's estimate beside each run, and fits the constants.
The whole GPU job, build included, is measurements/vram/device.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
K, M = 1024, 1024 * 1024

BASE = {"layers": 8, "ctx": 131072, "cache": "f16", "fa": "on", "parallel": 1, "ubatch": 512, "draft_n": 0}


def configs() -> dict[str, list[dict[str, Any]]]:
    """The configurations, in groups that each fit in one device command."""
    def c(**kw: Any) -> dict[str, Any]:
        return {**BASE, **kw}

    groups: dict[str, list[dict[str, Any]]] = {
        "smoke": [c(layers=4, ctx=4096)],
        "ctx-cache": [c(ctx=ctx, cache=cache) for ctx in (32768, 131072, 262144) for cache in ("f16", "q8_0", "q4_0")],
        "layers": [c(layers=n, ctx=ctx, cache=cache) for n in (4, 16) for ctx in (32768, 262144) for cache in ("f16", "q4_0")],
        "mtp": [c(ctx=ctx, cache="q4_0", draft_n=n) for ctx in (131072, 262144) for n in (3, 5)]
        + [c(layers=n, ctx=262144, cache="q4_0", draft_n=d) for n in (4, 16) for d in (3, 5)],
        "parallel": [c(ctx=ctx, cache=cache, parallel=2) for ctx in (131072, 262144) for cache in ("f16", "q4_0")],
        "ubatch": [c(ctx=ctx, cache=cache, ubatch=2048) for ctx in (32768, 262144) for cache in ("f16", "q4_0")]
        + [c(layers=16, ctx=262144, cache="q4_0", ubatch=2048)],
        "no-fa": [c(ctx=32768, fa="off"), c(ctx=131072, fa="off"), c(ctx=32768, fa="off", ubatch=2048)],
    }
    return groups


def model_path(models: Path, layers: int) -> Path:
    return models / f"qwen35-{layers}L-mtp.gguf"


def argv(server: str, model: Path, cfg: dict[str, Any], port: int) -> list[str]:
    out = [server, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-ngl", "99", "--fit", "off",
           "-c", str(cfg["ctx"]), "-np", str(cfg["parallel"]), "-fa", cfg["fa"], "-ctk", cfg["cache"], "-ctv", cfg["cache"],
           "-ub", str(cfg["ubatch"]), "-b", str(cfg.get("batch", max(2048, cfg["ubatch"]))), "-t", "8", "--no-webui", "-lv", "4"]
    if cfg["draft_n"]:
        out += ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(cfg["draft_n"])]
    return out


def _smi(query: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", query, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                              timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def device_used() -> float | None:
    out = _smi("--query-gpu=memory.used").strip().splitlines()
    return float(out[0]) if out else None


def device_free() -> float | None:
    out = _smi("--query-gpu=memory.free").strip().splitlines()
    return float(out[0]) if out else None


BASELINE = [0.0]
# Tokens sent per slot. The first runs filled every context entirely and the process grew by the
# same 116 MiB whatever the context (measurements/vram/runs/call1-measure.log): later groups fill up
# to --fill-cap tokens to fit the GPU time, except the MTP group, which fills entirely.
FILL_CAP = [1 << 30]  # the device's used memory with no llama-server running


def gpu_used(pid: int) -> float | None:
    """MiB of GPU memory the process holds, as nvidia-smi reports it; where the runtime hides
    processes (gVisor), the device's used memory above the baseline taken before any server ran."""
    for line in _smi("--query-compute-apps=pid,used_memory").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            return float(parts[1])
    total = device_used()
    return None if total is None else total - BASELINE[0]


BUFFER = re.compile(r"(\w+): +(\S+) +(model|KV|RS|compute|output) buffer size = +([\d.]+) MiB")


def buffers(log: str) -> list[dict[str, Any]]:
    """llama-server's buffer report, in the order it printed it (main context, then the draft's)."""
    out = []
    for line in log.splitlines():
        m = BUFFER.search(line)
        if m:
            out.append({"fn": m.group(1), "device": m.group(2), "kind": m.group(3), "mib": float(m.group(4))})
    return out


def post(url: str, doc: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(doc).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def llamacpp_fit(fit_params: str | None, cmd: list[str]) -> dict[str, Any] | None:
    """llama.cpp's own projection for the same file and arguments (llama-fit-params --fit-print:
    device, model, context, compute, in MiB), the second anchor."""
    if not fit_params:
        return None
    args = [a for a in cmd[1:]]
    for flag in ("--host", "--port"):
        i = args.index(flag)
        del args[i:i + 2]
    args = [a for a in args if a not in ("--no-webui",)]
    i = args.index("-lv")
    del args[i:i + 2]
    i = args.index("--fit")
    del args[i:i + 2]
    try:
        r = subprocess.run([fit_params, *args, "--fit-print", "on"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    return {"stdout": r.stdout[-2000:], "rc": r.returncode, "stderr_tail": r.stderr[-1500:] if r.returncode else ""}


def run_one(server: str, models: Path, cfg: dict[str, Any], timeout: float = 240,
            fit_params: str | None = None) -> dict[str, Any]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = argv(server, model_path(models, cfg["layers"]), cfg, port)
    fit = llamacpp_fit(fit_params, cmd)
    log_path = models / "server.log"
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    entry: dict[str, Any] = {"config": cfg, "argv": cmd[1:], "llamacpp_fit": fit}
    try:
        base = f"http://127.0.0.1:{port}"
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode}")
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("no /health within the timeout")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        entry["boot_s"] = round(time.monotonic() - t0, 1)
        time.sleep(0.5)
        entry["boot_mib"] = gpu_used(proc.pid)
        peak = [entry["boot_mib"] or 0.0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                v = gpu_used(proc.pid)
                if v is not None and v > peak[0]:
                    peak[0] = v
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        per_slot = min(cfg["ctx"] // cfg["parallel"] - 64, FILL_CAP[0])
        entry["fill_tokens_per_slot"] = per_slot
        rng = random.Random(cfg["ctx"])
        results: list[Any] = []

        def fill() -> None:
            prompt = [rng.randrange(1000, 248000) for _ in range(per_slot)]
            try:
                r = post(f"{base}/completion", {"prompt": prompt, "n_predict": 16, "ignore_eos": True, "temperature": 0,
                                                "cache_prompt": False}, timeout)
                results.append({k: r.get(k) for k in ("tokens_evaluated", "tokens_predicted", "timings")})
            except Exception as exc:  # noqa: BLE001 - recorded, the next configuration still runs
                results.append({"error": str(exc)})

        t1 = time.monotonic()
        fills = [threading.Thread(target=fill) for _ in range(cfg["parallel"])]
        for f in fills:
            f.start()
        for f in fills:
            f.join()
        done.set()
        sampler.join()
        entry["fill_s"] = round(time.monotonic() - t1, 1)
        entry["fill"] = results
        entry["measured_mib"] = peak[0]
    except Exception as exc:  # noqa: BLE001
        entry["error"] = str(exc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log = log_path.read_text(errors="replace")
    entry["buffers"] = buffers(log)
    entry["buffer_lines"] = [line for line in log.splitlines() if "buffer size" in line][:40]
    entry["log_tail"] = log[-3000:] if "error" in entry else ""
    return entry


def run(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    try:  # on the GPU machine synth.py is copied beside this script
        import synth
    except ImportError:  # in the checkout
        from olares_pack.vram import synth

    groups = configs()
    only = args.only.split(",") if args.only else list(groups)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    out = Path(args.out)
    done = json.loads(out.read_text()) if out.exists() else []
    measured = [json.dumps(e["config"], sort_keys=True) for e in done if "error" not in e]
    BASELINE[0] = device_used() or 0.0
    deadline = time.monotonic() + args.seconds
    for group in only:
        for cfg in groups[group]:
            if json.dumps(cfg, sort_keys=True) in measured:
                continue
            if time.monotonic() > deadline:
                print(f"deadline: stopping before {group} {cfg}", flush=True)
                return
            path = model_path(args.models, cfg["layers"])
            if not path.exists():
                t = time.monotonic()
                synth.write(path, cfg["layers"])
                print(f"wrote {path.name} in {time.monotonic() - t:.0f} s", flush=True)
            FILL_CAP[0] = 1 << 30 if group in ("mtp", "smoke", "ctx-cache", "layers") else args.fill_cap
            entry = run_one(args.server, args.models, cfg, fit_params=args.fit_params)
            entry["baseline_mib"] = BASELINE[0]
            entry.update(group=group, build=args.build, gpu=gpu)
            done.append(entry)
            out.write_text(json.dumps(done, indent=1))
            terms = {}
            for b in entry["buffers"]:
                if b["device"][4:].isdigit():  # CUDA0, not CUDA_Host (pinned host memory)
                    terms[b["kind"]] = terms.get(b["kind"], 0) + b["mib"]
            print(f"{group:<10} {json.dumps(cfg)} boot {entry.get('boot_mib')} peak {entry.get('measured_mib')} "
                  f"{ {k: round(v) for k, v in terms.items()} } {entry.get('error', '')}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("server")
    r.add_argument("models", type=Path)
    r.add_argument("out")
    r.add_argument("--only", default="")
    r.add_argument("--build", default="b11434")
    r.add_argument("--fit-params", default=None, help="llama-fit-params of the same build: its projection is recorded")
    r.add_argument("--fill-cap", type=int, default=1 << 30)
    r.add_argument("--seconds", type=float, default=1e9, help="start no configuration after this many seconds")
    args = ap.parse_args()
    args.models.mkdir(parents=True, exist_ok=True)
    run(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
