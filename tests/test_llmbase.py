"""The shared LLM form (llmbase): the engine's wrapper verifies the model before the engine starts,
and the rendered chart follows the official base chart of beclab/apps field by field."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import APPS

from olares_pack import olares as targets
from olares_pack.apps.load import load_app
from olares_pack.charts import helm
from olares_pack.common import fsio
from olares_pack.common.errors import ExitCode
from olares_pack.render import app as render
from olares_pack.render import llmbase
from oracle import oracle  # noqa: F401 - the fixture

REPO = "example/tiny-GGUF"
FILE = "tiny-Q4_K_M.gguf"


def _app(tmp_path: Path, *, size: int | None, sha256: str | None) -> Path:
    """The example app on a tiny model; size and sha256 None: recorded as the example app's are (not)."""
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text()
    text = text.replace("repo: unsloth/Qwen3.6-27B-MTP-GGUF", f"repo: {REPO}")
    recorded = "" if size is None else f"\n  size: {size}\n  sha256: {sha256}"
    text = text.replace("file: Qwen3.6-27B-UD-Q3_K_XL.gguf", f"file: {FILE}{recorded}")
    text = text.replace("targets: [current, legacy]", "targets: [current]")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    return app_dir


def _objects(app_dir: Path, tmp_path: Path, gpu: str | None = "nvidia") -> list[dict[str, Any]]:
    files = render.render(load_app(app_dir), targets.CURRENT)
    chart = tmp_path / "chart" / app_dir.name
    fsio.write_tree(files, chart)
    manifest = yaml.safe_load(files["OlaresManifest.yaml"])
    values = helm.installer_values(app_dir.name, [e["name"] for e in manifest["entrances"]], gpu_type=gpu)
    return [o for _, o in helm.objects(helm.render(helm.load(chart), values, namespace="ns"))]


class Device:
    """What the engine container sees, on this machine: the HF cache llm-init filled, its run-state
    folder with the sentinel, the verdicts folder; the engine binary is a stand-in that records
    its argv (the real one needs the GPU)."""

    def __init__(self, tmp_path: Path, objects: list[dict[str, Any]], content: bytes, blob_name: str = "b1") -> None:
        self.root = tmp_path / "device"
        dep = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] != "llminit")
        self.container = dep["spec"]["template"]["spec"]["containers"][0]
        cm = next(o for o in objects if o["kind"] == "ConfigMap")
        self.script = self.root / "engine.sh"
        self.root.mkdir(parents=True)
        self.script.write_text(cm["data"]["engine.sh"])
        repo_dir = self.root / "hub" / f"models--{REPO.replace('/', '--')}"
        (repo_dir / "refs").mkdir(parents=True)
        (repo_dir / "refs" / "main").write_text("0" * 40)
        snap = repo_dir / "snapshots" / ("0" * 40)
        snap.mkdir(parents=True)
        blob = repo_dir / "blobs" / blob_name
        blob.parent.mkdir()
        blob.write_bytes(content)
        (snap / FILE).symlink_to(blob)  # the hub cache's layout: snapshot entries link to blobs
        (self.root / "run").mkdir()
        (self.root / "run" / "model_download_finish").write_text("")
        (self.root / "run" / "engine_args").write_text(
            next(e["value"] for e in self.container["env"] if e["name"] == "ENGINE_ARGS"))
        self.engine_log = self.root / "engine-argv"
        fake = self.root / "llama-server"
        fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {self.engine_log}\n')
        fake.chmod(0o755)
        self.blob = blob

    def start(self) -> subprocess.CompletedProcess[str]:
        env = {e["name"]: e["value"] for e in self.container["env"] if "value" in e}
        env.update(PATH=os.environ["PATH"], HF_HUB_CACHE=str(self.root / "hub"), RUN_DIR=str(self.root / "run"),
                   VERIFY_DIR=str(self.root / "verified"), LLAMA_SERVER_BIN=str(self.root / "llama-server"),
                   TERMINATION_LOG=str(self.root / "termination-log"), WAIT_INTERVAL="1")
        if self.engine_log.exists():
            self.engine_log.unlink()
        return subprocess.run(["/bin/sh", str(self.script)], env=env, capture_output=True, text=True, timeout=60)


CONTENT = b"GGUF" + bytes(range(256)) * 64


def test_a_matching_model_starts_the_engine_and_is_hashed_once(tmp_path: Path) -> None:
    app_dir = _app(tmp_path, size=len(CONTENT), sha256=hashlib.sha256(CONTENT).hexdigest())
    device = Device(tmp_path, _objects(app_dir, tmp_path), CONTENT)
    first = device.start()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "checking sha256" in first.stdout and "model verified" in first.stdout
    argv = device.engine_log.read_text().split("\n")
    assert argv[:2] == ["--model", str(device.root / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots" / ("0" * 40) / FILE)]
    assert argv[argv.index("--alias") + 1] == "example/tiny-GGUF:Q4_K_M"
    assert argv[argv.index("--port") + 1] == "8081"
    assert argv[argv.index("--ctx-size") + 1] == "262144"
    assert '{"enable_thinking":false}' in argv  # a JSON argument survives the word split
    # a restart does not hash the file again
    second = device.start()
    assert second.returncode == 0 and "checking sha256" not in second.stdout
    assert "checked before (ok)" in second.stdout


def test_a_wrong_sha256_stops_the_engine_with_the_message(tmp_path: Path) -> None:
    wrong = hashlib.sha256(b"another file").hexdigest()
    app_dir = _app(tmp_path, size=len(CONTENT), sha256=wrong)
    device = Device(tmp_path, _objects(app_dir, tmp_path), CONTENT)
    run = device.start()
    assert run.returncode == 3
    assert not device.engine_log.exists(), "the engine started on a file that differs"
    message = f"MODEL CHECK FAILED: {FILE}: sha256 {hashlib.sha256(CONTENT).hexdigest()}, expected {wrong};"
    assert message in run.stdout
    assert message in (device.root / "termination-log").read_text()
    # once per file: the restart fails again at once, without hashing
    again = device.start()
    assert again.returncode == 3 and "checking sha256" not in again.stdout and message in again.stdout
    # a new download (another file) is checked again
    device.blob.write_bytes(CONTENT + b"x")
    third = device.start()
    assert third.returncode == 3 and f"size {len(CONTENT) + 1} bytes, expected {len(CONTENT)}" in third.stdout


def test_a_truncated_file_is_refused_without_hashing(tmp_path: Path) -> None:
    app_dir = _app(tmp_path, size=len(CONTENT) * 2, sha256=hashlib.sha256(CONTENT).hexdigest())
    device = Device(tmp_path, _objects(app_dir, tmp_path), CONTENT)
    run = device.start()
    assert run.returncode == 3 and "checking sha256" not in run.stdout
    assert f"size {len(CONTENT)} bytes, expected {len(CONTENT) * 2}" in run.stdout
    assert not device.engine_log.exists()


def test_without_a_recorded_sha256_the_file_is_checked_against_its_hugging_face_blob_name(tmp_path: Path) -> None:
    app_dir = _app(tmp_path, size=None, sha256=None)  # as the example app: nothing recorded
    objects = _objects(app_dir, tmp_path)
    env = {e["name"]: e.get("value") for e in Device(tmp_path / "a", objects, CONTENT).container["env"]}
    assert env["MODEL_FILES"] == f"{FILE}||"
    # huggingface_hub names an LFS download's blob by the sha256 Hugging Face published for it
    published = hashlib.sha256(CONTENT).hexdigest()
    good = Device(tmp_path / "b", objects, CONTENT, blob_name=published)
    run = good.start()
    assert run.returncode == 0 and "records no sha256; checking" in run.stdout and good.engine_log.exists()
    # a file that is not what Hugging Face published under that name (corrupted or replaced in the cache)
    other = hashlib.sha256(b"another file").hexdigest()
    bad = Device(tmp_path / "c", objects, CONTENT, blob_name=other)
    run = bad.start()
    assert run.returncode == 3 and not bad.engine_log.exists()
    assert f"MODEL CHECK FAILED: {FILE}: sha256 {published}, but Hugging Face published {other} for it;" in run.stdout
    # a cache that does not name the file by a sha256: the engine starts, and the log says it was not verified
    plain = Device(tmp_path / "d", objects, CONTENT)
    run = plain.start()
    assert run.returncode == 0 and f"{FILE}: NOT VERIFIED" in run.stdout


def test_engine_args_refuse_white_space(tmp_path: Path) -> None:
    from olares_pack.common.errors import InputError

    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text().replace(
        "  chat_template_kwargs: {enable_thinking: false}", "  chat_template_kwargs: {enable_thinking: false}\n  extra_args: [--system-prompt, two words]")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    with pytest.raises(InputError) as exc:
        load_app(app_dir)  # refused at load, naming the field and the argument
    (problem,) = exc.value.problems
    assert "'two words' is empty or holds white space" in problem.message and "engine.shared: false" in problem.message
    assert problem.file.endswith("app.yaml")


# ---- against the official chart of the same model, field by field

OFFICIAL = Path(__file__).parent / "data" / "official"


def _helm_objects(chart: Path, name: str, gpu: str = "nvidia") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = yaml.safe_load((chart / "OlaresManifest.yaml").read_text())
    # the installer passes each env's value (here: its default) as .Values.olaresEnv
    olares_env = {e["envName"]: str(e["default"]) for e in manifest["envs"] if "default" in e}
    values = helm.installer_values(name, [e["name"] for e in manifest["entrances"]], gpu_type=gpu, olares_env=olares_env)
    return manifest, [o for _, o in helm.objects(helm.render(helm.load(chart), values, namespace="ns"))]


def _shape(manifest: dict[str, Any], objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The fields the pattern is made of, the app's own name replaced by APP."""
    def n(x: Any) -> Any:
        return yaml.safe_load(yaml.safe_dump(x).replace(name, "APP"))

    out: dict[str, Any] = {}
    deps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    for key, dep in ((k if k == "llminit" else "engine", d) for k, d in deps.items()):
        pod = dep["spec"]["template"]["spec"]
        c = pod["containers"][0]
        out[f"{key}.name"] = n(dep["metadata"]["name"])
        out[f"{key}.replicas"] = dep["spec"]["replicas"]
        out[f"{key}.strategy"] = dep["spec"]["strategy"]
        out[f"{key}.gpu-inject"] = (dep["metadata"].get("annotations") or {}).get("applications.app.bytetrade.io/gpu-inject")
        out[f"{key}.container"] = c["name"]
        out[f"{key}.command"] = c.get("command")
        out[f"{key}.env"] = sorted(e["name"] for e in c.get("env", []))
        out[f"{key}.ports"] = [p["containerPort"] for p in c.get("ports", [])]
        out[f"{key}.probes"] = {p: c[p]["httpGet"]["path"] for p in ("startupProbe", "livenessProbe", "readinessProbe") if p in c}
        out[f"{key}.mounts"] = sorted((m["mountPath"], bool(m.get("readOnly"))) for m in c.get("volumeMounts", []))
        out[f"{key}.hostPaths"] = sorted(n(v["hostPath"]["path"]) for v in pod["volumes"] if "hostPath" in v)
        out[f"{key}.gpumem"] = [c["resources"][s].get("nvidia.com/gpumem") for s in ("requests", "limits")]
        out[f"{key}.init"] = [i["name"] for i in pod.get("initContainers", [])]
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    out["services"] = sorted((n(s), [(p["port"], p["targetPort"]) for p in o["spec"]["ports"]]) for s, o in services.items())
    for field in ("entrances", "sharedEntrances"):
        out[field] = [{k: n(v) for k, v in e.items() if k not in ("title", "icon")} for e in manifest.get(field, [])]
    out["workloadReplicas"] = n(manifest["workloadReplicas"])
    out["onlyAdmin"] = manifest["spec"].get("onlyAdmin")
    out["options"] = {k: manifest["options"].get(k) for k in ("shared", "LLMGatewaySupported", "apiTimeout")}
    out["permission"] = manifest.get("permission")
    envs = {e["envName"]: e for e in manifest["envs"]}
    out["envs"] = {k: (e.get("editable"), "valueFrom" in e) for k, e in envs.items()}
    out["locale"] = manifest["spec"]["locale"]
    return out


# Each difference from the official chart, and why. A change on either side that is not listed here
# fails the test.
INTENDED = {
    "engine.command": "the wrapper is olares-pack's (engine.sh): it verifies the model files before the engine starts",
    "engine.env": "MODEL_REPO/MODEL_REVISION/MODEL_FILES/VERIFY_DIR/RUN_DIR for the verification; HF_HUB_OFFLINE: the "
                  "engine never reaches the hub; MODEL_MODE as in the official base chart; no PGID/PUID/TZ/PYTHONUNBUFFERED "
                  "(conventions the llama.cpp image does not read)",
    "engine.mounts": "the verification verdicts folder (read-write): each file is hashed once",
    "engine.hostPaths": "the same, on the App Common store",
    "llminit.env": "HF_ENDPOINT and HF_TOKEN always declared (the token from the Secret, optional) instead of only when set",
    "llminit.init": "adopt-model before init-chown: the bundled app links the copy 1.0.9/1.0.10 kept flat in the "
                    "store (model.adopt) into the hub cache; init-chown itself is unchanged",
    "services": "the entrance Service is named after the app (the pattern of charts known to route on devices), "
                "not download-svc",
    "entrances": "the same: entrance name and host are the app's",
    "permission": "appData is not asked for: nothing of this app lives there",
}


def test_the_bundled_llama_app_follows_the_official_chart_field_by_field(tmp_path: Path) -> None:
    name = "llamacppqwen36mtpone"
    files = render.render(load_app(APPS / name), targets.CURRENT)
    ours_dir = tmp_path / name
    fsio.write_tree(files, ours_dir)
    ours = _shape(*_helm_objects(ours_dir, name), name)
    official_name = "llamacppqwen3627bmtpq4kxlv3"
    theirs = _shape(*_helm_objects(OFFICIAL / official_name, official_name), official_name)
    differ = {k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k)}
    assert differ == set(INTENDED), {k: (ours.get(k), theirs.get(k)) for k in differ}
    assert ours["llminit.init"] == ["adopt-model", *theirs["llminit.init"]]
    # what is the same, said explicitly for the pattern's six features
    assert ours["engine.name"] == "APP" and ours["llminit.name"] == "llminit"
    assert ours["engine.probes"] == {} and ours["llminit.probes"] == {"livenessProbe": "/livez", "readinessProbe": "/livez"}
    assert ours["engine.gpumem"] == [23552, 23552] and ours["llminit.gpumem"] == [None, None]
    assert ours["sharedEntrances"] == [{"name": "APP", "host": "sharedentrances-api", "port": 0, "invisible": True, "authLevel": "internal"}]
    assert ours["onlyAdmin"] is True and ours["options"] == {"shared": True, "LLMGatewaySupported": True, "apiTimeout": 0}
    assert ours["envs"]["ENGINE_ARGS"] == ours["envs"]["LOG_LEVEL"] == (True, False)
    assert all(ours["envs"][k] == (False, False) for k in ("MODEL_SOURCE", "MODEL_NAME", "MODEL_MODE", "MODEL_SUPPORTS",
                                                          "LLAMACPP_CPU_REQUEST", "LLAMACPP_REQUIRED_GPU_MEMORY"))
    assert ours["workloadReplicas"] == {"APP": 1, "llminit": 1}
    assert ours["locale"] == ["en-US", "zh-CN"]


def test_the_clone_dialog_values_reach_both_workloads(tmp_path: Path) -> None:
    name = "vllmqwen36turbo27bone"
    files = render.render(load_app(APPS / name), targets.CURRENT)
    fsio.write_tree(files, tmp_path / name)
    manifest = yaml.safe_load(files["OlaresManifest.yaml"])
    env = {e["envName"]: str(e["default"]) for e in manifest["envs"] if "default" in e}
    assert env["ENGINE_ARGS"] == llmbase.engine_args(load_app(APPS / name))
    env.update(ENGINE_ARGS="--max-model-len 32768", LOG_LEVEL="debug", MODEL_SUPPORTS="tools,vision")
    values = helm.installer_values(name, [name], olares_env=env)
    objs = {(o["kind"], o["metadata"]["name"]): o for _, o in helm.objects(helm.render(helm.load(tmp_path / name), values, namespace="ns"))}
    engine = {e["name"]: e.get("value") for e in objs["Deployment", name]["spec"]["template"]["spec"]["containers"][0]["env"]}
    helper = {e["name"]: e.get("value") for e in objs["Deployment", "llminit"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert engine["ENGINE_ARGS"] == helper["ENGINE_ARGS"] == "--max-model-len 32768"
    assert helper["LOG_LEVEL"] == "debug"
    # the gateway's keys: groups expanded as the official llm-init.yaml does
    assert helper["MODEL_SUPPORTS"] == ("supports_function_calling,supports_parallel_function_calling,supports_tool_choice,"
                                        "supports_vision")
    assert engine["MODEL_NAME"] == helper["MODEL_NAME"] == "Lorbus/Qwen3.6-27B-int4-AutoRound"
    res = objs["Deployment", name]["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["limits"]["nvidia.com/gpumem"] == 23552 and res["requests"]["cpu"] == "4"
    # the envelope is the sum of both workloads' containers
    acc = manifest["spec"]["accelerator"][0]
    assert (acc["requiredCpu"], acc["limitedCpu"], acc["requiredMemory"], acc["limitedMemory"]) == ("4200m", "17", "20736Mi", "43008Mi")


def test_diff_shows_an_engine_args_default_change_as_a_flag_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from olares_pack.cli import main

    paths = []
    for label, ctx in (("a", "262144"), ("b", "131072")):
        app_dir = tmp_path / label / "llamacppqwen36mtpone"
        app_dir.mkdir(parents=True)
        (app_dir / "app.yaml").write_text((APPS / "llamacppqwen36mtpone" / "app.yaml").read_text()
                                          .replace("ctx_size: 262144", f"ctx_size: {ctx}"))
        paths.append(str(app_dir / "app.yaml"))
    capsys.readouterr()
    assert main(["diff", *paths, "--format", "json"]) == ExitCode.FINDINGS
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert [(c["section"], c["key"], c["old"], c["new"]) for c in changes] == [("arguments", "--ctx-size", "262144", "131072")]


def test_import_of_an_official_llmbase_app_renders_back_to_an_equivalent_chart(tmp_path: Path) -> None:
    import datetime as dt

    from olares_pack import diff
    from olares_pack.charts.source import ChartSource
    from olares_pack.importing import importer, structure

    official_name = "llamacppqwen3627bmtpq4kxlv3"
    found = importer.find(str(OFFICIAL / official_name))[0]
    typed, notes = structure.structured(importer.to_app(found, dt.date(2026, 12, 4)).app)
    assert typed.engine.shared and typed.engine.kind == "llamacpp"
    assert typed.engine.llm_init.ref == "docker.io/beclab/llm-init:v1.3.1"
    assert typed.model.repo == "unsloth/Qwen3.6-27B-MTP-GGUF" and [f.name for f in typed.model.files] == ["Qwen3.6-27B-UD-Q4_K_XL.gguf"]
    assert typed.model.capabilities == ["tools", "thinking"]
    assert (typed.resources.cpu.request, typed.resources.memory.limit, typed.resources.gpu_memory_mib) == ("1030m", "30Gi", 23552)
    files = render.render(typed, targets.CURRENT)
    fsio.write_tree(files, tmp_path / official_name)
    ours = _shape(*_helm_objects(tmp_path / official_name, official_name), official_name)
    theirs = _shape(*_helm_objects(OFFICIAL / official_name, official_name), official_name)
    differ = {k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k)}
    # the same differences as the bundled app's, and one more: nvidia-gb10 is not a mode olares-pack renders
    assert differ <= set(INTENDED) | {"locale"}, {k: (ours.get(k), theirs.get(k)) for k in differ}
    # the engine runs with the same arguments, whatever their spelling (-c 131072 = --ctx-size 131072)
    res = diff.compare(diff.facts(ChartSource("official", official_name, found.files)),
                       diff.facts(ChartSource("typed", official_name, files)))
    assert [c for c in res.changes if c.section in ("arguments", "image", "model")] == []


def test_vram_estimates_the_default_engine_args_and_says_an_edit_is_the_installers_risk(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from olares_pack.cli import main

    capsys.readouterr()
    main(["vram", "llamacppqwen36mtpone", "--apps-dir", str(APPS), "--format", "json"])
    est = json.loads(capsys.readouterr().out)["estimates"][0]
    assert est["settings"]["ctx"] == 262144  # the default ENGINE_ARGS' --ctx-size
    assert any("an edited value is the installer's own risk" in n and "--ctx-size 262144" in n for n in est["notes"])
    # a per-user app has no clone surface: nothing to say
    app = load_app(APPS / "llamacppqwen36mtpone")
    app.engine.shared = False
    assert llmbase.edited_args_note(app) is None


def test_the_official_checker_accepts_the_official_llmbase_fixtures(oracle) -> None:  # noqa: F811
    for chart in ("llamacppqwen3627bmtpq4kxlv3", "vllmllmbasev3"):
        v = oracle.verdict(OFFICIAL / chart)
        assert v.accepted, (chart, v.errors)


def test_locking_the_model_records_its_sha256_and_the_chart_checks_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`vram --lock` over the hub (a faithful fake: X-Linked-Etag on the resolve redirect) writes
    the file's size and sha256 into app.yaml; the render's MODEL_FILES carries them."""
    from fakehub import REPO as HUB_REPO
    from fakehub import serve
    from test_vram import write_hybrid

    from olares_pack.cli import main

    write_hybrid(tmp_path / "m.gguf")
    data = (tmp_path / "m.gguf").read_bytes()
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text()
    text = text.replace("file: Qwen3.6-27B-UD-Q3_K_XL.gguf", "file: m.gguf").replace("repo: unsloth/Qwen3.6-27B-MTP-GGUF", f"repo: {HUB_REPO}")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    with serve() as (hub, url):
        hub.files["m.gguf"] = data
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setenv("HF_TOKEN", "")
        assert main(["vram", str(app_dir), "--lock"]) in (0, 1)
    app = load_app(app_dir)
    assert (app.model.files[0].size, app.model.files[0].sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert "# RTX 5090 Laptop GPU" in (app_dir / "app.yaml").read_text()  # comments kept
    files = render.render(app, targets.CURRENT)
    assert f"m.gguf|{len(data)}|{hashlib.sha256(data).hexdigest()}" in files["templates/engine.yaml"]


def test_engine_shared_false_keeps_the_per_user_chart(tmp_path: Path) -> None:
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text().replace("  build: ad27757", "  shared: false\n  build: ad27757")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    files = render.render(load_app(app_dir), targets.CURRENT)
    manifest = yaml.safe_load(files["OlaresManifest.yaml"])
    assert "templates/deployment.yaml" in files and "templates/llm-init.yaml" not in files
    assert "sharedEntrances" not in manifest and "onlyAdmin" not in manifest["spec"]
    assert "shared" not in manifest["options"] and manifest["workloadReplicas"] == {"llamacppqwen36mtpone": 1}
    assert not [e for e in manifest["envs"] if e["envName"] == "ENGINE_ARGS"]


def test_lint_checks_the_flags_of_the_engine_args_default(tmp_path: Path) -> None:
    from olares_pack.charts.source import from_folder
    from olares_pack.lint import lint_chart

    name = "vllmqwen36turbo27bone"
    files = render.render(load_app(APPS / name), targets.CURRENT)
    # --language-model-only arrived after vLLM 0.11: an upstream 0.11.0 image refuses it
    files = {k: v.replace("docker.io/aamsellem/vllm-qwen36-blackwell:0.20.0-genesis-v3", "vllm/vllm-openai:v0.11.0")
             for k, v in files.items()}
    fsio.write_tree(files, tmp_path / name)
    findings = lint_chart(from_folder(tmp_path / name)).findings
    assert [(f.severity, f.message) for f in findings if f.rule == "engine.flag"] == \
        [("error", "vLLM 0.11.0 does not accept --language-model-only: vllm serve exits at start")]
    # the flag is written in the manifest's ENGINE_ARGS default: the finding points there (issue #36)
    flag = next(f for f in findings if f.rule == "engine.flag")
    assert flag.file == "OlaresManifest.yaml" and flag.path.startswith("envs[") and flag.path.endswith("].default")
    assert "--language-model-only" in files["OlaresManifest.yaml"].splitlines()[flag.line - 1]


def test_a_cpu_only_shared_app_asks_for_no_gpu(tmp_path: Path) -> None:
    text = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text().replace("targets: [current, legacy]", "targets: [current]\nmodes: [cpu]")
    text = text.replace("  gpu_memory_mib: 23552\n", "")
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    for gpu in ("nvidia", "cpu", None):
        objs = _objects(app_dir, tmp_path / str(gpu), gpu)
        dep = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] != "llminit")
        assert "applications.app.bytetrade.io/gpu-inject" not in (dep["metadata"].get("annotations") or {})
        res = dep["spec"]["template"]["spec"]["containers"][0]["resources"]
        assert "nvidia.com/gpumem" not in res["requests"] and "nvidia.com/gpumem" not in res["limits"]
    manifest = yaml.safe_load(render.render(load_app(app_dir), targets.CURRENT)["OlaresManifest.yaml"])
    assert "LLAMACPP_REQUIRED_GPU_MEMORY" not in [e["envName"] for e in manifest["envs"]]


def _adopt_step(tmp_path: Path, adopt: list[str]) -> tuple[dict[str, Any], str]:
    app_dir = _app(tmp_path, size=None, sha256=None)
    text = (app_dir / "app.yaml").read_text()
    text = text.replace("  adopt: [hf-files/unsloth/Qwen3.6-27B-MTP-GGUF/main]\n", "")
    if adopt:
        text = text.replace(f"repo: {REPO}\n", f"repo: {REPO}\n  adopt: [{', '.join(adopt)}]\n")
    (app_dir / "app.yaml").write_text(text)
    objects = _objects(app_dir, tmp_path)
    llminit = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "llminit")
    inits = {c["name"]: c for c in llminit["spec"]["template"]["spec"].get("initContainers", [])}
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-wrappers"))
    return inits, cm["data"].get("adopt.sh", "")


def _run_adopt(step: dict[str, Any], script: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {e["name"]: e["value"] for e in step["env"]}
    env.update(PATH=os.environ["PATH"], HF_HUB_CACHE=str(store))
    (store.parent / "adopt.sh").write_text(script)
    # the step runs in busybox (the chart's chown image); this machine's busybox where it has one
    shell = ["busybox", "sh"] if subprocess.run(["sh", "-c", "command -v busybox"], capture_output=True).returncode == 0 else ["/bin/sh"]
    return subprocess.run([*shell, str(store.parent / "adopt.sh")], env=env, capture_output=True, text=True, timeout=60)


def test_an_earlier_flat_copy_is_linked_into_the_hub_cache_under_its_content_hash(tmp_path: Path) -> None:
    """1.0.9/1.0.10 kept the model flat (hf-files/<repo>/<rev>/<file>); the shared form's llm-init
    skips a download whose blob (named by the etag: an LFS file's sha256) is in the cache."""
    inits, script = _adopt_step(tmp_path, [f"hf-files/{REPO}/main"])
    assert list(inits) == ["adopt-model", "init-chown"]  # before llm-init asks the hub, before the chown
    store = tmp_path / "store"
    old = store / "hf-files" / REPO / "main" / FILE
    old.parent.mkdir(parents=True)
    old.write_bytes(CONTENT)
    (old.parent / f"{FILE}.part").write_bytes(CONTENT[:10])  # an interrupted download is never adopted
    run = _run_adopt(inits["adopt-model"], script, store)
    assert run.returncode == 0, run.stdout + run.stderr
    blobs = store / f"models--{REPO.replace('/', '--')}" / "blobs"
    sha = hashlib.sha256(CONTENT).hexdigest()
    assert (blobs / sha).stat().st_ino == old.stat().st_ino  # a link, not a second copy; the old path stays
    # a small file also gets the name git gives it (a file kept in git has its blob sha1 as etag)
    git = hashlib.sha1(b"blob %d\0" % len(CONTENT) + CONTENT).hexdigest()
    assert sorted(p.name for p in blobs.iterdir()) == sorted([sha, git])
    again = _run_adopt(inits["adopt-model"], script, store)
    assert again.returncode == 0 and "adopted before" in again.stdout and "blob" not in again.stdout
    # the engine's wrapper then finds the file Hugging Face published under that name
    device = Device(tmp_path / "dev", _objects(_app(tmp_path / "x", size=None, sha256=None), tmp_path / "x"),
                    (blobs / sha).read_bytes(), blob_name=sha)
    assert device.start().returncode == 0
    # a device that upgraded before this step downloaded the same bytes again: the old copy is made
    # a link to the cache's blob, so the second 15 GB is freed, and it is not hashed at the next start
    twice = tmp_path / "twice"
    (twice / "hf-files" / REPO / "main").mkdir(parents=True)
    (twice / "hf-files" / REPO / "main" / FILE).write_bytes(CONTENT)
    (twice / blobs.relative_to(store)).mkdir(parents=True)
    (twice / blobs.relative_to(store) / sha).write_bytes(CONTENT)
    run = _run_adopt(inits["adopt-model"], script, twice)
    assert run.returncode == 0 and "the copy now shares its blob" in run.stdout, run.stdout + run.stderr
    assert (twice / "hf-files" / REPO / "main" / FILE).stat().st_ino == (twice / blobs.relative_to(store) / sha).stat().st_ino
    assert "adopted before" in _run_adopt(inits["adopt-model"], script, twice).stdout


def test_an_earlier_hub_cache_is_linked_blob_by_blob_and_an_app_without_adopt_has_no_step(tmp_path: Path) -> None:
    inits, script = _adopt_step(tmp_path / "a", ["hub/models--example--tiny-GGUF", "hf-files/gone/main"])
    store = tmp_path / "store"
    old = store / "hub" / "models--example--tiny-GGUF" / "blobs"
    old.mkdir(parents=True)
    (old / "etag1").write_bytes(b"weights")
    (old / "etag2.incomplete").write_bytes(b"half")
    run = _run_adopt(inits["adopt-model"], script, store)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no earlier copy in hf-files/gone/main" in run.stdout
    blobs = store / "models--example--tiny-GGUF" / "blobs"
    assert [p.name for p in blobs.iterdir()] == ["etag1"] and (blobs / "etag1").stat().st_nlink == 2
    # the same etag downloaded twice (once per layout): one copy is kept
    (old / "etag3").write_bytes(b"more")
    (blobs / "etag3").write_bytes(b"more")
    assert _run_adopt(inits["adopt-model"], script, store).returncode == 0
    assert (old / "etag3").stat().st_ino == (blobs / "etag3").stat().st_ino
    inits, script = _adopt_step(tmp_path / "b", [])
    assert list(inits) == ["init-chown"] and script == ""


def test_adopt_takes_only_plain_folders_of_the_store(tmp_path: Path) -> None:
    from olares_pack.apps.manifest.model import HFModel

    for bad in ["/olares/share", "hf-files/../../etc", "hf files/x", "a/$(rm -rf)/b"]:
        with pytest.raises(ValueError, match="folder of the shared Hugging Face store"):
            HFModel(repo=REPO, file=FILE, adopt=[bad])
