"""A user's cluster after a rehearsal: the releases are uninstalled by the session; the namespaces
of this run (their names end in its id) are deleted with kubectl where it is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from olares_pack.common import console


def namespaces(kubeconfig: Path, run_id: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        console.warn(f"kubectl is not installed: delete the namespaces ending in {run_id} yourself")
        return
    env = ["--kubeconfig", str(kubeconfig)]
    listed = subprocess.run([kubectl, *env, "get", "namespaces", "-o", "name"], capture_output=True, text=True)
    ours = [n for n in listed.stdout.split() if n.endswith(run_id)]
    if ours:
        subprocess.run([kubectl, *env, "delete", "--wait=false", *ours], capture_output=True, text=True)
        console.info(f"deleted {len(ours)} namespace(s) of this run: {', '.join(n.split('/', 1)[-1] for n in ours)}")
