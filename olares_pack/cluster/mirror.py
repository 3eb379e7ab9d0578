"""The node's image mirror: Debian's docker-registry on a loopback port, storage in the node's
folder, and the containerd host files that send docker.io, ghcr.io, registry.k8s.io and quay.io
there. A chart keeps its image names; only the node resolves them locally (containerd passes the
path without the host: `docker.io/beclab/llm-init:v1.3.8` -> `/v2/beclab/llm-init/...`)."""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from olares_pack.cluster import lifetime
from olares_pack.cluster.tools import ToolsMissing

REGISTRIES = ("docker.io", "ghcr.io", "registry.k8s.io", "quay.io")


@dataclass
class Mirror:
    host: str  # 127.0.0.1:PORT
    proc: subprocess.Popen[bytes]

    def push(self, layout: Path, tag: str, image: str) -> None:
        """Push an OCI layout's `tag` as the chart's own image name (its registry host dropped)."""
        repo, ref = split(image)
        proc = subprocess.run([shutil.which("skopeo") or "skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                               "--preserve-digests", f"oci:{layout}:{tag}", f"docker://{self.host}/{repo}:{ref}"],
                              capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            raise ToolsMissing(f"skopeo could not push {image} to the node's mirror: {proc.stderr.strip()[-1500:]}")

    def has(self, image: str) -> bool:
        repo, ref = split(image)
        req = urllib.request.Request(f"http://{self.host}/v2/{repo}/manifests/{ref}", method="HEAD")
        req.add_header("Accept", "application/vnd.oci.image.manifest.v1+json")
        try:
            with urllib.request.urlopen(req, timeout=5):  # noqa: S310 - loopback
                return True
        except (urllib.error.HTTPError, OSError):
            return False


def split(image: str) -> tuple[str, str]:
    """`docker.io/beclab/llm-init:v1.3.8` -> ("beclab/llm-init", "v1.3.8"); a bare Docker Hub name
    gets `library/` (Docker Hub's alone)."""
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    parts = name.split("/")
    host = "docker.io"
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        host, parts = parts[0], parts[1:]
    if len(parts) == 1 and host == "docker.io":
        parts = ["library", *parts]  # Docker Hub's official images
    return "/".join(parts), tag


def hosts_files(certs_d: Path, mirror: str) -> None:
    """containerd's `config_path` folder: one hosts.toml per registry, all pointing at the mirror."""
    for reg in REGISTRIES:
        d = certs_d / reg
        d.mkdir(parents=True, exist_ok=True)
        upstream = "https://registry-1.docker.io" if reg == "docker.io" else f"https://{reg}"
        (d / "hosts.toml").write_text(
            f'server = "{upstream}"\n\n[host."http://{mirror}"]\n  capabilities = ["pull", "resolve"]\n  skip_verify = true\n',
            encoding="utf-8")


def start(folder: Path, port: int) -> Mirror:
    exe = shutil.which("docker-registry")
    if exe is None:
        raise ToolsMissing("docker-registry is missing (Debian package docker-registry)")
    folder.mkdir(parents=True, exist_ok=True)
    config = {"version": 0.1, "log": {"level": "warn", "accesslog": {"disabled": True}},
              "storage": {"filesystem": {"rootdirectory": str(folder / "storage")}},
              "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)}}
    (folder / "config.yml").write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    log = open(folder / "registry.log", "wb")  # noqa: SIM115 - the process keeps it
    proc = subprocess.Popen([exe, "serve", str(folder / "config.yml")], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=lifetime.die_with_parent(signal.SIGKILL))
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2)  # noqa: S310 - loopback
            return Mirror(f"127.0.0.1:{port}", proc)
        except urllib.error.HTTPError:
            return Mirror(f"127.0.0.1:{port}", proc)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ToolsMissing(f"docker-registry did not start: {(folder / 'registry.log').read_text()[-1500:]}") from None
            time.sleep(0.05)
