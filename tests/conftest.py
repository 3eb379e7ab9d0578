"""Shared fixtures: the bundled catalogue, a tree builder, and the golden-file switch."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from loopback_http import HTTP

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


# The modules that take longest, longest first (`--durations` of a warm `make test`, 2026-12-06):
# handed out in this order with `--dist loadscope --no-loadscope-reorder` (the Makefile's); by
# default pytest-xdist 3.8 orders modules by their number of tests, so the node's module (11 tests,
# ~220 s) started last, after a minute of others, and the run waited for it alone.
LONGEST_FIRST = ("test_node.py", "test_integrity.py", "test_workflow.py", "test_rehearse.py", "test_hostile.py",
                 "test_helmd.py", "test_layout.py", "test_download.py", "test_fuzz.py", "test_loop.py",
                 "test_propose.py", "test_pin.py", "test_import.py", "test_equivalence.py", "test_sweep.py",
                 "test_bench_engine.py")


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001 - the hook's signature
    # The tests keep many live objects (rendered charts, parsed documents, models) for the whole
    # run, and CPython's default threshold (a young-generation collection every 700 allocations)
    # scanned them again and again: test_hostile and test_fuzz used 14-20 % less CPU at 50,000.
    # Cycles are still collected, less often.
    gc.set_threshold(50_000, 50, 100)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def published_app(name: str, version: str):  # noqa: ANN201 - an App
    """A published version of a bundled app, as its release record holds it."""
    from olares_pack.catalogue import records
    from olares_pack.catalogue.repo import Repo

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
    shutil.copy(ROOT / "market-offer.json", root / "market-offer.json")
    return root


def tree_digest(root: Path) -> dict[str, str]:
    """Every file of the repository but olares-pack's own state (the lock, the verdict cache)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".olares-pack" not in p.relative_to(root).parts}


@contextmanager
def serving(source: Any, **options: Any) -> Iterator[str]:
    """olares-pack's market server on a loopback port, in a thread with its own event loop."""
    import asyncio
    import threading

    from olares_pack.market import server

    sock = server.listen("127.0.0.1", 0)
    try:  # the loop `serve` runs on
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    up = threading.Event()
    task: list[asyncio.Task[None]] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        task.append(loop.create_task(server.serve(source, sock, started=lambda _: up.set(), **options)))
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task[0])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert up.wait(30), "server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        loop.call_soon_threadsafe(task[0].cancel)
        thread.join(5)
        sock.close()


def serve_process(*args: str, **popen: Any) -> tuple[Any, str]:
    """`olares-pack serve ARGS` in a process of its own on a free loopback port, once it answers
    /health: the process and its base URL (the caller stops it)."""
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "olares_pack.cli", "serve", *args, "--port", str(port)], text=True, **popen)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            HTTP.get(f"{base}/health", timeout=1)
            return proc, base
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out = proc.communicate()[0]
                raise AssertionError(f"serve did not answer: {out or ''}") from None
            time.sleep(0.1)


@pytest.fixture(autouse=True)
def _rehearse_only_where_asked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`release` rehearses on the control plane when one is built (seconds per release): only the
    tests that ask for the control plane pay for it; the others release as on a machine without one.
    The commands those tests run (release, rehearse) rehearse on the session's API server instead of
    booting one each (seconds a boot): every rehearsal uninstalls what it installed. A node
    (`release`'s run on the node, tests/test_node.py) starts only where a test asks for `node`."""
    if "node" not in request.fixturenames:
        monkeypatch.setenv("OLARES_PACK_NODE", "0")
    if "control_plane" not in request.fixturenames:
        monkeypatch.setenv("OLARES_PACK_REHEARSE", "0")
        return
    from olares_pack.cluster import controlplane

    cluster = request.getfixturevalue("control_plane")

    @contextmanager
    def running(tools: Any) -> Iterator[Any]:  # noqa: ARG001 - the session's programs are the same
        yield cluster

    monkeypatch.setattr(controlplane, "running", running)


@pytest.fixture(scope="session")
def control_plane():  # noqa: ANN201 - a running olares_pack.cluster.controlplane.Cluster
    """A real kube-apiserver (the version Olares 1.12 installs) on etcd, and Helm at app-service's
    version, on loopback for the whole session. `make test` builds them (make control-plane);
    where they could not be built, the tests that need them skip, saying why."""
    from olares_pack.cluster import controlplane, tools

    found = tools.available()
    if found is None:
        # On CI (`make test` as root builds them) a missing control plane fails instead of skipping.
        (pytest.fail if os.environ.get("CI") else pytest.skip)(tools.missing_reason())
    with controlplane.running(found) as cluster:
        yield cluster
