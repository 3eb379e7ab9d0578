"""Shared fixtures: the bundled catalogue, a tree builder, and the golden-file switch."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "apps"
EXPECTED = Path(__file__).resolve().parent / "data" / "expected"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/data/expected/ from the current renderer instead of comparing",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def build_file_tree(root: Path, files: dict[str, str]) -> Path:
    """Write a dict of relative path -> text under root."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root
