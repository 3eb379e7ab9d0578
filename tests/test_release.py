"""Releases: reproducible packages, the ledger, bumps recorded as changelog entries, immutability."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from conftest import APPS, ROOT, published_app, tree_digest

from olares_pack import __version__
from olares_pack import olares as targets
from olares_pack.apps.load import load_app
from olares_pack.catalogue import checks as catalogue
from olares_pack.catalogue import ledger as index
from olares_pack.catalogue import records
from olares_pack.catalogue.repo import Repo
from olares_pack.charts import helm, package
from olares_pack.cli import main
from olares_pack.common import fsio
from olares_pack.common.errors import ExitCode
from olares_pack.render import app as render
from olares_pack.render import generation

NAME = "llamacppqwen36mtpone"


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
            assert (chart.name, chart.version) == (NAME, "1.0.15")
        assert all(n.startswith(f"{NAME}/") for n in helm.archive_member_names(data))
    assert digests[0] == digests[1]
    # and the gzip header carries neither a timestamp nor a file name
    assert data[4:8] == b"\0\0\0\0" and not data[3] & 0x08


def test_every_published_package_is_what_its_record_says() -> None:
    """The committed bytes, their content digest and the ledger agree with each record; a record
    of the current template generation is also rendered again into its content."""
    ledger = json.loads((ROOT / "market-index.json").read_text())
    repo = Repo.at(ROOT)
    checked = 0
    for name in records.published_apps(repo):
        for version in records.versions(repo, name):
            rec = records.read(repo, name, version)
            app = records.app_of(rec)
            for target, ch in rec.charts.items():
                data = (ROOT / ch.file).read_bytes()
                assert package.sha256(data) == ch.sha256 == index.recorded_sha(ledger, name, version, target)
                assert package.content_digest(data) == ch.content_sha256
                if rec.generation == generation.GENERATION:
                    assert package.sha256(package.build_tar(name, render.render(app, targets.get(target)))) == ch.content_sha256
                checked += 1
    assert checked == 25  # 10 llama.cpp versions x 2 targets + 5 vLLM versions (current only)


def release_patch(repo: Path, summary: str = "a patch") -> str:
    """Publish the next patch of the example app in a copy of the catalogue (current generation)."""
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", summary,
                 "--date", "2026-06-01"]) == ExitCode.OK
    return load_app(repo / "apps" / NAME).version


def test_a_release_is_reproduced_exactly_from_its_record(repo: Path) -> None:
    version = release_patch(repo)
    r = Repo.at(repo)
    rec = records.read(r, NAME, version)
    assert rec.generation == generation.GENERATION
    for target, ch in rec.charts.items():
        assert catalogue.reproduce(r, rec, target) == (repo / ch.file).read_bytes()


def test_the_committed_ledger_is_the_projection_of_the_records() -> None:
    repo = Repo.at(ROOT)
    assert catalogue.ledger_text(catalogue.load_records(repo)) == (ROOT / "market-index.json").read_text()


def test_records_hold_what_each_version_adds_not_the_whole_changelog() -> None:
    repo = Repo.at(ROOT)
    adds = {v: [e.version for e in records.read(repo, NAME, v).changelog] for v in records.versions(repo, NAME)}
    assert adds == {"1.0.5": ["1.0.5"], "1.0.7": ["1.0.6", "1.0.7"], "1.0.8": ["1.0.8"], "1.0.9": ["1.0.9"],
                    "1.0.10": ["1.0.10"], "1.0.11": ["1.0.11"], "1.0.12": ["1.0.12"], "1.0.13": ["1.0.13"],
                    "1.0.14": ["1.0.14"], "1.0.15": ["1.0.15"]}
    assert not records.read(repo, NAME, "1.0.7").changelog[0].shipped


def test_version_history_of_the_example_app() -> None:
    ledger = index.load(ROOT / "market-index.json")
    history = index.version_history(ledger, NAME)
    assert [h["version"] for h in history] == ["1.0.15", "1.0.14", "1.0.13", "1.0.12", "1.0.11", "1.0.10", "1.0.9", "1.0.8",
                                               "1.0.7", "1.0.5"]  # 1.0.6 never shipped
    assert "86.7 % draft acceptance" in history[6]["upgradeDescription"]
    assert "exit 139" in history[8]["upgradeDescription"]
    # the legacy line under the versions its charts carry: 1.0.15-legacy ... 1.0.10-legacy, then the
    # releases before each target had a version of its own
    legacy = index.version_history(ledger, NAME, target="legacy")
    assert [h["version"] for h in legacy] == ["1.0.15-legacy", "1.0.14-legacy", "1.0.13-legacy", "1.0.12-legacy", "1.0.11-legacy",
                                              "1.0.10-legacy", "1.0.9", "1.0.8", "1.0.7", "1.0.5"]
    assert history[-1]["mergedAt"] == "2026-05-09T00:00:00Z"


def test_release_from_a_clean_checkout(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    old_ledger = json.loads((repo / "market-index.json").read_text())
    code = main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch",
                 "--summary", "ctx 196608 for more headroom", "--change", "engine-args:--ctx-size 262144 → 196608",
                 "--notes", "A safety margin.", "--date", "2026-06-01"])
    assert code == 0, capsys.readouterr().err
    app_yaml = (repo / "apps" / NAME / "app.yaml").read_text()
    assert "version: 1.0.16\n" in app_yaml
    assert "# flag registry: olares_pack/engines/data/llamacpp-history.yaml" in app_yaml  # comments kept
    assert "    digest: null\n" in app_yaml  # and the user's spelling
    assert app_yaml.index("title:") < app_yaml.index("engine:") < app_yaml.index("changelog:")  # order kept
    assert "  - version: 1.0.16\n    date: 2026-06-01\n    summary: ctx 196608 for more headroom\n" in app_yaml
    after = tree_digest(repo)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert changed == sorted([
        "apps/llamacppqwen36mtpone/app.yaml",
        "apps/llamacppqwen36mtpone/releases/1.0.16.json",
        "market-index.json",
        "market-offer.json",  # the new charts' offers
        "packages/current/llamacppqwen36mtpone-1.0.16.tgz",
        "packages/legacy/llamacppqwen36mtpone-1.0.16-legacy.tgz",  # its own version
    ])
    new_ledger = json.loads((repo / "market-index.json").read_text())
    new_versions = new_ledger["apps"][NAME]["versions"]
    assert new_versions[:-1] == old_ledger["apps"][NAME]["versions"]  # only the new version added
    assert new_versions[-1]["version"] == "1.0.16" and new_versions[-1]["published"] == "2026-06-01"
    rec = records.read(Repo.at(repo), NAME, "1.0.16")
    assert (rec.generation, rec.tool) == (generation.GENERATION, f"olares-pack {__version__}")
    assert [e.version for e in rec.changelog] == ["1.0.16"] and rec.manifest["server"]["ctx_size"] == 262144
    with helm.load(repo / "packages" / "current" / f"{NAME}-1.0.16.tgz") as chart:
        assert chart.version == "1.0.16"
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.OK


def test_dry_run_changes_nothing(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "minor", "--summary", "x",
                 "--date", "2026-06-01", "--dry-run"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "+version: 1.1.0" in out and "would write packages/current/llamacppqwen36mtpone-1.1.0.tgz" in out
    assert tree_digest(repo) == before


def test_republishing_with_a_changed_argument_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("  ctx_size: 262144", "  ctx_size: 131072"))
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.15"]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert "llamacppqwen36mtpone 1.0.15 is published (apps/llamacppqwen36mtpone/releases/1.0.15.json)" in err
    assert "server.ctx_size (262144 → 131072)" in err
    assert tree_digest(repo) == before
    # and CI notices the edit without a new version, naming the field
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert "apps/llamacppqwen36mtpone/app.yaml:" in err and "server.ctx_size (262144 → 131072)" in err


def test_a_version_that_does_not_increase_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.4", "--summary", "x",
                 "--date", "2026-06-01"]) == ExitCode.INPUT
    assert "does not increase on the latest published version 1.0.15" in capsys.readouterr().err
    assert tree_digest(repo) == before


def test_republishing_identical_bytes_is_a_no_op(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps")]) == ExitCode.OK
    assert "already published" in capsys.readouterr().err
    assert tree_digest(repo) == before


def test_release_needs_a_changelog_entry(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch"]) == ExitCode.INPUT
    assert "needs a changelog entry" in capsys.readouterr().err


def test_lint_errors_stop_a_release(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("    type: draft-mtp", "    type: mtp"))  # renamed on ad27757
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "x",
                 "--date", "2026-06-01"]) == ExitCode.FINDINGS
    assert "engine.value" in capsys.readouterr().out
    assert tree_digest(repo) == before


def at_105s_configuration(repo: Path) -> Path:
    """The example app's next version set back to 1.0.5's configuration (its model, MTP draft n 5)
    on the current engine, ad27757, also a build from before llama.cpp PR #23907."""
    app_yaml = repo / "apps" / NAME / "app.yaml"
    text = app_yaml.read_text()
    for old, new in (("repo: unsloth/Qwen3.6-27B-MTP-GGUF", "repo: havenoammo/Qwen3.6-27B-MTP-UD-GGUF"),
                     ("file: Qwen3.6-27B-UD-Q3_K_XL.gguf", "file: Qwen3.6-27B-MTP-UD-Q3_K_XL.gguf"),
                     ("    draft_n_max: 3", "    draft_n_max: 5"), ("gpu_memory_mib: 23552", "gpu_memory_mib: auto"),
                     # the copy 1.0.5 and 1.0.7 kept of that file, linked in (else: model.moved)
                     ("adopt: [hf-files/unsloth/Qwen3.6-27B-MTP-GGUF/main]", "adopt: [hf-files/havenoammo/Qwen3.6-27B-MTP-UD-GGUF/main]")):
        assert old in text
        text = text.replace(old, new)
    app_yaml.write_text(text)
    return app_yaml


def test_a_release_over_the_gpu_memory_check_needs_allow_and_says_so(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1.0.5's configuration is `tight` (vram/verdict.py): lint reports vram.budget as a policy
    error, release refuses it and writes nothing; with `--allow vram.budget` it ships, and the
    version's changelog entry (app.yaml, the release record, the market's ledger) says it was
    released over the check, with the verdict's figures and reasons."""
    app_yaml = at_105s_configuration(repo)
    assert main(["lint", str(app_yaml.parent), "--target", "current", "--format", "json"]) == ExitCode.FINDINGS
    (f,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"] == "vram.budget"]
    assert (f["severity"], f["class"]) == ("error", "policy") and f["message"].startswith("tight: ")
    assert "the same estimate as 1.0.5, which ran out of GPU memory on devices" in f["message"]
    before = tree_digest(repo)
    args = ["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "1.0.5 again",
            "--date", "2026-06-01"]
    assert main(args) == ExitCode.FINDINGS
    out, err = capsys.readouterr()
    assert "vram.budget" in out and "nothing was released" in err
    assert tree_digest(repo) == before
    assert main([*args, "--allow", "vram.budget"]) == ExitCode.OK
    capsys.readouterr()
    version = load_app(repo / "apps" / NAME).version
    (entry,) = [e for e in records.read(Repo.at(repo), NAME, version).changelog if e.version == version]
    # the line lint reported, word for word
    assert entry.notes.strip() == f"Released over the GPU memory check (`release --allow vram.budget`): {f['message']}."
    assert "Released over the GPU memory check" in (repo / "market-index.json").read_text()
    # a configuration that fits ships without --allow, and its entry says nothing of the kind
    text = app_yaml.read_text()
    app_yaml.write_text(text.replace("    draft_n_max: 5", "    draft_n_max: 3").replace(
        "repo: havenoammo/Qwen3.6-27B-MTP-UD-GGUF", "repo: unsloth/Qwen3.6-27B-MTP-GGUF").replace(
        "file: Qwen3.6-27B-MTP-UD-Q3_K_XL.gguf", "file: Qwen3.6-27B-UD-Q3_K_XL.gguf").replace(
        "adopt: [hf-files/havenoammo/Qwen3.6-27B-MTP-UD-GGUF/main]", "adopt: [hf-files/unsloth/Qwen3.6-27B-MTP-GGUF/main]"))
    assert main([*args[:-4], "--summary", "back to 1.0.9's shape", "--date", "2026-06-02"]) == ExitCode.OK
    latest = load_app(repo / "apps" / NAME)
    assert "Released over" not in (latest.changelog_entry.notes or "")


def test_check_names_stale_files_and_build_restores_them(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = str(repo / "apps")
    version = release_patch(repo)
    assert main(["build", "--apps-dir", apps, "--check"]) == ExitCode.OK
    pkg = repo / "packages" / "legacy" / f"{NAME}-{version}-legacy.tgz"
    published = pkg.read_bytes()
    pkg.unlink()
    ledger = repo / "market-index.json"
    good_ledger = ledger.read_text()
    ledger.write_text(good_ledger.replace('"72.14', '"72.15'))
    capsys.readouterr()
    assert main(["build", "--apps-dir", apps, "--check"]) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert f"packages/legacy/llamacppqwen36mtpone-{version}-legacy.tgz: missing" in err
    assert "market-index.json: differs from the release records" in err
    # build reproduces the package from its record (same generation) and derives the ledger, byte for byte
    assert main(["build", "--apps-dir", apps, "--out", str(repo / "build")]) == ExitCode.OK
    assert main(["build", "--apps-dir", apps, "--check"]) == ExitCode.OK
    assert pkg.read_bytes() == published and ledger.read_text() == good_ledger


def test_a_missing_package_of_an_older_generation_is_restored_from_git_not_rebuilt(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "packages" / "legacy" / f"{NAME}-1.0.7.tgz").unlink()
    before = tree_digest(repo)
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(repo / "build")]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert "llamacppqwen36mtpone-1.0.7.tgz: llamacppqwen36mtpone 1.0.7 was rendered by generation 1" in err
    assert "restore it from git" in err and tree_digest(repo) == before


def test_a_changed_published_package_is_named_with_both_digests(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = repo / "packages" / "current" / f"{NAME}-1.0.8.tgz"
    files = render.render(published_app(NAME, "1.0.8"), targets.CURRENT)
    files["values.yaml"] += "# edited by hand\n"
    pkg.write_bytes(package.build_archive(NAME, files))
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert "packages/current/llamacppqwen36mtpone-1.0.8.tgz: changed since publication" in err
    assert package.sha256(pkg.read_bytes()) in err and index.recorded_sha(index.load(ROOT / "market-index.json"), NAME, "1.0.8", "current") in err
    before = tree_digest(repo)
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(repo / "build")]) == ExitCode.INPUT  # never overwritten
    assert "a published package was changed" in capsys.readouterr().err
    assert tree_digest(repo) == before


def test_a_recompressed_package_is_the_same_content_with_other_bytes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What another zlib (zlib-ng) does to the same tar: other bytes, same content digest."""
    pkg = repo / "packages" / "current" / f"{NAME}-1.0.9.tgz"
    original = pkg.read_bytes()
    pkg.write_bytes(gzip.compress(gzip.decompress(original), compresslevel=1, mtime=0))
    assert pkg.read_bytes() != original and package.content_digest(pkg.read_bytes()) == package.content_digest(original)
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert "llamacppqwen36mtpone-1.0.9.tgz: same content, different bytes" in err
    assert "changed since publication" not in err


def test_package_hands_back_the_committed_bytes_or_reproduces_them(repo: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["package", NAME, "--version", "1.0.5", "--apps-dir", str(repo / "apps"), "--out", str(out)]) == ExitCode.OK
    assert capsys.readouterr().out.count("(committed)") == 2
    for target in ("current", "legacy"):
        assert (out / target / f"{NAME}-1.0.5.tgz").read_bytes() == (ROOT / "packages" / target / f"{NAME}-1.0.5.tgz").read_bytes()
    version = release_patch(repo)
    committed = (repo / "packages" / "current" / f"{NAME}-{version}.tgz").read_bytes()
    (repo / "packages" / "current" / f"{NAME}-{version}.tgz").unlink()
    capsys.readouterr()
    assert main(["package", NAME, "--version", version, "--apps-dir", str(repo / "apps"), "--out", str(out)]) == ExitCode.OK
    said = capsys.readouterr().out
    assert f"current/llamacppqwen36mtpone-{version}.tgz" in said and "(reproduced)" in said
    assert (out / "current" / f"{NAME}-{version}.tgz").read_bytes() == committed


def test_a_missing_package_of_another_generation_is_not_guessed(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "packages" / "current" / f"{NAME}-1.0.5.tgz").unlink()
    assert main(["package", NAME, "--version", "1.0.5", "--apps-dir", str(repo / "apps"), "--out", str(repo / "o")]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert f"was rendered by generation 1, this olares-pack renders generation {generation.GENERATION}" in err
    assert not (repo / "o").exists()


def test_edit_opens_the_editor_on_the_entry(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/^summary: .*/summary: written in the editor/" "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.setenv("VISUAL", str(editor))
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--date", "2026-06-02", "--edit"]) == ExitCode.OK
    app = load_app(repo / "apps" / NAME / "app.yaml")
    assert app.version == "1.0.16" and app.changelog_entry is not None
    assert app.changelog_entry.summary == "written in the editor"


def test_changes_from_diff(repo: Path) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("  ctx_size: 262144", "  ctx_size: 196608"))
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "more headroom",
                 "--changes-from-diff", "--date", "2026-06-01"]) == ExitCode.OK
    entry = load_app(app_yaml).changelog_entry
    assert entry is not None
    assert [(c.kind, c.text) for c in entry.changes] == [("engine-args", "--ctx-size 262144 → 196608")]


def test_a_record_edited_by_hand_is_caught_against_its_package(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Editing a record and deriving the ledger again does not make a package say something else."""
    path = repo / "apps" / NAME / "releases" / "1.0.8.json"
    doc = json.loads(path.read_text())
    i = doc["engine"]["argv"].index("--ctx-size")
    doc["engine"]["argv"][i + 1] = "131072"
    doc["charts"]["legacy"]["olares"] = ">=1.12.0-0"
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(repo / "build")]) == ExitCode.OK  # the ledger follows
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert 'llamacppqwen36mtpone-1.0.8.tgz: argv is [' in err and '"262144"' in err and '"131072"' in err
    assert 'packages/legacy/llamacppqwen36mtpone-1.0.8.tgz: olares is ">=1.12.3-0,<1.12.6" in the package, ">=1.12.0-0"' in err


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT, tarfile.PAX_FORMAT], ids=["gnu", "ustar", "pax"])
def test_chart_archives_read_the_same_as_tarfile_reads_them(fmt: int) -> None:
    """The header reader (used for every chart served or checked) agrees with tarfile, with long
    names (GNU), name prefixes (ustar) and pax headers (tarfile reads those)."""
    names = ["c/Chart.yaml", "c/templates/a.yaml", "c/" + "p" * 120 + "/x.yaml"]
    if fmt != tarfile.USTAR_FORMAT:
        names.append("c/" + "d" * 150 + "/long.yaml")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=fmt) as tar:
        for n in names:
            data = f"file {n}\n".encode()
            info = tarfile.TarInfo(n)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    folder, files, binary = package.read_archive_split(raw.getvalue())
    assert folder == "c" and binary == {}
    assert files == {n.split("/", 1)[1]: f"file {n}\n" for n in names}


# ---------------------------------------------------------------- the release gate (issue #42)


def _release(repo: Path, *extra: str) -> int:
    return main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "s",
                 "--date", "2026-06-01", *extra])


def test_without_a_control_plane_release_refuses_and_writes_nothing(repo: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OLARES_PACK_REHEARSE", raising=False)
    monkeypatch.setenv("OLARES_PACK_CACHE", str(tmp_path / "no-tools-here"))
    before = tree_digest(repo)
    assert _release(repo) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert "no control plane here" in err and "`make control-plane`" in err and "--skip-rehearsal REASON" in err
    assert tree_digest(repo) == before
    assert not (tmp_path / "no-tools-here").exists()  # nothing was built either
    # the command it names exists
    assert "\ncontrol-plane:" in (ROOT / "Makefile").read_text()


def test_skip_rehearsal_publishes_and_the_reason_is_shown_by_history_and_diff(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _release(repo, "--skip-rehearsal", "why") == ExitCode.OK, capsys.readouterr().err
    assert "not rehearsed (--skip-rehearsal: why)" in capsys.readouterr().err
    rec = records.read(Repo.at(repo), NAME, "1.0.16")
    assert rec.rehearsal is not None and rec.rehearsal.skipped == "why" and rec.rehearsal.steps == []
    assert rec.unbenched is None  # the engine did not change
    assert main(["diff", NAME, "1.0.15", "1.0.16", "--apps-dir", str(repo / "apps"), "--format", "json"]) in (0, 1)
    assert "1.0.16: rehearsal skipped: why" in json.loads(capsys.readouterr().out)["performance"]
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--format", "json"]) == 0
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.OK
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "s",
                 "--skip-rehearsal", " "]) == ExitCode.INPUT  # a reason, not a blank


def test_a_changed_engine_without_a_measurement_is_unbenched_and_a_gap_in_the_history(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("ctx_size: 262144", "ctx_size: 196608"))
    assert _release(repo, "--skip-rehearsal", "test") == ExitCode.OK
    err = capsys.readouterr().err
    assert "1.0.16: unbenched: engine arguments differ from 1.0.15" in err
    rec = records.read(Repo.at(repo), NAME, "1.0.16")
    assert rec.unbenched and rec.unbenched.startswith("unbenched: engine arguments differ from 1.0.15")
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (one,) = [d for d in doc["devices"] if d["device"].startswith("Olares One")]
    row = one["versions"][-1]
    assert row["version"] == "1.0.16" and row["tokens_per_s"] is None and row["note"].startswith("unbenched")
    assert "rehearsal skipped: test" in row["note"]
    assert main(["history", NAME, "--apps-dir", str(repo / "apps"), "--format", "markdown"]) == 0
    assert "| 1.0.16 | --ctx-size 262144 → 196608 | — | — |" in capsys.readouterr().out


def test_an_app_without_any_bench_record_shows_its_unbenched_version(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "vllmqwen36turbo27bone"
    app_yaml = repo / "apps" / name / "app.yaml"
    assert main(["history", name, "--apps-dir", str(repo / "apps")]) == ExitCode.INPUT  # nothing to show yet
    app_yaml.write_text(app_yaml.read_text().replace("max_model_len: 88000", "max_model_len: 64000"))
    assert main(["release", name, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "s",
                 "--skip-rehearsal", "test"]) == ExitCode.OK
    capsys.readouterr()
    assert main(["history", name, "--apps-dir", str(repo / "apps"), "--format", "json"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["devices"]
    assert [(r["version"], r["tokens_per_s"]) for r in table["versions"]] == [("2.5.12", None)]
    assert table["versions"][0]["note"].startswith("unbenched: engine arguments differ from 2.5.11")


def test_a_version_that_reads_the_model_elsewhere_than_older_versions_kept_it_is_refused(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1.0.11-1.0.14 read llm-init's cache while 1.0.9/1.0.10 had kept the same file flat in the
    store: their users downloaded 15 GB again. Without model.adopt the release says so, per version."""
    app_yaml = repo / "apps" / NAME / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("  adopt: [hf-files/unsloth/Qwen3.6-27B-MTP-GGUF/main]\n", ""))
    before = tree_digest(repo)
    args = ["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "no adopt",
            "--date", "2026-06-01", "--skip-rehearsal", "tested here"]
    assert main(args) == ExitCode.FINDINGS
    said = capsys.readouterr()
    err = said.out + said.err  # the findings are data (stdout), the refusal a message (stderr)
    moved = [ln for ln in err.splitlines() if "model.moved" in ln or "kept the model in" in ln]
    assert any("1.0.9 kept the model in <store>/hf-files/unsloth/Qwen3.6-27B-MTP-GGUF/main" in ln for ln in moved), err
    assert any("1.0.10 kept the model" in ln for ln in moved)
    # 1.0.5-1.0.8 used other files (another repository, another quant): downloading this one is no regression
    assert not any(f"{v} kept the model" in err for v in ("1.0.5", "1.0.7", "1.0.8"))
    assert tree_digest(repo) == before
    assert main([*args, "--allow", "model.moved"]) == ExitCode.OK  # a maintainer who decides so, warned
    assert "model.moved" in capsys.readouterr().err
