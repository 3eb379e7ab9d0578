"""Published versions never move: template generations, one writer at a time, crash safety,
unshipped versions, derived (`auto`) fields."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, tree_digest

from olares_pack.apps.load import load_app
from olares_pack.catalogue import checks as catalogue
from olares_pack.catalogue import journal, records, releases
from olares_pack.catalogue import ledger as index
from olares_pack.catalogue.lock import RepoLock
from olares_pack.catalogue.repo import Repo
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.render import app as render
from olares_pack.render import generation

NAME = "llamacppqwen36mtpone"
CLI = [sys.executable, "-c", "from olares_pack.cli import main; main()"]


def run_cli(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=300)


def strays(repo: Path) -> list[str]:
    """Anything a write could leave behind: temporary files, staging, a journal."""
    out = [p.relative_to(repo).as_posix() for p in repo.rglob("*")
           if ".tmp" in p.name or p.name.startswith(".") and p.name != ".olares-pack"]
    state = repo / journal.STATE_DIR
    out += [p.name for p in state.iterdir() if p.name not in ("lock", "cache")] if state.exists() else []
    return out


# ---------------------------------------------------------------- template generations


@pytest.fixture
def change_a_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """Call it to run olares-pack with one template changed (a line added to the Secret, which both
    the shared and the per-user form render)."""
    def apply() -> None:
        root = tmp_path / "templates"
        shutil.copytree(generation.templates_root(), root, ignore=shutil.ignore_patterns("__pycache__"))
        svc = root / "secret.yaml.j2"
        svc.write_text(svc.read_text().replace("apiVersion: v1\n", "# a template fix\napiVersion: v1\n", 1))
        monkeypatch.setattr(generation, "templates_root", lambda: root)
        render._environment.cache_clear()
        generation.fingerprint.cache_clear()

    yield apply
    render._environment.cache_clear()
    generation.fingerprint.cache_clear()


def release_patch(repo: Path) -> str:
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "a patch",
                 "--date", "2026-06-01"]) == ExitCode.OK
    return load_app(repo / "apps" / NAME).version


def test_a_template_change_without_a_new_generation_fails_the_check(
        repo: Path, change_a_template: Callable[[], None], capsys: pytest.CaptureFixture[str]) -> None:
    version = release_patch(repo)  # the newest version is of this generation
    change_a_template()
    capsys.readouterr()
    assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.FINDINGS
    err = capsys.readouterr().err
    assert f"generation {generation.GENERATION} no longer renders llamacppqwen36mtpone {version} (current)" in err
    assert "Raise GENERATION in olares_pack/render/generation.py" in err
    assert "market-index.json" not in err and "changed since" not in err  # the ledger and packages are fine


def test_a_template_change_with_a_new_generation_keeps_every_published_version(
        repo: Path, change_a_template: Callable[[], None], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    apps = str(repo / "apps")
    old_generation = generation.GENERATION
    release_patch(repo)
    change_a_template()
    monkeypatch.setattr(generation, "GENERATION", old_generation + 1)
    generation.fingerprint.cache_clear()
    before = tree_digest(repo)
    old_offers = (repo / "market-offer.json").read_text()
    old = index.load(repo / "market-index.json")["apps"][NAME]["versions"]
    assert main(["build", "--apps-dir", apps, "--check"]) == ExitCode.OK
    assert main(["build", "--apps-dir", apps, "--out", str(repo.parent / "out")]) == ExitCode.OK
    assert tree_digest(repo) == before  # no package, record or ledger entry moved
    assert "# a template fix" in (repo.parent / "out" / "current" / NAME / "templates" / "secret.yaml").read_text()
    version = release_patch(repo)
    assert records.read(Repo.at(repo), NAME, version).generation == old_generation + 1
    after = tree_digest(repo)
    unchanged = {k for k in before if k not in (f"apps/{NAME}/app.yaml", "market-index.json", "market-offer.json")}
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}
    offers = json.loads((repo / "market-offer.json").read_text())["charts"]
    assert {k for k in offers if k.startswith("packages/") and f"-{version}" in k} and all(
        k in offers for k in json.loads(old_offers)["charts"])  # the new charts' offers added, none dropped
    assert index.load(repo / "market-index.json")["apps"][NAME]["versions"][:-1] == old
    assert main(["build", "--apps-dir", apps, "--check"]) == ExitCode.OK


# ---------------------------------------------------------------- one writer at a time


def _app_copy(repo: Path, name: str) -> None:
    d = repo / "apps" / name
    d.mkdir()
    text = (repo / "apps" / NAME / "app.yaml").read_text().replace(f"name: {NAME}", f"name: {name}")
    (d / "app.yaml").write_text(text)


def _start(repo: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, *args], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_eight_concurrent_releases_of_distinct_apps(repo: Path) -> None:
    names = [f"concurrent{i}" for i in range(8)]
    for n in names:
        _app_copy(repo, n)
    procs = [_start(repo, "release", n, "--bump", "patch", "--summary", f"{n} first", "--date", "2026-06-01")
             for n in names]
    results = [(p.wait(300), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    assert [code for code, _ in results] == [0] * 8, results
    ledger = json.loads((repo / "market-index.json").read_text())
    assert sorted(ledger["apps"]) == sorted([NAME, "vllmqwen36turbo27bone", *names])
    for n in names:
        assert [v["version"] for v in ledger["apps"][n]["versions"]] == ["1.0.16"]
    assert run_cli(repo, "build", "--check").returncode == ExitCode.OK
    assert strays(repo) == []


def test_eight_concurrent_releases_of_one_app(repo: Path) -> None:
    procs = [_start(repo, "release", NAME, "--bump", "patch", "--summary", f"run {i}", "--date", "2026-06-01")
             for i in range(8)]
    assert [p.wait(300) for p in procs] == [0] * 8
    versions = [v["version"] for v in json.loads((repo / "market-index.json").read_text())["apps"][NAME]["versions"]]
    assert versions == ["1.0.5", "1.0.7", "1.0.8", "1.0.9", *(f"1.0.{i}" for i in range(10, 24))]
    assert load_app(repo / "apps" / NAME).version == "1.0.23"
    assert run_cli(repo, "build", "--check").returncode == ExitCode.OK


def test_a_held_repository_is_named_after_the_timeout(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = Repo.at(repo)
    with RepoLock(r.state_dir / "lock", purpose="release"):
        before = tree_digest(repo)
        assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "x",
                     "--lock-timeout", "0.3"]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert "another release is in progress since" in err and f"(pid {os.getpid()} on" in err and "waited 0.3 s" in err
    assert tree_digest(repo) == before


# ---------------------------------------------------------------- crashes


def test_a_crash_at_every_write_step_is_completed_or_rolled_back(repo: Path) -> None:
    """Kill the release (SIGKILL, no clean-up) at write step 1, 2, ... until it runs through;
    after each crash the next command leaves a whole repository: the release entirely done or
    entirely absent, `build --check` passing and no temporary file anywhere."""
    pristine = repo.parent / "pristine"
    shutil.copytree(repo, pristine)
    outcomes = []
    step = 1
    while True:
        shutil.rmtree(repo)
        shutil.copytree(pristine, repo)
        proc = run_cli(repo, "release", NAME, "--bump", "patch", "--summary", "crash", "--date", "2026-06-01",
                       env={"OLARES_PACK_FAULT": str(step)})
        if proc.returncode == ExitCode.OK:
            break
        assert proc.returncode == -9, proc.stderr  # killed at the fault point, not an error
        assert main(["build", "--apps-dir", str(repo / "apps"), "--check"]) == ExitCode.OK, step  # recovers first
        assert strays(repo) == [], step
        released = (repo / "apps" / NAME / "releases" / "1.0.16.json").exists()
        ledger = index.load(repo / "market-index.json")
        assert released == (ledger["apps"][NAME]["versions"][-1]["version"] == "1.0.16"), step
        assert released == ("version: 1.0.16" in (repo / "apps" / NAME / "app.yaml").read_text()), step
        outcomes.append(released)
        step += 1
    # 6 files staged (with market-offer.json), the journal written and renamed, 6 renames, the journal removed
    assert len(outcomes) == 15
    assert outcomes == [False] * 7 + [True] * 8


# ---------------------------------------------------------------- unshipped versions


def test_an_unshipped_version_is_never_packaged_listed_or_published(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_yaml = repo / "apps" / NAME / "app.yaml"
    text = app_yaml.read_text().replace("version: 1.0.15\n", "version: 1.0.16\n", 1)
    text += ("  - version: 1.0.16\n    date: 2026-06-01\n    shipped: false\n    in_history: true\n"
             "    summary: tried a 196K context\n")
    app_yaml.write_text(text)
    before = tree_digest(repo)
    assert main(["release", NAME, "--apps-dir", str(repo / "apps")]) == ExitCode.INPUT
    assert "says shipped: false" in capsys.readouterr().err
    assert main(["package", NAME, "--apps-dir", str(repo / "apps"), "--out", str(repo.parent / "o")]) == ExitCode.INPUT
    assert "never packaged" in capsys.readouterr().err
    assert tree_digest(repo) == before and not (repo.parent / "o").exists()
    # the next shipped version carries it, and its owner asked for it in the version history
    assert main(["release", NAME, "--apps-dir", str(repo / "apps"), "--version", "1.0.17", "--summary", "196K ships",
                 "--date", "2026-06-02"]) == ExitCode.OK
    rec = records.read(Repo.at(repo), NAME, "1.0.17")
    assert [(e.version, e.shipped) for e in rec.changelog] == [("1.0.16", False), ("1.0.17", True)]
    ledger = index.load(repo / "market-index.json")
    assert [v["version"] for v in ledger["apps"][NAME]["versions"]][-1] == "1.0.17"
    history = index.version_history(ledger, NAME)
    assert [h["version"] for h in history][:3] == ["1.0.17", "1.0.16", "1.0.15"]
    assert "never shipped" in history[1]["upgradeDescription"] and history[1]["versionName"] == ""
    assert "1.0.6" not in [h["version"] for h in history]  # its owner did not ask


# ---------------------------------------------------------------- derived fields


def test_a_new_estimate_for_an_auto_field_is_not_an_edit() -> None:
    repo = Repo.at(ROOT)
    rec = records.read(repo, NAME, "1.0.15")
    raw = load_app(ROOT / "apps" / NAME, derive=False)
    raw.resources.gpu_memory_mib = "auto"
    assert releases.edits_since(raw, rec)  # the record does not say it was derived: an edit
    derived = rec.model_copy(update={"derived": {"resources.gpu_memory_mib": "auto"}})
    assert releases.edits_since(raw, derived) == []
    assert catalogue.unpublished_edits(repo, catalogue.load_records(repo)) == []
