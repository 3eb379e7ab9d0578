"""`import --structured` keeps what the maintainer wrote (#51): the envelope's form, the catalogue's
card and the keys no typed field models, Chart.yaml, the version's own spelling, each flag with its
value; the import's claim "the same app" is the independent proof's and llama-server's own parser's.
Fixtures are the bundled test charts edited here into the shapes the public catalogues use (no
network)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from test_import import CHARTS, empty_repo, run_import

from olares_pack import olares
from olares_pack.catalogue import records
from olares_pack.catalogue.repo import Repo
from olares_pack.charts.source import ChartSource, from_folder
from olares_pack.importing.importer import render_app
from olares_pack.lint import LintOptions, lint_chart
from olares_pack.proof import charts as proof


def _chart(tmp_path: Path, name: str, edits: dict[str, list[tuple[str, str]]]) -> Path:
    chart = tmp_path / "charts" / name
    shutil.copytree(CHARTS / name, chart)
    for path, pairs in edits.items():
        f = chart / path
        text = f.read_text()
        for old, new in pairs:
            assert old in text, (path, old)
            text = text.replace(old, new, 1)
        f.write_text(text)
    return chart


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], chart: Path, *extra: str) -> tuple[dict, dict | None]:
    root = empty_repo(tmp_path / "repo-of-import")
    assert run_import(root, str(chart), extra=("--structured", *extra, "--format", "json")) == 0
    row = json.loads(capsys.readouterr().out)["charts"][0]
    app = root / "apps" / row["app"] / "app.yaml"
    return row, yaml.safe_load(app.read_text()) if app.exists() else None


def _errors(files: dict[str, str], name: str, line: str) -> set[str]:
    opts = LintOptions(olares_version=olares.get(line).min_os)
    return {f.rule for f in lint_chart(ChartSource(name, name, files), opts).findings if f.severity == "error"}


# a v3 catalogue's shape (bayerhazard/aimighty-market): a 0.12.0 manifest with the flat envelope and
# `requiredGpu: 1` (a count of GPUs), no appid, the catalogue's card, the HF token declared in
# spec.envs, a sidecar without limits, Chart.yaml's own home/maintainers/appVersion
_FLAT = {
    "OlaresManifest.yaml": [
        ("  appid: vllmserve\n", "  bento:\n    badge: NEW\n    family: qwen\n    capabilities: [chat, tools]\n"),
        ("""  accelerator:
    - mode: nvidia
      requiredCpu: "2"
      limitedCpu: "8"
      requiredMemory: 8Gi
      limitedMemory: 24Gi
      requiredDisk: 20Gi
      limitedDisk: 30Gi
      requiredGPUMemory: 16384Mi
      limitedGPUMemory: 16384Mi
""", """  requiredCpu: 2
  limitedCpu: "12"
  requiredMemory: 8Gi
  limitedMemory: 40Gi
  requiredDisk: 20Gi
  requiredGpu: 1
  envs:
    - envName: OLARES_USER_HUGGINGFACE_TOKEN
      required: false
      applyOnChange: true
      valueFrom:
        envName: OLARES_USER_HUGGINGFACE_TOKEN
"""),
    ],
    "Chart.yaml": [('appVersion: "v0.11.0"', 'appVersion: "v0.12.5"\nhome: https://example.org/vllmserve\n'
                                               "maintainers:\n  - name: Example\n    email: a@example.org")],
}


def test_the_flat_envelope_stays_flat_and_a_gpu_count_stays_a_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = _chart(tmp_path, "vllmserve", _FLAT)
    row, data = _import(tmp_path, capsys, chart)
    assert row["structured"]["typed"], row["structured"]
    assert data["olares"]["envelope"] == {"form": "flat", "flat": {
        "requiredCpu": 2, "limitedCpu": "12", "requiredMemory": "8Gi", "limitedMemory": "40Gi", "requiredDisk": "20Gi", "requiredGpu": 1}}
    spec = yaml.safe_load(render_app(data, "current")["OlaresManifest.yaml"])["spec"]
    assert "accelerator" not in spec and spec["requiredGpu"] == 1 and spec["limitedCpu"] == "12" and "limitedDisk" not in spec


def test_a_per_mode_envelope_stays_per_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row, data = _import(tmp_path, capsys, CHARTS / "vllmserve")
    assert row["structured"]["typed"], row["structured"]
    assert data["olares"]["envelope"]["form"] == "accelerator"
    spec = yaml.safe_load(render_app(data, "current")["OlaresManifest.yaml"])["spec"]
    assert spec["accelerator"][0]["requiredGPUMemory"] == "16384Mi" and "requiredGpu" not in spec


def test_the_installer_rules_accept_the_typed_render_where_they_accept_the_original(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = _chart(tmp_path, "vllmserve", _FLAT)
    _, data = _import(tmp_path, capsys, chart)
    original = from_folder(chart).files
    assert _errors(render_app(data, "current"), "vllmserve", "current") <= _errors(original, "vllmserve", "current")


def test_the_card_appid_envs_and_chart_yaml_are_carried(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = _chart(tmp_path, "vllmserve", _FLAT)
    row, data = _import(tmp_path, capsys, chart)
    assert row["structured"]["typed"], row["structured"]
    files = render_app(data, "current")
    m = yaml.safe_load(files["OlaresManifest.yaml"])
    assert m["metadata"]["bento"] == {"badge": "NEW", "family": "qwen", "capabilities": ["chat", "tools"]}
    assert "appid" not in m["metadata"]  # the maintainer wrote none
    assert m["spec"]["envs"][0]["envName"] == "OLARES_USER_HUGGINGFACE_TOKEN"
    c = yaml.safe_load(files["Chart.yaml"])
    assert (c["appVersion"], c["home"], c["maintainers"][0]["name"]) == ("v0.12.5", "https://example.org/vllmserve", "Example")
    assert c["description"] == "Qwen3 8B AWQ on upstream vLLM"  # Chart.yaml's own, not the manifest's


def test_appid_is_written_where_the_original_wrote_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _import(tmp_path, capsys, CHARTS / "vllmserve")
    assert yaml.safe_load(render_app(data, "current")["OlaresManifest.yaml"])["metadata"]["appid"] == "vllmserve"


def test_the_appversion_never_goes_backwards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = _chart(tmp_path, "vllmserve", {"Chart.yaml": [('appVersion: "v0.11.0"', 'appVersion: "9.9.9"')]})
    _, data = _import(tmp_path, capsys, chart)
    assert yaml.safe_load(render_app(data, "current")["Chart.yaml"])["appVersion"] == "9.9.9"
    assert data["version"] == "2.0.4"  # the next version in the original's scheme


def test_a_version_string_is_never_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 26.08.29 (bayerhazard/aimighty-market): devices read it loosely as 26.8.29; rewritten, a device
    # that has 26.08.29 would see another chart under its own version. Published as written, and
    # the typed app is the next version in the maintainer's scheme.
    chart = _chart(tmp_path, "vllmserve", {"OlaresManifest.yaml": [("  version: 2.0.3", "  version: 26.08.29")],
                                           "Chart.yaml": [("version: 2.0.3", "version: 26.08.29")]})
    row, data = _import(tmp_path, capsys, chart)
    assert row["version"] == "26.08.29" and row["structured"]["typed"], row
    assert data is not None and data["version"] == "26.08.30"
    root = tmp_path / "repo-of-import" / "repo"
    assert records.versions(Repo.of_apps(root / "apps"), "vllmserve") == ["26.08.29"]
    # its release: the record and the package under the version as written, the chart's own bytes
    rec = records.read(Repo.of_apps(root / "apps"), "vllmserve", "26.08.29")
    assert rec.version == "26.08.29" and any(p.name == "vllmserve-26.08.29.tgz" for p in (root / "packages").rglob("*.tgz"))


def test_the_next_release_keeps_the_scheme_and_refuses_a_second_spelling(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.cli import main

    chart = _chart(tmp_path, "vllmserve", {"OlaresManifest.yaml": [("  version: 2.0.3", "  version: 26.08.29")],
                                           "Chart.yaml": [("version: 2.0.3", "version: 26.08.29")]})
    _import(tmp_path, capsys, chart)
    apps = tmp_path / "repo-of-import" / "repo" / "apps"
    # the same version spelled the strict way is the one a device has: refused, nothing written
    code = main(["release", "vllmserve", "--apps-dir", str(apps), "--version", "26.8.29", "--force",
                 "--skip-rehearsal", "test"])
    assert code == 2 and "is 26.08.29, already published, spelled another way" in capsys.readouterr().err
    assert records.versions(Repo.of_apps(apps), "vllmserve") == ["26.08.29"]


def test_a_value_written_after_a_flag_stays_with_it() -> None:
    # gemma4e2bone (aamsellem/orales-one-market): `--mlock -fa on --jinja` on a fork without a build
    # tag; the registry it falls back on does not know --mlock, and the importer's reading gave it
    # `-fa` as its value, leaving `on` a stray word (the typed render wrote `-fa --mtp-head … on`).
    # Now a flag the registry knows is never taken as an unknown flag's value: --mlock is a switch
    # kept as written, -fa holds its own `on`.
    from olares_pack.engines import registry
    from olares_pack.engines.normalize import normalize_llama
    from olares_pack.importing import structure

    argv = ["--port", "8000", "--mlock", "-fa", "on", "--mtp-head", "/models/d.gguf", "--jinja"]
    reg = registry.resolve("llamacpp", None, "image tag").registry
    assert reg.lookup("--mlock") is None  # the misreading this guards against
    args = normalize_llama(argv, reg)
    assert (args.args["--mlock"].value, args.args["--flash-attn"].value) == ("true", "on")
    _, server, used = structure._llama_server(type("Inv", (), {"argv": argv, "env": {}})(), None)
    texts, words, moved = structure._as_written(argv, None, args, used)
    assert moved == [] and "--mlock" in texts and not any(t.startswith("-fa") for t in texts)
    assert words == ["--mlock", "--mtp-head", "/models/d.gguf"]  # as written, in order, -fa on typed


def test_the_proof_keeps_a_flag_with_its_value_and_the_engine_parses_both() -> None:
    from olares_pack.engines import argv_check

    def chart(args: list[str]) -> list[dict]:
        c = {"name": "s", "image": "ghcr.io/ggml-org/llama.cpp:server-cuda-b11434", "command": ["llama-server"], "args": args}
        return [{"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": {"spec": {"containers": [c]}}}}]

    good = chart(["--port", "8080", "-fa", "on", "--jinja"])
    moved = chart(["--port", "8080", "-fa", "--jinja", "on"])
    assert [d.kind for d in proof.compare_objects(good, moved)] == ["container.args"]
    if argv_check.binary("b11434") is None:
        pytest.skip("llama-server b11434 not built here (make llama-server)")
    [said] = proof.engine_verdicts(moved)
    assert said.refused and "-fa" in said.error and "b11434's own parser" in said.used
    assert not proof.engine_verdicts(good)[0].refused


def test_an_env_value_written_null_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `value: null` (a values.yaml default left empty): the API server reads it as no value, as the
    # original does; the typed render must not write "" or "None"
    chart = _chart(tmp_path, "vllmserve", {"templates/deployment.yaml": [
        ('              value: "16384m"\n', '              value: "16384m"\n            - name: HF_ENDPOINT\n              value: null\n')]})
    row, data = _import(tmp_path, capsys, chart)
    assert row["structured"]["typed"], row["structured"]
    assert {"name": "HF_ENDPOINT"} in data["workload"]["engine"]["env"]  # no value, as written
    assert "HF_ENDPOINT" not in (data.get("env") or {})


def test_a_forks_own_kv_cache_types_come_from_its_sources() -> None:
    # beellama.cpp (Anbeeld/beellama.cpp common/arg.cpp): KVarN pseudo types and its extra ggml types
    from olares_pack.apps.manifest.servers import CacheTypes
    from olares_pack.engines import registry

    fork = registry.forks()["beellama"]
    assert {"kvarn4", "kvarn6", "q6_0", "turbo3"} <= set(fork.values["--cache-type-k"]) and "Anbeeld/beellama.cpp" in fork.source
    assert CacheTypes(k="kvarn4", v="kvarn6").k == "kvarn4"
    with pytest.raises(ValueError, match="not a KV cache type"):
        CacheTypes(k="kvarn7")


def test_the_maintainers_release_notes_stay_with_their_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, data = _import(tmp_path, capsys, CHARTS / "vllmserve")
    entries = {e["version"]: e for e in data["changelog"]}
    assert entries["2.0.3"]["notes"] == "vLLM 0.11.0.\n"  # the original's upgradeDescription, for 2.0.3
    assert "olares-pack" in entries["2.0.4"]["summary"]  # the typed version says what it is


def test_a_script_keeps_its_authors_text_until_a_typed_setting_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import copy

    row, data = _import(tmp_path, capsys, CHARTS / "llamashell")
    assert row["structured"]["typed"], row["structured"]
    assert '--model "$MODELS_DIR/$TARGET_FILE"' in data["engine"]["script_tail"]
    original = from_folder(CHARTS / "llamashell").files
    assert proof.prove("llamashell", original, render_app(data, "current")).differences == []
    other = copy.deepcopy(data)
    other["server"]["ctx_size"] = 16384  # an edit: the typed arguments are rendered, the text no longer the author's
    kinds = {d.kind for d in proof.prove("llamashell", original, render_app(other, "current")).differences}
    assert kinds == {"container.command"}


def test_an_envelope_kept_in_its_form_and_resources_say_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.apps.load import validate_data
    from olares_pack.common.errors import InputError

    _, data = _import(tmp_path, capsys, _chart(tmp_path, "vllmserve", _FLAT))
    data["resources"]["cpu"]["limit"] = "16"  # edited here and not in the envelope the render writes
    with pytest.raises(InputError, match="limitedCpu"):
        validate_data(data, "app.yaml")


def test_a_typed_render_the_engine_refuses_is_kept_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # the words may compare equal and the engine still refuse them: the parser's word is final
    real = proof.engine_verdicts

    def refusing(objects: list[dict]) -> list[proof.EngineVerdict]:
        out = real(objects)
        images = [c.get("image", "") for o in objects for c in proof._pod(o).get("containers") or []]
        if any("llama" in str(i) for i in images):
            return [proof.EngineVerdict("Deployment/llamashell container llama", "x", True,
                                        'error while handling argument "-fa": unknown value', "llama-server b11434's own parser")]
        return out

    monkeypatch.setattr(proof, "engine_verdicts", refusing)
    row, data = _import(tmp_path, capsys, CHARTS / "llamashell")
    assert not row["structured"]["typed"]
    assert row["structured"]["reason"].startswith("llama-server refuses the typed render's arguments: error while handling argument")
    assert "chart" in data


def test_vllm_given_its_model_as_a_flag_keeps_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # bayerhazard/aimighty-market aimrerqwen3vllm: `vllm serve --model REPO`
    chart = _chart(tmp_path, "vllmserve", {"templates/deployment.yaml": [
        ("            - serve\n            - Qwen/Qwen3-8B-AWQ\n", "            - serve\n            - --model\n            - Qwen/Qwen3-8B-AWQ\n")]})
    row, data = _import(tmp_path, capsys, chart)
    assert row["structured"]["typed"], row["structured"]
    assert data["server"]["model_flag"] is True


def test_a_number_written_with_a_trailing_zero_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = _chart(tmp_path, "vllmserve", {"templates/deployment.yaml": [('            - "0.9"\n', '            - "0.90"\n')]})
    row, data = _import(tmp_path, capsys, chart)
    assert row["structured"]["typed"], row["structured"]
    assert data["server"]["extra_args"][-2:] == ["--gpu-memory-utilization", "0.90"] or "0.90" in data["server"]["extra_args"]
