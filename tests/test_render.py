"""Rendering the bundled apps: golden files, determinism, the installer's structural rules,
the real Helm engine and the Kubernetes schemas."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import APPS, EXPECTED

from olares_pack import olares as targets
from olares_pack.apps.load import load_app
from olares_pack.charts import helm, kube, package
from olares_pack.cli import main
from olares_pack.common import fsio, quantity
from olares_pack.common.errors import ExitCode
from olares_pack.render import app as render
from olares_pack.render import llmbase, sharedv2

CASES = [
    (app, target)
    for app in sorted(p.name for p in APPS.iterdir() if (p / "app.yaml").exists())
    for target in load_app(APPS / app).targets
]
IDS = [f"{a}-{t}" for a, t in CASES]


def rendered(app_name: str, target: str) -> dict[str, str]:
    return render.render(load_app(APPS / app_name), targets.get(target))


def shared(app_name: str, target: str) -> bool:
    return llmbase.active(load_app(APPS / app_name), targets.get(target))


def shared_v2(app_name: str, target: str) -> bool:
    return sharedv2.active(load_app(APPS / app_name), targets.get(target))


@pytest.mark.parametrize("app_name,target", CASES, ids=IDS)
def test_golden(app_name: str, target: str, update_golden: bool) -> None:
    files = rendered(app_name, target)
    golden = EXPECTED / target / app_name
    if update_golden:
        fsio.write_tree(files, golden)
    assert fsio.read_tree(golden) == files, "rendered chart differs from the golden files (run pytest --update-golden after checking the diff)"


@pytest.mark.parametrize("app_name,target", CASES, ids=IDS)
def test_render_is_deterministic(app_name: str, target: str, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["render", str(APPS / app_name), "--target", target, "--out", str(a)]) == ExitCode.OK
    assert main(["render", str(APPS / app_name), "--target", target, "--out", str(b)]) == ExitCode.OK
    files_a = {p.relative_to(a): p.read_bytes() for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    assert files_a == files_b and files_a


def _manifest(files: dict[str, str], *, owner: str = "alice", admin: str = "alice") -> dict[str, Any]:
    """OlaresManifest.yaml as the installer reads it: a templated one (the v2 shared form's
    administrator branches) rendered for this owner first."""
    text = files["OlaresManifest.yaml"]
    if "{{" in text:
        name = yaml.safe_load(files["Chart.yaml"])["name"]
        data = package.build_archive(name, {"Chart.yaml": files["Chart.yaml"], "templates/m.yaml": text})
        with helm.load_bytes(data) as chart:
            text = helm.render(chart, helm.installer_values(name, [], owner=owner, admin=admin), namespace="ns")[f"{name}/templates/m.yaml"]
    return yaml.safe_load(text)


def _charts(files: dict[str, str], name: str, owner: str, admin: str) -> list[tuple[str, str, dict[str, str]]]:
    """(release, namespace, files) of each chart the installer installs for this owner: the app's
    one chart, or an apiVersion v2 app's sub-charts, the shared one for the administrator only, in
    <sub>-shared (beclab/Olares framework/app-service HelmOpsV2.install, appcfg Chart.Namespace)."""
    manifest = _manifest(files, owner=owner, admin=admin)
    if manifest["apiVersion"] != "v2":
        return [(name, f"{name}-{owner}", files)]
    out = []
    for sub in manifest["spec"]["subCharts"]:
        if sub.get("shared") and owner != admin:
            continue
        ns = f"{sub['name']}-shared" if sub.get("shared") else f"{sub['name']}-{owner}"
        out.append((sub["name"], ns, {k[len(sub["name"]) + 1:]: v for k, v in files.items() if k.startswith(sub["name"] + "/")}))
    return out


def _render_with_helm(tmp_path: Path, files: dict[str, str], name: str, *, owner: str, admin: str, gpu: str | None,
                      namespaces: dict[str, str] | None = None) -> list[dict[str, Any]]:
    manifest = _manifest(files, owner=owner, admin=admin)
    entrances = [e["name"] for e in manifest["entrances"]]
    values = helm.installer_values(name, entrances, owner=owner, admin=admin, gpu_type=gpu)
    objs = []
    for release, ns, chart_files in _charts(files, name, owner, admin):
        chart_dir = tmp_path / f"{owner}-{gpu}" / release
        fsio.write_tree(chart_files, chart_dir)
        chart = helm.load(chart_dir)
        messages = helm.lint(chart_dir, values, namespace=ns, kube_version=kube.DEFAULT_KUBE_VERSION)
        assert not [m for m in messages if m.severity == "error"], messages
        out = [obj for _, obj in helm.objects(helm.render(chart, values, namespace=ns))]
        if namespaces is not None:
            namespaces.update({f"{o['kind']}/{o['metadata']['name']}@{release}": ns for o in out})
        objs += out
    return objs


@pytest.mark.parametrize("app_name,target", CASES, ids=IDS)
def test_helm_renders_with_installer_values_and_objects_validate(app_name: str, target: str, tmp_path: Path) -> None:
    files = rendered(app_name, target)
    app = load_app(APPS / app_name)
    modes = [*app.modes, None]  # None: an installer that injects no GPU type at all
    for (owner, admin), gpu in itertools.product([("alice", "alice"), ("bob", "alice")], modes):
        namespaces: dict[str, str] = {}
        objs = _render_with_helm(tmp_path, files, app_name, owner=owner, admin=admin, gpu=gpu, namespaces=namespaces)
        kinds = sorted(o["kind"] for o in objs)
        if shared(app_name, target):
            # shared: the engine and llm-init, their Services (engine, entrance, shared API)
            assert kinds == ["ConfigMap", "Deployment", "Deployment", "Secret", "Service", "Service", "Service"]
        elif shared_v2(app_name, target):
            # v2: the administrator's install adds the shared server chart (engine, its Service, the
            # shared API's Service, download script, token) to the client every user gets (proxy
            # ConfigMap, Deployment, the entrance's Service)
            client = ["ConfigMap", "Deployment", "Service"]
            server = ["ConfigMap", "Deployment", "Secret", "Service", "Service"]
            assert kinds == (sorted(client + server) if owner == admin else client)
        else:
            assert kinds == ["ConfigMap", "Deployment", "Secret", "Service"]
        for obj in objs:
            assert kube.schema_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
        for key, ns in namespaces.items():
            assert ns == (f"{app_name}server-shared" if key.endswith(f"@{app_name}server") else f"{app_name}-{owner}"), key
        assert {o["metadata"]["namespace"] for o in objs} <= set(namespaces.values())


# ---- the installer's structural rules (docs/concepts/shared-llm-form.md and lint.md), per target


@pytest.mark.parametrize("app_name,target", CASES, ids=IDS)
def test_structure_rules(app_name: str, target: str, tmp_path: Path) -> None:
    profile = targets.get(target)
    files = rendered(app_name, target)
    manifest = _manifest(files)
    chart = yaml.safe_load(files["Chart.yaml"])

    # name and versions
    assert manifest["metadata"]["name"] == chart["name"] == app_name
    assert manifest["metadata"]["version"] == chart["version"]
    assert manifest["spec"]["versionName"] == chart["appVersion"]
    assert manifest["olaresManifest.version"] == profile.manifest_version
    v2 = shared_v2(app_name, target)
    assert manifest["apiVersion"] == ("v2" if v2 else profile.api_version)
    deps = [d for d in manifest["options"]["dependencies"] if d["name"] == "olares"]
    assert deps == [{"name": "olares", "type": "system", "version": profile.dependency}]

    # i18n generated from the one manifest, for every declared locale
    for loc in manifest["spec"]["locale"]:
        i18n = yaml.safe_load(files[f"i18n/{loc}/OlaresManifest.yaml"])
        assert set(i18n) == {"metadata", "spec"}
    en = yaml.safe_load(files["i18n/en-US/OlaresManifest.yaml"])
    assert en["metadata"]["title"] == manifest["metadata"]["title"]
    assert en["spec"]["upgradeDescription"] == manifest["spec"]["upgradeDescription"]

    objs = _render_with_helm(tmp_path, files, app_name, owner="alice", admin="alice", gpu="nvidia")
    deployments = [o for o in objs if o["kind"] == "Deployment"]
    names = [d["metadata"]["name"] for d in deployments]
    # v2: the shared engine and the administrator's own client, both named after the app (the
    # installer labels the client chart's Deployment of the app's name)
    assert names == ([app_name, "llminit"] if shared(app_name, target) else [app_name, app_name] if v2 else [app_name])
    for dep in deployments:
        pod = dep["spec"]["template"]["spec"]
        if any("hostPath" in v for v in pod["volumes"]):
            assert dep["spec"]["strategy"] == {"type": "Recreate"}
        # every container has cpu and memory requests and limits, requests <= limits
        for c in pod["containers"] + pod.get("initContainers", []):
            for key in ("cpu", "memory"):
                req, lim = c["resources"]["requests"][key], c["resources"]["limits"][key]
                assert quantity.parse(req) <= quantity.parse(lim), (c["name"], key)

    # the primary containers' sums (every workload's) fit the envelope of each mode
    primary = [c for dep in deployments for c in dep["spec"]["template"]["spec"]["containers"]]
    sums = {k: sum(quantity.parse(c["resources"][s][r]) for c in primary)
            for k, (s, r) in {"requiredCpu": ("requests", "cpu"), "limitedCpu": ("limits", "cpu"),
                              "requiredMemory": ("requests", "memory"), "limitedMemory": ("limits", "memory")}.items()}
    envelopes = manifest["spec"]["accelerator"] if profile.accelerator_envelopes else [manifest["spec"]]
    for env in envelopes:
        for key, total in sums.items():
            assert total <= quantity.parse(env[key]), (key, total, env[key])
        assert quantity.parse(env["requiredDisk"]) <= quantity.parse(env["limitedDisk"])
    if v2:
        # a user's install: the client alone, within the user's (non-administrator) envelope
        user = _manifest(files, owner="bob", admin="alice")
        bob = _render_with_helm(tmp_path, files, app_name, owner="bob", admin="alice", gpu="nvidia")
        client = [c for o in bob if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["containers"]]
        for key, (sec, res) in {"requiredCpu": ("requests", "cpu"), "limitedCpu": ("limits", "cpu"),
                                "requiredMemory": ("requests", "memory"), "limitedMemory": ("limits", "memory")}.items():
            assert sum(quantity.parse(c["resources"][sec][res]) for c in client) <= quantity.parse(user["spec"][key]), key
        assert "requiredGpu" not in user["spec"] and user["options"]["appScope"] == {"clusterScoped": False}
        assert {"name": app_name, "type": "application", "version": ">=0.0.0-0", "mandatory": True} in user["options"]["dependencies"]
        assert manifest["options"]["appScope"] == {"clusterScoped": True, "appRef": [app_name]}
        assert manifest["spec"]["subCharts"] == [{"name": f"{app_name}server", "shared": True}, {"name": app_name}]

    # the rendered Service matches the entrance
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    selectors = [d["spec"]["selector"]["matchLabels"] for d in deployments]
    for entrance in manifest["entrances"] + manifest.get("sharedEntrances", []):
        svc = services[entrance["host"]]
        assert entrance["port"] in [p["port"] for p in svc["spec"]["ports"]] or entrance.get("invisible")
        assert svc["spec"]["selector"] in selectors

    # permissions match userspace use, in both directions
    text = "\n".join(v for k, v in files.items() if "templates/" in k)
    for key in ("appData", "appCache", "userData", "appCommon"):
        assert (f".Values.userspace.{key}" in text) == bool(manifest.get("permission", {}).get(key)), key

    # namespace always templated
    for k, v in files.items():
        if "templates/" in k and k != "templates/keep":
            assert 'namespace: "{{ .Release.Namespace }}"' in v, k


@pytest.mark.parametrize("app_name", [a for a, t in CASES if t == "current"])
def test_current_target_rules(app_name: str) -> None:
    files = rendered(app_name, "current")
    manifest = _manifest(files)
    # a static manifest: no template syntax at all
    assert "{{" not in files["OlaresManifest.yaml"]
    # OLARES_USER appears nowhere in a 0.12.0 chart
    assert not [k for k, v in files.items() if "OLARES_USER" in v]
    # no flat envelope beside spec.accelerator; nvidia needs amd64
    assert not {"requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredGpu"} & set(manifest["spec"])
    assert "amd64" in manifest["spec"]["supportArch"]
    gpu = next(e for e in manifest["spec"]["accelerator"] if e["mode"] == "nvidia")
    assert set(gpu) == {"mode", "requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk",
                        "limitedDisk", "requiredGPUMemory", "limitedGPUMemory"}
    # workloadReplicas wired to values, for the engine and llm-init
    assert manifest["workloadReplicas"] == {app_name: 1, "llminit": 1}
    assert f"replicas: {{{{ .Values.workloads.{app_name}.replicaCount }}}}" in files["templates/engine.yaml"]
    assert "replicas: {{ .Values.workloads.llminit.replicaCount }}" in files["templates/llm-init.yaml"]
    assert yaml.safe_load(files["values.yaml"])["workloads"] == {app_name: {"replicaCount": 1}, "llminit": {"replicaCount": 1}}
    # system env values through valueFrom, the token only through the Secret
    envs = {e["envName"]: e for e in manifest["envs"]}
    assert envs["HF_ENDPOINT"]["valueFrom"] == {"envName": "OLARES_SYSTEM_HUGGINGFACE_SERVICE"}
    assert envs["HF_TOKEN"]["valueFrom"] == {"envName": "OLARES_SYSTEM_HUGGINGFACE_TOKEN"}
    assert manifest["options"]["apiTimeout"] == 0
    assert not manifest.get("provider") and not manifest.get("permission", {}).get("provider")


def _deployment(tmp_path: Path, app_name: str, target: str, gpu: str | None, olares_env: dict[str, str] | None = None) -> dict[str, Any]:
    """The rendered objects by kind; "Deployment" is the engine's, "llminit" llm-init's."""
    files = rendered(app_name, target)
    chart_dir = tmp_path / app_name
    fsio.write_tree(files, chart_dir)
    entrances = [e["name"] for e in _manifest(files)["entrances"]]
    values = helm.installer_values(app_name, entrances, gpu_type=gpu, olares_env=olares_env)
    objs = [o for _, o in helm.objects(helm.render(helm.load(chart_dir), values, namespace="ns"))]
    out = {o["kind"]: o for o in objs if o["metadata"]["name"] != "llminit"}
    out.update({o["metadata"]["name"]: o for o in objs if o["metadata"]["name"] == "llminit"})
    return out


def test_current_gpu_request_is_bare_mib(tmp_path: Path) -> None:
    objs = _deployment(tmp_path, "llamacppqwen36mtpone", "current", "nvidia")
    dep = objs["Deployment"]
    assert dep["metadata"]["annotations"]["applications.app.bytetrade.io/gpu-inject"] == "llamacpp"
    engine = dep["spec"]["template"]["spec"]["containers"][0]
    assert engine["resources"]["requests"]["nvidia.com/gpumem"] == 23552
    assert engine["resources"]["limits"]["nvidia.com/gpumem"] == 23552


def test_model_store_and_token(tmp_path: Path) -> None:
    objs = _deployment(tmp_path, "llamacppqwen36mtpone", "current", "nvidia",
                       olares_env={"HF_TOKEN": "hf_secret", "HF_ENDPOINT": "https://hf-mirror.example"})
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    assert pod["volumes"][0]["hostPath"]["path"] == "/olares/share/appcommon/huggingface"
    helper = objs["llminit"]["spec"]["template"]["spec"]
    assert helper["volumes"][0]["hostPath"]["path"] == "/olares/share/appcommon/huggingface"
    init = helper["containers"][0]  # llm-init downloads
    env = {e["name"]: e for e in init["env"]}
    assert env["HF_ENDPOINT"]["value"] == "https://hf-mirror.example"
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "llamacppqwen36mtpone-hf-token"
    assert objs["Secret"]["stringData"] == {"HF_TOKEN": "hf_secret"}
    # the token is nowhere else in the rendered objects
    assert "hf_secret" not in yaml.safe_dump(objs["Deployment"]) + yaml.safe_dump(objs["ConfigMap"])
    # the engine mounts the store read-only and starts from the wrapper that waits for llm-init
    engine = pod["containers"][0]
    assert engine["volumeMounts"][0] == {"name": "hf-cache", "mountPath": "/cache/hf/hub", "readOnly": True}
    assert engine["command"] == ["/bin/sh", "/llm-init/wrappers/engine.sh"]


def test_public_repo_needs_no_token(tmp_path: Path) -> None:
    objs = _deployment(tmp_path, "llamacppqwen36mtpone", "current", "nvidia")
    assert objs["Secret"]["stringData"] == {"HF_TOKEN": ""}
    env = {e["name"]: e for e in objs["llminit"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["HF_ENDPOINT"]["value"] == "https://huggingface.co"
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"] is True


def test_legacy_target_uses_flat_resources(tmp_path: Path) -> None:
    files = rendered("llamacppqwen36mtpone", "legacy")
    spec = _manifest(files)["spec"]
    assert "accelerator" not in spec
    # the administrator's install: the engine (4/16 cores, 20Gi/40Gi) plus the proxy client
    # (10m/500m, 64Mi/500Mi), CPU rounded up to whole cores
    assert (spec["requiredCpu"], spec["limitedCpu"]) == (5, 17)
    assert (spec["requiredMemory"], spec["limitedMemory"]) == ("20544Mi", "41460Mi")
    assert (spec["requiredGpu"], spec["limitedGpu"]) == ("23552Mi", "23552Mi")
    assert "workloadReplicas" not in _manifest(files)
    objs = _render_with_helm(tmp_path, files, "llamacppqwen36mtpone", owner="alice", admin="alice", gpu="nvidia")
    dep = next(o for o in objs if o["kind"] == "Deployment" and o["spec"]["template"]["spec"].get("initContainers"))
    assert dep["metadata"]["annotations"]["applications.app.bytetrade.io/gpu-inject"] == "true"
    assert "nvidia.com/gpumem" not in dep["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]


def test_cpu_mode_drops_the_gpu(tmp_path: Path) -> None:
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text().replace("targets: [current, legacy]", "targets: [current]\nmodes: [nvidia, cpu]")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    files = render.render(load_app(app_dir), targets.CURRENT)
    modes = [e["mode"] for e in _manifest(files)["spec"]["accelerator"]]
    assert modes == ["nvidia", "cpu"]
    chart_dir = tmp_path / "chart" / "llamacppqwen36mtpone"
    fsio.write_tree(files, chart_dir)
    for gpu, annotated, layers in (("nvidia", True, None), ("cpu", False, "--n-gpu-layers 0")):
        values = helm.installer_values("llamacppqwen36mtpone", ["llamacppqwen36mtpone"], gpu_type=gpu)
        objs = {(o["kind"], o["metadata"]["name"]): o for _, o in helm.objects(helm.render(helm.load(chart_dir), values, namespace="ns"))}
        dep = objs["Deployment", "llamacppqwen36mtpone"]
        assert ("applications.app.bytetrade.io/gpu-inject" in dep["metadata"].get("annotations", {})) is annotated
        engine = dep["spec"]["template"]["spec"]["containers"][0]
        assert ("nvidia.com/gpumem" in engine["resources"]["limits"]) is annotated
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert "--n-gpu-layers 99" in env["ENGINE_ARGS"]
        assert env.get("ENGINE_EXTRA_ARGS") == layers  # the wrapper appends it: the later flag wins
        assert kube.schema_errors(dep) == []


def test_build_renders_every_app_and_target(tmp_path: Path) -> None:
    out = tmp_path / "charts"
    assert main(["build", "--apps-dir", str(APPS), "--out", str(out)]) == ExitCode.OK
    built = sorted(str(p.relative_to(out)) for p in out.glob("*/*"))
    assert built == sorted(f"{t}/{a}" for a, t in CASES)


def test_locales_render_their_own_i18n_files(tmp_path: Path) -> None:
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text()
    at = text.rindex("    locales:\n      zh-CN:\n        summary: ")  # the newest entry's
    text = text[:at].removesuffix('    notes: ""\n') + "    notes: measured nothing new\n" + text[at:]
    start = text.index("    full_description: |\n      **Qwen3.6-27B，多 Token")
    end = text.index("\n\nengine:")
    text = text[:start] + text[end:]  # zh-CN without a full description of its own
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    files = render.render(load_app(app_dir), targets.CURRENT)
    assert _manifest(files)["spec"]["locale"] == ["en-US", "zh-CN"]
    zh = yaml.safe_load(files["i18n/zh-CN/OlaresManifest.yaml"])
    assert zh["metadata"]["title"] == "Qwen36 27B 长上下文"
    assert zh["spec"]["upgradeDescription"].startswith("**1.0.15** (2026-12-06): Olares 1.12.6+：从 1.0.9 或 1.0.10 升级时沿用其已下载的模型，不再重新下载")
    assert "measured nothing new" in zh["spec"]["upgradeDescription"]  # notes fall back to en-US
    assert zh["spec"]["fullDescription"] == zh["metadata"]["description"]  # exactly, no newline added
    en = yaml.safe_load(files["i18n/en-US/OlaresManifest.yaml"])
    assert en["metadata"]["title"] == "Qwen36 27B Long Context"


def _one_target_app(tmp_path: Path, source: str, target: str) -> Path:
    """A bundled app copied with `targets: [TARGET]` only (its model lock beside it)."""
    import shutil

    dest = tmp_path / "apps" / source
    shutil.copytree(APPS / source, dest, ignore=shutil.ignore_patterns("releases"))
    text = (dest / "app.yaml").read_text()
    lines = [f"targets: [{target}]" if line.startswith("targets:") else line for line in text.splitlines()]
    (dest / "app.yaml").write_text("\n".join(lines) + "\n")
    assert load_app(dest).targets == [target]
    return dest


@pytest.mark.parametrize("declared,asked", [("legacy", "current"), ("current", "legacy")])
def test_render_refuses_a_target_the_app_does_not_declare(declared: str, asked: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # issue #50.6: a legacy-only app rendered for current wrote 0.12.0 with apiVersion v2, a
    # current-only one rendered for legacy wrote 0.10.0 with v3 -- charts no device installs; exit 0
    app_dir = _one_target_app(tmp_path, "llamacppqwen36mtpone", declared)
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["render", str(app_dir), "--target", asked, "--out", str(out)]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert f"declares targets: {declared}" in err and f"--target {asked}" in err
    assert not out.exists()  # nothing written, not even the declared target's chart
    assert main(["render", str(app_dir), "--target", asked, "--target", declared, "--out", str(out)]) == ExitCode.INPUT
    assert not out.exists()
    assert main(["render", str(app_dir), "--target", declared, "--out", str(out)]) == ExitCode.OK
    assert (out / declared / "llamacppqwen36mtpone" / "OlaresManifest.yaml").is_file()


def test_compiled_templates_are_kept_and_an_edited_template_compiles_again(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The templates' compiled code is kept per machine ($OLARES_PACK_CACHE/jinja); an edit of a
    template at the same path must show in the next render, not the kept code."""
    import shutil

    from olares_pack.render import generation

    templates = tmp_path / "templates"
    shutil.copytree(generation.templates_root(), templates)  # type: ignore[arg-type]
    monkeypatch.setenv("OLARES_PACK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(generation, "templates_root", lambda: templates)
    app = load_app(APPS / "llamacppqwen36mtpone")

    def rendered() -> dict[str, str]:
        render._environment.cache_clear()  # a fresh process's environment
        return render.render(app, targets.get("current"))

    try:
        first = rendered()
        kept = sorted((tmp_path / "cache" / "jinja").iterdir())
        assert kept and rendered() == first  # read back from the kept code, the same chart
        helmignore = templates / "helmignore.j2"
        helmignore.write_text(helmignore.read_text() + "# edited\n")
        assert rendered()[".helmignore"] == first[".helmignore"] + "# edited\n"
    finally:
        render._environment.cache_clear()
