"""`olares-pack --help` stays light: the group lists its commands without importing them.

Each check runs a fresh interpreter, since this test process has long since imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from olares_pack.cli import group

# What a run that only prints the command list has no use for: the Helm wrappers, the pydantic
# model graph, the chart renderer and its template engine, YAML round-tripping, rich tables, HTTP
# clients and numerical libraries. Each costs tens of milliseconds or more to import.
DENY = (
    "olares_pack.charts.helm",
    "olares_pack.apps.manifest",
    "olares_pack.catalogue.repo",
    "olares_pack.lint",
    "olares_pack.market.server",
    "olares_pack.render",
    "olares_pack.importing",
    "pydantic",
    "rich.table",
    "rich.console",
    "jinja2",
    "ruamel",
    "yaml",
    "numpy",
    "huggingface_hub",
    "httpx",
    "requests",
    "semver",
)

PROBE = """
import contextlib, io, json, sys
from olares_pack.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def run_fresh(*args: str) -> dict:
    # 80 columns, as where no terminal and no COLUMNS is: `--help` is then the kept rendering
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": "80"})
    return json.loads(done.stdout)


def denied(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == d or m.startswith(d + ".") for d in DENY)]


def test_help_imports_nothing_on_the_deny_list() -> None:
    got = run_fresh("--help")
    assert got["code"] == 0
    assert "serve" in got["out"] and "lint" in got["out"]
    assert denied(got["modules"]) == []
    # No command module either: the list comes from the group's table, or is click's rendering of
    # it kept in helptext (then neither click nor the group is imported).
    assert [m for m in got["modules"] if m.startswith("olares_pack.cli.") and m not in
            ("olares_pack.cli.entry", "olares_pack.cli.group", "olares_pack.cli.helptext")] == []
    assert "click" not in got["modules"]


def _click_help(columns: int) -> str:
    """What click itself prints for `olares-pack --help` where the terminal is COLUMNS wide (in a
    fresh interpreter: click keeps a command's help option from the first context built for it)."""
    code = "from olares_pack.cli.group import cli; cli.main(['--help'], prog_name='olares-pack')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": str(columns)})
    return done.stdout


@pytest.mark.parametrize("columns", [60, 79, 80, 200])
def test_the_group_help_is_clicks_at_every_width(columns: int) -> None:
    """`--help` prints the rendering helptext keeps from 80 columns on, click's own below: either
    way what click prints. A command added or a summary changed without `make docs` fails here."""
    from olares_pack.cli import helptext

    want = _click_help(columns)
    if columns >= helptext.WIDTH:
        assert want == helptext.TEXT
    elif columns == 60:
        assert want != helptext.TEXT  # narrower, click wraps otherwise: the kept text would be wrong there
    for flag in ("--help", "-h"):
        done = subprocess.run([sys.executable, "-m", "olares_pack.cli", flag], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": str(columns)}, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, want, "")


def test_a_command_imports_its_module_when_it_runs() -> None:
    got = run_fresh("lint", "--help")
    assert got["code"] == 0
    assert "olares_pack.cli.lint" in got["modules"]
    assert "olares_pack.cli.vram" not in got["modules"]


def test_the_deny_list_catches_an_eager_import() -> None:
    # The check is only worth something if it sees a heavy import when one happens.
    done = subprocess.run([sys.executable, "-c", "import sys, olares_pack.cli.lint; print(' '.join(sys.modules))"],
                          capture_output=True, text=True, check=True)
    assert denied(done.stdout.split()) != []


@pytest.mark.parametrize("name", sorted(group.COMMANDS))
def test_the_listed_summary_is_the_commands_own(name: str) -> None:
    from olares_pack.cli import cli

    cmd = cli.commands[name]
    module, summary = group.COMMANDS[name]
    assert cmd.callback.__module__ == f"olares_pack.cli.{module}"
    for width in (30, 45, 80, 10**6):
        assert click.Command(name, help=summary).get_short_help_str(width) == cmd.get_short_help_str(width)


def test_every_registered_command_is_in_the_table() -> None:
    from olares_pack.cli import cli

    assert sorted(cli.commands) == sorted(group.COMMANDS)
