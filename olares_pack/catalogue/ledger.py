"""market-index.json: the ledger of every published version of every app.

It is a projection of the release records (`apps/<name>/releases/<version>.json`), never edited
and never computed from today's renderer or engine registry: the same records give the same
bytes, so the ledger is committed and checked (`build --check`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.common import jsontext
from olares_pack.common import versions as appver
from olares_pack.common.errors import InputError

if TYPE_CHECKING:
    from olares_pack.catalogue.records import Record

FORMAT = 2


def app_id(name: str) -> str:
    """The market's app id: the first 8 hex digits of md5(name)."""
    return hashlib.md5(name.encode()).hexdigest()[:8]


def version_entry(rec: Record) -> dict[str, Any]:
    m = rec.manifest
    out: dict[str, Any] = {
        "version": rec.version,
        "published": rec.published.isoformat(),
        "generation": rec.generation,
        "tool": rec.tool,
        "charts": {t: c.model_dump(exclude_none=True) for t, c in sorted(rec.charts.items())},
    }
    if "chart" in m:  # an imported chart: its images and envelope, as the chart states them
        spec = (m["chart"].get("manifest") or {}).get("spec") or {}
        out.update({"versionName": m.get("version_name") or rec.version, "images": rec.engine.flags.get("image", ""),
                    "resources": {k: v for k, v in spec.items() if k.startswith(("required", "limited")) or k == "accelerator"}})
    else:
        img = m["engine"]["image"]
        out.update({"versionName": m.get("version_name") or img["tag"],
                    "image": {k: img.get(k) for k in ("repository", "tag", "digest")},
                    "model": {k: (m.get("model") or {}).get(k) for k in ("repo", "revision", "files")},
                    "resources": m["resources"]})
    out.update({"engine": rec.engine.model_dump(), "changelog": rec.entry.model_dump(mode="json")})
    listed = [e.model_dump(mode="json") for e in rec.unshipped if e.in_history]
    if listed:
        out["unshipped"] = listed
    return out


def app_entry(name: str, recs: list[Record]) -> dict[str, Any]:
    ordered = sorted(recs, key=lambda r: appver.parse(r.version))
    return {"id": app_id(name), "versions": [version_entry(r) for r in ordered]}


def build(apps: dict[str, list[Record]]) -> dict[str, Any]:
    return {"format": FORMAT, "apps": {name: app_entry(name, apps[name]) for name in sorted(apps) if apps[name]}}


def dumps(index: dict[str, Any]) -> str:
    return jsontext.dumps(index)


def empty() -> dict[str, Any]:
    return {"format": FORMAT, "apps": {}}


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return empty()
    return loads(path.read_bytes(), path)


def loads(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        data = jsontext.loads(raw)
    except jsontext.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("apps"), dict):
        raise InputError(f"{path}: not a market index of format {FORMAT} (run olares-pack build to derive it)")
    return data


def recorded_sha(index: dict[str, Any], name: str, version: str, target: str) -> str | None:
    for v in (index.get("apps", {}).get(name) or {}).get("versions", []):
        if v.get("version") == version:
            return (v.get("charts", {}).get(target) or {}).get("sha256")
    return None


def merged_at(date_text: str) -> str:
    """RFC 3339 timestamp of a publication date (midnight UTC): dates come from the ledger, never the clock."""
    return f"{date_text}T00:00:00Z"


def version_history(index: dict[str, Any], name: str, locale: str = "en-US", target: str | None = None
                    ) -> list[dict[str, str]]:
    """The market's versionHistory: every published version, newest first, with its notes, and the
    unshipped attempts their owner chose to list (marked as such, with no versionName). With a
    target, the versions of that target's line: each under the version its chart carries
    (1.0.10-legacy), releases without a chart for it left out."""
    from olares_pack.apps.changelog import upgrade_description

    rows = []
    for v in (index.get("apps", {}).get(name) or {}).get("versions", []):
        if target is not None and target not in v["charts"]:
            continue
        version = v["charts"][target].get("version") or v["version"] if target is not None else v["version"]
        rows.append((version, v["versionName"], v["published"], v["changelog"]))
        rows += [(u["version"], "", u["date"], u) for u in v.get("unshipped", [])]
    rows.sort(key=lambda r: appver.parse(r[0]), reverse=True)
    return [{
        "appName": name,
        "version": version,
        "versionName": version_name,
        "mergedAt": merged_at(date),
        "upgradeDescription": upgrade_description(entry, locale),
    } for version, version_name, date, entry in rows]
