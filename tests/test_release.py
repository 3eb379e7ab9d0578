"""Releases: reproducible packages, the ledger, bumps recorded as changelog entries, immutability."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import APPS, ROOT

from olares_pack import fsio, helm, index, package, releases, render, targets
from olares_pack.cli import main
from olares_pack.manifest import load_app

NAME = "llamacppqwen36mtpone"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh copy of the catalogue: apps, committed packages and the ledger."""
    root = tmp_path / "repo"
    shutil.copytree(APPS, root / "apps")
    shutil.copytree(ROOT / "packages", root / "packages")
    shutil.copy(ROOT / "market-index.json", root / "market-index.json")
    return root


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_packaging_is_byte_reproducible(tmp_path: Path) -> None:
    """Same chart, different folders, mtimes and umask: the same bytes, which Helm loads."""
    files = render.render(load_app(APPS / NAME), targets.CURRENT)
    digests = []
    for i, (umask, mtime) in enumerate(((0o022, 1_000_000_000), (0o077, 1_800_000_000))):
        old = os.umask(umask)
        try:
            folder = tmp_path / f"run{i}" / "nested" / NAME
            fsio.write_tree(files, folder)
        finally:
            os.umask(old)
        for p in folder.rglob("*"):
            os.utime(p, (mtime, mtime))
        data = package.build_archive(NAME, fsio.read_tree(folder))
        digests.append(package.sha256(data))
        with helm.load_bytes(data) as chart:
            assert (chart.name, chart.version) == (NAME, "1.0.9")
        assert all(n.startswith(f"{NAME}/") for n in helm.archive_member_names(data))
    assert digests[0] == digests[1]
    # and the gzip header carries neither a timestamp nor a file name
    assert data[4:8] == b"\0\0\0\0" and not data[3] & 0x08


def test_every_published_version_is_rebuilt_from_the_repository() -> None:
    ledger = json.loads((ROOT / "market-index.json").read_text())
    repo = releases.Repo.at(ROOT)
    checked = 0
    for app_dir in sorted(APPS.iterdir()):
        for version, path in releases.published(app_dir):
            app = releases.load_snapshot(app_dir, version, path)
            for built in releases.build_packages(app, repo):
                assert built.path.read_bytes() == built.data, built.path
                assert index.recorded_sha(ledger, app.name, version, built.target) == built.sha256
                checked += 1
    assert checked == 9  # 4 llama.cpp versions x 2 targets + the vLLM app


def test_the_committed_ledger_is_derived_from_the_repository() -> None:
    state = releases.derive(releases.Repo.at(ROOT))
    assert state.packages == {}
    assert state.index_text == (ROOT / "market-index.json").read_text()


def test_version_history_of_the_example_app() -> None:
    ledger = index.load(ROOT / "market-index.json")
    history = index.version_history(ledger, NAME)
    assert [h["version"] for h in history] == ["1.0.9", "1.0.8", "1.0.7", "1.0.5"]  # 1.0.6 never shipped
    assert "86.7 % draft acceptance" in history[0]["upgradeDescription"]
    assert "exit 139" in history[2]["upgradeDescription"]
    assert history[-1]["mergedAt"] == "2026-05-09T00:00:00Z"


def test_release_from_a_clean_checkout(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    old_ledger = json.loads((repo / "market-index.json").read_text())
    code = main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch",
                 "--summary", "ctx 196608 for more headroom", "--change", "engine-args:--ctx-size 262144 → 196608",
                 "--notes", "A safety margin.", "--date", "2026-06-01"])
    assert code == 0, capsys.readouterr().err
    app_yaml = (repo / "apps" / NAME / "app.yaml").read_text()
    assert "version: 1.0.10\n" in app_yaml
    assert "# flag registry: olares_pack/engines/data/llamacpp-history.yaml" in app_yaml  # comments kept
    assert "    digest: null\n" in app_yaml  # and the user's spelling
    assert app_yaml.index("title:") < app_yaml.index("engine:") < app_yaml.index("changelog:")  # order kept
    assert "  - version: 1.0.10\n    date: 2026-06-01\n    summary: ctx 196608 for more headroom\n" in app_yaml
    after = tree_digest(repo)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert changed == sorted([
        "apps/llamacppqwen36mtpone/app.yaml",
        "apps/llamacppqwen36mtpone/releases/1.0.10.yaml",
        "market-index.json",
        "packages/current/llamacppqwen36mtpone-1.0.10.tgz",
        "packages/legacy/llamacppqwen36mtpone-1.0.10.tgz",
    ])
    new_ledger = json.loads((repo / "market-index.json").read_text())
    new_versions = new_ledger["apps"][NAME]["versions"]
    assert new_versions[:-1] == old_ledger["apps"][NAME]["versions"]  # only the new version added
    assert new_versions[-1]["version"] == "1.0.10" and new_versions[-1]["published"] == "2026-06-01"
    with helm.load(repo / "packages" / "current" / f"{NAME}-1.0.10.tgz") as chart:
        assert chart.version == "1.0.10"
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == 0


def test_dry_run_changes_nothing(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "minor", "--summary", "x",
                 "--date", "2026-06-01", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "+version: 1.1.0" in out and "would write packages/current/llamacppqwen36mtpone-1.1.0.tgz" in out
    assert tree_digest(repo) == before


def test_republishing_with_a_changed_argument_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("  ctx_size: 262144", "  ctx_size: 131072"))
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.9"]) == 2
    err = capsys.readouterr().err
    assert "is published with sha256" in err and "rebuilding it gives" in err
    shas = [w for w in err.split() if len(w.strip(";.")) == 64]
    assert len(shas) == 2 and shas[0] != shas[1]
    assert tree_digest(repo) == before
    # and CI notices the edit without a new version
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == 1
    assert "changed since llamacppqwen36mtpone 1.0.9 was published" in capsys.readouterr().err


def test_a_version_that_does_not_increase_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.4", "--summary", "x",
                 "--date", "2026-06-01"]) == 2
    assert "does not increase on the latest published version 1.0.9" in capsys.readouterr().err
    assert tree_digest(repo) == before


def test_republishing_identical_bytes_is_a_no_op(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps")]) == 0
    assert "already published" in capsys.readouterr().err
    assert tree_digest(repo) == before


def test_release_needs_a_changelog_entry(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch"]) == 2
    assert "needs a changelog entry" in capsys.readouterr().err


def test_lint_errors_stop_a_release(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("    type: draft-mtp", "    type: mtp"))  # renamed on ad27757
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "x",
                 "--date", "2026-06-01"]) == 1
    assert "engine.value" in capsys.readouterr().out
    assert tree_digest(repo) == before


def test_check_names_stale_files(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = str(repo / "apps")
    assert main(["build", "--apps-dir", apps, "--check"]) == 0
    (repo / "packages" / "legacy" / f"{NAME}-1.0.7.tgz").unlink()
    ledger = repo / "market-index.json"
    ledger.write_text(ledger.read_text().replace('"72.14', '"72.15'))
    capsys.readouterr()
    assert main(["build", "--apps-dir", apps, "--check"]) == 1
    err = capsys.readouterr().err
    assert "packages/legacy/llamacppqwen36mtpone-1.0.7.tgz would change" in err
    assert "market-index.json would change" in err
    # build restores both, byte for byte
    assert main(["build", "--apps-dir", apps, "--out", str(repo / "build")]) == 0
    assert main(["build", "--apps-dir", apps, "--check"]) == 0
    assert (repo / "market-index.json").read_text() == (ROOT / "market-index.json").read_text()


def test_a_changed_published_package_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = repo / "packages" / "current" / f"{NAME}-1.0.8.tgz"
    files = render.render(load_app(APPS / NAME / "releases" / "1.0.8.yaml"), targets.CURRENT)
    files["values.yaml"] += "# edited by hand\n"
    pkg.write_bytes(package.build_archive(NAME, files))
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == 2
    err = capsys.readouterr().err
    assert "a published package was changed" in err and package.sha256(pkg.read_bytes()) in err


def test_package_command_rebuilds_a_published_version(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["package", NAME, "--version", "1.0.5", "--apps-dir", str(repo / "apps"), "--out", str(out)]) == 0
    for target in ("current", "legacy"):
        assert (out / target / f"{NAME}-1.0.5.tgz").read_bytes() == (ROOT / "packages" / target / f"{NAME}-1.0.5.tgz").read_bytes()


def test_edit_opens_the_editor_on_the_entry(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/^summary: .*/summary: written in the editor/" "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.setenv("VISUAL", str(editor))
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--date", "2026-06-02", "--edit"]) == 0
    app = load_app(repo / "apps" / NAME / "app.yaml")
    assert app.version == "1.0.10" and app.changelog_entry is not None
    assert app.changelog_entry.summary == "written in the editor"


def test_changes_from_diff(repo: Path) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("  ctx_size: 262144", "  ctx_size: 196608"))
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "more headroom",
                 "--changes-from-diff", "--date", "2026-06-01"]) == 0
    entry = load_app(app_yaml).changelog_entry
    assert entry is not None
    assert [(c.kind, c.text) for c in entry.changes] == [("engine-args", "--ctx-size 262144 → 196608")]
