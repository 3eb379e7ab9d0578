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

from olares_pack import olares as targets
from olares_pack.apps.load import load_app
from olares_pack.apps.manifest import ChartApp
from olares_pack.catalogue import records
from olares_pack.catalogue.repo import Repo
from olares_pack.charts import helm, package
from olares_pack.charts.source import ChartSource
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.importing import importer
from olares_pack.lint import LintOptions, lint_chart
from olares_pack.market.server import Source
from olares_pack.render import app as render
from oracle import oracle  # noqa: F401 - the fixture (the official checker, skipped where it cannot be built)

CHARTS = Path(__file__).parent / "data" / "charts"
# Hand-written charts in the forms of 1.12.3-1.12.5 catalogues (issue #24): a single-chart
# apiVersion v2 app with flat GPU resources and OLARES_USER_* env, a 0.10.0/v1 app with a lone }}
# and empty links. Kept apart from charts/, which lint's tests read as charts that lint clean.
LEGACY = Path(__file__).parent / "data" / "import"
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


@pytest.mark.parametrize("chart", ["llamaupstream", "llamaturbo", "speechapp", "notesui", "vllmserve", "ragstack", "gpuvtwo"])
def test_each_kind_of_chart_imports_and_renders_back_to_the_same_chart(tmp_path: Path, chart: str) -> None:
    root = empty_repo(tmp_path)
    folder = CHARTS / chart if (CHARTS / chart).is_dir() else LEGACY / chart
    assert run_import(root, str(folder)) == 0
    app = load_app(root / "apps" / chart)
    assert isinstance(app, ChartApp)
    original = importer.find(str(folder))[0]
    line = targets.CURRENT.name if app.chart.manifest_version == "0.12.0" else targets.LEGACY.name
    rendered = render.render(app, targets.get(line))
    # every version as written, published with the chart's own bytes (llamaupstream's 26.08.1 too:
    # a device reads it as 26.8.1, and the catalogue keeps the maintainer's spelling)
    assert records.versions(Repo.of_apps(root / "apps"), chart) == [app.version]
    if chart == "llamaupstream":
        assert app.version == "26.08.1"
    assert objects(rendered, chart) == objects(original.files, chart)  # same objects, argv, resources
    for path, text in original.files.items():  # templates, values and sub-charts (apiVersion v2) as written
        if path not in ("Chart.yaml", "OlaresManifest.yaml") and not path.startswith("i18n/"):
            assert rendered[path] == text, path
    if app.chart.manifest_text is None:
        assert manifest_of(rendered) == manifest_of(original.files)  # same texts, entrances, envelopes
    for path in original.files:
        if path.startswith("i18n/") and not path.startswith("i18n/en-US/"):  # en-US: the app's own texts
            assert yaml.safe_load(rendered[path]) == yaml.safe_load(original.files[path])
    findings = lint_chart(ChartSource(chart, chart, rendered), LintOptions()).findings
    # gpuvtwo: a v2 chart without sub-charts, which 1.12.3-1.12.5 install through the v1 path; lint's
    # manifest.schema-version (oac checkSubCharts, run at install from 1.12.6 only) still names it.
    assert [f for f in findings if f.severity == "error" and (chart, f.rule) != ("gpuvtwo", "manifest.schema-version")] == []
    if chart != "llamaupstream":
        assert main(["diff", str(folder), str(root / "apps" / chart / "app.yaml"), "--rendered",
                     "--target", line]) == ExitCode.OK  # the flag-aware diff sees nothing


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
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK
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
    source = Repo.at(ROOT)
    assert records.versions(repo, "vllmqwen36turbo27bone") == records.versions(source, "vllmqwen36turbo27bone")
    assert served >= 8
    newest = records.versions(source, "llamacppqwen36mtpone")[-1]
    latest = records.read(repo, "llamacppqwen36mtpone", newest)
    assert set(latest.charts) == {"current", "legacy"} and latest.charts["legacy"].version == f"{newest}-legacy"
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK
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
    assert any("limitedMemory: 16Gi → 32Gi, the containers' limits summed" in n for n in notes)
    app = load_app(root / "apps" / "llamaturbo")
    assert (app.version, app.targets, app.chart.manifest_version) == ("1.3.1", ["current"], "0.12.0")
    files = render.render(app, targets.CURRENT)
    envelope = manifest_of(files)["spec"]["accelerator"][0]
    assert envelope["mode"] == "nvidia" and envelope["limitedMemory"] == "32Gi"
    findings = lint_chart(ChartSource("llamaturbo", "llamaturbo", files), LintOptions(olares_version="1.12.6")).findings
    assert [(f.rule, f.message) for f in findings if f.severity == "error"] == []
    # the published legacy version keeps its bytes; the upgrade is the next version to release
    repo = Repo.of_apps(root / "apps")
    assert records.versions(repo, "llamaturbo") == ["1.3.0"]
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK
    assert main(["release", "llamaturbo", "--apps-dir", str(root / "apps"), "--version", "1.3.1", "--date", DATE]) == ExitCode.OK
    assert records.versions(repo, "llamaturbo") == ["1.3.0", "1.3.1"]
    assert records.read(repo, "llamaturbo", "1.3.1").charts["current"].file == "packages/current/llamaturbo-1.3.1.tgz"
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK  # the release renders back to its package


def _differing_vllmserve(tmp_path: Path) -> Path:
    """vllmserve with a text an app manifest cannot hold (`{%`, spaced by import): its typed render
    differs from it in that text."""
    chart = tmp_path / "charts" / "vllmserve"
    shutil.copytree(CHARTS / "vllmserve", chart)
    m = chart / "OlaresManifest.yaml"
    m.write_text(m.read_text().replace("at 32K context.", "at 32K context: {% raw %}."))
    return chart


def test_structured_types_a_per_user_chart_and_keeps_what_it_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "vllmserve"), str(CHARTS / "speechapp"), extra=("--structured", "--format", "json")) == 0
    rows = {c["app"]: c for c in json.loads(capsys.readouterr().out)["charts"]}
    s = rows["vllmserve"]["structured"]
    assert s["typed"] and s["differences"] == [] and s["accepted"] == [], s
    typed = load_app(root / "apps" / "vllmserve")
    # what the chart says beyond the engine is typed: the manifest's options, the workload's probes
    assert type(typed).__name__ == "VllmApp" and typed.olares is not None and typed.workload is not None
    assert typed.olares.options is not None and [e.name for e in typed.workload.engine.env] == ["CUDA_DEVICE_MEMORY_LIMIT_0"]
    # a GPU server that runs neither engine: the generic kind, its image, command and arguments as written
    speech = rows["speechapp"]["structured"]
    assert speech["typed"] and speech["differences"] == [], speech
    generic = load_app(root / "apps" / "speechapp")
    assert type(generic).__name__ == "GenericApp" and generic.engine.kind == "generic"


def test_structured_keeps_a_chart_whose_typed_render_differs_and_says_how(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(_differing_vllmserve(tmp_path)), extra=("--structured", "--format", "json")) == 0
    rows = {c["app"]: c for c in json.loads(capsys.readouterr().out)["charts"]}
    s = rows["vllmserve"]["structured"]
    assert not s["typed"] and s["reason"].startswith("the typed render differs")
    assert [(d["kind"], d["where"]) for d in s["differences"]] == [("manifest.texts", "OlaresManifest spec.fullDescription")]
    assert any(n.startswith("--structured differs: manifest.texts: OlaresManifest") for n in rows["vllmserve"]["notes"])
    assert isinstance(load_app(root / "apps" / "vllmserve"), ChartApp)


def test_structured_accept_takes_named_differences_and_the_release_record_keeps_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = str(_differing_vllmserve(tmp_path))
    # another kind accepted: still kept as written
    root = empty_repo(tmp_path / "b")
    assert run_import(root, chart, extra=("--structured", "--accept=manifest.options")) == 0
    assert isinstance(load_app(root / "apps" / "vllmserve"), ChartApp)
    kinds = ["manifest.texts"]
    root = empty_repo(tmp_path / "c")
    assert run_import(root, chart, extra=("--structured", *(f"--accept={k}" for k in kinds))) == 0
    typed = load_app(root / "apps" / "vllmserve")
    assert type(typed).__name__ == "VllmApp" and typed.version == "2.0.4"  # 2.0.3 is published as it was
    assert (typed.model.repo, typed.server.max_model_len, typed.server.gpu_memory_utilization) == ("Qwen/Qwen3-8B-AWQ", 32768, 0.9)
    assert not typed.engine.shared  # the chart's per-user form is kept
    assert typed.imported is not None and typed.imported.original == "2.0.3"
    assert sorted({a.kind for a in typed.imported.accepted}) == kinds
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK
    assert main(["release", "vllmserve", "--apps-dir", str(root / "apps"), "--version", "2.0.4", "--date", DATE]) == ExitCode.OK
    rec = records.read(Repo.of_apps(root / "apps"), "vllmserve", "2.0.4")
    assert sorted({a["kind"] for a in rec.manifest["imported"]["accepted"]}) == kinds


def test_accept_names_a_kind_of_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "vllmserve"), extra=("--structured", "--accept", "manifest.colour")) == ExitCode.INPUT
    assert "--accept manifest.colour: not a kind of difference" in capsys.readouterr().err
    assert not (root / "apps" / "vllmserve").exists()


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


# ---------------------------------------------------------------- 1.12.5 catalogues onto 1.12.6 (issue #24)

HF = {"https://hf.example": "OLARES_USER_HUGGINGFACE_SERVICE", "hf_secret": "OLARES_USER_HUGGINGFACE_TOKEN"}


def pods(objs: list[dict]) -> dict[str, dict]:
    """What a user would notice of each workload: every container's image, argv, env values,
    resources, ports, probes and mounts, and the pod's volumes."""
    keys = ("name", "image", "command", "args", "env", "resources", "ports", "startupProbe", "livenessProbe",
            "readinessProbe", "volumeMounts")
    out = {}
    for o in objs:
        if o.get("kind") in ("Deployment", "StatefulSet", "Job"):
            spec = o["spec"]["template"]["spec"]
            out[f"{o['kind']}/{o['metadata']['name']}"] = {
                "containers": [{k: c.get(k) for k in keys} for c in [*spec.get("initContainers", []), *spec["containers"]]],
                "volumes": spec.get("volumes")}
    return out


def rendered_pods(files: dict[str, str], name: str, olares_env: dict[str, str]) -> dict[str, dict]:
    with helm.load_bytes(package.build_archive(name, files)) as chart:
        values = helm.installer_values(name, [name], owner="alice", admin="alice", gpu_type="nvidia", olares_env=olares_env)
        return pods([o for _, o in helm.objects(chart.render(values=values, name=name, namespace=f"{name}-alice"))])


def offered(url: str, os_version: str) -> dict[str, tuple[str, bytes]]:
    """What a device of `os_version` is offered: each app's version and the chart bytes it downloads."""
    with urllib.request.urlopen(f"{url}/api/v1/appstore/info?version={os_version}") as resp:
        ids = sorted(json.load(resp)["data"]["apps"])
    body = json.dumps({"app_ids": ids, "version": os_version}).encode()
    req = urllib.request.Request(f"{url}/api/v1/applications/info", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        details = json.load(resp)["apps"]
    out = {}
    for e in details.values():
        q = f"fileName={e['chartName']}&version={e['version']}"
        with urllib.request.urlopen(f"{url}/api/v1/applications/{e['name']}/chart?{q}") as resp:
            out[e["name"]] = (e["version"], resp.read())
    return out


def upgrade_notes(root: Path, source: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert run_import(root, str(source), extra=("--upgrade", "--format", "json")) == 0
    return json.loads(capsys.readouterr().out)["charts"][0]["notes"]


def errors_for_1_12_6(name: str, files: dict[str, str]) -> list[tuple[str, str]]:
    findings = lint_chart(ChartSource(name, name, files), LintOptions(olares_version="1.12.6")).findings
    return [(f.rule, f.message) for f in findings if f.severity == "error"]


def test_upgrade_converts_a_single_chart_v2_app_and_both_device_lines_see_their_chart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The third-party form: apiVersion v2 without sub-charts, flat GPU resources with
    requiredMemory below the containers' requests, OLARES_USER_* Hugging Face variables; read
    from a live source as docs/how-to/upgrade-1.12.5.md's flow does (import, lint, release, build --check, serve)."""
    served = empty_repo(tmp_path / "source")
    assert run_import(served, str(LEGACY / "gpuvtwo")) == 0
    capsys.readouterr()
    root = empty_repo(tmp_path)
    with serving(Source(served, served / "market-index.json")) as source_url:
        assert run_import(root, source_url, extra=("--upgrade", "--format", "json")) == 0
    notes = json.loads(capsys.readouterr().out)["charts"][0]["notes"]
    assert "--upgrade to 1.0.6: spec.accelerator[nvidia].requiredMemory: 20Gi → 24Gi, the containers' requests summed " \
           "(1.12.6 refuses less)" in notes
    app = load_app(root / "apps" / "gpuvtwo")
    assert (app.version, app.targets, app.chart.manifest["apiVersion"]) == ("1.0.6", ["current"], "v3")
    files = render.render(app, targets.CURRENT)
    m = manifest_of(files)
    assert m["spec"]["accelerator"] == [{"mode": "nvidia", "requiredCpu": "2", "limitedCpu": "8", "requiredMemory": "24Gi",
                                         "limitedMemory": "32Gi", "requiredDisk": "20Gi", "limitedDisk": "40Gi",
                                         "requiredGPUMemory": "12Gi", "limitedGPUMemory": "24Gi"}]
    assert not {"requiredGpu", "limitedGpu", "requiredMemory"} & set(m["spec"])
    assert m["options"]["dependencies"] == [{"name": "olares", "type": "system", "version": ">=1.12.6-0"}]
    assert m["workloadReplicas"] == {"gpuvtwo": 1} and "provider" not in m and m["permission"] == {"appData": True}
    assert [(e["envName"], e["valueFrom"]["envName"]) for e in m["envs"]] == [
        ("HF_ENDPOINT", "OLARES_SYSTEM_HUGGINGFACE_SERVICE"), ("HF_TOKEN", "OLARES_SYSTEM_HUGGINGFACE_TOKEN")]
    assert not [p for p, text in files.items() if "OLARES_USER" in text]
    assert "replicas: {{ .Values.workloads.gpuvtwo.replicaCount }}" in files["templates/deployment.yaml"]
    assert yaml.safe_load(files["values.yaml"]) == {"workloads": {"gpuvtwo": {"replicaCount": 1}}}
    assert files["values.yaml"].startswith("# Filled in by the installer")  # its comment kept
    # the same containers: the variables' values reach the same env entries under their new names
    original = importer.find(str(LEGACY / "gpuvtwo"))[0].files
    assert rendered_pods(files, "gpuvtwo", {"HF_ENDPOINT": "https://hf.example", "HF_TOKEN": "hf_secret"}) == \
        rendered_pods(original, "gpuvtwo", {v: k for k, v in HF.items()})
    assert errors_for_1_12_6("gpuvtwo", files) == []
    assert main(["lint", str(root / "apps" / "gpuvtwo"), "--olares", "1.12.6"]) == ExitCode.OK
    # both lines: 1.0.5 stays published as it was; 1.0.6 is the next release, for 1.12.6+
    assert main(["release", "gpuvtwo", "--apps-dir", str(root / "apps"), "--version", "1.0.6", "--date", DATE]) == ExitCode.OK
    assert main(["build", "--apps-dir", str(root / "apps"), "--check"]) == ExitCode.OK
    source_bytes = (served / "packages" / "legacy" / "gpuvtwo-1.0.5.tgz").read_bytes()
    with serving(Source(root, root / "market-index.json")) as url:
        old, new = offered(url, "1.12.5")["gpuvtwo"], offered(url, "1.12.6")["gpuvtwo"]
    assert old == ("1.0.5", source_bytes)
    assert new[0] == "1.0.6" and package.read_archive_split(new[1])[1]["OlaresManifest.yaml"] == files["OlaresManifest.yaml"]


def test_upgrade_flattens_a_multi_chart_v2_app_as_beclab_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An app with a shared database sub-chart: one chart, the shared namespace becomes the
    release namespace, installed by the admin (beclab/apps acestep15v2 -> acestep15v3)."""
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, CHARTS / "ragstack", capsys)
    assert "--upgrade to 0.9.3: templates/ragstack/deployment.yaml: the shared namespace ragdb-shared → the release " \
           "namespace (1x): one chart, one namespace" in notes
    legacy = importer.to_app(importer.find(str(CHARTS / "ragstack"))[0], dt.date(2026, 12, 3)).app
    app = load_app(root / "apps" / "ragstack")
    files = render.render(app, targets.CURRENT)
    m = manifest_of(files)
    assert (m["apiVersion"], m["spec"]["onlyAdmin"], m["workloadReplicas"]) == ("v3", True, {"ragdb": 1, "ragstack": 1})
    assert "subCharts" not in m["spec"] and sorted(p for p in files if p.startswith("templates/")) == [
        "templates/NOTES.txt", "templates/ragdb/statefulset.yaml", "templates/ragstack/deployment.yaml"]
    from olares_pack.render import imported as chartrender

    before, after = pods(chartrender.objects(legacy)), pods(chartrender.objects(app))
    assert before.keys() == after.keys() == {"Deployment/ragstack", "StatefulSet/ragdb"}
    assert after["StatefulSet/ragdb"] == before["StatefulSet/ragdb"]
    [env] = after["Deployment/ragstack"]["containers"][0]["env"]
    assert env == {"name": "DB_URL", "value": "http://ragdb.ragstack-alice:6333"}  # was ragdb.ragdb-shared
    before["Deployment/ragstack"]["containers"][0]["env"] = [env]
    assert after == before  # nothing else changed
    assert errors_for_1_12_6("ragstack", files) == []


def test_what_blocks_a_multi_chart_upgrade_is_said_and_the_app_stays_legacy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src" / "ragstack"
    shutil.copytree(CHARTS / "ragstack", src)
    for sub in ("ragdb", "ragstack"):
        (src / sub / "templates" / "_helpers.tpl").write_text('{{- define "labels" -}}\napp: %s\n{{- end }}\n' % sub)
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert [n for n in notes if n.startswith("--upgrade")] == [
        "--upgrade: not converted (the app stays 0.9.2 for 1.12.3-1.12.5): ragstack/templates/_helpers.tpl defines the "
        "template 'labels', which ragdb/templates/_helpers.tpl defines too"]
    app = load_app(root / "apps" / "ragstack")
    assert (app.version, app.targets) == ("0.9.2", ["legacy"])


def test_a_lone_closing_brace_pair_and_empty_links_are_imported_and_mapped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 0.10.0/v1 chart a device installs: `}}` in its description is literal text to Go
    templates (kept as written), and `website: ''` / `sourceCode: ''` are empty optional fields."""
    root = empty_repo(tmp_path)
    assert run_import(root, str(LEGACY / "textsvone"), extra=("--format", "json")) == 0
    notes = json.loads(capsys.readouterr().out)["charts"][0]["notes"]
    assert "website: '' (empty) taken as absent, as a device shows it; the next render leaves it out" in notes
    assert not [n for n in notes if "'}}' in a text" in n]  # a lone `}}` is text: kept as written
    app = load_app(root / "apps" / "textsvone")
    assert app.website is None and app.full_description.startswith("Close an action with }} and a Jinja block with %}.")
    repo = Repo.of_apps(root / "apps")
    rec = records.read(repo, "textsvone", "2.1.0")
    assert (root / rec.charts["legacy"].file).read_bytes() == importer.find(str(LEGACY / "textsvone"))[0].package
    assert main(["lint", str(root / "apps" / "textsvone"), "--olares", "1.12.5"]) == ExitCode.OK
    capsys.readouterr()
    shutil.rmtree(root)
    root = empty_repo(tmp_path)
    upgrade_notes(root, LEGACY / "textsvone", capsys)
    app = load_app(root / "apps" / "textsvone")
    files = render.render(app, targets.CURRENT)
    assert app.version == "2.1.1" and errors_for_1_12_6("textsvone", files) == []
    assert "website" not in manifest_of(files)["spec"]


def test_a_chart_renders_only_for_the_target_it_is_written_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(LEGACY / "gpuvtwo")) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["render", "gpuvtwo", "--apps-dir", str(root / "apps"), "--target", "current", "--out", str(out)]) == ExitCode.INPUT
    assert "olares-pack import --upgrade" in capsys.readouterr().err
    assert not (out / "current").exists()
    assert main(["lint", str(root / "apps" / "gpuvtwo"), "--target", "current"]) == ExitCode.INPUT
    assert "olares-pack import --upgrade" in capsys.readouterr().err
    app_yaml = root / "apps" / "gpuvtwo" / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("targets:\n- legacy", "targets:\n- current"))
    assert main(["release", "gpuvtwo", "--apps-dir", str(root / "apps"), "--bump", "patch", "--summary", "s",
                 "--date", DATE]) == ExitCode.INPUT
    assert "olares-pack import --upgrade" in capsys.readouterr().err
    assert records.versions(Repo.of_apps(root / "apps"), "gpuvtwo") == ["1.0.5"]


@pytest.mark.parametrize("chart", ["gpuvtwo", "llamaturbo", "ragstack", "textsvone"])
def test_every_upgraded_fixture_is_accepted_by_the_official_checker(tmp_path: Path, chart: str, oracle: object,  # noqa: F811 - the fixture
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The oracle (beclab's oac Lint, oracle/): skipped with its build error where it cannot be built."""
    root = empty_repo(tmp_path)
    upgrade_notes(root, CHARTS / chart if (CHARTS / chart).is_dir() else LEGACY / chart, capsys)
    files = render.render(load_app(root / "apps" / chart), targets.CURRENT)
    v = oracle.verdict_files(chart, files)  # type: ignore[attr-defined]
    assert v.accepted, v.errors


# ---------------------------------------------------------------- what a new user hit (issue #25, Import)


def test_notes_alone_do_not_fail_without_strict(tmp_path: Path) -> None:
    """Charts a device installs import with notes (a lone }}, an empty website, an i18n file);
    only --strict makes notes fail."""
    root = empty_repo(tmp_path)
    assert run_import(root, str(LEGACY / "textsvone"), str(LEGACY / "gpuvtwo")) == 0
    shutil.rmtree(root)
    root = empty_repo(tmp_path)
    assert run_import(root, str(LEGACY / "textsvone"), str(LEGACY / "gpuvtwo"), extra=("--strict",)) == 1


def test_dry_run_creates_no_lock_file(tmp_path: Path) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "notesui"), extra=("--dry-run",)) == 0
    assert sorted(p.name for p in root.iterdir()) == ["apps"]


def test_the_text_report_prints_notes_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "src" / "notes-ui"
    shutil.copytree(CHARTS / "notesui", bad)
    for rel in ("Chart.yaml", "OlaresManifest.yaml"):
        (bad / rel).write_text((bad / rel).read_text().replace("name: notesui", "name: notes-ui"))
    root = empty_repo(tmp_path)
    assert run_import(root, str(bad)) == 1
    out = capsys.readouterr().out.replace("│", "").replace("\n", "").replace(" ", "")
    assert "(^[a-z0-9]{1,30}$)" in out  # not read as rich markup


def test_the_en_us_note_is_made_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = empty_repo(tmp_path)
    assert run_import(root, str(LEGACY / "gpuvtwo"), extra=("--format", "json")) == 0
    notes = json.loads(capsys.readouterr().out)["charts"][0]["notes"]
    assert [n for n in notes if "en-US" in n] == [
        "i18n/en-US/OlaresManifest.yaml: en-US texts are the app's own (metadata/spec): this file is not kept"]


def test_a_live_source_says_what_it_lists_names_and_serves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A source listing one version per app, naming older ones in versionHistory, and no longer
    serving one of them: the report counts each and names the missing file."""
    served = empty_repo(tmp_path / "served")
    _versions(tmp_path)
    assert run_import(served, str(tmp_path / "src")) == 0
    capsys.readouterr()
    root = empty_repo(tmp_path)
    with serving(Source(served, served / "market-index.json")) as url:
        (served / "packages" / "current" / "speechapp-1.0.0.tgz").unlink()  # gone since the source loaded
        assert run_import(root, url, extra=("--format", "json")) == 0
    said = json.loads(capsys.readouterr().out)["sources"]
    assert said == [f"{url}: lists 1 chart(s) (one version per app); its versionHistory names 2 more; 2 of these 3 "
                    "are served and taken; not served: speechapp-1.0.0.tgz"]
    assert records.versions(Repo.of_apps(root / "apps"), "speechapp") == ["1.1.0", "1.2.0"]


def test_forms_of_the_official_legacy_charts_import_and_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Forms that beclab/apps legacy charts use and devices install: no spec.developer (ytdlp),
    an i18n file outside i18n/<locale>/ (wealthpilot), CRLF templates (cosyvoice), a workload
    name chosen in an if/else inside metadata (cosyvoice's clientproxy)."""
    src = tmp_path / "src" / "textsvone"
    shutil.copytree(LEGACY / "textsvone", src)
    m = src / "OlaresManifest.yaml"
    m.write_text(m.read_text().replace("  developer: example\n", "  submitter: Example Org\n"))
    (src / "i18n").mkdir()
    (src / "i18n" / "en-US.yaml").write_text("title: Template Gallery\n")
    tpl = src / "templates" / "app.yaml"
    text = tpl.read_text().replace("metadata:\n  name: textsvone\n", "metadata:\n{{- if .Values.admin }}\n  name: textsvone\n"
                                   "{{- else }}\n  name: textsvoneuser\n{{- end }}\n", 1)
    tpl.write_bytes(text.replace("\n", "\r\n").encode())
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert "spec.developer: absent (a device shows none); the app manifest names 'Example Org' (the submitter)" in notes
    assert "i18n/en-US.yaml: not an i18n/<locale>/OlaresManifest.yaml file, which no device reads: not kept" in notes
    app = load_app(root / "apps" / "textsvone")
    files = render.render(app, targets.CURRENT)
    assert app.version == "2.1.1" and errors_for_1_12_6("textsvone", files) == []
    assert "  replicas: {{ .Values.workloads.textsvone.replicaCount }}\r\n" in files["templates/app.yaml"]


def test_a_multi_chart_app_in_the_third_party_form_flattens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Sub-charts that name workloads and paths after `.Release.Name` and render the shared part
    for the admin only (the form of the public third-party Olares One market's shared apps)."""
    src = tmp_path / "src" / "ragstack"
    shutil.copytree(CHARTS / "ragstack", src)
    dep = src / "ragstack" / "templates" / "deployment.yaml"
    dep.write_text(dep.read_text().replace("  name: ragstack\n  namespace", "  name: {{ .Release.Name }}\n  namespace", 1)
                   .replace("/ragstack\"", "/{{ .Release.Name }}/data\""))
    sts = src / "ragdb" / "templates" / "statefulset.yaml"
    sts.write_text("{{- if and .Values.admin .Values.bfl.username (eq .Values.admin .Values.bfl.username) }}\n"
                   + sts.read_text() + "{{- end }}\n")
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert "--upgrade to 0.9.3: ragstack/templates/deployment.yaml: .Release.Name/.Chart.Name → \"ragstack\" (2x): " \
           "its release name under v2" in notes
    legacy = importer.to_app(importer.find(str(src))[0], dt.date(2026, 12, 3)).app
    app = load_app(root / "apps" / "ragstack")
    files = render.render(app, targets.CURRENT)
    assert "  name: ragstack\n" in files["templates/ragstack/deployment.yaml"]
    from olares_pack.render import imported as chartrender

    before, after = pods(chartrender.objects(legacy)), pods(chartrender.objects(app))
    assert after["Deployment/ragstack"]["volumes"] == before["Deployment/ragstack"]["volumes"]  # same host path
    assert after["StatefulSet/ragdb"] == before["StatefulSet/ragdb"]
    assert errors_for_1_12_6("ragstack", files) == []


def test_user_variables_keep_their_source_under_an_app_local_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A template reading OLARES_USER_SMTP_PORT through a variable: on v3 the app declares SMTP_PORT
    from the user variable (oac envs.go; beclab/apps difyv3); a container's own env name is left."""
    src = tmp_path / "src" / "textsvone"
    shutil.copytree(LEGACY / "textsvone", src)
    tpl = src / "templates" / "app.yaml"
    tpl.write_text("{{- $oe := .Values.olaresEnv | default dict }}\n" + tpl.read_text().replace(
        '              value: "{{ .Values.pageSize }}"\n',
        '              value: "{{ .Values.pageSize }}"\n            - name: MAIL_PORT\n'
        '              value: "{{ $oe.OLARES_USER_SMTP_PORT }}"\n'))
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert "--upgrade to 2.1.1: envs: SMTP_PORT from OLARES_USER_SMTP_PORT declared (the templates read " \
           "OLARES_USER_SMTP_PORT)" in notes
    app = load_app(root / "apps" / "textsvone")
    files = render.render(app, targets.CURRENT)
    assert manifest_of(files)["envs"] == [{"envName": "SMTP_PORT", "required": False, "applyOnChange": True,
                                           "valueFrom": {"envName": "OLARES_USER_SMTP_PORT"}}]
    original = importer.find(str(src))[0].files
    assert rendered_pods(files, "textsvone", {"SMTP_PORT": "587"}) == \
        rendered_pods(original, "textsvone", {"OLARES_USER_SMTP_PORT": "587"})
    assert errors_for_1_12_6("textsvone", files) == []


def test_a_v2_app_with_one_sub_chart_becomes_one_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """apiVersion v2 with a single sub-chart (1.12.3-1.12.5 install it through the v1 path)."""
    src = tmp_path / "src" / "ragstack"
    shutil.copytree(CHARTS / "ragstack", src)
    shutil.rmtree(src / "ragdb")
    m = src / "OlaresManifest.yaml"
    m.write_text(m.read_text().replace("    - name: ragdb\n      shared: true\n", ""))
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert not [n for n in notes if "not converted" in n or "still refused" in n]
    app = load_app(root / "apps" / "ragstack")
    files = render.render(app, targets.CURRENT)
    manifest = manifest_of(files)
    assert (manifest["apiVersion"], manifest["workloadReplicas"]) == ("v3", {"ragstack": 1})
    assert "onlyAdmin" not in manifest["spec"] and "subCharts" not in manifest["spec"]
    assert errors_for_1_12_6("ragstack", files) == []


def test_the_upgrade_grants_the_userspace_permissions_the_templates_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src" / "textsvone"
    shutil.copytree(LEGACY / "textsvone", src)
    m = src / "OlaresManifest.yaml"
    m.write_text(m.read_text().replace("permission:\n  appData: true\n", ""))
    tpl = src / "templates" / "app.yaml"
    tpl.write_text(tpl.read_text().replace('''            - name: data
              mountPath: /data
''', '''            - name: data
              mountPath: /data
            - name: cache
              mountPath: /cache
''').replace('''      volumes:
''', '''      volumes:
        - name: cache
          hostPath:
            path: "{{ .Values.userspace.appCache }}/textsvone"
            type: DirectoryOrCreate
'''))
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert "--upgrade to 2.1.1: permission.appData: true (the templates use .Values.userspace.appData)" in notes
    files = render.render(load_app(root / "apps" / "textsvone"), targets.CURRENT)
    assert manifest_of(files)["permission"] == {"appData": True, "appCache": True}
    assert errors_for_1_12_6("textsvone", files) == []


def test_the_flattened_chart_takes_only_what_v2_installed_and_refuses_name_clashes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A multi-chart v2 app installs its sub-charts alone, each with its own values
    (framework/app-service HelmOpsV2.install): root values are not carried over. Two sub-charts
    that reuse a Service name in their own namespaces cannot share one: said, not converted."""
    src = tmp_path / "src" / "ragstack"
    shutil.copytree(CHARTS / "ragstack", src)
    (src / "values.yaml").write_text("models:\n  - qdrant-snapshot\n")
    root = empty_repo(tmp_path)
    notes = upgrade_notes(root, src, capsys)
    assert "--upgrade to 0.9.3: values.yaml: the root chart's models, which v2 installs of the sub-charts never read: " \
           "not kept (the render stays the one devices installed)" in notes
    assert "models" not in (yaml.safe_load(render.render(load_app(root / "apps" / "ragstack"), targets.CURRENT)["values.yaml"]) or {})
    sts = src / "ragdb" / "templates" / "statefulset.yaml"
    sts.write_text(sts.read_text() + "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: ragstack\nspec:\n"
                   "  selector:\n    app: ragdb\n  ports:\n    - port: 6333\n")
    root = empty_repo(tmp_path / "again")
    notes = upgrade_notes(root, src, capsys)
    assert [n for n in notes if n.startswith("--upgrade")] == [
        "--upgrade: not converted (the app stays 0.9.2 for 1.12.3-1.12.5): merged into one namespace, the chart renders "
        "Service ragstack more than once (the sub-charts reuse the name in namespaces of their own); rename one of them "
        "in chart.files"]


def test_what_official_charts_carry_imports_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """beclab/apps lobechat has lone carriage returns in a template (`-}}\\r\\r\\n`), chaosmesh a CRD
    file of 1.25 MB: devices install both. A file over Helm's own limit (5 MiB) is refused."""
    folder = tmp_path / "src" / "notesui"
    shutil.copytree(CHARTS / "notesui", folder)
    template = folder / "templates" / "app.yaml"
    template.write_bytes(b'{{- $names := split "," "a,b" -}}\r\r\n' + template.read_bytes())
    crd = "".join(f"# {i:08d} " + "x" * 100 + "\n" for i in range(12_000))  # 1.3 MB of YAML comments
    (folder / "crds").mkdir()
    (folder / "crds" / "big.yaml").write_text(crd)
    root = empty_repo(tmp_path)
    assert run_import(root, str(folder)) == ExitCode.OK
    rendered = render.render(load_app(root / "apps" / "notesui"), targets.CURRENT)
    assert rendered["templates/app.yaml"].encode() == template.read_bytes()
    assert rendered["crds/big.yaml"] == crd
    capsys.readouterr()
    (folder / "crds" / "big.yaml").write_text("#" * (5 << 20) + "x\n")
    shutil.rmtree(root)
    root = empty_repo(tmp_path)
    assert run_import(root, str(folder), extra=("--format", "json")) == ExitCode.FINDINGS
    (chart,) = json.loads(capsys.readouterr().out)["charts"]
    assert chart["status"] == "refused" and "crds/big.yaml: is 5,242,882 characters long; at most 5,242,880" in chart["notes"][0]


# ---------------------------------------------------------------- import --structured --run (issue #50 item 5)
# The runs on a node are in tests/test_node.py ("import on the node"); here what needs no node.

NODE_CHARTS = LEGACY / "node"


def test_run_needs_structured(tmp_path: Path) -> None:
    assert run_import(empty_repo(tmp_path), str(NODE_CHARTS / "tinychat"), extra=("--run",)) == ExitCode.INPUT


def test_run_says_what_no_stand_in_runs_and_which_check_stood_instead(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from olares_pack.cluster import node as nodemod

    def no_node(log=None):  # noqa: ANN001, ANN202, ARG001 - a vLLM app needs none
        raise AssertionError("a node was started for an app no stand-in runs")

    monkeypatch.setattr(nodemod, "running", no_node)
    root = empty_repo(tmp_path)
    assert run_import(root, str(CHARTS / "vllmserve"), extra=("--structured", "--run", "--format", "json")) == 0
    out = json.loads(capsys.readouterr().out)
    ran = out["node"]["vllmserve"]
    assert not ran["ran"] and ran["ok"] and ran["not_run"] == "standin.vllm" and "no stand-in runs vLLM" in ran["why_not"]
    assert "the independent proof" in ran["check"]
    row = next(r for r in out["charts"] if r["app"] == "vllmserve" and "structured" in r)
    assert row["structured"]["node"]["ran"] is False
    assert any(n.startswith("--run: not run on the node (standin.vllm): no stand-in runs vLLM") for n in row["notes"])
    assert (root / "apps" / "vllmserve" / "app.yaml").is_file()


def test_a_fork_image_is_not_stood_in_by_upstream_llama_server() -> None:
    from olares_pack.importing import onnode

    files = {str(p.relative_to(NODE_CHARTS / "tinychat")): p.read_text() for p in (NODE_CHARTS / "tinychat").rglob("*") if p.is_file()}
    fork = {"kind": "llamacpp", "image": {"repository": "docker.io/aamsellem/llamacpp-mtp", "tag": "0.1.0"}}
    rule, why, check = onnode.why_not("tinychat", files, fork) or ("", "", "")
    assert rule == "standin.fork" and "llama.cpp fork" in why and "llama-server's parser" in check
    upstream = {"kind": "llamacpp", "image": {"repository": "ghcr.io/ggml-org/llama.cpp", "tag": "server-cuda-b11434"}}
    assert onnode.why_not("tinychat", files, upstream) is None  # busybox and llama.cpp: both stood in
    files["templates/deployment.yaml"] = files["templates/deployment.yaml"].replace("docker.io/library/busybox:1.36",
                                                                                    "docker.io/curlimages/curl:8.10.1")
    rule, why, _ = onnode.why_not("tinychat", files, upstream) or ("", "", "")
    assert rule == "standin.image" and "no stand-in image for docker.io/curlimages/curl:8.10.1 (container fetch-model)" in why


def test_the_two_ways_must_answer_the_same_served_name_on_the_same_port() -> None:
    from olares_pack.importing import onnode
    from olares_pack.rehearse.live import LiveStep

    def way(name: str, served: str, entrance: str, ok: bool = True) -> onnode.Way:
        step = LiveStep("current", "install", "1.0.1", f"alice-{name}", ok=ok, served=served, answer="hi",
                        seconds={"models": 3.0, "answered": 3.5} if ok else {}, error="" if ok else "exited with 1: boom")
        return onnode.Way(name, "1.0.1", "current", [f"app-alice-{name}"], entrance, [step])

    assert onnode.compare([way("original", "tiny", "app:8080"), way("typed", "tiny", "app:8080")]) == []
    found = onnode.compare([way("original", "tiny", "app:8080"), way("typed", "other", "app:8000")])
    assert found == ["served model name: the original answers 'tiny' (alice-original), the typed render 'other' (alice-typed)",
                     "entrance port: the original answers on app:8080, the typed render on app:8000"]
    failed = onnode.compare([way("original", "", "app:8080", ok=False), way("typed", "tiny", "app:8080")])
    assert failed == ["the original chart (1.0.1, install for alice-original) failed on the node: exited with 1: boom"]


def test_the_chart_run_is_packaged_under_the_apps_name(tmp_path: Path) -> None:
    import tarfile
    from io import BytesIO

    from olares_pack.importing import onnode

    folder = tmp_path / "tinychat-1.0.1"
    shutil.copytree(NODE_CHARTS / "tinychat", folder)
    (found,) = importer.find(str(folder))
    names = tarfile.open(fileobj=BytesIO(onnode._archive("tinychat", found))).getnames()
    assert "tinychat/Chart.yaml" in names and "tinychat/templates/deployment.yaml" in names
