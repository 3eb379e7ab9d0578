"""`release`'s rehearsal: the new version installed, and upgraded to from every older published
version on each OS line (as `rehearse --from-all`), on a real API server (built here with `make
control-plane`, or given with --kubeconfig). Without one, `release` refuses; `--skip-rehearsal
REASON` is the one way past, and the reason is kept in the release record. The record keeps what
ran: the API server's and Helm's versions, and each step with its outcome.

An install or upgrade the server refuses is an error (an installer's refusal: never allowed). A
renamed workload or a persistent path that moved is a policy error, unless `--allow` names its
rule or the version's changelog declares it (names the workload or the path)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from olares_pack.common.errors import InputError

if TYPE_CHECKING:
    from olares_pack.catalogue.records import Rehearsal
    from olares_pack.catalogue.releases import ReleasePlan
    from olares_pack.catalogue.repo import Repo

POLICY_RULES = ("rehearse.renamed-workload", "rehearse.data-path")


def owns(rule: str) -> bool:
    """Whether `--allow RULE` names one of the rehearsal's rules (checked here, not by lint)."""
    if not rule.startswith("rehearse."):
        return False
    if rule not in POLICY_RULES:
        raise InputError(f"--allow {rule}: only the rehearsal's policy rules can be allowed ({', '.join(POLICY_RULES)}); "
                         "an install or upgrade the server refuses cannot")
    return True


@dataclass(frozen=True)
class Outcome:
    rule: str
    severity: str
    message: str


BUILD_HINT = "make control-plane"  # the Makefile target that builds kube-apiserver, etcd and Helm here


class NoControlPlane(Exception):
    """No API server to rehearse on: `release` refuses (exit 1) and says how to get one."""


@dataclass(frozen=True)
class Rehearsed:
    outcomes: list[Outcome]
    record: Rehearsal


def skipped(reason: str) -> Rehearsal:
    from olares_pack.catalogue.records import Rehearsal

    return Rehearsal(skipped=reason)


def check(repo: Repo, plan: ReleasePlan, allow: tuple[str, ...], kubeconfig: Path | None = None,
          run: bool = False) -> Rehearsed:
    """Install the new version, and upgrade to it from every older published version on each line.
    NoControlPlane when there is nothing to rehearse on; nothing is ever built here. With `run`
    (`release`), where a node can run here, the new version is also run on it (run_on_node)."""
    from olares_pack.catalogue import checks, records
    from olares_pack.cluster import controlplane, tools
    from olares_pack.rehearse import flow

    helm = tools.helm_path()
    if kubeconfig is None and tools.available() is None:
        raise NoControlPlane(f"no control plane here to rehearse the install and upgrades on: {tools.missing_reason()}")
    if kubeconfig is not None and not helm.is_file():
        raise NoControlPlane(f"helm {tools.HELM_VERSION} is not built here ({helm}): `{BUILD_HINT}` builds it")
    app = plan.app
    new = {b.target: b.data for b in plan.packages}
    published = [v for v in records.versions(repo, app.name) if v != app.version]
    recs = {v: records.read(repo, app.name, v) for v in published}
    lines = {t: [v for v in published if t in recs[v].charts] + [app.version] for t in new}
    older = [v for v in published if _older(v, app.version)]

    def chart_of(version: str, target: str) -> bytes | None:
        if version == app.version:
            return new.get(target)
        rec = recs.get(version)
        return checks.published_bytes(repo, rec, target)[0] if rec and target in rec.charts else None

    if kubeconfig is None:
        avail = tools.available()
        assert avail is not None
        with controlplane.running(avail) as cluster:
            steps = flow.rehearse(cluster, app.name, app.version, lines, chart_of, older)
            where = f"kube-apiserver {cluster.version or tools.KUBE_VERSION} (built here, on loopback)"
    else:
        import secrets

        from olares_pack.rehearse import cleanup

        run_id = "rh" + secrets.token_hex(3)
        names = flow.Names.of_run(run_id)
        cluster = controlplane.from_kubeconfig(kubeconfig, helm)
        try:
            steps = flow.rehearse(cluster, app.name, app.version, lines, chart_of, older, names, held=True)
        finally:
            cleanup.namespaces(kubeconfig, run_id)
        where = f"kube-apiserver {_server_version(kubeconfig)} (--kubeconfig {kubeconfig.name})"
    outcomes = judge(steps, allow, _declared_text(plan))
    record = record_of(steps, where, f"helm {tools.HELM_VERSION}")
    if run and kubeconfig is None and not any(o.severity == "error" for o in outcomes):
        outcomes += run_on_node(record, app.name, app.version, lines, chart_of)
    return Rehearsed(outcomes, record)


NODE_OFF = "OLARES_PACK_NODE"  # "0": never start a node (the test suite's other modules set it)


def run_on_node(record: Rehearsal, app: str, version: str, lines: dict[str, list[str]],
                chart_of: Callable[[str, str], bytes | None]) -> list[Outcome]:
    """Where a node can run here: the new version installed on each line, its engine started and
    asked (/v1/models, one chat completion through the entrance's Service), and the upgrade from
    the previous published version on each line; a step that fails is an error (the engine's own
    lines in the message). The record keeps the node, the stand-ins and each step's times."""
    import os

    from olares_pack.catalogue.records import RanStep
    from olares_pack.cluster import node
    from olares_pack.common import console
    from olares_pack.rehearse import flow, live

    if os.environ.get(NODE_OFF) == "0":
        return [Outcome("rehearse.run", "info", f"not run on a node ({NODE_OFF}=0)")]
    why = node.unavailable()
    if why:
        return [Outcome("rehearse.run", "info", f"not run on a node: {why}")]
    froms = sorted({p for vs in lines.values() if (p := flow.previous([v for v in vs if v != version], version))})
    try:
        with node.running(console.info) as n:
            report = live.run(n, app, version, lines, chart_of, froms, console.info)
    except node.NodeUnavailable as exc:
        return [Outcome("rehearse.run", "info", f"not run on a node: {exc}")]
    record.node = f"{n.name}: kubelet {node.tools.KUBE_VERSION}, containerd and runc (Debian)"
    record.standins = {**report.standins, "model": report.model}
    record.ran = [RanStep(line=s.line, action=s.action, from_version=s.from_version, version=s.version, user=s.user,
                          ok=s.ok, error=s.error[:500], seconds=s.seconds, engine_log=s.engine_log[-20:])
                  for s in report.steps]
    out = []
    for s in report.steps:
        where = f"{s.line} {s.label} ({s.user})"
        if s.ok:
            out.append(Outcome("rehearse.run", "info", f"{where}: {s.action} ran on the node here, "
                               + ", ".join(f"{k} {v} s" for k, v in s.seconds.items())))
        else:
            tail = " | ".join(s.engine_log[-5:])
            out.append(Outcome("rehearse.run", "error", f"{where}: {s.action} failed on the node here: {s.error}"
                               + (f" (engine: {tail})" if tail else "")))
    out.append(Outcome("rehearse.run", "info", "stand-ins: " + "; ".join(f"{k}: {v}" for k, v in
                                                                          sorted(record.standins.items()))))
    return out


def _server_version(kubeconfig: Path) -> str:
    """The version a user's cluster reports (kubectl), or "of unknown version" without kubectl."""
    import json
    import shutil
    import subprocess

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return "of unknown version (kubectl is not installed)"
    done = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "version", "-o", "json"], capture_output=True,
                          text=True, timeout=60, check=False)
    try:
        return str(json.loads(done.stdout)["serverVersion"]["gitVersion"])
    except (ValueError, KeyError, TypeError):
        return "of unknown version (kubectl version did not say)"


def record_of(steps: list, api_server: str, helm: str) -> Rehearsal:
    from olares_pack.catalogue.records import Rehearsal, RehearsedPair

    return Rehearsal(api_server=api_server, helm=helm, steps=[
        RehearsedPair(line=s.line, action=s.action, from_version=s.from_version, version=s.version, user=s.user,
                      ok=s.ok, error=(s.error or "; ".join(s.refused))[:300]) for s in steps])


def _older(a: str, b: str) -> bool:
    from olares_pack.common import versions as appver

    return appver.parse(a) < appver.parse(b)


def _declared_text(plan: ReleasePlan) -> Callable[[str | None], str]:
    """What the changelog tells the users of a version upgrading to the new one: the entries of
    every version after theirs, up to the new one (an upgrade from 1.0.9 reads what 1.0.10 … said)."""
    from olares_pack.common import versions as appver

    top = appver.parse(plan.app.version)

    def text(from_version: str | None) -> str:
        low = appver.parse(from_version) if from_version else top
        entries = [e for e in plan.app.changelog
                   if (low < appver.parse(e.version) <= top) or e.version == plan.app.version]
        return "\n".join(t for e in entries for t in (e.summary, e.notes or "", *(c.text for c in e.changes)))

    return text


def _said(subject: str, text: str) -> bool:
    """A changelog names a path by its tail under a user's app data (`<app>/models`): the folder
    before it differs per user and is not the app's to name."""
    if not subject:
        return False
    tail = subject.split("/Data/", 1)[1] if "/Data/" in subject else subject
    return subject in text or tail in text


def judge(steps: list, allow: tuple[str, ...], declared: str | Callable[[str | None], str]) -> list[Outcome]:
    """The outcomes of the steps; `declared`: the changelog text that covers a policy finding (one
    text for every step, or the text for the users of a given older version)."""
    from olares_pack.rehearse import flow

    said_for = declared if callable(declared) else (lambda _v: declared)
    done = sorted({f"{s.line} {s.action} {s.label}" for s in steps})
    out: list[Outcome] = [Outcome("rehearse", "info", f"rehearsed on a real API server: {'; '.join(done)}")]
    refused = flow.failed(steps)
    for s in steps:
        for f in s.findings:
            if f.rule in ("rehearse.refused", "rehearse.immutable-field"):
                if refused and not s.ok:
                    out.append(Outcome(f.rule, "error", f.message))
                elif not s.ok:  # a device path its changelog covers: the uninstall-first path works
                    out.append(Outcome(f.rule, "warning", f.message + " (after uninstalling first it installs)"))
            elif f.policy:
                said = _said(f.subject, said_for(s.from_version))
                if f.rule in allow or said:
                    why = "allowed" if f.rule in allow else "declared in the changelog"
                    out.append(Outcome(f.rule, "warning", f"{f.message} ({why})"))
                else:
                    out.append(Outcome(f.rule, "error", f.message))
            else:
                out.append(Outcome(f.rule, f.severity, f.message))
    return out
