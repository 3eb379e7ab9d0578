"""The `olares-pack` command: parse arguments, call the core, print, map errors to exit codes."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from olares_pack import __version__
from olares_pack import olares as targets

# Only what every command's --help needs is imported here: each command imports what it uses,
# so `olares-pack --help` does not load pydantic, Jinja, Helm or the Kubernetes schemas.
from olares_pack.apps.changelog import CHANGE_KINDS
from olares_pack.catalogue.repo import DEFAULT_LOCK_TIMEOUT, MANIFEST_FILE, Repo
from olares_pack.common.errors import ExitCode, InputError, OlaresPackError

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App
    from olares_pack.apps.new_llamacpp import NewPlan
    from olares_pack.charts.source import ChartSource
    from olares_pack.diff import DiffResult
    from olares_pack.lint.runner import ChartResult
    from olares_pack.vram.estimate import Estimate

DEFAULT_APPS = Path("apps")
DEFAULT_OUT = Path("build/charts")

apps_dir_option = click.option(
    "--apps-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_APPS,
    show_default=True,
    help="Folder holding one <name>/app.yaml per app.",
)
lock_timeout_option = click.option(
    "--lock-timeout", type=float, default=DEFAULT_LOCK_TIMEOUT, show_default=True, metavar="SECONDS",
    help="How long to wait while another olares-pack command holds the repository.")
target_option = click.option(
    "--target",
    "target_names",
    type=click.Choice(sorted(targets.TARGETS)),
    multiple=True,
    help="Olares target: current (1.12.6+, manifest 0.12.0/v3) or legacy (1.12.3-1.12.5, manifest "
    "0.10.0/v2 shared, 0.10.0/v1 per-user). Repeatable. Default: the targets the app declares.",
)


def resolve_app(ref: str, apps_dir: Path) -> App:
    """An app by name (looked up in the apps folder), by folder, or by app.yaml path."""
    from olares_pack.apps.load import load_app
    path = Path(ref)
    if path.exists():
        return load_app(path)
    candidate = apps_dir / ref / MANIFEST_FILE
    if candidate.exists():
        return load_app(candidate)
    raise InputError(f"{ref}: no such app (looked for {path} and {candidate})")


def show_warnings(app: App) -> None:
    from olares_pack.common import console
    for w in app.warnings():
        console.warn(w)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="olares-pack")
@click.option("--debug", is_flag=True, help="Show the full trace of an internal error.")
def cli(debug: bool) -> None:
    """Turn app manifests for GPU LLM servers into Olares app charts."""
    _session.debug = debug


class _Session:
    """What the group's own options set for the run; main() reads it when a command fails."""

    debug = False


_session = _Session()


@cli.command("render")
@click.argument("app_ref", metavar="APP")
@target_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output folder; the chart goes to OUT/<target>/<name>/.",
)
@apps_dir_option
def render_cmd(app_ref: str, target_names: tuple[str, ...], out: Path, apps_dir: Path) -> int:
    """Render one APP (a name under --apps-dir, a folder, or an app.yaml) into chart folders."""
    from olares_pack.common import console, fsio
    from olares_pack.render import app as render
    app = resolve_app(app_ref, apps_dir)
    show_warnings(app)
    # Under the catalogue's lock when there is one: `build` sweeps what interrupted writes left
    # in the same output folders.
    repo = Repo.of_apps(apps_dir)
    with repo.open(write=True, purpose="render") if apps_dir.is_dir() else contextlib.nullcontext():
        for name in target_names or app.targets:
            t = targets.get(name)
            dest = out / t.name / app.name
            fsio.write_tree(render.render(app, t), dest)
            console.out.print(str(dest))
    return ExitCode.OK


@cli.command("build")
@apps_dir_option
@target_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_OUT,
    show_default=True,
    help="Output folder; each chart goes to OUT/<target>/<name>/.",
)
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
@lock_timeout_option
@apps_dir_option
def release_cmd(app_ref: str, bump: str | None, version: str | None, summary: str | None, changes: tuple[str, ...],
                notes: str, date_text: str | None, changes_from_diff: bool, edit: bool, dry_run: bool, force: bool,
                online: bool, allow: tuple[str, ...], lock_timeout: float, apps_dir: Path) -> int:
    """Publish a version of APP: bump app.yaml (comments and order kept), add its changelog entry,
    render, lint (errors stop it), package reproducibly, write its release record under
    apps/<name>/releases/ and its entry in market-index.json, all in one transaction."""
    from olares_pack.catalogue import releases
    from olares_pack.common import console
    from olares_pack.lint.findings import allowable
    for rule in allow:
        allowable(rule)
    app_dir = _app_dir(app_ref, apps_dir)
    repo = Repo.of_apps(apps_dir)
    parsed_changes = [_parse_change(c) for c in changes]
    date = _parse_date(date_text) if date_text else None
    entry = None
    if edit:  # before taking the lock: an editor may stay open for minutes
        app = resolve_app(app_ref, apps_dir)
        entry = _edit_entry(app.name, version or (releases.next_version(app.version, bump) if bump else app.version),
                            date or dt.date.today(), summary or "", parsed_changes, notes)
    with repo.open(write=True, timeout=lock_timeout):
        if changes_from_diff:
            parsed_changes += _changes_since_latest(app_ref, apps_dir)
        plan = releases.plan_release(repo, app_dir, version=version, bump=bump, summary=summary, changes=parsed_changes,
                                     notes=notes, date=date, force=force, entry_override=entry,
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
        if online:
            checked = _online_check(plan.app)
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


@cli.command("pin")
@click.argument("app_refs", metavar="APP...", nargs=-1)
@click.option("--all", "all_apps", is_flag=True, help="Every app under --apps-dir.")
@click.option("--image", "only_image", is_flag=True, help="Only the engine image (tag → digest).")
@click.option("--model", "only_model", is_flag=True, help="Only the model (revision → commit, file sizes and sha256).")
@click.option("--dry-run", is_flag=True, help="Show the diff of app.yaml and model.lock.json; write nothing.")
@lock_timeout_option
@apps_dir_option
def pin_cmd(app_refs: tuple[str, ...], all_apps: bool, only_image: bool, only_model: bool, dry_run: bool,
            lock_timeout: float, apps_dir: Path) -> int:
    """Pin APP's engine image by digest (asked of its registry; linux/amd64 must be offered) and its
    model by commit (asked of Hugging Face), in app.yaml (comments and order kept) and
    model.lock.json. Every app is resolved before anything is written; any error writes nothing."""
    from olares_pack.apps import pin
    from olares_pack.common import console
    from olares_pack.remote import oci
    if all_apps == bool(app_refs):
        raise click.UsageError("give APP... or --all")
    if only_image and only_model:
        raise click.UsageError("--image and --model exclude each other (neither: both)")
    repo = Repo.of_apps(apps_dir)
    with repo.open(write=not dry_run, timeout=lock_timeout, purpose="pin"):
        dirs = repo.app_dirs() if all_apps else [_app_dir(r, apps_dir) for r in app_refs]
        plans = []
        with oci.RegistryClient() as client:
            for d in dirs:
                plans.append(pin.plan_pin(d, image=not only_model, model=not only_image, client=client))
        for plan in plans:
            for note in plan.notes:
                console.info(note)
            images = [c for c in (plan.image, *plan.helpers.values()) if c is not None]
            for change in (*images, plan.model):
                if change is not None:
                    console.info(f"{plan.app.name}: {change.describe()}")
            for image in images:
                if image.old_digest and image.old_digest != image.digest:
                    console.warn(f"{plan.app.name}: {image.repository}:{image.tag} moved from "
                                 f"{image.old_digest} to {image.digest}")
        if dry_run:
            text = "".join(p.diff(repo.root) for p in plans)
            if text:
                console.out.print(text, markup=False, highlight=False, end="")
            return ExitCode.OK
        for path in pin.write_pins(plans, repo):
            console.out.print(repo.rel(path), markup=False)
    if not any(p.changed for p in plans):
        console.info("already pinned; nothing to write")
    return ExitCode.OK


def _online_check(app: App) -> list[tuple[str, str, str, str]]:
    """(rule, severity, path, message) of `--online`: what app.yaml pins still exists upstream."""
    from olares_pack.apps import pin
    return [(f.rule, f.severity, f.path, f.message) for f in pin.online_findings(app)]


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
    app_dir = _app_dir(app_ref, apps_dir)
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
    entry = app.changelog_entry
    if entry is not None and not entry.shipped:
        raise InputError(f"{app.name} {app.version} is marked shipped: false: an unshipped version is never packaged")
    show_warnings(app)
    for b in releases.build_packages(app, repo):
        if target_names and b.target not in target_names:
            continue
        dest = out / b.target / b.path.name
        fsio.write_bytes_atomic(dest, b.data)
        console.out.print(f"{dest}  sha256:{b.sha256}  (not published)", markup=False)
    return ExitCode.OK


@cli.command("diff")
@click.argument("refs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--all", "show_all", is_flag=True, help="Also list what did not change.")
@click.option("--rendered", is_flag=True, help="Also compare the rendered Kubernetes objects, matched by kind/name.")
@click.option("--target", "target_name", type=click.Choice(sorted(targets.TARGETS)), default="current", show_default=True,
              help="Target to render app versions for.")
@click.option("--engine-build", metavar="BUILD", help="Flag registry for hand-written llama.cpp charts.")
@apps_dir_option
def diff_cmd(refs: tuple[str, ...], fmt: str, show_all: bool, rendered: bool, target_name: str,
             engine_build: str | None, apps_dir: Path) -> int:
    """Compare two versions: `diff APP V1 V2` (published versions, or `current` for app.yaml),
    `diff APP V` (V against `current`) or `diff A B` (chart folders, .tgz files, app manifests).
    Exit 0 equal, 1 different."""
    from olares_pack import diff
    from olares_pack.common import console
    from olares_pack.lint import LintOptions

    if len(refs) == 2 and not Path(refs[0]).exists() and (apps_dir / refs[0] / MANIFEST_FILE).is_file() \
            and not Path(refs[1]).exists():
        # `diff APP V`: V against app.yaml, as `git diff REV` compares with the work tree: what the
        # next release would change (release --changes-from-diff reads the same comparison).
        console.info(f"comparing {refs[0]} {refs[1]} with current (app.yaml); `diff {refs[0]} V1 V2` compares two versions")
        refs = (refs[0], refs[1], "current")
    if len(refs) == 3:
        a_src = _version_source(refs[0], refs[1], target_name, apps_dir)
        b_src = _version_source(refs[0], refs[2], target_name, apps_dir)
    elif len(refs) == 2:
        a_src, b_src = (_path_source(Path(r), target_name) for r in refs)
    else:
        raise click.UsageError("give APP V1 V2, APP V (compared with current), or two charts A B")
    options = LintOptions(engine_build=engine_build)
    result = diff.compare(diff.facts(a_src, options), diff.facts(b_src, options), rendered=rendered)
    if fmt == "markdown":
        console.out.print(diff.to_markdown(result, show_all=show_all), markup=False, highlight=False)
    elif fmt == "json":

        console.out.print_json(json.dumps(diff.to_json(result, show_all=show_all), ensure_ascii=False, default=str))
    else:
        _print_diff_table(result, show_all)
    return ExitCode.OK if result.equal else ExitCode.FINDINGS


def _print_diff_table(result: DiffResult, show_all: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from olares_pack.common import console
    table = Table(title=f"{result.a} → {result.b}", title_justify="left")
    for col in ("section", "what", "old", "new", "note"):
        table.add_column(col, overflow="fold")
    style = {"added": "green", "removed": "red", "changed": "yellow", "unchanged": "dim"}
    for c in result.changes + (result.unchanged if show_all else []):
        s = style[c.kind]
        table.add_row(escape(c.section), f"[{s}]{escape(c.key)}[/{s}]", "—" if c.old is None else escape(str(c.old)),
                      "—" if c.new is None else escape(str(c.new)), escape(c.note))
    if result.equal and not show_all:
        console.out.print(f"{result.a} and {result.b}: no difference", markup=False)
    else:
        console.out.print(table)


def _version_source(app_ref: str, version: str, target_name: str, apps_dir: Path) -> ChartSource:
    """app.yaml rendered today (`current`), or a published version as it was published: its
    committed package, read with the app of its record."""
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import checks as catalogue
    from olares_pack.catalogue import records
    from olares_pack.charts.source import ChartSource
    from olares_pack.render import app as render
    app_dir = _app_dir(app_ref, apps_dir)
    if version in ("current", "app.yaml"):
        app = load_app(app_dir / MANIFEST_FILE)
        t = targets.get(target_name if target_name in app.targets else app.targets[0])
        return ChartSource(f"{app.name} {app.version}", app.name, render.render(app, t), app=app, target=t.name)
    repo = Repo.of_apps(apps_dir)
    rec = records.read(repo, app_dir.name, version)
    target = target_name if target_name in rec.charts else sorted(rec.charts)[0]
    data, _ = catalogue.published_bytes(repo, rec, target)
    from olares_pack.charts.source import from_archive_bytes

    src = from_archive_bytes(data, f"{rec.name} {rec.version}")
    return ChartSource(src.label, src.folder, src.files, app=records.app_of(rec), target=target, binary=src.binary)


def _path_source(path: Path, target_name: str) -> ChartSource:
    from olares_pack.charts.source import resolve

    found = resolve([path], [target_name] if path.suffix in (".yaml", ".yml") or (path / MANIFEST_FILE).exists() else None)
    if len(found) != 1:
        raise InputError(f"{path}: holds {len(found)} charts; name one chart")
    return found[0]


@cli.command("vram")
@click.argument("app_ref", metavar="APP")
@click.option("--version", "version", metavar="X.Y.Z", help="A published version (default: app.yaml).")
@click.option("--ctx", "ctxs", type=int, multiple=True, help="Context size(s) to estimate at (default: the app's). Repeatable.")
@click.option("--device", "device_name", default="olares-one", show_default=True, help="Device profile.")
@click.option("--gpu-mib", type=int, help="GPU memory of another device, in MiB.")
@click.option("--reserve-mib", type=int, help="Memory the desktop/driver keeps (default: the profile's).")
@click.option("--largest-ctx", is_flag=True, help="Also answer: the largest context that fits.")
@click.option("--quants", is_flag=True, help="Also answer: which locked quant of this repo fits at this context.")
@click.option("--lock", is_flag=True, help="Read the GGUF header (Hugging Face range reads, or --gguf) into model.lock.json first.")
@click.option("--gguf", "gguf_file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A local GGUF file, or a header excerpt of one (--save-header), for --lock.")
@click.option("--save-header", type=click.Path(path_type=Path, dir_okay=False),
              help="With --gguf: also write the file's header excerpt (metadata and tensor table) here, to commit.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@apps_dir_option
def vram_cmd(app_ref: str, version: str | None, ctxs: tuple[int, ...], device_name: str, gpu_mib: int | None,
             reserve_mib: int | None, largest_ctx: bool, quants: bool, lock: bool, gguf_file: Path | None,
             save_header: Path | None, fmt: str, apps_dir: Path) -> int:
    """Estimate the GPU memory APP needs at full context, term by term, and whether it fits.
    Exit 1 when an estimate does not fit."""
    from olares_pack.apps.manifest import LlamaCppApp
    from olares_pack.catalogue import records
    from olares_pack.common import console
    from olares_pack.vram import budget, gguf_meta, outcomes
    from olares_pack.vram import estimate as vram

    app_dir = _app_dir(app_ref, apps_dir)
    repo = Repo.of_apps(apps_dir)
    app = records.app_of(records.read(repo, app_dir.name, version)) if version else resolve_app(app_ref, apps_dir)
    try:
        dev = vram.device(device_name, gpu_mib, reserve_mib)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--device") from None
    if lock:
        if not isinstance(app, LlamaCppApp):
            raise InputError("--lock reads a GGUF header: llama.cpp apps only")
        had = app.model.files[0].sha256
        meta = budget.lock_model(app, app_dir, gguf_file)
        console.info(f"locked {meta.repo}/{meta.file}@{meta.revision} in {app_dir / gguf_meta.LOCK_FILE}")
        if meta.sha256 and had is None:
            console.info(f"{meta.file}: {meta.file_size} bytes, sha256 {meta.sha256}: recorded in app.yaml "
                         "(the engine starts only on these bytes)")
            app = resolve_app(app_ref, apps_dir)
    if save_header:
        if gguf_file is None:
            raise click.UsageError("--save-header needs --gguf FILE")
        from olares_pack.common import fsio

        fsio.write_bytes_atomic(save_header, gguf_meta.header_excerpt(gguf_file))
        console.info(f"wrote the header excerpt of {gguf_file.name} to {save_header}")
    estimates = [budget.app_estimate(app, app_dir, dev, c) for c in (ctxs or [None])]
    from olares_pack.render.llmbase import edited_args_note

    if note := edited_args_note(app):
        for e in estimates:
            e.notes.append(note)
    extra: dict[str, object] = {}
    if isinstance(app, LlamaCppApp) and (largest_ctx or quants):
        meta = budget.model_meta(app, app_dir)
        s = budget.settings_for(app.server)
        if largest_ctx:
            extra["largest_ctx"] = {"fits": vram.largest_context(meta, s, dev, "fits"),
                                    "tight": vram.largest_context(meta, s, dev, "tight"),
                                    "trained": meta.context_length}
        if quants:
            at = budget.settings_for(app.server, ctxs[0] if ctxs else None)
            extra["quants"] = [budget.quant_row(m, at, dev) for m in gguf_meta.load_lock(app_dir).models
                               if m.repo == app.model.repo]
    # what devices did with this version, where its app's records say it ran out of memory: set
    # beside the verdict at the version's own context on the device the records are from
    record_rows: list[dict[str, object]] = []
    if device_name == "olares-one" and gpu_mib is None and reserve_mib is None:
        found = outcomes.recorded(repo, app.name, app.version)
        if found:
            own = estimates[0] if not ctxs else budget.app_estimate(app, app_dir, dev, None)
            record_rows = [o.to_dict(own.verdict) for o in found]
            extra["recorded_outcomes"] = record_rows
    if fmt == "json":

        doc = {"app": app.name, "version": app.version, "estimates": [e.to_dict() for e in estimates], **extra}
        console.out.print_json(json.dumps(doc))
    else:
        for e in estimates:
            _print_estimate(f"{app.name} {app.version}", e)
        for row in record_rows:
            console.out.print(f"  record: {row['recorded_in']}'s changelog (fix): {row['text']}", markup=False)
        if "largest_ctx" in extra:
            for line in _largest_ctx_lines(extra["largest_ctx"]):  # type: ignore[arg-type]
                console.out.print(line, markup=False)
        for row in extra.get("quants", []):  # type: ignore[attr-defined]
            console.out.print(f"{row['file']}: {row['total_mib']} MiB, headroom {row['headroom_mib']} MiB, {row['verdict']}, "
                              f"largest context that fits {row['largest_ctx']}", markup=False)
    for row in record_rows:
        if row["contradicts"]:
            console.warn(f"{app.name} {app.version}: the verdict '{row['verdict']}' contradicts its record "
                         f"({row['recorded_in']}'s changelog: ran out of GPU memory); the estimate does not explain "
                         "that outcome (README \"GPU memory budget\")")
    return ExitCode.FINDINGS if any(e.verdict == "does not fit" for e in estimates) else ExitCode.OK


def _largest_ctx_lines(lc: dict[str, int]) -> list[str]:
    """`vram --largest-ctx` in words: the largest context and its verdict, one line each."""
    fits, tight, trained = lc["fits"], lc["tight"], lc["trained"]

    def ctx(n: int) -> str:
        return f"{n} (the model's trained context: none larger exists)" if n == trained else str(n)

    if not tight:
        return ["no context fits on this device, not even 1024 tokens (a smaller quant, or a larger GPU)"]
    lines = [f"largest context that fits: {ctx(fits)}" if fits else "no context fits with a margin on this device"]
    if tight > fits:
        lines.append(f"largest context that is tight: {ctx(tight)} (it fits by less than the estimate's uncertainty)")
    return lines


@cli.command("new")
@click.argument("name")
@click.option("--hf", "hf_repo", required=True, metavar="OWNER/REPO", help="The Hugging Face repository of GGUF quants.")
@click.option("--revision", default="main", show_default=True, help="Branch, tag or commit to read (pinned to its commit).")
@click.option("--ctx", type=click.IntRange(min=1), help="Context size the quant must fit at (default: 32768, or the trained context if smaller).")
@click.option("--quant", help="Take this quant (e.g. Q4_K_M) instead of the largest that fits.")
@click.option("--engine", type=click.Choice(["llamacpp", "vllm"]), default="llamacpp", show_default=True)
@click.option("--image", help="Engine image REPOSITORY:TAG, pinned by digest (default: upstream llama.cpp's CUDA server "
              "image of the newest known build).")
@click.option("--draft", type=click.Choice(["mtp"]), help="Speculative decoding with the GGUF's MTP block (refused without one).")
@click.option("--device", "device_name", default="olares-one", show_default=True, help="Device profile.")
@click.option("--gpu-mib", type=int, help="GPU memory of another device, in MiB.")
@click.option("--reserve-mib", type=int, help="Memory the desktop/driver keeps (default: the profile's).")
@click.option("--per-user", is_flag=True, help="One engine per user who installs it (engine.shared: false) instead of "
              "the shared form.")
@click.option("--llm-init-image", metavar="REPOSITORY:TAG", help="The shared form's llm-init image (default: the "
              "official charts' docker.io/beclab/llm-init).")
@click.option("--chown-image", metavar="REPOSITORY:TAG", help="The shared form's chown step image (default: the "
              "official charts' docker.io/beclab/aboveos-busybox).")
@click.option("--proxy-image", metavar="REPOSITORY:TAG", help="The shared form's per-user proxy on Olares 1.12.3-1.12.5 "
              "(llama.cpp; default: the official v2 charts' docker.io/beclab/aboveos-bitnami-openresty).")
@click.option("--dry-run", is_flag=True, help="Print the ladder and the pick; write nothing.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@lock_timeout_option
@apps_dir_option
def new_cmd(name: str, hf_repo: str, revision: str, ctx: int | None, quant: str | None, engine: str, image: str | None,
            draft: str | None, device_name: str, gpu_mib: int | None, reserve_mib: int | None, per_user: bool,
            llm_init_image: str | None, chown_image: str | None, proxy_image: str | None, dry_run: bool, fmt: str,
            lock_timeout: float, apps_dir: Path) -> int:
    """Start app NAME from a Hugging Face repository: read every GGUF quant's header (range
    requests, never the weights), print the ladder (estimate at the context, headroom, verdict,
    largest context that fits), pick the largest quant that fits with a margin, and write
    apps/NAME/app.yaml and model.lock.json, pinned (model commit, image digest). Never overwrites.
    --engine vllm: a safetensors repository (config.json, the weights' sizes), with the GPU grant
    and --gpu-memory-utilization derived from the estimate."""
    from olares_pack.apps import new_llamacpp as newapp
    from olares_pack.apps import new_vllm as newvllm
    from olares_pack.common import console
    from olares_pack.engines import registry
    from olares_pack.vram import budget, gguf_meta
    from olares_pack.vram import estimate as vram

    try:
        dev = vram.device(device_name, gpu_mib, reserve_mib)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--device") from None
    app_dir = apps_dir / name
    if app_dir.exists():
        raise InputError(f"{app_dir}: already exists; `new` never overwrites an app (choose another NAME)")
    if image:
        image_repo, image_tag = registry.image_parts(image, as_written=True)
        if not image_tag:
            raise click.BadParameter(f"{image!r}: expected REPOSITORY:TAG", param_hint="--image")
    elif engine == "vllm":
        image_repo, image_tag = newvllm.UPSTREAM_IMAGE
    else:
        image_repo, image_tag = newapp.UPSTREAM_IMAGE, f"server-cuda-{registry.table_builds('llamacpp')[-1]}"
    helper_refs: dict[str, tuple[str, str]] | None = None
    if not per_user:
        from olares_pack.apps.manifest import CHOWN_IMAGE, LLM_INIT_IMAGE, PROXY_IMAGE

        helper_refs = {}
        # llm-init and its chown step (current target), the proxy client (legacy: a llama.cpp app
        # of `new` is written for both targets, a vLLM one for current only)
        wanted = [("llm_init", llm_init_image, LLM_INIT_IMAGE), ("chown_image", chown_image, CHOWN_IMAGE)]
        if engine != "vllm":
            wanted.append(("proxy_image", proxy_image, PROXY_IMAGE))
        for key, given, default in wanted:
            ref = registry.image_parts(given, as_written=True) if given else (default["repository"], default["tag"])
            if not ref[1]:
                raise click.BadParameter(f"{given!r}: expected REPOSITORY:TAG", param_hint=f"--{key.replace('_', '-')}")
            helper_refs[key] = ref
    elif llm_init_image or chown_image or proxy_image:
        raise click.UsageError("--llm-init-image, --chown-image and --proxy-image are the shared form's: not with --per-user")
    if engine == "vllm":
        if quant or draft:
            raise click.UsageError("--quant and --draft are for GGUF quants (--engine llamacpp)")
        vplan, pin = newvllm.plan(name, hf_repo, revision, ctx, dev, console.info)
        doc = {"name": name, "repo": hf_repo, "commit": vplan.commit, "ctx": vplan.est.ctx, "engine": "vllm",
               "device": {"name": dev.name, "total_mib": dev.total_mib, "reserve_mib": dev.reserve_mib}, **vplan.est.to_dict()}
        if fmt == "json":
            console.out.print_json(json.dumps(doc))
        else:
            console.out.print(f"{hf_repo}@{vplan.commit[:12]} on vLLM at --max-model-len {vplan.est.ctx} on {dev.name}: "
                              f"weights {doc['weights_mib']} MiB + KV {doc['kv_mib']} MiB + overhead {doc['overhead_mib']} MiB "
                              f"= {doc['total_mib']} MiB, headroom {doc['headroom_mib']} MiB, {doc['verdict']}; largest context "
                              f"that fits {doc['largest_ctx']}; --gpu-memory-utilization {doc['gpu_memory_utilization']} of "
                              f"{doc['gpu_memory_mib']} MiB", markup=False)
            for n in vplan.est.notes:
                console.out.print(f"  note: {n}", markup=False)
        if doc["verdict"] != "fits":
            raise InputError(f"{hf_repo}: does not fit at --ctx {vplan.est.ctx} on {dev.name}; the largest context that "
                             f"would fit: {doc['largest_ctx']}" if doc["largest_ctx"] else
                             f"{hf_repo}: the weights alone do not fit on {dev.name}")
        digest, helpers = _pin_new_images(image_repo, image_tag, helper_refs)
        card = newapp.card_front_matter(hf_repo, pin)
        app_text = newvllm.app_yaml(vplan, pin, card, image_repo, image_tag, digest, helpers)
        lock = gguf_meta.Lock()
        lock.put_revision(pin.to_dict())
        return _write_new(apps_dir, app_dir, app_text, lock.dumps(), dry_run, lock_timeout)
    build = registry.tag_build(image_tag) or registry.table_builds("llamacpp")[-1]
    plan, pin = newapp.ladder(name, hf_repo, revision, ctx=ctx, quant=quant, draft_mtp=draft == "mtp", dev=dev,
                              progress=console.info)
    if fmt == "json":
        console.out.print_json(json.dumps(plan.to_dict()))
    else:
        _print_ladder(plan)
    if plan.picked is None:
        best = max(plan.rows, key=lambda r: r["largest_ctx"])
        would = (f"; the largest context that would fit: {best['largest_ctx']} with {best['quant']}" if best["largest_ctx"]
                 else "; none fits even at 1024 tokens (a larger GPU)")
        raise InputError(f"{hf_repo}: {plan.reason} at --ctx-size {plan.server.ctx_size} on {dev.name}{would}")
    console.info(f"picked {plan.reason}")
    if plan.picked["verdict"] == "tight":
        console.warn(f"{plan.picked['quant']} fits by less than the estimate's uncertainty")
    one = vram.device()
    if dev != one:
        meta = next(m for m in plan.metas if m.file == plan.picked["file"])
        on_one = vram.estimate(meta, budget.settings_for(plan.server), one)
        if on_one.verdict == "does not fit":
            console.warn(f"{plan.picked['quant']} does not fit the {one.name} ({on_one.total_mib:,.0f} MiB): lint "
                         "checks the catalogue's device and will refuse it (vram.budget)")
    digest, helpers = _pin_new_images(image_repo, image_tag, helper_refs)
    newapp.finish(plan, pin, app_dir / MANIFEST_FILE, image_repo=image_repo, image_tag=image_tag, digest=digest, build=build,
                  helpers=helpers)
    return _write_new(apps_dir, app_dir, plan.app_text, plan.lock_text, dry_run, lock_timeout)


def _pin_new_images(repository: str, tag: str, helper_refs: dict[str, tuple[str, str]] | None
                    ) -> tuple[str, dict[str, tuple[str, str, str]] | None]:
    """The engine image's digest and the shared form's helper images' (linux/amd64 required),
    asked of their registries as `pin` asks."""
    from olares_pack.common import console
    from olares_pack.remote import oci

    with oci.RegistryClient() as client:
        digest = oci.resolve_amd64(client, repository, tag).digest
        console.info(f"image {repository}:{tag} → {digest}")
        if helper_refs is None:
            return digest, None
        helpers = {}
        for key, (repo, htag) in helper_refs.items():
            helpers[key] = (repo, htag, oci.resolve_amd64(client, repo, htag).digest)
            console.info(f"{key} {repo}:{htag} → {helpers[key][2]}")
    return digest, helpers


def _write_new(apps_dir: Path, app_dir: Path, app_text: str, lock_text: str, dry_run: bool, lock_timeout: float) -> int:
    """app.yaml (parsed back as a manifest first) and model.lock.json, in one transaction."""
    from olares_pack.apps.load import parse_app
    from olares_pack.catalogue.journal import Transaction
    from olares_pack.catalogue.repo import LOCK_FILE
    from olares_pack.common import console

    manifest = app_dir / MANIFEST_FILE
    parse_app(app_text, manifest, derive=False)
    if dry_run:
        console.out.print(app_text, markup=False, highlight=False, end="")
        return ExitCode.OK
    repo = Repo.of_apps(apps_dir)
    with repo.open(write=True, timeout=lock_timeout, purpose="new"):
        if app_dir.exists():
            raise InputError(f"{app_dir}: already exists; `new` never overwrites an app")
        txn = Transaction(repo.root)
        txn.write(manifest, app_text)
        txn.write(app_dir / LOCK_FILE, lock_text)
        for path in txn.commit():
            console.info(f"wrote {repo.rel(path)}")
    console.info(f"next: olares-pack lint {app_dir} && olares-pack release {app_dir.name} --version 1.0.0 --dry-run")
    return ExitCode.OK


def _print_ladder(p: NewPlan) -> None:
    from rich.table import Table

    from olares_pack.common import console
    table = Table(title=f"{p.repo}@{p.commit[:12]} at --ctx-size {p.server.ctx_size} on {p.device.name}",
                  title_justify="left")
    for col, justify in (("quant", "left"), ("file", "left"), ("GiB", "right"), ("total MiB", "right"),
                         ("headroom MiB", "right"), ("verdict", "left"), ("largest ctx that fits", "right"), ("MTP", "left")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    picked = p.picked["file"] if p.picked else None
    for r in p.rows:
        color = {"fits": "green", "tight": "yellow", "does not fit": "red"}[r["verdict"]]
        table.add_row(r["quant"] + (" ←" if r["file"] == picked else ""), r["file"] + (f" (+{r['parts'] - 1} parts)" if r["parts"] > 1 else ""),
                      f"{(r['size'] or 0) / 2**30:.2f}", f"{r['total_mib']:,}", f"{r['headroom_mib']:,}",
                      f"[{color}]{r['verdict']}[/{color}]", str(r["largest_ctx"]), "yes" if r["mtp"] else "no")
    console.out.print(table)


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0 for every interface).")
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--tls-cert", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="PEM certificate: serve HTTPS.")
@click.option("--tls-key", type=click.Path(path_type=Path, dir_okay=False, exists=True), help="PEM private key of --tls-cert.")
@click.option("--base-url", default="", help="Public URL of this source (icons under it), e.g. https://market.example.org")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False, exists=True), default=Path("."), show_default=True,
              help="Repository holding market-index.json, packages/ and apps/.")
@click.option("--reload-on-change", is_flag=True, help="Reload when market-index.json changes (SIGHUP always reloads).")
@click.option("--default-version", default=targets.DEFAULT_OS_VERSION, show_default=True, help="Olares version assumed when a request names none.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Processes sharing the listening socket, each with its own copy of the catalogue.")
@click.option("--strict", is_flag=True,
              help="Refuse to start (exit 2) when a chart the ledger lists is missing, unreadable or changed, "
                   "rather than serving the rest and answering that chart 503 (for CI).")
def serve_cmd(host: str, port: int, tls_cert: Path | None, tls_key: Path | None, base_url: str, root: Path,
              reload_on_change: bool, default_version: str, workers: int, strict: bool) -> int:
    """Serve market-index.json and packages/ as an Olares market source."""
    from olares_pack.market import server

    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    targets.parse_os_version(default_version)
    server.run(root, host=host, port=port, tls_cert=tls_cert, tls_key=tls_key,
               reload_every=2.0 if reload_on_change else None, default_version=default_version, base_url=base_url,
               workers=workers, strict=strict)
    return ExitCode.OK


@cli.group("export")
def export_group() -> None:
    """Write the market source for another host."""


@export_group.command("cloudflare")
@click.argument("out", type=click.Path(path_type=Path, file_okay=False))
@click.option("--name", default="olares-market", show_default=True, help="The Worker's name on Cloudflare.")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False, exists=True), default=Path("."), show_default=True,
              help="Repository holding market-index.json, packages/ and apps/.")
@click.option("--default-version", default=targets.DEFAULT_OS_VERSION, show_default=True, help="Olares version assumed when a request names none.")
def export_cloudflare(out: Path, name: str, root: Path, default_version: str) -> int:
    """A Cloudflare Worker project serving the four routes from precomputed bytes, charts as static
    assets. Deploy it with `npx wrangler deploy` in OUT."""
    from olares_pack.common import console
    from olares_pack.market import cloudflare

    targets.parse_os_version(default_version)
    served = cloudflare.export(root, out, name=name, default_version=default_version)
    console.info(f"wrote {out} ({served} charts); deploy with: cd {out} && npm install && npx wrangler deploy")
    return ExitCode.OK


@export_group.command("olares-app")
@click.argument("out", type=click.Path(path_type=Path, file_okay=False))
@click.option("--image", required=True, help="The image built from this repository's Dockerfile, pinned by digest "
              "(registry/olares-market:1.0.0@sha256:...).")
@click.option("--version", "version", required=True, help="The app's version: raise it with every new catalogue "
              "baked into the image (a device re-syncs an app only when its version changes).")
@click.option("--name", default="marketsource", show_default=True, help="The app's name on the device.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 16), help="serve --workers in the pod.")
def export_olares_app(out: Path, image: str, version: str, name: str, workers: int) -> int:
    """A chart that runs this market source on an Olares device (1.12.6+), linted before it is
    written: OUT/<name>/ and OUT/<name>-<version>.tgz."""
    from olares_pack.common import console
    from olares_pack.lint.output import print_findings
    from olares_pack.market import sourceapp

    tgz, findings = sourceapp.export(sourceapp.SourceApp(name, version, image, workers=workers), out)
    print_findings(findings, [f"{name} {version}"])
    if any(f.severity == "error" for f in findings):
        console.error(f"{name} {version}: lint found errors; nothing was written")
        return ExitCode.FINDINGS
    console.info(f"wrote {tgz}; install it on the device (Market -> My Olares -> upload) and add its entrance URL "
                 "as a market source")
    return ExitCode.OK


def _print_estimate(title: str, e: Estimate) -> None:
    from rich.markup import escape
    from rich.table import Table

    from olares_pack.common import console
    table = Table(title=f"{title} at --ctx-size {e.settings.ctx} on {e.device.name}", title_justify="left")
    for col, justify in (("term", "left"), ("MiB", "right"), ("when", "left"), ("how", "left")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for t in e.terms:
        table.add_row(t.name, f"{t.mib:,.0f}", t.when, escape(t.formula))
    table.add_row("total", f"{e.total_mib:,.0f}", "", f"boot {e.boot_mib:,.0f} MiB; full context {e.total_mib:,.0f} MiB")
    table.add_row("device", f"{e.device.usable_mib:,}", "", f"{e.device.total_mib} MiB − {e.device.reserve_mib} MiB desktop/driver reserve")
    color = {"fits": "green", "tight": "yellow", "does not fit": "red"}[e.verdict]
    table.add_row("headroom", f"{e.headroom_mib:,.0f}", "", f"[{color}]{e.verdict}[/{color}]")
    table.add_row("uncertainty", f"±{e.uncertainty_mib:,.0f}", "",
                  f"the fit's worst residual {e.uncertainty_pct:g} % (bench/vram) + {e.extra_uncertainty_mib:,.0f} MiB for a "
                  f"GPU that was not measured + {e.runtime_band_mib:,.0f} MiB, the largest growth a measured run showed after "
                  "its first request; 'tight' when the headroom is smaller")
    console.out.print(table)
    for n in e.notes:
        console.out.print(f"  note: {n}", markup=False)


def _changes_since_latest(app_ref: str, apps_dir: Path) -> list[tuple[str, str]]:
    from olares_pack import diff
    from olares_pack.catalogue import records

    app_dir = _app_dir(app_ref, apps_dir)
    versions = records.versions(Repo.of_apps(apps_dir), app_dir.name)
    if not versions:
        return []
    a = diff.facts(_version_source(app_ref, versions[-1], "current", apps_dir))
    b = diff.facts(_version_source(app_ref, "current", "current", apps_dir))
    return [c for c in diff.suggested_changes(diff.compare(a, b)) if not c[1].startswith("version ")]


def _app_dir(ref: str, apps_dir: Path) -> Path:
    path = Path(ref)
    if path.exists():
        return path if path.is_dir() else path.parent
    return apps_dir / ref


def _parse_change(text: str) -> tuple[str, str]:
    kind, sep, what = text.partition(":")
    if not sep or not what.strip():
        raise click.BadParameter(f"{text!r}: expected KIND:TEXT, e.g. engine-args:--ctx-size 131072", param_hint="--change")
    return kind.strip(), what.strip()


def _parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected YYYY-MM-DD", param_hint="--date") from None


def _edit_entry(name: str, version: str, date: dt.date, summary: str, changes: list[tuple[str, str]], notes: str) -> object:
    """Open $EDITOR on a changelog entry; return it as a round-trip YAML mapping."""
    from olares_pack.apps import changelog

    text = click.edit(changelog.edit_template(name, version, date, summary, changes, notes), extension=".yaml")
    if text is None:
        raise click.Abort()
    return changelog.read_edited(text)


@cli.command("import")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@apps_dir_option
@click.option("--date", "date", type=click.DateTime(["%Y-%m-%d"]), metavar="YYYY-MM-DD",
              help="Publication date of versions whose source names none (default: today).")
@click.option("--os-version", "os_versions", multiple=True, metavar="VERSION",
              help="OS versions to read a live source's catalogue for "
              f"(default: {' and '.join(targets.LIVE_SOURCE_OS_VERSIONS)}).")
@click.option("--strict", is_flag=True, help="Also fail (exit 1) on notes: anything mapped, changed or not kept "
              "(without it, only a chart that was not imported fails).")
@click.option("--upgrade", is_flag=True, help="Convert legacy charts (manifest 0.10.0/0.11.0, apiVersion v1 or v2, "
              "sub-charts flattened) to 0.12.0/v3 for Olares 1.12.6+, as the next version to release; the imported "
              "versions stay published for 1.12.3-1.12.5. The report says what that took, or what blocks it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a summary table; json: the same for scripts.")
@click.option("--structured", is_flag=True, help="Give charts whose engine olares-pack models (llama.cpp, vLLM) "
              "its typed app manifest, as the next version to release; the report lists what renders differently.")
@click.option("--rename", is_flag=True, help="Give charts whose name Olares refuses the proposed valid name (a new "
              "app, to be released: its published packages name the old one).")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; write nothing.")
@lock_timeout_option
def import_cmd(sources: tuple[str, ...], apps_dir: Path, date: dt.datetime | None, os_versions: tuple[str, ...],
               strict: bool, upgrade: bool, fmt: str, structured: bool, rename: bool, dry_run: bool,
               lock_timeout: float) -> int:
    """Import hand-written charts: chart folders, .tgz packages, folders of them, or the base URL
    of a live market source. Each app becomes apps/<name>/app.yaml (the chart as written) and one
    release record per version whose package is the source's own bytes."""
    from rich.markup import escape
    from rich.progress import Progress
    from rich.table import Table

    from olares_pack.catalogue.journal import Transaction
    from olares_pack.common import console
    from olares_pack.importing import importer

    repo = Repo.of_apps(apps_dir)
    found = []
    said: list[str] = []  # what a live source lists, names and serves
    with Progress(console=console.err, transient=True) as progress:
        for source in sources:
            found += importer.find(source, os_versions=os_versions or targets.LIVE_SOURCE_OS_VERSIONS, progress=progress, report=said)
    # A dry run writes nothing, not even the lock file: without olares-pack state there is no
    # other olares-pack run to keep out.
    held = repo.open(write=not dry_run, timeout=lock_timeout, purpose="import") \
        if not dry_run or repo.state_dir.exists() else contextlib.nullcontext(repo)
    with held:
        plan = importer.plan(repo, found, (date or dt.datetime.now()).date(), upgrade=upgrade, rename=rename,
                             structured=structured)
        if not dry_run:
            txn = Transaction(repo.root)
            for path, data in sorted(plan.writes.items()):
                txn.write(path, data)
            txn.commit()
    rows = []
    for r in sorted(plan.results, key=lambda r: (r.name, r.found.label)):
        status = "refused" if r.app is None else ("skipped" if r.name in plan.skipped else
                                                  "to release" if not r.publishable else "with notes" if r.notes else "imported")
        rows.append({"app": r.name, "version": r.app.version if r.app else "", "from": r.found.label,
                     "engine": r.engine_text if r.app else "", "status": status,
                     "notes": [r.problem] if r.problem else [plan.skipped[r.name]] if r.name in plan.skipped else r.notes})
    if fmt == "json":
        console.out.print_json(json.dumps({"charts": rows, "apps": plan.apps, "sources": said}, ensure_ascii=False))
    else:
        table = Table(title="import", title_justify="left")
        for col in ("app", "version", "from", "engine", "status", "notes"):
            table.add_column(col, overflow="fold")
        for row in rows:
            # escaped: notes quote patterns such as ^[a-z0-9]{1,30}$, which rich would read as markup
            table.add_row(*(escape(str(row[k])) for k in ("app", "version", "from", "engine", "status")),
                          escape("\n".join(row["notes"])))
        console.out.print(table)
    for line in said:
        console.info(line)
    ok = sum(1 for r in plan.results if r.app is not None and r.name not in plan.skipped)
    noted = sum(1 for r in plan.results if r.notes)
    refused = sum(1 for r in plan.results if r.app is None or r.name in plan.skipped)
    console.info(f"{len(plan.results)} chart(s): {ok} imported ({noted} with notes), {refused} not imported; "
                 f"{len(plan.apps)} app(s) {'would be ' if dry_run else ''}written under {repo.rel(repo.apps_dir)}")
    if refused or (strict and noted):
        return ExitCode.FINDINGS
    return ExitCode.OK


@cli.command("lint")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text: tables for a terminal; json: for scripts; github: workflow annotations.")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1), and an unpinned image is an error.")
@target_option
@click.option("--olares", "olares_version", metavar="VERSION",
              help="The Olares release whose rules apply (e.g. 1.12.5 for a source that serves 1.12.3-1.12.5 "
              "devices); charts whose olares dependency excludes it are errors. Default: the newest known "
              "release each chart's own olares dependency admits.")
@click.option("--kube-version", default=targets.DEFAULT_KUBE_VERSION, show_default=True,
              help="Kubernetes version whose schemas validate the rendered objects (Olares ships k3s 1.32).")
@click.option("--engine-build", metavar="BUILD",
              help="Flag registry for llama-server containers whose build olares-pack cannot tell (e.g. b11434).")
@click.option("--helm-lint", is_flag=True, help="Also run Helm's own lint (warnings only: the installer renders, it does not lint).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Lint this many charts at once.")
@click.option("--allow", "allow", multiple=True, metavar="RULE",
              help="Report errors of this olares-pack policy rule as warnings (as `release --allow` does). Repeatable.")
@click.option("--explain", "explain", metavar="RULE", help="Print what RULE checks, its source and its releases, and exit.")
@click.option("--online", is_flag=True, help="Also ask the registries and Hugging Face whether the pinned digests and "
              "commits of app manifests still resolve, and whether image tags still name their digests.")
def lint_cmd(paths: tuple[Path, ...], fmt: str, strict: bool, target_names: tuple[str, ...],
             olares_version: str | None, kube_version: str, engine_build: str | None, helm_lint: bool, jobs: int,
             allow: tuple[str, ...], explain: str | None, online: bool) -> int:
    """Lint chart folders, .tgz charts, app manifests (rendered for each target) or folders of them."""
    from olares_pack.lint import LintOptions, lint_charts
    from olares_pack.lint.output import PRINTERS, print_rule

    if explain:
        return print_rule(explain)
    if not paths:
        raise InputError("lint needs a chart, an app or a folder (or --explain RULE)")
    from olares_pack.charts.source import resolve

    if olares_version:
        targets.parse_os_version(olares_version)
    from olares_pack.lint.findings import allowable
    for rule in allow:
        allowable(rule)
    sources = resolve(list(paths), list(target_names) or None)
    options = LintOptions(kube_version=kube_version, olares_version=olares_version, engine_build=engine_build,
                          strict=strict, helm_lint=helm_lint, allow=tuple(sorted(set(allow))))
    from olares_pack.lint.place import place_results

    results = lint_charts(sources, options, jobs)
    if online:
        _add_online_findings(sources, results)
    results = place_results(results, sources)
    PRINTERS[fmt](results)
    failing = {"error", "warning"} if strict else {"error"}
    return ExitCode.FINDINGS if any(f.severity in failing for r in results for f in r.findings) else ExitCode.OK


def _add_online_findings(sources: list[ChartSource], results: list[ChartResult]) -> None:
    """One check per app manifest (its targets share the image and model), reported on each of its charts."""
    from olares_pack.lint.findings import Finding
    seen: dict[str, list[tuple[str, str, str, str]]] = {}
    for src, result in zip(sources, results, strict=True):
        if src.app is None:
            continue
        key = src.app.model_dump_json()
        if key not in seen:
            seen[key] = _online_check(src.app)
        checked = seen[key]
        result.findings.extend(Finding(rule, severity, result.label, "app.yaml", path, message)  # type: ignore[arg-type]
                               for rule, severity, path, message in checked)  # severity: "error" or "warning"
        result.findings.sort(key=Finding.sort_key)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    _session.debug = False
    try:
        code = cli.main(args=args, prog_name="olares-pack", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = ExitCode.INPUT
    except click.Abort:
        from olares_pack.common import console

        console.error("aborted")
        code = ExitCode.INPUT
    except OlaresPackError as exc:
        from olares_pack.common import console

        console.error(str(exc))
        code = exc.exit_code
    except RecursionError:
        from olares_pack.common import console

        console.error("input nested too deeply to process")
        code = ExitCode.INPUT
    except Exception as exc:  # noqa: BLE001 - a bug: one line and exit 3, the trace on request
        from olares_pack.common import console

        if _session.debug:
            console.err.print_exception()
        console.error(f"internal error: {type(exc).__name__}: {exc} (olares-pack {__version__}; please report it, "
                      "with the command and `--debug` output)")
        code = ExitCode.INTERNAL
    if argv is None:
        sys.exit(code or 0)
    return code or 0


if __name__ == "__main__":  # pragma: no cover
    main()
