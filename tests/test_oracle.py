"""The official checker (oac, built by `make oracle`) accepts every chart olares-pack renders and
every chart fixture; the tests skip, with the build's error, where the oracle could not be built."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import APPS

from olares_pack.charts.source import from_app
from olares_pack.lint.findings import RULES
from oracle import oracle  # noqa: F401 - the fixture

CHARTS = Path(__file__).resolve().parent / "data" / "charts"


@pytest.mark.parametrize("app", sorted(p.name for p in APPS.iterdir() if (p / "app.yaml").is_file()))
def test_bundled_apps_accepted_on_both_targets(oracle, app: str) -> None:  # noqa: F811
    for source in from_app(APPS / app / "app.yaml", ["legacy", "current"]):
        v = oracle.verdict_files(source.folder, source.files, source.binary)
        assert v.accepted, (source.label, v.errors)


EXPECTED = Path(__file__).resolve().parent / "data" / "expected"
FIXTURES = sorted([p for p in CHARTS.iterdir() if p.is_dir()] + [p for p in EXPECTED.glob("*/*") if (p / "Chart.yaml").is_file()])


@pytest.mark.parametrize("chart", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chart_fixtures_accepted(oracle, chart: Path) -> None:  # noqa: F811
    v = oracle.verdict(chart)
    assert v.accepted, (str(chart), v.errors)


# ---------------------------------------------------------------- refused fixtures: lint (1.12.6+) vs oac

DISAGREEMENTS = {k: v for k, v in json.loads((Path(__file__).parent / "data" / "oracle_disagreements.json").read_text()).items()
                 if not k.startswith("_")}


def refused_fixtures() -> dict[str, tuple[str, Callable[[dict[str, str]], dict[str, str]], dict[str, object]]]:
    from test_lint import CASES
    from test_lint_device import MORE_REFUSED

    out = {rule: case for rule, case in CASES.items() if RULES[rule].severity == "error"}
    out.update({rule: (target, mutate, {}) for rule, (target, mutate) in MORE_REFUSED.items()})
    return out


@pytest.mark.parametrize("rule", sorted(refused_fixtures()))
def test_lint_and_the_oracle_agree_on_refused_fixtures(oracle, tmp_path: Path, rule: str) -> None:  # noqa: F811
    from test_lint import NAME, base_files, lint_files

    target, mutate, options = refused_fixtures()[rule]
    files = mutate(base_files(target))
    findings = lint_files(tmp_path, files, **{**options, "olares_version": "1.12.6"})
    lint_refuses = any(f.severity == "error" and f.kind == "installer" for f in findings)
    verdict = oracle.verdict_files(NAME, files)
    if rule in DISAGREEMENTS:
        assert lint_refuses and verdict.accepted, f"listed as a disagreement ({DISAGREEMENTS[rule]}) but both agree: remove it"
    else:
        assert lint_refuses == (not verdict.accepted), (rule, verdict.errors, [(f.rule, f.message) for f in findings])


def test_every_listed_disagreement_names_an_error_rule() -> None:
    assert set(DISAGREEMENTS) <= {r for r, info in RULES.items() if info.severity == "error" and not info.policy}
    assert all(len(why) > 30 for why in DISAGREEMENTS.values())
