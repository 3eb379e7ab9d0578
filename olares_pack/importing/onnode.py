"""`import --structured --run`: a typed import run on a node here, both ways (issue #50 item 5).

The proof (olares_pack/proof/) says the typed render makes the same objects as the chart; this
says both start and answer alike. On a node (cluster/node.py), with the stand-in images and model
rehearse --run uses (rehearse/live.py), each on a fresh device (the two ways side by side, each on
a device slot of its own, where neither chart fetches huggingface.co by name or has a shared
sub-chart):

1. the original chart, at its own version, installed with the installer's values in namespaces
   and releases of its own (`<app>-<user>-orig`), until the entrance's Service lists the served
   model name on /v1/models and answers one chat completion; then uninstalled;
2. the typed render, at the version the import writes (`<app>-<user>-typed`), the same way;
3. the upgrade a device makes: the original installed, then upgraded to the typed render
   (`<app>-<user>-up`), which must answer again without downloading the model a second time.

Both must answer the same served model name (what /v1/models lists) on the same entrance port
(the manifest's entrance host and port, the Service live.py reached). The comparison reads only
what the node answered: it shares nothing with the importer's reading of the arguments.

A per-user chart installs for the administrator only (a second user's engine would need a second
GPU on this node); a shared chart for both users (the second user's client reaches the
administrator's engine).

What cannot run here is said with the check used instead: an engine fork (the stand-in is
upstream llama-server, another program than the fork's), vLLM and every server that is not
llama.cpp, an image no stand-in serves (cluster/images.py), a chart with no GPU container.

A download step on `alpine` runs on busybox (cluster/images.py: Alpine's userland is busybox's
applets; apk is not there), when its script calls only applets; one that needs `apk add` (the
Internet) or another program is not run. Such a step downloads from https://huggingface.co by
name: the node's DNS answers Hugging Face's names with the stand-in hub's address, which serves
HTTPS too (rehearse/hub.py), and the report says so (hub.REDIRECTED).
"""

from __future__ import annotations

import contextlib
import gzip
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WAYS = ("original", "typed")
RUN_IDS = {"original": "orig", "typed": "typed", "upgrade": "up"}


@dataclass
class Way:
    """One way the app ran: its steps as rehearse/live.py reports them, and the entrance asked."""

    way: str  # original | typed | upgrade
    version: str
    line: str
    namespaces: list[str]
    entrance: str  # host:port of the manifest's first entrance
    steps: list[Any]  # live.LiveStep
    from_version: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def answers(self) -> dict[str, tuple[str, str]]:
        """user -> (served name, entrance) of every step that answered a chat completion."""
        return {s.user: (s.served, self.entrance) for s in self.steps
                if s.action in ("install", "upgrade") and s.ok and "answered" in s.seconds}

    def to_dict(self) -> dict[str, Any]:
        return {"way": self.way, "version": self.version, "from": self.from_version, "line": self.line,
                "namespaces": self.namespaces, "entrance": self.entrance, "ok": self.ok,
                "steps": [s.to_dict() for s in self.steps]}


@dataclass
class NodeRun:
    """What `--run` did for one typed app."""

    app: str
    ran: bool
    why_not: str = ""  # when it did not run: why
    check: str = ""  # when it did not run: the check used instead
    not_run: str = ""  # when it did not run: the stable id of why (NOT_RUN)
    ways: list[Way] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    standins: dict[str, str] = field(default_factory=dict)
    model: str = ""
    changes: list[str] = field(default_factory=list)
    node: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def engine_log(self) -> list[str]:
        """The engine's own lines of the first step that failed."""
        return next((s.engine_log for w in self.ways for s in w.steps if not s.ok and s.engine_log), [])

    def to_dict(self) -> dict[str, Any]:
        return {"app": self.app, "ran": self.ran, "ok": self.ok, "not_run": self.not_run or None, "why_not": self.why_not or None,
                "check": self.check or None, "failures": self.failures, "node": self.node,
                "standins": self.standins, "model": self.model, "changes": self.changes,
                "seconds": round(self.seconds, 1), "ways": [w.to_dict() for w in self.ways]}

    def lines(self) -> list[str]:
        """The report in words, one line each."""
        if not self.ran:
            return [f"not run on the node ({self.not_run}): {self.why_not}; checked instead by {self.check}"]
        out = []
        for w in self.ways:
            label = f"{w.way} {w.from_version} -> {w.version}" if w.from_version else f"{w.way} {w.version}"
            for s in w.steps:
                secs = ", ".join(f"{k} {v}" for k, v in s.seconds.items())
                if s.ok and s.action != "uninstall":
                    said = f"served {s.served!r} on {w.entrance}, answered {s.answer!r}"
                elif s.ok:
                    said = "uninstalled, no pod left"
                else:
                    said = "FAILED: " + s.error
                out.append(f"{label} ({w.line}, {s.action}, {s.user}, {', '.join(w.namespaces)}): {said}"
                           + (f" [{secs} s]" if secs else "") + (f"; {s.note.strip()}" if s.note.strip() else ""))
        out += [f"FAILED: {f}" for f in self.failures]
        if log := self.engine_log():
            out += ["the engine's log:", *[f"  {ln}" for ln in log[-12:]]]
        out.append(f"ran on node {self.node} in {self.seconds:.0f} s, stand-ins: "
                   + "; ".join(f"{img}: {what}" for img, what in sorted(self.standins.items()))
                   + f"; model: {self.model}; changed for the node: {'; '.join(self.changes)}")
        return out


# ------------------------------------------------------------------ what can run here


NOT_RUN = {
    "standin.vllm": "a vLLM engine: no stand-in runs vLLM",
    "standin.server": "a GPU server that is not llama.cpp (the generic kind)",
    "standin.fork": "a llama.cpp fork: the stand-in is upstream llama-server",
    "standin.image": "an image no stand-in serves (a curl image, a dashboard, ...), or an alpine step whose script "
                     "needs more than busybox's applets (apk add)",
    "standin.build": "the chart's llama.cpp build takes an argument the stand-in's build (llama-server b11434) no longer has",
    "standin.render": "the chart does not render for the node",
    "standin.line": "the typed app does not target the line of the chart it replaces",
}


def why_not(name: str, files: dict[str, str], engine: dict[str, Any] | None) -> tuple[str, str, str] | None:
    """(NOT_RUN id, why the app cannot run on the node here, the check used instead), or None when
    every image it names has a stand-in. `engine` is the typed app's engine (kind, image)."""
    from olares_pack.cluster import images
    from olares_pack.proof import charts as proof

    proof_words = "the independent proof alone (every object compared as rendered, arguments as written)"
    kind = (engine or {}).get("kind")
    image = _image(engine)
    if kind == "vllm":
        return ("standin.vllm", f"no stand-in runs vLLM ({image}): this node runs llama.cpp engines only",
                proof_words + ", vLLM's arguments with their spelling as written")
    if kind != "llamacpp":
        return ("standin.server", f"no stand-in runs this server ({kind or 'no engine'}{', ' + image if image else ''}): this node "
                "runs llama.cpp engines only", proof_words)
    fork, build = proof._fork(image)
    if fork:
        return ("standin.fork", f"{image} is a llama.cpp fork: the stand-in is upstream llama-server {images.LLAMA_BUILD}, another "
                "program", proof_words + " and llama-server's parser with the fork's own flags and values set aside")
    try:
        containers = _containers(name, files)
    except Exception as exc:  # noqa: BLE001 - a chart that does not render here is not run
        return "standin.render", f"the chart does not render for the node: {str(exc).splitlines()[0]}", proof_words
    for c in containers:
        img = str(c.get("image", ""))
        if img != image and images.kind_of(img) is None:
            return ("standin.image", f"no stand-in image for {img} (container {c.get('name')}): this node stands in for llama.cpp, "
                    "llm-init, busybox, alpine (as busybox), the client proxy and pause",
                    proof_words + " and llama-server's own parser")
        if img != image and images.kind_of(img) == "alpine" and (missing := images.alpine_missing(_script(c))):
            return ("standin.image", f"{img} (container {c.get('name')}) runs {', '.join(missing)}: the alpine stand-in is "
                    "busybox 1.35, applets only, no apk (installing needs the Internet)",
                    proof_words + " and llama-server's own parser")
    if gap := _build_gap(image, containers):
        build, table, flags = gap
        told = build if table == build else f"{build}, read as {table}, the flag table's nearest"
        return ("standin.build", f"{image} (llama.cpp {told}) is run with {', '.join(flags)}, which the stand-in llama-server "
                f"{images.LLAMA_BUILD} no longer takes: it would refuse the argv (another build, not the chart's fault)",
                proof_words + f" and the flags of llama.cpp {table}")
    return None


def _build_gap(image: str, containers: list[dict[str, Any]]) -> tuple[str, str, list[str]] | None:
    """(the chart's llama.cpp build, the flag table's build read for it, the flags of its engine's argv that build takes and the
    stand-in's build does not), None when there are none or the build is not told by the tag."""
    from olares_pack.cluster import images
    from olares_pack.engines import registry

    build = registry.tag_build(registry.image_parts(image)[1])
    standin_build = "b" + images.LLAMA_BUILD.lstrip("b")
    if not build or build == standin_build:
        return None
    chart = registry.resolve("llamacpp", build, "the image's tag").registry
    standin = registry.resolve("llamacpp", standin_build, "the stand-in").registry
    flags: list[str] = []
    for c in containers:
        if str(c.get("image", "")) != image:
            continue
        for word in (str(w) for w in (c.get("command") or []) + (c.get("args") or [])):
            flag = word.split("=", 1)[0]
            if flag.startswith("-") and chart.lookup(flag) and not standin.lookup(flag) and flag not in flags:
                flags.append(flag)
    return (build, chart.build, flags) if flags else None


def _script(container: dict[str, Any]) -> str:
    """What a container runs, as one shell text (`sh -c SCRIPT`: the script; else the words)."""
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("sh", "ash", "bash") and words[1] in ("-c", "-ec", "-ce"):
        return "\n".join(words[2:3])
    return " ".join(words)


def _image(engine: dict[str, Any] | None) -> str:
    img = (engine or {}).get("image") or {}
    if isinstance(img, str):
        return img
    repo, tag, digest = img.get("repository") or "", img.get("tag"), img.get("digest")
    return f"{repo}:{tag}" if tag else f"{repo}@{digest}" if digest else repo


def _containers(name: str, files: dict[str, str]) -> list[dict[str, Any]]:
    from olares_pack.charts import helm
    from olares_pack.common.yamlsrc import safe_load
    from olares_pack.render.imported import objects_of

    manifest = safe_load(helm.installed_manifest(files, name)) or {}
    out = []
    for o in objects_of(name, files, manifest, "nvidia", owner="alice", admin="alice"):
        spec = (o.get("spec") or {})
        if o.get("kind") == "CronJob":
            spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        pod = (spec.get("template") or {}).get("spec") or {}
        out += [c for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])] if isinstance(c, dict)]
    return out


# ------------------------------------------------------------------ the run


@dataclass(frozen=True)
class Chart:
    """A chart to run: its version and its package's bytes."""

    version: str
    data: bytes


def run(node: Any, app: str, line: str, original: Chart, typed: Chart, *, upgrade_from: list[Chart] | None = None,
        say: Callable[[str], None] | None = None) -> NodeRun:
    """The original and the typed render, each installed on a fresh device of `node` and asked;
    then upgraded to the typed render from the original and from each of `upgrade_from`
    (default: the original alone). The answers compared."""
    from olares_pack.rehearse import flow, live
    from olares_pack.rehearse import hub as hubmod

    tell = say or (lambda _line: None)
    out = NodeRun(app, True, node=node.name)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="olares-pack-import-run-") as tmp, contextlib.ExitStack() as hubs:
        hub = hubs.enter_context(hubmod.serving(node.gateway))
        lv = live.Live(node, hub, Path(tmp))

        def plan(chart: Chart, run_id: str, folder: str) -> Any:
            return flow.chart_plan(chart.data, Path(tmp) / folder, line, app, chart.version, flow.Names.of_run(run_id))

        plans = {way: plan(chart, RUN_IDS[way], RUN_IDS[way]) for way, chart in zip(WAYS, (original, typed), strict=True)}

        def install(on: Any, way: str) -> Way:
            p = plans[way]
            users = _users(p)
            tell(f"{app}: the {way} chart ({p.version}) on the node")
            return Way(way, p.version, line, _namespaces(p, users), _entrance(p), live.install_cycle(on, line, p, users, tell))

        # The two ways side by side, the typed one on a device slot of its own (its host paths, hub
        # and GPU: rehearse/live.py), unless a chart fetches https://huggingface.co by name (the DNS
        # has one address for it, slot 0's hub, which would count the other slot's download) or has
        # a shared sub-chart (a slot renames the shared namespace the chart names to its own, and
        # this run names it after the way).
        lives = [lv]
        if not any(_names_huggingface(c) for c in (original, typed)) and not any(
                s.get("shared") for p in plans.values() for s in p.sub_charts):
            from olares_pack.cluster import node as nodemod

            nodemod.add_slot(node, 1)
            lives.append(live.Live(node, hubs.enter_context(hubmod.serving(node.gateway, https_port=None)),
                                   Path(tmp) / "slot1", 1))
        ways, apart = live.on_device_slots(hub, lives, list(WAYS), install, tell, f"{app}: both ways")
        out.ways += ways
        froms = [original, *[c for c in upgrade_from or [] if c.version != original.version]]
        if all(w.ok for w in out.ways):  # an upgrade of what does not start says nothing new
            for i, old in enumerate(froms):
                run_id = RUN_IDS["upgrade"] + (str(i) if i else "")
                # one release, old and new: the same names, each chart in a folder of its own
                po = plan(old, run_id, run_id + "-old")
                pn = plan(typed, run_id, run_id + "-new")
                users = [u for u in _users(po) if u in pn.users]
                tell(f"{app}: {old.version} upgraded to the typed {typed.version} on the node")
                steps = live.upgrade_cycle(lv, line, po, pn, users, tell)
                out.ways.append(Way("upgrade", typed.version, line, _namespaces(pn, users), _entrance(pn), steps,
                                    from_version=old.version))
        out.standins, out.model = {k: v for one in lives for k, v in one.standins.items()}, hubmod.STANDS_FOR
        out.changes = list(live.changes(hub)) + ([live.SLOTS] if apart else [])
    out.seconds = time.monotonic() - t0
    out.failures = compare(out.ways)
    return out


def _names_huggingface(chart: Chart) -> bool:
    """The chart's files name huggingface.co (a download step that asks for it by name)."""
    return b"huggingface.co" in gzip.decompress(chart.data)


def _users(p: Any) -> list[str]:
    """A per-user chart: the administrator (a second user's engine needs a second GPU here)."""
    return list(p.users[:1]) if p.form == "per-user" else list(p.users)


def _namespaces(p: Any, users: list[str]) -> list[str]:
    return sorted({rel.namespace for u in users for rel in p.releases(u)})


def _entrance(p: Any) -> str:
    entrances = [e for e in p.manifest.get("entrances") or [] if isinstance(e, dict)]
    return f"{entrances[0].get('host')}:{entrances[0].get('port') or 80}" if entrances else "(no entrance)"


def compare(ways: list[Way]) -> list[str]:
    """What differs between the ways: a step that failed (its error; the engine's lines are in the
    step), or an answer that is not the original's (served model name, entrance port)."""
    out = []
    for w in ways:
        for s in w.steps:
            if not s.ok:
                label = f"{w.from_version} -> {w.version}" if w.from_version else w.version
                out.append(f"the {w.way} chart ({label}, {s.action} for {s.user}) failed on the node: {s.error}")
    by_way = {w.way: w for w in ways}
    if "original" in by_way and "typed" in by_way and by_way["original"].ok and by_way["typed"].ok:
        a, b = by_way["original"].answers(), by_way["typed"].answers()
        # the users are named after each run (alice-orig, alice-typed): compared in install order
        for (ua, (served_a, ent_a)), (ub, (served_b, ent_b)) in zip(a.items(), b.items(), strict=False):
            if served_a != served_b:
                out.append(f"served model name: the original answers {served_a!r} ({ua}), the typed render "
                           f"{served_b!r} ({ub})")
            if ent_a.rsplit(":", 1)[-1] != ent_b.rsplit(":", 1)[-1]:
                out.append(f"entrance port: the original answers on {ent_a}, the typed render on {ent_b}")
        if len(a) != len(b):
            out.append(f"users answered: the original for {len(a)}, the typed render for {len(b)}")
    for w in ways:
        if w.way == "upgrade" and w.ok and "original" in by_way:
            want = {served for served, _ in by_way["original"].answers().values()}
            got = {served for served, _ in w.answers().values()}
            if got != want:
                out.append(f"after the upgrade from {w.from_version} the typed render answers {sorted(got)}, "
                           f"the original {sorted(want)}")
    return out


# ------------------------------------------------------------------ figures


def step_times(runs: list[NodeRun]) -> dict[str, dict[str, float]]:
    """Per way and timed point (images, helm, models, answered, ...): the median seconds."""
    found: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        for w in r.ways:
            for s in w.steps:
                if s.ok:
                    for k, v in s.seconds.items():
                        label = w.way if w.way == s.action else f"{w.way} {s.action}"
                        found.setdefault(label, {}).setdefault(k, []).append(v)
    return {way: {k: round(statistics.median(v), 1) for k, v in points.items()} for way, points in found.items()}


# ------------------------------------------------------------------ an import's plan


def plan_runs(plan: Any, node_of: Callable[[], Any], *, all_upgrades: bool = False,
              say: Callable[[str], None] | None = None) -> dict[str, NodeRun]:
    """`--run` over an import's plan: every typed app, on the line of the chart it replaces, run
    both ways on one node (started by `node_of` only when an app can run here); what cannot run
    says why and what checked it instead. all_upgrades: upgrade to the typed render from every
    published chart of that line, not only the one it replaces."""
    from contextlib import ExitStack

    from olares_pack.charts import package
    from olares_pack.importing import importer

    out: dict[str, NodeRun] = {}
    todo = []
    for name, (newest, data) in sorted(plan.typed.items()):
        line = newest.line
        files = newest.found.files
        if line not in (data.get("targets") or [line]):
            out[name] = NodeRun(name, False, f"the typed app does not target {line}, the line of the chart it replaces",
                                "the independent proof", not_run="standin.line")
            continue
        if reason := why_not(name, files, data.get("engine")):
            out[name] = NodeRun(name, False, reason[1], reason[2], not_run=reason[0])
            continue
        typed_files = importer.render_app(data, line)
        original = Chart(newest.chart_version, _archive(name, newest.found))
        typed = Chart(str(data["version"]), package.build_archive(name, typed_files))
        older = [Chart(i.chart_version, _archive(name, i.found))
                 for i in plan.charts.get(name, []) if i.line == line and i is not newest] if all_upgrades else []
        todo.append((name, line, original, typed, older))
    if todo:
        with ExitStack() as stack:
            node = stack.enter_context(node_of())
            for name, line, original, typed, older in todo:
                try:
                    out[name] = run(node, name, line, original, typed, upgrade_from=older, say=say)
                except Exception as exc:  # noqa: BLE001 - one app that cannot be planned does not stop the others
                    out[name] = NodeRun(name, True, node=node.name,
                                        failures=[f"could not be run: {type(exc).__name__}: {str(exc).splitlines()[0]}"])
    return out


def _archive(name: str, found: Any) -> bytes:
    """The chart's files as a package whose folder is the app's name (what the installer unpacks:
    a source folder or archive may be named otherwise, `tinychat-1.0.1/`)."""
    from olares_pack.charts import package

    return package.compress(package.build_tar(name, {**found.files, **found.binary}))


def note(r: NodeRun) -> str:
    """The import report's note for one app."""
    if not r.ran:
        return f"--run: not run on the node ({r.not_run}): {r.why_not}; checked instead by {r.check}"
    if not r.ok:
        return "--run FAILED: " + "; ".join(r.failures)
    by = {w.way: w for w in r.ways}
    o, t = by["original"], by["typed"]
    served = sorted({s for s, _ in o.answers().values()})
    ups = [w.from_version for w in r.ways if w.way == "upgrade"]
    return (f"--run: the original {o.version} and the typed {t.version} both answered {', '.join(map(repr, served))} "
            f"on {o.entrance} ({', '.join(s.user for s in o.steps if s.action == 'install')} / "
            f"{', '.join(s.user for s in t.steps if s.action == 'install')})"
            + (f"; upgraded from {', '.join(map(str, ups))} to the typed {t.version}, answering again" if ups else "")
            + f"; {r.seconds:.0f} s on node {r.node}")
