"""A plain `lint` argv is read without click (olares_pack.cli.lintrun): the same parameters as
click's reading of it, and click's own reading wherever the plain one declines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from olares_pack.cli import lintrun
from olares_pack.cli.lint import lint_cmd

PLAIN = [
    ["charts"],
    ["a", "b/c.tgz", "--format", "json"],
    ["--olares", "1.12.6", "x"],
    ["--olares=1.12.6", "--format=github", "x", "--strict"],
    ["--target", "current", "--target", "legacy", "app.yaml"],
    ["-j", "3", "x", "--jobs", "2", "--helm-lint", "--online"],
    ["--allow", "model.moved", "--allow", "image.unpinned", "--engine-build", "b9101", "x"],
    ["--kube-version", "1.31.0", "--explain", "engine.parse"],
    [],
]
DECLINED = [
    ["-h"],
    ["--help"],
    ["-j4", "x"],
    ["--format", "xml", "x"],
    ["--jobs", "0", "x"],
    ["--jobs", "+3", "x"],
    ["--target", "nope", "x"],
    ["--", "-x"],
    ["-"],
    [""],
    ["--strict=yes"],
    ["--olares"],
    ["--olares", "--strict"],
    ["--unknown", "x"],
    ["--form", "json", "x"],
]


@pytest.mark.parametrize("args", PLAIN)
def test_a_plain_argv_reads_as_click_reads_it(args: list[str]) -> None:
    assert lintrun.parse_plain(args) == lint_cmd.make_context("lint", list(args)).params


@pytest.mark.parametrize("args", DECLINED)
def test_anything_else_is_left_to_click(args: list[str]) -> None:
    assert lintrun.parse_plain(args) is None


def test_shell_completion_is_left_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_OLARES_PACK_COMPLETE", "bash_source")
    assert lintrun.parse_plain(["x"]) is None


def test_every_option_of_the_command_is_known() -> None:
    for param in lint_cmd.params:
        if param.param_type_name != "option":
            continue
        for spelling in (*param.opts, *param.secondary_opts):
            assert lintrun.OPTIONS.get(spelling, ("",))[0] == param.name, spelling
    assert lintrun.defaults() == lint_cmd.make_context("lint", []).params


def test_a_plain_lint_run_imports_neither_click_nor_rich() -> None:
    probe = ("import contextlib, io, json, sys\nfrom olares_pack.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(sys.argv[1:])\n"
             "print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich'))]))")
    done = subprocess.run([sys.executable, "-c", probe, "lint", "--explain", "engine.parse"],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == [0, []]
