"""`olares-pack import` (issue #15): hand-written charts of every kind import, render back to the
same chart, keep their published bytes, and a live market source imports into an empty repository
that `build --check` accepts."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, serving, tree_digest

from olares_pack import helm, importer, package, records, render, targets
from olares_pack.cli import main
from olares_pack.lint import LintOptions, lint_chart
from olares_pack.lint.source import ChartSource
from olares_pack.manifest import ChartApp, load_app
from olares_pack.repo import Repo
from olares_pack.server import Source

CHARTS = Path(__file__).parent / "data" / "charts"
DATE = "2026-12-03"


def empty_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "apps").mkdir(parents=True)
    return root


def run_import(root: Path, *sources: str, extra: tuple[str, ...] = ()) -> int:
    return main(["import", *sources, "--apps-dir", str(root / "apps"), "--date", DATE, *extra])


def objects(files: dict[str, str], name: str) -> list[dict]:
    """The chart rendered the way the installer renders it (owner == admin)."""
    with helm.load_bytes(package.build_archive(name, files)) as chart:
        out = chart.render(values=helm.installer_values(name, [name], owner="alice", admin="alice", gpu_type="nvidia"),
                           name=name, namespace=f"{name}-alice")
    return sorted((o for _, o in helm.objects(out)), key=lambda o: (o["kind"], o["metadata"]["name"]))


def manifest_of(files: dict[str, str]) -> dict:
    return yaml.safe_load(files["OlaresManifest.yaml"])


@pytest.mark.parametrize("chart", ["llamaupstream", "llamaturbo", "speechapp", "notesui", "vllmserve", "ragstack"])
def test_each_kind_of_chart_imports_and_renders_back_to_the_same_chart(tmp_path: Path, chart: str) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / chart)) == 0
    app = load_app(root / "apps" / chart)
    assert isinstance(app, ChartApp)
    original = importer.find(str(CHARTS / chart))[0]
    line = targets.CURRENT.name if app.chart.manifest_version == "0.12.0" else targets.LEGACY.name
    rendered = render.render(app, targets.get(line))
    if chart == "llamaupstream":  # 26.08.1: imported as 26.8.1, to be released (not recorded as published)
        original.files = {k: v.replace("26.08.1", "26.8.1") for k, v in original.files.items()}
        assert records.versions(Repo.of_apps(root / "apps"), chart) == []
    else:
        assert records.versions(Repo.of_apps(root / "apps"), chart) == [app.version]
    assert objects(rendered, chart) == objects(original.files, chart)  # same objects, argv, resources
    for path, text in original.files.items():  # templates, values and sub-charts (apiVersion v2) as written
        if path not in ("Chart.yaml", "OlaresManifest.yaml") and not path.startswith("i18n/"):
            assert rendered[path] == text, path
    if app.chart.manifest_text is None:
        assert manifest_of(rendered) == manifest_of(original.files)  # same texts, entrances, envelopes
    for path in original.files:
        if path.startswith("i18n/"):
            assert yaml.safe_load(rendered[path]) == yaml.safe_load(original.files[path])
    findings = lint_chart(ChartSource(chart, chart, rendered), LintOptions()).findings
    assert [f for f in findings if f.severity == "error"] == []
    if chart != "llamaupstream":
        assert main(["diff", str(CHARTS / chart), str(root / "apps" / chart / "app.yaml"), "--rendered",
                     "--target", line]) == 0  # the flag-aware diff sees nothing


def test_engines_are_recognised_and_their_arguments_parsed_back() -> None:
    date = dt.date(2026, 12, 3)
    upstream = importer.to_app(importer.find(str(CHARTS / "llamaupstream"))[0], date).engine
    # sh -c wrapper, ${CTX:-32768} with CTX=65536 in env, LLAMA_ARG_N_GPU_LAYERS, short spellings
    assert (upstream.kind, upstream.build) == ("llamacpp", "b9101")
    assert {k: upstream.flags[k] for k in ("--ctx-size", "--gpu-layers", "--mlock", "--cache-type-k", "--model")} == \
        {"--ctx-size": "65536", "--gpu-layers": "99", "--mlock": "true", "--cache-type-k": "q8_0", "--model": "/models/qwen3-8b-q4_k_m.gguf"}
    turbo = importer.to_app(importer.find(str(CHARTS / "llamaturbo"))[0], date).engine
    assert turbo.flags["--cache-type-k"] == "turbo3" and turbo.flags["--ctx-size"] == "131072"  # from LLAMA_ARG_* env
    vllm = importer.to_app(importer.find(str(CHARTS / "vllmserve"))[0], date).engine
    assert vllm.kind == "vllm" and vllm.flags["--max-model-len"] == "32768" and vllm.argv[:2] == ["serve", "Qwen/Qwen3-8B-AWQ"]
    speech = importer.to_app(importer.find(str(CHARTS / "speechapp"))[0], date).engine
    assert speech.kind == "chart"  # an engine olares-pack does not model: the generic kind, nothing refused


def test_texts_locales_and_entrances_are_fields_of_the_app(tmp_path: Path) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "speechapp")) == 0
    app = load_app(root / "apps" / "speechapp")
    assert (app.title, app.version_name, app.categories) == ("Whisper", "large-v3-turbo", ["AI", "Productivity"])
    assert app.locales["zh-CN"].title == "Whisper 语音转写"
    assert app.changelog[0].notes.startswith("Faster model") and app.changelog[0].locales["zh-CN"].notes.startswith("更快")
    assert [e["name"] for e in app.chart.manifest["entrances"]] == ["speechapp", "speechapi"]
    assert app.license[0].text == "MIT"


def _versions(tmp_path: Path) -> list[Path]:
    """Three versions of one app, as the packages a maintainer published (each its own "what's new")."""
    out = []
    for version, what in (("1.0.0", "First release."), ("1.1.0", "Recordings up to 2 hours."), ("1.2.0", "large-v3-turbo.")):
        folder = tmp_path / "src" / version / "speechapp"
        shutil.copytree(CHARTS / "speechapp", folder)
        for rel in ("Chart.yaml", "OlaresManifest.yaml"):
            p = folder / rel
            p.write_text(p.read_text().replace("1.2.0", version).replace(
                "Faster model (large-v3-turbo); the page accepts recordings up to 2 hours.", what))
        tgz = tmp_path / "src" / f"speechapp-{version}.tgz"
        files = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
        tgz.write_bytes(package.build_archive("speechapp", files))
        shutil.rmtree(tmp_path / "src" / version)
        out.append(tgz)
    return out


def test_a_history_of_three_versions_keeps_each_published_package(tmp_path: Path) -> None:
    tgzs = _versions(tmp_path)
    root = empty_repo(tmp_path)
    assert run_import(root, str(tmp_path / "src")) == 0
    repo = Repo.of_apps(root / "apps")
    assert records.versions(repo, "speechapp") == ["1.0.0", "1.1.0", "1.2.0"]
    for tgz in tgzs:
        version = tgz.name.removeprefix("speechapp-").removesuffix(".tgz")
        rec = records.read(repo, "speechapp", version)
        assert rec.generation == 0 and (root / rec.charts["current"].file).read_bytes() == tgz.read_bytes()
    app = load_app(root / "apps" / "speechapp")
    assert app.version == "1.2.0" and [e.version for e in app.changelog] == ["1.0.0", "1.1.0", "1.2.0"]
    assert [e.summary for e in app.changelog] == ["First release.", "Recordings up to 2 hours.", "large-v3-turbo."]
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == 0
    # served: the market lists 1.2.0 and serves every version's original bytes by file name
    with serving(Source(root, root / "market-index.json")) as url:
        for tgz in tgzs:
            q = f"fileName={tgz.name}&version={tgz.name.removeprefix('speechapp-').removesuffix('.tgz')}"
            with urllib.request.urlopen(f"{url}/api/v1/applications/speechapp/chart?{q}") as resp:
                assert resp.read() == tgz.read_bytes()


def test_a_live_source_imports_into_an_empty_repository(tmp_path: Path) -> None:
    """The bundled catalogue, served, read back from its URL: every version a device can download
    is recorded with the served bytes, and build --check passes."""
    root = empty_repo(tmp_path)
    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        assert run_import(root, url) == 0
        repo = Repo.of_apps(root / "apps")
        served = 0
        for name in records.published_apps(repo):
            for version in records.versions(repo, name):
                rec = records.read(repo, name, version)
                for ch in rec.charts.values():
                    q = f"fileName={name}-{ch.version}.tgz&version={ch.version}"
                    with urllib.request.urlopen(f"{url}/api/v1/applications/{name}/chart?{q}") as resp:
                        assert (root / ch.file).read_bytes() == resp.read()
                    served += 1
    assert records.published_apps(repo) == ["llamacppqwen36mtpone", "vllmqwen36turbo27bone"]
    assert records.versions(repo, "vllmqwen36turbo27bone") == ["2.5.7", "2.5.8", "2.5.9"]
    assert served >= 8
    latest = records.read(repo, "llamacppqwen36mtpone", "1.0.11")
    assert set(latest.charts) == {"current", "legacy"} and latest.charts["legacy"].version == "1.0.11-legacy"
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == 0
    # the imported app renders its newest chart back, with its own changelog text
    app = load_app(root / "apps" / "vllmqwen36turbo27bone")
    original = records.read(repo, app.name, app.version).charts["current"]
    _, files, _ = package.read_archive_split((root / original.file).read_bytes())
    assert objects(render.render(app, targets.CURRENT), app.name) == objects(files, app.name)


def test_what_cannot_be_imported_is_refused_by_name_with_a_proposal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "src" / "llama-cpp"
    shutil.copytree(CHARTS / "notesui", bad)
    for rel in ("Chart.yaml", "OlaresManifest.yaml"):
        p = bad / rel
        p.write_text(p.read_text().replace("name: notesui", "name: llama-cpp"))
    root = empty_repo(tmp_path)
    assert run_import(root, str(bad), extra=("--format", "json")) == 1
    row = json.loads(capsys.readouterr().out)["charts"][0]
    assert row["status"] == "refused" and "'llamacpp' (--rename applies it)" in row["notes"][0]
    assert not (root / "apps" / "llama-cpp").exists() and not (root / "market-index.json").exists()


def test_rename_gives_a_refused_name_the_proposed_one_as_a_new_app(tmp_path: Path) -> None:
    bad = tmp_path / "src" / "notes-ui"
    shutil.copytree(CHARTS / "notesui", bad)
    for p in [bad / "Chart.yaml", bad / "OlaresManifest.yaml", bad / "values.yaml", *(bad / "templates").iterdir()]:
        p.write_text(p.read_text().replace("notesui", "notes-ui"))
    root = empty_repo(tmp_path)
    assert run_import(root, str(bad), extra=("--rename",)) == 0
    app = load_app(root / "apps" / "notesui")
    assert app.name == "notesui" and records.versions(Repo.of_apps(root / "apps"), "notesui") == []  # to be released
    files = render.render(app, targets.CURRENT)
    findings = lint_chart(ChartSource("notesui", "notesui", files), LintOptions(olares_version="1.12.6")).findings
    assert [f.message for f in findings if f.severity == "error"] == []


def test_strict_fails_on_notes_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    root = empty_repo(tmp_path)
    before = tree_digest(root)
    assert run_import(root, str(CHARTS / "llamaturbo"), extra=("--dry-run",)) == 0
    assert tree_digest(root) == before
    assert run_import(root, str(CHARTS / "llamaturbo"), extra=("--strict",)) == 1  # the templated manifest note


def test_an_existing_app_is_not_overwritten(tmp_path: Path) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "notesui")) == 0
    before = tree_digest(root)
    assert run_import(root, str(CHARTS / "notesui")) == 1
    assert tree_digest(root) == before


def test_imported_records_are_listed_in_the_ledger(tmp_path: Path) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "vllmserve")) == 0
    ledger = json.loads((root / "market-index.json").read_text())
    v = ledger["apps"]["vllmserve"]["versions"][0]
    assert (v["version"], v["versionName"], v["generation"], v["images"]) == ("2.0.3", "v0.11.0", 0, "vllm/vllm-openai:v0.11.0")
    assert v["published"] == DATE
    assert dt.date.fromisoformat(v["changelog"]["date"]) == dt.date(2026, 12, 3)


def test_upgrade_turns_a_legacy_chart_into_one_the_1_12_6_installer_accepts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src" / "llamaturbo"
    shutil.copytree(CHARTS / "llamaturbo", src)
    m = src / "OlaresManifest.yaml"
    m.write_text(m.read_text().replace("limitedMemory: 32Gi", "limitedMemory: 16Gi"))  # below the container's 32Gi
    root = empty_repo(tmp_path)
    assert run_import(root, str(src), extra=("--upgrade", "--format", "json")) == 0
    notes = json.loads(capsys.readouterr().out)["charts"][0]["notes"]
    assert any("limitedMemory: 16Gi" in n and "the containers' sum" in n for n in notes)
    app = load_app(root / "apps" / "llamaturbo")
    assert (app.version, app.targets, app.chart.manifest_version) == ("1.3.1", ["current"], "0.12.0")
    files = render.render(app, targets.CURRENT)
    envelope = manifest_of(files)["spec"]["accelerator"][0]
    assert envelope["mode"] == "nvidia" and envelope["limitedMemory"] == str(32 << 30)
    findings = lint_chart(ChartSource("llamaturbo", "llamaturbo", files), LintOptions(olares_version="1.12.6")).findings
    assert [(f.rule, f.message) for f in findings if f.severity == "error"] == []
    # the published legacy version keeps its bytes; the upgrade is the next version to release
    repo = Repo.of_apps(root / "apps")
    assert records.versions(repo, "llamaturbo") == ["1.3.0"]
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == 0
    assert main(["release", "llamaturbo", "--apps-dir", str(root / "apps"), "--version", "1.3.1", "--date", DATE]) == 0
    assert records.versions(repo, "llamaturbo") == ["1.3.0", "1.3.1"]
    assert records.read(repo, "llamaturbo", "1.3.1").charts["current"].file == "packages/current/llamaturbo-1.3.1.tgz"
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == 0  # the release renders back to its package


def test_structured_gives_a_recognised_engine_its_typed_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "vllmserve"), str(CHARTS / "speechapp"), extra=("--structured", "--format", "json")) == 0
    notes = {c["app"]: c["notes"] for c in json.loads(capsys.readouterr().out)["charts"]}
    assert any(n.startswith("--structured renders differently: - arguments: `--download-dir`") for n in notes["vllmserve"])
    assert any("kept as written: no llama.cpp or vLLM" in n for n in notes["speechapp"])  # the speech app stays a chart
    typed = load_app(root / "apps" / "vllmserve")
    assert type(typed).__name__ == "VllmApp" and typed.version == "2.0.4"  # 2.0.3 is published as it was
    assert (typed.model.repo, typed.server.max_model_len, typed.server.gpu_memory_utilization) == ("Qwen/Qwen3-8B-AWQ", 32768, 0.9)
    assert typed.resources.gpu_memory_mib == 16384 and typed.env == {"CUDA_DEVICE_MEMORY_LIMIT_0": "16384m"}
    assert isinstance(load_app(root / "apps" / "speechapp"), ChartApp)
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == 0
    assert main(["release", "vllmserve", "--apps-dir", str(root / "apps"), "--version", "2.0.4", "--date", DATE]) == 0


def test_structured_recovers_olares_packs_own_apps_from_their_served_charts(tmp_path: Path) -> None:
    """The bundled catalogue read from its URL: the typed settings olares-pack rendered come back."""
    root = empty_repo(tmp_path)
    with serving(Source(ROOT, ROOT / "market-index.json")) as url:
        assert run_import(root, url, extra=("--structured",)) == 0
    for name in ("llamacppqwen36mtpone", "vllmqwen36turbo27bone"):
        got, want = load_app(root / "apps" / name), load_app(ROOT / "apps" / name)
        # the shared form serves the model under MODEL_NAME: server.alias is not in its chart
        assert got.engine.shared and got.server.alias is None
        assert got.server.model_copy(update={"alias": want.server.alias}) == want.server, name
        assert got.model.capabilities == want.model.capabilities
        assert (got.model.repo, got.model.revision, [f.name for f in got.model.files]) == \
            (want.model.repo, want.model.revision, [f.name for f in want.model.files])
        assert (got.engine.image.repository, got.engine.image.tag, got.engine.build) == \
            (want.engine.image.repository, want.engine.image.tag, want.engine.build)
        assert got.resources == want.resources and got.env == want.env
