"""Property-based: whatever a manifest or a command line says, olares-pack answers with a result
or a clear error (exit 0, 1 or 2), never a traceback. A longer run: measurements/fuzz_bench.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import APPS, ROOT
from fuzzing import command_lines, dump, manifests
from hypothesis import HealthCheck, given, settings

from olares_pack import olares as targets
from olares_pack.apps.load import parse_app
from olares_pack.charts import helm, package
from olares_pack.cli import main
from olares_pack.common.errors import InputError
from olares_pack.common.yamlsrc import safe_load
from olares_pack.render import app as render


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests())
def test_a_mutated_manifest_loads_and_renders_or_is_refused(data: dict) -> None:
    try:
        app = parse_app(dump(data), Path("app.yaml"))
    except InputError as exc:
        assert exc.problems or str(exc)  # a located, readable problem
        return
    for name in app.targets:
        files = render.render(app, targets.get(name))
        for path, text in files.items():
            if path.endswith(".yaml") and "templates/" not in path:
                if "{{" in text:  # the v2 shared form's manifest: as the installer reads it, rendered
                    chart = package.build_archive(app.name, {"Chart.yaml": files["Chart.yaml"], "templates/m.yaml": text})
                    with helm.load_bytes(chart) as c:
                        text = next(iter(helm.render(c, helm.installer_values(app.name, [app.name]), namespace="ns").values()))
                assert isinstance(safe_load(text), dict), path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "repo"
    shutil.copytree(APPS, root / "apps")
    shutil.copytree(ROOT / "packages", root / "packages")
    shutil.copy(ROOT / "market-index.json", root / "market-index.json")
    shutil.copy(ROOT / "market-offer.json", root / "market-offer.json")
    return root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(command_lines())
def test_any_command_line_exits_0_1_or_2(workdir: Path, args: list[str]) -> None:
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        code = main(args)
    finally:
        os.chdir(cwd)
    assert code in (0, 1, 2), args
