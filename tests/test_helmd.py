"""helmd (olares_pack/cluster/helmd: the Helm SDK as one process per cluster) answers what the Helm
CLI answers for the same call, on a real kube-apiserver (tests/conftest.py control_plane): the
release it stores and prints, the values it coalesces, the manifests it renders, the errors the
server's refusals become; the post-renderer sees the caller's environment; calls from several
threads at once all get their own answers; a process that is SIGKILLed leaves no helmd behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from olares_pack.catalogue import checks, records
from olares_pack.catalogue.repo import Repo
from olares_pack.cluster import helmcli, tools
from olares_pack.cluster.helmcli import Helm
from olares_pack.rehearse import flow
from tests.conftest import ROOT

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-engine
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Values.selector }}}}
  template:
    metadata: {labels: {app: {{ .Values.selector }}}}
    spec:
      containers:
      - name: engine
        image: {{ .Values.image }}
        args: [{{ .Values.ratio | quote }}, {{ .Values.big | quote }}, {{ .Values.port | quote }}]
"""
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-conf}
data:
  values: {{ toJson .Values | quote }}
  helm: {{ .Capabilities.HelmVersion.Version | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  namespace: {{ .Release.Namespace }}
  revision: {{ .Release.Revision | quote }}
  {{- if .Values.slotFromEnv }}
  slot: SLOT
  {{- end }}
"""
HOOK = """apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-hook
  annotations: {"helm.sh/hook": pre-install}
spec:
  template: {spec: {restartPolicy: Never, containers: [{name: h, image: busybox}]}}
"""


def small_chart(folder: Path, version: str = "0.1.0", **extra_defaults: Any) -> Path:
    """A chart whose output shows how values coalesce (numbers of each kind, nested maps), what
    the capabilities say, and a hook (rendered, not run: --no-hooks)."""
    chart = folder / f"small-{version}"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: small\nversion: {version}\n")
    defaults = {"replicas": 1, "selector": "engine", "image": "nginx:1", "ratio": 0.5, "big": 12345678901234,
                "port": 8080, "nested": {"a": 1, "b": [1, 2]}, **extra_defaults}
    (chart / "values.yaml").write_text(json.dumps(defaults))
    (chart / "templates" / "engine.yaml").write_text(DEPLOYMENT)
    (chart / "templates" / "conf.yaml").write_text(CONFIGMAP)
    (chart / "templates" / "hook.yaml").write_text(HOOK)
    return chart


def without_times(rel: dict[str, Any]) -> dict[str, Any]:
    rel = json.loads(json.dumps(rel))
    for key in ("first_deployed", "last_deployed", "deleted"):
        rel["info"].pop(key, None)
    for hook in rel.get("hooks") or []:
        hook.pop("last_run", None)
    return rel


def status_json(h: Helm, release: str, namespace: str) -> dict[str, Any]:
    """`helm status --output json`, as either engine printed it."""
    r = h._call("status", release=release, namespace=namespace) if h.helmd else h.run(
        "status", release, "--namespace", namespace, "--output", "json")
    assert r.ok, r.output
    return without_times(json.loads(r.stdout))


def server_object(cluster, path: str) -> dict[str, Any]:  # noqa: ANN001
    obj = cluster.get(path)
    assert obj is not None, path
    meta = obj["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        meta.pop(key, None)
    for field in meta.get("managedFields") or []:
        field.pop("time", None)
    return obj


@pytest.fixture
def engines(control_plane, tmp_path: Path) -> tuple[Helm, Helm]:
    """(helmd, the CLI) on the same cluster, each with a home of its own."""
    (tmp_path / "d").mkdir()
    (tmp_path / "c").mkdir()
    daemon, cli = Helm(control_plane, tmp_path / "d"), Helm(control_plane, tmp_path / "c", cli=True)
    assert daemon.helmd is not None and cli.helmd is None
    return daemon, cli


def each(engines: tuple[Helm, Helm], namespace: str, steps) -> list[Any]:  # noqa: ANN001
    """The same steps with each engine in turn, on the same namespace (so that every name the
    output carries is the same), the release removed after each."""
    seen = []
    for h in engines:
        seen.append(steps(h))
        assert h.uninstall("small", namespace).ok
    return seen


# ---------------------------------------------------------------- the same answers


def test_a_small_chart_installs_upgrades_and_reads_back_as_with_the_cli(control_plane, engines, tmp_path) -> None:
    v1 = small_chart(tmp_path)
    v2 = small_chart(tmp_path, "0.2.0", added=7, nested={"a": 2, "c": "new"})
    ns = "helmd-small"

    def steps(h: Helm) -> dict[str, Any]:
        out: dict[str, Any] = {}
        r = h.install("small", v1, ns, {"replicas": 2, "ratio": 1.0, "big": 2**53 + 1, "nested": {"b": None}})
        assert r.ok, r.output
        out["install"] = without_times(r.release())
        out["objects"] = [server_object(control_plane, f"/apis/apps/v1/namespaces/{ns}/deployments/small-engine"),
                          server_object(control_plane, f"/api/v1/namespaces/{ns}/configmaps/small-conf")]
        for reuse in (True, False):  # ReuseValues (v1's defaults kept: no `added`), then ResetThenReuseValues
            r = h.upgrade("small", v2, ns, {"image": f"nginx:{2 + reuse}"}, reuse=reuse)
            assert r.ok, r.output
            out[f"upgrade reuse={reuse}"] = without_times(r.release())
        out["status"] = h.status("small", ns)
        out["status json"] = status_json(h, "small", ns)
        out["manifest"] = h.manifest("small", ns)
        out["template"] = h.template("small", v2, ns, {"replicas": 3}).output
        return out

    daemon, cli = each(engines, ns, steps)
    assert daemon["manifest"] == cli["manifest"] and "kind: Deployment" in daemon["manifest"]
    assert daemon == cli
    conf = json.loads(next(o for o in daemon["objects"] if o["kind"] == "ConfigMap")["data"]["values"])
    # as the CLI reads a values file: every number a float64 (2**53 + 1 rounds), a null drops the default
    assert conf["big"] == 2**53 and conf["ratio"] == 1 and "b" not in conf["nested"]
    upgraded = daemon["upgrade reuse=False"]
    assert upgraded["config"] == {"image": "nginx:2", "replicas": 2, "ratio": 1, "big": 2**53, "nested": {"b": None}}
    assert '\\"added\\":7' in upgraded["manifest"] and '\\"added\\":7' not in daemon["upgrade reuse=True"]["manifest"]
    assert daemon["status"] == "deployed" and daemon["status json"]["version"] == 3
    assert "# Source: small/templates/hook.yaml" in daemon["template"]  # hooks printed after the manifests
    fields = daemon["objects"][0]["metadata"]["managedFields"]
    assert [f["manager"] for f in fields] == ["helm"]  # the field manager the CLI names


def _catalogue(name: str) -> tuple[list[str], flow.ChartOf]:
    repo = Repo.at(ROOT)
    published = records.versions(repo, name)
    recs = {v: records.read(repo, name, v) for v in published}

    def chart_of(version: str, target: str) -> bytes | None:
        rec = recs.get(version)
        return checks.published_bytes(repo, rec, target)[0] if rec and target in rec.charts else None

    return published, chart_of


def test_a_published_app_installs_and_its_refused_upgrade_fails_as_with_the_cli(engines, tmp_path) -> None:
    """llamacppqwen36mtpone 1.0.10 -> 1.0.11 on the current line: the engine's selector changed, the
    server refuses the upgrade (tests/test_rehearse.py test_a_pair_published_broken_stays_broken)."""
    name = "llamacppqwen36mtpone"
    _, chart_of = _catalogue(name)
    old = flow.chart_plan(chart_of("1.0.10", "current"), tmp_path, "current", name, "1.0.10", flow.Names())
    new = flow.chart_plan(chart_of("1.0.11", "current"), tmp_path, "current", name, "1.0.11", flow.Names())
    [rel] = old.releases("alice")
    [upgraded] = new.releases("alice")
    seen = []
    for h in engines:
        installed = h.install(rel.name, rel.chart, rel.namespace, old.values("alice"))
        assert installed.ok, installed.output
        refused = h.upgrade(upgraded.name, upgraded.chart, upgraded.namespace, new.values("alice"))
        seen.append((without_times(installed.release()), refused.ok, refused.output, h.manifest(rel.name, rel.namespace),
                     status_json(h, rel.name, rel.namespace)))
        assert h.uninstall(rel.name, rel.namespace).ok
    daemon, cli = seen
    assert daemon == cli
    assert daemon[1] is False and daemon[2].startswith("Error: UPGRADE FAILED: cannot patch")
    assert "field is immutable" in daemon[2] and daemon[4]["info"]["status"] == "failed"


def test_a_refused_install_says_what_the_cli_says(control_plane, engines, tmp_path) -> None:
    """An object the server refuses (a name it does not allow), a kind it does not serve, a missing
    chart, a post-renderer that fails: the same `Error: ...` text from both. A field no schema
    knows is no refusal for either: Helm 3 validates against the OpenAPI schema only where the
    server cannot (fieldValidation, Kubernetes >= 1.27), and asks it for no strict validation."""
    bad_name = small_chart(tmp_path, "0.3.0")
    (bad_name / "templates" / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_Valid}\n")
    no_kind = small_chart(tmp_path, "0.4.0")
    (no_kind / "templates" / "widget.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    unknown = small_chart(tmp_path, "0.5.0")
    (unknown / "templates" / "conf.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {x: 1}\n")
    failing = tmp_path / "failing-renderer"
    failing.write_text("#!/bin/sh\ncat >/dev/null\necho 'no slot for you' >&2\nexit 3\n")
    failing.chmod(0o755)
    ns = "helmd-refused"
    outputs = []
    for h in engines:
        got = [h.install("small", bad_name, ns, {}).output]
        h.uninstall("small", ns)
        got.append(h.install("small", no_kind, ns, {}).output)
        got.append(h.install("small", tmp_path / "nowhere", ns, {}).output)
        renderer = Helm(h.cluster, h.home, failing, cli=h.helmd is None)
        got.append(renderer.install("small", bad_name, ns, {}).output)
        accepted = h.install("small", unknown, ns, {})
        got.append(accepted.ok and without_times(accepted.release()))
        got.append(sorted(control_plane.get(f"/api/v1/namespaces/{ns}/configmaps/c")))  # the server dropped `spec`
        h.uninstall("small", ns)
        outputs.append(got)
    daemon, cli = outputs
    assert daemon == cli
    assert 'Error: INSTALLATION FAILED: 1 error occurred:\n\t* ConfigMap "Not_Valid" is invalid' in daemon[0]
    assert daemon[1] == ("Error: INSTALLATION FAILED: unable to build kubernetes objects from release manifest: "
                         'resource mapping not found for name: "w" namespace: "" from "": no matches for kind "Widget" '
                         'in version "example.com/v1"\nensure CRDs are installed first')
    assert daemon[2] == f'Error: INSTALLATION FAILED: path "{tmp_path / "nowhere"}" not found'
    assert "error while running command" in daemon[3] and "no slot for you" in daemon[3]
    assert daemon[4] and daemon[5] == ["apiVersion", "kind", "metadata"]


def test_the_post_renderer_runs_with_the_callers_environment(control_plane, engines, tmp_path) -> None:
    """rehearse/live.py tells its post-renderer which device slot it renders for in Helm.env."""
    script = tmp_path / "renderer"
    script.write_text('#!/bin/sh\nexec sed "s/SLOT/slot-$OLARES_PACK_SLOT-$HELM_DRIVER/"\n')
    script.chmod(0o755)
    chart = small_chart(tmp_path, slotFromEnv=True)
    ns = "helmd-post"
    seen = []
    for engine in engines:
        h = Helm(control_plane, engine.home, script, cli=engine.helmd is None)
        h.env["OLARES_PACK_SLOT"] = "3"
        r = h.install("small", chart, ns, {})
        assert r.ok, r.output
        seen.append(control_plane.get(f"/api/v1/namespaces/{ns}/configmaps/small-conf")["data"]["slot"])
        assert h.uninstall("small", ns).ok
    assert seen == ["slot-3-secret", "slot-3-secret"]
    assert "OLARES_PACK_SLOT" not in os.environ  # the caller's own environment is left alone


def test_calls_from_several_threads_each_get_their_own_answer(control_plane, tmp_path) -> None:
    chart = small_chart(tmp_path)
    h = Helm(control_plane, tmp_path)
    errors: list[str] = []

    def one(i: int) -> None:
        ns = f"helmd-thread-{i}"
        try:
            r = h.install("small", chart, ns, {"image": f"image-{i}"})
            assert r.ok, r.output
            assert f"image: image-{i}\n" in r.release()["manifest"]
            assert f"image: image-{i}\n" in h.manifest("small", ns)
            assert h.status("small", ns) == "deployed"
            up = h.upgrade("small", chart, ns, {"image": f"again-{i}"})
            assert up.ok and f"image: again-{i}\n" in up.release()["manifest"], up.output
            assert h.uninstall("small", ns).output == 'release "small" uninstalled'
            assert h.status("small", ns) is None
        except AssertionError as exc:
            errors.append(f"{i}: {exc}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert h.version() == Helm(control_plane, tmp_path, cli=True).version() == tools.HELM_VERSION


# ---------------------------------------------------------------- its lifetime

CHILD = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from olares_pack.cluster import controlplane, helmcli, tools
    kubeconfig = Path(sys.argv[1])
    h = helmcli.Helm(controlplane.from_kubeconfig(kubeconfig, tools.helm_path()), kubeconfig.parent)
    t = threading.Thread(target=h.version)  # started from a thread that then ends
    t.start(); t.join()
    print(helmcli.daemon_pid(kubeconfig), flush=True)
    time.sleep(600)
""")


def _helmd_alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return b"helmd" in cmdline and state != "Z"


def test_a_killed_process_leaves_no_helmd(tmp_path) -> None:
    if not tools.helmd_path().is_file():
        pytest.skip(tools.missing_reason())
    kubeconfig = tmp_path / "kubeconfig"  # no cluster is asked: `version` is answered by helmd alone
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(kubeconfig)], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    assert child.stdout is not None
    pid = int(child.stdout.readline())
    time.sleep(0.2)
    assert _helmd_alive(pid)  # the thread that asked first has ended: helmd lives on
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _helmd_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _helmd_alive(pid)


def test_close_stops_the_daemon_and_the_next_call_starts_another(control_plane, tmp_path) -> None:
    h = Helm(control_plane, tmp_path)
    assert h.version() == tools.HELM_VERSION
    first = helmcli.daemon_pid(control_plane.kubeconfig)
    assert first is not None and _helmd_alive(first)
    helmcli.close(control_plane.kubeconfig)
    assert helmcli.daemon_pid(control_plane.kubeconfig) is None and not _helmd_alive(first)
    assert h.version() == tools.HELM_VERSION
    assert helmcli.daemon_pid(control_plane.kubeconfig) not in (None, first)
