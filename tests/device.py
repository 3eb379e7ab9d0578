"""An Olares device's market client, as the public beclab/market sources and the docs describe it
(docs/concepts/market-source.md): it syncs hash -> info -> details (at most 10 ids a call,
only for apps that are new or whose version string changed), downloads a chart with the *app*
version and the file name from the app's entry, and caches charts by file name for good. Its
OS version can change between syncs. Every chart it is about to install goes through the
installer's gate for its OS version, written here from the format notes, independently of
olares-pack's linter.

From Olares 1.12.7 the device syncs through the v2 routes instead (V2Device): the catalog probe,
then taxonomy and the applications list (paged), details still on the v1 POST, charts under
/api/v2 with a fallback to /api/v1 on a 404 (beclab/Olares PR #3958; the device-proven Worker of
aamsellem/olares-one-market, src/index.ts). Every v2 answer is decoded with the types the device
decodes it into (`decode`): integers are integers (never booleans or floats), times are int64
epoch milliseconds except an item's `updated_at` in epoch seconds."""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass, field
from typing import Any

import httpx
import semver
import yaml
from loopback_http import HTTP

from olares_pack import olares as targets
from olares_pack.charts import helm

NAME, VLLM = "llamacppqwen36mtpone", "vllmqwen36turbo27bone"  # the bundled example apps
MODERN_OS = semver.Version.parse("1.12.6-0")  # docs/concepts/targets.md: two targets


class Refused(AssertionError):
    pass


def chart_files(data: bytes) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}


def manifest_of(files: dict[str, str], name: str) -> dict:
    """OlaresManifest.yaml as the app service decodes it: rendered with Helm first (a v2 shared
    app's manifest holds its administrator branches; the administrator's install here)."""
    return yaml.safe_load(helm.installed_manifest(files, name))


def installer_gate(os_version: str, name: str, version: str, file_name: str, data: bytes) -> None:
    """What the installer of this OS version checks before it installs a chart."""
    files = chart_files(data)
    chart = yaml.safe_load(files["Chart.yaml"])
    manifest = manifest_of(files, name)
    if file_name != f"{name}-{version}.tgz":
        raise Refused(f"{file_name}: not the file name of {name} {version}")
    if (chart["name"], str(chart["version"]), str(manifest["metadata"]["version"])) != (name, version, version):
        raise Refused(f"{file_name}: carries {chart['name']} {chart['version']} / {manifest['metadata']['version']}, "
                      f"the market said {name} {version}")
    deps = (manifest.get("options") or {}).get("dependencies") or []
    window = next(str(d["version"]) for d in deps if d.get("name") == "olares")
    if not targets.admits(window, os_version):
        raise Refused(f"{file_name}: its olares dependency {window} does not admit {os_version}")
    modern = semver.Version.parse(str(manifest["olaresManifest.version"])) >= semver.Version.parse("0.12.0")
    os_modern = targets.parse_os_version(os_version) >= MODERN_OS
    if modern != os_modern:
        raise Refused(f"{file_name}: manifest {manifest['olaresManifest.version']}/{manifest.get('apiVersion')} "
                      f"on Olares {os_version}")


@dataclass
class Device:
    base: str
    os_version: str
    hash: str = ""
    apps: dict[str, dict] = field(default_factory=dict)  # app id -> stored entry
    charts: dict[str, bytes] = field(default_factory=dict)  # file name -> bytes, kept for good
    requests: list[str] = field(default_factory=list)
    verify: Any = True  # an ssl.SSLContext trusting a test's self-signed certificate

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=10, verify=self.verify)

    def sync(self) -> bool:
        """One sync; whether anything changed."""
        with self._client() as client:
            h = client.get("/api/v1/appstore/hash", params={"version": self.os_version}).json()
            self.requests.append("hash")
            if h["hash"] == self.hash:
                return False
            info = client.get("/api/v1/appstore/info", params={"version": self.os_version}).json()
            self.requests.append("info")
            listed = info["data"]["apps"]
            changed = [i for i, a in listed.items() if i not in self.apps or self.apps[i]["version"] != a["version"]]
            for i in range(0, len(changed), 10):
                r = client.post("/api/v1/applications/info",
                                json={"app_ids": changed[i:i + 10], "version": self.os_version}).json()
                self.requests.append("details")
                self.apps.update(r["apps"])
            for gone in set(self.apps) - set(listed):
                del self.apps[gone]
            self.hash = h["hash"]
            return True

    chart_prefixes = ("/api/v1",)  # tried in order, the next one on a 404

    def chart(self, name: str) -> tuple[dict, bytes]:
        entry = next(e for e in self.apps.values() if e["name"] == name)
        file_name = entry["chartName"]
        if file_name not in self.charts:
            with self._client() as client:
                for prefix in self.chart_prefixes:
                    r = client.get(f"{prefix}/applications/{name}/chart",
                                   params={"fileName": file_name, "version": entry["version"]})
                    if r.status_code != 404:
                        break
            assert r.status_code == 200, (file_name, r.status_code, r.text[:200])
            self.charts[file_name] = r.content
            self.requests.append(f"chart {file_name}")
        return entry, self.charts[file_name]

    def install(self, name: str) -> str:
        """Fetch (or take from the cache) the chart of an app and put it through the installer's gate."""
        entry, data = self.chart(name)
        installer_gate(self.os_version, name, entry["version"], entry["chartName"], data)
        return entry["version"]


def device_lifecycle(base: str) -> Device:
    """A 1.12.5 device installs the llama.cpp app, upgrades its OS to 1.12.6 in the middle, syncs
    again and installs both apps: every chart it gets passes its installer, and a file name never
    stands for two charts."""
    dev = Device(base, "1.12.5")
    assert dev.sync()
    assert [e["name"] for e in dev.apps.values()] == [NAME]  # the vLLM app has no chart for 1.12.5
    assert dev.install(NAME) == "1.0.15-legacy"
    assert not dev.sync()  # nothing changed: one hash request
    dev.os_version = "1.12.6"
    assert dev.sync()  # the hash differs per OS window
    assert dev.requests[-2:] == ["info", "details"]  # the llama.cpp app's version string changed; vLLM is new
    assert dev.install(NAME) == "1.0.15"  # an upgrade from 1.0.15-legacy, fetched under a new file name
    assert dev.install(VLLM) == "2.5.11"
    assert set(dev.charts) == {f"{NAME}-1.0.15-legacy.tgz", f"{NAME}-1.0.15.tgz", f"{VLLM}-2.5.11.tgz"}
    # the chart route answers by file name alone, whatever `version` says
    for file_name, data in dev.charts.items():
        name = file_name.rsplit("-", 2)[0] if "legacy" in file_name else file_name.rsplit("-", 1)[0]
        for asked in ("1.12.5", "1.12.6", "1.0.12", ""):
            r = HTTP.get(f"{base}/api/v1/applications/{name}/chart", params={"fileName": file_name, "version": asked})
            assert r.content == data
    return dev


# ---------------------------------------------------------------- Olares 1.12.7: the v2 sync


class Int64:
    """A JSON integer the device decodes into int64 (a bool or a float is refused)."""

    def __init__(self, unit: str = "") -> None:
        self.unit = unit  # "ms" or "s": the value must be a time in that unit (or 0, nothing yet)


class MapOf:
    def __init__(self, value: Any) -> None:
        self.value = value


MS, S = Int64("ms"), Int64("s")
LOCALES = MapOf(str)
V2_CATALOG = {"schema_version": str, "source_id": str, "taxonomy_last_modify_time": MS, "apps_last_modify_time": MS,
              "apps_filter_digest": str}
V2_TAXONOMY = {
    "last_modify_time": MS,
    "source": {"source_id": str, "short_label": str, "display_name": LOCALES, "icon": str, "is_official": bool},
    "languages": [{"code": str, "display_name": str, "sort": Int64(), "enabled": bool}],
    "categories": [{"id": str, "builtin": bool, "sort": Int64(), "icon": str, "title": LOCALES, "description": LOCALES}],
    "nav": [str],
    "pages": [{"category_id": str, "items": [{"id": str, "type": str}]}],
    "tags": list, "topic_lists": list, "topics": list, "recommends": list,
}
V2_ITEM = {"app_id": str, "name": str, "title": str, "version": str, "icon": str, "featured_image": str, "cfg_type": str,
           "categories": [str], "categories_v2": [str], "tags": [str], "app_labels": [str],
           "olares_version_constraint": str, "last_modify_time": MS, "updated_at": S}
V2_APPLICATIONS = {"items": [V2_ITEM], "removed": list, "has_more": bool, "max_last_modify_time": MS,
                   "total": Int64(), "page": Int64(), "page_size": Int64()}


def envelope(data: Any) -> dict[str, Any]:
    return {"code": Int64(), "msg": str, "data": data}


def decode(value: Any, spec: Any, where: str = "$") -> Any:
    """Check `value` against `spec` as a strict decoder would, every field present; returns value."""
    if isinstance(spec, Int64):
        if type(value) is not int or not -(2**63) <= value < 2**63:
            raise AssertionError(f"{where}: {value!r} is not an int64")
        if spec.unit == "ms" and value and not 10**12 <= value < 10**14:
            raise AssertionError(f"{where}: {value} is not a time in epoch milliseconds")
        if spec.unit == "s" and value and not 10**9 <= value < 10**11:
            raise AssertionError(f"{where}: {value} is not a time in epoch seconds")
    elif spec is int:
        raise TypeError("use Int64()")
    elif spec in (str, bool, list, dict):
        if type(value) is not spec:
            raise AssertionError(f"{where}: {value!r} is not a {spec.__name__}")
    elif isinstance(spec, MapOf):
        if type(value) is not dict:
            raise AssertionError(f"{where}: {value!r} is not an object")
        for k, v in value.items():
            decode(v, spec.value, f"{where}.{k}")
    elif isinstance(spec, list):
        if type(value) is not list:
            raise AssertionError(f"{where}: {value!r} is not a list")
        for i, v in enumerate(value):
            decode(v, spec[0], f"{where}[{i}]")
    elif isinstance(spec, dict):
        if type(value) is not dict:
            raise AssertionError(f"{where}: {value!r} is not an object")
        missing = set(spec) - set(value)
        if missing:
            raise AssertionError(f"{where}: missing {sorted(missing)}")
        for k, sub in spec.items():
            decode(value[k], sub, f"{where}.{k}")
    else:
        raise TypeError(spec)
    return value


@dataclass
class V2Device(Device):
    """A 1.12.7 device: catalog probe -> taxonomy -> applications (paged by `page_size`) ->
    details (v1 POST, only for apps new or whose version changed) -> charts under /api/v2."""

    source_id: str = "my-llm-source"  # the name the user gave the source
    page_size: int = 1  # small, so that paging is exercised on the two bundled apps
    digest: str = ""
    taxonomy: dict = field(default_factory=dict)
    items: dict[str, dict] = field(default_factory=dict)  # app id -> applications item
    chart_prefixes = ("/api/v2", "/api/v1")

    def sync(self) -> bool:
        with self._client() as client:
            params = {"source_id": self.source_id, "version": self.os_version}
            probe = decode(client.get("/api/v2/catalog", params=params).json(), envelope(V2_CATALOG))["data"]
            self.requests.append("catalog")
            assert probe["schema_version"] == "v2" and probe["source_id"] == self.source_id, probe
            if probe["apps_filter_digest"] == self.digest:
                return False
            self.taxonomy = decode(client.get("/api/v2/taxonomy", params=params).json(), envelope(V2_TAXONOMY))["data"]
            self.requests.append("taxonomy")
            assert self.taxonomy["last_modify_time"] == probe["taxonomy_last_modify_time"]
            listed: dict[str, dict] = {}
            page = 1
            while True:
                r = client.get("/api/v2/applications", params={**params, "page": page, "size": self.page_size})
                doc = decode(r.json(), envelope(V2_APPLICATIONS))["data"]
                self.requests.append(f"applications {page}")
                assert (doc["page"], doc["page_size"]) == (page, self.page_size) and len(doc["items"]) <= self.page_size
                assert doc["max_last_modify_time"] == probe["apps_last_modify_time"]
                listed.update({i["app_id"]: i for i in doc["items"]})
                if not doc["has_more"]:
                    break
                page += 1
            assert len(listed) == doc["total"]
            for i in listed.values():
                assert i["last_modify_time"] == i["updated_at"] * 1000  # one date, two units
            changed = [i for i, a in listed.items() if i not in self.apps or self.apps[i]["version"] != a["version"]]
            for n in range(0, len(changed), 10):
                r = client.post("/api/v1/applications/info",
                                json={"app_ids": changed[n:n + 10], "version": self.os_version}).json()
                self.requests.append("details")
                assert r["not_found"] == []
                self.apps.update(r["apps"])
            for gone in set(self.apps) - set(listed):
                del self.apps[gone]
            self.items = listed
            self.digest = probe["apps_filter_digest"]
            return True


def chart_olares_range(data: bytes) -> str:
    files = chart_files(data)
    manifest = manifest_of(files, yaml.safe_load(files["Chart.yaml"])["name"])
    return next(str(d["version"]) for d in manifest["options"]["dependencies"] if d["name"] == "olares")


def device_lifecycle_v2(base: str, verify: Any = True) -> V2Device:
    """A 1.12.6 device syncing over v1 upgrades its OS to 1.12.7 and syncs over v2: the same apps,
    the charts it already holds kept by file name, every item's constraint the chart's own olares
    range, and the v2 chart route answering the v1 route's bytes."""
    old = Device(base, "1.12.6", verify=verify)
    assert old.sync()
    assert old.install(NAME) == "1.0.15"
    dev = V2Device(base, "1.12.7", charts=dict(old.charts), verify=verify)
    assert dev.sync()
    assert dev.requests[:4] == ["catalog", "taxonomy", "applications 1", "applications 2"]
    assert {i["name"]: i["version"] for i in dev.items.values()} == {NAME: "1.0.15", VLLM: "2.5.11"}
    assert set(dev.items) == {e["id"] for e in dev.apps.values()}
    assert dev.install(NAME) == "1.0.15" and f"chart {NAME}-1.0.15.tgz" not in dev.requests  # cached by file name
    assert dev.install(VLLM) == "2.5.11"
    for i in dev.items.values():
        entry = dev.apps[i["app_id"]]
        data = dev.charts[entry["chartName"]]
        assert i["olares_version_constraint"] == chart_olares_range(data), i["name"]
        assert i["title"] == entry["title"]["en-US"] and i["icon"] == entry["icon"]
        v1 = httpx.get(f"{base}/api/v1/applications/{i['name']}/chart", params={"fileName": entry["chartName"]},
                       verify=verify)
        v2 = httpx.get(f"{base}/api/v2/applications/{i['name']}/chart", params={"fileName": entry["chartName"]},
                       verify=verify)
        assert v1.status_code == v2.status_code == 200 and v1.content == v2.content == data
        assert v1.headers["etag"] == v2.headers["etag"]
    ids = [c["id"] for c in dev.taxonomy["categories"]]
    assert set(dev.taxonomy["nav"]) <= set(ids) and {c for i in dev.items.values() for c in i["categories"]} <= set(ids)
    before = len(dev.requests)
    assert not dev.sync()  # nothing changed: one probe
    assert dev.requests[before:] == ["catalog"]
    return dev
