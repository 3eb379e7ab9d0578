"""`outdated` and `propose`: watching upstream (olares_pack/upstream)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from olares_pack.catalogue.repo import Repo
from olares_pack.cli.args import app_folder, parse_date
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option, lock_timeout_option
from olares_pack.common.errors import ExitCode

upstream_image_option = click.option(
    "--upstream-image", metavar="REPOSITORY", default=None,
    help="Upstream llama.cpp's image repository, whose server-cuda-b<build> tags an image that is not upstream "
         "is compared with (default: ghcr.io/ggml-org/llama.cpp).")
page_size_option = click.option("--page-size", type=click.IntRange(min=1), default=1000, show_default=True,
                                help="Tags asked of a registry per tags/list page (the Link header names the next).")


# an image repository as the distribution spec names one: [host[:port]/]path, path components of
# lower-case letters and digits joined by ., _, __ or -
REPOSITORY = re.compile(r"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
                        r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")


def _options(upstream_image: str | None, page_size: int):  # type: ignore[no-untyped-def]
    from olares_pack.upstream import outdated

    if upstream_image is not None and not REPOSITORY.match(upstream_image):
        raise click.BadParameter(f"{upstream_image!r} is not an image repository (e.g. ghcr.io/ggml-org/llama.cpp)",
                                 param_hint="--upstream-image")
    return outdated.Options(upstream_image or outdated.default_upstream(), page_size)


@cli.command("outdated")
@click.argument("app_refs", metavar="[APP]...", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a table per app; json: stable (sorted, no clock) for a scheduled job.")
@upstream_image_option
@page_size_option
@apps_dir_option
def outdated_cmd(app_refs: tuple[str, ...], fmt: str, upstream_image: str | None, page_size: int, apps_dir: Path) -> int:
    """What upstream has that each app's newest version lacks (default: every app): newer engine
    image tags and builds, a moved tag, a newer model revision, changed or new model files, a
    renamed, gone or gated repository, and the engine flags a newer build renames, removes or
    changes the default of. Each with where it was read. Exit 1 when anything is outdated, 0 when
    nothing is, 2 when a registry or the hub could not be read (its row says `unreachable`) or on
    bad input."""
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import MANIFEST_FILE
    from olares_pack.common import console
    from olares_pack.common.errors import InputError
    from olares_pack.remote import oci
    from olares_pack.upstream import outdated

    opts = _options(upstream_image, page_size)
    repo = Repo.of_apps(apps_dir)
    dirs = [app_folder(r, apps_dir) for r in app_refs] if app_refs else repo.app_dirs()
    for d in dirs:
        if not (d / MANIFEST_FILE).is_file():
            raise InputError(f"{d.name}: no such app ({d / MANIFEST_FILE} does not exist)")
    reports = []
    with oci.RegistryClient() as client:
        for d in dirs:
            try:
                app = load_app(d / MANIFEST_FILE)
            except InputError as exc:  # one broken manifest: said, and the other apps still checked
                console.error(str(exc))
                rep = outdated.AppReport(d.name, "?")
                rep.items.append(outdated.Item(d.name, "app", "invalid", str(d / MANIFEST_FILE), None, None,
                                               str(d / MANIFEST_FILE), str(exc)))
                reports.append(rep)
                continue
            reports.append(outdated.check_app(app, d, client, opts, console.info))
    reports.sort(key=lambda r: r.app)
    if fmt == "json":
        console.out.print(json.dumps({"apps": [r.to_dict() for r in reports]}, indent=2, sort_keys=True),
                          markup=False, highlight=False)
    else:
        console.out.print(outdated.to_text(reports), markup=False, highlight=False, end="")
    if any(r.unreachable or r.invalid for r in reports):
        return ExitCode.INPUT
    return ExitCode.FINDINGS if any(r.status == "outdated" for r in reports) else ExitCode.OK


@cli.command("propose")
@click.argument("app_ref", metavar="APP")
@click.option("--engine-build", metavar="B", help="The llama.cpp build to move to (e.g. b9254): the image's own tag "
              "scheme, or upstream llama.cpp's server-cuda-b<build> for an image that is not upstream.")
@click.option("--image-tag", metavar="T", help="The tag of the app's image repository to move to.")
@click.option("--model-revision", metavar="R", help="Branch, tag or commit of the model repository (default: main, "
              "followed through a rename).")
@click.option("--quant", metavar="FILE", help="The GGUF file to run instead of the current one.")
@click.option("--date", "date_text", metavar="YYYY-MM-DD", help="The draft changelog entry's date (default: today).")
@click.option("--dry-run", is_flag=True, help="Print the draft's diff of app.yaml; write nothing.")
@upstream_image_option
@page_size_option
@lock_timeout_option
@apps_dir_option
def propose_cmd(app_ref: str, engine_build: str | None, image_tag: str | None, model_revision: str | None,
                quant: str | None, date_text: str | None, dry_run: bool, upstream_image: str | None, page_size: int,
                lock_timeout: float, apps_dir: Path) -> int:
    """Draft APP's next version in app.yaml (comments and order kept): the newer image tag and its
    digest, the model's revision (and new repository name) with its file's size and sha256, the
    engine arguments translated for the new build, and a changelog entry saying why each changed.
    Prints lint, the GPU-memory verdict and the diff against the newest published version. Nothing
    is published; a refused proposal writes nothing. Exit 1 when lint finds errors or the model
    does not fit."""
    import difflib

    from olares_pack.common import console
    from olares_pack.remote import oci
    from olares_pack.upstream import propose

    if engine_build and image_tag:
        raise click.UsageError("give --engine-build or --image-tag, not both")
    asked = propose.Asked(engine_build, image_tag, model_revision, quant, parse_date(date_text) if date_text else None)
    opts = _options(upstream_image, page_size)
    repo = Repo.of_apps(apps_dir)
    with repo.open(write=not dry_run, timeout=lock_timeout, purpose="propose"):
        with oci.RegistryClient() as client:
            prop = propose.plan_propose(repo, app_folder(app_ref, apps_dir), asked, client, opts)
        console.info(f"{prop.name}: draft {prop.version} (after {prop.old_version}): {prop.summary}")
        for kind, text in prop.changes:
            console.info(f"  {kind}: {text}")
        if prop.skipped:
            console.warn(prop.skipped)
        errors = [f for f in prop.findings if f.severity == "error"]
        console.info(f"lint: {len(errors)} error(s), {len(prop.findings) - len(errors)} other finding(s)")
        for f in sorted(prop.findings, key=lambda f: (f.severity != "error", f.chart, f.rule, f.message)):
            console.info(f"  {f.severity} {f.rule} ({f.chart}): {f.message}")
        if prop.verdict is not None:
            console.info(f"GPU memory on llama.cpp {prop.build}: {prop.verdict.line()}")
        elif prop.verdict_note:
            console.info(f"GPU memory: {prop.verdict_note}")
        if prop.diff_text:
            console.info(prop.diff_text.rstrip())
        console.info("not yet measured: no bench record for this version" if not prop.measured else "measured")
        if dry_run:
            text = "".join(difflib.unified_diff(prop.old_text.splitlines(True), prop.new_text.splitlines(True),
                                                repo.rel(prop.manifest_path), repo.rel(prop.manifest_path)))
            console.out.print(text, markup=False, highlight=False, end="")
        else:
            for path in propose.write_proposal(prop, repo):
                console.out.print(repo.rel(path), markup=False)
    bad = errors or (prop.verdict is not None and prop.verdict.verdict == "does not fit")
    return ExitCode.FINDINGS if bad else ExitCode.OK
