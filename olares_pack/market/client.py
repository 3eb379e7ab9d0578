"""Read a live market source the way a device does (beclab/market internal/v2/appinfo/syncerfn: the
data, detail and hash steps; docs/concepts/market-source.md): the catalogue for each
OS version asked, every app's details (at most 10 ids a request), and the chart of every version
the details list, by file name. What a source does not let a device download is not imported
(the import report says which versions).

A source that answers the Olares 1.12.7 routes is read as a 1.12.7 device reads it: the app list
from `GET /api/v2/applications`, charts from `/api/v2/applications/{name}/chart` with the v1 path
tried on a 404 (beclab/Olares PR #3958); details stay on the v1 POST. A source without them (404)
is read through `/api/v1/appstore/info`."""

from __future__ import annotations

import datetime as dt
import json
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import replace
from typing import Any

from olares_pack.charts.source import ChartSource, from_archive_bytes
from olares_pack.common.errors import HTTPStatus, InputError

TIMEOUT = 30  # seconds, as a device waits for details




def _get(url: str, data: bytes | None = None) -> bytes:
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - an http(s) URL the user gave
            return bytes(resp.read())
    except urllib.error.HTTPError as exc:
        raise HTTPStatus(url, exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(f"{url}: {getattr(exc, 'reason', exc)}") from None


def _json(url: str, body: dict[str, Any] | None = None) -> Any:
    raw = _get(url, json.dumps(body).encode() if body is not None else None)
    try:
        return json.loads(raw)
    except ValueError:
        raise InputError(f"{url}: not JSON") from None


def _text(value: Any) -> str:
    """A market text: a plain string or a locale map (the en-US text)."""
    if isinstance(value, dict):
        return str(value.get("en-US") or next(iter(value.values()), ""))
    return "" if value is None else str(value)


def _date(value: Any) -> dt.date | None:
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def _app_ids(base: str, os_version: str) -> tuple[list[str], bool]:
    """The ids a device of `os_version` is offered, and whether the source answered the v2 list."""
    q = urllib.parse.urlencode({"version": os_version})
    try:
        items = (_json(f"{base}/api/v2/applications?{q}").get("data") or {}).get("items")
    except HTTPStatus as exc:
        if exc.status != 404:
            raise
        items = None
    if isinstance(items, list):
        return sorted({str(i.get("app_id")) for i in items if isinstance(i, dict) and i.get("app_id")}), True
    info = _json(f"{base}/api/v1/appstore/info?{q}")
    return sorted(((info.get("data") or {}).get("apps") or {})), False


def fetch(base: str, os_versions: tuple[str, ...], progress: Any = None,
          report: list[str] | None = None) -> list[ChartSource]:
    """Every chart the source lets a device download: the version each app lists and every
    version its versionHistory names, by file name. A source may serve older files it no longer
    names anywhere; those cannot be known from its routes, and `report` says how many versions
    it lists, names and serves."""
    base = base.rstrip("/")
    entries: dict[str, dict[str, Any]] = {}  # chart file name -> (app name, version, date, upgrade)
    prefixes = ["/api/v1"]  # chart paths, tried in order
    listed: set[str] = set()  # the file names of the versions the catalogue lists
    for os_version in os_versions:
        ids, v2 = _app_ids(base, os_version)
        if v2 and prefixes[0] != "/api/v2":
            prefixes.insert(0, "/api/v2")
        for i in range(0, len(ids), 10):
            details = _json(f"{base}/api/v1/applications/info", {"app_ids": ids[i:i + 10], "version": os_version})
            for entry in (details.get("apps") or {}).values():
                name = str(entry.get("name", ""))
                history = entry.get("versionHistory") or []
                known = {str(h.get("version")): h for h in history if isinstance(h, dict)}
                known.setdefault(str(entry.get("version")), {"upgradeDescription": entry.get("upgradeDescription")})
                listed.add(f"{name}-{entry.get('version')}.tgz")
                for version, h in known.items():
                    entries.setdefault(f"{name}-{version}.tgz", {"name": name, "version": version, "date": _date(h.get("mergedAt")),
                                                                 "upgrade": _text(h.get("upgradeDescription")) or None})
    found = []
    missing: list[str] = []
    task = progress.add_task("charts", total=len(entries)) if progress else None
    for file_name, e in sorted(entries.items()):
        q = urllib.parse.urlencode({"fileName": file_name, "version": e["version"]})
        try:
            for n, prefix in enumerate(prefixes):
                url = f"{base}{prefix}/applications/{urllib.parse.quote(e['name'])}/chart?{q}"
                try:
                    data = _get(url)
                    break
                except HTTPStatus as exc:
                    if exc.status != 404 or n == len(prefixes) - 1:
                        raise
            src = from_archive_bytes(data, url)
        except (InputError, ValueError, OSError, EOFError, tarfile.TarError):
            missing.append(file_name)
            continue
        finally:
            if progress:
                progress.advance(task)
        found.append(replace(src, date=e["date"], upgrade=e["upgrade"]))
    if report is not None:
        named = len(entries) - len(listed & set(entries))
        report.append(f"{base}: lists {len(listed)} chart(s) (one version per app); its versionHistory names {named} "
                      f"more; {len(found)} of these {len(entries)} are served and taken"
                      + (f"; not served: {', '.join(missing)}" if missing else "")
                      + ("" if named else ": the source names no older version, so chart files it still serves under "
                         "older names cannot be known from its routes (import them from its chart folders or .tgz files)"))
    return found
