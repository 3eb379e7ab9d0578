"""What a new user hit following the documentation (issue #25): package names, annotations GitHub
can place, diff's arguments and texts, `vram --largest-ctx`, help and documentation that agree."""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, serving
from loopback_http import HTTP

from olares_pack import olares as targets
from olares_pack.cli import cli, main
from olares_pack.common.errors import ExitCode
from olares_pack.vram import estimate as vram

NAME = "llamacppqwen36mtpone"
DOCS = ROOT / "docs"


def chart_yaml(tgz: bytes) -> dict:
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/Chart.yaml"))
        f = tar.extractfile(member)
        assert f is not None
        return yaml.safe_load(f.read())


# ------------------------------------------------------------------------------- package


def test_package_writes_the_legacy_chart_under_its_published_name(repo: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["package", NAME, "--version", "1.0.10", "--apps-dir", str(repo / "apps"), "--out", str(out)]) == ExitCode.OK
    legacy = out / "legacy" / f"{NAME}-1.0.10-legacy.tgz"
    assert legacy.read_bytes() == (repo / "packages" / "legacy" / legacy.name).read_bytes()
    assert chart_yaml(legacy.read_bytes())["version"] == "1.0.10-legacy"
    assert not (out / "legacy" / f"{NAME}-1.0.10.tgz").exists()
    assert chart_yaml((out / "current" / f"{NAME}-1.0.10.tgz").read_bytes())["version"] == "1.0.10"
    assert str(legacy) in capsys.readouterr().out


# ------------------------------------------------------------------------------- lint: where findings land


def new_app(repo: Path, name: str = "myqwen") -> Path:
    """Getting started's route without network: the bundled app copied under a new name, with an extra flag the
    engine build does not know and an image without a digest."""
    text = (repo / "apps" / NAME / "app.yaml").read_text().replace(f"name: {NAME}", f"name: {name}", 1)
    text = re.sub(r"(?m)^(\s+)digest: .*\n", "", text)
    text = re.sub(r"(?m)^  extra_args:.*\n(    .*\n)*", "", text)
    text = re.sub(r"(?m)^server:\n", "server:\n  extra_args: [--metrics, --no-such-flag-here]\n", text, count=1)
    (repo / "apps" / name).mkdir()
    (repo / "apps" / name / "app.yaml").write_text(text)
    return repo / "apps" / name / "app.yaml"


def annotations(out: str) -> list[dict[str, str]]:
    rows = []
    for line in out.splitlines():
        m = re.match(r"::(\w+) ([^:]*)::(.*)$", line)
        assert m, line
        props = dict(p.split("=", 1) for p in m.group(2).split(","))
        rows.append({"level": m.group(1), **props, "text": m.group(3)})
    return rows


def test_github_annotations_name_the_app_yaml_line_a_maintainer_edits(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = new_app(repo)
    lines = app_yaml.read_text().splitlines()
    monkeypatch.chdir(repo)
    main(["lint", "apps/myqwen", "--format", "github"])
    rows = annotations(capsys.readouterr().out)
    assert rows
    for row in rows:  # every annotation lands on a file of the repository
        assert (repo / row["file"]).is_file(), row
    unpinned = [r for r in rows if r["title"].split()[0] == "image.unpinned"]  # "image.unpinned (policy)"
    helpers = [r for r in unpinned if "Deployment/llminit" in r["text"]]  # the shared form's llm-init and chown images
    assert helpers and all(r["file"] == "apps/myqwen/app.yaml" and lines[int(r["line"]) - 1].strip() == "engine:"
                           for r in helpers), helpers  # they keep their defaults: the engine block takes their digests
    # the v2 shared form's per-user proxy (legacy target): no field holds its image; this copy of
    # the repository has no templates/, so the engine block
    proxy = [r for r in unpinned if "containers[proxy]" in r["text"]]
    assert proxy and all(r["file"] == "apps/myqwen/app.yaml" and lines[int(r["line"]) - 1].strip() == "engine:"
                         and "(rendered myqwen/templates/client.yaml)" in r["text"] for r in proxy), proxy
    unpinned = [r for r in unpinned if r not in helpers and r not in proxy]
    flag = [r for r in rows if r["title"].split()[0] == "engine.flag" and "--no-such-flag-here" in r["text"]]
    assert unpinned and flag
    for r in unpinned:
        assert r["file"] == "apps/myqwen/app.yaml"
        assert lines[int(r["line"]) - 1].strip() == "image:"  # engine.image
        assert any(f"(rendered {where})" in r["text"] for where in
                   ("templates/engine.yaml", "templates/deployment.yaml", "myqwenserver/templates/deployment.yaml"))
    for r in flag:
        assert r["file"] == "apps/myqwen/app.yaml" and "--no-such-flag-here" in lines[int(r["line"]) - 1]


def test_json_file_fields_name_the_app_yaml(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    new_app(repo)
    monkeypatch.chdir(repo)
    main(["lint", "apps/myqwen/app.yaml", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert findings
    assert {f["file"] for f in findings} <= {"apps/myqwen/app.yaml", *(p.relative_to(ROOT).as_posix()
                                                                        for p in (ROOT / "templates").glob("*.j2"))}
    assert all(f["file"] == "apps/myqwen/app.yaml" for f in findings if f["rule"] in ("image.unpinned", "engine.flag"))


def test_a_published_archive_is_placed_on_its_app_and_a_stray_one_on_itself(repo: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(repo)
    tgz = f"packages/legacy/{NAME}-1.0.10-legacy.tgz"
    main(["lint", tgz, "--format", "github"])
    rows = annotations(capsys.readouterr().out)
    assert rows and all((repo / r["file"]).is_file() for r in rows)
    assert all(r["text"].startswith(f"{tgz}: ") for r in rows)
    assert {r["file"] for r in rows if r["title"].split()[0] == "image.unpinned"} == {f"apps/{NAME}/app.yaml"}

    stray = tmp_path / "elsewhere" / f"{NAME}-1.0.10-legacy.tgz"
    stray.parent.mkdir()
    shutil.copy(repo / tgz, stray)
    main(["lint", str(stray), "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert findings and {f["file"] for f in findings} == {str(stray)}
    assert all("(in templates/" in f["message"] for f in findings if f["rule"] == "image.unpinned")


def test_imported_charts_findings_land_on_their_templates_inside_app_yaml(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Every hand-written chart of tests/data/charts imported (the case of a live third-party
    source: 30 apps' annotations collapsed onto two paths GitHub cannot place)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "apps").mkdir()
    assert main(["import", str(ROOT / "tests" / "data" / "charts"), "--apps-dir", "apps"]) in (0, 1)
    capsys.readouterr()
    main(["lint", "apps", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    placed = 0
    for f in findings:
        assert (tmp_path / f["file"]).is_file() and f["file"].startswith("apps/") and f["file"].endswith("/app.yaml"), f
        m = re.search(r"containers\[([^\]]+)\]", f["path"])
        if m and f["rule"] == "image.unpinned":  # inside chart.files: the template's own line
            assert (tmp_path / f["file"]).read_text().splitlines()[f["line"] - 1].strip() == f"- name: {m.group(1)}", f
            placed += 1
    assert placed >= 6


# ------------------------------------------------------------------------------- diff


def test_diff_app_and_one_version_compares_it_with_current(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diff", NAME, "1.0.9", "--format", "json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1
    assert "with current (app.yaml)" in captured.err
    version = next(c for c in doc["changes"] if c["key"] == "version")
    assert version["old"] == "1.0.9" and version["new"] == yaml.safe_load((ROOT / "apps" / NAME / "app.yaml").read_text())["version"]


def test_diff_all_names_a_changed_upgrade_description(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diff", NAME, "1.0.9", "1.0.10", "--all", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    texts = [c for c in doc["changes"] + doc["unchanged"] if c["key"] == "texts"]
    assert len(texts) == 1 and texts[0]["new"] != "same"
    assert "spec.upgradeDescription" in texts[0]["new"]


# ------------------------------------------------------------------------------- vram --largest-ctx


def largest(capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    main(["vram", NAME, "--largest-ctx", *extra])
    return [line for line in capsys.readouterr().out.splitlines() if "context" in line and line.startswith(("largest", "no "))]


def test_largest_ctx_is_one_number_and_its_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.apps.load import load_app
    from olares_pack.vram import budget

    app = load_app(ROOT / "apps" / NAME / "app.yaml")
    meta, s = budget.model_meta(app, ROOT / "apps" / NAME), budget.settings_for(app.server)
    for gpu_mib in (None, 16000):
        dev = vram.device(gpu_mib=gpu_mib)
        b = app.engine.build  # the estimate is the build the chart runs
        fits, tight = vram.largest_context(meta, s, dev, "fits", build=b), vram.largest_context(meta, s, dev, "tight", build=b)
        said = largest(capsys, *(["--gpu-mib", str(gpu_mib)] if gpu_mib else []))
        assert not any("tight up to" in line for line in said)
        assert said[0].startswith(f"largest context that fits: {fits}")
        if tight > fits:
            assert said[1].startswith(f"largest context that is tight: {tight} ")
        else:
            assert len(said) == 1
        if fits == meta.context_length:
            assert "trained context" in said[0]


# ------------------------------------------------------------------------------- help and documentation agree


def test_target_help_and_docs_say_the_legacy_manifest_the_render_writes() -> None:
    from olares_pack.apps.load import load_app
    from olares_pack.render import app as render

    legacy = targets.LEGACY
    app = load_app(ROOT / "apps" / NAME / "app.yaml")
    per_user = app.model_copy(update={"engine": app.engine.model_copy(update={"shared": False})})
    targets_page = (DOCS / "concepts" / "targets.md").read_text()
    row = next(line for line in targets_page.splitlines() if line.startswith("| `legacy` |"))
    for form, what in ((app, "shared"), (per_user, "per-user")):
        text = render.render(form, legacy)["OlaresManifest.yaml"]
        # the two top-level keys outside the manifest's templated branches
        version = re.search(r'^olaresManifest\.version: "([^"]+)"$', text, re.M).group(1)  # type: ignore[union-attr]
        api = re.search(r'^apiVersion: "([^"]+)"$', text, re.M).group(1)  # type: ignore[union-attr]
        assert (version, api) == (legacy.manifest_version, "v2" if what == "shared" else legacy.api_version)
        for command in ("build", "render", "package", "lint"):
            option = next(p for p in cli.commands[command].params if p.name == "target_names")
            assert f"{version}/{api} {what}" in (option.help or "")
        assert f"`apiVersion: {api}`" in row and f"`{version}`" in row


def test_command_reference_lists_changes_from_diff_and_what_lock_needs() -> None:
    commands = (DOCS / "reference" / "commands.md").read_text()
    release = commands.split("## `olares-pack release`", 1)[1].split("\n## ", 1)[0]
    assert "`--changes-from-diff`" in release
    vram_section = commands.split("## `olares-pack vram`", 1)[1].split("\n## ", 1)[0]
    lock = next(line for line in vram_section.splitlines() if line.startswith("| `--lock`"))
    assert "Hugging Face" in lock and "--gguf" in vram_section
    walkthrough = (DOCS / "getting-started.md").read_text()
    assert "huggingface.co" in walkthrough and "--gguf" in walkthrough


def test_the_details_post_reads_its_version_from_the_body_as_the_docs_say(repo: Path) -> None:
    from olares_pack.market.server import Source

    page = (DOCS / "concepts" / "market-source.md").read_text()
    assert '`{"app_ids": ["<id>", ...],\n  "version": "<Olares version>"}`' in page
    assert "a `?version=` query on the POST's URL is ignored" in page
    app_id = __import__("hashlib").md5(NAME.encode()).hexdigest()[:8]
    with serving(Source(repo, repo / "market-index.json")) as base:
        body = {"app_ids": [app_id], "version": "1.12.5"}
        plain = HTTP.post(f"{base}/api/v1/applications/info", json=body).json()
        queried = HTTP.post(f"{base}/api/v1/applications/info?version=1.12.6", json=body).json()
        unversioned = HTTP.post(f"{base}/api/v1/applications/info", json={"app_ids": [app_id]}).json()
    assert plain == queried and plain["apps"][app_id]["version"].endswith("-legacy")
    assert unversioned["version"] == "1.12.6" and not unversioned["apps"][app_id]["version"].endswith("-legacy")


# ------------------------------------------------------------------------------- no notes the user lacks

NOTES = re.compile(r"shared/|olares-format\.md|llama-server\.md|market-source-api\.md|shared docs")


def test_the_product_cites_no_file_its_users_do_not_have() -> None:
    # tests and measurements too: a contributor reads them on a clone that has no team notes either
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(p for d in ("olares_pack", "templates", "apps", "tests", "measurements") for p in (ROOT / d).rglob("*")
                                   if p.is_file() and p.suffix in (".py", ".j2", ".sh", ".yaml", ".json", ".js", ".txt")
                                   and p != Path(__file__))]
    cited = sorted(p.relative_to(ROOT).as_posix() for p in files if NOTES.search(p.read_text(errors="replace")))
    assert cited == []
