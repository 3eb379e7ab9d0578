"""`olares-pack check`, the pull-request gate: the bundled catalogue passes; one planted fault of
each kind (a lint error, a stale package, a broken bench record, a refused upgrade) fails it with
a workflow annotation on the line the fault is at; bad input is exit 2."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from tests.conftest import ROOT

LLAMA = "llamacppqwen36mtpone"
VLLM = "vllmqwen36turbo27bone"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def make_catalogue(root: Path) -> Path:
    """A catalogue repository of the bundled apps, committed on main (what `init --ci github` is for)."""
    root.mkdir(parents=True)
    shutil.copytree(ROOT / "apps", root / "apps")
    shutil.copytree(ROOT / "packages", root / "packages")
    for f in ("market-index.json", "market-offer.json"):
        shutil.copy(ROOT / f, root / f)
    (root / ".gitignore").write_text(".olares-pack/\nbuild/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "catalogue")
    return root


@pytest.fixture(scope="module")
def base_catalogue(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_catalogue(tmp_path_factory.mktemp("check") / "base")


@pytest.fixture
def catalogue(base_catalogue: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "catalogue"
    subprocess.run(["git", "clone", "-q", str(base_catalogue), str(dest)], check=True)
    return dest


def check(root: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.chdir(root)  # as a workflow runs it: in the repository, apps/ by default
    return main(["check", *args])


def annotations(out: str) -> list[dict[str, str]]:
    found = []
    for line in out.splitlines():
        m = re.match(r"^::(error|warning|notice) (.*?)::(.*)$", line)
        if m:
            props = dict(p.split("=", 1) for p in m.group(2).split(","))
            found.append({"level": m.group(1), **props, "message": m.group(3)})
    return found


def line_of(path: Path, needle: str, nth: int = 1) -> int:
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    return hits[nth - 1]


def test_the_bundled_catalogue_passes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(ROOT, "--format", "json", monkeypatch=monkeypatch) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True
    assert {s["stage"]: s["status"] for s in doc["stages"]} == {
        "lint": "passed", "build": "passed", "offer": "passed", "bench": "passed", "rehearse": "skipped"}
    # warnings are shown, placed on app.yaml, and do not fail the gate
    assert doc["findings"] and {f["severity"] for f in doc["findings"]} <= {"warning", "info"}
    assert all(f["file"].startswith("apps/") and f["file"].endswith("/app.yaml") and f["line"]
               for f in doc["findings"] if f["stage"] == "lint")


def draft(root: Path, app: str, version: str, edit: tuple[str, str]) -> Path:
    """app.yaml's next version with one argument changed and its changelog entry, as a pull request has it."""
    path = root / "apps" / app / "app.yaml"
    text = path.read_text()
    old_version = re.search(r"^version: (\S+)$", text, re.M).group(1)  # type: ignore[union-attr]
    assert edit[0] in text
    text = text.replace(f"\nversion: {old_version}\n", f"\nversion: {version}\n").replace(*edit)
    text += (f"  - version: {version}\n    date: 2026-12-05\n    summary: a changed argument\n"
             f"    changes:\n      - {{kind: engine-args, text: \"{edit[1].strip()}\"}}\n")
    path.write_text(text)
    return path


def plant_lint_error(root: Path) -> tuple[str, int, str]:
    """A flag llama-server does not have, in the extra arguments of the app's next version."""
    path = draft(root, LLAMA, "1.0.16", ("\n  threads: 16\n", "\n  threads: 16\n  extra_args: [--no-such-flag]\n"))
    return f"apps/{LLAMA}/app.yaml", line_of(path, "--no-such-flag"), "engine.flag"


def plant_stale_package(root: Path) -> tuple[str, int | None, str]:
    """A published package rewritten (the same chart compressed again: other bytes)."""
    import gzip

    rel = f"packages/current/{VLLM}-2.5.11.tgz"
    path = root / rel
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), compresslevel=1, mtime=0))
    return rel, None, "check.build"


def plant_broken_bench_record(root: Path) -> tuple[str, int, str]:
    """A figure of an older record edited: the next record's chain link no longer matches."""
    rel = f"apps/{LLAMA}/bench/1.0.9.json"
    path = root / rel
    path.write_text(path.read_text().replace('"tokens_per_s": 74.9\n', '"tokens_per_s": 79.9\n', 1))
    return rel, line_of(path, '"prev"'), "check.bench-record"


@pytest.mark.parametrize("plant", [plant_lint_error, plant_stale_package, plant_broken_bench_record])
def test_a_planted_fault_fails_with_an_annotation_on_its_line(plant, catalogue: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    file, line, rule = plant(catalogue)
    assert check(catalogue, "--format", "github", monkeypatch=monkeypatch) == ExitCode.FINDINGS
    out, err = capsys.readouterr()
    errors = [a for a in annotations(out) if a["level"] == "error"]
    assert errors, out
    # every error is about the planted fault, and one is on its line
    assert {(a["file"], a["title"]) for a in errors} == {(file, rule)}, errors
    assert (str(line) if line else None) in {a.get("line") for a in errors}, errors
    assert "check failed" in err


def test_a_bad_ref_is_a_usage_error(catalogue: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert check(catalogue, "--changed-since", "no-such-branch", monkeypatch=monkeypatch) == ExitCode.INPUT
    out, err = capsys.readouterr()
    assert "--changed-since no-such-branch: no such commit, branch or tag" in err and out == ""


def test_a_refused_upgrade_fails_on_the_version_line(control_plane, catalogue: Path,  # noqa: ANN001
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The draft's engine Deployment gets another selector (an immutable field): the upgrade from
    each published version is refused by the API server."""
    from olares_pack.render import app as render

    path = draft(catalogue, VLLM, "2.5.12", ("max_num_seqs: 1\n", "max_num_seqs: 2\n"))
    real = render.render

    def new_selector(app, target):  # noqa: ANN001, ANN202 - the draft only: published versions render as they did
        files = dict(real(app, target))
        if app.version == "2.5.12":
            files = {p: t.replace("{{- if $keep }}", "{{- if false }}").replace(
                "      app.kubernetes.io/component: engine\n      {{- end }}",
                "      app.kubernetes.io/component: engine\n      app.kubernetes.io/part-of: variant\n      {{- end }}")
                .replace("        app.kubernetes.io/component: engine\n        app: ",
                         "        app.kubernetes.io/component: engine\n        app.kubernetes.io/part-of: variant\n        app: ")
                if p.startswith("templates/") else t for p, t in files.items()}
        return files

    monkeypatch.setattr(render, "render", new_selector)
    assert check(catalogue, "--changed-since", "main", "--format", "github", monkeypatch=monkeypatch) == ExitCode.FINDINGS
    out, err = capsys.readouterr()
    errors = [a for a in annotations(out) if a["level"] == "error"]
    want = (f"apps/{VLLM}/app.yaml", str(line_of(path, "version: 2.5.12")), "rehearse.immutable-field")
    assert errors and {(a["file"], a["line"], a["title"]) for a in errors} == {want}, errors
    assert any("spec.selector" in a["message"] and "2.5.7" in a["message"] for a in errors)
    assert f"rehearse: failed: {VLLM} 2.5.12" in err


def test_check_reads_the_allowance_a_release_recorded(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    """Issue 52.2: after `release --allow vram.budget`, every later check failed on the version
    released knowingly over the GPU memory check; the release's recorded allowance now holds, for
    that version and that verdict only."""
    from tests.conftest import APPS
    from tests.test_release import at_105s_configuration

    root = tmp_path / "repo"
    shutil.copytree(APPS, root / "apps")
    shutil.copytree(ROOT / "packages", root / "packages")
    for f in ("market-index.json", "market-offer.json"):
        shutil.copy(ROOT / f, root / f)
    at_105s_configuration(root)
    assert check(root, "--format", "json", monkeypatch=monkeypatch) == ExitCode.FINDINGS  # a draft over budget
    capsys.readouterr()
    assert main(["release", LLAMA, "--apps-dir", str(root / "apps"), "--bump", "patch", "--summary", "1.0.5 again",
                 "--date", "2026-06-01", "--allow", "vram.budget", "--skip-rehearsal", "no control plane in this test"]) \
        == ExitCode.OK, capsys.readouterr().err
    capsys.readouterr()
    assert check(root, "--format", "json", monkeypatch=monkeypatch) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    budget = [f for f in doc["findings"] if f["rule"].startswith("vram.budget") and f["message"].count("tight: ")]
    assert budget and all(f["severity"] == "warning" and "released with `release --allow vram.budget` over this "
                          "verdict" in f["message"] for f in budget)
    # a later draft (a version not released) has no allowance of its own
    path = root / "apps" / LLAMA / "app.yaml"
    text = path.read_text()
    version = re.search(r"^version: (\S+)$", text, re.M).group(1)  # type: ignore[union-attr]
    path.write_text(text.replace(f"\nversion: {version}\n", "\nversion: 9.9.9\n"))
    assert check(root, "--format", "json", monkeypatch=monkeypatch) == ExitCode.FINDINGS


def test_a_yaml_error_is_annotated_on_its_line_and_offer_and_bench_still_run(
        catalogue: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = catalogue / "apps" / LLAMA / "app.yaml"
    line = line_of(path, "  alias: ")
    lines = path.read_text().splitlines(True)
    lines[line - 1] = "  alias: [unclosed\n"  # the parser notices on the next line; the fault is here
    path.write_text("".join(lines))
    assert check(catalogue, "--format", "json", monkeypatch=monkeypatch) == ExitCode.FINDINGS
    doc = json.loads(capsys.readouterr().out)
    loads = [f for f in doc["findings"] if f["rule"] in ("manifest.load", "check.build")]
    assert loads and {f["line"] for f in loads} == {line}
    status = {s["stage"]: s["status"] for s in doc["stages"]}
    assert status["offer"] == "passed" and status["bench"] == "passed"
    assert "release records do not load" not in json.dumps(doc)


def test_an_edited_published_field_and_an_edited_bench_record_are_annotated_where_edited(
        catalogue: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = catalogue / "apps" / LLAMA / "app.yaml"
    path.write_text(path.read_text().replace("  ctx_size: 262144\n", "  ctx_size: 131072\n", 1))
    bench = catalogue / "apps" / LLAMA / "bench" / "1.0.13.json"
    bench.write_text(bench.read_text().replace('"note": "', '"note": "EDITED ', 1))
    assert check(catalogue, "--format", "github", monkeypatch=monkeypatch) == ExitCode.FINDINGS
    errors = {a["title"]: a for a in annotations(capsys.readouterr().out) if a["level"] == "error"}
    assert errors["check.published-edit"]["line"] == str(line_of(path, "  ctx_size: 131072"))
    assert errors["check.bench-record"]["line"] == str(line_of(bench, '"note": "EDITED '))
