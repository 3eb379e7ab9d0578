"""What keeps the programs a rehearsal starts from outliving it.

- SIGTERM and SIGHUP (a CI job's timeout, `kill`, a closed terminal) end Python without running
  any `finally`: the control plane's processes live in sessions of their own and would keep
  running (measured: a `release` stopped by SIGTERM during its rehearsal left etcd and
  kube-apiserver running). While `terminating()` is active they raise SystemExit in the main
  thread instead, so every context manager stops what it started; a second signal during that
  cleanup is ignored so the cleanup finishes.
- SIGKILL runs nothing: each program is started with the parent-death signal (Linux prctl
  PR_SET_PDEATHSIG), so the kernel stops it when the process that started it dies; what it leaves
  on disk is swept at the next start (`owner_alive`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_HANDLED = (signal.SIGTERM, signal.SIGHUP)


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A Popen preexec_fn: the child gets `sig` when its parent thread dies (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    prctl = getattr(libc, "prctl", None)
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return preexec


class Terminated(SystemExit):
    """Raised in the main thread by SIGTERM/SIGHUP while a cluster runs."""


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """SIGTERM/SIGHUP raise Terminated (exit code 128 + signal) while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # Per signal: one a program already handles is its own; one ignored (nohup ignores SIGHUP) does
    # not end the process; only one left to the default, which ends it without any finally, is ours.
    previous = {s: h for s in _HANDLED if (h := signal.getsignal(s)) in (signal.SIG_DFL, None)}
    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:
            return  # the first signal's cleanup is running: let it finish
        fired.append(signum)
        raise Terminated(128 + signum)

    for s in previous:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def write_owner(folder: Path) -> None:
    """Record which process owns a state folder (a later start sweeps it once that process is gone)."""
    (folder / "owner").write_text(f"{os.getpid()}\n", encoding="utf-8")


def owner_alive(folder: Path) -> bool:
    try:
        pid = int((folder / "owner").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
