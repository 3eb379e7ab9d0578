"""Where a catalogue lives (apps, records, packages, the ledger) and how commands open it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from olares_pack.catalogue import DEFAULT_LOCK_TIMEOUT, MANIFEST_FILE, journal  # noqa: F401 - MANIFEST_FILE: repo.MANIFEST_FILE, as before
from olares_pack.catalogue.lock import RepoLock

INDEX_FILE = "market-index.json"
OFFER_FILE = "market-offer.json"  # beside the ledger: what the market offers each OS line (catalogue/offer.py)
LOCK_FILE = "model.lock.json"  # GGUF metadata of an app's models (gguf_meta); `auto` fields derive from it
PACKAGES_DIR = "packages"
RELEASES_DIR = "releases"


@dataclass(frozen=True)
class Repo:
    """One catalogue, relative to one root: apps/, packages/, market-index.json, .olares-pack/."""

    root: Path
    apps_dir: Path
    packages_dir: Path
    index_file: Path

    @classmethod
    def at(cls, root: Path, apps_dir: Path | None = None) -> Repo:
        return cls(root, apps_dir or root / "apps", root / PACKAGES_DIR, root / INDEX_FILE)

    @classmethod
    def of_apps(cls, apps_dir: Path) -> Repo:
        """The catalogue whose apps folder is `apps_dir` (the CLI's --apps-dir): rooted beside it."""
        return cls.at(apps_dir.resolve().parent, apps_dir)

    @property
    def state_dir(self) -> Path:
        return self.root / journal.STATE_DIR

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def package_path(self, target: str, name: str, version: str) -> Path:
        return self.packages_dir / target / f"{name}-{version}.tgz"

    def app_dirs(self) -> list[Path]:
        """App folders (holding an app.yaml), sorted by name, never in directory order."""
        from olares_pack.common.errors import InputError

        if not self.apps_dir.is_dir():
            raise InputError(f"{self.apps_dir}: no such directory")
        return sorted(p for p in self.apps_dir.iterdir() if (p / MANIFEST_FILE).is_file())

    def records_dir(self, name: str) -> Path:
        return self.apps_dir / name / RELEASES_DIR

    @contextlib.contextmanager
    def open(self, *, write: bool, timeout: float = DEFAULT_LOCK_TIMEOUT, purpose: str = "release") -> Iterator[Repo]:
        """Hold the repository for a command: exclusively to write, shared to read. Either way an
        interrupted write is finished (or undone) first, so every command sees a whole state."""
        lock = self.state_dir / "lock"
        if not write and journal.pending(self.root):
            with RepoLock(lock, timeout=timeout, purpose="recovery"):
                self._recover()
        with RepoLock(lock, shared=not write, timeout=timeout, purpose=purpose):
            if write:
                self._recover()
            yield self

    def _recover(self) -> None:
        from olares_pack.common import fsio

        fsio.sweep(self.state_dir / "cache")
        said = journal.recover(self.root)
        if said:
            from olares_pack.common import console

            console.warn(said)
