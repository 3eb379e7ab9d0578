"""How commands name apps, versions, changes and dates on the command line."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import click

from olares_pack.catalogue import MANIFEST_FILE
from olares_pack.common.errors import InputError

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App
    from olares_pack.vram.estimate import Device


def resolve_app(ref: str, apps_dir: Path) -> App:
    """An app by name (looked up in the apps folder), by folder, or by app.yaml path."""
    from olares_pack.apps.load import load_app
    path = Path(ref)
    if path.exists():
        return load_app(path)
    candidate = apps_dir / ref / MANIFEST_FILE
    if candidate.exists():
        return load_app(candidate)
    raise InputError(f"{ref}: no such app (looked for {path} and {candidate})")


def app_folder(ref: str, apps_dir: Path) -> Path:
    path = Path(ref)
    if path.exists():
        return path if path.is_dir() else path.parent
    return apps_dir / ref


def parse_change(text: str) -> tuple[str, str]:
    kind, sep, what = text.partition(":")
    if not sep or not what.strip():
        raise click.BadParameter(f"{text!r}: expected KIND:TEXT, e.g. engine-args:--ctx-size 131072", param_hint="--change")
    return kind.strip(), what.strip()


def parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected YYYY-MM-DD", param_hint="--date") from None


def device(name: str, gpu_mib: int | None, reserve_mib: int | None) -> Device:
    """The device profile --device names, resized by --gpu-mib and --reserve-mib."""
    from olares_pack.vram import estimate as vram

    try:
        return vram.device(name, gpu_mib, reserve_mib)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--device") from None
