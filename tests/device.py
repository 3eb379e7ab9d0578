"""An Olares device's market client, as the public beclab/market sources and the docs describe it
(../shared/docs/market-source-api.md): it syncs hash -> info -> details (at most 10 ids a call,
only for apps that are new or whose version string changed), downloads a chart with the *app*
version and the file name from the app's entry, and caches charts by file name for good. Its
OS version can change between syncs. Every chart it is about to install goes through the
installer's gate for its OS version, written here from the format notes, independently of
olares-pack's linter."""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass, field

import httpx
import semver
import yaml

from olares_pack import targets

NAME, VLLM = "llamacppqwen36mtpone", "vllmqwen36turbo27bone"  # the bundled example apps
MODERN_OS = semver.Version.parse("1.12.6-0")  # olares-format.md, "Two targets"


class Refused(AssertionError):
    pass


def chart_files(data: bytes) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}


def installer_gate(os_version: str, name: str, version: str, file_name: str, data: bytes) -> None:
    """What the installer of this OS version checks before it installs a chart."""
    files = chart_files(data)
    chart = yaml.safe_load(files["Chart.yaml"])
    manifest = yaml.safe_load(files["OlaresManifest.yaml"])
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

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=10)

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

    def chart(self, name: str) -> tuple[dict, bytes]:
        entry = next(e for e in self.apps.values() if e["name"] == name)
        file_name = entry["chartName"]
        if file_name not in self.charts:
            with self._client() as client:
                r = client.get(f"/api/v1/applications/{name}/chart",
                               params={"fileName": file_name, "version": entry["version"]})
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
    assert dev.install(NAME) == "1.0.11-legacy"
    assert not dev.sync()  # nothing changed: one hash request
    dev.os_version = "1.12.6"
    assert dev.sync()  # the hash differs per OS window
    assert dev.requests[-2:] == ["info", "details"]  # the llama.cpp app's version string changed; vLLM is new
    assert dev.install(NAME) == "1.0.11"  # an upgrade from 1.0.11-legacy, fetched under a new file name
    assert dev.install(VLLM) == "2.5.9"
    assert set(dev.charts) == {f"{NAME}-1.0.11-legacy.tgz", f"{NAME}-1.0.11.tgz", f"{VLLM}-2.5.9.tgz"}
    # the chart route answers by file name alone, whatever `version` says
    for file_name, data in dev.charts.items():
        name = file_name.rsplit("-", 2)[0] if "legacy" in file_name else file_name.rsplit("-", 1)[0]
        for asked in ("1.12.5", "1.12.6", "1.0.11", ""):
            r = httpx.get(f"{base}/api/v1/applications/{name}/chart", params={"fileName": file_name, "version": asked})
            assert r.content == data
    return dev
