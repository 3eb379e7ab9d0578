"""`check`: the whole pull-request gate of a catalogue, one stage per existing command's core.

- lint: every app manifest rendered for each of its OS lines (lint/runner.py), each finding
  placed on the app.yaml line it comes from (lint/place.py);
- build, offer, bench: what `build --check` holds (catalogue/checks.py: the ledger, the packages
  against their records, today's renderer against the newest records, published versions left
  alone, market-offer.json, the bench records), split by the file each issue is about;
- rehearse: for the apps whose manifest (or olares-pack's templates) changed since a git ref, the
  install and the upgrade from every older published version on the local control plane
  (rehearse/gate.py, as `rehearse --from-all` and `release` run it), and where a node can run
  here, the version run on it (installed, started, asked, upgraded from the previous version).

Nothing here re-implements a check: it calls them and places what they say.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olares_pack.catalogue.repo import MANIFEST_FILE, OFFER_FILE, RELEASES_DIR, Repo
from olares_pack.ci.findings import CheckFinding, Report, Stage
from olares_pack.common.errors import InputError

Say = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    changed_since: str | None = None
    skip_rehearsal: str | None = None  # the reason, when the rehearsal is not to run
    kubeconfig: Path | None = None


def run(repo: Repo, options: Options, say: Say = lambda _m: None) -> Report:
    """Every stage, in order; a git ref that does not exist is an InputError before anything runs."""
    changed = changed_apps(repo, options.changed_since) if options.changed_since else None
    stages = [_timed(say, "lint", lambda s: lint_stage(repo, s))]
    stages += _timed_many(say, lambda: catalogue_stages(repo))
    rehearse = Stage("rehearse")
    if changed is None:
        rehearse.skipped = "no --changed-since: nothing to compare with"
    elif not changed:
        rehearse.skipped = f"no app's manifest changed since {options.changed_since}"
    elif options.skip_rehearsal:
        rehearse.skipped = f"--skip-rehearsal: {options.skip_rehearsal}"
    else:
        rehearse = _timed(say, "rehearse", lambda s: rehearse_stage(repo, changed, options.kubeconfig, s, say))
    stages.append(rehearse)
    return Report(stages, options.changed_since, changed or [])


def _timed(say: Say, name: str, fill: Callable[[Stage], None]) -> Stage:
    stage = Stage(name)
    start = time.monotonic()
    fill(stage)
    stage.seconds = time.monotonic() - start
    say(f"{name}: {stage.status} ({stage.checked}; {stage.seconds:.1f} s)")
    return stage


def _timed_many(say: Say, make: Callable[[], list[Stage]]) -> list[Stage]:
    start = time.monotonic()
    stages = make()  # one pass of build --check's core gives the three
    took = time.monotonic() - start
    for s in stages:
        say(f"{s.name}: {s.status} ({s.skipped or s.checked})")
    say(f"build, offer, bench: {took:.1f} s")
    return stages


# ---------------------------------------------------------------- lint


def lint_stage(repo: Repo, stage: Stage) -> None:
    """`lint` of every app manifest, its findings placed on app.yaml lines. An app.yaml that does
    not load is a finding on the line its loader names, not the end of the gate."""
    from olares_pack.charts.source import from_app
    from olares_pack.lint import LintOptions, lint_charts
    from olares_pack.lint.place import place_results

    dirs = repo.app_dirs()
    charts = 0
    for app_dir in dirs:
        manifest = app_dir / MANIFEST_FILE
        try:
            sources = from_app(manifest)
        except InputError as exc:
            stage.findings += _input_findings("lint", "manifest.load", exc, repo, manifest, app_dir.name)
            continue
        charts += len(sources)
        results = place_results(lint_charts(sources, LintOptions()), sources, cwd=Path.cwd())
        allowed = recorded_allowance(repo, app_dir.name, sources[0].app) if sources else None
        for result in results:
            subject = f"{app_dir.name}@{result.label.rsplit('@', 1)[-1]}"
            for f in result.findings:
                where = f"{f.path}: " if f.path else ""
                hint = f" (hint: {f.hint})" if f.hint else ""
                rule = f"{f.rule} (policy)" if f.kind == "policy" else f.rule
                severity, said = f.severity, f"{subject}: {where}{f.message}{hint}"
                if f.rule == ALLOW_VRAM and severity == "error" and allowed is not None and f.message in allowed[1]:
                    # released knowingly over this very verdict: the release's allowance holds
                    severity, said = "warning", f"{said} (allowed: {allowed[0]} was released with `release --allow " \
                                                f"{ALLOW_VRAM}` over this verdict, its changelog says)"
                stage.findings.append(CheckFinding("lint", rule, severity, _rel(repo, f.file), f.line, said, subject))
    stage.checked = f"{len(dirs)} app(s), {charts} chart(s)"


ALLOW_VRAM = "vram.budget"


def recorded_allowance(repo: Repo, name: str, app: Any) -> tuple[str, str] | None:
    """(version, notes) when app.yaml's version is published and its release record's changelog
    says it was released with `--allow vram.budget` (catalogue/releases.py _note_over_budget
    writes that line with the verdict); None otherwise. Read from the release record, not
    app.yaml, so that an edit of app.yaml cannot grant itself the allowance."""
    from olares_pack.catalogue import records

    version = getattr(app, "version", None)
    if version is None or version not in records.versions(repo, name):
        return None
    rec = records.read(repo, name, version)
    notes = next((e.notes or "" for e in rec.changelog if e.version == version), "")
    return (version, notes) if f"`release --allow {ALLOW_VRAM}`" in notes else None


def _input_findings(stage: str, rule: str, exc: InputError, repo: Repo, file: Path, subject: str) -> list[CheckFinding]:
    if exc.problems:
        return [CheckFinding(stage, rule, "error", _rel(repo, Path(p.file)), p.line,
                             f"{p.path}: {p.message}" if p.path else p.message, subject) for p in exc.problems]
    m = re.match(r"^(.+?):(\d+):\s*(.*)$", str(exc), re.S)
    if m and Path(m.group(1)).name == file.name:
        return [CheckFinding(stage, rule, "error", _rel(repo, file), int(m.group(2)), m.group(3), subject)]
    return [CheckFinding(stage, rule, "error", _rel(repo, file), None, str(exc), subject)]


def _rel(repo: Repo, file: str | Path) -> str:
    if not str(file):
        return ""
    path = Path(file)
    return repo.rel(path if path.is_absolute() else Path.cwd() / path)


# ---------------------------------------------------------------- build --check, the offer, bench records


def catalogue_stages(repo: Repo) -> list[Stage]:
    """`build --check`'s issues (catalogue/checks.py check), each in the stage of the file it is
    about: market-offer.json, a bench record, or the rest (ledger, packages, records, app.yaml)."""
    from olares_pack.bench.records import check as bench_records
    from olares_pack.catalogue import checks

    build, offer, bench = Stage("build"), Stage("offer"), Stage("bench")
    with repo.open(write=False):
        try:
            recs = checks.load_records(repo)
        except InputError as exc:  # a release record that does not load: a finding where it is, the gate goes on
            build.findings += _input_findings("build", "check.build", exc, repo, repo.index_file, "")
            build.checked = "the release records"
            offer.skipped = "the release records do not load"
            issues = [checks.Issue(repo.rel(p), why) for p, why in bench_records(repo.apps_dir)]
            recs = {}
        else:
            try:
                issues = checks.check(repo, recs)
                build.checked = (f"{len(recs)} published app(s), {sum(len(v) for v in recs.values())} version(s), "
                                 "the ledger and packages")
            except InputError as exc:  # an app.yaml that does not load (lint places it): offer and bench still run
                build.findings += [f for p in exc.problems for f in _input_findings(
                    "build", "check.build", InputError("", [p]), repo, Path(p.file), "")] or \
                    _input_findings("build", "check.build", exc, repo, repo.index_file, "")
                build.checked = "the ledger and packages, stopped at an app.yaml that does not load"
                issues = checks.offer_issues(repo, recs)
                issues += [checks.Issue(repo.rel(p), why) for p, why in bench_records(repo.apps_dir)]
    offer.checked = OFFER_FILE if not offer.skipped else ""
    bench.checked = f"{len(_bench_files(repo))} bench record file(s)"
    for issue in issues:
        path = Path(issue.file)
        if issue.file == OFFER_FILE:
            offer.findings.append(CheckFinding("offer", "check.offer", "error", issue.file, None, issue.message))
        elif len(path.parts) >= 3 and path.parts[-2] == "bench" and path.suffix == ".json":
            bench.findings.append(CheckFinding("bench", "check.bench-record", "error", issue.file,
                                               _json_line(repo.root / path, issue.message)
                                               or _first_changed_line(repo, path), issue.message))
        else:
            line = _edited_line(repo.root / path, issue.message) if path.name == MANIFEST_FILE else None
            rule = "check.published-edit" if path.name == MANIFEST_FILE else "check.build"
            build.findings.append(CheckFinding("build", rule, "error", issue.file, line, issue.message))
    return [build, offer, bench]


def _edited_line(path: Path, message: str) -> int | None:
    """The line of the first field a published-edit issue names (`differs from it at server.ctx_size`),
    else of `version:`."""
    m = re.search(r"differs from it at ([A-Za-z0-9_.\[\]-]+)", message)
    if m:
        loc = tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", m.group(1)) if p)
        if (line := _line_of(path, loc)) is not None:
            return line
    return _line_of(path, ("version",))


def _first_changed_line(repo: Repo, rel: Path) -> int | None:
    """The first line of a file that differs from its committed text (git diff's first hunk), for
    an append-only file edited in place; None without git or a difference."""
    diff = _git(repo.root, "diff", "--unified=0", "HEAD", "--", rel.as_posix())
    m = re.search(r"^@@ -\d+(?:,\d+)? \+(\d+)", diff.stdout, re.M) if diff.returncode == 0 else None
    return int(m.group(1)) if m else None


def _bench_files(repo: Repo) -> list[Path]:
    return sorted(repo.apps_dir.glob("*/bench/*.json")) if repo.apps_dir.is_dir() else []


def _json_line(path: Path, message: str) -> int | None:
    """The line of the field a bench record problem names (`records.1.prev: ...`), else of the
    line a parse error names; None when it names neither."""
    m = re.match(r"^line (\d+)\b|^.*?:(\d+):", message)
    if m:
        return int(m.group(1) or m.group(2))
    m = re.match(r"^(records(?:\.\d+(?:\.\w+)?)?|app|version)[: ]", message)
    if m is None:
        return None
    loc = tuple(int(p) if p.isdigit() else p for p in m.group(1).split("."))
    return _line_of(path, loc)


def _line_of(path: Path, loc: tuple[Any, ...]) -> int | None:
    from olares_pack.common.yamlsrc import compose_lines, node_line

    try:
        root = compose_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return node_line(root, loc) if root is not None else None


# ---------------------------------------------------------------- what changed


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise InputError(f"--changed-since needs git: {exc}") from exc


def changed_apps(repo: Repo, ref: str) -> list[str]:
    """The apps whose app.yaml or release records changed between the merge base of REF and HEAD
    and the working tree (untracked files included); every app when olares-pack's own templates
    (a templates/ folder of the repository) changed."""
    top = _git(repo.root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise InputError(f"--changed-since {ref}: {repo.root} is not in a git repository")
    root = Path(top.stdout.strip())
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise InputError(f"--changed-since {ref}: no such commit, branch or tag in {root} (a shallow clone may lack it: "
                         "fetch it first, e.g. git fetch origin main --depth=1)")
    base = _git(root, "merge-base", ref, "HEAD")
    since = base.stdout.strip() if base.returncode == 0 and base.stdout.strip() else ref
    listed = _git(root, "diff", "--name-only", "--no-renames", since, "--").stdout.split("\n")
    listed += _git(root, "ls-files", "--others", "--exclude-standard").stdout.split("\n")
    try:
        apps_rel = repo.apps_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return []
    names = {p.name for p in repo.app_dirs()}
    changed: set[str] = set()
    for path in filter(None, listed):
        parts = path.split("/")
        if parts[0] == "templates" and path.endswith((".j2", ".sh")):
            return sorted(names)
        head = apps_rel.split("/")
        if parts[:len(head)] == head and len(parts) > len(head) + 1:
            name, rest = parts[len(head)], parts[len(head) + 1:]
            if rest == [MANIFEST_FILE] or rest[0] == RELEASES_DIR:
                changed.add(name)
    return sorted(changed & names)


# ---------------------------------------------------------------- the rehearsal


@dataclass(frozen=True)
class _Chart:
    target: str
    data: bytes


@dataclass(frozen=True)
class _Candidate:
    """What the release gate reads of a release plan (rehearse/gate.py check): the app and its
    packaged charts, here app.yaml's version (published or a draft)."""

    app: Any
    packages: list[_Chart]


def rehearse_stage(repo: Repo, names: list[str], kubeconfig: Path | None, stage: Stage, say: Say) -> None:
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import checks, records, releases
    from olares_pack.rehearse import gate

    done = []
    for name in names:
        manifest = repo.apps_dir / name / MANIFEST_FILE
        line = _line_of(manifest, ("version",))
        try:
            app = load_app(manifest)
            if app.version in records.versions(repo, name):
                rec = records.read(repo, name, app.version)
                charts = [_Chart(t, checks.published_bytes(repo, rec, t)[0]) for t in sorted(rec.charts)]
            else:
                charts = [_Chart(b.target, b.data) for b in releases.unpublished_packages(app, repo)]
        except InputError as exc:
            stage.findings += _input_findings("rehearse", "manifest.load", exc, repo, manifest, name)
            continue
        say(f"rehearse: {name} {app.version}: the install, and the upgrade from every older published version")
        try:
            # run=True: where a node can run here, the version is also run on it, as `release` does
            outcome = gate.check(repo, _Candidate(app, charts), (), kubeconfig, run=True)  # type: ignore[arg-type]
        except gate.NoControlPlane as exc:
            stage.findings.append(CheckFinding(
                "rehearse", "check.no-control-plane", "error", _rel(repo, manifest), line,
                f"{name} {app.version}: {exc}; build it with `{gate.BUILD_HINT}` (or `python -m olares_pack.cluster.tools`), "
                "or give --skip-rehearsal REASON", name))
            continue
        done.append(f"{name} {app.version}")
        for o in outcome.outcomes:
            if o.severity in ("error", "warning"):
                stage.findings.append(CheckFinding("rehearse", o.rule, o.severity, _rel(repo, manifest), line,  # type: ignore[arg-type]
                                                   f"{name} {app.version}: {o.message}", name))
    stage.checked = ", ".join(done) or "nothing rehearsed"
