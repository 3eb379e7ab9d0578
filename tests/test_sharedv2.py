"""The v2 shared form (legacy target, Olares 1.12.3-1.12.5): installed the way beclab/Olares'
app-service installs an apiVersion v2 app (framework/app-service HelmOpsV2.install: each
spec.subCharts entry a release of its own from its folder, the shared one for the administrator
only, into <sub>-shared), compared with the official catalogue's shared app for those releases
(beclab/apps llamacppgptoss120bggufv2), read back by lint and import."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import APPS

from olares_pack import olares as targets
from olares_pack.apps.load import load_app
from olares_pack.charts import helm, kube, package
from olares_pack.cli import main
from olares_pack.common import fsio
from olares_pack.common.errors import ExitCode
from olares_pack.render import app as render

NAME = "llamacppqwen36mtpone"
SERVER = f"{NAME}server"
OFFICIAL = Path(__file__).parent / "data" / "official" / "llamacppgptoss120bggufv2"  # beclab/apps, copied unchanged


def _files() -> dict[str, str]:
    return render.render(load_app(APPS / NAME), targets.LEGACY)


def _manifest(files: dict[str, str], owner: str, admin: str) -> dict[str, Any]:
    data = package.build_archive(NAME, {"Chart.yaml": files["Chart.yaml"], "templates/m.yaml": files["OlaresManifest.yaml"]})
    with helm.load_bytes(data) as chart:
        text = helm.render(chart, helm.installer_values(NAME, [], owner=owner, admin=admin), namespace="ns")
    return yaml.safe_load(next(iter(text.values())))


def install(tmp_path: Path, files: dict[str, str], owner: str, admin: str = "admin") -> dict[str, list[dict[str, Any]]]:
    """Namespace -> objects of what one user's install creates, as HelmOpsV2.install does it."""
    manifest = _manifest(files, owner, admin)
    values = helm.installer_values(NAME, [e["name"] for e in manifest["entrances"]], owner=owner, admin=admin)
    out: dict[str, list[dict[str, Any]]] = {}
    for sub in manifest["spec"]["subCharts"]:
        if sub.get("shared") and owner != admin:
            continue  # "Skipping installation of shared chart ... for non-admin user"
        ns = f"{sub['name']}-shared" if sub.get("shared") else f"{sub['name']}-{owner}"
        folder = tmp_path / owner / sub["name"]
        fsio.write_tree({k[len(sub["name"]) + 1:]: v for k, v in files.items() if k.startswith(sub["name"] + "/")}, folder)
        with helm.load(folder) as chart:
            rendered = chart.render(values=values, name=sub["name"], namespace=ns, is_install=True)
        out[ns] = [o for _, o in helm.objects(rendered)]
    return out


def test_the_administrator_runs_the_engine_once_and_every_user_a_proxy_to_it(tmp_path: Path) -> None:
    files = _files()
    admin = install(tmp_path, files, "admin")
    bob = install(tmp_path, files, "bob")
    assert set(admin) == {f"{SERVER}-shared", f"{NAME}-admin"} and set(bob) == {f"{NAME}-bob"}
    engine = next(o for o in admin[f"{SERVER}-shared"] if o["kind"] == "Deployment")
    pod = engine["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["download"] and pod["containers"][0]["name"] == "llamacpp"
    assert engine["metadata"]["annotations"]["applications.app.bytetrade.io/gpu-inject"] == "true"
    # no GPU, no model and no second engine in a user's install
    assert not any("initContainers" in o["spec"]["template"]["spec"] for o in bob[f"{NAME}-bob"] if o["kind"] == "Deployment")
    for objs in (*admin.values(), *bob.values()):
        for o in objs:
            assert kube.schema_errors(o) == [], (o["kind"], o["metadata"]["name"])

    # each user's proxy reaches the one engine: its upstream is the engine's Service, in the
    # shared namespace, on a port that Service serves
    services = {(ns, o["metadata"]["name"]): o for ns, objs in admin.items() for o in objs if o["kind"] == "Service"}
    for ns, objs in (*admin.items(), *bob.items()):
        if ns.endswith("-shared"):
            continue
        conf = next(o for o in objs if o["kind"] == "ConfigMap")["data"]["app_backend.conf"]
        host, port = re.search(r"proxy_pass http://([^:;]+):(\d+);", conf).groups()  # type: ignore[union-attr]
        svc_name, svc_ns = host.split(".", 1)
        svc = services[(svc_ns, svc_name)]
        assert int(port) in [p["port"] for p in svc["spec"]["ports"]]
        assert svc["spec"]["selector"] == engine["spec"]["selector"]["matchLabels"]
        # the user's entrance is the proxy's Service, in the user's namespace
        entrance = _manifest(files, ns.rsplit("-", 1)[1], "admin")["entrances"][0]
        client = next(o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == entrance["host"])
        assert entrance["port"] in [p["port"] for p in client["spec"]["ports"]]
        proxy = next(o for o in objs if o["kind"] == "Deployment")
        assert proxy["metadata"]["name"] == NAME  # the client chart's Deployment the installer labels
        assert client["spec"]["selector"] == proxy["spec"]["selector"]["matchLabels"]
    # the shared entrance: a Service of that host in the shared namespace, onto the engine
    shared = _manifest(files, "admin", "admin")["sharedEntrances"][0]
    api = services[(f"{SERVER}-shared", shared["host"])]
    assert shared["port"] == 0 and api["spec"]["selector"] == engine["spec"]["selector"]["matchLabels"]


def test_the_manifest_follows_the_official_v2_shared_app() -> None:
    """Each key of beclab/apps llamacppgptoss120bggufv2's manifest that makes it a shared v2 app,
    for the administrator and for a user; intended differences: manifest 0.10.0 (the official one
    is 0.11.0), the dependency floor (>=0.0.0-0: our legacy versions are pre-releases), the
    sub-chart names (<app>server / <app>)."""
    files = _files()
    admin, user = _manifest(files, "admin", "admin"), _manifest(files, "bob", "admin")
    assert admin["apiVersion"] == "v2" and admin["olaresManifest.version"] == "0.10.0"
    assert admin["spec"]["subCharts"] == [{"name": SERVER, "shared": True}, {"name": NAME}]
    assert admin["options"]["appScope"] == {"clusterScoped": True, "appRef": [NAME]}
    assert user["options"]["appScope"] == {"clusterScoped": False}
    assert [d["name"] for d in admin["options"]["dependencies"]] == ["olares"]
    assert {"name": NAME, "type": "application", "version": ">=0.0.0-0", "mandatory": True} in user["options"]["dependencies"]
    assert "requiredGpu" in admin["spec"] and "requiredGpu" not in user["spec"]
    assert [e["envName"] for e in admin["envs"]] == ["OLARES_USER_HUGGINGFACE_SERVICE", "OLARES_USER_HUGGINGFACE_TOKEN"]
    assert "envs" not in user
    shared = admin["sharedEntrances"][0]
    assert (shared["host"], shared["port"], shared["invisible"], shared["authLevel"]) == ("sharedentrances-api", 0, True, "internal")
    text = (OFFICIAL / "OlaresManifest.yaml").read_text()
    official = _manifest({"Chart.yaml": (OFFICIAL / "Chart.yaml").read_text(), "OlaresManifest.yaml": text}, "admin", "admin")
    official_user = _manifest({"Chart.yaml": (OFFICIAL / "Chart.yaml").read_text(), "OlaresManifest.yaml": text}, "bob", "admin")
    assert official["apiVersion"] == admin["apiVersion"]
    assert [bool(s.get("shared")) for s in official["spec"]["subCharts"]] == [bool(s.get("shared")) for s in admin["spec"]["subCharts"]]
    assert set(official["options"]["appScope"]) == set(admin["options"]["appScope"])
    assert set(official_user["options"]["appScope"]) == set(user["options"]["appScope"])
    assert {k: official["sharedEntrances"][0][k] for k in ("host", "port", "invisible", "authLevel")} == \
        {k: shared[k] for k in ("host", "port", "invisible", "authLevel")}
    assert [d.get("mandatory") for d in official_user["options"]["dependencies"] if d["type"] == "application"] == [True]


def test_lint_reads_it_as_the_releases_that_install_it(capsys: pytest.CaptureFixture[str]) -> None:
    for olares in ("1.12.3", "1.12.5"):
        assert main(["lint", str(APPS / NAME), "--target", "legacy", "--olares", olares, "--format", "json"]) == ExitCode.OK
        findings = json.loads(capsys.readouterr().out)["findings"]
        assert [f for f in findings if f["severity"] == "error"] == []
        # the engine was found and checked in the shared sub-chart
        assert any(f["rule"] == "engine.build" and f"{SERVER}/templates/deployment.yaml" in f["message"] for f in findings)


def test_import_structured_gives_the_shared_app_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "chart" / NAME
    fsio.write_tree(_files(), chart)
    apps = tmp_path / "repo" / "apps"
    apps.mkdir(parents=True)
    assert main(["import", str(chart), "--apps-dir", str(apps), "--structured", "--format", "json"]) == ExitCode.OK
    structured = json.loads(capsys.readouterr().out)["charts"][0]["structured"]
    # its typed render makes the same app: the v2 shared form, proven equivalent (equivalence.py)
    assert structured["typed"] and structured["differences"] == [], structured
    got, want = load_app(apps / NAME), load_app(APPS / NAME)
    assert got.engine.shared and got.targets == ["legacy"]
    assert got.server == want.server and got.resources == want.resources
    assert (got.model.repo, [f.name for f in got.model.files]) == (want.model.repo, [f.name for f in want.model.files])


def test_per_user_opt_out_stays_one_chart(tmp_path: Path) -> None:
    app = load_app(APPS / NAME)
    per_user = app.model_copy(update={"engine": app.engine.model_copy(update={"shared": False})})
    files = render.render(per_user, targets.LEGACY)
    manifest = yaml.safe_load(files["OlaresManifest.yaml"])
    assert manifest["apiVersion"] == "v1" and "subCharts" not in manifest["spec"] and "sharedEntrances" not in manifest
    assert not any(p.startswith(f"{SERVER}/") for p in files)
