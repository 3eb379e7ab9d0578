"""Which Helm releases app-service makes of one chart, for which users, with which values.

Read from beclab/Olares framework/app-service (the index's versions; 1.12.x tags do not resolve
to commits there):

- pkg/appinstaller/versioned/new.go NewHelmOps: apiVersion v3 -> HelmOpsV3 (v1's install and
  upgrade), v2 -> HelmOpsV2, anything else -> HelmOps (v1).
- v1/v3 (pkg/appinstaller HelmOps, helm.InstallCharts): one release named after the app in the
  namespace `<app>-<owner>` (pkg/utils AppNamespace), CreateNamespace; a v3 app with
  `options.shared: true` (appcfg IsShared: only v3) or `spec.onlyAdmin` is installed by the
  administrator only.
- v2 with spec.subCharts (v2/helm_ops_install.go HelmOpsV2.install at 12069e9d): each sub-chart
  from the folder of its name, released under its name; a `shared: true` chart only for an
  administrator and only once, into `<chart>-shared`; the others into `<app>-<owner>`.
- values (pkg/appinstaller/helm_utils.go SetValues): bfl.username, user.zone, domain, userspace,
  GPU, cluster, admin (the owner for an administrator's v2 install), isAdmin, rootPath, olaresEnv
  (the app's envs, here at their defaults), nodes, sysVersion, ...: olares-pack's placeholders
  (charts/helm.py installer_values) plus the keys SetValues adds beyond them.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from olares_pack.charts import helm
from olares_pack.common.errors import InputError
from olares_pack.common.yamlsrc import safe_load

ADMIN = "alice"
OTHER = "bob"


@dataclass(frozen=True)
class Release:
    """One Helm release app-service makes for one user."""

    user: str
    name: str
    namespace: str
    chart: Path
    shared: bool = False  # the v2 shared sub-chart (the administrator's, once per device)


@dataclass
class ChartPlan:
    app: str
    version: str
    api_version: str
    form: str  # per-user | shared | shared-v2
    folder: Path
    manifest: dict[str, Any]
    users: list[str]
    admin: str = ADMIN
    shared_suffix: str = ""  # a user's cluster: the v2 shared namespace gets the run's suffix
    release_suffix: str = ""  # a user's cluster: every release name gets the run's suffix too
    sub_charts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def multi(self) -> bool:
        return self.form == "shared-v2"

    def namespace(self, user: str) -> str:
        return f"{self.app}-{user}"

    def shared_namespace(self, chart: str) -> str:
        return f"{chart}-shared{self.shared_suffix}"

    def release_name(self, chart: str) -> str:
        return f"{chart}{self.release_suffix}"

    def releases(self, user: str) -> list[Release]:
        if not self.multi:
            return [Release(user, self.release_name(self.app), self.namespace(user), self.folder)]
        out = []
        for sub in self.sub_charts:
            name, shared = str(sub["name"]), bool(sub.get("shared"))
            if shared and user != self.admin:
                continue
            ns = self.shared_namespace(name) if shared else self.namespace(user)
            out.append(Release(user, self.release_name(name), ns, self.folder / name, shared))
        return out

    def values(self, user: str) -> dict[str, Any]:
        entrances = [str(e.get("name")) for e in self.manifest.get("entrances") or [] if isinstance(e, dict)]
        values = helm.installer_values(self.app, entrances, owner=user, admin=self.admin,
                                       olares_env=helm.env_defaults(self.manifest))
        # SetValues' keys beyond the lint placeholders (helm_utils.go SetValues)
        values.update({"isAdmin": user == self.admin, "rootPath": "/olares", "sharedlib": "/olares/share",
                       "fs_type": "fs", "deviceName": "olares", "downloadCdnURL": ""})
        return values


def extract(data: bytes, dest: Path, app: str) -> Path:
    """A packaged chart unpacked under dest; the chart folder (named after the app)."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except tarfile.TarError as exc:
        raise InputError(f"{app}: not a chart archive: {exc}") from None
    with tar:
        for m in tar.getmembers():
            rel = PurePosixPath(m.name)
            if not m.isfile() or rel.is_absolute() or ".." in rel.parts:
                continue
            out = dest.joinpath(*rel.parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            f = tar.extractfile(m)
            assert f is not None
            out.write_bytes(f.read())
    folder = dest / app
    if not (folder / "Chart.yaml").is_file():
        raise InputError(f"{app}: the archive has no {app}/Chart.yaml")
    return folder


def plan(data: bytes, dest: Path, app: str, version: str, *, admin: str = ADMIN, other: str = OTHER,
         shared_suffix: str = "", release_suffix: str = "") -> ChartPlan:
    return plan_folder(extract(data, dest, app), app, version, admin=admin, other=other, shared_suffix=shared_suffix,
                       release_suffix=release_suffix)


def plan_folder(folder: Path, app: str, version: str, *, admin: str = ADMIN, other: str = OTHER,
                shared_suffix: str = "", release_suffix: str = "") -> ChartPlan:
    """The releases of a chart folder (a published package unpacked, or a catalogue's chart)."""
    files = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8", errors="replace")
             for p in folder.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", "") and p.name != "owners"}
    manifest = safe_load(helm.installed_manifest(files, app)) or {}
    if not isinstance(manifest, dict):
        raise InputError(f"{app} {version}: OlaresManifest.yaml is not a mapping")
    api = str(manifest.get("apiVersion") or "v1")
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    options = manifest.get("options") if isinstance(manifest.get("options"), dict) else {}
    subs = [s for s in spec.get("subCharts") or [] if isinstance(s, dict) and s.get("name")]
    if api == "v2" and len(subs) > 1:
        form, users = "shared-v2", [admin, other]
    elif (api == "v3" and options.get("shared")) or spec.get("onlyAdmin"):
        form, users = "shared", [admin]
    else:
        form, users = "per-user", [admin, other]
    return ChartPlan(app, version, api, form, folder, manifest, users, admin, shared_suffix, release_suffix, subs)
