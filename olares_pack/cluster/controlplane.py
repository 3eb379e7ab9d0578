"""A real Kubernetes API server on loopback: etcd and kube-apiserver in a temporary folder, free
ports, one admin token, a kubeconfig; stopped (and the folder removed) on exit.

Only the API server runs (no scheduler, controller-manager or kubelet): objects are validated,
defaulted and stored, as app-service's Helm sees them, but Deployments never get pods.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from olares_pack.cluster import helmcli, lifetime
from olares_pack.cluster.tools import Tools, ToolsMissing

READY_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running (or a user's) API server: where it is and how to reach it."""

    server: str
    token: str
    ca_file: Path | None
    kubeconfig: Path
    helm: Path
    version: str = ""
    home: Path | None = None  # the state folder of a control plane started here (keys, certificates)

    @cached_property
    def _context(self) -> ssl.SSLContext:
        # one context per cluster: loading the CA file again for every request cost more than the request
        ctx = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else ssl.create_default_context()
        if self.ca_file:
            ctx.check_hostname = False  # the self-signed serving certificate names the host, not 127.0.0.1
        return ctx

    @cached_property
    def _local(self) -> threading.local:
        return threading.local()

    def _connection(self, fresh: bool) -> http.client.HTTPSConnection:
        """This thread's kept-alive connection to the API server. A live run polls the pods of four
        device slots every second; a TLS handshake per request cost client and server ~8 ms of CPU
        each time (measured here: 200 GETs, 1.9 s CPU with a handshake each, against ~0.4 s kept alive)."""
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            url = urllib.parse.urlsplit(self.server)
            conn = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port or 443, timeout=30,
                                               context=self._context)
            local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            conn = self._connection(fresh=attempt == 1)
            reused = conn.sock is not None
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except TimeoutError:
                conn.close()
                raise
            except (OSError, http.client.HTTPException):
                conn.close()
                if attempt == 0 and reused:  # the server closed the idle connection: once more on a new one
                    continue
                raise
            if resp.will_close:
                conn.close()
            return resp.status, _body(raw)
        raise AssertionError("unreachable")

    def get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        return body if status == 200 else None


def _body(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:  # /readyz answers plain text
        return raw.decode(errors="replace")


def write_kubeconfig(path: Path, server: str, token: str, ca_file: Path | None, namespace: str = "default") -> None:
    cluster: dict[str, Any] = {"server": server}
    if ca_file:
        cluster["certificate-authority"] = str(ca_file)
        cluster["tls-server-name"] = "kubernetes"  # a name the self-signed certificate carries
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "rehearsal", "cluster": cluster}],
           "users": [{"name": "admin", "user": {"token": token}}],
           "contexts": [{"name": "rehearsal", "context": {"cluster": "rehearsal", "user": "admin", "namespace": namespace}}],
           "current-context": "rehearsal"}
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    path.chmod(0o600)


def _keypair(folder: Path) -> tuple[Path, Path]:
    key, pub = folder / "sa.key", folder / "sa.pub"
    subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(pub)], check=True, capture_output=True)
    return key, pub


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


_PREFIX = "olares-pack-kube-"


def sweep() -> None:
    """Remove the state folders of control planes whose owner died by SIGKILL (its programs died with it)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        if (folder / "owner").exists() and not lifetime.owner_alive(folder):
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def running(tools: Tools) -> Iterator[Cluster]:
    """etcd and kube-apiserver on free loopback ports until the block ends. A SIGTERM or SIGHUP of
    this process ends the block as an exception does (the programs stop, the folder goes); after a
    SIGKILL the kernel stops them (parent-death signal) and the next start removes the folder."""
    if shutil.which("openssl") is None:
        raise ToolsMissing("openssl is missing (apt-get install openssl): it makes the service-account key")
    sweep()
    with lifetime.terminating(), _running(tools) as cluster:
        yield cluster


@contextmanager
def _running(tools: Tools) -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix=_PREFIX))
    lifetime.write_owner(folder)
    etcd = api = None
    try:
        client_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_log = open(folder / "etcd.log", "wb")  # noqa: SIM115 - closed in finally with the process
        etcd = subprocess.Popen(
            [str(tools.etcd), "--data-dir", str(folder / "etcd"), "--name", "rehearsal",
             "--listen-client-urls", f"http://127.0.0.1:{client_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{client_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
             "--initial-cluster", f"rehearsal=http://127.0.0.1:{peer_port}",
             "--unsafe-no-fsync", "--log-level", "error"],
            stdout=etcd_log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lifetime.die_with_parent(signal.SIGKILL))
        token = secrets.token_hex(16)
        (folder / "tokens.csv").write_text(f"{token},admin,admin-uid,system:masters\n", encoding="utf-8")
        key, pub = _keypair(folder)
        api_log = open(folder / "apiserver.log", "wb")  # noqa: SIM115
        api = subprocess.Popen(
            [str(tools.kube_apiserver), f"--etcd-servers=http://127.0.0.1:{client_port}",
             "--bind-address=127.0.0.1", f"--secure-port={api_port}", f"--cert-dir={folder / 'certs'}",
             "--service-cluster-ip-range=10.96.0.0/16", "--service-account-issuer=https://kubernetes.default.svc",
             f"--service-account-key-file={pub}", f"--service-account-signing-key-file={key}",
             f"--token-auth-file={folder / 'tokens.csv'}", "--authorization-mode=RBAC", "--allow-privileged=true",
             "--enable-priority-and-fairness=false", "--profiling=false"],
            stdout=api_log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lifetime.die_with_parent(signal.SIGKILL))
        server = f"https://127.0.0.1:{api_port}"
        ca = folder / "certs" / "apiserver.crt"
        kubeconfig = folder / "kubeconfig"
        cluster = Cluster(server, token, ca, kubeconfig, tools.helm, home=folder)
        _wait_ready(cluster, api, etcd, folder)
        write_kubeconfig(kubeconfig, server, token, ca)
        cluster.version = (cluster.get("/version") or {}).get("gitVersion", "")
        yield cluster
    finally:
        helmcli.close(folder / "kubeconfig")
        _stop(api)
        _stop(etcd)
        if os.environ.get("OLARES_PACK_KEEP_CLUSTER"):
            print(f"control plane files kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(cluster: Cluster, api: subprocess.Popen[bytes], etcd: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        for proc, name in ((etcd, "etcd"), (api, "apiserver")):
            if proc.poll() is not None:
                tail = (folder / f"{name}.log").read_text(errors="replace")[-2000:]
                raise ToolsMissing(f"{name} exited with {proc.returncode}:\n{tail}")
        if (folder / "certs" / "apiserver.crt").exists():
            try:
                status, body = cluster.request("GET", "/readyz")
                if status == 200:
                    return
            except (OSError, ssl.SSLError):
                pass
        time.sleep(0.2)
    raise ToolsMissing(f"the API server was not ready after {READY_TIMEOUT:.0f} s (logs in {folder})")


def from_kubeconfig(path: Path, helm: Path) -> Cluster:
    """A user's cluster, reached through their kubeconfig: helm and our reads use it as given."""
    return Cluster(server="", token="", ca_file=None, kubeconfig=path, helm=helm)
