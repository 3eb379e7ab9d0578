"""One Kubernetes node on top of the loopback control plane, so that charts *run*: containerd and
runc (Debian's), a CNI bridge, kubelet, kube-controller-manager, kube-scheduler and kube-proxy
v1.32.2 (built from the same module as kube-apiserver, tools.py), a local image mirror
(mirror.py), a cluster DNS for Service names (dns.py), and a fake GPU (`nvidia.com/gpu: 1`,
`nvidia.com/gpumem: 24000` on the node's status).

Everything lives in one folder (/tmp/olares-pack-node-*) with its own containerd socket, root and
state, its own bridge name, pod subnet and cgroup root, so that nothing is shared with the host or
another node. Measured recipe and the errors each setting avoids: the flags below carry a comment
where a default failed here (2-core VM, root without CAP_SYS_RESOURCE, cgroup v1).

Leaving the host as found: `running()` stops in this order - pods deleted and containerd's tasks
gone (the kubelet has then torn down networks and mounts), controllers, kube-proxy's rules
(`--cleanup`, then the chains and tables netfilter.py finds the kubelet and it left), kubelet,
containerd and its shims, the mirror; the control plane (etcd last) stops in controlplane.py;
then the sysctls the kubelet and the bridge plugin change are restored and the bridge, the cgroup
root, any mount and the folder removed. A SIGTERM/SIGHUP runs that stop (lifetime.terminating);
after a SIGKILL the programs die with their parent (PR_SET_PDEATHSIG) and the next start sweeps
what is left (`sweep`: shims and container processes, mounts, rules and tables, bridge, cgroups,
sysctls), from the state file each node writes first.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.cluster import controlplane, gpu, images, lifetime, mirror, netfilter, tools
from olares_pack.cluster.controlplane import Cluster, free_port
from olares_pack.cluster.tools import ToolsMissing

PREFIX = "olares-pack-node-"
PAUSE_IMAGE = images.PAUSE_IMAGE
GPU = gpu.GPU
READY_TIMEOUT = 90.0
# What the kubelet (vm.*, kernel.*) and the bridge plugin (ip_forward) set; restored at stop.
SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
           "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward")
CGROUP = Path("/sys/fs/cgroup")


class NodeUnavailable(ToolsMissing):
    """This host cannot run a node (not root, no cgroups or overlayfs, programs missing)."""


@dataclass
class Node:
    cluster: Cluster
    name: str
    folder: Path
    gateway: str  # the bridge's address: pods reach the host (a model hub) here
    subnet: str
    mirror: mirror.Mirror
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    dns: Any = None  # cluster DNS (dns.Server) on the bridge's address
    slots: set[int] = field(default_factory=set)  # the device slots with a GPU of their own (add_slot)

    @property
    def ctr(self) -> list[str]:
        return ["ctr", "--address", str(self.folder / "containerd" / "containerd.sock"), "--namespace", "k8s.io"]

    def tasks(self) -> list[str]:
        proc = subprocess.run([*self.ctr, "tasks", "ls", "-q"], capture_output=True, text=True, check=False)
        return proc.stdout.split() if proc.returncode == 0 else []

    def log(self, name: str) -> str:
        p = self.folder / "logs" / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""


def unavailable() -> str | None:
    """Why no node can run here, or None."""
    if os.geteuid() != 0:
        return "a node needs root (containerd, runc, the bridge, iptables, cgroups)"
    if not (CGROUP / "memory").is_dir() and not (CGROUP / "cgroup.controllers").is_file():
        return f"no writable cgroup tree at {CGROUP}"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "overlayfs is not available (containerd's snapshotter)"
    missing = tools.node_missing() + ([tools.missing_reason()] if tools.available() is None else [])
    if missing:
        return "not built or installed: " + ", ".join(missing) + " (`make node` builds and installs them)"
    return None


# ------------------------------------------------------------------ host state


def _hierarchies(unified: bool = False) -> list[Path]:
    """The cgroup hierarchies a cgroupRoot must exist in (v1: each controller's; v2: the one); with
    `unified`, the hybrid layout's v2 tree too (the kubelet creates its folders there as well)."""
    if (CGROUP / "cgroup.controllers").is_file():
        return [CGROUP]
    return [p for p in sorted(CGROUP.iterdir()) if p.is_dir() and not p.is_symlink() and (p / "cgroup.procs").exists()
            and (unified or p.name != "unified")]


def _sysctl_read() -> dict[str, str]:
    out = {}
    for key in SYSCTLS:
        with contextlib.suppress(OSError):
            out[key] = (Path("/proc/sys") / key).read_text().strip()
    return out


def _sysctl_write(values: dict[str, str]) -> None:
    for key, value in values.items():
        with contextlib.suppress(OSError):
            (Path("/proc/sys") / key).write_text(value + "\n")


def _free_subnet() -> str:
    """A /24 under 10.233.0.0/16 no route of this host uses (two nodes side by side get two)."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=False).stdout
    used = [ipaddress.ip_network(w, strict=False) for w in routes.split() if "/" in w and w[0].isdigit()]
    for _ in range(200):
        net = ipaddress.ip_network(f"10.233.{secrets.randbelow(250) + 1}.0/24")
        if not any(net.overlaps(u) for u in used):
            return str(net)
    raise NodeUnavailable("no free /24 under 10.233.0.0/16 for the pod network")


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False)


def _kill_tree_of(folder: Path) -> None:
    """Processes whose command line names the folder (containerd's shims outlive containerd)."""
    me = os.getpid()
    needle = str(folder).encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        with contextlib.suppress(OSError):
            if needle in (d / "cmdline").read_bytes():
                os.kill(int(d.name), signal.SIGKILL)


def _cgroup_procs(root: str) -> list[int]:
    pids = set()
    for h in _hierarchies(unified=True):
        base = h / root.lstrip("/")
        if base.is_dir():
            for procs in base.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(x) for x in procs.read_text().split())
    return sorted(pids)


def _remove_cgroups(root: str) -> None:
    for pid in _cgroup_procs(root):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for h in _hierarchies(unified=True):
        base = h / root.lstrip("/")
        if not base.is_dir():
            continue
        for _ in range(50):
            dirs = sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [base]
            for d in dirs:
                with contextlib.suppress(OSError):
                    d.rmdir()
            if not base.exists():
                break
            time.sleep(0.1)


def _unmount_under(folder: Path) -> None:
    prefix = str(folder)
    for _ in range(3):
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                mounts.append(point)
        if not mounts:
            return
        for point in sorted(mounts, key=len, reverse=True):
            _run("umount", "-l", point)


def _others_alive(mine: Path | None) -> bool:
    """Another live node on this host (iptables' KUBE-* chains are host-wide: its kube-proxy owns them too)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if folder != mine and lifetime.owner_alive(folder):
            return True
    return False


def _netfilter_cleanup(kube_proxy: Path | None, mine: Path | None, before: dict[str, Any] | None) -> None:
    if _others_alive(mine):
        return
    if kube_proxy and kube_proxy.is_file():
        _run(str(kube_proxy), "--cleanup")
    netfilter.restore(before)


def _restore_host(folder: Path, state: dict[str, Any]) -> None:
    """Everything a node leaves on the host besides its processes, from its state file."""
    _kill_tree_of(folder)
    if state.get("cgroup_root"):
        _remove_cgroups(state["cgroup_root"])
    _unmount_under(folder)
    if state.get("bridge"):
        _run("ip", "link", "del", state["bridge"])
    _netfilter_cleanup(tools.kube_path("kube-proxy"), folder, state.get("netfilter"))
    if state.get("sysctls") and not _others_alive(folder):
        _sysctl_write(state["sysctls"])
    _unmount_under(folder)
    shutil.rmtree(folder, ignore_errors=True)


def sweep() -> list[str]:
    """Remove what nodes killed by SIGKILL left (their owner is gone); returns the folders swept."""
    swept = []
    controlplane.sweep()  # the control plane it ran on (its programs died with it too)
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if lifetime.owner_alive(folder):
            continue
        try:
            state = json.loads((folder / "state.json").read_text())
        except (OSError, ValueError):
            state = {}
        _restore_host(folder, state)
        swept.append(str(folder))
    return swept


# ------------------------------------------------------------------ configuration


def _containerd_config(folder: Path, certs_d: Path) -> str:
    c = folder / "containerd"
    return f"""version = 2
root = "{c / 'root'}"
state = "{c / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{c / 'containerd.sock'}"
[ttrpc]
  address = "{c / 'containerd.sock.ttrpc'}"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{c / 'opt'}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails with "runc create failed ...
  # can't get final child's PID from pipe: EOF" (the pause container's oom_score_adj=-998)
  restrict_oom_score_adj = true
  # network namespaces under this node's state, not the host's /run/netns
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{tools.CNI_BIN}"
    conf_dir = "{folder / 'cni' / 'net.d'}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{certs_d}"
"""


def _cni_conflist(folder: Path, bridge: str, subnet: str) -> dict[str, Any]:
    return {"cniVersion": "0.4.0", "name": bridge, "plugins": [
        {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False, "hairpinMode": True,
         "ipam": {"type": "host-local", "dataDir": str(folder / "cni" / "ipam"), "ranges": [[{"subnet": subnet}]],
                  "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}}]}


def _kubelet_config(folder: Path, cgroup_root: str, port: int, healthz: int, dns: str) -> dict[str, Any]:
    return {
        "clusterDNS": [dns], "clusterDomain": "cluster.local",
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs", "cgroupRoot": cgroup_root, "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{folder / 'containerd' / 'containerd.sock'}",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "address": "0.0.0.0", "port": port, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1", "healthzPort": healthz,
        # a shared disk must not taint the node (DiskPressure) nor start image GC
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "nodeStatusUpdateFrequency": "4s", "syncFrequency": "5s", "fileCheckFrequency": "5s",
        "staticPodPath": str(folder / "manifests"), "podLogsDir": str(folder / "pod-logs"),
        "serializeImagePulls": False, "maxPods": 30, "resolvConf": "/etc/resolv.conf",
        "localStorageCapacityIsolation": True, "protectKernelDefaults": False,
        "shutdownGracePeriod": "0s",
    }


# ------------------------------------------------------------------ start and stop


@contextlib.contextmanager
def running(log=None) -> Iterator[Node]:  # noqa: ANN001 - a callable taking one line
    """A control plane and one Ready node until the block ends; NodeUnavailable (with the reason)
    where this host cannot run one."""
    why = unavailable()
    if why:
        raise NodeUnavailable(why)
    say = log or (lambda _line: None)
    avail = tools.available()
    assert avail is not None
    with lifetime.terminating(), _one_at_a_time(say):
        sweep()
        with controlplane.running(avail) as cluster, _node(cluster, say) as node:
            yield node


# A second node's kube-proxy rewrites the host-wide KUBE-SERVICES chain with its own Services only,
# so two nodes on one host break each other's Service routing: a node waits for the one before.
WAIT_FOR_OTHERS = 1800.0


@contextlib.contextmanager
def _one_at_a_time(say) -> Iterator[None]:  # noqa: ANN001
    import fcntl

    lock = tools.cache_root() / "node.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        deadline = time.monotonic() + WAIT_FOR_OTHERS
        told = False
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass
            else:
                if not _others_alive(None):  # one started by a program without this lock
                    break
                fcntl.flock(held, fcntl.LOCK_UN)
            if time.monotonic() > deadline:
                raise NodeUnavailable(f"another node has run on this host for {WAIT_FOR_OTHERS:.0f} s "
                                      "(kube-proxy's chains are host-wide: one node at a time)")
            if not told:
                say("waiting for another node on this host to stop (one node at a time: kube-proxy's chains are host-wide)")
                told = True
            time.sleep(1.0)
        yield  # the kernel drops the lock with the process, however it ends


def _spawn(node: Node, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
    out = open(node.folder / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - the process keeps it
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lifetime.die_with_parent(signal.SIGKILL))
    node.procs[name] = proc
    return proc


@contextlib.contextmanager
def _node(cluster: Cluster, say) -> Iterator[Node]:  # noqa: ANN001
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    lifetime.write_owner(folder)
    ident = folder.name[len(PREFIX):].lower().replace("_", "")[:6]
    bridge, cgroup_root, subnet = f"opk{ident}", f"/olares-pack-{ident}", _free_subnet()
    state = {"bridge": bridge, "cgroup_root": cgroup_root, "subnet": subnet, "sysctls": _sysctl_read(),
             "netfilter": netfilter.snapshot()}
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    for d in ("logs", "manifests", "cni/net.d", "pod-logs", "containerd"):
        (folder / d).mkdir(parents=True, exist_ok=True)
    gateway = str(next(ipaddress.ip_network(subnet).hosts()))
    node = None
    try:
        mir = mirror.start(folder / "mirror", free_port())
        node = Node(cluster, f"olares-pack-{ident}", folder, gateway, subnet, mir)
        node.procs["registry"] = mir.proc
        certs_d = folder / "containerd" / "certs.d"
        mirror.hosts_files(certs_d, mir.host)
        (folder / "containerd" / "config.toml").write_text(_containerd_config(folder, certs_d), encoding="utf-8")
        (folder / "cni" / "net.d" / "10-olares-pack.conflist").write_text(
            json.dumps(_cni_conflist(folder, bridge, subnet), indent=1), encoding="utf-8")
        for h in _hierarchies():
            (h / cgroup_root.lstrip("/")).mkdir(exist_ok=True)
        # the bridge before the first pod (the CNI plugin takes it as it is): the model hub of a live
        # rehearsal listens on its address, which only pods and this host reach
        for cmd in (("link", "add", "name", bridge, "type", "bridge"), ("addr", "add", f"{gateway}/{subnet.split('/')[1]}",
                    "dev", bridge), ("link", "set", bridge, "up")):
            r = _run("ip", *cmd)
            if r.returncode != 0:
                raise NodeUnavailable(f"ip {' '.join(cmd)}: {r.stderr.strip()}")
        from olares_pack.cluster import dns

        def service_ip(ns: str, svc: str) -> str | None:
            obj = cluster.get(f"/api/v1/namespaces/{ns}/services/{svc}")
            return str(obj["spec"].get("clusterIP")) if obj else None

        node.dns = dns.Server(gateway, dns.cached(service_ip))
        _spawn(node, "containerd", ["containerd", "--config", str(folder / "containerd" / "config.toml")])
        images.push_base(node)  # the image every pod needs first (the sandbox's pause)
        k = tools.kube_path
        kubeconfig = str(cluster.kubeconfig)
        (folder / "kubelet.yaml").write_text(json.dumps(_kubelet_config(folder, cgroup_root, free_port(), free_port(), gateway)),
                                             encoding="utf-8")
        _spawn(node, "kubelet", [str(k("kubelet")), f"--config={folder / 'kubelet.yaml'}", f"--kubeconfig={kubeconfig}",
                                 f"--root-dir={folder / 'kubelet'}", f"--cert-dir={folder / 'kubelet-pki'}",
                                 f"--hostname-override={node.name}", f"--pod-infra-container-image={PAUSE_IMAGE}",
                                 "--v=1"])
        assert cluster.home is not None
        _spawn(node, "controller-manager", [
            str(k("kube-controller-manager")), f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--secure-port=0",
            f"--service-account-private-key-file={cluster.home / 'sa.key'}",
            f"--root-ca-file={cluster.ca_file}", "--use-service-account-credentials=false",
            "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service,-route", "--concurrent-gc-syncs=5",
            "--node-monitor-grace-period=60s"])
        _spawn(node, "scheduler", [str(k("kube-scheduler")), f"--kubeconfig={kubeconfig}", "--leader-elect=false",
                                   "--secure-port=0"])
        # iptables mode; port 0 is refused for healthz/metrics; conntrack sysctls are not ours to set.
        # --masquerade-all: a pod reaching a ClusterIP whose endpoint sits on the same bridge gets
        # its answer back through the host (no br_netfilter here)
        _spawn(node, "kube-proxy", [str(k("kube-proxy")), f"--kubeconfig={kubeconfig}", f"--hostname-override={node.name}",
                                    "--proxy-mode=iptables", "--conntrack-max-per-core=0", "--masquerade-all",
                                    f"--cluster-cidr={subnet}",
                                    f"--healthz-bind-address=127.0.0.1:{free_port()}",
                                    f"--metrics-bind-address=127.0.0.1:{free_port()}"])
        _wait_ready(node)
        _fake_gpu(node)
        say(f"node {node.name} Ready (pods on {subnet}, bridge {bridge}, mirror {mir.host})")
        yield node
    finally:
        stop_node(node, folder, state)


def _wait_ready(node: Node) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        for name, proc in node.procs.items():
            if proc.poll() is not None:
                raise NodeUnavailable(f"{name} exited with {proc.returncode}:\n{node.log(name)[-2500:]}")
        obj = node.cluster.get(f"/api/v1/nodes/{node.name}")
        if obj:
            conds = {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions", [])}
            if conds.get("Ready") == "True":
                return
        time.sleep(0.2)
    raise NodeUnavailable(f"node {node.name} not Ready after {READY_TIMEOUT:.0f} s:\n{node.log('kubelet')[-2500:]}")


def _fake_gpu(node: Node, slot: int = 0) -> None:
    """One JSON patch on the status subresource: the scheduler honours it, kubelet restarts keep it."""
    patch = [{"op": "add", "path": f"/status/{part}/{name.replace('/', '~1')}", "value": value}
             for part in ("capacity", "allocatable") for name, value in gpu.slot_capacity(slot).items()]
    data = json.dumps(patch).encode()
    import urllib.request

    req = urllib.request.Request(f"{node.cluster.server}/api/v1/nodes/{node.name}/status", data=data, method="PATCH")
    req.add_header("Authorization", f"Bearer {node.cluster.token}")
    req.add_header("Content-Type", "application/json-patch+json")
    with urllib.request.urlopen(req, context=node.cluster._context, timeout=30) as resp:  # noqa: S310
        if resp.status != 200:
            raise NodeUnavailable(f"the fake GPU patch was refused: {resp.status}")


def add_slot(node: Node, slot: int) -> None:
    """One more one-GPU device on the node, for slot N's charts (cluster/gpu.py); kept until the node stops."""
    if slot and slot not in node.slots:
        _fake_gpu(node, slot)
        node.slots.add(slot)


def _term(proc: subprocess.Popen[bytes] | None, timeout: float = 10) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def delete_pods(node: Node, namespaces: list[str] | None = None, timeout: float = 60) -> None:
    """Every pod (or those of `namespaces`: one device slot's, beside others) deleted at once (grace
    0), then wait until containerd runs no task (or the namespaces have no pod): the kubelet has
    then run CNI DEL and unmounted the volumes."""
    paths = [f"/api/v1/namespaces/{ns}/pods" for ns in namespaces] if namespaces is not None else ["/api/v1/pods"]
    for path in paths:
        for p in (node.cluster.get(path) or {}).get("items", []):
            md = p["metadata"]
            node.cluster.request("DELETE", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                                 {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and node.procs.get("kubelet") and node.procs["kubelet"].poll() is None:
        if namespaces is None and not node.tasks():
            return
        if namespaces is not None and not any((node.cluster.get(p) or {}).get("items") for p in paths):
            return
        time.sleep(0.3)


def stop_node(node: Node | None, folder: Path, state: dict[str, Any]) -> None:
    try:
        if node is not None:
            for name in ("controller-manager", "scheduler"):
                _term(node.procs.get(name))
            with contextlib.suppress(Exception):
                delete_pods(node)
            _term(node.procs.get("kube-proxy"))
            _term(node.procs.get("kubelet"))
            _term(node.procs.get("containerd"))
            _term(node.procs.get("registry"))
            if node.dns is not None:
                node.dns.stop()
    finally:
        _restore_host(folder, state)
