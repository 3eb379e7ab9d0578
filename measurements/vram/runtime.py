"""Measure llama-server's GPU memory at run time: long generations with accepted MTP drafts,
request after request, on the synthetic GGUFs of olares_pack/vram/synth.py (`--accept zero|full|mix|mix80`).

On the GPU machine (standard library and NVML through nvidia-ml-py; gguf-py for synth.py):

    python measurements/vram/runtime.py SERVER MODELS_DIR OUT_DIR [--only JOB,...] [--seconds S]

Every job boots one llama-server (262,144 tokens, q4_0 cache, -ub 512, one slot, flash attention,
MTP with draft n 3 or 5, CUDA graphs on or off through GGML_CUDA_DISABLE_GRAPHS) and sends it
requests one after the other:

- `accept-*`: one 2,048-token prompt and 512 generated tokens, to read the accepted share from
  llama-server's own timings (`draft_n`, `draft_n_accepted`);
- `seq-*`: ten requests with fresh prompts of 2K to 32K tokens, 2,000 generated tokens each;
- `long-*`: one 250,000-token prompt with 2,000 generated tokens, then follow-up turns that
  resend the conversation (prompt + the generated tokens + 1,000 new ones) with the prompt cache
  on, until the context is nearly full.

- `device-*` (part 2 of issue #26): the example app's 1.0.5, 1.0.7 and 1.0.8 configurations
  (their argv: 262,144 tokens, q4_0, -b/-ub 512, one slot, draft n 5) at 64 layers, each with a
  ballast process that holds the GPU's memory so that exactly what an Olares One leaves
  llama-server is free (24,463 MiB minus the assumed 300 MiB desktop reserve, corrected by the
  difference between the version's weights and the synthetic model's: weights are a static
  allocation). The configuration that crashed on devices (1.0.5, CUDA graphs on, every draft
  accepted) gets the 250K conversation (a 250,000-token prompt, two cached follow-ups, two fresh
  32K prompts: 5.5 minutes at 64 layers, the prompt alone 211 s); the others a 32K prompt, two
  cached follow-ups and three fresh 8K prompts, 2,000 generated tokens each (about 2 minutes),
  since the growth while filling did not depend on the tokens filled (4K to 262K);
  `device-pressure-*` leaves only PRESSURE_MIB above the peak 1.0.5 reached, for twelve
  requests. A crash is recorded with its request, its time, the exit status and the server
  log's error lines (`crash`).

- `seq64-*` (part 3 of issue #26, run with `--build b9294`, a build from before llama.cpp PR #23907):
  1.0.5 behind its ballast, ten fresh prompts of 8K-32K with 2,000 generated tokens each, CUDA
  graphs on and off (and `-noballast`); `seq64-pressure-*` leave PRESSURE_SEQ_MIB free above
  the boot of seq64-1.0.5-full-n5-graphs and send prompts up to 128K, to see where a build that
  grows with the context runs out.

A thread reads the server process's GPU memory through NVML every 50 ms for the whole life of the
server; each request records the memory before it, its peak, the memory after it, and its
timings. OUT_DIR/runtime.json is rewritten after every request, so a job cut short keeps what it
measured, and jobs already in it are skipped. OUT_DIR/samples.json holds every 50 ms sample.
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
sys.path.insert(0, str(HERE))

import measure  # noqa: E402

try:  # on the GPU machine synth.py is copied beside this script (runtime.sh)
    import synth
except ImportError:  # in the checkout
    from olares_pack.vram import synth

LAYERS = 8
# Part 2: the device's memory and the example app's versions (apps/llamacppqwen36mtpone history;
# file sizes as published, decimal GB; token_embd as in the synthetic model, Q4_K)
ONE_TOTAL_MIB, DESKTOP_RESERVE_MIB = 24463, 300
VERSIONS = {"1.0.5": 14.92e9, "1.0.8": 14.8e9, "1.0.7": 12.3e9}
SEQ_PROMPTS = [2048, 4096, 8192, 16384, 32768, 3072, 6144, 12288, 24576, 32768]
SEQ64_PROMPTS = [8192, 16384, 32768, 12288, 24576, 8192, 16384, 32768, 12288, 24576]
PRESSURE_MIB = 64
PRESSURE_SEQ_MIB, PRESSURE_SEQ_PROMPTS = 512, [8192, 16384, 32768, 65536, 131072]
RT = {"layers": LAYERS, "ctx": 262144, "cache": "q4_0", "fa": "on", "parallel": 1, "ubatch": 512}


def jobs() -> dict[str, dict[str, Any]]:
    """Every job by name, in the order they run."""
    out: dict[str, dict[str, Any]] = {}
    for accept in ("full", "mix", "zero"):
        for n in (3, 5):
            out[f"accept-{accept}-n{n}"] = {"kind": "accept", "accept": accept, "draft_n": n, "graphs": True}
    for graphs in (True, False):
        for n in (3, 5):
            for accept in ("full", "mix"):
                out[f"seq-{accept}-n{n}-{'graphs' if graphs else 'nographs'}"] = {
                    "kind": "seq", "accept": accept, "draft_n": n, "graphs": graphs}
    for accept, n, graphs in (("full", 5, True), ("mix", 5, True), ("mix", 5, False), ("full", 3, True)):
        out[f"long-{accept}-n{n}-{'graphs' if graphs else 'nographs'}"] = {
            "kind": "long", "accept": accept, "draft_n": n, "graphs": graphs}
    for n in (5, 3):
        out[f"seq-zero-n{n}-graphs"] = {"kind": "seq", "accept": "zero", "draft_n": n, "graphs": True}
    # about 400 s each at 64 layers (the 250K prompt alone about 4 minutes): one or two a call,
    # the version that crashed on devices first
    for version, accept, graphs in (("1.0.5", "full", True), ("1.0.8", "full", True), ("1.0.5", "full", False),
                                    ("1.0.5", "mix", True), ("1.0.7", "full", True)):
        out[f"device-{version}-{accept}-n5-{'graphs' if graphs else 'nographs'}"] = {
            "kind": "device", "accept": accept, "draft_n": 5, "graphs": graphs, "layers": 64, "version": version,
            "long": (version, accept, graphs) == ("1.0.5", "full", True)}
    # memory pressure: 1.0.5 with only PRESSURE_MIB free above the peak device-1.0.5-full-n5-graphs
    # reached, twelve requests: whether anything allocates more when the GPU is nearly full
    out["device-pressure-1.0.5-full-n5-graphs"] = {"kind": "device", "accept": "full", "draft_n": 5, "graphs": True,
                                                   "layers": 64, "version": "1.0.5", "long": False, "pressure": True}
    # the top of 1.0.5's recorded acceptance (0.75-0.80), with drafts accepted 2, 4 or 5 at a time
    out["device-1.0.5-mix80-n5-graphs"] = {"kind": "device", "accept": "mix80", "draft_n": 5, "graphs": True,
                                           "layers": 64, "version": "1.0.5", "long": False}
    # the build before PR #28549 (run with --build b9265): 1.0.5 behind its ballast, ten fresh
    # prompts of 8K-32K with 2,000 generated tokens each, CUDA graphs on and off; then, where the
    # memory grows, the same without the ballast (how it grows per request)
    for accept, graphs, ballast in (("full", True, True), ("full", False, True), ("mix80", True, True),
                                    ("full", True, False)):
        name = f"seq64{'' if ballast else '-noballast'}-1.0.5-{accept}-n5-{'graphs' if graphs else 'nographs'}"
        out[name] = {"kind": "device", "accept": accept, "draft_n": 5, "graphs": graphs, "layers": 64,
                     "version": "1.0.5", "long": False, "seq64": True, "ballast": ballast}
    # where a build that grows with the context in use runs out: only PRESSURE_SEQ_MIB free above
    # the boot of seq64-1.0.5-full-n5-graphs, prompts up to 128K, CUDA graphs on and off
    for graphs in (True, False):
        out[f"seq64-pressure-1.0.5-full-n5-{'graphs' if graphs else 'nographs'}"] = {
            "kind": "device", "accept": "full", "draft_n": 5, "graphs": graphs, "layers": 64, "version": "1.0.5",
            "long": False, "seq64": True, "prompts": PRESSURE_SEQ_PROMPTS, "pressure_seq": True}
    return out


def synthetic_gpu_weights_mib(layers: int) -> float:
    """The synthetic model's weights on the GPU with MTP on: every tensor but token_embd."""
    return sum(synth.nbytes(shape, q) for name, shape, q in synth.tensors(layers, True) if name != "token_embd.weight") / 2**20


def free_for(version: str, layers: int) -> float:
    """MiB to leave free for llama-server: what the Olares One leaves it, minus what the version's
    weights take beyond the synthetic model's."""
    token_embd = synth.nbytes((synth.N_EMBD, synth.N_VOCAB), synth.Q)
    weights = (VERSIONS[version] - token_embd) / 2**20
    return ONE_TOTAL_MIB - DESKTOP_RESERVE_MIB - (weights - synthetic_gpu_weights_mib(layers))


BALLAST = """
import sys, time
import cupy
target = float(sys.argv[1]) * 2**20
free, _ = cupy.cuda.runtime.memGetInfo()
n = int(free - target)
ptr = cupy.cuda.runtime.malloc(n) if n > 0 else 0
print(f"ballast {max(n, 0) / 2**20:.0f} MiB, free {cupy.cuda.runtime.memGetInfo()[0] / 2**20:.0f} MiB", flush=True)
time.sleep(1e9)
"""


def start_ballast(free_mib: float) -> tuple[subprocess.Popen[str], str]:
    """A process that allocates the GPU's memory down to free_mib (cudaMalloc commits it)."""
    proc = subprocess.Popen([sys.executable, "-c", BALLAST, str(free_mib)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("ballast"):
        proc.kill()
        raise RuntimeError(f"the ballast did not allocate: {line!r}")
    return proc, line


class Sampler(threading.Thread):
    """The process's GPU memory (MiB) every 50 ms, per process through NVML; where NVML lists no
    process (a sandbox that hides them) the device's used memory above the baseline instead."""

    def __init__(self, pid: int, baseline: float) -> None:
        super().__init__(daemon=True)
        import pynvml

        pynvml.nvmlInit()
        self.nv = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.pid, self.baseline, self.t0 = pid, baseline, time.monotonic()
        self.samples: list[tuple[float, float, float]] = []  # (s since start, process MiB, device MiB)
        self.source = "nvml-process"
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def read(self) -> tuple[float | None, float]:
        dev = self.nv.nvmlDeviceGetMemoryInfo(self.handle).used / 2**20
        try:
            procs = self.nv.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except self.nv.NVMLError:
            procs = []
        for p in procs:
            if p.pid == self.pid and p.usedGpuMemory is not None:
                return p.usedGpuMemory / 2**20, dev
        return None, dev

    def run(self) -> None:
        while not self.stop.is_set():
            proc, dev = self.read()
            if proc is None:
                self.source = "nvml-device-minus-baseline"
                proc = dev - self.baseline
            with self.lock:
                self.samples.append((round(time.monotonic() - self.t0, 3), round(proc, 1), round(dev, 1)))
            self.stop.wait(0.05)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def window(self, t_from: float, t_to: float) -> list[float]:
        with self.lock:
            return [m for t, m, _ in self.samples if t_from <= t <= t_to]

    def last(self) -> float:
        with self.lock:
            return self.samples[-1][1] if self.samples else 0.0


def post(url: str, doc: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(doc).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def model(models: Path, accept: str, layers: int = LAYERS) -> Path:
    path = models / f"qwen35-{layers}L-mtp-{accept}.gguf"
    if not path.exists():
        t = time.monotonic()
        synth.write(path, layers, True, accept)
        print(f"wrote {path.name} in {time.monotonic() - t:.0f} s", flush=True)
    return path


def requests_of(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The requests of a job: fresh prompts (`prompt` tokens) or follow-ups (`follow` new tokens
    after the conversation so far)."""
    if job["kind"] == "accept":
        return [{"prompt": 2048, "n_predict": 512}]
    if job["kind"] == "seq":
        return [{"prompt": n, "n_predict": 2000} for n in SEQ_PROMPTS]
    if job.get("seq64"):
        return [{"prompt": n, "n_predict": 2000} for n in job.get("prompts", SEQ64_PROMPTS)]
    if job.get("pressure"):
        return ([{"prompt": 32768, "n_predict": 2000}] + [{"follow": 1000, "n_predict": 2000}] * 2
                + [{"prompt": 8192, "n_predict": 2000}] * 9)
    if job["kind"] == "device" and not job["long"]:
        return ([{"prompt": 32768, "n_predict": 2000}] + [{"follow": 1000, "n_predict": 2000}] * 2
                + [{"prompt": 8192, "n_predict": 2000}] * 3)
    if job["kind"] == "device":
        return ([{"prompt": 250000, "n_predict": 2000}] + [{"follow": 1000, "n_predict": 2000}] * 2
                + [{"prompt": 32768, "n_predict": 2000}] * 2)
    return [{"prompt": 250000, "n_predict": 2000}] + [{"follow": 1000, "n_predict": 2000}] * 3


def run_job(name: str, job: dict[str, Any], server: str, models: Path, deadline: float, record: dict[str, Any],
            save: Any) -> None:
    cfg = {**RT, "layers": job.get("layers", LAYERS), "draft_n": job["draft_n"]}
    if "version" in job:  # the app's argv: --batch-size 512 (measure.argv's default is 2048)
        cfg["batch"] = 512
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = model(models, job["accept"], cfg["layers"])
    ballast = None
    if "version" in job and job.get("ballast", True):
        record["free_target_mib"] = round(job.get("free_mib") or free_for(job["version"], cfg["layers"]), 1)
        ballast, record["ballast"] = start_ballast(record["free_target_mib"])
        record["free_smi_mib"] = measure.device_free()
        print(f"  {name}: {record['ballast']} (target {record['free_target_mib']} MiB)", flush=True)
    elif "version" in job:
        record["free_smi_mib"] = measure.device_free()
    cmd = measure.argv(server, path, cfg, port)
    env = dict(os.environ)
    env.pop("GGML_CUDA_DISABLE_GRAPHS", None)
    if not job["graphs"]:
        env["GGML_CUDA_DISABLE_GRAPHS"] = "1"
    baseline = measure.device_used() or 0.0
    log_path = models / f"{name}.log"
    record.update(job=name, **job, config=cfg, argv=cmd[1:], baseline_mib=baseline,
                  env={"GGML_CUDA_DISABLE_GRAPHS": env.get("GGML_CUDA_DISABLE_GRAPHS")}, requests=[])
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    sampler = Sampler(proc.pid, baseline)
    sampler.start()
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(name)
    try:
        while True:
            if proc.poll() is not None:
                record["crash"] = {"request": None, "t_s": round(sampler.now(), 2), "exit": proc.returncode,
                                   "when": "boot"}
                raise RuntimeError(f"llama-server exited with {proc.returncode} before /health")
            if sampler.now() > 240:
                raise RuntimeError("no /health within 240 s")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        time.sleep(0.5)
        record["boot_s"] = round(sampler.now(), 1)
        record["boot_mib"] = sampler.last()
        convo: list[int] = []
        for i, rq in enumerate(requests_of(job)):
            left = deadline - time.monotonic()
            # 250K: 41 s of prompt at 8 layers; an 8K prompt took 4.9 times as long at 64 layers as at 8
            if left < 45 or (rq.get("prompt", 0) > 100000 and left < 60 + 6 * cfg["layers"]):
                record["stopped"] = f"deadline before request {i}"
                break
            if "follow" in rq:
                if len(convo) + rq["follow"] + rq["n_predict"] > cfg["ctx"] - 64:
                    break
                prompt = convo + [rng.randrange(1000, 248000) for _ in range(rq["follow"])]
            else:
                prompt = [rng.randrange(1000, 248000) for _ in range(rq["prompt"])]
            before = sampler.last()
            t1 = sampler.now()
            entry: dict[str, Any] = {"i": i, "prompt_tokens": len(prompt), "n_predict": rq["n_predict"],
                                     "follow_up": "follow" in rq, "t_start_s": round(t1, 2), "before_mib": before}
            try:
                r = post(f"{base}/completion", {"prompt": prompt, "n_predict": rq["n_predict"], "ignore_eos": True,
                                                "temperature": 0, "cache_prompt": True, "return_tokens": True},
                         max(30.0, deadline - time.monotonic()))
                entry["timings"] = r.get("timings")
                entry["tokens_predicted"] = r.get("tokens_predicted")
                toks = r.get("tokens") or []
                entry["first_tokens"] = toks[:12]
                convo = prompt + toks
            except Exception as exc:  # noqa: BLE001 - recorded; a crash ends the job below
                entry["error"] = str(exc)
                try:  # a server that crashed mid-request: give it the moment it takes to exit
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
                entry["server_exit"] = proc.poll()
                if entry["server_exit"] is not None:
                    record["crash"] = {"request": i, "t_s": round(sampler.now(), 2), "exit": entry["server_exit"],
                                       "when": "request", "prompt_tokens": len(prompt)}
            t2 = sampler.now()
            time.sleep(0.3)
            window = sampler.window(t1, sampler.now())
            entry.update(t_end_s=round(t2, 2), peak_mib=max(window, default=before), after_mib=sampler.last())
            t = entry.get("timings") or {}
            entry["accepted_share"] = round(t["draft_n_accepted"] / t["draft_n"], 4) if t.get("draft_n") else None
            record["requests"].append(entry)
            save()
            print(f"  {name} #{i} prompt {len(prompt)} pred {entry.get('tokens_predicted')} "
                  f"draft {t.get('draft_n')}/{t.get('draft_n_accepted')} cache {t.get('cache_n')} "
                  f"mem {before:.0f} -> peak {entry['peak_mib']:.0f} -> {entry['after_mib']:.0f} "
                  f"({t2 - t1:.1f} s) {entry.get('error', '')}", flush=True)
            if "error" in entry:
                break
    except Exception as exc:  # noqa: BLE001
        record["error"] = str(exc)
    finally:
        record["exit_before_stop"] = proc.poll()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        sampler.stop.set()
        sampler.join()
        if ballast is not None:
            ballast.kill()
            ballast.wait()
    log = log_path.read_text(errors="replace")
    record["buffers"] = measure.buffers(log)
    record["memory_source"] = sampler.source
    record["samples"] = sampler.samples
    record["peak_mib"] = max((m for _, m, _ in sampler.samples), default=None)
    record["log_errors"] = [ln for ln in log.splitlines()
                            if re.search(r"error|out of memory|CUDA|graph", ln, re.I) and "buffer size" not in ln][-40:]
    record["log_tail"] = log[-2500:]
    save()


def accepting(runs: list[dict[str, Any]], accept: str) -> bool:
    """Whether the acceptance check of this model came out as synth.accepted_share predicts (within
    0.1), or was not run: measuring long sequences on a model that does not accept would spend
    the GPU time on what the zero model already shows."""
    checks = [(r["draft_n"], q["accepted_share"]) for r in runs if r.get("kind") == "accept" and r.get("accept") == accept
              for q in r.get("requests", []) if q.get("accepted_share") is not None]
    return all(abs(share - synth.accepted_share(accept, n)) <= 0.1 for n, share in checks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("server")
    ap.add_argument("models", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", default="", help="comma-separated job names or prefixes")
    ap.add_argument("--seconds", type=float, default=1e9, help="start nothing after this many seconds")
    ap.add_argument("--build", default="b11434", help="the llama.cpp build SERVER was built from (recorded)")
    args = ap.parse_args()
    args.models.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.seconds
    res_path, smp_path = args.out / "runtime.json", args.out / "samples.json"
    runs: list[dict[str, Any]] = json.loads(res_path.read_text()) if res_path.exists() else []
    samples: dict[str, Any] = json.loads(smp_path.read_text()) if smp_path.exists() else {}
    # a crash is an outcome, and a device job cut by the deadline keeps what it measured (its 250K
    # prompt alone is most of a call)
    done = {r.get("job") for r in runs if r.get("crash") or (r.get("requests") and not r.get("error") and (
        not r.get("stopped") or r.get("kind") == "device"))}
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    wanted = [p for p in args.only.split(",") if p]
    for name, job in jobs().items():
        if name in done or (wanted and not any(name == w or name.startswith(w) for w in wanted)):
            continue
        if deadline - time.monotonic() < 60:
            print(f"deadline: stopping before {name}", flush=True)
            break
        runs = [r for r in runs if r.get("job") != name]
        record: dict[str, Any] = {"build": args.build, "gpu": gpu}
        runs.append(record)

        def save(runs: list[dict[str, Any]] = runs, record: dict[str, Any] = record, name: str = name) -> None:
            slim = [{k: v for k, v in r.items() if k != "samples"} for r in runs]
            if "samples" in record:
                samples[name] = record["samples"]
            res_path.write_text(json.dumps(slim, indent=1))
            smp_path.write_text(json.dumps(samples, separators=(",", ":")))

        if job["accept"] != "zero" and job["kind"] != "accept" and not accepting(runs, job["accept"]):
            print(f"skipping {name}: the {job['accept']} model did not accept drafts as designed", flush=True)
            runs.remove(record)
            continue
        # pressure jobs leave free what a reference run used (its peak or its boot) plus a margin
        pressure = [(ref_job, key, margin) for flag, ref_job, key, margin in (
            ("pressure", "device-1.0.5-full-n5-graphs", "peak_mib", PRESSURE_MIB),
            ("pressure_seq", "seq64-1.0.5-full-n5-graphs", "boot_mib", PRESSURE_SEQ_MIB)) if job.get(flag)]
        if pressure:
            ref_job, key, margin = pressure[0]
            ref = [r.get(key) for r in runs if r.get("job") == ref_job and r.get(key)]
            if not ref:
                print(f"skipping {name}: {ref_job} has not run", flush=True)
                runs.remove(record)
                continue
            job = {**job, "free_mib": ref[0] + margin}
        t = time.monotonic()
        run_job(name, job, args.server, args.models, deadline, record, save)
        reqs = record["requests"]
        acc = [q["accepted_share"] for q in reqs if q.get("accepted_share") is not None]
        print(f"{name}: boot {record.get('boot_mib')} peak {record.get('peak_mib')} free {record.get('free_smi_mib')} "
              f"crash {record.get('crash')} requests {len(reqs)} "
              f"accepted {min(acc, default=None)}..{max(acc, default=None)} in {time.monotonic() - t:.0f} s "
              f"{record.get('error', '')} {record.get('stopped', '')}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
