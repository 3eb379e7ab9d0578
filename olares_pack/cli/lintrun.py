"""What `lint` does, without click: the command's body, and its argv read directly when it is
plain (paths and the options' usual spellings), so that a lint run imports neither click nor the
group (some 20 ms of a process that lints a few dozen charts in 0.3 s). Anything else, help
included, goes through click (olares_pack.cli.lint), which calls run() with what it parsed;
tests/test_lint_cli_fast.py keeps the two readings in step."""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack import olares
from olares_pack.common import console
from olares_pack.common.errors import ExitCode, InputError

if TYPE_CHECKING:
    from olares_pack.charts.source import ChartSource
    from olares_pack.lint.runner import ChartResult

FORMATS = ("text", "json", "github")

# spelling -> (parameter, how it is given): a flag, one value (the last one given counts), or a
# value that may be repeated
OPTIONS: dict[str, tuple[str, str]] = {
    "--format": ("fmt", "value"),
    "--strict": ("strict", "flag"),
    "--target": ("target_names", "repeated"),
    "--olares": ("olares_version", "value"),
    "--kube-version": ("kube_version", "value"),
    "--engine-build": ("engine_build", "value"),
    "--helm-lint": ("helm_lint", "flag"),
    "-j": ("jobs", "value"),
    "--jobs": ("jobs", "value"),
    "--allow": ("allow", "repeated"),
    "--explain": ("explain", "value"),
    "--online": ("online", "flag"),
}


def defaults() -> dict[str, Any]:
    return {"paths": (), "fmt": "text", "strict": False, "target_names": (), "olares_version": None,
            "kube_version": olares.DEFAULT_KUBE_VERSION, "engine_build": None, "helm_lint": False, "jobs": 1,
            "allow": (), "explain": None, "online": False}


def parse_plain(args: list[str]) -> dict[str, Any] | None:
    """lint's parameters from its arguments (after `lint`) as click reads them, or None where
    click must read them: help, an option spelt otherwise (`-j4`, `--format json` only), `--`, a
    value that starts with `-` or that click would refuse or convert (a format or target it does
    not offer, jobs not a plain number of at least 1), an empty word, shell completion."""
    if "_OLARES_PACK_COMPLETE" in os.environ:
        return None
    params = defaults()
    paths: list[Path] = []
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word or word == "-":
            return None
        if not word.startswith("-"):
            paths.append(Path(word))
            continue
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name not in OPTIONS:
            return None
        param, how = OPTIONS[name]
        if how == "flag":
            if eq:
                return None
            params[param] = True
            continue
        if not eq:
            if i >= len(args):
                return None
            value = args[i]
            i += 1
        if not value or value.startswith("-"):
            return None
        if param == "fmt" and value not in FORMATS:
            return None
        if param == "target_names" and value not in olares.TARGETS:
            return None
        if param == "jobs":
            if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:
                return None
            params[param] = int(value)
        elif how == "repeated":
            params[param] += (value,)
        else:
            params[param] = value
    params["paths"] = tuple(paths)
    return params


def plain_command(args: list[str]) -> Callable[[], int] | None:
    """`lint ARGS` as a call, when parse_plain can read ARGS."""
    params = parse_plain(args)
    return None if params is None else (lambda: run(**params))


@contextmanager
def _sparse_collections() -> Iterator[None]:
    """A lint allocates millions of small containers (every rendered document's objects) and makes
    few reference cycles: at the collector's default pace (a young collection every 700
    allocations, a full one every 100 of those) it scanned the same live objects over and over,
    0.27-0.42 s of a 198-chart lint under load (600 collections), against 0.02-0.03 s at this
    pace for 8 MB more at the peak. Restored after, for a caller that goes on (the tests)."""
    previous = gc.get_threshold()
    gc.set_threshold(20000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@_sparse_collections()
def run(paths: tuple[Path, ...], fmt: str, strict: bool, target_names: tuple[str, ...], olares_version: str | None,
        kube_version: str, engine_build: str | None, helm_lint: bool, jobs: int, allow: tuple[str, ...],
        explain: str | None, online: bool) -> int:
    from olares_pack.lint import LintOptions, lint_charts
    from olares_pack.lint.output import PRINTERS, print_rule

    if explain:
        return print_rule(explain)
    if not paths:
        raise InputError("lint needs a chart, an app or a folder (or --explain RULE)")
    from olares_pack.charts.source import offered_to, resolve

    if olares_version:
        olares.parse_os_version(olares_version)
    from olares_pack.lint.findings import allowable
    for rule in allow:
        allowable(rule)
    sources = resolve(list(paths), list(target_names) or None)
    if olares_version and not target_names:
        sources, skipped = offered_to(sources, olares_version)
        for src in skipped:
            profile = olares.get(src.target or "")
            console.info(f"{src.label}: not offered to Olares {olares_version} (the {profile.name} target serves "
                         f"{profile.olares}); not linted (--target {profile.name} lints it anyway)")
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
            from olares_pack.cli.apps import online_check  # --online only: the catalogue's modules stay unloaded

            seen[key] = online_check(src.app)
        checked = seen[key]
        result.findings.extend(Finding(rule, severity, result.label, "app.yaml", path, message)  # type: ignore[arg-type]
                               for rule, severity, path, message in checked)  # severity: "error" or "warning"
        result.findings.sort(key=Finding.sort_key)
