"""Helm at app-service's version against a cluster's kubeconfig, with its own (temporary) config,
cache and data folders so that a rehearsal never reads or writes the user's.

The calls a rehearsal makes (install, upgrade, uninstall, status, get manifest, template) go to
helmd (olares_pack/cluster/helmd): the Helm SDK, helm.sh/helm/v3 at the version the CLI is, as one
long-lived process per kubeconfig. One CLI process per call cost 0.3-0.7 s of CPU for an install
or upgrade and 0.1 s for an uninstall, most of it redone in every process: Go's start, reading the
kubeconfig, API discovery, the OpenAPI documents fetched and parsed for validation; a test-suite
run makes ~550 calls. helmd keeps the kubectl factory, discovery and those documents across calls
and answers what the CLI would have printed for the same call (stdout and the `Error: ...` line),
so `Result` reads as it did. The SDK is also the faithful engine: app-service calls action.Install,
action.Upgrade and action.Uninstall, not the CLI (beclab/Olares framework/app-service/pkg/helm/helm.go
InstallCharts, UpgradeCharts, UninstallCharts).

- One daemon per kubeconfig per process, started on first use and stopped by `close` (the control
  plane calls it when it stops) or at exit; every thread calls it at once (rehearse/live.py runs
  device slots side by side) and a reader thread hands each answer to its caller.
- It is started from a thread that lives as long as the process: the parent-death signal that stops
  it when this process is SIGKILLed fires when the *thread* that started it ends (prctl(2)), and a
  worker thread of a pool ends long before the process does.
- The post-renderer runs with the Helm object's environment as the CLI's would have (live.py sets
  the device slot in it): helmd merges what differs from its own environment over it.
- `run` is the CLI, for anything else; so is every call where helmd is not built here (`release
  --kubeconfig` builds nothing) or with `cli=True` (the tests compare the two).
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import queue
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from olares_pack.cluster import lifetime, tools
from olares_pack.common.errors import OlaresPackError


class Cluster(Protocol):
    """What Helm needs of a cluster (controlplane.Cluster has it; controlplane imports this module
    to stop a cluster's daemon, so the type lives here, below it)."""

    kubeconfig: Path
    helm: Path  # the CLI, where helmd is not built

TIMEOUT = 300
# A hook Job never finishes without a kubelet and Helm would wait for it until the timeout: hooks
# are not run (their objects are not created), on a bare server and on a user's cluster alike.
NO_HOOKS = ("--no-hooks",)


def post_renderer(folder: Path, name: str, module: str) -> Path:
    """An executable Helm can run as --post-renderer (Helm 3 takes a path, no arguments): `python
    -m module` of this interpreter, reading the manifests on stdin and writing them on stdout."""
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module}\n', encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@dataclass(frozen=True)
class Result:
    ok: bool
    output: str  # stderr and stdout, as helm printed them
    stdout: str = ""

    def release(self) -> dict[str, Any] | None:
        """The release an `--output json` install or upgrade printed (None: it failed, or printed none)."""
        if not self.ok:
            return None
        try:
            rel = json.loads(self.stdout)
        except ValueError:
            return None
        return rel if isinstance(rel, dict) and isinstance(rel.get("info"), dict) else None


class HelmdFailed(OlaresPackError):
    """helmd ended or did not answer (not a refusal of the chart: Helm never got to say)."""


# ------------------------------------------------------------------ the daemons

T = TypeVar("T")
_spawns: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.SimpleQueue()
_spawner: threading.Thread | None = None
_lock = threading.Lock()
_daemons: dict[str, _Daemon] = {}


def _spawner_loop() -> None:
    while True:
        fn, box, done = _spawns.get()
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            box.append(exc)
        done.set()


def _in_lasting_thread(fn: Callable[[], T]) -> T:
    """fn() run in a thread that ends only with the process (see the module's docstring)."""
    global _spawner
    with _lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawner_loop, name="helmd-spawner", daemon=True)
            _spawner.start()
    box: list[Any] = []
    done = threading.Event()
    _spawns.put((fn, box, done))
    done.wait()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


class _Daemon:
    def __init__(self, program: Path, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.env = dict(os.environ)  # a request's post-renderer environment is merged over this
        self.proc: subprocess.Popen[bytes] = _in_lasting_thread(lambda: subprocess.Popen(
            [str(program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
            preexec_fn=lifetime.die_with_parent(signal.SIGKILL)))
        self._ids = itertools.count(1)
        self._write = threading.Lock()
        self._calls = threading.Lock()
        self._waiting: dict[int, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._stderr: deque[str] = deque(maxlen=40)
        self.ended = False
        threading.Thread(target=self._read, name="helmd-reader", daemon=True).start()
        threading.Thread(target=self._drain, name="helmd-stderr", daemon=True).start()

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        done, box = threading.Event(), []
        with self._calls:
            if self.ended:
                raise HelmdFailed(self._why())
            rid = next(self._ids)
            self._waiting[rid] = (done, box)
        # sort_keys: the values' text is what the CLI's values file held (json.dump, sort_keys)
        line = json.dumps({**request, "id": rid}, sort_keys=True).encode() + b"\n"
        try:
            with self._write:
                assert self.proc.stdin is not None
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
        except OSError:
            pass  # it has ended: the reader fails this call
        if not done.wait(timeout):
            with self._calls:
                self._waiting.pop(rid, None)
            raise HelmdFailed(f"helmd did not answer {request.get('op')} within {timeout:.0f} s")
        if not box:
            raise HelmdFailed(self._why())
        return box[0]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                self._stderr.append(f"unreadable answer: {line[:200]!r}")
                continue
            with self._calls:
                waiting = self._waiting.pop(answer.get("id"), None)
            if waiting is not None:
                waiting[1].append(answer)
                waiting[0].set()
            else:
                self._stderr.append(f"answer to no call: {line[:200]!r}")
        self.proc.wait()
        with self._calls:
            self.ended = True
            waiting_all, self._waiting = list(self._waiting.values()), {}
        for done, _ in waiting_all:
            done.set()  # an empty box: the caller raises
        with _lock:
            if _daemons.get(self.kubeconfig) is self:
                del _daemons[self.kubeconfig]  # the next call starts another

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.decode(errors="replace").rstrip())

    def _why(self) -> str:
        tail = "\n".join(self._stderr)
        return f"helmd ended (exit code {self.proc.returncode})" + (f":\n{tail}" if tail else "")

    def stop(self) -> None:
        """Close its stdin (it finishes what it was asked, then exits); kill it if it lingers."""
        try:
            if self.proc.stdin is not None:
                with self._write:
                    self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _daemon(program: Path, kubeconfig: Path) -> _Daemon:
    key = str(kubeconfig)
    with _lock:
        d = _daemons.get(key)
    if d is not None:
        return d
    new = _Daemon(program, key)
    with _lock:
        d = _daemons.setdefault(key, new)
    if d is not new:  # another thread started one meanwhile
        new.stop()
    return d


def close(kubeconfig: Path) -> None:
    """Stop the daemon of this kubeconfig, if one runs (its cluster is going away)."""
    with _lock:
        d = _daemons.pop(str(kubeconfig), None)
    if d is not None:
        d.stop()


def daemon_pid(kubeconfig: Path) -> int | None:
    """The process id of the daemon serving this kubeconfig (None: none runs)."""
    with _lock:
        d = _daemons.get(str(kubeconfig))
    return d.proc.pid if d is not None and not d.ended else None


@atexit.register
def _close_all() -> None:
    with _lock:
        left = list(_daemons.values())
        _daemons.clear()
    for d in left:
        d.stop()


# ------------------------------------------------------------------ Helm


class Helm:
    def __init__(self, cluster: Cluster, home: Path, post_renderer: Path | None = None, *, cli: bool = False) -> None:
        self.cluster = cluster
        self.home = home
        self.post_renderer = post_renderer  # an executable the rendered manifests pass through before the server sees them
        self.env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
                    "HELM_CONFIG_HOME": str(home / "config"), "HELM_CACHE_HOME": str(home / "cache"),
                    "HELM_DATA_HOME": str(home / "data"), "HELM_DRIVER": "secret"}
        helmd = tools.helmd_path()
        self.helmd = None if cli or not helmd.is_file() else helmd

    def run(self, *args: str) -> Result:
        """The Helm CLI, one process."""
        proc = subprocess.run([str(self.cluster.helm), *args], env=self.env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        return Result(proc.returncode == 0, (proc.stderr + proc.stdout).strip(), proc.stdout)

    def _call(self, op: str, **fields: Any) -> Result:
        assert self.helmd is not None
        d = _daemon(self.helmd, self.cluster.kubeconfig)
        env = {k: v for k, v in self.env.items() if d.env.get(k) != v}
        answer = d.call({"op": op, "kubeconfig": str(self.cluster.kubeconfig), "env": env, **fields}, TIMEOUT)
        return Result(bool(answer["ok"]), (answer["stderr"] + answer["stdout"]).strip(), answer["stdout"])

    def _chart_call(self, op: str, release: str, chart: Path, namespace: str, values: dict[str, Any], *,
                    post: bool = True, **fields: Any) -> Result:
        # the CLI resolves a relative chart path against the cwd of the moment; helmd's is its own
        return self._call(op, release=release, chart=os.path.abspath(chart), namespace=namespace, values=values,
                          post_renderer=str(self.post_renderer or "") if post else "", **fields)

    def _post_args(self) -> tuple[str, ...]:
        return ("--post-renderer", str(self.post_renderer)) if self.post_renderer else ()

    def _values_file(self, values: dict[str, Any]) -> str:
        fd, path = tempfile.mkstemp(suffix=".json", dir=self.home)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(values, f, sort_keys=True)
        return path

    def install(self, release: str, chart: Path, namespace: str, values: dict[str, Any]) -> Result:
        # app-service: action.Install with CreateNamespace (framework/app-service/pkg/helm/helm.go InstallCharts)
        # --output json: the release as stored (status, manifest), so nobody asks for it again
        if self.helmd:
            return self._chart_call("install", release, chart, namespace, values)
        return self.run("install", release, str(chart), "--namespace", namespace, "--create-namespace", *NO_HOOKS,
                        *self._post_args(), "--values", self._values_file(values), "--timeout", "300s", "--output", "json")

    def upgrade(self, release: str, chart: Path, namespace: str, values: dict[str, Any], *, reuse: bool = False) -> Result:
        """app-service's action.Upgrade (no Atomic, no Wait): ResetThenReuseValues, as HelmOps.upgrade calls
        helm.UpgradeCharts now (pkg/appinstaller/helm_ops_upgrade.go at 08eb5b52: the new chart's defaults,
        the old release's overrides); `reuse`: ReuseValues, as it did before (at 22820cc4, and HelmOpsV2.upgrade
        at 2e3244c2), which keeps the OLD chart's defaults, so a value the new chart adds is missing."""
        if self.helmd:
            return self._chart_call("upgrade", release, chart, namespace, values, reuse=reuse)
        mode = "--reuse-values" if reuse else "--reset-then-reuse-values"
        return self.run("upgrade", release, str(chart), "--namespace", namespace, mode, *NO_HOOKS, *self._post_args(),
                        "--values", self._values_file(values), "--timeout", "2400s", "--output", "json")

    def uninstall(self, release: str, namespace: str) -> Result:
        if self.helmd:
            return self._call("uninstall", release=release, namespace=namespace)
        return self.run("uninstall", release, "--namespace", namespace)

    def status(self, release: str, namespace: str) -> str | None:
        """The release's status ('deployed', 'failed', ...), None when there is none."""
        r = (self._call("status", release=release, namespace=namespace) if self.helmd
             else self.run("status", release, "--namespace", namespace, "--output", "json"))
        if not r.ok:
            return None
        try:
            return str(json.loads(r.stdout)["info"]["status"])
        except (ValueError, KeyError):
            return None

    def manifest(self, release: str, namespace: str) -> str:
        r = (self._call("manifest", release=release, namespace=namespace) if self.helmd
             else self.run("get", "manifest", release, "--namespace", namespace))
        return r.stdout if r.ok else ""

    def template(self, release: str, chart: Path, namespace: str, values: dict[str, Any]) -> Result:
        """`helm template`: the chart rendered client-side (no server asked), hooks included."""
        if self.helmd:
            return self._chart_call("template", release, chart, namespace, values, post=False)
        return self.run("template", release, str(chart), "--namespace", namespace, "--values", self._values_file(values))

    def version(self) -> str:
        r = self._call("version") if self.helmd else self.run("version", "--template", "{{ .Version }}")
        return r.output if r.ok else ""
