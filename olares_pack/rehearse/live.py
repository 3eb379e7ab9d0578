"""`rehearse --run`: the chart installed on a node here, its pods started, and the app asked what
a client asks - then upgraded from every published version and uninstalled.

Per OS line and per user form the chart has (rehearse/plan.py: the administrator, and a second
user where the form installs for one), with the installer's values (rehearse/run.py):

1. install: the stand-in images are pushed under the chart's own names (cluster/images.py), Helm
   installs as app-service does; then wait until the entrance's Service answers `/v1/models`
   listing the served name (the download, the model check, the engine's start and the probes
   lie on that path) and one chat completion answers through it (the Service's ClusterIP from
   this host, through kube-proxy). A container that exits, or a pod the scheduler cannot place,
   fails the step at once with the engine's own log lines or the scheduler's reason.
2. upgrade from every older published version: the old one installed and answering, then Helm's
   upgrade; the engine pod must be replaced, answer again, and the model must not be downloaded
   a second time (the hub counts each download).
3. uninstall: no pod is left; the shared Hugging Face store stays (what the docs say).

The cycles of a line (the install, each upgrade) run side by side, each on a device slot of its
own (Live.slot, cluster/gpu.py): its users, namespaces, host paths, hub and one GPU.

What stands in (every report says it): the images (cluster/images.py STANDINS), the model
(rehearse/hub.py), and two changes the node needs (rehearse/fit.py: requests lowered to fit 2
cores; a recorded size|sha256 replaced by the stand-in model's); host paths under /olares are
moved into the node's folder.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import semver

from olares_pack.cluster import gpu, images
from olares_pack.cluster import node as nodemod
from olares_pack.cluster.node import Node
from olares_pack.cluster.tools import ToolsMissing
from olares_pack.common.yamlsrc import safe_load_all
from olares_pack.rehearse import fit, flow
from olares_pack.rehearse import hub as hubmod
from olares_pack.rehearse import plan as planner
from olares_pack.rehearse.plan import ChartPlan
from olares_pack.rehearse.run import Rehearsal

ANSWER_TIMEOUT = 240.0
LOG_LINES = 40
# Cycles of one line run side by side in device slots of their own (cluster/gpu.py): a cycle is
# mostly waiting (the kubelet's sync, probes, Helm), and an app upgraded from ten versions took
# 120 s one cycle at a time.
SIDE_BY_SIDE = 4
# How often a step asks the node whether its pods run and the entrance answers: each answer waits
# for the next ask, and an ask is cheap on a kept-alive connection (controlplane.Cluster.request:
# a GET costs client and server about 1 ms of CPU).
POLL = 0.25
_PUSH = threading.Lock()  # the mirror's stand-in images, built and pushed once for every slot
CHANGES = ("cpu and memory requests lowered to fit the node (limits and GPU resources as rendered)",
           "host paths under /olares moved into the node's folder",
           "a MODEL_FILES size|sha256 replaced by the stand-in model's",
           "startup and readiness probes every second from the first (a startup probe keeps the chart's time to start)",
           "the engine wrapper looks for llm-init's sentinel every second (WAIT_INTERVAL=1, its default 5)")
SLOTS = ("cycles side by side, each in a device slot of its own: its own users, namespaces, host paths, hub and "
         "one GPU (GPU resources and shared namespaces renamed for the slot: nvidia.com/gpu-sN, <chart>-shared-sN)")


@dataclass
class LiveStep:
    line: str
    action: str  # install | upgrade | uninstall
    version: str
    user: str
    from_version: str | None = None
    ok: bool = True
    error: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    engine_log: list[str] = field(default_factory=list)
    downloads: int = 0  # model downloads during the step
    served: str = ""
    answer: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.from_version} -> {self.version}" if self.from_version else self.version

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "action": self.action, "from": self.from_version, "version": self.version,
                "user": self.user, "ok": self.ok, "error": self.error, "seconds": self.seconds,
                "downloads": self.downloads, "served": self.served, "answer": self.answer, "note": self.note,
                "engine_log": self.engine_log}


@dataclass
class LiveReport:
    steps: list[LiveStep]
    standins: dict[str, str]  # image -> what stands in for it
    model: str
    changes: tuple[str, ...] = CHANGES
    node: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "node": self.node, "standins": self.standins, "model": self.model,
                "changes": list(self.changes), "steps": [s.to_dict() for s in self.steps]}


class Failed(Exception):
    """A step's failure: the reason, and the engine's own log lines when it has some."""

    def __init__(self, reason: str, log: list[str] | None = None) -> None:
        super().__init__(reason)
        self.log = log or []


# ------------------------------------------------------------------ the node's view


class Live:
    """One device on the node: slot 0 is the node as it is; slot N (side by side, cluster/gpu.py)
    has users, shared namespaces, host paths, a hub and a GPU of its own."""

    def __init__(self, node: Node, hub: hubmod.Hub, home: Path, slot: int = 0) -> None:
        self.node, self.hub, self.home, self.slot = node, hub, home, slot
        home.mkdir(parents=True, exist_ok=True)
        self.standins: dict[str, str] = {}
        self.engine_images: set[str] = set()  # of the chart pushed last
        self.post = fit.script(home)
        sfx = gpu.slot_name(slot)
        self.root = node.folder / (f"olares-{sfx}" if slot else "olares")  # what /olares is on this device
        self.names = flow.Names(f"{planner.ADMIN}-{sfx}", f"{planner.OTHER}-{sfx}", f"-{sfx}") if slot else flow.Names()

    def user(self, name: str) -> str:
        """The user as the report names them (the slot's suffix dropped)."""
        sfx = gpu.slot_name(self.slot)
        return name.removesuffix(f"-{sfx}") if sfx else name

    def rehearsal(self, line: str, *plans: ChartPlan) -> Rehearsal:
        r = Rehearsal(self.node.cluster, self.home, line, post_renderer=self.post, values_hook=self.values)
        r.helm.env["OLARES_PACK_STANDIN_MODEL"] = f"{len(self.hub.data)}|{self.hub.sha256}"
        if self.slot:
            r.helm.env["OLARES_PACK_SLOT"] = str(self.slot)
            r.helm.env["OLARES_PACK_SHARED"] = ",".join(sorted(
                {f"{s['name']}-shared" for p in plans for s in p.sub_charts if s.get("shared")}))
        return r

    def values(self, values: dict[str, Any]) -> dict[str, Any]:
        root = str(self.root)

        def move(v: Any) -> Any:
            if isinstance(v, str) and (v == "/olares" or v.startswith("/olares/")):
                return root + v[len("/olares"):]
            if isinstance(v, dict):
                return {k: move(x) for k, x in v.items()}
            if isinstance(v, list):
                return [move(x) for x in v]
            return v

        out = move(values)
        # the device's Hugging Face service is the hub here: as the app's own env (HF_ENDPOINT, valueFrom
        # OLARES_SYSTEM_HUGGINGFACE_SERVICE on 1.12.6+) and as the system envs the installers set
        oe = out.setdefault("olaresEnv", {})
        for key in ("HF_ENDPOINT", "OLARES_SYSTEM_HUGGINGFACE_SERVICE", "OLARES_USER_HUGGINGFACE_SERVICE"):
            oe[key] = self.hub.url
        return out

    def containers(self, r: Rehearsal, plan: ChartPlan, user: str) -> list[dict[str, Any]]:
        """The containers the chart renders for this user (helm template with the same values)."""
        out = []
        for rel in plan.releases(user):
            res = r.helm.template(rel.name, rel.chart, rel.namespace, r.values(plan, user))
            if not res.ok:
                raise Failed(f"helm template failed: {res.output[-1500:]}")
            for doc in safe_load_all(res.stdout):
                out += fit._containers(doc) if isinstance(doc, dict) else []
        return out

    def push_images(self, r: Rehearsal, plan: ChartPlan, user: str) -> list[str]:
        """Every image the chart names, stood in for; the engine containers' names."""
        engines, engine_images = [], {}
        self.engine_images = set()
        containers = self.containers(r, plan, user)
        for c in containers:
            kind = _engine_kind(c)
            if kind and "llm-init" not in str(c.get("image")):
                engine_images[str(c.get("image"))] = kind
        for c in containers:
            # a container on the engine's image (an older version's download step) gets the engine's stand-in
            kind = images.kind_of(str(c.get("image")), engine_images.get(str(c.get("image"))))
            if kind is None:
                raise Failed(f"no stand-in image for {c.get('image')} (container {c.get('name')}): this node runs only "
                             "llama.cpp and vLLM engines, llm-init, the proxy, busybox and pause")
            try:
                with _PUSH:
                    images.push(self.node, str(c["image"]), kind)
            except ToolsMissing as exc:
                raise Failed(f"the stand-in for {c['image']} could not be made: {exc}") from None
            self.standins[str(c["image"])] = images.stands_for(kind, str(c["image"]))
            if kind in ("llama-server", "vllm"):
                self.engine_images.add(str(c["image"]))
                if _engine_kind(c) and "llm-init" not in str(c.get("image")):
                    engines.append(str(c["name"]))
        return engines

    # -------------------------------------------------------------- pods

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        return list((self.node.cluster.get(f"/api/v1/namespaces/{namespace}/pods") or {}).get("items", []))

    def engine_pods(self, namespace: str, engines: list[str]) -> list[dict[str, Any]]:
        return [p for p in self.pods(namespace) if any(c["name"] in engines for c in p["spec"]["containers"])
                and not p["metadata"].get("deletionTimestamp")]

    def log(self, pod: dict[str, Any], container: str, previous: bool = False) -> list[str]:
        """The container's own last lines. A container that just exited and restarted can show an
        empty log on either side for a moment (the new instance has written nothing yet, the old
        one's file is not flushed): each source is tried, newest restart first, for up to 3 s."""
        md = pod["metadata"]
        d = self.node.folder / "pod-logs" / f"{md['namespace']}_{md['name']}_{md['uid']}" / container
        deadline = time.monotonic() + 3
        while True:
            for prev in ((True, False) if previous else (False, True)):
                status, body = self.node.cluster.request(
                    "GET", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/log?container={container}"
                    f"&tailLines=400{'&previous=true' if prev else ''}")
                if status == 200 and isinstance(body, str) and body.strip():
                    return [ln for ln in body.splitlines() if ln.strip()]
            # the kubelet's own log files (what the API reads), each restart's, newest first
            for f in sorted(d.glob("*.log"), reverse=True) if d.is_dir() else []:
                lines = [ln.split(" ", 3)[-1] for ln in f.read_text(errors="replace").splitlines()]
                if any(ln.strip() for ln in lines):
                    return [ln for ln in lines if ln.strip()]
            if time.monotonic() >= deadline:
                return []
            time.sleep(0.2)

    def _broken(self, namespace: str, engines: list[str], skip: set[str] | None = None) -> Failed | None:
        """A container that exited with an error, or a pod the scheduler cannot place (`skip`: the
        pods an upgrade replaces, whatever state they are in)."""
        for p in self.pods(namespace):
            if p["metadata"]["uid"] in (skip or set()) or p["metadata"].get("deletionTimestamp"):
                continue
            for cond in p.get("status", {}).get("conditions", []) or []:
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
                    return Failed(f"pod {p['metadata']['name']} cannot be scheduled: {cond.get('message')}")
            for cs in (p.get("status", {}).get("initContainerStatuses") or []) + (p.get("status", {}).get("containerStatuses") or []):
                term = (cs.get("lastState") or {}).get("terminated") or (cs.get("state") or {}).get("terminated")
                waiting = (cs.get("state") or {}).get("waiting") or {}
                if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerError"):
                    return Failed(f"{p['metadata']['name']}/{cs['name']}: {waiting.get('reason')}: {waiting.get('message')}")
                if term and term.get("exitCode", 0) != 0:
                    lines = self.log(p, cs["name"], previous=bool((cs.get("lastState") or {}).get("terminated")))
                    said = [ln for ln in lines if "error" in ln.lower() or "fail" in ln.lower()]
                    msg = (term.get("message") or "").strip() or (said or lines or [""])[-1]
                    return Failed(f"{p['metadata']['name']}/{cs['name']} exited with {term.get('exitCode')}: {msg}",
                                  lines[-LOG_LINES:])
        return None

    def service_url(self, plan: ChartPlan, user: str) -> str:
        """The entrance's Service (its host and port in the manifest), by ClusterIP."""
        entrances = [e for e in plan.manifest.get("entrances") or [] if isinstance(e, dict)]
        if not entrances:
            raise Failed("the manifest has no entrance to ask")
        host, port = str(entrances[0].get("host")), int(entrances[0].get("port") or 80)
        for rel in plan.releases(user):
            svc = self.node.cluster.get(f"/api/v1/namespaces/{rel.namespace}/services/{host}")
            if svc:
                return f"http://{svc['spec']['clusterIP']}:{port}"
        raise Failed(f"the entrance's Service {host} does not exist in {plan.namespace(user)}")

    def pod_url(self, plan: ChartPlan, user: str) -> str:
        """The entrance's Service target, at a running pod it selects (ready or not); "" if none."""
        entrances = [e for e in plan.manifest.get("entrances") or [] if isinstance(e, dict)]
        host, port = str(entrances[0].get("host")), int(entrances[0].get("port") or 80)
        for rel in plan.releases(user):
            svc = self.node.cluster.get(f"/api/v1/namespaces/{rel.namespace}/services/{host}")
            if not svc:
                continue
            ports = [p for p in svc["spec"].get("ports") or [] if int(p.get("port", 0)) == port]
            target = (ports[0].get("targetPort") if ports else None) or port
            selector = svc["spec"].get("selector") or {}
            for pod in self.pods(rel.namespace):
                labels = pod["metadata"].get("labels") or {}
                ip = pod.get("status", {}).get("podIP")
                if not ip or pod.get("status", {}).get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
                    continue
                if selector and all(labels.get(k) == v for k, v in selector.items()):
                    named = [cp["containerPort"] for c in pod["spec"]["containers"] for cp in c.get("ports") or []
                             if cp.get("name") == target]
                    return f"http://{ip}:{named[0] if named else target}"
        return ""

    def answer(self, plan: ChartPlan, user: str, engines: list[str], step: LiveStep, t0: float,
               old_uids: set[str] | None = None, at_pod: bool = False) -> None:
        """Wait until /v1/models lists the served name through the entrance, then one chat completion.
        at_pod: the version upgraded from may answer at the pod its entrance Service selects
        before that pod is Ready (a chart's startup probe can wait 60 s before the first try;
        the upgrade's subject is the new version, which answers through the Service)."""
        served = _served_name(plan)
        namespaces = sorted({rel.namespace for rel in plan.releases(user)})
        deadline = time.monotonic() + ANSWER_TIMEOUT
        url, last = "", ""
        while time.monotonic() < deadline:
            for ns in namespaces:
                bad = self._broken(ns, engines, old_uids)
                if bad:
                    raise bad
            if old_uids is not None and "rolled out" not in step.seconds:
                if not all(self.rolled_out(ns) for ns in namespaces):
                    time.sleep(POLL)
                    continue
                step.seconds["rolled out"] = round(time.monotonic() - t0, 1)
                pods = [p for ns in namespaces for p in self.engine_pods(ns, engines)]
                kept = [p["metadata"]["name"] for p in pods if p["metadata"]["uid"] in old_uids]
                step.note += (f"engine pod kept ({', '.join(kept)}): the upgrade does not change its template" if kept
                             else "engine pod replaced")
            try:
                url = url or self.service_url(plan, user)
                try:
                    status, body = _http("GET", url + "/v1/models")
                except OSError:  # no Ready endpoint: the ClusterIP refuses
                    if not at_pod:
                        raise
                    status, body = 0, "connection refused"
                if status != 200 and at_pod and (direct := self.pod_url(plan, user)):
                    s2, b2 = _http("GET", direct + "/v1/models")
                    if s2 == 200:
                        url, status, body = direct, s2, b2
                        step.note += "answered at its pod, before the entrance Service had it Ready. "
                if status == 200:
                    names = [m.get("id") for m in (body or {}).get("data", []) if isinstance(m, dict)]
                    if served and served not in names:
                        raise Failed(f"/v1/models lists {names}, not the served name {served}")
                    step.served = served or (names[0] if names else "")
                    step.seconds["models"] = round(time.monotonic() - t0, 1)
                    break
                last = f"{status} {str(body)[:200]}"
            except Failed:
                raise
            except OSError as exc:
                last = str(exc)
            time.sleep(POLL)
        else:
            logs = [ln for ns in namespaces for p in self.engine_pods(ns, engines) for c in engines
                    for ln in self.log(p, c)][-LOG_LINES:]
            # and what the other containers (llm-init: the download, the proxy) said last
            logs += [f"{c['name']}: {ln}" for ns in namespaces for p in self.pods(ns) for c in p["spec"]["containers"]
                     if c["name"] not in engines and not p["metadata"].get("deletionTimestamp")
                     for ln in self.log(p, c["name"])[-10:]]
            raise Failed(f"the entrance did not answer /v1/models within {ANSWER_TIMEOUT:.0f} s (last: {last})", logs)
        status, body = _http("POST", url + "/v1/chat/completions", {
            "model": step.served, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8,
            "temperature": 0})
        if status != 200:
            raise Failed(f"the chat completion answered {status}: {str(body)[:300]}")
        step.answer = str(((body.get("choices") or [{}])[0].get("message") or {}).get("content", ""))[:200]
        step.seconds["answered"] = round(time.monotonic() - t0, 1)
        step.engine_log = [ln for ns in namespaces for p in self.engine_pods(ns, engines) for c in engines
                           for ln in self.log(p, c)][-LOG_LINES:]

    def rolled_out(self, namespace: str) -> bool:
        """Every Deployment at its new generation with only updated pods (the old ones gone)."""
        for d in (self.node.cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments") or {}).get("items", []):
            st, want = d.get("status", {}), d["spec"].get("replicas", 1)
            if st.get("observedGeneration", 0) < d["metadata"].get("generation", 0):
                return False
            if st.get("updatedReplicas", 0) != want or st.get("replicas", 0) != want:
                return False
        pods = self.pods(namespace)
        return not any(p["metadata"].get("deletionTimestamp") for p in pods)

    def gone(self, plan: ChartPlan, user: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        namespaces = {rel.namespace for rel in plan.releases(user)}
        while time.monotonic() < deadline:
            if not any(self.pods(ns) for ns in namespaces):
                return
            time.sleep(POLL)
        raise Failed(f"pods left after the uninstall: {[p['metadata']['name'] for ns in namespaces for p in self.pods(ns)]}")


def _engine_kind(container: dict[str, Any]) -> str | None:
    """The engine a container runs (llamacpp, vllm), None for another container."""
    words = " ".join(map(str, (container.get("command") or []) + (container.get("args") or [])))
    env = {e.get("name"): e.get("value") for e in container.get("env") or [] if isinstance(e, dict)}
    if env.get("ENGINE_KIND") and "/llm-init/wrappers/" in words:
        return str(env["ENGINE_KIND"])
    if "llama-server" in words:
        return "llamacpp"
    args = [str(a) for a in container.get("args") or []]
    # `vllm serve ...` (the command, or the arguments of an image whose entrypoint is vllm), or its API server module
    if re.search(r"(^|[\s/])vllm serve\b|vllm\.entrypoints\.openai\.api_server", words) or (
            not container.get("command") and args[:1] == ["serve"] and "vllm" in str(container.get("image"))):
        return "vllm"
    # the image's own entrypoint is llama-server (the llama.cpp server images): only its arguments here
    if not container.get("command") and "--model" in args and "vllm" not in str(container.get("image")):
        return "llamacpp"
    return None


def _served_name(plan: ChartPlan) -> str:
    envs = {e.get("envName"): e.get("default") for e in plan.manifest.get("envs") or [] if isinstance(e, dict)}
    return str(envs.get("MODEL_NAME") or "")


def _http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310 - a ClusterIP on this host
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


# ------------------------------------------------------------------ the run

ChartOf = flow.ChartOf
J, R = TypeVar("J"), TypeVar("R")  # a device-slot job and its result (on_device_slots)


def run(node: Node, app: str, version: str, line_versions: dict[str, list[str]], chart_of: ChartOf,
        froms: list[str] | None = None, say: Callable[[str], None] | None = None, fresh: bool = True,
        side_by_side: int = SIDE_BY_SIDE) -> LiveReport:
    """Install VERSION on each line for each user form, upgrade to it from `froms` (default: every
    older published version on the line), uninstall; each step timed. fresh=False: the upgrades
    only (each still ends with the new version answering for every user). The users of one cycle
    install one after the other on the same device (the administrator first: a shared engine is
    theirs, a second user's client reaches it); the cycles of a line run `side_by_side` at a
    time, each on a device slot of its own."""
    import tempfile

    tell = say or (lambda _line: None)
    steps: list[LiveStep] = []
    with tempfile.TemporaryDirectory(prefix="olares-pack-live-") as tmp, contextlib.ExitStack() as hubs:
        hub = hubs.enter_context(hubmod.serving(node.gateway))
        lives = [Live(node, hub, Path(tmp) / "slot0")]
        wide = False
        for target in sorted(line_versions):
            data = chart_of(version, target)
            if data is None:
                continue
            older = [v for v in line_versions[target] if semver.Version.parse(v) < semver.Version.parse(version)]
            olds = {v: chart_of(v, target) for v in (froms if froms is not None else older) if v in older}
            jobs: list[str | None] = ([None] if fresh else []) + [v for v, d in olds.items() if d is not None]

            def cycle(live: Live, v0: str | None, data: bytes = data, target: str = target,
                      olds: dict[str, bytes | None] = olds) -> list[LiveStep]:
                charts = live.home / "charts"
                new = flow.chart_plan(data, charts, target, app, version, live.names)
                if v0 is None:
                    return install_cycle(live, target, new, new.users, tell)
                old = flow.chart_plan(olds[v0] or b"", charts, target, app, v0, live.names)
                users = [u for u in old.users if u in new.users]
                return upgrade_cycle(live, target, old, new, users, tell) if users else []

            width = max(1, min(side_by_side, len(jobs)))
            while len(lives) < width:
                slot = len(lives)
                nodemod.add_slot(node, slot)
                lives.append(Live(node, hubs.enter_context(hubmod.serving(node.gateway, https_port=None)),
                                  Path(tmp) / f"slot{slot}", slot))
            done, apart = on_device_slots(hub, lives[:width], jobs, cycle, tell, f"{target}: the cycles")
            wide = wide or apart
            steps += [s for cycle_steps in done for s in cycle_steps]
        standins = {k: v for live in lives for k, v in live.standins.items()}
        return LiveReport(steps, standins, hubmod.STANDS_FOR, changes(hub) + ((SLOTS,) if wide else ()),
                          node=node.name)


def on_device_slots(hub: hubmod.Hub, lives: list[Live], jobs: list[J], run_one: Callable[[Live, J], R],
                    tell: Callable[[str], None], what: str) -> tuple[list[R], bool]:
    """Each job on the next free device slot, the results in the jobs' order, and whether they ran
    side by side. Where a job fetched https://huggingface.co by name, slot 0's hub answered every
    slot (the DNS has one address for it), so no slot's download count was its own: all again, one
    at a time on slot 0 (`hub` is slot 0's)."""
    asked = sum(hub.https.values())
    out = _each_on_a_slot(lives, jobs, run_one)
    if len(lives) > 1 and sum(hub.https.values()) != asked:
        tell(f"{what}: a chart downloads from huggingface.co by name: again, one at a time")
        return _each_on_a_slot(lives[:1], jobs, run_one), False
    return out, len(lives) > 1


def _each_on_a_slot(lives: list[Live], jobs: list[J], run_one: Callable[[Live, J], R]) -> list[R]:
    if len(lives) == 1:
        return [run_one(lives[0], j) for j in jobs]
    import queue
    from concurrent.futures import ThreadPoolExecutor

    free: queue.SimpleQueue[Live] = queue.SimpleQueue()
    for live in lives:
        free.put(live)

    def one(job: J) -> R:
        live = free.get()
        try:
            return run_one(live, job)
        finally:
            free.put(live)

    with ThreadPoolExecutor(len(lives), thread_name_prefix="olares-pack-slot") as pool:
        return list(pool.map(one, jobs))


def changes(hub: hubmod.Hub) -> tuple[str, ...]:
    """What a run on the node changed of the charts (CHANGES), and the hub standing in for
    https://huggingface.co where a chart asked for it by name."""
    if hub.https:
        return (*CHANGES, f"{hubmod.REDIRECTED}: {', '.join(f'{h} ({n})' for h, n in sorted(hub.https.items()))}")
    if hub.https_error:
        return (*CHANGES, f"no HTTPS for huggingface.co here ({hub.https_error})")
    return CHANGES


def install_cycle(live: Live, target: str, plan: ChartPlan, users: list[str],
                   tell: Callable[[str], None]) -> list[LiveStep]:
    out: list[LiveStep] = []
    r = live.rehearsal(target, plan)
    _fresh(live)
    try:
        for user in users:
            step = LiveStep(target, "install", plan.version, live.user(user))
            out.append(step)
            t0 = time.monotonic()
            before = sum(live.hub.downloads.values())
            engines = live.push_images(r, plan, user)
            step.seconds["images"] = round(time.monotonic() - t0, 1)
            inst = r.install(_one_user(plan, user))
            if not all(s.ok for s in inst):
                raise Failed("; ".join(s.error for s in inst if not s.ok))
            step.seconds["helm"] = round(time.monotonic() - t0, 1)
            live.answer(plan, user, engines, step, t0)
            step.downloads = sum(live.hub.downloads.values()) - before
            tell(f"{target} {plan.version} ({step.user}): answered in {step.seconds['answered']} s")
        un = LiveStep(target, "uninstall", plan.version, ", ".join(map(live.user, users)))
        out.append(un)
        t1 = time.monotonic()
        r.clean()
        for user in users:
            live.gone(plan, user)
        un.seconds["gone"] = round(time.monotonic() - t1, 1)
        hf = live.root / "share" / "appcommon" / "huggingface"
        un.note = ("the shared Hugging Face store stays (the model is not downloaded again by a reinstall)"
                   if any(hf.glob("models--*")) else "")
    except Failed as exc:
        failing = out[-1]
        failing.ok, failing.error, failing.engine_log = False, str(exc), exc.log or failing.engine_log
    finally:
        _clean(live, r, plan, users)
    return out


def _clean(live: Live, r: Rehearsal, plan: ChartPlan, users: list[str]) -> None:
    """Uninstall what the cycle made and wait until its pods are gone (the next one needs the GPU)."""
    r.clean()
    try:
        for user in users:
            live.gone(plan, user)
    except Failed:
        nodemod.delete_pods(live.node, sorted({rel.namespace for user in users for rel in plan.releases(user)}))


def upgrade_cycle(live: Live, target: str, old: ChartPlan, new: ChartPlan, users: list[str],
                   tell: Callable[[str], None]) -> list[LiveStep]:
    steps = [LiveStep(target, "upgrade", new.version, live.user(user), old.version) for user in users]
    named = dict(zip(map(id, steps), users, strict=True))  # each step's user as the slot names them
    r = live.rehearsal(target, old, new)
    _fresh(live)
    step = steps[0]
    try:
        old_images: set[str] = set()
        engines_old: dict[str, list[str]] = {}
        t0 = time.monotonic()
        for step in steps:
            user = named[id(step)]
            first = LiveStep(target, "install", old.version, step.user)
            engines_old[user] = live.push_images(r, old, user)
            old_images |= live.engine_images
            inst = r.install(_one_user(old, user))
            if not all(s.ok for s in inst):
                raise Failed(f"{old.version} did not install: " + "; ".join(s.error for s in inst if not s.ok))
            engines = live.push_images(r, new, user)
            try:
                live.answer(old, user, engines_old[user], first, t0, at_pod=True)
                step.seconds["old answered"] = first.seconds.get("answered", 0.0)
                step.note += f"{old.version} {first.note}" if first.note else ""
            except Failed as exc:
                if old_images <= live.engine_images:
                    raise Failed(f"{old.version} (the version upgraded from) did not answer: {exc}", exc.log) from None
                # the old version's engine image is another build than the one the stand-in is: its
                # failure says nothing about this version; the upgrade goes on from what it left
                step.note = (f"{old.version} did not answer on the stand-in ({exc}); its engine image "
                             f"{', '.join(sorted(old_images - live.engine_images))} is another llama.cpp build than "
                             f"the stand-in ({images.LLAMA_BUILD}); the upgrade went on from the state it left. ")
        had = set(live.hub.downloads)  # the files the old version downloaded
        for step in steps:
            user = named[id(step)]
            uids = {p["metadata"]["uid"] for rel in old.releases(user)
                    for p in live.engine_pods(rel.namespace, engines_old[user])}
            engines = live.push_images(r, new, user)
            before = dict(live.hub.downloads)
            t1 = time.monotonic()
            ups = r.upgrade(_one_user(old, user), _one_user(new, user))
            if not all(s.ok for s in ups):
                raise Failed("; ".join(s.error for s in ups if not s.ok))
            step.seconds["helm"] = round(time.monotonic() - t1, 1)
            live.answer(new, user, engines, step, t1, old_uids=uids)
            fetched = {k: n - before.get(k, 0) for k, n in live.hub.downloads.items() if n > before.get(k, 0)}
            step.downloads = sum(fetched.values())
            again = sorted(k for k in fetched if k in had)
            if again:
                raise Failed(f"the upgrade downloaded the model again ({', '.join(again)}): "
                             f"{old.version} kept it where {new.version} does not look")
            if fetched:
                step.note += f" {new.version} downloads its own model ({', '.join(sorted(fetched))}), not {old.version}'s."
            tell(f"{target} {old.version} -> {new.version} ({step.user}): answered in {step.seconds['answered']} s"
                 + (", model not downloaded again" if had and not fetched else ""))
    except Failed as exc:
        step.ok, step.error, step.engine_log = False, str(exc), exc.log or step.engine_log
        for later in steps[steps.index(step) + 1:]:
            later.ok, later.error = False, f"not run: {step.user}'s step failed"
    finally:
        _clean(live, r, new, users)
    return steps


def _fresh(live: Live) -> None:
    """A device as new: the host paths the last cycle wrote (the shared model store, app data) removed."""
    import shutil

    shutil.rmtree(live.root, ignore_errors=True)
    live.hub.downloads.clear()


def _one_user(plan: ChartPlan, user: str) -> ChartPlan:
    """The plan for one user (the Rehearsal's install/upgrade walk plan.users)."""
    import dataclasses

    return dataclasses.replace(plan, users=[user])
