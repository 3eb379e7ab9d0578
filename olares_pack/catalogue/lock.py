"""One writer at a time: an advisory lock on the repository (flock on .olares-pack/lock).

The kernel drops the lock when its holder dies, so a killed release never leaves a stale lock;
the file only says who holds it and since when, for the message a waiting command prints.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from olares_pack.common.errors import LockTimeout

POLL_SECONDS = 0.05




class RepoLock:
    def __init__(self, path: Path, *, shared: bool = False, timeout: float = 300.0, purpose: str = "") -> None:
        self.path = path
        self.shared = shared
        self.timeout = timeout
        self.purpose = purpose
        self._fd: int | None = None

    def __enter__(self) -> RepoLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            if self.shared:
                return self  # a read-only checkout: nobody can be writing to it through us
            raise
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self.holder()
                    os.close(fd)
                    raise LockTimeout(
                        f"{self.path.parent.parent}: {holder}; waited {self.timeout:g} s "
                        "(try again when it is done, or raise --lock-timeout)") from None
                time.sleep(POLL_SECONDS)
        self._fd = fd
        if not self.shared:
            # The wall clock only ever reaches this message, never an output file.
            info = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose,
                    "since": dt.datetime.now().astimezone().isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if not self.shared:
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def holder(self) -> str:
        """Who holds the lock, as far as its file says."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            info = {}
        if not info:
            return "another olares-pack command is reading the repository"
        what = info.get("purpose") or "a release"
        return (f"another {what} is in progress since {info.get('since', '?')} "
                f"(pid {info.get('pid', '?')} on {info.get('host', '?')})")
