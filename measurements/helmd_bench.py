"""CPU per Helm call: the CLI (one process per call) against helmd, on one control plane, interleaved.

    .venv/bin/python measurements/helmd_bench.py [N] [ROUNDS]

For the newest published chart of llamacppqwen36mtpone (current line) and a two-object chart, each
engine installs, upgrades and uninstalls N releases per round (rounds alternate which engine goes
first); prints the medians over rounds of the per-call means: the engine's CPU (the CLI processes',
or helmd's own), the API server's, this process's, and the wall time. Needs `make control-plane`.
"""
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from procstat import cpu_seconds

from olares_pack.catalogue import checks, records
from olares_pack.catalogue.repo import Repo
from olares_pack.cluster import controlplane, helmcli, tools
from olares_pack.rehearse import flow

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

name = "llamacppqwen36mtpone"
repo = Repo.at(ROOT)
newest = records.versions(repo, name)[-1]
rec = records.read(repo, name, newest)
data = checks.published_bytes(repo, rec, "current")[0]

with controlplane.running(tools.available()) as c:
    api = next(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
               and str(c.home) in (p / "cmdline").read_bytes().decode(errors="replace")
               and b"kube-apiserver" in (p / "cmdline").read_bytes())
    tmp = Path(tempfile.mkdtemp(prefix="olares-pack-helmd-bench-"))
    plan = flow.chart_plan(data, tmp, "current", name, newest, flow.Names())
    [rel] = plan.releases("alice")
    values = plan.values("alice")
    small = tmp / "small"
    (small / "templates").mkdir(parents=True)
    (small / "Chart.yaml").write_text("apiVersion: v2\nname: small\nversion: 0.1.0\n")
    (small / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 0\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: x}]}\n")
    engines = {"cli": helmcli.Helm(c, tmp, cli=True), "helmd": helmcli.Helm(c, tmp)}
    charts = {"app": (rel.chart, values), "small": (small, {})}
    results = {}  # (engine, chart, op) -> list of per-op (helm cpu, api cpu, python cpu, wall)
    def engine_cpu(e):
        if e == "cli":
            return children_cpu()
        return cpu_seconds(helmcli.daemon_pid(c.kubeconfig))
    # warm-up: each engine, each chart
    for e, h in engines.items():
        for ch, (path, vals) in charts.items():
            assert h.install("w", path, f"warm-{e}-{ch}", vals).ok
            assert h.uninstall("w", f"warm-{e}-{ch}").ok
    for rnd in range(ROUNDS):
        for e in (["cli", "helmd"] if rnd % 2 == 0 else ["helmd", "cli"]):
            h = engines[e]
            for ch, (path, vals) in charts.items():
                nss = [f"m{rnd}-{e}-{ch}-{i}" for i in range(N)]
                for op in ("install", "upgrade", "uninstall"):
                    e0, a0, p0, t0 = engine_cpu(e), cpu_seconds(api), self_cpu(), time.monotonic()
                    for ns in nss:
                        if op == "install":
                            r = h.install(rel.name, path, ns, vals)
                        elif op == "upgrade":
                            r = h.upgrade(rel.name, path, ns, vals)
                        else:
                            r = h.uninstall(rel.name, ns)
                        assert r.ok, r.output
                    e1, a1, p1, t1 = engine_cpu(e), cpu_seconds(api), self_cpu(), time.monotonic()
                    results.setdefault((e, ch, op), []).append(((e1 - e0) / N, (a1 - a0) / N, (p1 - p0) / N, (t1 - t0) / N))
    print(f"N={N} per batch, {ROUNDS} rounds; medians over rounds of per-call means (seconds)")
    print(f"{'chart':6} {'op':9} {'engine':6} {'helm CPU':>9} {'apiserver':>9} {'python':>7} {'wall':>6}")
    for ch in charts:
        for op in ("install", "upgrade", "uninstall"):
            for e in engines:
                rows = results[(e, ch, op)]
                med = [statistics.median(x[i] for x in rows) for i in range(4)]
                print(f"{ch:6} {op:9} {e:6} {med[0]:9.3f} {med[1]:9.3f} {med[2]:7.3f} {med[3]:6.3f}")
    shutil.rmtree(tmp, ignore_errors=True)
