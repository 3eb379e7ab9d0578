"""What the gates give the verdict function (vram/verdict.py) for an app: its estimate on the
build its chart runs, and the out-of-memory records of its published versions."""

from __future__ import annotations

from pathlib import Path

from olares_pack.apps.manifest import App
from olares_pack.vram.estimate import DEVICES, Device
from olares_pack.vram.verdict import Reference, Verdict, judge


def references(apps_dir: Path, name: str, dev: Device) -> list[Reference]:
    """The app's published versions that its later records say ran out of GPU memory, each with
    its own estimate on `dev`, the records' device (a version whose model numbers are not locked
    is left out); none on another device."""
    from olares_pack.apps.manifest import LlamaCppApp
    from olares_pack.catalogue import records
    from olares_pack.catalogue.repo import Repo
    from olares_pack.common.errors import InputError
    from olares_pack.vram import budget, outcomes

    if dev != DEVICES["olares-one"]:  # the records are what Olares Ones did
        return []
    repo = Repo.of_apps(apps_dir)
    out = []
    for version, found in outcomes.by_version(repo, name).items():
        if not found:
            continue
        app = records.app_of(records.read(repo, name, version))
        if not isinstance(app, LlamaCppApp):
            continue
        try:
            est = budget.app_estimate(app, apps_dir / name, dev)
        except InputError:
            continue
        out.append(Reference(version, est.total_mib, f"{found[0].recorded_in}'s changelog"))
    return out


def of_app(app: App, app_dir: Path, dev: Device, ctx: int | None = None) -> Verdict:
    """The verdict of an app (its manifest, or a published version's) on a device: its estimate at
    its own context (or `ctx`) on the build its chart runs, against its app's records."""
    from olares_pack.apps.manifest import LlamaCppApp
    from olares_pack.vram import budget

    est = budget.app_estimate(app, app_dir, dev, ctx)
    # the records' configurations are llama.cpp ones: compared with a llama.cpp estimate only
    refs = references(app_dir.parent, app.name, dev) if isinstance(app, LlamaCppApp) else []
    return judge(est, refs, app.version)


def of_catalogue(app: App, app_dir: Path) -> Verdict | None:
    """The verdict lint's vram.budget and `release` give an app on the catalogue's device (an
    Olares One); None where nothing is estimated (an app that runs without an NVIDIA GPU, or a
    chart olares-pack does not model)."""
    if "nvidia" not in getattr(app, "modes", ()) or getattr(getattr(app, "engine", None), "kind", None) == "generic":
        return None  # a generic GPU server runs what olares-pack does not estimate
    return of_app(app, app_dir, DEVICES["olares-one"])
