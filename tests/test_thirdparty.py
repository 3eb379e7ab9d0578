"""Import of charts in the shapes a third-party catalogue for Olares 1.12.3-1.12.5 publishes
(tests/data/thirdparty: 0.10.0/apiVersion v2, `lint --olares 1.12.5` clean): a 31-character name
and a 32-character title, a model fetched by an init container with wget from a Hugging Face
resolve URL held in a ConfigMap, vLLM behind an entrypoint script and vLLM-Omni, a "what's new"
that names a quantization (q4_0), featured images and screenshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import serving
from device import Device, V2Device
from loopback_http import HTTP
from test_import import rendered_pods

from olares_pack import olares
from olares_pack.apps.load import load_app, validate_data
from olares_pack.apps.manifest import ChartApp
from olares_pack.charts import package
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode, InputError
from olares_pack.engines.detect import find_engines
from olares_pack.equivalence import KINDS
from olares_pack.importing import hfurls, importer
from olares_pack.market.server import Source
from olares_pack.render import app as render

THIRD = Path(__file__).parent / "data" / "thirdparty"
LEGACY = Path(__file__).parent / "data" / "import"
DATE = "2026-12-03"
LONG = "llamacppnemotrondiffusion14bone"  # 31 characters
AWQ, OMNI = "vllmqwen3awqentryone", "vllmomniqwen25threebone"


def run_import(root: Path, *sources: Path, extra: tuple[str, ...] = ()) -> int:
    (root / "apps").mkdir(parents=True, exist_ok=True)
    return main(["import", *map(str, sources), "--apps-dir", str(root / "apps"), "--date", DATE, *extra])


# What the typed form reads is tested here, not whether it renders the same app: these charts'
# typed renders differ (download step, entrances, …), so every kind of difference is accepted.
ACCEPT_ALL = tuple(f"--accept={k}" for k in sorted(KINDS) if k != "undecidable")


def importer_objects(files: dict[str, str], name: str) -> list[dict]:
    from olares_pack.equivalence import manifest_of
    from olares_pack.render.imported import objects_of

    return objects_of(name, files, manifest_of(files, name))


def report(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, dict]:
    capsys.readouterr()
    assert run_import(root, THIRD, extra=(*extra, "--format", "json")) == 0
    return {r["app"]: r for r in json.loads(capsys.readouterr().out)["charts"]}


def test_the_charts_are_clean_for_1_12_5_and_import_unchanged_for_their_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for chart in (LONG, AWQ, OMNI):
        assert main(["lint", str(THIRD / chart), "--olares", "1.12.5"]) == ExitCode.OK, chart
    rows = report(tmp_path, capsys)
    assert {a: r["status"] for a, r in rows.items()} == {LONG: "imported", AWQ: "imported", OMNI: "imported"}
    app = load_app(tmp_path / "apps" / LONG)
    assert (app.name, app.title, app.targets) == (LONG, "Nemotron Diffusion 14B llama.cpp", ["legacy"])
    for chart in (LONG, AWQ, OMNI):
        found = importer.find(str(THIRD / chart))[0]
        published = tmp_path / "packages" / "legacy" / f"{chart}-{found.files['Chart.yaml'].split('version: ')[1].split()[0]}.tgz"
        assert published.read_bytes() == found.package  # the source's own bytes
        # re-rendered, the app runs the same containers
        files = render.render(load_app(tmp_path / "apps" / chart), olares.LEGACY)
        env = {"tok": "OLARES_USER_HUGGINGFACE_TOKEN"}
        assert rendered_pods(files, chart, env) == rendered_pods(found.files, chart, env), chart
    # the "what's new" reaches the ledger and the market as written
    ledger = json.loads((tmp_path / "market-index.json").read_text())
    summary = ledger["apps"][LONG]["versions"][0]["changelog"]["summary"]
    assert summary == "KV cache q4_0 on both K and V: twice the context in the same memory."
    assert main(["build", "--apps-dir", str(tmp_path / "apps"), "--check"]) == ExitCode.OK
    with serving(Source(tmp_path, tmp_path / "market-index.json")) as url:
        dev = Device(url, "1.12.5")
        assert dev.sync()
        assert {e["name"] for e in dev.apps.values()} == {LONG, AWQ, OMNI}
        assert dev.install(LONG) == "1.0.2"  # a 31-character name: the chart route serves it
        entries = {e["name"]: e for e in dev.apps.values()}
        assert "): KV cache q4_0 on both K and V: twice" in entries[LONG]["versionHistory"][0]["upgradeDescription"]
        # the featured image: the manifest's, else its first screenshot
        assert entries[AWQ]["featuredImage"] == "https://example.com/screens/qwen3awq-featured.webp"
        assert entries[LONG]["featuredImage"] == "https://example.com/screens/nemodiff-1.webp"
        assert entries[LONG]["promoteImage"] == ["https://example.com/screens/nemodiff-1.webp",
                                                 "https://example.com/screens/nemodiff-2.webp"]
        chart = HTTP.get(f"{url}/api/v2/applications/{LONG}/chart", params={"fileName": f"{LONG}-1.0.2.tgz"})
        assert chart.status_code == 200 and chart.content == dev.charts[f"{LONG}-1.0.2.tgz"]


def test_upgrade_says_what_the_1_12_6_line_needs_and_rename_gives_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 31-character name is the 1.12.6 checker's limit: --upgrade keeps the app for
    1.12.3-1.12.5 and says so; with --rename the upgraded app is a new one under a 30-character
    name, its 32-character title shortened (and said)."""
    assert main(["lint", str(THIRD / LONG), "--olares", "1.12.6"]) == ExitCode.FINDINGS
    notes = report(tmp_path / "a", capsys, "--upgrade")[LONG]["notes"]
    assert any(n.startswith("--upgrade: not converted (the app stays 1.0.2 for 1.12.3-1.12.5") and
               "import with --upgrade --rename (a new app, 'llamacppnemotrondiffusion14bon')" in n for n in notes), notes
    assert load_app(tmp_path / "a" / "apps" / LONG).targets == ["legacy"]
    rows = report(tmp_path / "b", capsys, "--upgrade", "--rename")
    new = "llamacppnemotrondiffusion14bon"
    assert rows[new]["status"] == "to release"
    assert any("--upgrade: title 'Nemotron Diffusion 14B llama.cpp' (32 characters) → 'Nemotron Diffusion 14B'" in n
               for n in rows[new]["notes"])
    app = load_app(tmp_path / "b" / "apps" / new)
    assert (app.targets, app.title) == (["current"], "Nemotron Diffusion 14B")
    assert main(["lint", str(tmp_path / "b" / "apps" / new), "--olares", "1.12.6"]) == ExitCode.OK


def test_a_long_name_or_title_is_refused_only_for_the_current_line(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """What release reads (app.yaml): a name or title over 30 characters with targets [legacy] is
    valid; adding the current target is an error that names the 1.12.6+ installer."""
    report(tmp_path, capsys, "--structured", *ACCEPT_ALL)
    data = yaml.safe_load((tmp_path / "apps" / LONG / "app.yaml").read_text())
    assert data["targets"] == ["legacy"] and data["engine"]["kind"] == "llamacpp"
    validate_data(data, "app.yaml")
    with pytest.raises(InputError) as exc:
        validate_data({**data, "targets": ["legacy", "current"]}, "app.yaml")
    assert f"name '{LONG}' is not an Olares app name for the current target (^[a-z0-9]{{1,30}}$): 31 characters and " \
        "targets holds current: the 1.12.6+ installer's checker takes at most 30" in str(exc.value.problems)
    with pytest.raises(InputError) as exc:
        validate_data({**data, "name": "nemodiff", "targets": ["current"]}, "app.yaml")
    assert "title 'Nemotron Diffusion 14B llama.cpp' is 32 characters" in str(exc.value.problems)
    validate_data({**data, "name": "nemodiff", "title": "Nemotron Diffusion 14B", "targets": ["current"]}, "app.yaml")


def test_structured_reads_hugging_face_downloads_and_vllm_behind_an_entrypoint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = report(tmp_path / "k", capsys, "--structured")
    # without --accept, each is typed: what the charts say beyond the engine (their own fetch step,
    # a wrapper script, env, probes, manifest options) is kept, and the typed render makes the same app
    assert all(r["structured"]["typed"] and not r["structured"]["differences"] and not r["structured"]["accepted"]
               for r in kept.values()), {a: r["structured"] for a, r in kept.items()}
    assert not [a for a in kept if isinstance(load_app(tmp_path / "k" / "apps" / a), ChartApp)]
    awq = yaml.safe_load((tmp_path / "k" / "apps" / AWQ / "app.yaml").read_text())
    # the vLLM image's entrypoint script is the program the typed form starts too
    assert awq["engine"]["command"][0].endswith(".sh") and awq["model"]["fetch"] in ("engine", "chart")
    omni = yaml.safe_load((tmp_path / "k" / "apps" / OMNI / "app.yaml").read_text())
    # a bash script that runs the engine last: kept up to the program, the typed arguments after it
    assert omni["engine"]["command"] == ["/bin/bash", "-c"] and omni["engine"]["script"].endswith("/opt/entrypoint.sh serve")
    rows = report(tmp_path, capsys, "--structured", *ACCEPT_ALL)
    assert not [n for r in rows.values() for n in r["notes"] if n.startswith("--structured: kept as written")]
    long = yaml.safe_load((tmp_path / "apps" / LONG / "app.yaml").read_text())
    # the URL sits in a ConfigMap the init container reads through envFrom
    assert (long["model"]["repo"], long["model"]["revision"], [f["name"] for f in long["model"]["files"]]) == \
        ("example-org/Nemotron-Diffusion-14B-GGUF", "main", ["nemotron-diffusion-14b-Q8_0.gguf"])
    assert long["server"]["cache_type"] == {"k": "q4_0", "v": "q4_0"}
    awq = yaml.safe_load((tmp_path / "apps" / AWQ / "app.yaml").read_text())
    assert (awq["engine"]["kind"], awq["model"]["repo"], awq["server"]["max_model_len"]) == ("vllm", "Qwen/Qwen3-8B-AWQ", 32768)
    assert awq["engine"]["command"] == ["/entrypoint.sh"] and awq["engine"]["shared"] is False
    typed = load_app(tmp_path / "apps" / AWQ)
    engine = find_engines(importer_objects(render.render(typed, olares.get(typed.targets[0])), AWQ))
    assert [e.kind for e in engine] == ["vllm"]
    omni = yaml.safe_load((tmp_path / "apps" / OMNI / "app.yaml").read_text())
    assert (omni["engine"]["kind"], omni["model"]["repo"]) == ("vllm", "Qwen/Qwen2.5-Omni-3B")
    assert omni["server"]["extra_args"] == ["--omni"]
    # an inline $HF_ENDPOINT/<repo>/resolve/... (curl in an init container) is read too
    capsys.readouterr()
    assert run_import(tmp_path / "g", LEGACY / "gpuvtwo", extra=("--structured", *ACCEPT_ALL)) == 0
    g = yaml.safe_load((tmp_path / "g" / "apps" / "gpuvtwo" / "app.yaml").read_text())
    assert g["model"]["repo"] == "Qwen/Qwen3-8B-GGUF" and g["model"]["files"][0]["name"] == "Qwen3-8B-Q4_K_M.gguf"


def _pod(command: list[str], args: list[str], image: str, env: list[dict] | None = None,
         init: list[dict] | None = None) -> list[dict]:
    c = {"name": "engine", "image": image, "command": command, "args": args, "env": env or []}
    return [{"kind": "Deployment", "metadata": {"name": "app"},
             "spec": {"template": {"spec": {"containers": [c], "initContainers": init or []}}}}]


def test_engine_shapes_and_download_urls_are_read_from_objects() -> None:
    entry = find_engines(_pod(["/entrypoint.sh"], ["serve", "org/m", "--port", "8000"], "vllm/vllm-openai:v0.11.0"))
    assert [(e.kind, e.argv[:2]) for e in entry] == [("vllm", ["serve", "org/m"])]
    omni = find_engines(_pod(["vllm-omni", "serve", "org/omni"], [], "vllm/vllm-omni:v0.11.0rc1"))
    assert [(e.kind, e.argv[:2]) for e in omni] == [("vllm", ["serve", "org/omni"])]
    # a script named like an entrypoint in an image that is not vLLM's is not taken for vLLM
    assert find_engines(_pod(["/entrypoint.sh"], ["serve", "org/m"], "example/webapp:1")) == []
    cm = {"kind": "ConfigMap", "metadata": {"name": "urls"},
          "data": {"URL": "https://huggingface.co/org/repo-GGUF/resolve/abc123/sub/m-Q4_0.gguf?download=true"}}
    init = [{"name": "get", "image": "busybox", "command": ["sh", "-c", 'wget -O /m/x.gguf "$U"'],
             "env": [{"name": "U", "valueFrom": {"configMapKeyRef": {"name": "urls", "key": "URL"}}}]}]
    objs = [cm, *_pod([], ["-m", "/m/x.gguf"], "ghcr.io/ggml-org/llama.cpp:server-cuda-b6200", init=init)]
    files = hfurls.downloads(objs, "Deployment/app")
    assert files == [hfurls.HfFile("org/repo-GGUF", "abc123", "sub/m-Q4_0.gguf")]
    assert hfurls.model(files) == {"repo": "org/repo-GGUF", "revision": "abc123", "file": "sub/m-Q4_0.gguf"}
    # a URL nobody fetches (no wget or curl in that container) is not a download
    init[0]["command"] = ["sh", "-c", 'echo "$U"']
    assert hfurls.downloads(objs, "Deployment/app") == []
    # the engine's own shell fetches the file named in a ConfigMap (envFrom), then starts the server
    script = ('[ -f "$DIR/$TARGET_FILE.ok" ] || eval curl -fL -C - $HF_AUTH "$TARGET_URL" -o "$DIR/$TARGET_FILE"\n'
              'exec ./llama-server --model "$DIR/$TARGET_FILE" --port 8000')
    cm2 = {"kind": "ConfigMap", "metadata": {"name": "env"}, "data": {
        "TARGET_URL": "https://huggingface.co/org/Diff-14B-Q8_0-GGUF/resolve/main/diff-14b-Q8_0.gguf",
        "TARGET_FILE": "diff-14b-Q8_0.gguf"}}
    pod = _pod(["/bin/bash", "-c"], [script], "docker.io/example/llama-cpp:316e88e")
    pod[0]["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "env"}}]
    assert [e.kind for e in find_engines([cm2, *pod])] == ["llamacpp"]
    assert hfurls.model(hfurls.downloads([cm2, *pod], "Deployment/app")) == {
        "repo": "org/Diff-14B-Q8_0-GGUF", "revision": "main", "file": "diff-14b-Q8_0.gguf"}


def test_an_upgraded_app_reaches_1_12_7_with_its_featured_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1.12.7 syncs over v2: the imported v2 chart is not offered there (its installer refuses it),
    the upgraded release is, and its item carries the featured image."""
    capsys.readouterr()
    assert run_import(tmp_path, THIRD / AWQ, extra=("--upgrade",)) == 0
    assert main(["release", AWQ, "--apps-dir", str(tmp_path / "apps"), "--version", "1.0.1", "--date", DATE]) == ExitCode.OK
    assert main(["build", "--apps-dir", str(tmp_path / "apps"), "--check"]) == ExitCode.OK
    with serving(Source(tmp_path, tmp_path / "market-index.json")) as url:
        dev = V2Device(url, "1.12.7", page_size=10)
        assert dev.sync()
        (item,) = dev.items.values()
        assert (item["name"], item["version"]) == (AWQ, "1.0.1")
        assert item["featured_image"] == "https://example.com/screens/qwen3awq-featured.webp"
        assert dev.install(AWQ) == "1.0.1"
        old = Device(url, "1.12.5")
        assert old.sync() and old.install(AWQ) == "1.0.0"
    assert package.read_archive_split((tmp_path / "packages" / "legacy" / f"{AWQ}-1.0.0.tgz").read_bytes())[0] == AWQ


def test_structured_after_upgrade_reads_the_gpu_of_the_converted_chart(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--upgrade --structured: the typed form reads the 0.12.0 chart's accelerator envelope and is
    compared with that chart (the one it replaces), not with the 0.10.0 original."""
    rows = report(tmp_path, capsys, "--upgrade", "--structured")
    for app in (AWQ, OMNI):
        s = rows[app]["structured"]
        assert s["typed"] and not s["differences"], s
