"""A real OCI registry on loopback for the tests: Debian's `docker-registry` (the distribution
registry, 2.8) with its own storage folder and config, images pushed into it by `skopeo` from OCI
layouts written here, and a Bearer token front (the WWW-Authenticate challenge and a token
service, as Docker Hub and ghcr.io answer) for the token flow.

`make test` installs both packages (Makefile); without them the registry tests skip, saying so.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REGISTRY_BIN = shutil.which("docker-registry") or shutil.which("registry")
SKOPEO = shutil.which("skopeo")
MISSING = [name for name, found in (("docker-registry", REGISTRY_BIN), ("skopeo", SKOPEO)) if not found]
SKIP_REASON = (f"{' and '.join(MISSING)} not installed (Debian packages docker-registry, skopeo; `make test` "
               "installs them)")
# On CI (which runs `make test` as root, so they are installed) a missing binary fails instead of skipping.
REQUIRED = bool(os.environ.get("CI"))

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- OCI layouts


def _layer(text: str) -> tuple[bytes, str]:
    """A gzipped tar holding one file, byte-for-byte reproducible; (blob, diff_id)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        data = text.encode()
        info = tarfile.TarInfo("hello.txt")
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


@dataclass
class Layout:
    """An OCI image layout (image-spec "OCI Image Layout"): blobs/sha256/*, index.json, oci-layout."""

    root: Path
    refs: list[dict[str, object]] = field(default_factory=list)

    def blob(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / "blobs" / "sha256" / digest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return "sha256:" + digest

    def image(self, arch: str, created: str | None = None, text: str = "") -> tuple[bytes, str]:
        """A one-layer image for linux/arch: (manifest bytes, its media type); `created` is the
        config's creation date, `text` makes the layer (so the digest) of another image."""
        layer, diff_id = _layer(f"hello from {arch}\n{text}")
        cfg: dict[str, object] = {"architecture": arch, "os": "linux", "config": {},
                                  "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
        if created:
            cfg["created"] = created
        config = json.dumps(cfg, sort_keys=True).encode()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": self.blob(config), "size": len(config)},
            "layers": [{"mediaType": OCI_LAYER, "digest": self.blob(layer), "size": len(layer)}],
        }, sort_keys=True).encode()
        return manifest, OCI_MANIFEST

    def tag(self, name: str, data: bytes, media: str) -> str:
        digest = self.blob(data)
        self.refs.append({"mediaType": media, "digest": digest, "size": len(data),
                          "annotations": {"org.opencontainers.image.ref.name": name}})
        (self.root / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
        (self.root / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": self.refs}))
        return digest

    def multiarch(self, name: str, arches: tuple[str, ...] = ("amd64", "arm64"), created: str | None = None,
                  text: str = "") -> str:
        entries = []
        for arch in arches:
            manifest, media = self.image(arch, created, text)
            entries.append({"mediaType": media, "digest": self.blob(manifest), "size": len(manifest),
                            "platform": {"architecture": arch, "os": "linux"}})
        index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}, sort_keys=True).encode()
        return self.tag(name, index, OCI_INDEX)

    def single(self, name: str, arch: str, created: str | None = None, text: str = "") -> str:
        manifest, media = self.image(arch, created, text)
        return self.tag(name, manifest, media)


# ---------------------------------------------------------------- the registry


@dataclass
class Registry:
    host: str  # 127.0.0.1:PORT
    user: str | None
    password: str | None
    proc: subprocess.Popen[bytes]
    log: Path

    def push(self, layout: Path, tag: str, repository: str, *, docker_v2: bool = False) -> None:
        """skopeo copy, digests preserved (the registry serves the bytes the layout holds); with
        docker_v2, converted to a Docker v2 manifest on the way (skopeo --format v2s2: an OCI
        layout cannot hold Docker media types, containers/image oci/layout)."""
        cmd = [str(SKOPEO), "copy", "--all", "--dest-tls-verify=false", "--quiet"]
        cmd += ["--format", "v2s2"] if docker_v2 else ["--preserve-digests"]
        if self.user:
            cmd += ["--dest-creds", f"{self.user}:{self.password}"]
        cmd += [f"oci:{layout}:{tag}", f"docker://{self.host}/{repository}:{tag}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, f"skopeo copy failed: {proc.stderr}"

    def raw_digest(self, repository: str, tag: str) -> str:
        """What skopeo (another client) reads for repository:tag, hashed: an independent answer."""
        cmd = [str(SKOPEO), "inspect", "--raw", "--tls-verify=false"]
        if self.user:
            cmd += ["--creds", f"{self.user}:{self.password}"]
        proc = subprocess.run([*cmd, f"docker://{self.host}/{repository}:{tag}"], capture_output=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        return "sha256:" + hashlib.sha256(proc.stdout).hexdigest()


@contextmanager
def run_registry(tmp: Path, *, user: str | None = None, password: str | None = None) -> Iterator[Registry]:
    """docker-registry serve with a config of its own: storage under tmp, loopback only, htpasswd
    basic auth when a user is given."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(tmp / "storage")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }
    if user:
        import bcrypt

        hashed = bcrypt.hashpw((password or "").encode(), bcrypt.gensalt(rounds=4)).decode()
        (tmp / "htpasswd").write_text(f"{user}:{hashed}\n")
        config["auth"] = {"htpasswd": {"realm": "olares-pack-test", "path": str(tmp / "htpasswd")}}
    (tmp / "config.yml").write_text(json.dumps(config))  # JSON is YAML
    log = tmp / "registry.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(REGISTRY_BIN), "serve", str(tmp / "config.yml")], stdout=out, stderr=subprocess.STDOUT)
    reg = Registry(f"127.0.0.1:{port}", user, password, proc, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2)  # noqa: S310 - loopback
                break
            except urllib.error.HTTPError:
                break  # 401: up, and asking for credentials
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"docker-registry did not start: {log.read_text()}") from None
                time.sleep(0.05)
        yield reg
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# ---------------------------------------------------------------- a Bearer token front


@contextmanager
def token_front(upstream: Registry, user: str, password: str) -> Iterator[tuple[str, list[str]]]:
    """A loopback front answering as a token-authenticated registry does (docs.docker.com/registry/spec/auth/token):
    401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…` until a token from its realm
    (handed for `user:password` in Basic auth) comes; then the request goes to the real registry,
    with its basic credentials. Yields (host, log of what was asked)."""
    tokens: set[str] = set()
    log: list[str] = []
    port = free_port()
    up_auth = ("Basic " + base64.b64encode(f"{upstream.user}:{upstream.password}".encode()).decode()) if upstream.user else None

    class Front(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            log.append(f"{self.command} {self.path} {self.headers.get('Authorization', '-').split(' ')[0]}")
            if self.path.startswith("/token"):
                good = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
                if self.headers.get("Authorization") != good:
                    return self.reply(401, b'{"details":"incorrect username or password"}', {"Content-Type": "application/json"})
                token = secrets.token_hex(8)
                tokens.add(token)
                return self.reply(200, json.dumps({"token": token, "expires_in": 300}).encode(), {"Content-Type": "application/json"})
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or auth.removeprefix("Bearer ") not in tokens:
                scope = "repository:" + self.path.split("/v2/", 1)[-1].rsplit("/manifests/", 1)[0].rsplit("/blobs/", 1)[0] \
                    .rsplit("/tags/", 1)[0] + ":pull"
                challenge = f'Bearer realm="http://127.0.0.1:{port}/token",service="olares-pack-test",scope="{scope}"'
                body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}).encode()
                return self.reply(401, body, {"WWW-Authenticate": challenge, "Content-Type": "application/json"})
            req = urllib.request.Request(f"http://{upstream.host}{self.path}", method=self.command,
                                         headers={k: v for k, v in self.headers.items() if k.lower() == "accept"}
                                         | ({"Authorization": up_auth} if up_auth else {}))
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - loopback
                    body, status, headers = resp.read(), resp.status, dict(resp.headers)
            except urllib.error.HTTPError as exc:
                body, status, headers = exc.read(), exc.code, dict(exc.headers)
            keep = {k: v for k, v in headers.items() if k.lower() in ("content-type", "docker-content-digest", "link")}
            self.reply(status, body, keep)

    server = ThreadingHTTPServer(("127.0.0.1", port), Front)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{port}", log
    finally:
        server.shutdown()
        server.server_close()
