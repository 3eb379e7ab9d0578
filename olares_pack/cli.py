"""The `olares-pack` command: parse arguments, call the core, print, map errors to exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__, console, fsio, kube, render, targets
from .build import load_catalogue, render_catalogue
from .errors import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, InputError, OlaresPackError
from .manifest import App, MANIFEST_FILE, load_app

DEFAULT_APPS = Path("apps")
DEFAULT_OUT = Path("build/charts")

apps_dir_option = click.option(
    "--apps-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_APPS,
    show_default=True,
    help="Folder holding one <name>/app.yaml per app.",
)
target_option = click.option(
    "--target",
    "target_names",
    type=click.Choice(sorted(targets.TARGETS)),
    multiple=True,
    help="Olares target: current (1.12.6+, manifest 0.12.0/v3) or legacy (1.12.3-1.12.5, "
    "0.10.0/v2). Repeatable. Default: the targets the app declares.",
)


def resolve_app(ref: str, apps_dir: Path) -> App:
    """An app by name (looked up in the apps folder), by folder, or by app.yaml path."""
    path = Path(ref)
    if path.exists():
        return load_app(path)
    candidate = apps_dir / ref / MANIFEST_FILE
    if candidate.exists():
        return load_app(candidate)
    raise InputError(f"{ref}: no such app (looked for {path} and {candidate})")


def show_warnings(app: App) -> None:
    for w in app.warnings():
        console.warn(w)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="olares-pack")
def cli() -> None:
    """Turn app manifests for GPU LLM servers into Olares app charts."""


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
    app = resolve_app(app_ref, apps_dir)
    show_warnings(app)
    for name in target_names or app.targets:
        t = targets.get(name)
        dest = out / t.name / app.name
        fsio.write_tree(render.render(app, t), dest)
        console.out.print(str(dest))
    return EXIT_OK


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
def build_cmd(apps_dir: Path, target_names: tuple[str, ...], out: Path) -> int:
    """Render every app under --apps-dir for each of its targets."""
    apps = load_catalogue(apps_dir)
    for app in apps:
        show_warnings(app)
    charts = render_catalogue(apps, list(target_names) or None)
    for chart in charts:
        dest = out / chart.relpath
        fsio.write_tree(chart.files, dest)
        console.out.print(str(dest))
    console.info(f"rendered {len(charts)} chart(s) from {len(apps)} app(s) into {out}")
    return EXIT_OK


@cli.command("lint")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text: tables for a terminal; json: for scripts; github: workflow annotations.")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1), and an unpinned image is an error.")
@target_option
@click.option("--olares", "olares_version", metavar="VERSION",
              help="Olares OS version the charts must install on (e.g. 1.12.6): charts whose olares "
              "dependency excludes it are errors.")
@click.option("--kube-version", default=kube.DEFAULT_KUBE_VERSION, show_default=True,
              help="Kubernetes version whose schemas validate the rendered objects (Olares ships k3s 1.32).")
@click.option("--engine-build", metavar="BUILD",
              help="Flag registry for llama-server containers whose build olares-pack cannot tell (e.g. b11434).")
def lint_cmd(paths: tuple[Path, ...], fmt: str, strict: bool, target_names: tuple[str, ...],
             olares_version: str | None, kube_version: str, engine_build: str | None) -> int:
    """Lint chart folders, .tgz charts, app manifests (rendered for each target) or folders of them."""
    from .lint import LintOptions, lint_sources
    from .lint.output import PRINTERS
    from .lint.source import resolve

    if olares_version:
        targets.parse_os_version(olares_version)
    sources = resolve(list(paths), list(target_names) or None)
    options = LintOptions(kube_version=kube_version, olares_version=olares_version, engine_build=engine_build, strict=strict)
    findings = lint_sources(sources, options)
    PRINTERS[fmt](findings, [s.label for s in sources])
    failing = {"error", "warning"} if strict else {"error"}
    return EXIT_FINDINGS if any(f.severity in failing for f in findings) else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    try:
        code = cli.main(args=argv, prog_name="olares-pack", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = EXIT_INPUT
    except click.Abort:
        console.error("aborted")
        code = EXIT_INPUT
    except OlaresPackError as exc:
        console.error(str(exc))
        code = exc.exit_code
    if argv is None:
        sys.exit(code or 0)
    return code or 0


if __name__ == "__main__":  # pragma: no cover
    main()
