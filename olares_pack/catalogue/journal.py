"""All-or-nothing writes of several repository files (packages, records, app.yaml, the ledger).

A transaction stages every file under .olares-pack/staging/ (fsync'd), then writes a journal
naming each staged file and its destination (temporary name, fsync, rename: the commit point),
then renames the staged files into place in the order they were given, and removes the journal.
A crash before the journal exists leaves the repository untouched and `recover` drops the
staging folder; a crash after it is completed by `recover`, which every command that reads or
writes the repository runs first under the repository lock. Nothing is ever written beside a
destination, so no temporary file can be left in the tree.

`OLARES_PACK_FAULT=N` kills the process (SIGKILL, no clean-up) at the N-th write step: the tests
and measurements/release_crash.py use it to crash a release at every step.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from olares_pack.common.errors import InputError

STATE_DIR = ".olares-pack"
JOURNAL = "journal.json"
STAGING = "staging"

_faults = 0


def fault_point() -> None:
    """Die here if OLARES_PACK_FAULT names this step (counted from 1 over the whole process)."""
    global _faults
    at = os.environ.get("OLARES_PACK_FAULT")
    if not at:
        return
    _faults += 1
    if str(_faults) == at:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(path, 0o644)


@dataclass
class Transaction:
    root: Path
    writes: dict[Path, bytes] = field(default_factory=dict)  # destination -> bytes, in commit order

    def write(self, path: Path, data: bytes | str) -> None:
        self.writes[Path(path)] = data.encode("utf-8") if isinstance(data, str) else data

    def commit(self) -> list[Path]:
        """Write everything or (after a crash) nothing; returns the destinations in order."""
        if not self.writes:
            return []
        state = self.root / STATE_DIR
        staging = state / STAGING
        if (state / JOURNAL).exists() or staging.exists():
            raise InputError(f"{state}: an interrupted write is pending; it is recovered first (internal error)")
        staging.mkdir(parents=True)
        entries = []
        for i, (dest, data) in enumerate(self.writes.items()):
            name = f"{i:04d}"
            _write_synced(staging / name, data)
            entries.append({"staged": name, "target": _rel(dest, self.root), "sha256": hashlib.sha256(data).hexdigest()})
            fault_point()
        _fsync_dir(staging)
        tmp = state / (JOURNAL + ".tmp")
        _write_synced(tmp, json.dumps({"writes": entries}, indent=1).encode())
        fault_point()
        os.replace(tmp, state / JOURNAL)  # the commit point
        _fsync_dir(state)
        fault_point()
        _apply(self.root, entries)
        return list(self.writes)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise InputError(f"{path}: outside the repository {root}; a release only writes inside it") from None


def _apply(root: Path, entries: list[dict[str, str]]) -> None:
    state = root / STATE_DIR
    staging = state / STAGING
    touched: set[Path] = set()
    for e in entries:
        staged, dest = staging / e["staged"], root / e["target"]
        if staged.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, dest)
            touched.add(dest.parent)
            fault_point()
        elif not dest.is_file() or hashlib.sha256(dest.read_bytes()).hexdigest() != e["sha256"]:
            raise InputError(f"{state / JOURNAL}: {e['target']} is neither staged nor in place; "
                             "restore the repository from git and run the release again")
    for d in sorted(touched):
        _fsync_dir(d)
    (state / JOURNAL).unlink()
    _fsync_dir(state)
    fault_point()
    shutil.rmtree(staging, ignore_errors=True)


def recover(root: Path) -> str | None:
    """Finish or undo a write a crash interrupted; say which, or None when there was none."""
    state = root / STATE_DIR
    journal, staging, tmp = state / JOURNAL, state / STAGING, state / (JOURNAL + ".tmp")
    if journal.exists():
        try:
            entries = json.loads(journal.read_text(encoding="utf-8"))["writes"]
        except (ValueError, KeyError) as exc:
            raise InputError(f"{journal}: unreadable journal ({exc}); restore the repository from git") from None
        _apply(root, entries)
        tmp.unlink(missing_ok=True)
        return "completed an interrupted write: " + ", ".join(e["target"] for e in entries)
    if staging.exists() or tmp.exists():
        # Staged files without a journal never reached the tree; an empty staging folder is what
        # a crash between removing the journal and removing the folder leaves.
        undone = staging.exists() and any(staging.iterdir())
        shutil.rmtree(staging, ignore_errors=True)
        tmp.unlink(missing_ok=True)
        return "rolled back an interrupted write (nothing of it had reached the repository)" if undone else None
    return None


def pending(root: Path) -> bool:
    state = root / STATE_DIR
    return (state / JOURNAL).exists() or (state / STAGING).exists() or (state / (JOURNAL + ".tmp")).exists()
