"""Render an imported chart (a ChartApp): its files as they were written, its OlaresManifest.yaml
and Chart.yaml composed again from the manifest it was imported with and the app's own fields
(name, version, texts, changelog), and one i18n file per locale. A chart renders for the target
of the manifest generation it was written for; `olares-pack import --upgrade` converts a legacy
chart to 0.12.0/v3 (upgrade.py)."""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from olares_pack.apps.manifest import ChartApp
from olares_pack.olares import TargetProfile, own_target

# OlaresManifest.yaml fields the app's own fields hold (manifest key -> app field).
METADATA_FIELDS = {"name": "name", "title": "title", "description": "description", "icon": "icon",
                   "version": "version", "categories": "categories"}
SPEC_FIELDS = {"versionName": "version_name", "fullDescription": "full_description", "developer": "developer",
               "submitter": "submitter", "website": "website", "sourceCode": "source_code", "doc": "doc"}
CHART_FIELDS = ("name", "version")  # Chart.yaml fields the app holds; the rest is kept as written


def imported_summary(version: str) -> str:
    """The summary an import gives a version whose chart said nothing of what it changed."""
    return f"{version} (imported)"


def upgrade_text(app: ChartApp, locale: str = "en-US") -> str | None:
    """spec.upgradeDescription as the chart writes it: the notes of this version's changelog entry
    (an import keeps the original text there), else its summary (none for an imported version
    whose chart had none)."""
    entry = app.changelog_entry
    if entry is None or (not entry.notes and not entry.changes and entry.summary == imported_summary(entry.version)):
        return None
    if locale != "en-US":
        loc = entry.locales.get(locale)
        return (loc.notes or loc.summary) if loc else None
    return entry.notes or entry.summary


def manifest_data(app: ChartApp) -> dict[str, Any]:
    """The OlaresManifest.yaml of a chart whose manifest is static YAML."""
    data = copy.deepcopy(app.chart.manifest)
    md = data.setdefault("metadata", {})
    for key, field in METADATA_FIELDS.items():
        md[key] = getattr(app, field)
    spec = data.setdefault("spec", {})
    for key, field in SPEC_FIELDS.items():
        value = getattr(app, field)
        if value is not None:
            spec[key] = value
    if app.license:
        spec["license"] = [lic.model_dump(exclude_none=True) for lic in app.license]
    if (text := upgrade_text(app)) is not None:
        spec["upgradeDescription"] = text
    return data


_META_VERSION = re.compile(r"(?m)^(metadata:[^\n]*\n(?:(?:[ \t]+[^\n]*|[ \t]*)\n)*?[ \t]+version:[ \t]*)(['\"]?)[^'\"\n#]*\2")


def _templated_manifest(app: ChartApp) -> str:
    """A templated 0.10.0 manifest, kept as text: only metadata.version follows the app."""
    text = app.chart.manifest_text or ""
    return _META_VERSION.sub(lambda m: f"{m.group(1)}{m.group(2)}{app.version}{m.group(2)}", text, count=1)


def dump(data: Any) -> str:
    # Keys sorted: an app travels through release records (canonical JSON, keys sorted), and a
    # render must give the same bytes from app.yaml and from its record.
    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True, width=4096, default_flow_style=False)


def render(app: ChartApp, target: TargetProfile) -> dict[str, str]:
    own = own_target(app.chart.manifest_version)
    if target.name != own:
        # Written for one installer generation, a chart serves only that one: 1.12.6+ refuses
        # 0.10.0/v1/v2 charts (oac pins them to >=1.12.3-0,<1.12.6), and 1.12.3-1.12.5 do not read
        # 0.12.0 envelopes. Writing it under the other target's folder would be a silent lie.
        from olares_pack.common.errors import InputError

        how = ("`olares-pack import --upgrade` converts it to 0.12.0/v3 as the next version, and the release "
               "keeps the published legacy versions for 1.12.3-1.12.5") if own == "legacy" else (
               "a 0.12.0 chart has no legacy form; keep its published legacy versions, or write the app for both targets")
        raise InputError(f"{app.name}: its chart is written for manifest {app.chart.manifest_version or '?'} "
                         f"(the {own} target) and cannot serve the {target.name} target ({target.olares}): {how}")
    files = dict(app.chart.files)
    # A chart app has one line (its own target), so its chart carries the release version itself.
    chart = {"apiVersion": "v2", "name": app.name, **{k: v for k, v in app.chart.chart_yaml.items() if k not in CHART_FIELDS},
             "version": app.version}
    files["Chart.yaml"] = dump(chart)
    files["OlaresManifest.yaml"] = _templated_manifest(app) if app.chart.manifest_text is not None else dump(manifest_data(app))
    for locale, texts in app.locales.items():
        i18n: dict[str, Any] = {"metadata": {"title": texts.title, "description": texts.description}}
        spec = {}
        if texts.full_description is not None:
            spec["fullDescription"] = texts.full_description
        if (up := upgrade_text(app, locale)) is not None:
            spec["upgradeDescription"] = up
        if spec:
            i18n["spec"] = spec
        files[f"i18n/{locale}/OlaresManifest.yaml"] = dump(i18n)
    return dict(sorted(files.items()))


def objects(app: ChartApp, mode: str = "nvidia") -> list[dict[str, Any]]:
    """The Kubernetes objects the installer renders from the app's chart (owner == admin,
    GPU.Type = mode); an apiVersion v2 chart sub-chart by sub-chart, as lint renders it."""
    from olares_pack import olares

    return objects_of(app.name, render(app, olares.get(app.targets[0])), app.chart.manifest, mode)


def objects_of(name: str, files: dict[str, str], manifest: dict[str, Any], mode: str = "nvidia", *,
               owner: str = "alice", olares_env: dict[str, str] | None = None,
               admin: str | None = None) -> list[dict[str, Any]]:
    """The Kubernetes objects the installer renders from a chart's files (owner == admin, GPU.Type
    = mode): an apiVersion v2 chart sub-chart by sub-chart, the root chart alone otherwise."""
    from olares_pack.charts import helm, package

    m = manifest
    subs = [str(c["name"]) for c in (m.get("spec") or {}).get("subCharts") or [] if isinstance(c, dict) and c.get("name")] \
        if str(m.get("apiVersion", "")).lower() == "v2" else []
    parts = [(sub, {k[len(sub) + 1:]: v for k, v in files.items() if k.startswith(f"{sub}/")}) for sub in subs] or [(name, files)]
    entrances = [str(e.get("name")) for e in m.get("entrances") or [] if isinstance(e, dict)]
    values = helm.installer_values(name, entrances, owner=owner, admin=admin or owner, gpu_type=mode,
                                   olares_env=helm.env_defaults(m) if olares_env is None else olares_env)
    out: list[dict[str, Any]] = []
    for release, part in parts:
        with helm.load_bytes(package.build_archive(release, part)) as chart:
            rendered = chart.render(values=values, name=release, namespace=f"{name}-{owner}")
        out += [o for _, o in helm.objects(rendered) if isinstance(o, dict)]
    return out
