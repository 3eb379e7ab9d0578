"""`olares-pack export cloudflare OUT`: the market source as a Cloudflare Worker project.

OUT holds wrangler.toml, worker.js (the same for every catalogue), catalogue.json (every view
any OS version can see, as the bytes `olares-pack serve` answers: market.View) and public/ (the
charts, under public/charts/<name>/<file>, and the icons, served as static assets). The v2 routes
of Olares 1.12.7 (market_v2) are answered from the same per-view parts as `serve` joins. The Worker
decides a request's view the way the server does: it evaluates each olares window
(olares.constraint_terms, exported as plain comparisons) on the request's version and looks the
answers up among the views computed for olares.probe_versions. `npx wrangler deploy` in OUT
publishes it. Written to a temporary folder and renamed into place: OUT is whole or untouched.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from olares_pack import olares
from olares_pack.common import fsio
from olares_pack.common.errors import InputError
from olares_pack.common.naming import NAME_RE
from olares_pack.market import payloads as market
from olares_pack.market import v2 as market_v2

WRANGLER_VERSION = "4.86.0"  # the last release that runs on Node 20 (npm: 4.86.0 engines node >=20.3.0, 4.87.0 >=22)
COMPATIBILITY_DATE = "2026-04-01"


def _version(v: Any) -> list[Any]:
    return [[v.major, v.minor, v.patch], v.prerelease.split(".") if v.prerelease else []]


def catalogue_doc(cat: market.Catalogue, default_version: str) -> dict[str, Any]:
    deps = cat.dependencies
    views: dict[int, tuple[int, market.View]] = {}  # id(view) -> (its index, the view): views are shared objects
    masks: dict[str, int] = {}
    for probe in olares.probe_versions(deps):
        mask = "".join("1" if olares.admits(d, probe) else "0" for d in deps)
        if mask not in masks:
            view = cat.view(probe)
            masks[mask] = views.setdefault(id(view), (len(views), view))[0]
    return {
        "default_version": str(olares.parse_os_version(default_version)),
        "dependencies": [[[[op, _version(r)] for op, r in terms] for terms in olares.constraint_terms(d)] for d in deps],
        "masks": masks,
        "views": [{"hash_prefix": v.hash_prefix.decode(), "info_prefix": v.info_prefix.decode(),
                   "fragments": {i: f.decode() for i, f in v.fragments.items()},
                   "v2": {"items": [i.decode() for i in v.v2.items], "max_time": v.v2.max_time,
                          "catalog": [p.decode() for p in v.v2.catalog], "taxonomy": [p.decode() for p in v.v2.taxonomy]}}
                  for _, v in views.values()],
        "v2_default_version": str(max(olares.parse_os_version(default_version),
                                      olares.parse_os_version(market_v2.MIN_OS))),
        "source_id": cat.taxonomy.source.source_id,
        "files": {name: {f: c.sha256 for f, c in sorted(files.items())} for name, files in sorted(cat.files.items())},
        "apps": len(cat.ledger["apps"]),
        "charts": len(cat.charts),
        "index_sha256": cat.ledger_sha256,
    }


def wrangler_toml(name: str) -> str:
    return (f'name = "{name}"\nmain = "worker.js"\ncompatibility_date = "{COMPATIBILITY_DATE}"\n\n'
            '[assets]\ndirectory = "./public"\nbinding = "ASSETS"\n')


def export(root: Path, out: Path, *, name: str, default_version: str = olares.DEFAULT_OS_VERSION, base_url: str = "") -> int:
    """Write the Worker project; returns the number of charts it serves."""
    if not NAME_RE.match(name.replace("-", "")):
        raise InputError(f"{name!r}: a Worker name is lower-case letters, digits and dashes")
    cat = market.load(root, base_url=base_url, strict=True)  # a Worker is deployed whole or not at all
    files: dict[str, bytes] = {
        "wrangler.toml": wrangler_toml(name).encode(),
        "worker.js": resources.files("olares_pack.market").joinpath("cloudflare_worker.js").read_bytes(),
        "catalogue.json": orjson.dumps(catalogue_doc(cat, default_version), option=orjson.OPT_SORT_KEYS),
        "package.json": orjson.dumps({"private": True, "name": name, "scripts": {"deploy": "wrangler deploy"},
                                      "devDependencies": {"wrangler": WRANGLER_VERSION}},
                                     option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n",
    }
    served = 0
    for app, by_file in cat.files.items():
        for file_name, chart in by_file.items():
            files[f"public/charts/{app}/{file_name}"] = chart.read()
            served += 1
    for app, icon in cat.icons.items():
        files[f"public/icons/{app}.png"] = icon
    fsio.write_tree(files, out)
    return served
