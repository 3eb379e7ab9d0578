"""A rehearsal of one version on each OS line: its fresh install, and the upgrade to it from each
older version asked for (by default the previous one on that line), each from a clean slate."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olares_pack.cluster.controlplane import Cluster
from olares_pack.common import versions as appver
from olares_pack.rehearse import plan as planner
from olares_pack.rehearse.run import Finding, Step, session

ChartOf = Callable[[str, str], bytes | None]  # (version, target) -> the packaged chart, None if the line has none


@dataclass(frozen=True)
class Names:
    """Who installs: the administrator and a second user (a user's cluster: names of this run only)."""

    admin: str = planner.ADMIN
    other: str = planner.OTHER
    shared_suffix: str = ""
    release_suffix: str = ""

    @classmethod
    def of_run(cls, run_id: str) -> Names:
        """A user's cluster: users, shared namespaces and release names of this run only, so that
        nothing the rehearsal makes can collide with an installed app's (its namespace is
        `<app>-<user>`, its releases named after the app and its sub-charts)."""
        return cls(f"alice-{run_id}", f"bob-{run_id}", f"-{run_id}", f"-{run_id}")


def previous(versions: list[str], version: str) -> str | None:
    below = [v for v in versions if appver.parse(v) < appver.parse(version)]
    return max(below, key=appver.parse) if below else None


def rehearse(cluster: Cluster, app: str, version: str, line_versions: dict[str, list[str]], chart_of: ChartOf,
             froms: list[str] | None = None, names: Names = Names(), reuse_values: bool = False,
             held: bool = False) -> list[Step]:
    """line_versions: target -> the versions published on it (the new one may be among them).
    held: a user's cluster, where every workload is created held (rehearse/hold.py)."""
    steps: list[Step] = []
    with tempfile.TemporaryDirectory(prefix="olares-pack-rehearse-") as tmp:
        for target in sorted(line_versions):
            new_chart = chart_of(version, target)
            if new_chart is None:
                continue
            older = [v for v in line_versions[target] if v != version]
            wanted = froms if froms is not None else [p for p in [previous(older, version)] if p]
            with session(cluster, target, reuse_values, held) as r:
                new = chart_plan(new_chart, Path(tmp), target, app, version, names)
                steps += r.install(new)
                r.clean()
                for v0 in wanted:
                    old_chart = chart_of(v0, target)
                    if old_chart is None:
                        continue
                    old = chart_plan(old_chart, Path(tmp), target, app, v0, names)
                    installed = r.install(old)
                    if not all(s.ok for s in installed):
                        steps += installed
                        r.clean()
                        continue
                    steps += r.upgrade(old, new)
                    r.clean()
                    if new.multi and not old.multi:
                        r.install(old)
                        steps += r.uninstall_first(old, new)
                        r.clean()
    return steps


def chart_plan(data: bytes, tmp: Path, target: str, app: str, version: str, names: Names) -> planner.ChartPlan:
    dest = tmp / target / version
    dest.mkdir(parents=True, exist_ok=True)
    return planner.plan(data, dest, app, version, admin=names.admin, other=names.other,
                        shared_suffix=names.shared_suffix, release_suffix=names.release_suffix)


def findings(steps: list[Step]) -> list[Finding]:
    return [f for s in steps for f in s.findings]


def failed(steps: list[Step]) -> bool:
    """An install or upgrade the server refused; the first Upgrade of a one-chart version to a v2
    shared one fails on the device by design (its changelog says to uninstall first) and counts only
    when the uninstall-first path fails too."""
    for s in steps:
        if s.ok:
            continue
        if s.action == "upgrade" and _uninstall_first_ok(steps, s):
            continue
        return True
    return False


def _uninstall_first_ok(steps: list[Step], s: Step) -> bool:
    alt = [t for t in steps if t.action == "uninstall-first" and t.line == s.line and t.from_version == s.from_version
           and t.version == s.version and t.user == s.user]
    return bool(alt) and all(t.ok for t in alt)
