"""Lint reads the shared (llmbase) form whole (issue #36): the engine's arguments wherever the chart
writes ENGINE_ARGS, each entrance's port against its Service, and the installer's rules on `ports`
entries and on the olares dependency of v1/v2 manifests, for the releases that run them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import APPS, build_file_tree

from olares_pack import olares as targets
from olares_pack.apps.load import load_app
from olares_pack.charts.source import from_folder
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.lint import LintOptions, lint_source
from olares_pack.render import app as render

NAME = "llamacppqwen36mtpone"
M, E = "OlaresManifest.yaml", "templates/engine.yaml"


@pytest.fixture(scope="module")
def shared_chart() -> dict[str, str]:
    """The bundled MTP app rendered for the current target: the shared form, ENGINE_ARGS both in
    the manifest's clone surface and in the engine template's fallback."""
    return render.render(load_app(APPS / NAME), targets.CURRENT)


def replace(files: dict[str, str], paths: tuple[str, ...], old: str, new: str) -> dict[str, str]:
    out = dict(files)
    for path in paths:
        assert old in out[path], (path, old)
        out[path] = out[path].replace(old, new)
    return out


def errors(tmp_path: Path, files: dict[str, str], **options: object) -> list:
    chart = build_file_tree(tmp_path / NAME, files)
    return [f for f in lint_source(from_folder(chart), LintOptions(**options)) if f.severity == "error"]  # type: ignore[arg-type]


def manifest_line(files: dict[str, str], needle: str) -> int:
    return next(n for n, line in enumerate(files[M].splitlines(), 1) if needle in line)


def test_the_rendered_shared_chart_is_clean(tmp_path: Path, shared_chart: dict[str, str]) -> None:
    assert errors(tmp_path, shared_chart) == []


PLANTED = [
    ("--spec-draft-n-max 3", "--draft-max 3", "engine.flag", "--draft-max was removed"),
    ("--spec-type draft-mtp", "--spec-type mtp", "engine.value", "--spec-type mtp: llama.cpp"),
    ("--jinja", "--jinja --bogus-flag 7", "engine.flag", "does not accept --bogus-flag"),
]


@pytest.mark.parametrize(("old", "new", "rule", "message"), PLANTED, ids=["removed-flag", "renamed-value", "unknown-flag"])
def test_a_fault_in_the_engine_args_default_of_the_manifest_is_an_error_at_its_line(
        tmp_path: Path, shared_chart: dict[str, str], old: str, new: str, rule: str, message: str) -> None:
    files = replace(shared_chart, (M,), old, new)
    found = errors(tmp_path, files)
    assert [(f.rule, f.file, f.line) for f in found] == [(rule, M, manifest_line(files, new))]
    envs = yaml.safe_load(files[M])["envs"]
    index = next(i for i, e in enumerate(envs) if e["envName"] == "ENGINE_ARGS")
    assert found[0].path == f"envs[{index}].default" and message in found[0].message


@pytest.mark.parametrize(("old", "new", "rule", "message"), PLANTED, ids=["removed-flag", "renamed-value", "unknown-flag"])
def test_a_fault_in_the_templates_fallback_default_is_an_error_at_its_line(
        tmp_path: Path, shared_chart: dict[str, str], old: str, new: str, rule: str, message: str) -> None:
    # the installer passes the manifest's default, which is still right: the template's own default
    # (what the engine gets where olaresEnv carries no ENGINE_ARGS) is checked all the same
    files = replace(shared_chart, (E,), old, new)
    found = errors(tmp_path, files)
    line = next(n for n, text in enumerate(files[E].splitlines(), 1) if "ENGINE_ARGS | default" in text)
    assert [(f.rule, f.file, f.line, f.path) for f in found] == [(rule, E, line, "ENGINE_ARGS default")]
    assert message in found[0].message


def test_all_three_faults_in_both_places_each_give_an_error(tmp_path: Path, shared_chart: dict[str, str]) -> None:
    files = shared_chart
    for old, new, _, _ in PLANTED:
        files = replace(files, (M, E), old, new)
    found = errors(tmp_path, files)
    assert sorted(f.rule for f in found) == ["engine.flag", "engine.flag", "engine.value"]
    assert {f.file for f in found} == {M}  # the template's text is the same arguments: reported once


def test_an_option_of_the_clone_dialog_is_checked_too(tmp_path: Path, shared_chart: dict[str, str]) -> None:
    manifest = yaml.safe_load(shared_chart[M])
    env = next(e for e in manifest["envs"] if e["envName"] == "ENGINE_ARGS")
    env["options"] = [{"title": "Default", "value": env["default"]},
                      {"title": "Short draft", "value": env["default"].replace("--spec-draft-n-max 3", "--draft-max 2")}]
    files = {**shared_chart, M: yaml.safe_dump(manifest, sort_keys=False, width=100000)}
    found = errors(tmp_path, files)
    i = manifest["envs"].index(env)
    assert [(f.rule, f.path) for f in found] == [("engine.flag", f"envs[{i}].options[1].value")]
    assert found[0].line is not None and "--draft-max" in files[M].splitlines()[found[0].line - 1]


def test_an_entrance_port_the_service_does_not_expose_is_a_policy_error(tmp_path: Path, shared_chart: dict[str, str]) -> None:
    files = replace(shared_chart, (M,), "    port: 8090\n", "    port: 8091\n")
    found = errors(tmp_path, files)
    assert [(f.rule, f.kind, f.path, f.line) for f in found] == \
        [("template.entrance-port", "policy", "entrances[0].port", manifest_line(files, "port: 8091"))]
    assert "8091 is not a port of Service 'llamacppqwen36mtpone' (8090)" in found[0].message
    # a policy error: the maintainer may ship it anyway
    assert errors(tmp_path, files, allow=("template.entrance-port",)) == []


def test_the_legacy_chart_entrance_is_checked_against_its_subchart_service(tmp_path: Path) -> None:
    files = render.render(load_app(APPS / NAME), targets.LEGACY)  # v1, its manifest rendered by the installer
    assert errors(tmp_path / "good", files) == []
    bad = replace(files, (M,), "    host: llamacppqwen36mtpone\n    port: 8000\n", "    host: llamacppqwen36mtpone\n    port: 8001\n")
    assert [f.rule for f in errors(tmp_path / "bad", bad)] == ["template.entrance-port"]


# ---- the installer's rules on ports[] and on the olares dependency of v1/v2 manifests


def test_port_names_with_underscores_are_refused_from_1_12_7_and_warned_before(
        tmp_path: Path, shared_chart: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    # the ports of the official isaaclab chart (beclab/apps), which the newest checker refuses
    manifest = yaml.safe_load(shared_chart[M])
    manifest["ports"] = [{"name": "isaaclab_udp", "host": "llamacpp", "port": 47998, "protocol": "udp", "exposePort": 47998},
                         {"name": "isaaclab_tcp", "host": "llamacpp", "port": 49100, "protocol": "tcp", "exposePort": 49100}]
    chart = build_file_tree(tmp_path / NAME, {**shared_chart, M: yaml.safe_dump(manifest, sort_keys=False, width=100000)})
    assert main(["lint", str(chart), "--format", "json"]) == ExitCode.FINDINGS  # the newest release: 1.12.7
    doc = json.loads(capsys.readouterr().out)
    ports = [f for f in doc["findings"] if f["rule"] == "manifest.ports"]
    assert [(f["severity"], f["path"]) for f in ports] == [("error", "ports[0].name"), ("error", "ports[1].name")]
    assert "'isaaclab_udp' must match ^[a-z0-9A-Z-]*$" in ports[0]["message"] and ports[0]["hint"] == "name: isaaclab-udp"
    main(["lint", str(chart), "--olares", "1.12.6", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    ports = [f for f in doc["findings"] if f["rule"] == "manifest.ports"]
    assert [f["severity"] for f in ports] == ["warning", "warning"]
    assert all("(refused from 1.12.7)" in f["message"] for f in ports)


@pytest.mark.parametrize(("entry", "field"), [
    ({"name": "api_tcp", "host": "api", "port": 4712}, "name"),
    ({"host": "api", "port": 4712}, "name"),
    ({"name": "api", "host": "API", "port": 4712}, "host"),
    ({"name": "api", "host": "api", "port": 70000}, "port"),
    ({"name": "api", "host": "api", "port": 4712, "exposePort": -1}, "exposePort"),
    ({"name": "api", "host": "api", "port": 4712, "protocol": "TCP"}, "protocol"),
])
def test_a_bad_ports_entry_is_refused(tmp_path: Path, shared_chart: dict[str, str], entry: dict, field: str) -> None:
    manifest = yaml.safe_load(shared_chart[M])
    manifest["ports"] = [entry]
    found = errors(tmp_path, {**shared_chart, M: yaml.safe_dump(manifest, sort_keys=False, width=100000)})
    assert [(f.rule, f.path) for f in found] == [("manifest.ports", f"ports[0].{field}")]


def test_good_ports_entries_and_a_duplicate_name(tmp_path: Path, shared_chart: dict[str, str]) -> None:
    manifest = yaml.safe_load(shared_chart[M])
    manifest["ports"] = [{"name": "api", "host": "llamacpp", "port": 8081},  # exposePort picked by the platform
                         {"name": "rtc-udp", "host": "llamacpp", "port": 8081, "exposePort": 46879, "protocol": "udp"}]
    assert errors(tmp_path, {**shared_chart, M: yaml.safe_dump(manifest, sort_keys=False, width=100000)}) == []
    manifest["ports"][1]["name"] = "api"
    found = errors(tmp_path, {**shared_chart, M: yaml.safe_dump(manifest, sort_keys=False, width=100000)})
    assert [(f.rule, f.path) for f in found] == [("manifest.ports", "ports[1].name")]


def legacy_chart(constraint: str | None) -> dict[str, str]:
    files = render.render(load_app(APPS / NAME), targets.LEGACY)
    entry = f'    - name: olares\n      type: system\n      version: "{targets.LEGACY.dependency}"\n'
    assert entry in files[M]
    if constraint is None:
        return replace(files, (M,), entry, "")
    return replace(files, (M,), entry, entry.replace(targets.LEGACY.dependency, constraint))


@pytest.mark.parametrize(("constraint", "says"), [
    (">=1.12.3-0", "admits 1.12.6, 2.0.0"),
    (">=1.12.0-0,<1.12.6", "admits 1.12.2"),
    (None, "no {name: olares, type: system} entry"),
])
def test_a_v1_manifest_outside_the_legacy_window_is_refused_from_1_12_6(tmp_path: Path, constraint: str | None, says: str) -> None:
    files = legacy_chart(constraint)
    found = [f for f in errors(tmp_path, files, olares_version="1.12.6") if f.rule == "manifest.legacy-window"]
    assert len(found) == 1 and says in found[0].message and found[0].kind == "installer"
    # 1.12.5 runs no checker at install: a warning that says from when it is refused
    chart = build_file_tree(tmp_path / "again" / NAME, files)
    earlier = [f for f in lint_source(from_folder(chart), LintOptions(olares_version="1.12.5")) if f.rule == "manifest.legacy-window"]
    assert [f.severity for f in earlier] == ["warning"] and "(refused from 1.12.6)" in earlier[0].message


def test_the_legacy_window_itself_passes(tmp_path: Path) -> None:
    files = legacy_chart(targets.LEGACY.dependency)
    assert not [f for f in lint_source(from_folder(build_file_tree(tmp_path / NAME, files)), LintOptions(olares_version="1.12.5"))
                if f.rule == "manifest.legacy-window"]
