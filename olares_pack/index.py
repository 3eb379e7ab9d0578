"""market-index.json: the ledger of every published version of every app.

It is derived, never edited: each published version is a frozen copy of its app manifest
(`apps/<name>/releases/<version>.yaml`) plus the package bytes under `packages/<target>/`. The
same inputs give the same bytes, so the ledger is committed and checked (`build --check`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import semver

from . import engines
from .engines import registry
from .engines.normalize import normalize_generic, normalize_llama
from .errors import InputError
from .manifest import App, LlamaCppApp

FORMAT = 1
INDEX_FILE = "market-index.json"
PACKAGES_DIR = "packages"


def app_id(name: str) -> str:
    """The market's app id: the first 8 hex digits of md5(name)."""
    return hashlib.md5(name.encode()).hexdigest()[:8]


def package_path(packages_dir: Path, target: str, name: str, version: str) -> Path:
    return packages_dir / target / f"{name}-{version}.tgz"


@dataclass(frozen=True)
class PackageRecord:
    target: str
    file: str  # relative to the repository root
    sha256: str
    size: int


def normalized_flags(app: App) -> dict[str, str]:
    """The engine arguments as flag -> value, whatever their spelling."""
    argv = engines.build_argv(app)
    if isinstance(app, LlamaCppApp):
        try:
            reg = registry.load("llamacpp", app.engine.build)
        except InputError:
            reg = registry.load("llamacpp")
        return normalize_llama(argv, reg, app.env).values()
    return normalize_generic(argv[2:] if argv[:1] == ["serve"] else argv).values()


def version_entry(app: App, packages: list[PackageRecord]) -> dict[str, Any]:
    entry = app.changelog_entry
    if entry is None:
        raise InputError(f"{app.name} {app.version}: no changelog entry for this version")
    img = app.engine.image
    r = app.resources
    return {
        "version": app.version,
        "versionName": app.display_version,
        "published": entry.date.isoformat(),
        "charts": {p.target: {"file": p.file, "sha256": p.sha256, "size": p.size} for p in sorted(packages, key=lambda p: p.target)},
        "image": {"repository": img.repository, "tag": img.tag, "digest": img.digest},
        "model": {
            "repo": app.model.repo,
            "revision": app.model.revision,
            "files": [f.model_dump() for f in app.model.files],
        },
        "engine": {"kind": app.engine.kind, "build": app.engine.build, "argv": engines.build_argv(app),
                   "flags": normalized_flags(app), "env": dict(sorted(app.env.items()))},
        "resources": {
            "cpu": r.cpu.model_dump(), "memory": r.memory.model_dump(), "disk": r.disk.model_dump(),
            "gpu_memory_mib": r.gpu_memory_mib,
        },
        "changelog": entry.model_dump(mode="json"),
    }


def build_index(apps: dict[str, list[tuple[App, list[PackageRecord]]]]) -> dict[str, Any]:
    out: dict[str, Any] = {"format": FORMAT, "apps": {}}
    for name in sorted(apps):
        versions = sorted(apps[name], key=lambda vp: semver.Version.parse(vp[0].version))
        if not versions:
            continue
        out["apps"][name] = {"id": app_id(name), "versions": [version_entry(a, p) for a, p in versions]}
    return out


def dumps(index: dict[str, Any]) -> str:
    return json.dumps(index, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"format": FORMAT, "apps": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("apps"), dict):
        raise InputError(f"{path}: not a market index of format {FORMAT}")
    return data


def recorded_sha(index: dict[str, Any], name: str, version: str, target: str) -> str | None:
    for v in (index.get("apps", {}).get(name) or {}).get("versions", []):
        if v.get("version") == version:
            return (v.get("charts", {}).get(target) or {}).get("sha256")
    return None


def merged_at(date_text: str) -> str:
    """RFC 3339 timestamp of a publication date (midnight UTC): dates come from the ledger, never the clock."""
    return f"{date_text}T00:00:00Z"


def version_history(index: dict[str, Any], name: str, locale: str = "en-US") -> list[dict[str, str]]:
    """The market's versionHistory: every published version, newest first, with its notes."""
    from .changelog import upgrade_description
    from .manifest import ChangelogEntry

    versions = (index.get("apps", {}).get(name) or {}).get("versions", [])
    out = []
    for v in sorted(versions, key=lambda v: semver.Version.parse(v["version"]), reverse=True):
        entry = ChangelogEntry.model_validate(v["changelog"])
        out.append({
            "appName": name,
            "version": v["version"],
            "versionName": v["versionName"],
            "mergedAt": merged_at(v["published"]),
            "upgradeDescription": upgrade_description(entry, locale),
        })
    return out
