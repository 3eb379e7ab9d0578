"""The Olares 1.12.7+ sync (the `/api/v2` routes), computed per view beside the v1 bodies.

A 1.12.7 device syncs a source in steps (the device-proven Worker of aamsellem/olares-one-market,
src/index.ts, and beclab/Olares PRs #3958, #4061): `GET /api/v2/catalog` first, a cheap "has
anything changed?" probe whose 404 aborts the whole sync; then `GET /api/v2/taxonomy` (who the
source is, its languages and categories) and `GET /api/v2/applications` (one summary per app,
paged only when `size` is given; `/api/v2/browse/applications` is the same list); details stay on
`POST /api/v1/applications/info`, and charts come from `/api/v2/applications/{name}/chart`, the
same handler as v1 upstream (PR #3958).

Types are the device's: every time is an integer, `last_modify_time` and the catalog's times in
epoch milliseconds, an item's `updated_at` in epoch seconds (the reference Worker: "the Go
decoder rejects" v1's RFC 3339 string there). Unlike the reference, nothing is approximated:
each item is the chart that OS line is offered (market.Catalogue.chart_for), its
`olares_version_constraint` is that chart's own olares dependency, and its times are its
publication date from the ledger, never the clock.

The bodies that echo the caller's `source_id` are a prefix, the id's JSON string and a suffix,
so the server and the Cloudflare Worker build them the same way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from olares_pack.market import taxonomy as taxonomy_mod
from olares_pack.olares import FIRST_V2_SYNC_RELEASE

MIN_OS = FIRST_V2_SYNC_RELEASE  # the first release that syncs with these routes
ID_MARK = "\x00source-id\x00"  # stands for the source id while the bodies are cut into prefix and suffix


class Chart(Protocol):
    """What the v2 bodies read of a published chart (market.payloads.Chart): named here, so that
    this module does not import the one that builds views from it."""

    name: str
    version: str
    published: str  # YYYY-MM-DD
    dependency: str
    manifest: dict[str, Any]


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def envelope(data: Any) -> dict[str, Any]:
    return {"code": 0, "data": data, "msg": "success"}


@dataclass
class V2:
    """One view's v2 answers, as bytes."""

    items: list[bytes]  # one applications item per app, by name
    max_time: int  # epoch ms: the newest item's last_modify_time
    digest: str
    catalog: tuple[bytes, bytes]  # prefix, suffix around the source id's JSON string
    taxonomy: tuple[bytes, bytes]

    def catalog_body(self, source_id: str) -> bytes:
        return self.catalog[0] + orjson.dumps(source_id) + self.catalog[1]

    def taxonomy_body(self, source_id: str) -> bytes:
        return self.taxonomy[0] + orjson.dumps(source_id) + self.taxonomy[1]

    def applications_body(self, page: int, size: int) -> bytes:
        """Every item when size is 0; else page `page` (from 1) of `size` items."""
        total = len(self.items)
        if size:
            start = (page - 1) * size
            chosen = self.items[start:start + size] if start < total else []
            has_more, page_size = start + size < total, size
        else:
            chosen, has_more, page, page_size = self.items, False, 1, total
        return (b'{"code":0,"data":{"has_more":' + (b"true" if has_more else b"false") + b',"items":['
                + b",".join(chosen) + b'],"max_last_modify_time":%d,"page":%d,"page_size":%d,"removed":[],"total":%d},'
                b'"msg":"success"}' % (self.max_time, page, page_size, total))


def _cut(body: bytes) -> tuple[bytes, bytes]:
    mark = orjson.dumps(ID_MARK)
    prefix, found, suffix = body.partition(mark)
    assert found and mark not in suffix
    return prefix, suffix


def epoch_ms(date_text: str) -> int:
    import datetime as dt

    return int(dt.datetime.fromisoformat(date_text).replace(tzinfo=dt.timezone.utc).timestamp()) * 1000


def olares_constraint(c: Chart) -> str:
    """The olares range the chart itself declares (options.dependencies), as the installer reads it."""
    for dep in ((c.manifest.get("options") or {}).get("dependencies") or []):
        if isinstance(dep, dict) and dep.get("name") == "olares" and dep.get("version"):
            return str(dep["version"])
    return c.dependency


def item(c: Chart, e: dict[str, Any]) -> dict[str, Any]:
    """An applications item from the chart and its details entry (market.entry)."""
    ms = epoch_ms(c.published)
    return {
        "app_id": e["id"], "name": c.name, "title": e["title"]["en-US"], "version": c.version, "icon": e["icon"],
        "featured_image": e["featuredImage"], "cfg_type": e["cfgType"], "categories": e["categories"],
        "categories_v2": e["categories"], "tags": e["tags"], "app_labels": e["appLabels"],
        "olares_version_constraint": olares_constraint(c), "last_modify_time": ms, "updated_at": ms // 1000,
    }


def _languages(tax: taxonomy_mod.Taxonomy, locales: set[str]) -> list[dict[str, Any]]:
    if tax.languages is not None:
        pairs = [(lang.code, lang.display_name) for lang in tax.languages]
    else:
        # spec.locale or the chart's i18n folders, as the market discovers them (beclab/Olares PR #4061)
        codes = {"en-US", *locales}
        pairs = [(code, taxonomy_mod.LANGUAGE_NAMES.get(code, code)) for code in sorted(codes, key=lambda x: (x != "en-US", x))]
    return [{"code": code, "display_name": name, "enabled": True, "sort": i + 1} for i, (code, name) in enumerate(pairs)]


class Listed(Protocol):
    """An app's item as a view lists it (market.payloads.Listing): `item` and its JSON."""

    v2_item: dict[str, Any]
    v2_fragment: bytes


def build(tax: taxonomy_mod.Taxonomy, listed: list[Listed], locales: set[str], v1_digest: str) -> V2:
    """The v2 bodies of one view: its applications items (`item`, by app name) and the locales its
    charts name (spec.locale, i18n folders)."""
    items = [one.v2_item for one in listed]
    apps_time = max((i["last_modify_time"] for i in items), default=0)
    updated = epoch_ms(tax.updated.isoformat()) if tax.updated else 0
    tax_time = max(apps_time, updated)
    configured = {c.id: c for c in tax.categories}
    used = [cat_id for i in items for cat_id in i["categories"]]
    order = [c.id for c in tax.categories] + sorted(set(used) - set(configured))
    categories = []
    for n, cat_id in enumerate(order):
        c = configured.get(cat_id)
        categories.append({"id": cat_id, "builtin": False, "sort": n + 1, "icon": c.icon if c else "",
                           "title": (c.title if c and c.title else {"en-US": cat_id}),
                           "description": c.description if c else {}})
    nav = [cat_id for cat_id in order if cat_id in used]
    source = tax.source
    data = {
        "last_modify_time": tax_time,
        "source": {"source_id": ID_MARK, "short_label": source.short_label, "display_name": source.display_name,
                   "icon": source.icon, "is_official": False},
        "languages": _languages(tax, locales),
        "categories": categories,
        "nav": nav,
        # every category page lists all of its apps: no curated topics
        "pages": [{"category_id": cat_id, "items": [{"id": "all", "type": "all"}]} for cat_id in nav],
        "tags": [], "topic_lists": [], "topics": [], "recommends": [],
    }
    taxonomy = _cut(dumps(envelope(data)))
    fragments = [one.v2_fragment for one in listed]
    full = V2(fragments, apps_time, "", (b"", b""), taxonomy)
    # what a device fetches after the probe: taxonomy, the list, the details (in the v1 digest), the charts they name
    digest = hashlib.sha256(b"\0".join([v1_digest.encode(), taxonomy[0], taxonomy[1], full.applications_body(1, 0)])
                            ).hexdigest()[:32]
    catalog = _cut(dumps(envelope({"schema_version": "v2", "source_id": ID_MARK, "taxonomy_last_modify_time": tax_time,
                                   "apps_last_modify_time": apps_time, "apps_filter_digest": digest})))
    return V2(fragments, apps_time, digest, catalog, taxonomy)
