"""The control plane's programs, built from the package registries once per machine and cached.

- kube-apiserver at the Kubernetes version Olares 1.12 installs: the installer's
  `DefaultK3sVersion = "v1.32.2-k3s"` (beclab/Olares cli/pkg/common/common.go at 84597bb9), built
  from the Go module proxy (k8s.io/kubernetes v1.32.2; its staging modules replaced by the
  matching v0.32.2 modules, which a dependent module needs because the main module's go.mod points
  them at ./staging).
- Helm at the version app-service links: `helm.sh/helm/v3 v3.19.5`
  (beclab/Olares framework/app-service/go.mod): the CLI, and helmd (olares_pack/cluster/helmd/,
  the same SDK as one long-lived process per cluster, which the rehearsals call: helmcli.py), cached
  under a hash of its sources.
- etcd from Debian (`etcd-server`), installed with apt when missing and we run as root.

Sources come through Go's own client (`go list -m`, `go mod tidy`, `go install`: GOPROXY and
GONOSUMDB apply as for any Go build), never from a download address of ours; etcd through apt. Cached under $OLARES_PACK_CACHE (default
~/.cache/olares-pack): kube/kube-apiserver-<v>, helm/helm-<v>, helm/helmd-<v>-<hash>; Go's own
module and build caches make a rebuild after a cache wipe quick (helmd's go.mod resolves to Helm's own
dependency versions, so it reuses the CLI's compiled packages: seconds).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from olares_pack.common.cache import cache_root
from olares_pack.common.errors import OlaresPackError

KUBE_VERSION = "v1.32.2"
HELM_VERSION = "v3.19.5"
# The node's programs, from the same wrapper module as kube-apiserver (olares_pack/cluster/node.py).
NODE_PROGRAMS = ("kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy")
# Programs a node takes from Debian: program -> package (the Makefile's DEBIAN_PACKAGES names them too).
NODE_DEBIAN = {"containerd": "containerd", "runc": "runc", "busybox": "busybox-static", "skopeo": "skopeo",
               "docker-registry": "docker-registry", "iptables": "iptables", "ip": "iproute2"}
CNI_BIN = "/usr/lib/cni"
# Staging modules the module proxy does not serve (and kube-apiserver does not import).
_UNSERVED = ("k8s.io/sample-cli-plugin", "k8s.io/sample-controller")
# The build date ldflags stamp (the release date of v1.32.2), so a rebuild is byte-identical.
_BUILD_DATE = "2025-02-12T00:00:00Z"
HELMD_SRC = Path(__file__).resolve().parent / "helmd"
HELMD_FILES = ("main.go", "go.mod", "go.sum")
# As the CLI is stamped (_build_helm): the SDK reports this version to charts
# (.Capabilities.HelmVersion) and in its user agent; unstamped it would say "v3.19".
_HELM_LDFLAGS = (f"-s -w -X helm.sh/helm/v3/internal/version.version={HELM_VERSION} "
                 "-X helm.sh/helm/v3/internal/version.gitTreeState=clean")


class ToolsMissing(OlaresPackError):
    """A control-plane program is missing and cannot be built here."""


@dataclass(frozen=True)
class Tools:
    kube_apiserver: Path
    etcd: Path
    helm: Path
    helmd: Path | None  # None: helmd's sources are not in this installation; the CLI answers every call


def apiserver_path() -> Path:
    return cache_root() / "kube" / f"kube-apiserver-{KUBE_VERSION}"


def helm_path() -> Path:
    return cache_root() / "helm" / f"helm-{HELM_VERSION}"


def helmd_buildable() -> bool:
    """Whether helmd's sources are here (an installation that left them out runs the CLI only)."""
    return all((HELMD_SRC / name).is_file() for name in HELMD_FILES)


def helmd_path() -> Path:
    """helmd built from these sources (a changed source is a new name: the old build is never run)."""
    if not helmd_buildable():
        return cache_root() / "helm" / f"helmd-{HELM_VERSION}-no-sources"  # never built
    return cache_root() / "helm" / f"helmd-{HELM_VERSION}-{_helmd_digest()}"


@lru_cache(maxsize=1)
def _helmd_digest() -> str:
    """Of the sources and the stamp: read once a process (every Helm object asks for helmd_path)."""
    digest = hashlib.sha256(_HELM_LDFLAGS.encode())
    for name in HELMD_FILES:
        digest.update(name.encode() + b"\0" + (HELMD_SRC / name).read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _helmd_ready() -> bool:
    return helmd_path().is_file() or not helmd_buildable()


def etcd_path() -> Path | None:
    found = shutil.which("etcd") or ("/usr/bin/etcd" if Path("/usr/bin/etcd").exists() else None)
    return Path(found) if found else None


def available() -> Tools | None:
    """The programs when all are here already (nothing is built)."""
    etcd = etcd_path()
    if apiserver_path().is_file() and helm_path().is_file() and _helmd_ready() and etcd:
        return Tools(apiserver_path(), etcd, helm_path(), helmd_path() if helmd_buildable() else None)
    return None


def missing_reason() -> str:
    parts = []
    if not apiserver_path().is_file():
        parts.append(f"kube-apiserver {KUBE_VERSION} ({apiserver_path()})")
    if not helm_path().is_file():
        parts.append(f"helm {HELM_VERSION} ({helm_path()})")
    if not _helmd_ready():
        parts.append(f"helmd ({helmd_path()})")
    if etcd_path() is None:
        parts.append("etcd (Debian package etcd-server)")
    return ", ".join(parts) + " not built: `make control-plane` builds them (minutes, once per machine)"


def ensure(log=None) -> Tools:  # noqa: ANN001 - a callable taking one line
    """Build what is missing (minutes the first time), then return the programs."""
    say = log or (lambda line: print(line, file=sys.stderr))
    if etcd_path() is None:
        _install_etcd(say)
    if not apiserver_path().is_file():
        _build_apiserver(say)
    if not helm_path().is_file():
        _build_helm(say)
    if not _helmd_ready():
        _build_helmd(say)
    tools = available()
    if tools is None:
        raise ToolsMissing(missing_reason())
    return tools


def ensure_helm(log=None) -> Path:  # noqa: ANN001
    """Helm alone, the CLI and helmd (a rehearsal on a user's cluster needs no API server here)."""
    say = log or (lambda line: print(line, file=sys.stderr))
    if not helm_path().is_file():
        _build_helm(say)
    if not _helmd_ready():
        _build_helmd(say)
    return helm_path()


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise ToolsMissing("Go is not installed: the control plane is built with it (apt-get install golang-go)")
    return go


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolsMissing(f"{' '.join(cmd[:3])} failed:\n{proc.stderr[-3000:]}")


def _install_etcd(say) -> None:  # noqa: ANN001
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ToolsMissing("etcd is missing: apt-get install etcd-server (Debian) as root")
    say("installing etcd (apt-get install etcd-server)")
    _run(["apt-get", "install", "-y", "-qq", "etcd-server"], env={"DEBIAN_FRONTEND": "noninteractive"})


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The staging modules k8s.io/kubernetes's go.mod points at ./staging, which a wrapper module
    must replace with their published versions."""
    mods = re.findall(r"^\s*(?:replace\s+)?(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", kubernetes_go_mod, re.M)
    return sorted(m for m in set(mods) if m not in _UNSERVED)


def wrapper_go_mod(kubernetes_go_mod: str, version: str = KUBE_VERSION) -> str:
    staging = "v0." + version.lstrip("v").split(".", 1)[1]
    lines = ["module olares-pack/kube-apiserver-build", "", "go 1.23", "", f"require k8s.io/kubernetes {version}", ""]
    lines += [f"replace {m} => {m} {staging}" for m in staging_modules(kubernetes_go_mod)]
    return "\n".join(lines) + "\n"


def _version_ldflags(version: str) -> str:
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}", f"-X {pkg}.gitMinor={minor}",
                  f"-X {pkg}.gitTreeState=clean", f"-X {pkg}.buildDate={_BUILD_DATE}"]
    return " ".join(flags)


def _module_go_mod(go: str, module: str, version: str) -> str:
    """A published module's go.mod, fetched by Go itself (it lands in the module cache, checked
    against the checksum database like any dependency)."""
    # outside any module (an empty folder, no workspace), `go list -m MODULE@VERSION` resolves that one module
    with tempfile.TemporaryDirectory() as empty:
        proc = subprocess.run([go, "list", "-m", "-json", f"{module}@{version}"], cwd=empty, capture_output=True,
                              text=True, env={**os.environ, "GOWORK": "off"})
    if proc.returncode != 0:
        raise ToolsMissing(f"go list -m {module}@{version} failed:\n{proc.stderr[-3000:]}")
    return Path(json.loads(proc.stdout)["GoMod"]).read_text(encoding="utf-8")


def kube_path(program: str) -> Path:
    return cache_root() / "kube" / f"{program}-{KUBE_VERSION}"


def tools_go(programs: tuple[str, ...] = ("kube-apiserver", *NODE_PROGRAMS)) -> str:
    """The wrapper module's one Go file: it imports every command built from it, so that `go mod tidy`
    records the go.sum entries of each (kube-proxy's netns is missing from kube-apiserver's alone)."""
    imports = "".join(f'\t_ "k8s.io/kubernetes/cmd/{p}"\n' for p in programs)
    return f"package tools\n\nimport (\n{imports})\n"


def _build_kube(say, programs: tuple[str, ...]) -> None:  # noqa: ANN001
    """Build `programs` (cmd/<name> of k8s.io/kubernetes) from one wrapper module, sharing Go's caches."""
    go = _go()
    src = cache_root() / "kube" / f"src-{KUBE_VERSION}"
    src.mkdir(parents=True, exist_ok=True)
    want = tools_go()
    if not (src / "go.sum").is_file() or (src / "tools.go").read_text(encoding="utf-8") != want:
        upstream = _module_go_mod(go, "k8s.io/kubernetes", KUBE_VERSION)
        (src / "go.mod").write_text(wrapper_go_mod(upstream), encoding="utf-8")
        (src / "tools.go").write_text(want, encoding="utf-8")
        _run([go, "mod", "tidy"], cwd=src)
    for program in programs:
        out = kube_path(program)
        if out.is_file():
            continue
        say(f"building {program} {KUBE_VERSION} from the Go module proxy (first run: minutes)")
        tmp = out.with_name(out.name + ".tmp")
        _run([go, "build", "-trimpath", "-ldflags", _version_ldflags(KUBE_VERSION), "-o", str(tmp),
              f"k8s.io/kubernetes/cmd/{program}"], cwd=src)
        tmp.replace(out)


def _build_apiserver(say) -> None:  # noqa: ANN001
    _build_kube(say, ("kube-apiserver",))


def node_missing() -> list[str]:
    """What a node needs that is not here (built programs, Debian programs)."""
    out = [f"{p} {KUBE_VERSION} ({kube_path(p)})" for p in NODE_PROGRAMS if not kube_path(p).is_file()]
    out += [f"{prog} (Debian package {pkg})" for prog, pkg in NODE_DEBIAN.items() if not _which(prog)]
    if not Path(CNI_BIN, "bridge").is_file():
        out.append(f"the CNI plugins in {CNI_BIN} (Debian package containernetworking-plugins)")
    return out


def _which(program: str) -> str | None:
    return shutil.which(program) or next((str(Path(d, program)) for d in ("/usr/sbin", "/sbin", "/usr/bin")
                                          if Path(d, program).is_file()), None)


def ensure_node(log=None) -> None:  # noqa: ANN001
    """Build the node's programs that are missing (kubelet and the controllers: minutes, once)."""
    say = log or (lambda line: print(line, file=sys.stderr))
    ensure(say)
    missing = [p for p in NODE_PROGRAMS if not kube_path(p).is_file()]
    if missing:
        _build_kube(say, tuple(missing))


def _build_helm(say) -> None:  # noqa: ANN001
    go = _go()
    say(f"building helm {HELM_VERSION} from the Go module proxy (about 1-3 minutes)")
    out = helm_path()
    gobin = out.parent / "bin.tmp"
    gobin.mkdir(parents=True, exist_ok=True)
    _run([go, "install", "-trimpath", "-ldflags", _HELM_LDFLAGS, f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"],
         env={"GOBIN": str(gobin)})
    (gobin / "helm").replace(out)
    shutil.rmtree(gobin, ignore_errors=True)


def _build_helmd(say) -> None:  # noqa: ANN001
    """helmd from olares_pack/cluster/helmd, copied to a build folder (an installed package's folder
    may not be writable). Modules missing from Go's cache come through GOPROXY, checked against the
    committed go.sum; the environment is _build_helm's, so the CLI's compiled packages are reused."""
    go = _go()
    out = helmd_path()
    say(f"building helmd (the Helm {HELM_VERSION} SDK as a long-lived process; seconds after the CLI's build)")
    build = out.parent / f"src-{out.name}"
    build.mkdir(parents=True, exist_ok=True)
    for name in HELMD_FILES:
        shutil.copy(HELMD_SRC / name, build / name)
    tmp = out.with_name(out.name + ".tmp")
    _run([go, "build", "-trimpath", "-ldflags", _HELM_LDFLAGS, "-o", str(tmp), "."], cwd=build)
    tmp.replace(out)
    shutil.rmtree(build, ignore_errors=True)


def main() -> int:
    """`python -m olares_pack.cluster.tools [node]`: build what is missing (the Makefile's control-plane
    and node targets)."""
    try:
        if sys.argv[1:] == ["node"]:
            ensure_node()
            missing = node_missing()
            if missing:
                print(f"node not complete: {', '.join(missing)}", file=sys.stderr)
                return 1
        tools = ensure()
    except ToolsMissing as exc:
        print(f"control plane not built: {exc}", file=sys.stderr)
        return 1
    print("\n".join(str(p) for p in (tools.kube_apiserver, tools.etcd, tools.helm, tools.helmd) if p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
