"""The official checker (oac, built by `make oracle`) accepts every chart olares-pack renders and
every chart fixture; the tests skip, with the build's error, where the oracle could not be built."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import APPS
from oracle import oracle  # noqa: F401 - the fixture

from olares_pack.lint.source import from_app

CHARTS = Path(__file__).resolve().parent / "data" / "charts"


@pytest.mark.parametrize("app", sorted(p.name for p in APPS.iterdir() if (p / "app.yaml").is_file()))
def test_bundled_apps_accepted_on_both_targets(oracle, app: str) -> None:  # noqa: F811
    for source in from_app(APPS / app / "app.yaml", ["legacy", "current"]):
        v = oracle.verdict_files(source.folder, source.files, source.binary)
        assert v.accepted, (source.label, v.errors)


@pytest.mark.parametrize("chart", sorted(p.name for p in CHARTS.iterdir() if p.is_dir()))
def test_chart_fixtures_accepted(oracle, chart: str) -> None:  # noqa: F811
    v = oracle.verdict(CHARTS / chart)
    assert v.accepted, (chart, v.errors)
