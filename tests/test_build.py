"""`build` renders only what changed, and what it keeps is what a full build would write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import tree_digest

from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.render import generation

NAME, VLLM = "llamacppqwen36mtpone", "vllmqwen36turbo27bone"


def build(repo: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(out), *extra]) == ExitCode.OK
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith(str(out))]


def test_only_the_touched_app_is_rendered_again(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert len(build(repo, out, capsys)) == 3
    first = tree_digest(out)
    assert build(repo, out, capsys) == []  # nothing changed: nothing parsed or rendered
    capsys.readouterr()
    app_yaml = repo / "apps" / VLLM / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("88,000-token context", "88K context"))
    assert build(repo, out, capsys) == [str(out / "current" / VLLM)]
    incremental = tree_digest(out)
    assert incremental != first
    full = tmp_path / "full"
    assert len(build(repo, full, capsys, "--full")) == 3
    assert tree_digest(full) == incremental  # the kept charts are what a full build writes


def test_warnings_of_unchanged_apps_are_counted_and_edits_always_said(repo: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(out)]) == ExitCode.OK
    # per app: the engine, llm-init and its chown step unpinned (and the legacy proxy for the
    # llama.cpp app, which has both targets); the model unverified; a branch revision
    assert capsys.readouterr().err.count("is not pinned by digest") == 7
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(out)]) == ExitCode.OK
    err = capsys.readouterr().err
    assert "is not pinned by digest" not in err and "11 warning(s) on unchanged apps not repeated" in err
    # an edit to a published version is said on every build, kept or not
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("  ctx_size: 262144", "  ctx_size: 131072"))
    for _ in range(2):
        assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(out)]) == ExitCode.OK
        assert "server.ctx_size (262144 → 131072)" in capsys.readouterr().err


def test_a_deleted_chart_folder_or_another_olares_pack_renders_again(repo: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    build(repo, out, capsys)
    shutil.rmtree(out / "legacy" / NAME)
    assert build(repo, out, capsys) == [str(out / "current" / NAME), str(out / "legacy" / NAME)]
    monkeypatch.setattr(generation, "fingerprint", lambda: "another olares-pack")
    assert len(build(repo, out, capsys)) == 3
