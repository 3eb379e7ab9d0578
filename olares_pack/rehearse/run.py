"""Install and upgrade published charts on a real API server as app-service does, step by step,
and say what each step did: the objects the server refused and why; after an upgrade the objects
created, changed and removed, a workload renamed, a persistent path that moved.

The upgrade follows app-service, not a plain `helm upgrade` where they differ:
- v1/v3 (pkg/appinstaller/helm_ops_upgrade.go HelmOps.Upgrade): the release must be `deployed`,
  then `helm upgrade` with the values SetValues computes again and ResetThenReuseValues (at
  08eb5b52); before that (at 22820cc4) with ReuseValues, which drops the new chart's own defaults
  (`reuse_values=True` rehearses that app-service).
- v2 with sub-charts (pkg/appinstaller/v2/helm_ops_upgrade.go HelmOpsV2.upgrade at 2e3244c2): the
  main (client) release must be deployed; then each sub-chart in order, the shared one for the
  administrator only; a shared sub-chart with no release yet (an app that was one chart before) is
  installed into its shared namespace and then the upgrade returns the status error it met
  (`release: not found`): the first Upgrade from a one-chart version fails after installing the
  engine, and the user's client stays at the old version. The uninstall-first path (uninstall the
  old version, install the new one) is rehearsed beside it.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.cluster.controlplane import Cluster
from olares_pack.cluster.helmcli import Helm, Result
from olares_pack.rehearse import objects
from olares_pack.rehearse.plan import ChartPlan

IMMUTABLE = "field is immutable"
_REFUSED = re.compile(r'([A-Z][A-Za-z]*(?:\.[a-z0-9.-]+)?) "([^"]+)" is (?:invalid|forbidden): ([^\n]*)')


def refusals(output: str) -> list[str]:
    """The objects the server refused and why, from Helm's error output."""
    seen: list[str] = []
    for kind, name, why in _REFUSED.findall(output):
        line = f"{kind} {name}: {why.strip()}"
        if line not in seen:
            seen.append(line)
    return seen


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # error | warning | info
    message: str
    policy: bool = False  # olares-pack's own rule (--allow, or declared in the changelog)
    subject: str = ""  # the object or path it is about (what a changelog declares)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "class": "policy" if self.policy else "installer",
                "message": self.message, "subject": self.subject}


@dataclass
class Step:
    line: str  # the OS line (target)
    action: str  # install | upgrade | uninstall-first
    version: str
    user: str
    from_version: str | None = None
    ok: bool = True
    error: str = ""
    refused: list[str] = field(default_factory=list)
    changes: objects.Changes | None = None
    note: str = ""
    findings: list[Finding] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.from_version} -> {self.version}" if self.from_version else self.version

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "action": self.action, "from": self.from_version, "version": self.version,
                "user": self.user, "ok": self.ok, "error": self.error, "refused": self.refused,
                "changes": self.changes.to_dict() if self.changes else None, "note": self.note,
                "findings": [f.to_dict() for f in self.findings]}


class Rehearsal:
    """Helm steps on one cluster; every release it makes is uninstalled by `clean`."""

    def __init__(self, cluster: Cluster, home: Path, line: str, reuse_values: bool = False, held: bool = False,
                 post_renderer: Path | None = None,
                 values_hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        from olares_pack.rehearse import hold

        # held: a user's cluster, where nothing the rehearsal installs may start (rehearse/hold.py);
        # post_renderer/values_hook: a live run on the node here (rehearse/live.py)
        self.helm = Helm(cluster, home, hold.script(home) if held else post_renderer)
        self.values_hook = values_hook
        self.line = line
        self.reuse_values = reuse_values
        self.made: list[tuple[str, str]] = []  # (release, namespace), to clean up
        # What this rehearsal knows of its releases, from what its own helm calls printed: each
        # helm process costs a Go start and a round of discovery (about 70 ms here), and a
        # rehearsal from every older version asked ~200 times for what it had just been told.
        # A release not known yet, or after a failed call, is asked of Helm.
        self._status: dict[tuple[str, str], str | None] = {}
        self._manifest: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ the steps

    def install(self, plan: ChartPlan) -> list[Step]:
        steps = []
        for user in plan.users:
            step = Step(self.line, "install", plan.version, user)
            self._install_user(plan, user, step)
            steps.append(self._judged(step))
        return steps

    def upgrade(self, old: ChartPlan, new: ChartPlan) -> list[Step]:
        steps = []
        for user in old.users:
            step = Step(self.line, "upgrade", new.version, user, old.version)
            if user not in new.users:
                step.note = f"not upgraded: {new.version} installs for the administrator only; {user}'s {old.version} stays"
                steps.append(step)
                continue
            before = self._objects(old, user)
            self._upgrade_user(old, new, user, step)
            step.changes = objects.compare(before, self._objects(new, user))
            steps.append(self._judged(step))
        return steps

    def uninstall_first(self, old: ChartPlan, new: ChartPlan) -> list[Step]:
        """What 1.0.13's changelog tells 1.12.3-1.12.5 users of a one-chart version to do."""
        steps = []
        for user in old.users:
            step = Step(self.line, "uninstall-first", new.version, user, old.version)
            before = self._objects(old, user)
            for rel in old.releases(user):
                self._uninstall(rel.name, rel.namespace)
            if user in new.users:
                self._install_user(new, user, step)
            step.changes = objects.compare(before, self._objects(new, user))
            steps.append(self._judged(step))
        return steps

    def clean(self) -> None:
        for name, ns in reversed(self.made):
            if self.status(name, ns) is not None:
                self._uninstall(name, ns)
        self.made.clear()

    # ------------------------------------------------------------------ what Helm holds

    def status(self, name: str, namespace: str) -> str | None:
        key = (name, namespace)
        if key not in self._status:
            self._status[key] = self.helm.status(name, namespace)
        return self._status[key]

    def manifest(self, name: str, namespace: str) -> str:
        key = (name, namespace)
        if key not in self._manifest:
            self._manifest[key] = self.helm.manifest(name, namespace)
        return self._manifest[key]

    def _learn(self, name: str, namespace: str, r: Result) -> None:
        """What an install or upgrade printed of its release; after a failure, nothing is assumed."""
        key = (name, namespace)
        rel = r.release()
        self._status.pop(key, None)
        self._manifest.pop(key, None)
        if rel is not None:
            self._status[key] = str(rel["info"].get("status"))
            self._manifest[key] = str(rel.get("manifest") or "")

    def _uninstall(self, name: str, namespace: str) -> None:
        r = self.helm.uninstall(name, namespace)
        self._manifest.pop((name, namespace), None)
        if r.ok:
            self._status[(name, namespace)] = None
        else:
            self._status.pop((name, namespace), None)

    # ------------------------------------------------------------------ helpers

    def values(self, plan: ChartPlan, user: str) -> dict[str, Any]:
        values = plan.values(user)
        return self.values_hook(values) if self.values_hook else values

    def _install_user(self, plan: ChartPlan, user: str, step: Step) -> None:
        for rel in plan.releases(user):
            if rel.shared and self.status(rel.name, rel.namespace) is not None:
                continue  # HelmOpsV2.install: "chart ... already installed, skipping"
            if not self._install(rel.name, rel.chart, rel.namespace, self.values(plan, user), step):
                return

    def _install(self, name: str, chart: Path, namespace: str, values: dict[str, Any], step: Step) -> bool:
        r = self.helm.install(name, chart, namespace, values)
        self._learn(name, namespace, r)
        if (name, namespace) not in self.made:
            self.made.append((name, namespace))
        if not r.ok:
            step.ok, step.error = False, _error_line(r.output)
            step.refused += refusals(r.output)
        return r.ok

    def _upgrade_user(self, old: ChartPlan, new: ChartPlan, user: str, step: Step) -> None:
        main = self.status(new.release_name(new.app), new.namespace(user))
        if main != "deployed":
            step.ok = False
            step.error = (f"cannot upgrade release {new.namespace(user)}/{new.release_name(new.app)}, current state is "
                          f"{main or 'not installed'}")
            return
        for rel in new.releases(user):
            status = self.status(rel.name, rel.namespace)
            if status is None:
                if rel.shared:
                    # HelmOpsV2.upgrade: installs the missing shared chart, then returns the status error
                    self._install(rel.name, rel.chart, rel.namespace, self.values(new, user), step)
                    step.note = (f"app-service installed the shared chart {rel.name} into {rel.namespace}, then "
                                 f"failed the upgrade; {user}'s client stays at {old.version}")
                step.ok, step.error = False, "UPGRADE FAILED (app-service): release: not found"
                return
            if status != "deployed":
                step.ok, step.error = False, f"chart {rel.name} is not deployed, cannot upgrade"
                return
            r = self.helm.upgrade(rel.name, rel.chart, rel.namespace, self.values(new, user), reuse=self.reuse_values)
            self._learn(rel.name, rel.namespace, r)
            if not r.ok:
                step.ok, step.error = False, _error_line(r.output)
                step.refused += refusals(r.output)
                return

    def _objects(self, plan: ChartPlan, user: str) -> dict[objects.Key, dict[str, Any]]:
        out: dict[objects.Key, dict[str, Any]] = {}
        for rel in plan.releases(user):
            out.update(objects.parse(self.manifest(rel.name, rel.namespace), rel.namespace))
        return out

    def _judged(self, step: Step) -> Step:
        where = f"{self.line} {step.label} ({step.user})"
        if not step.ok:
            immutable = IMMUTABLE in step.error or any(IMMUTABLE in r for r in step.refused)
            rule = "rehearse.immutable-field" if immutable else "rehearse.refused"
            detail = "; ".join(step.refused) or step.error
            step.findings.append(Finding(rule, "error", f"{where}: the {step.action} failed: {detail}"))
        ch = step.changes
        if ch is None or not step.ok:
            return step
        if ch.removed:
            step.findings.append(Finding("rehearse.removed", "info",
                                         f"{where}: the upgrade removes {', '.join(objects.show(k) for k in ch.removed)}"))
        for old_key, new_key in ch.renamed:
            step.findings.append(Finding(
                "rehearse.renamed-workload", "error",
                f"{where}: {objects.show(old_key)} is replaced by {objects.show(new_key)}: while the rollout runs "
                "both pods ask for the GPU, and the old one's state is left behind", policy=True,
                subject=new_key[2]))
        for path, workload in ch.moved:
            step.findings.append(Finding(
                "rehearse.data-path", "error",
                f"{where}: {path} (mounted by {workload}) is no longer mounted after the upgrade"
                + (f"; the new version mounts {', '.join(ch.added_paths)}" if ch.added_paths else "")
                + ": what was stored there (a downloaded model, user data) is left behind", policy=True,
                subject=path.split(" ", 1)[-1]))
        return step


def _error_line(output: str) -> str:
    """Helm's error: from its last `Error:` line on (a multi-error answer lists the reasons below it)."""
    lines = output.strip().splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Error:")]
    tail = lines[starts[-1]:] if starts else lines[-1:]
    return " ".join(ln.strip() for ln in tail if ln.strip())[:2000] or "failed"


@contextmanager
def session(cluster: Cluster, line: str, reuse_values: bool = False, held: bool = False) -> Iterator[Rehearsal]:
    with tempfile.TemporaryDirectory(prefix="olares-pack-helm-") as home:
        r = Rehearsal(cluster, Path(home), line, reuse_values, held)
        try:
            yield r
        finally:
            r.clean()
