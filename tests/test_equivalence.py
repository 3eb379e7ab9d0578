"""The semantic comparison (olares_pack/equivalence.py) that decides whether `import --structured`
writes a typed app: what it calls the same, what it calls different, and what it cannot decide."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, serving
from test_import import CHARTS, empty_repo, run_import

from olares_pack import equivalence
from olares_pack.charts.source import packaged
from olares_pack.market.server import Source


def chart_files(name: str) -> dict[str, str]:
    return dict(packaged(CHARTS / name).files)


def kinds(diffs: list[equivalence.Difference]) -> set[str]:
    return {d.kind for d in diffs}


def test_a_chart_is_equivalent_to_itself_and_a_changed_argument_is_not() -> None:
    files = chart_files("vllmserve")
    assert equivalence.compare_charts("vllmserve", files, files) == []
    changed = dict(files)
    changed["values.yaml"] = files["values.yaml"].replace("maxModelLen: 32768", "maxModelLen: 16384")
    diffs = equivalence.compare_charts("vllmserve", files, changed)
    assert kinds(diffs) == {"container.args"}
    assert "32768" in json.dumps(diffs[0].original) and "16384" in json.dumps(diffs[0].other)


def _manifest() -> dict:
    return {"olaresManifest.version": "0.10.0", "apiVersion": "v2", "metadata": {"title": "X", "description": "d"},
            "entrances": [{"name": "x", "host": "x", "port": 8000, "title": "X", "authLevel": "internal"}],
            "spec": {"requiredGpu": "1Gi", "limitedGpu": "24Gi", "requiredCpu": 4, "limitedCpu": 16},
            "permission": {"appData": True}, "options": {"apiTimeout": 0}}


def test_the_shared_form_and_a_lower_gpu_limit_are_differences() -> None:
    a = _manifest()
    b = copy.deepcopy(a)
    b["spec"]["onlyAdmin"] = True
    b["sharedEntrances"] = [{"name": "api", "host": "api", "port": 0, "title": "API"}]
    b["spec"]["limitedGpu"] = "1Gi"
    found = kinds(equivalence.compare_manifests(a, b))
    assert {"manifest.form", "manifest.entrances", "manifest.envelope", "manifest.gpu-limit-lower"} <= found
    # the same quantity written another way is the same envelope
    c = copy.deepcopy(a)
    c["spec"].update(limitedGpu="24576Mi", requiredCpu="4000m")
    assert equivalence.compare_manifests(a, c) == []


def _deployment(env: list[dict], env_from: list[dict] | None = None, init: list[dict] | None = None) -> dict:
    c = {"name": "engine", "image": "docker.io/org/llama:1", "args": ["--ctx-size", "$(CTX)"], "env": env,
         "envFrom": env_from or []}
    return {"kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"containers": [c], "initContainers": init or []}}}}


def test_a_value_read_from_a_configmap_is_the_same_value_written_inline() -> None:
    cm = {"kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"CTX": "8192"}}
    from_cm = [cm, _deployment([], [{"configMapRef": {"name": "cfg"}}])]
    inline = [_deployment([{"name": "CTX", "value": "8192"}])]
    assert equivalence.compare_objects(from_cm, inline) == []
    other = [_deployment([{"name": "CTX", "value": "4096"}])]
    assert kinds(equivalence.compare_objects(from_cm, other)) == {"container.env", "container.args"}
    # a download step the original does not run is a container added
    fetched = [_deployment([{"name": "CTX", "value": "8192"}], init=[{"name": "download", "image": "busybox"}])]
    assert kinds(equivalence.compare_objects(inline, fetched)) == {"container.added"}


def test_a_chart_that_does_not_render_is_undecidable_never_equivalent() -> None:
    files = chart_files("vllmserve")
    broken = dict(files)
    broken["templates/deployment.yaml"] = files["templates/deployment.yaml"] + "\n{{ .Values.nothing.here }}\n"
    assert kinds(equivalence.compare_charts("vllmserve", files, broken)) == {"undecidable"}
    assert equivalence.remaining(equivalence.compare_charts("vllmserve", files, broken), ["undecidable"])  # never accepted


def test_olares_packs_own_charts_import_typed_and_their_users_upgrade_to_the_typed_render(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], control_plane) -> None:  # noqa: ANN001 - a Cluster
    """The bundled catalogue read from its URL is proven equivalent, so typed; the original chart
    installed on the real API server upgrades to the typed render (the users' upgrade)."""
    from olares_pack.importing import upgrade_check

    root = empty_repo(tmp_path)
    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        assert run_import(root, url, extra=("--structured", "--format", "json")) == 0
    rows = json.loads(capsys.readouterr().out)["charts"]
    typed = {r["app"] for r in rows if (r.get("structured") or {}).get("typed")}
    assert {"llamacppqwen36mtpone", "vllmqwen36turbo27bone"} <= typed
    name = "vllmqwen36turbo27bone"
    app_yaml = (root / "apps" / name / "app.yaml").read_text()
    pkg = sorted((ROOT / "packages" / "current").glob(f"{name}-*.tgz"))[-1]
    original = (pkg.name.removeprefix(f"{name}-").removesuffix(".tgz"), pkg.read_bytes())
    assert upgrade_check.problems(control_plane, name, "current", original, upgrade_check.typed_chart(app_yaml, "current")) == []


def test_a_forks_kv_cache_type_is_typed_as_lint_reads_it() -> None:
    """turbo3 (a fork's KV cache type in the fork registry) on a fork's image, or on an image of
    no known origin (lint warns there), is a typed value; on upstream's image it is refused."""
    from olares_pack.apps.load import validate_data
    from olares_pack.common.errors import InputError

    data = yaml.safe_load((ROOT / "apps" / "llamacppqwen36mtpone" / "app.yaml").read_text())
    data["server"]["cache_type"] = {"k": "turbo3", "v": "turbo4"}
    for repository in ("docker.io/org/llama-turboquant", "docker.io/aamsellem/llamacpp-atomic-mtp"):
        image = {"repository": repository, "tag": "b9000"}
        app = validate_data({**data, "engine": {**data["engine"], "image": image}}, "app.yaml")
        assert (app.server.cache_type.k, app.server.cache_type.v) == ("turbo3", "turbo4")
    upstream = {"repository": "ghcr.io/ggml-org/llama.cpp", "tag": "server-cuda-b9000"}
    with pytest.raises(InputError) as exc:
        validate_data({**data, "engine": {**data["engine"], "image": upstream}}, "app.yaml")
    assert "--cache-type-k 'turbo3': a fork's KV cache type" in str(exc.value)


def test_diff_names_the_workload_differences_import_compares(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`diff` shares the comparison: a mount moved to another volume is a `workloads` change."""
    from olares_pack.cli import main

    a, b = tmp_path / "a" / "vllmserve", tmp_path / "b" / "vllmserve"
    for dest in (a, b):
        for path, text in chart_files("vllmserve").items():
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_text(text)
    deployment = b / "templates" / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace("{{ .Values.userspace.appCommon }}/huggingface",
                                                         "{{ .Values.userspace.appData }}/huggingface"))
    capsys.readouterr()
    assert main(["diff", str(a), str(b), "--format", "json", "--target", "legacy"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert [c["section"] for c in changes] == ["workloads"]
    assert "(container.mounts)" in changes[0]["key"] and "appcommon" in json.dumps(changes[0]["old"]).lower()


def test_a_typed_import_keeps_the_selector_so_its_users_upgrade_is_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], control_plane) -> None:  # noqa: ANN001 - a Cluster
    """A Deployment's selector is immutable: the typed render selects the pods as the chart did
    (`selector`), and the original installed on the real API server upgrades to it."""
    from olares_pack.importing import upgrade_check

    root = empty_repo(tmp_path)
    accept = tuple(f"--accept={k}" for k in sorted(equivalence.KINDS) if k not in ("undecidable", "workload.selector"))
    assert run_import(root, str(CHARTS / "vllmserve"), extra=("--structured", "--format", "json", *accept)) == 0
    row = json.loads(capsys.readouterr().out)["charts"][0]
    assert row["structured"]["typed"], row["structured"]
    app_yaml = (root / "apps" / "vllmserve" / "app.yaml").read_text()
    assert yaml.safe_load(app_yaml)["selector"] == {"app": "vllmserve"}
    original = ("2.0.3", packaged(CHARTS / "vllmserve").package)
    typed = upgrade_check.typed_chart(app_yaml, "current")
    assert upgrade_check.problems(control_plane, "vllmserve", "current", original, typed) == []
    # without the kept selector the server refuses the upgrade, and the comparison says why first
    data = yaml.safe_load(app_yaml)
    del data["selector"]
    refused = upgrade_check.typed_chart(yaml.safe_dump(data), "current")
    problems = upgrade_check.problems(control_plane, "vllmserve", "current", original, refused)
    assert problems and "selector" in problems[0]
    from olares_pack.importing.importer import render_app

    diffs = equivalence.compare_charts("vllmserve", chart_files("vllmserve"), render_app(data, "current"))
    assert "workload.selector" in kinds(diffs)


def test_the_engines_flags_in_another_order_are_the_same_process_another_value_is_not() -> None:
    def engine(args: list[str]) -> list[dict]:
        c = {"name": "engine", "image": "docker.io/vllm/vllm-openai:v0.11.0", "command": ["vllm"], "args": args}
        return [{"kind": "Deployment", "metadata": {"name": "x"}, "spec": {"template": {"spec": {"containers": [c]}}}}]

    a = engine(["serve", "org/model", "--max-model-len", "8192", "--port", "8000"])
    b = engine(["serve", "org/model", "--port", "8000", "--max-model-len", "8192"])
    assert equivalence.compare_objects(a, b) == []
    c = engine(["serve", "org/model", "--port", "8000", "--max-model-len", "4096"])
    assert kinds(equivalence.compare_objects(a, c)) == {"container.args"}
    d = engine(["serve", "org/other", "--max-model-len", "8192", "--port", "8000"])  # the positional model
    assert kinds(equivalence.compare_objects(a, d)) == {"container.args"}


def test_command_and_selector_belong_to_the_per_user_form() -> None:
    from olares_pack.apps.load import validate_data
    from olares_pack.common.errors import InputError

    data = yaml.safe_load((ROOT / "apps" / "llamacppqwen36mtpone" / "app.yaml").read_text())
    per_user = {**data, "engine": {**data["engine"], "shared": False, "command": ["/app/llama-server"]},
                "selector": {"io.kompose.service": "llamacppqwen36mtpone"}}
    app = validate_data(per_user, "app.yaml")
    from olares_pack import olares
    from olares_pack.render import app as render
    from olares_pack.render.imported import objects_of

    files = render.render(app, olares.CURRENT)
    objs = objects_of(app.name, files, equivalence.manifest_of(files, app.name))
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    assert deployment["spec"]["selector"]["matchLabels"] == {"io.kompose.service": "llamacppqwen36mtpone"}
    assert deployment["spec"]["template"]["metadata"]["labels"]["io.kompose.service"] == "llamacppqwen36mtpone"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == ["/app/llama-server"]
    for shared in ({"engine": {**data["engine"], "command": ["/app/llama-server"]}},
                   {"selector": {"io.kompose.service": "x"}}):
        with pytest.raises(InputError) as exc:
            validate_data({**data, **shared}, "app.yaml")
        assert "per-user form" in str(exc.value)


# ---------------------------------------------------------------- a chart of its own, kept as typed fields


def _typed_llamashell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """llamashell imported with --structured: a llama.cpp fork started by a bash script that fetches
    the model first (its repository and file in a ConfigMap), an nginx sidecar, a per-user model
    folder, the user's Hugging Face token. The proof compares the script as text: the typed form
    keeps the maintainer's words after the program (engine.script_tail) while its typed arguments
    are the ones they were imported as."""
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "llamashell"), extra=("--structured", "--format", "json")) == 0
    row = json.loads(capsys.readouterr().out)["charts"][0]
    assert row["structured"]["typed"] and row["structured"]["differences"] == [], row["structured"]
    return yaml.safe_load((root / "apps" / "llamashell" / "app.yaml").read_text())


def test_a_chart_of_its_own_is_typed_with_what_it_says_beyond_the_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _typed_llamashell(tmp_path, capsys)
    # the engine's settings are typed, read through the script's variables and the ConfigMap
    assert (data["server"]["alias"], data["server"]["ctx_size"], data["server"]["gpu_layers"]) == ("qwen3-8b", 32768, 99)
    assert data["server"]["chat_template_kwargs"] == {"enable_thinking": False}
    # the chart fetches the model itself: no step of olares-pack's, the script kept up to the program
    assert (data["model"]["repo"], data["model"]["fetch"], data["model"]["path"]) == (
        "example-org/Qwen3-8B-GGUF", "chart", "$MODELS_DIR/Qwen3-8B-Q4_K_M.gguf")
    assert data["engine"]["command"] == ["/bin/bash", "-c"] and data["engine"]["script"].endswith("exec /app/llama-server")
    # the installer's values stay Helm expressions: each user's install gets its own
    w = data["workload"]
    assert w["volumes"][0]["hostPath"]["path"] == "{{ .Values.userspace.appData }}/models"
    assert w["labels"]["owner"] == "{{ .Values.bfl.username }}"
    assert w["engine"]["env"] == [{"name": "HF_TOKEN", "value": '{{ .Values.olaresEnv.HF_TOKEN | default "" }}'}]
    assert [c["name"] for c in w["sidecars"]] == ["nginx"] and w.get("engine_index", 0) == 0
    assert sorted(o["metadata"]["name"] for o in data["objects"]) == ["llamashell", "llamashell-env", "llamashell-nginx"]
    # the manifest as the chart states it, the GPU envelope request and limit apart
    assert data["olares"]["options"]["apiTimeout"] == 3600 and data["olares"]["apiVersion"] == "v3"
    assert (data["resources"]["gpu"]["request"], data["resources"]["gpu"]["limit"]) == ("1Gi", "16Gi")


def test_a_kept_chart_renders_each_users_own_paths_and_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.importing.importer import render_app
    from olares_pack.render.imported import objects_of

    data = _typed_llamashell(tmp_path, capsys)
    original, typed = chart_files("llamashell"), render_app(data, "current")
    manifest = equivalence.manifest_of(original, "llamashell")
    got = {}
    for side, files in (("original", original), ("typed", typed)):
        objs = objects_of("llamashell", files, manifest, owner="bob", olares_env={"HF_TOKEN": "hf_bob"})
        dep = next(o for o in objs if o["kind"] == "Deployment")
        pod = dep["spec"]["template"]["spec"]
        got[side] = (pod["volumes"][0]["hostPath"]["path"], dep["metadata"]["labels"]["owner"],
                     pod["containers"][0]["env"][0]["value"], dep["metadata"]["namespace"])
    assert got["typed"] == got["original"] == (
        "/olares/rootfs/userspace/pvc-appdata-bob/Data/llamashell/models", "bob", "hf_bob", "llamashell-bob")


def test_a_kept_script_or_typed_setting_changed_is_a_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.importing.importer import render_app

    data = _typed_llamashell(tmp_path, capsys)
    original = chart_files("llamashell")
    assert equivalence.compare_charts("llamashell", original, render_app(data, "current")) == []
    # the script before the engine fetches another revision: the same engine flags, not the same app
    other = copy.deepcopy(data)
    other["engine"]["script"] = other["engine"]["script"].replace("resolve/main", "resolve/v2")
    assert kinds(equivalence.compare_charts("llamashell", original, render_app(other, "current"))) == {"container.args"}
    other = copy.deepcopy(data)
    other["server"]["ctx_size"] = 16384
    assert kinds(equivalence.compare_charts("llamashell", original, render_app(other, "current"))) == {"container.args"}
    other = copy.deepcopy(data)
    other["workload"]["sidecars"][0]["image"] = "nginx:1.27"
    assert kinds(equivalence.compare_charts("llamashell", original, render_app(other, "current"))) == {"container.image"}


def test_a_kept_string_is_text_unless_it_names_an_installer_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.importing.importer import render_app
    from olares_pack.render.imported import objects_of

    data = _typed_llamashell(tmp_path, capsys)
    data["workload"]["engine"]["env"].append({"name": "SECRET_TRY", "value": "{{ .Values.os.appSecret }}"})
    files = render_app(data, "current")
    objs = objects_of("llamashell", files, equivalence.manifest_of(files, "llamashell"))
    env = next(o for o in objs if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {e["name"]: e["value"] for e in env}["SECRET_TRY"] == "{{ .Values.os.appSecret }}"


def test_the_kept_charts_users_upgrade_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   control_plane) -> None:  # noqa: ANN001 - a Cluster
    from olares_pack.importing import upgrade_check

    data = _typed_llamashell(tmp_path, capsys)
    original = ("1.4.0", packaged(CHARTS / "llamashell").package)
    typed = upgrade_check.typed_chart(yaml.safe_dump(data), "current")
    assert upgrade_check.problems(control_plane, "llamashell", "current", original, typed) == []


# ---------------------------------------------------------------- the generic GPU server kind


def test_a_gpu_server_of_another_kind_is_typed_generic_and_proven(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  control_plane) -> None:  # noqa: ANN001 - a Cluster
    from olares_pack.importing import upgrade_check
    from olares_pack.importing.importer import render_app

    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "speechapp"), str(CHARTS / "notesui"), extra=("--structured", "--format", "json")) == 0
    rows = {c["app"]: c["structured"] for c in json.loads(capsys.readouterr().out)["charts"]}
    assert rows["speechapp"]["typed"] and rows["speechapp"]["differences"] == [], rows["speechapp"]
    # a chart with no GPU container is no GPU server: kept as written, and says so
    assert not rows["notesui"]["typed"] and rows["notesui"]["reason"].startswith("no container is given a GPU")
    data = yaml.safe_load((root / "apps" / "speechapp" / "app.yaml").read_text())
    assert data["engine"]["kind"] == "generic" and data["engine"]["image"]["repository"] == "docker.io/fedirz/faster-whisper-server"
    original = chart_files("speechapp")
    assert equivalence.compare_charts("speechapp", original, render_app(data, "current")) == []
    other = copy.deepcopy(data)
    other["engine"]["image"]["tag"] = "0.7.0-cuda"
    assert kinds(equivalence.compare_charts("speechapp", original, render_app(other, "current"))) == {"container.image"}
    version = yaml.safe_load((CHARTS / "speechapp" / "Chart.yaml").read_text())["version"]
    typed = upgrade_check.typed_chart(yaml.safe_dump(data), "current")
    assert upgrade_check.problems(control_plane, "speechapp", "current", (version, packaged(CHARTS / "speechapp").package),
                                  typed) == []
