"""A control plane outlives nothing: a process that runs one and is stopped by SIGTERM (a CI job's
timeout, `kill`) or SIGKILL leaves no etcd, no kube-apiserver and, once the next one starts, no
state folder (issue #52: a `release` stopped during its rehearsal left both programs running)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from olares_pack.cluster import controlplane, tools

pytestmark = pytest.mark.skipif(tools.available() is None, reason="control plane not built (make control-plane)")

CHILD = textwrap.dedent("""
    import sys, time
    from olares_pack.cluster import controlplane, tools
    with controlplane.running(tools.available()) as cluster:
        print(cluster.kubeconfig.parent, flush=True)
        time.sleep(600)
""")


def programs_of(folder: Path) -> list[int]:
    """The processes whose command line names the control plane's folder (etcd, kube-apiserver)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(folder) in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def start_child() -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    folder = Path(child.stdout.readline().strip())
    assert folder.is_dir() and len(programs_of(folder)) == 2, folder
    return child, folder


def wait_gone(folder: Path, timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := programs_of(folder)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_sigterm_stops_etcd_and_the_api_server_and_removes_the_folder() -> None:
    child, folder = start_child()
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 128 + signal.SIGTERM
    assert wait_gone(folder) == []
    assert not folder.exists()


def test_sigkill_takes_the_programs_down_and_the_next_start_removes_the_folder() -> None:
    child, folder = start_child()
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert wait_gone(folder) == []
    assert folder.exists()  # nothing ran in the killed process
    controlplane.sweep()
    assert not folder.exists()
