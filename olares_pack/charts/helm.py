"""The real Helm engine (helm-python-sdk, Helm v4 through ctypes), behind one small module."""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python

from olares_pack.charts.fastyaml import safe_load
from olares_pack.common.errors import InputError
from olares_pack.olares import DEFAULT_OS_VERSION

# Helm lint severities (helm_python.lint): 1 info, 2 warning, 3 error.
SEVERITY = {0: "info", 1: "info", 2: "warning", 3: "error"}


@dataclass(frozen=True)
class HelmMessage:
    severity: str
    path: str
    message: str


def env_defaults(manifest: dict[str, Any]) -> dict[str, str]:
    """.Values.olaresEnv of a fresh install: each of the manifest's envs at its default (the
    official llmbase charts read their model, engine arguments and resources this way, the
    defaults written only in OlaresManifest.yaml: beclab/apps llamacppqwen3627bmtpq4kxlv3)."""
    envs = manifest.get("envs") if isinstance(manifest, dict) else None
    return {str(e["envName"]): str(e["default"]) for e in envs or []
            if isinstance(e, dict) and e.get("envName") and e.get("default") not in (None, "")}


def installer_values(
    app_name: str,
    entrances: list[str],
    *,
    owner: str = "alice",
    admin: str = "alice",
    gpu_type: str | None = "nvidia",
    olares_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Placeholders for every value the Olares installer injects at install time.

    Mirrors the installer's own dry-run values (framework/oac helmrender.BuildValues) and adds
    the userspace, GPU, cluster and node facts an install on an Olares One carries.
    """
    gpu: dict[str, Any] = {"Cuda": "12.9"}
    if gpu_type:
        gpu["Type"] = gpu_type
    values: dict[str, Any] = {
        "bfl": {"username": owner},
        "user": {"zone": f"{owner}.olares.com"},
        "admin": admin,
        "domain": {name: f"{name}.{owner}.olares.com" for name in entrances},
        "userspace": {
            "appData": f"/olares/rootfs/userspace/pvc-appdata-{owner}/Data/{app_name}",
            "appCache": f"/olares/userdata/Cache/{app_name}",
            "userData": f"/olares/rootfs/userspace/pvc-userspace-{owner}/Home",
            "appCommon": "/olares/share/appcommon",
            "appdata": "appdata",
            "data": "userspace/Home",
        },
        "schedule": {"nodeName": "olares"},
        "os": {"appKey": "appKey", "appSecret": "appSecret"},
        "GPU": gpu,
        "gpu": gpu_type or "",
        "cluster": {"arch": "amd64"},
        "nodes": [{"name": "olares", "cpu": [{"arch": "amd64", "coreNumber": 24}],
                   "memory": {"total": 103079215104}, "gpus": [{"type": "nvidia", "memory": 25651314688}]}],
        "sysVersion": DEFAULT_OS_VERSION,
        "olaresEnv": dict(olares_env or {}),
        "dep": {},
        "postgres": {"databases": {}},
        "redis": {},
        "mongodb": {"databases": {}},
        "mysql": {"databases": {}},
        "mariadb": {"databases": {}},
        "minio": {"buckets": {}},
        "rabbitmq": {"vhosts": {}},
        "elasticsearch": {"indexes": {}},
        "zinc": {"indexes": {}},
        "nats": {"subjects": {}, "refs": {}},
        "svcs": {},
        "oidc": {"client": {}, "issuer": "issuer"},
    }
    return values  # built afresh on every call: a caller may change it (no copy needed)


def load(path: Path | str) -> helm_python.Chart:
    try:
        return helm_python.Chart.load(str(path))
    except helm_python.HelmError as exc:
        raise InputError(f"{path}: Helm cannot load the chart: {exc}") from None


def load_bytes(data: bytes) -> helm_python.Chart:
    try:
        return helm_python.Chart.load_archive(data)
    except helm_python.HelmError as exc:
        raise InputError(f"Helm cannot load the chart archive: {exc}") from None


def installed_manifest(files: dict[str, str], name: str) -> str:
    """A chart's OlaresManifest.yaml as the installer reads it: one holding template syntax (an
    apiVersion v2 shared app's administrator branches) rendered for the administrator's own
    install (owner == admin), the others as written."""
    from olares_pack.charts import package

    text = files.get("OlaresManifest.yaml", "")
    if "{{" not in text:
        return text
    chart_yaml = files.get("Chart.yaml", f"apiVersion: v2\nname: {name}\nversion: 0.0.0\n")
    try:
        with load_bytes(package.build_archive(name, {"Chart.yaml": chart_yaml, "templates/manifest.yaml": text})) as chart:
            out = render(chart, installer_values(name, [name]), namespace=f"{name}-alice")
    except helm_python.HelmError as exc:
        raise InputError(f"OlaresManifest.yaml does not render: {exc}") from None
    return next(iter(out.values()), "")


def render(chart: helm_python.Chart, values: dict[str, Any], *, namespace: str) -> dict[str, str]:
    """Template path -> rendered text, as `helm template` would produce it (no cluster)."""
    name = chart.name
    return chart.render(values=values, name=name, namespace=namespace, is_install=True)



# Helm's own manifest separator (releaseutil.SplitManifests): tolerant of indentation before ---.
# `\s*\n---` needs '---' right after a newline; matching from the newline (and leaving the
# whitespace before it to the previous document, where YAML ignores it) splits alike without
# the backtracking of `\s*\n` over long runs of blank lines.
_SEPARATOR = re.compile(r"(?:^|\n)---\s*")


def objects(rendered: dict[str, str], cache: dict[str, Any] | None = None,
            key: Callable[[str], str] | None = None,
            wanted: Callable[[str], bool] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(template path, object) for every non-empty YAML document of a render, in path order.
    `cache` (document key -> object) lets several renders of one chart share the documents they
    render alike (the key: the text, or `key(text)`); the objects are then shared too, so callers
    must not change them. `wanted`: a document whose text it refuses is neither parsed nor listed
    (for a caller that reads only some kinds)."""
    out = []
    for path in sorted(rendered):
        if not path.endswith((".yaml", ".yml", ".json")):
            continue
        # Helm trims the whole template output before splitting, so an indented first '---' is a separator.
        text = rendered[path].strip()
        for part in _SEPARATOR.split(text) if "---" in text else (text,):
            if not part.strip() or (wanted is not None and not wanted(part)):
                continue
            if cache is None:
                doc = safe_load(part)
            elif (doc := cache.get(k := key(part) if key else part)) is None:
                doc = cache[k] = safe_load(part)
            if doc:
                out.append((path, doc))
    return out


def lint(path: Path | str, values: dict[str, Any], *, namespace: str, kube_version: str) -> list[HelmMessage]:
    report = helm_python.lint(str(path), values, namespace=namespace, kube_version=f"v{kube_version}")
    msgs = [HelmMessage(SEVERITY.get(m.get("severity", 0), "info"), m.get("path", ""), m.get("error", ""))
            for m in report.get("messages", [])]
    msgs += [HelmMessage("error", "", e) for e in report.get("errors", []) or []]
    return msgs


def archive_member_names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getnames()
