"""Install and upgrade on a real kube-apiserver (tests/conftest.py control_plane): every published
version of the bundled apps installs on both OS lines, every older version upgrades to the newest,
and `release` refuses a version whose upgrade the server refuses or that moves the model store."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from olares_pack.catalogue import checks, records
from olares_pack.catalogue.repo import Repo
from olares_pack.rehearse import flow, objects, run
from tests.conftest import ROOT

APPS = ("llamacppqwen36mtpone", "vllmqwen36turbo27bone")


def _catalogue(root: Path, name: str) -> tuple[list[str], dict[str, list[str]], flow.ChartOf]:
    repo = Repo.at(root)
    published = records.versions(repo, name)
    recs = {v: records.read(repo, name, v) for v in published}
    lines: dict[str, list[str]] = {}
    for v in published:
        for t in recs[v].charts:
            lines.setdefault(t, []).append(v)

    def chart_of(version: str, target: str) -> bytes | None:
        rec = recs.get(version)
        return checks.published_bytes(repo, rec, target)[0] if rec and target in rec.charts else None

    return published, lines, chart_of


def _failures(steps: list[run.Step]) -> list[str]:
    return [f"{s.line} {s.action} {s.label} ({s.user}): {s.error}" for s in steps if not s.ok]


# ---------------------------------------------------------------- without a server


def test_refusals_name_the_object_and_the_reason() -> None:
    out = ('Error: UPGRADE FAILED: cannot patch "x" with kind Deployment: Deployment.apps "x" is invalid: '
           'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}}: field is immutable')
    assert run.refusals(out) == ['Deployment.apps x: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:'
                                 'map[string]string{"a":"b"}}: field is immutable']


def test_compare_finds_a_renamed_engine_and_a_moved_path() -> None:
    def dep(name: str, path: str) -> str:
        return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n"
                f"      volumes: [{{name: m, hostPath: {{path: {path}}}}}]\n")
    before = objects.parse(dep("engine", "/models") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "ns")
    after = objects.parse(dep("engine-v2", "/store"), "ns")
    ch = objects.compare(before, after)
    assert ch.renamed == [(("Deployment", "ns", "engine"), ("Deployment", "ns", "engine-v2"))]
    assert ch.moved == [("hostPath /models", "Deployment ns/engine")]
    assert ("ConfigMap", "ns", "c") in ch.removed


def test_the_wrapper_module_replaces_every_served_staging_module() -> None:
    from olares_pack.cluster import tools

    upstream = ("replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/sample-controller => "
                "./staging/src/k8s.io/sample-controller\n)\n")
    text = tools.wrapper_go_mod(upstream, "v1.32.2")
    assert "replace k8s.io/api => k8s.io/api v0.32.2" in text
    assert "sample-controller" not in text  # the proxy does not serve it


# ---------------------------------------------------------------- on the server


def test_the_server_is_the_kubernetes_olares_installs(control_plane) -> None:
    assert control_plane.version == "v1.32.2"  # cli/pkg/common/common.go DefaultK3sVersion v1.32.2-k3s


@pytest.fixture(scope="module")
def to_the_newest(control_plane):  # noqa: ANN201 - app name -> (its steps, every install made on the way)
    """The newest version of an app rehearsed on each line: its fresh install, and the upgrade from
    every older version, each older version installed fresh on a clean slate first (the flow reports
    those installs only when they fail: the spy keeps them all). Rehearsed once per app (a minute
    for the example app): the install and the upgrade tests read the same run."""
    done: dict[str, tuple[list[run.Step], list[run.Step]]] = {}

    def rehearsed(name: str) -> tuple[list[run.Step], list[run.Step]]:
        if name not in done:
            published, lines, chart_of = _catalogue(ROOT, name)
            installs: list[run.Step] = []
            real = run.Rehearsal.install

            def install(self: run.Rehearsal, plan) -> list[run.Step]:  # noqa: ANN001
                made = real(self, plan)
                installs.extend(made)
                return made

            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(run.Rehearsal, "install", install)
                steps = flow.rehearse(control_plane, name, published[-1], lines, chart_of, froms=published[:-1])
            done[name] = (steps, installs)
        return done[name]

    return rehearsed


@pytest.mark.parametrize("name", APPS)
def test_every_published_version_installs_on_both_lines(to_the_newest, name: str) -> None:
    _, lines, _ = _catalogue(ROOT, name)
    steps = to_the_newest(name)[1]
    assert not _failures(steps)
    installs = {(s.line, s.version) for s in steps}
    assert installs == {(t, v) for t, vs in lines.items() for v in vs}


@pytest.mark.parametrize("name", APPS)
def test_every_older_version_upgrades_to_the_newest(to_the_newest, name: str) -> None:
    published, lines, _ = _catalogue(ROOT, name)
    newest = published[-1]
    steps = to_the_newest(name)[0]
    assert not flow.failed(steps), _failures(steps)
    upgraded = {(s.line, s.from_version) for s in steps if s.action in ("upgrade", "uninstall-first") and s.ok}
    assert upgraded == {(t, v) for t, vs in lines.items() for v in vs if v != newest}


def test_a_pair_published_broken_stays_broken(control_plane) -> None:
    """1.0.10 -> 1.0.11 (Olares 1.12.6+) added a label to the engine's selector: frozen as published."""
    _, lines, chart_of = _catalogue(ROOT, "llamacppqwen36mtpone")
    steps = flow.rehearse(control_plane, "llamacppqwen36mtpone", "1.0.11", {"current": lines["current"]}, chart_of,
                          froms=["1.0.10"])
    upgrade = next(s for s in steps if s.action == "upgrade" and s.user == "alice")
    assert not upgrade.ok
    assert [f.rule for f in upgrade.findings] == ["rehearse.immutable-field"]
    assert any("spec.selector" in r and "field is immutable" in r for r in upgrade.refused)


def test_the_first_upgrade_to_the_v2_shared_form_fails_and_uninstalling_first_works(control_plane) -> None:
    """Olares 1.12.3-1.12.5: app-service installs the missing shared chart, then fails the upgrade
    (HelmOpsV2.upgrade); the changelog of 1.0.13 says to uninstall first."""
    _, lines, chart_of = _catalogue(ROOT, "llamacppqwen36mtpone")
    steps = flow.rehearse(control_plane, "llamacppqwen36mtpone", "1.0.13", {"legacy": lines["legacy"]}, chart_of,
                          froms=["1.0.11"])
    first = next(s for s in steps if s.action == "upgrade" and s.user == "alice")
    assert not first.ok and "release: not found" in first.error
    assert "installed the shared chart" in first.note
    assert all(s.ok for s in steps if s.action == "uninstall-first")
    assert not flow.failed(steps)


def test_the_report_lists_what_an_upgrade_removes(control_plane) -> None:
    """1.0.10 (per-user form) -> the newest: what the report lists as removed (the per-user download
    ConfigMap) is gone from the server, and the engine kept its selector."""
    published, lines, chart_of = _catalogue(ROOT, "llamacppqwen36mtpone")
    newest = published[-1]
    with run.session(control_plane, "current") as r, tempfile.TemporaryDirectory() as tmp:
        old = flow.chart_plan(chart_of("1.0.10", "current"), Path(tmp), "current", "llamacppqwen36mtpone", "1.0.10",
                         flow.Names())
        new = flow.chart_plan(chart_of(newest, "current"), Path(tmp), "current", "llamacppqwen36mtpone", newest,
                         flow.Names())
        assert all(s.ok for s in r.install(old))
        step = next(s for s in r.upgrade(old, new) if s.user == "alice")
        assert step.ok, step.error
        removed = step.changes.removed
        assert removed and any(f.rule == "rehearse.removed" for f in step.findings)
        for kind, ns, name in removed:
            path = {"Service": f"/api/v1/namespaces/{ns}/services/{name}",
                    "ConfigMap": f"/api/v1/namespaces/{ns}/configmaps/{name}",
                    "Deployment": f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"}.get(kind)
            if path:
                assert control_plane.request("GET", path)[0] == 404, f"{kind} {name} is still on the server"
        engine = control_plane.get("/apis/apps/v1/namespaces/llamacppqwen36mtpone-alice/deployments/llamacppqwen36mtpone")
        assert engine["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "llamacppqwen36mtpone"}


# ---------------------------------------------------------------- release


def _variant(monkeypatch: pytest.MonkeyPatch, edit) -> None:  # noqa: ANN001
    from olares_pack.render import app as render

    real = render.render

    def varied(app, target):  # noqa: ANN001, ANN202
        files = dict(real(app, target))
        for path in files:
            if path.startswith("templates/") and path.endswith(".yaml"):
                files[path] = edit(files[path])
        return files

    monkeypatch.setattr(render, "render", varied)


def _release(repo: Path, *extra: str) -> int:
    from olares_pack.cli import main

    return main(["release", "llamacppqwen36mtpone", "--apps-dir", str(repo / "apps"), "--bump", "patch",
                 "--summary", "a variant", *extra])


def _newest_only(repo: Path, count: int, name: str = "llamacppqwen36mtpone") -> Path:
    """The catalogue as if only the newest `count` versions of `name` had been published (their
    records and packages; the ledger and the offer file derived again by `build`): a release
    rehearses the upgrade from each published version, and the variants below need only the
    newest ones to be refused, at a fraction of the cost of all of them (the whole history is
    rehearsed by `to_the_newest`)."""
    import re

    from olares_pack.cli import main

    published = records.versions(Repo.at(repo), name)
    keep = set(published[-count:])
    for v in published:
        if v not in keep:
            records.path_of(Repo.at(repo), name, v).unlink()
    for p in (repo / "packages").rglob(f"{name}-*.tgz"):
        m = re.match(rf"{name}-(\d+\.\d+\.\d+)", p.name)
        if m is not None and m.group(1) not in keep:
            p.unlink()
    (repo / "market-index.json").unlink()
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(repo / "build" / "charts")]) == 0
    assert records.versions(Repo.at(repo), name) == published[-count:]
    return repo


def test_release_refuses_an_engine_whose_selector_changes(control_plane, repo: Path, monkeypatch, capsys) -> None:
    repo = _newest_only(repo, 2)
    def new_selector(text: str) -> str:
        return (text.replace("{{- if $keep }}", "{{- if false }}")
                .replace("      app.kubernetes.io/component: engine\n      {{- end }}",
                         "      app.kubernetes.io/component: engine\n      app.kubernetes.io/part-of: variant\n      {{- end }}")
                .replace("        app.kubernetes.io/component: engine\n        app: ",
                         "        app.kubernetes.io/component: engine\n        app.kubernetes.io/part-of: variant\n        app: "))
    _variant(monkeypatch, new_selector)
    before = (repo / "apps/llamacppqwen36mtpone/app.yaml").read_text()
    assert _release(repo) == 1
    err = capsys.readouterr().err
    assert "rehearse.immutable-field" in err and "spec.selector" in err
    assert (repo / "apps/llamacppqwen36mtpone/app.yaml").read_text() == before  # nothing released


def test_release_calls_a_moved_model_store_a_policy_error(control_plane, repo: Path, monkeypatch, capsys) -> None:
    repo = _newest_only(repo, 2)
    _variant(monkeypatch, lambda t: t.replace('.Values.userspace.appCommon }}/huggingface"',
                                              '.Values.userspace.appCommon }}/hf-store"'))
    assert _release(repo) == 1
    err = capsys.readouterr().err
    assert "rehearse.data-path" in err and "/olares/share/appcommon/huggingface" in err
    assert _release(repo, "--allow", "rehearse.data-path") == 0
    assert "rehearse.data-path" in capsys.readouterr().err  # shown as a warning


# ---------------------------------------------------------------- the command


def test_the_command_reports_a_refused_upgrade_as_json(control_plane, capsys) -> None:  # noqa: ARG001 - built here
    from olares_pack.cli import main

    code = main(["rehearse", "llamacppqwen36mtpone", "--version", "1.0.13", "--from", "1.0.10", "--target", "current",
                 "--format", "json"])
    doc = __import__("json").loads(capsys.readouterr().out)
    assert code == 1
    failed = [s for s in doc["steps"] if not s["ok"]]
    assert [(s["action"], s["from"], s["user"]) for s in failed] == [("upgrade", "1.0.10", "alice")]
    assert failed[0]["findings"][0]["rule"] == "rehearse.immutable-field"


def test_a_users_cluster_is_left_as_it_was(control_plane, capsys) -> None:
    """--kubeconfig: namespaces of this run only, every release uninstalled, the namespaces deleted."""
    from olares_pack.cli import main

    def ours() -> list[dict]:
        items = control_plane.get("/api/v1/namespaces")["items"]
        return [n for n in items if n["metadata"]["name"].startswith("vllmqwen36turbo27bone-alice-rh")]

    already = {n["metadata"]["name"] for n in ours()}
    assert main(["rehearse", "vllmqwen36turbo27bone", "--from", "2.5.9", "--kubeconfig",
                 str(control_plane.kubeconfig)]) == 0
    assert "alice-rh" in capsys.readouterr().out
    secrets = control_plane.get("/api/v1/secrets?labelSelector=owner%3Dhelm")["items"]
    assert not [s for s in secrets if "-rh" in s["metadata"]["namespace"]]  # no Helm release left
    made = [n for n in ours() if n["metadata"]["name"] not in already]
    # deleted: a bare API server has no namespace controller to finish the deletion
    assert made and all(n["metadata"].get("deletionTimestamp") for n in made)



def test_a_renamed_engine_is_a_policy_error_unless_declared(control_plane) -> None:
    """The newest chart with its engine Deployment renamed (lint refuses such a chart before a
    release, so the archive is edited here): the upgrade works, and the rename is reported."""
    import io
    import tarfile

    from olares_pack.rehearse import gate

    published, lines, chart_of = _catalogue(ROOT, "llamacppqwen36mtpone")
    newest = published[-1]
    src = tarfile.open(fileobj=io.BytesIO(chart_of(newest, "current")))
    out = io.BytesIO()
    with src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read()
            if m.name.endswith("templates/engine.yaml"):
                data = data.replace(b'kind: Deployment\nmetadata:\n  name: "{{ .Release.Name }}"',
                                    b'kind: Deployment\nmetadata:\n  name: "{{ .Release.Name }}-engine"')
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    renamed = out.getvalue()
    steps = flow.rehearse(control_plane, "llamacppqwen36mtpone", "9.9.9", {"current": [newest, "9.9.9"]},
                          lambda v, t: renamed if v == "9.9.9" else chart_of(v, t))
    outcomes = gate.judge(steps, (), "")
    assert [o.severity for o in outcomes if o.rule == "rehearse.renamed-workload"] == ["error"]
    assert "llamacppqwen36mtpone-engine" in next(o.message for o in outcomes if o.rule == "rehearse.renamed-workload")
    declared = gate.judge(steps, (), "the engine is now llamacppqwen36mtpone-engine")
    assert [o.severity for o in declared if o.rule == "rehearse.renamed-workload"] == ["warning"]


# ---------------------------------------------------------------- pitfalls and the release gate (issue #42)


def test_rehearse_accepts_only_known_lines_and_not_from_with_from_all(capsys) -> None:
    from olares_pack.cli import main

    assert main(["rehearse", "llamacppqwen36mtpone", "--target", "curent"]) == 2
    assert "'curent' is not one of 'current', 'legacy'" in capsys.readouterr().err
    assert main(["rehearse", "llamacppqwen36mtpone", "--from-all", "--from", "1.0.9"]) == 2
    assert "not both" in capsys.readouterr().err


def test_the_missing_tools_message_names_a_command_that_exists(tmp_path: Path, monkeypatch) -> None:
    from olares_pack.cluster import tools

    monkeypatch.setenv("OLARES_PACK_CACHE", str(tmp_path))
    reason = tools.missing_reason()
    assert "`make control-plane`" in reason and "--build" not in reason
    assert "\ncontrol-plane:" in (ROOT / "Makefile").read_text()


def test_held_workloads_start_nothing() -> None:
    from olares_pack.rehearse import hold

    text = ("kind: Deployment\nmetadata: {name: e}\nspec: {replicas: 1, template: {spec: {}}}\n---\n"
            "kind: Job\nmetadata: {name: j}\nspec: {template: {spec: {}}}\n---\n"
            "kind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {nodeSelector: {a: b}}}}\n---\n"
            "kind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n")
    import yaml

    deployment, job, daemonset, configmap = yaml.safe_load_all(hold.held(text))
    assert deployment["spec"]["replicas"] == 0 and job["spec"]["suspend"] is True
    assert daemonset["spec"]["template"]["spec"]["nodeSelector"] == {"a": "b", **hold.NO_NODE}
    assert configmap == {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}


def test_on_a_cluster_where_the_app_is_installed_nothing_collides_and_nothing_starts(control_plane, capsys) -> None:
    """The app installed as app-service installs it (release named after it, namespace <app>-alice),
    then `rehearse --kubeconfig`: the installed release is untouched, the rehearsal's releases have
    names of their own, and its workloads are held at zero replicas."""
    from olares_pack.cli import main
    from olares_pack.cluster.helmcli import Helm

    name = "llamacppqwen36mtpone"
    published, lines, chart_of = _catalogue(ROOT, name)
    newest = published[-1]
    seen: list[dict] = []
    real_install = Helm.install

    def install_and_look(self, release, chart, namespace, values):  # noqa: ANN001, ANN202
        r = real_install(self, release, chart, namespace, values)
        seen.extend((release, d) for d in control_plane.get(f"/apis/apps/v1/namespaces/{namespace}/deployments")["items"])
        return r

    with tempfile.TemporaryDirectory() as tmp, run.session(control_plane, "current") as installed:
        plan = flow.chart_plan(chart_of(newest, "current"), Path(tmp), "current", name, newest, flow.Names())
        assert all(s.ok for s in installed.install(plan))
        ns = plan.namespace("alice")
        before = control_plane.get(f"/apis/apps/v1/namespaces/{ns}/deployments")["items"]
        assert before and installed.helm.status(name, ns) == "deployed"
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Helm, "install", install_and_look)
            code = main(["rehearse", name, "--from", published[-2], "--target", "current", "--kubeconfig",
                         str(control_plane.kubeconfig)])
        assert code == 0, capsys.readouterr().err
        after = control_plane.get(f"/apis/apps/v1/namespaces/{ns}/deployments")["items"]
        assert [d["metadata"]["resourceVersion"] for d in after] == [d["metadata"]["resourceVersion"] for d in before]
        assert installed.helm.status(name, ns) == "deployed"
    ours = [(rel, d) for rel, d in seen if d["metadata"]["namespace"] != ns]
    assert ours and all(rel != name and "-rh" in rel for rel, _ in ours)  # release names of the run
    assert all(d["spec"]["replicas"] == 0 for _, d in ours)  # nothing scaled up beside the installed app
    from olares_pack.rehearse import gate

    assert gate._server_version(control_plane.kubeconfig) == "v1.32.2"  # what `release --kubeconfig` records


def test_release_rehearses_the_upgrade_from_every_older_version_and_records_it(control_plane, repo: Path,
                                                                              capsys) -> None:
    repo = _newest_only(repo, 5)  # 1.0.11-1.0.15: both lines, the legacy line from per-user to shared
    published, lines, _ = _catalogue(repo, "llamacppqwen36mtpone")
    assert _release(repo) == 0, capsys.readouterr().err
    new = records.versions(Repo.at(repo), "llamacppqwen36mtpone")[-1]
    assert new not in published
    rec = records.read(Repo.at(repo), "llamacppqwen36mtpone", new)
    r = rec.rehearsal
    assert r is not None and r.skipped is None
    assert r.api_server.startswith("kube-apiserver v1.32.2") and r.helm == "helm v3.19.5"
    pairs = {(s.line, s.from_version) for s in r.steps if s.action in ("upgrade", "uninstall-first")}
    assert pairs == {(t, v) for t, vs in lines.items() for v in vs}  # every older version on each line
    assert {(s.line, s.action) for s in r.steps if s.from_version is None} == {("current", "install"), ("legacy", "install")}
    # the known broken pairs stay visible with their outcome (the fix of 1.0.14 does not rewrite history)
    assert all(s.ok for s in r.steps if s.from_version in ("1.0.13", "1.0.14"))
