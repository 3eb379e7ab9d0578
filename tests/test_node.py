"""A real node runs the bundled apps (issue #50): kubelet, containerd and runc, the stand-in images
and model, the fake GPU. One node for the module (pytest-xdist --dist loadscope keeps a module on
one worker): each bundled app installed on each line and user form, asked through its entrance's
Service, upgraded without a second download; a broken engine argv and a RollingUpdate GPU
Deployment fail the run with the engine's and the scheduler's own words; a node killed by SIGTERM
or SIGKILL leaves nothing behind.

The kill tests run first, before the module's node starts: iptables' KUBE-* chains are host-wide,
so whether a dead node left any can only be seen while no other node runs."""

from __future__ import annotations

import io
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import semver

from olares_pack.cluster import node as nodemod

ROOT = Path(__file__).resolve().parent.parent
LLAMA = "llamacppqwen36mtpone"
VLLM = "vllmqwen36turbo27bone"

_why = nodemod.unavailable()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no node here: {_why}")


# ------------------------------------------------------------------ helpers


def published(app: str) -> tuple[list[str], dict[str, list[str]], dict[tuple[str, str], bytes]]:
    from olares_pack.catalogue import checks, records
    from olares_pack.catalogue.repo import Repo

    repo = Repo.of_apps(ROOT / "apps")
    with repo.open(write=False):
        versions = records.versions(repo, app)
        recs = {v: records.read(repo, app, v) for v in versions}
        lines: dict[str, list[str]] = {}
        for v, rec in recs.items():
            for t in rec.charts:
                lines.setdefault(t, []).append(v)
        charts = {(v, t): checks.published_bytes(repo, recs[v], t)[0] for t, vs in lines.items() for v in vs}
    return versions, lines, charts


def patched(data: bytes, edit: Callable[[str, str], str]) -> bytes:
    """A chart archive with edit(path, text) applied to each text file."""
    src = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as dst:
        for m in src.getmembers():
            f = src.extractfile(m) if m.isfile() else None
            if f is None:
                dst.addfile(m)
                continue
            raw = f.read()
            try:
                raw = edit(m.name, raw.decode()).encode()
            except UnicodeDecodeError:
                pass
            m.size = len(raw)
            dst.addfile(m, io.BytesIO(raw))
    return out.getvalue()


def netfilter_left(before: dict) -> list[str]:
    """KUBE-* chains and netfilter tables the host has now and did not have when the node started
    (its state file's record), read with iptables-save and nft rather than the node's own reader."""
    left = []
    for save, family in (("iptables-save", "ip"), ("ip6tables-save", "ip6")):
        if shutil.which(save) is None:
            continue
        table = ""
        for line in subprocess.run([save], capture_output=True, text=True, check=False).stdout.splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":KUBE-") and line[1:].split()[0] not in (before.get(f"{family} {table}") or []):
                left.append(f"chain {family} {table} {line[1:].split()[0]}")
    if shutil.which("nft") and before.get("tables") is not None:
        listing = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=False).stdout
        left += [f"netfilter {line}" for line in listing.splitlines()
                 if line.startswith("table ") and line.removeprefix("table ").strip() not in before["tables"]]
    return left


def leftovers(folder: Path, state: dict) -> list[str]:
    """What a stopped node left: processes naming its folder, the folder, mounts under it, its
    bridge, its cgroup root; KUBE-* chains and netfilter tables where no other node runs."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(folder).encode() in (entry / "cmdline").read_bytes():
                    stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if stat != "Z":
                        left.append(f"process {entry.name}")
            except OSError:
                pass
    if folder.exists():
        left.append(f"folder {folder}")
    if str(folder) in Path("/proc/self/mountinfo").read_text():
        left.append("mounts")
    if subprocess.run(["ip", "link", "show", state["bridge"]], capture_output=True, check=False).returncode == 0:
        left.append(f"bridge {state['bridge']}")
    left += [f"cgroup {p}" for p in Path("/sys/fs/cgroup").glob(f"*/{state['cgroup_root'].strip('/')}")]
    if not nodemod._others_alive(folder):
        left += netfilter_left(state.get("netfilter") or {})
    return left


CHILD = textwrap.dedent("""
    import json, sys, time
    from olares_pack.cluster import node
    with node.running() as n:
        # a pod running: its containerd shim and its containers outlive a SIGKILLed node
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"},
               "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "s", "image": "registry.k8s.io/pause:3.10"}]}}
        deadline = time.monotonic() + 60
        while n.cluster.request("POST", "/api/v1/namespaces/default/pods", pod)[0] != 201:
            assert time.monotonic() < deadline, "the pod was not accepted"
            time.sleep(0.3)
        while (n.cluster.get("/api/v1/namespaces/default/pods/sleeper") or {}).get("status", {}).get("phase") != "Running":
            assert time.monotonic() < deadline, "the pod did not start"
            time.sleep(0.3)
        print(json.dumps({"folder": str(n.folder), **json.loads((n.folder / "state.json").read_text())}), flush=True)
        time.sleep(600)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_node_leaves_nothing(sig: signal.Signals) -> None:
    import json

    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert child.stdout is not None
    try:
        state = json.loads(child.stdout.readline())
        folder = Path(state["folder"])
        assert folder.is_dir() and any(x.startswith("process") for x in leftovers(folder, state))
        child.send_signal(sig)
        child.wait(timeout=90)
    finally:
        if child.poll() is None:
            child.kill()
    if sig == signal.SIGKILL:
        # The kernel stops the node's programs (parent-death signal); a container's shim, which
        # containerd started detached, stays for the next start's sweep. Waiting for it to go took
        # the whole 20 s every time: wait until no program has exited for a second.
        def programs() -> set[str]:
            return {x for x in leftovers(folder, state) if x.startswith("process")}

        deadline, alive = time.monotonic() + 20, programs()
        quiet_since = time.monotonic()
        while alive and time.monotonic() - quiet_since < 1.0 and time.monotonic() < deadline:
            time.sleep(0.2)
            now = programs()
            if now != alive:
                alive, quiet_since = now, time.monotonic()
        nodemod.sweep()  # what the next start does first
    assert leftovers(folder, state) == []


# ------------------------------------------------------------------ the module's node


@pytest.fixture(scope="module")
def node() -> Iterator[nodemod.Node]:
    t0 = time.monotonic()
    with nodemod.running() as n:
        print(f"node Ready in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        yield n


def run_app(node: nodemod.Node, app: str, charts: dict[tuple[str, str], bytes], lines: dict[str, list[str]],
            version: str, froms: list[str] | None = None):  # noqa: ANN201 - a live.LiveReport
    from olares_pack.rehearse import live

    return live.run(node, app, version, lines, lambda v, t: charts.get((v, t)), froms)


def model_files(app: str, version: str) -> set[tuple[str, str]]:
    """(repo, file) of each model file a published version downloads (its release record)."""
    from olares_pack.catalogue import records
    from olares_pack.catalogue.repo import Repo

    repo = Repo.of_apps(ROOT / "apps")
    with repo.open(write=False):
        model = records.read(repo, app, version).manifest["model"]
    names = [f["name"] for f in model.get("files") or []] or ([model["file"]] if model.get("file") else [])
    return {(model["repo"], n) for n in names}


def chart_file(data: bytes, name: str) -> str:
    """One file of a chart archive (its path below the chart's folder)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        member = next(m for m in tar.getmembers() if m.name.split("/", 1)[-1] == name)
        f = tar.extractfile(member)
        assert f is not None
        return f.read().decode()


def _changelog(app: str):  # noqa: ANN202 - the manifest's changelog entries
    from olares_pack.apps.load import load_app

    return load_app(ROOT / "apps" / app).changelog


def show(report) -> None:  # noqa: ANN001 - a live.LiveReport
    for s in report.steps:
        print(f"{s.line} {s.action} {s.label} ({s.user}): ok={s.ok} downloads={s.downloads} seconds={s.seconds} "
              f"{s.note.strip()} {s.error[:300]}", file=sys.stderr)


def test_the_llama_app_installs_answers_and_upgrades_from_every_published_version(node: nodemod.Node) -> None:
    """Olares 1.12.6+: the newest version installed fresh and asked through its entrance Service,
    then every older published version installed, answering where its engine is the stand-in's
    build, and upgraded: the new engine answers, and a model file the old version downloaded is
    not downloaded again (1.0.9 and 1.0.10 kept it flat in the store: model.adopt links it in);
    1.0.5-1.0.8 used other model files, which the new version downloads once."""
    versions, lines, charts = published(LLAMA)
    newest = versions[-1]
    froms = [v for v in lines["current"] if v != newest and (v, "current") in charts]
    report = run_app(node, LLAMA, charts, {"current": lines["current"]}, newest, froms)
    show(report)
    installs = [s for s in report.steps if s.action == "install"]
    upgrades = {s.from_version: s for s in report.steps if s.action == "upgrade"}
    assert report.ok, [(s.action, s.label, s.error, s.engine_log[-5:]) for s in report.steps if not s.ok]
    assert installs and all(s.served == "unsloth/Qwen3.6-27B-MTP-GGUF:UD-Q3_K_XL" and s.answer for s in installs)
    assert all(s.downloads == 1 for s in installs)  # the model, sha256 checked by the download
    assert set(upgrades) == set(froms) and len(froms) >= 9
    mine = model_files(LLAMA, newest)
    for v, s in upgrades.items():
        assert s.answer, (v, s.error)
        if model_files(LLAMA, v) == mine:
            assert s.downloads == 0, (v, s.downloads, s.note)
        else:
            assert s.downloads == len(mine) and "downloads its own model" in s.note, (v, s.downloads, s.note)
    assert {"1.0.9", "1.0.10"} <= {v for v, s in upgrades.items() if s.downloads == 0}  # the 1.0.15 fix
    assert any("llama-server" in s for s in report.standins.values())
    assert "lowered" in " ".join(report.changes)


def test_the_llama_app_runs_on_the_legacy_line_for_both_users(node: nodemod.Node) -> None:
    """Olares 1.12.3-1.12.5: the administrator's shared engine (a v2 shared sub-chart) and each
    user's client proxy to it, reached by its cluster DNS name: installed fresh for both users,
    then upgraded from every older published version of the line."""
    versions, lines, charts = published(LLAMA)
    newest = versions[-1]
    froms = [v for v in lines["legacy"] if v != newest and (v, "legacy") in charts]
    report = run_app(node, LLAMA, charts, {"legacy": lines["legacy"]}, newest, froms)
    show(report)
    installs = [s for s in report.steps if s.action == "install"]
    assert [s.user for s in installs] == ["alice", "bob"] and all(s.ok for s in installs), \
        [(s.user, s.error, s.engine_log[-5:]) for s in installs]
    assert all(s.answer and s.served == "qwen3.6-27b-mtp" for s in installs)  # bob's client reaches alice's engine
    upgrades = [s for s in report.steps if s.action == "upgrade"]
    assert {s.from_version for s in upgrades} == set(froms)
    # a per-user version (apiVersion v1) cannot be upgraded in place to the shared form: app-service's
    # "single chart to multi-charts" path installs the shared chart, then reports the release it
    # did not find, and the changelog tells those users to uninstall first (1.0.14's entry)
    per_user = {v for v in froms if re.search(r"^apiVersion:\s*['\"]?v2", chart_file(charts[(v, "legacy")],
                                                                                  "OlaresManifest.yaml"), re.M) is None}
    assert per_user and per_user < set(froms)
    for s in upgrades:
        if s.from_version in per_user:
            assert not s.ok and ("release: not found" in s.error or "alice's step failed" in s.error), (s.label, s.error)
        else:
            assert s.ok and s.downloads == 0 and s.answer, (s.label, s.user, s.error, s.engine_log[-5:])
    assert [s.user for s in upgrades if s.ok][:2] == ["alice", "bob"]  # bob's client reaches the upgraded engine
    entries = " ".join(c.text for e in _changelog(LLAMA) for c in e.changes)
    assert "On 1.0.11-legacy or earlier: uninstall the app first" in entries
    assert max(per_user, key=semver.Version.parse) == "1.0.11"
    assert any("OpenResty" in v for v in report.standins.values())


def test_an_engine_argv_llama_server_refuses_fails_the_run(node: nodemod.Node) -> None:
    """`-fa` takes a value: `-fa --mtp-head x` makes llama-server read `--mtp-head` as -fa's value."""
    versions, lines, charts = published(LLAMA)
    newest = versions[-1]
    broken = patched(charts[(newest, "current")], lambda _p, t: t.replace("--flash-attn on", "-fa --mtp-head x"))
    report = run_app(node, LLAMA, {(newest, "current"): broken}, {"current": [newest]}, newest, [])
    step = report.steps[0]
    assert not report.ok and not step.ok
    assert "exited with" in step.error
    assert any("--mtp-head" in ln or "invalid" in ln.lower() or "error" in ln.lower() for ln in step.engine_log), \
        (step.error, step.engine_log)


def test_a_rolling_update_gpu_deployment_cannot_upgrade_on_one_gpu(node: nodemod.Node) -> None:
    versions, lines, charts = published(LLAMA)
    newest = versions[-1]
    rolling = patched(charts[(newest, "current")],
                      lambda p, t: t.replace("type: Recreate", "type: RollingUpdate") if p.endswith("engine.yaml") else t)
    # the "new" version changes the engine's pod template, so the upgrade rolls a second pod
    changed = patched(rolling, lambda p, t: t.replace('value: "3600"', 'value: "3601"') if p.endswith("engine.yaml") else t)
    report = run_app(node, LLAMA, {("1.0.13", "current"): rolling, (newest, "current"): changed},
                     {"current": ["1.0.13", newest]}, newest, ["1.0.13"])
    up = [s for s in report.steps if s.action == "upgrade"][0]
    assert not up.ok
    assert "cannot be scheduled" in up.error and "Insufficient nvidia.com/gpu" in up.error


# Where each published version keeps the vLLM model: 2.5.7 and 2.5.8 downloaded it in their init
# container with huggingface_hub's snapshot_download(cache_dir=/models/hub) into
# <appCommon>/huggingface/hub/models--Lorbus--.../ (their templates/configmap.yaml, MODEL_FILES
# empty); 2.5.9 on read llm-init's cache, <appCommon>/huggingface/models--Lorbus--.../. Until a
# version adopts the older copy, an upgrade from these downloads the model again: the test says
# so for them and requires no second download from every other version.
VLLM_IMAGE = "docker.io/aamsellem/vllm-qwen36-blackwell:0.20.0-genesis-v3"


def test_the_vllm_app_installs_answers_and_upgrades_from_every_published_version(node: nodemod.Node) -> None:
    """The newest version installed fresh (a shared app: the administrator installs it, every user
    reaches its shared entrance), asked through its entrance Service; then every older published
    version installed, answering, and upgraded to the newest: the new engine pod answers through
    the Service and the model is not downloaded again (2.5.11 links in the cache 2.5.7/2.5.8 kept).
    The engine is the vLLM stand-in (its argv checked against the flag registry of vLLM 0.20.0),
    the model the hub's tiny safetensors repo (6 files)."""
    from olares_pack.rehearse import hub as hubmod

    versions, lines, charts = published(VLLM)
    newest = versions[-1]
    froms = [v for v in lines["current"] if v != newest and (v, "current") in charts]
    report = run_app(node, VLLM, charts, {"current": lines["current"]}, newest, froms)
    for s in report.steps:
        print(f"{s.action} {s.label} ({s.user}): ok={s.ok} downloads={s.downloads} seconds={s.seconds} "
              f"{s.note.strip()} {s.error[:300]}", file=sys.stderr)
    files = len(hubmod.safetensors_repo())
    installs = [s for s in report.steps if s.action == "install"]
    upgrades = {s.from_version: s for s in report.steps if s.action == "upgrade"}
    assert installs and all(s.ok for s in installs), [(s.label, s.error, s.engine_log[-8:]) for s in installs]
    assert [s.user for s in installs] == ["alice"]  # shared: the administrator's install serves every user
    assert all(s.served == "Lorbus/Qwen3.6-27B-int4-AutoRound" and "vLLM stand-in" in s.answer for s in installs)
    assert all(s.downloads == files for s in installs)  # the whole repo, once
    assert set(upgrades) == set(froms) and len(froms) >= 3
    for v, s in upgrades.items():
        assert s.answer and "old answered" in s.seconds, (v, s.error, s.engine_log[-8:])  # both versions answered
        # 2.5.7/2.5.8 kept the repository in a hub cache of their own: 2.5.11 links it in (model.adopt)
        assert s.ok and s.downloads == 0, (v, s.error, s.downloads, s.engine_log[-8:])
    assert "flag registry of vLLM 0.20.0" in report.standins[VLLM_IMAGE]
    assert [s.ok for s in report.steps if s.action == "uninstall"] == [True]


def test_release_refuses_a_version_whose_engine_does_not_start(node: nodemod.Node,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`release`'s run on the node (rehearse/gate.py run_on_node), on the module's node: the step
    that fails is an error with the engine's own words, and the record keeps what ran."""
    from contextlib import contextmanager

    from olares_pack.catalogue.records import Rehearsal
    from olares_pack.rehearse import gate

    @contextmanager
    def running(log=None) -> Iterator[nodemod.Node]:  # noqa: ANN001, ARG001 - the module's node
        yield node

    monkeypatch.setattr(nodemod, "running", running)
    versions, _lines, charts = published(LLAMA)
    newest = versions[-1]
    broken = patched(charts[(newest, "current")], lambda _p, t: t.replace("--flash-attn on", "-fa --mtp-head x"))
    record = Rehearsal(api_server="kube-apiserver", helm="helm")
    outcomes = gate.run_on_node(record, LLAMA, newest, {"current": [newest]},
                                lambda v, t: broken if (v, t) == (newest, "current") else None)
    errors = [o for o in outcomes if o.severity == "error"]
    assert errors and "failed on the node here" in errors[0].message and "exited with" in errors[0].message
    assert record.ran and not record.ran[0].ok and record.ran[0].engine_log
    assert "llama-server" in record.standins["docker.io/aamsellem/llama-cpp-mtp:master-ad27757"]
    assert record.node and "kubelet" in record.node


# ---- import on the node (issue #50 item 5)
# `import --structured --run` on the module's node: a third-party-style chart (tests/data/import/node/tinychat:
# upstream llama.cpp, its model fetched by a busybox init container from the device's Hugging Face service)
# run both ways, original and typed, then upgraded from the original to the typed render.

TINYCHAT = ROOT / "tests" / "data" / "import" / "node" / "tinychat"


def _import_on(node: nodemod.Node, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
               chart: Path, *extra: str) -> tuple[int, dict]:
    import json
    from contextlib import contextmanager

    from olares_pack.cli import main

    @contextmanager
    def running(log=None) -> Iterator[nodemod.Node]:  # noqa: ANN001, ARG001 - the module's node
        yield node

    monkeypatch.setattr(nodemod, "running", running)
    (tmp_path / "repo" / "apps").mkdir(parents=True)
    capsys.readouterr()
    code = main(["import", str(chart), "--apps-dir", str(tmp_path / "repo" / "apps"), "--date", "2026-12-06",
                 "--structured", "--run", "--format", "json", *extra])
    text = capsys.readouterr().out
    return code, json.loads(text[text.index("{"):])


def test_import_runs_the_original_and_the_typed_render_and_both_answer_alike(
        node: nodemod.Node, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _import_on(node, monkeypatch, capsys, tmp_path, TINYCHAT)
    ran = out["node"]["tinychat"]
    assert code == 0, ran
    assert ran["ran"] and ran["ok"] and not ran["failures"]
    ways = {w["way"]: w for w in ran["ways"]}
    assert (ways["original"]["version"], ways["typed"]["version"]) == ("1.0.1", "1.0.2")
    installs = [s for w in (ways["original"], ways["typed"]) for s in w["steps"] if s["action"] == "install"]
    assert [s["served"] for s in installs] == ["tiny-chat", "tiny-chat"] and all("answered" in s["seconds"] for s in installs)
    assert ways["original"]["entrance"] == ways["typed"]["entrance"] == "tinychat:8080"
    assert ways["original"]["namespaces"] != ways["typed"]["namespaces"]  # each its own namespace and release
    up = ways["upgrade"]
    assert up["from"] == "1.0.1" and up["ok"] and all(s["downloads"] == 0 for s in up["steps"] if s["action"] == "upgrade")
    assert any("busybox" in v for v in ran["standins"].values()) and any("llama-server" in v for v in ran["standins"].values())
    note = next(n for r in out["charts"] for n in r["notes"] if n.startswith("--run:"))
    assert "both answered 'tiny-chat' on tinychat:8080" in note
    assert (tmp_path / "repo" / "apps" / "tinychat" / "app.yaml").is_file()


def test_an_original_that_does_not_start_fails_the_import_with_the_engines_words(
        node: nodemod.Node, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`-fa --jinja`: llama-server reads `--jinja` as -fa's value and refuses it; the typed render
    writes `-fa on --jinja` (a difference of the arguments, accepted here), which starts: the two
    ways do not answer alike, the import fails and writes nothing."""
    import shutil

    chart = tmp_path / "src" / "tinychat"
    shutil.copytree(TINYCHAT, chart)
    deployment = chart / "templates" / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace('"-fa", "on", "--jinja"', '"-fa", "--jinja"'))
    code, out = _import_on(node, monkeypatch, capsys, tmp_path, chart, "--accept=container.args")
    ran = out["node"]["tinychat"]
    assert code == 1 and ran["ran"] and not ran["ok"]
    assert ran["failures"][0].startswith("the original chart (1.0.1, install for alice-orig) failed on the node: ")
    assert "exited with" in ran["failures"][0]
    original = next(w for w in ran["ways"] if w["way"] == "original")
    log = original["steps"][0]["engine_log"]
    assert any("--flash-attn" in ln and "--jinja" in ln for ln in log), log  # llama-server's own error
    assert next(w for w in ran["ways"] if w["way"] == "typed")["ok"]
    assert not (tmp_path / "repo" / "apps" / "tinychat").exists()


def test_an_alpine_init_container_downloads_from_huggingface_co_on_the_node(
        node: nodemod.Node, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The corpus's upstream llama.cpp charts fetch their model with an alpine:3.20 init container
    that wgets https://huggingface.co/... by name (and tries `apk add wget`, allowed to fail): on
    busybox (apk unavailable), huggingface.co answered by the stand-in hub over HTTPS, both ways."""
    import shutil

    chart = tmp_path / "src" / "tinychat"
    shutil.copytree(TINYCHAT, chart)
    deployment = chart / "templates" / "deployment.yaml"
    text = deployment.read_text().replace("docker.io/library/busybox:1.36", "docker.io/alpine:3.20")
    text = text.replace("set -e", "set -e\n              apk add --no-cache wget >/dev/null 2>&1 || true")
    deployment.write_text(text.replace('"$HF_ENDPOINT/', '"https://huggingface.co/'))
    code, out = _import_on(node, monkeypatch, capsys, tmp_path, chart)
    ran = out["node"]["tinychat"]
    assert code == 0 and ran["ran"] and ran["ok"], ran
    assert "apk unavailable" in ran["standins"]["docker.io/alpine:3.20"]
    assert any(c.startswith("huggingface.co answered by the stand-in hub") and "huggingface.co (" in c
               for c in ran["changes"]), ran["changes"]
