"""`render`, `build`, `release`, `package`: the repository's commands."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

import click

from olares_pack.apps.changelog import CHANGE_KINDS, next_version
from olares_pack.catalogue.repo import MANIFEST_FILE, Repo
from olares_pack.cli.apps import online_check
from olares_pack.cli.args import app_folder, parse_change, parse_date, resolve_app
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option, charts_out_option, lock_timeout_option, target_option
from olares_pack.cli.report import show_warnings
from olares_pack.common.errors import ExitCode


@cli.command("render")
@click.argument("app_ref", metavar="APP")
@target_option
@charts_out_option("Output folder; the chart goes to OUT/<target>/<name>/.")
@apps_dir_option
def render_cmd(app_ref: str, target_names: tuple[str, ...], out: Path, apps_dir: Path) -> int:
    """Render one APP (a name under --apps-dir, a folder, or an app.yaml) into chart folders."""
    from olares_pack.common import console, fsio
    from olares_pack.render import app as render
    app = resolve_app(app_ref, apps_dir)
    show_warnings(app)
    # Under the catalogue's lock when there is one: `build` sweeps what interrupted writes left
    # in the same output folders.
    profiles = [render.declared_target(app, name) for name in target_names or app.targets]  # refused before anything is written
    repo = Repo.of_apps(apps_dir)
    with repo.open(write=True, purpose="render") if apps_dir.is_dir() else contextlib.nullcontext():
        for t in profiles:
            dest = out / t.name / app.name
            fsio.write_tree(render.render(app, t), dest)
            console.out.print(str(dest))
    return ExitCode.OK


@cli.command("build")
@apps_dir_option
@target_option
@charts_out_option("Output folder; each chart goes to OUT/<target>/<name>/.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 when market-index.json differs from the release records, a package "
              "differs from its record, the current template generation no longer reproduces an app's newest "
              "version, or an app.yaml changed a published version.")
@click.option("--full", is_flag=True, help="Render and verify everything, not only what changed since the last build.")
@lock_timeout_option
def build_cmd(apps_dir: Path, target_names: tuple[str, ...], out: Path, check: bool, full: bool, lock_timeout: float) -> int:
    """Render every app under --apps-dir for each of its targets into OUT, and bring packages/ and
    market-index.json up to date with the release records (apps/<name>/releases/<version>.json).
    Only apps whose inputs changed since the last build are rendered again."""
    from olares_pack.catalogue import build
    from olares_pack.catalogue import checks as catalogue
    from olares_pack.catalogue.journal import Transaction
    from olares_pack.common import console

    repo = Repo.of_apps(apps_dir)
    if check:
        with repo.open(write=False, timeout=lock_timeout):
            recs = catalogue.load_records(repo)
            issues = catalogue.check(repo, recs)
        for issue in issues:
            console.error(str(issue))
        if issues:
            return ExitCode.FINDINGS
        n = sum(len(v) for v in recs.values())
        console.info(f"up to date: {len(recs)} published app(s), {n} version(s), {repo.rel(repo.index_file)} and packages")
        return ExitCode.OK
    with repo.open(write=True, timeout=lock_timeout, purpose="build"):
        writes, stamp = build.sync_repository(repo, full=full)
        txn = Transaction(repo.root)
        for path, data in writes.items():
            txn.write(path, data)
        for path in txn.commit():
            console.out.print(repo.rel(path), markup=False)
        if stamp is not None:
            build.remember_consistent(repo, build.repository_stamp(repo) if writes else stamp)
        result = build.render_apps(repo, out, list(target_names) or None, full=full)
    for w in result.warnings:
        console.warn(w)
    for path in result.written:
        console.out.print(str(path), markup=False)
    console.info(f"rendered {len(result.written)} chart(s) of {result.apps} app(s) into {out}"
                 + (f" ({result.kept} unchanged)" if result.kept else "")
                 + (f"; {result.repeated} warning(s) on unchanged apps not repeated (--full shows them)"
                    if result.repeated else ""))
    return ExitCode.OK


@cli.command("release")
@click.argument("app_ref", metavar="APP")
@click.option("--bump", type=click.Choice(["patch", "minor", "major"]), help="Bump the latest version.")
@click.option("--version", "version", metavar="X.Y.Z", help="Release exactly this version.")
@click.option("--summary", help="One line: what this version changes.")
@click.option("--change", "changes", multiple=True, metavar="KIND:TEXT",
              help=f"A structured change (kinds: {', '.join(CHANGE_KINDS)}). Repeatable.")
@click.option("--notes", default="", help="Free markdown notes (benchmarks, caveats).")
@click.option("--date", "date_text", metavar="YYYY-MM-DD", help="Publication date (default: today).")
@click.option("--changes-from-diff", is_flag=True,
              help="Pre-fill the changes from `olares-pack diff` between the latest published version and app.yaml.")
@click.option("--edit", is_flag=True, help="Write the changelog entry in $EDITOR.")
@click.option("--dry-run", is_flag=True, help="Show what would change and write nothing.")
@click.option("--force", is_flag=True, help="Allow a version that does not increase.")
@click.option("--online", is_flag=True, help="Also check with the registry and Hugging Face that the pinned digest "
              "and commit still resolve and that the image tag still names the digest.")
@click.option("--allow", "allow", multiple=True, metavar="RULE",
              help="Release despite errors of this olares-pack policy rule (e.g. vram.budget); they are shown as "
              "warnings. Installer rules cannot be allowed. Repeatable.")
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Rehearse the install and upgrades on this cluster (default: the control plane built here by "
              "`make control-plane`).")
@click.option("--skip-rehearsal", "skip_rehearsal", metavar="REASON",
              help="Publish without rehearsing the install and upgrades; REASON is kept in the release record and "
              "shown by `history` and `diff`. The one way past the rehearsal.")
@lock_timeout_option
@apps_dir_option
def release_cmd(app_ref: str, bump: str | None, version: str | None, summary: str | None, changes: tuple[str, ...],
                notes: str, date_text: str | None, changes_from_diff: bool, edit: bool, dry_run: bool, force: bool,
                online: bool, allow: tuple[str, ...], kubeconfig: Path | None, skip_rehearsal: str | None,
                lock_timeout: float, apps_dir: Path) -> int:
    """Publish a version of APP: bump app.yaml (comments and order kept), add its changelog entry,
    render, lint (errors stop it), package reproducibly, write its release record under
    apps/<name>/releases/ and its entry in market-index.json, all in one transaction. Before that,
    the install and the upgrade from every older published version are rehearsed on a real API
    server; without one (`make control-plane` builds it) the release is refused unless
    --skip-rehearsal REASON says why not. Where a node can run here (root, `make node`), the new
    version is also run on it (`rehearse --run`: installed, its engine started and asked, upgraded
    from the previous version); a step that fails stops the release."""
    from olares_pack.catalogue import releases
    from olares_pack.common import console
    from olares_pack.lint.findings import allowable
    from olares_pack.rehearse import gate
    for rule in allow:
        if not gate.owns(rule):
            allowable(rule)
    skip_rehearsal = _skip_reason(skip_rehearsal)
    app_dir = app_folder(app_ref, apps_dir)
    repo = Repo.of_apps(apps_dir)
    parsed_changes = [parse_change(c) for c in changes]
    date = parse_date(date_text) if date_text else None
    entry = None
    if edit:  # before taking the lock: an editor may stay open for minutes
        app = resolve_app(app_ref, apps_dir)
        entry = edit_entry(app.name, version or (next_version(app.version, bump) if bump else app.version),
                            date or dt.date.today(), summary or "", parsed_changes, notes)
    with repo.open(write=True, timeout=lock_timeout):
        if changes_from_diff:
            from olares_pack.diff import changes_since_latest

            parsed_changes += changes_since_latest(repo, app_dir)
            from olares_pack.bench.describe import release_note_for  # the measured delta (issue #37)

            if measured := release_note_for(repo, app_dir, version, bump):
                notes = f"{notes.rstrip()}\n\n{measured}" if notes.strip() else measured
        plan = releases.plan_release(repo, app_dir, releases.VersionAsked(version, bump, force),
                                     releases.EntryAsked(summary, tuple(parsed_changes), notes, date, entry),
                                     allow=tuple(sorted(set(allow))))
        errors = [f for f in plan.findings if f.severity == "error"]
        if errors:
            from olares_pack.lint.output import print_findings

            print_findings(errors, sorted({f.chart for f in errors}))
            console.error(f"{plan.app.name} {plan.app.version}: lint found {len(errors)} error(s); nothing was released")
            return ExitCode.FINDINGS
        for f in plan.findings:
            if f.severity == "warning":
                console.warn(f"{f.chart}: {f.rule}: {f.message}")
        if plan.already_published:
            console.info(f"{plan.app.name} {plan.app.version} is already published and app.yaml still says the same; nothing to do")
            return ExitCode.OK
        rehearsal = _rehearsed(repo, plan, allow, kubeconfig, skip_rehearsal)
        if rehearsal is None:
            return ExitCode.FINDINGS
        assert plan.record is not None
        plan.record = plan.record.model_copy(update={"rehearsal": rehearsal})
        if plan.record.unbenched:
            console.warn(f"{plan.app.name} {plan.app.version}: {plan.record.unbenched}; the release record says so")
        if online:
            checked = online_check(plan.app)
            for rule, severity, path, message in checked:
                (console.error if severity == "error" else console.warn)(f"{plan.app.name}: {rule}: {path}: {message}")
            if any(c[1] == "error" for c in checked):
                console.error(f"{plan.app.name} {plan.app.version}: what app.yaml pins is gone upstream; nothing was released")
                return ExitCode.FINDINGS
        if dry_run:
            console.out.print(plan.diff(), markup=False, highlight=False)
            for p in plan.packages:
                console.out.print(f"would write {repo.rel(p.path)} (sha256 {p.sha256})", markup=False)
            console.out.print(f"would write {repo.rel(plan.record_path)}, {repo.rel(plan.manifest_path)}, "
                              f"{repo.rel(repo.index_file)}", markup=False)
            return ExitCode.OK
        for path in releases.write_release(plan, repo):
            console.out.print(repo.rel(path), markup=False)
    console.info(f"released {plan.app.name} {plan.app.version} (template generation {plan.record.generation})")
    return ExitCode.OK


def _skip_reason(given: str | None) -> str | None:
    """--skip-rehearsal's reason; OLARES_PACK_REHEARSE=0 (the test suite's switch, older than the
    option) counts as a reason of its own and is recorded as such."""
    import os

    if given is not None:
        if not given.strip():
            raise click.BadParameter("say why the rehearsal is skipped: the reason is kept in the release record",
                                     param_hint="--skip-rehearsal")
        return given.strip()
    if os.environ.get("OLARES_PACK_REHEARSE") == "0":
        return "OLARES_PACK_REHEARSE=0 in the environment"
    return None


def _rehearsed(repo: Repo, plan: object, allow: tuple[str, ...], kubeconfig: Path | None,
               skip: str | None) -> object | None:
    """The release record's rehearsal (olares_pack/rehearse/gate.py): what ran, or why nothing did;
    None when the release must stop (no API server, a refusal, a broken policy rule)."""
    from olares_pack.common import console
    from olares_pack.rehearse import gate

    name = f"{plan.app.name} {plan.app.version}"  # type: ignore[attr-defined]
    if skip is not None:
        console.warn(f"{name}: install and upgrades not rehearsed (--skip-rehearsal: {skip}); the release record says so")
        return gate.skipped(skip)
    try:
        done = gate.check(repo, plan, allow, kubeconfig, run=True)  # type: ignore[arg-type]
    except gate.NoControlPlane as exc:
        console.error(f"{name}: {exc}. Nothing was released: build it with `{gate.BUILD_HINT}`, rehearse on a cluster "
                      "with --kubeconfig, or publish without it with --skip-rehearsal REASON")
        return None
    for o in done.outcomes:
        {"error": console.error, "warning": console.warn}.get(o.severity, console.info)(f"{o.rule}: {o.message}")
    errors = [o for o in done.outcomes if o.severity == "error"]
    if errors:
        console.error(f"{name}: the rehearsal found {len(errors)} error(s); nothing was released")
        return None
    return done.record


@cli.command("package")
@click.argument("app_ref", metavar="APP")
@click.option("--version", "version", metavar="X.Y.Z", help="A published version (default: app.yaml's).")
@target_option
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("build/packages"), show_default=True,
              help="Folder for <name>-<version>.tgz (one subfolder per target).")
@apps_dir_option
def package_cmd(app_ref: str, version: str | None, target_names: tuple[str, ...], out: Path, apps_dir: Path) -> int:
    """Package APP reproducibly. A published version (--version, or app.yaml's when it is
    published) is handed back as its committed bytes, or reproduced exactly from its record when
    the template generation still matches; the command says which."""
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import checks as catalogue
    from olares_pack.catalogue import records
    from olares_pack.charts import package
    from olares_pack.common import console, fsio
    repo = Repo.of_apps(apps_dir)
    app_dir = app_folder(app_ref, apps_dir)
    with repo.open(write=False):
        name = app_dir.name
        if version is None:
            raw = load_app(app_dir / MANIFEST_FILE, derive=False)
            name, version = raw.name, raw.version
            if version not in records.versions(repo, name):
                return _package_unpublished(app_dir, target_names, out, repo)
        rec = records.read(repo, name, version)
        for target in sorted(rec.charts):
            if target_names and target not in target_names:
                continue
            data, how = catalogue.published_bytes(repo, rec, target)
            # The record's own file name: the legacy line's chart is `<name>-V-legacy.tgz` (what its
            # Chart.yaml says and the source serves), older records keep the names they were served under.
            dest = out / target / Path(rec.charts[target].file).name
            fsio.write_bytes_atomic(dest, data)
            console.out.print(f"{dest}  sha256:{package.sha256(data)}  ({how})", markup=False)
    return ExitCode.OK


def _package_unpublished(app_dir: Path, target_names: tuple[str, ...], out: Path, repo: Repo) -> int:
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import releases
    from olares_pack.common import console, fsio
    app = load_app(app_dir / MANIFEST_FILE)
    show_warnings(app)
    for b in releases.unpublished_packages(app, repo):
        if target_names and b.target not in target_names:
            continue
        dest = out / b.target / b.path.name
        fsio.write_bytes_atomic(dest, b.data)
        console.out.print(f"{dest}  sha256:{b.sha256}  (not published)", markup=False)
    return ExitCode.OK


def edit_entry(name: str, version: str, date: dt.date, summary: str, changes: list[tuple[str, str]], notes: str) -> object:
    """Open $EDITOR on a changelog entry; return it as a round-trip YAML mapping."""
    from olares_pack.apps import changelog

    text = click.edit(changelog.edit_template(name, version, date, summary, changes, notes), extension=".yaml")
    if text is None:
        raise click.Abort()
    return changelog.read_edited(text)
