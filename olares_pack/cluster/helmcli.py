"""The Helm CLI at app-service's version, run against a cluster's kubeconfig, with its own
(temporary) config, cache and data folders so that a rehearsal never reads or writes the user's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olares_pack.cluster.controlplane import Cluster

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


class Helm:
    def __init__(self, cluster: Cluster, home: Path, post_renderer: Path | None = None) -> None:
        self.cluster = cluster
        self.home = home
        # an executable the rendered manifests pass through before the server sees them
        self.post = ("--post-renderer", str(post_renderer)) if post_renderer else ()
        self.env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
                    "HELM_CONFIG_HOME": str(home / "config"), "HELM_CACHE_HOME": str(home / "cache"),
                    "HELM_DATA_HOME": str(home / "data"), "HELM_DRIVER": "secret"}

    def run(self, *args: str) -> Result:
        proc = subprocess.run([str(self.cluster.helm), *args], env=self.env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        return Result(proc.returncode == 0, (proc.stderr + proc.stdout).strip(), proc.stdout)

    def _values_file(self, values: dict[str, Any]) -> str:
        fd, path = tempfile.mkstemp(suffix=".json", dir=self.home)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(values, f, sort_keys=True)
        return path

    def install(self, release: str, chart: Path, namespace: str, values: dict[str, Any]) -> Result:
        # app-service: action.Install with CreateNamespace (framework/app-service/pkg/helm/helm.go InstallCharts)
        # --output json: the release as stored (status, manifest), so nobody asks for it again
        return self.run("install", release, str(chart), "--namespace", namespace, "--create-namespace", *NO_HOOKS,
                        *self.post, "--values", self._values_file(values), "--timeout", "300s", "--output", "json")

    def upgrade(self, release: str, chart: Path, namespace: str, values: dict[str, Any], *, reuse: bool = False) -> Result:
        """app-service's action.Upgrade (no Atomic, no Wait): ResetThenReuseValues, as HelmOps.upgrade calls
        helm.UpgradeCharts now (pkg/appinstaller/helm_ops_upgrade.go at 08eb5b52: the new chart's defaults,
        the old release's overrides); `reuse`: ReuseValues, as it did before (at 22820cc4, and HelmOpsV2.upgrade
        at 2e3244c2), which keeps the OLD chart's defaults, so a value the new chart adds is missing."""
        mode = "--reuse-values" if reuse else "--reset-then-reuse-values"
        return self.run("upgrade", release, str(chart), "--namespace", namespace, mode, *NO_HOOKS, *self.post,
                        "--values", self._values_file(values), "--timeout", "2400s", "--output", "json")

    def uninstall(self, release: str, namespace: str) -> Result:
        return self.run("uninstall", release, "--namespace", namespace)

    def status(self, release: str, namespace: str) -> str | None:
        """The release's status ('deployed', 'failed', ...), None when there is none."""
        r = self.run("status", release, "--namespace", namespace, "--output", "json")
        if not r.ok:
            return None
        try:
            return str(json.loads(r.stdout)["info"]["status"])
        except (ValueError, KeyError):
            return None

    def manifest(self, release: str, namespace: str) -> str:
        r = self.run("get", "manifest", release, "--namespace", namespace)
        return r.stdout if r.ok else ""

    def version(self) -> str:
        r = self.run("version", "--template", "{{ .Version }}")
        return r.output if r.ok else ""
