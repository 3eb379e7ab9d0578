"""Shared fixtures: the bundled catalogue, a tree builder, and the golden-file switch."""

from __future__ import annotations

import hashlib
import shutil
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


def published_app(name: str, version: str):  # noqa: ANN201 - an App
    """A published version of a bundled app, as its release record holds it."""
    from olares_pack import records
    from olares_pack.repo import Repo

    return records.app_of(records.read(Repo.at(ROOT), name, version))


def build_file_tree(root: Path, files: dict[str, str]) -> Path:
    """Write a dict of relative path -> text under root."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh copy of the catalogue: apps with their release records, packages and the ledger."""
    root = tmp_path / "repo"
    shutil.copytree(APPS, root / "apps")
    shutil.copytree(ROOT / "packages", root / "packages")
    shutil.copy(ROOT / "market-index.json", root / "market-index.json")
    return root


def tree_digest(root: Path) -> dict[str, str]:
    """Every file of the repository but olares-pack's own state (the lock, the verdict cache)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".olares-pack" not in p.relative_to(root).parts}
