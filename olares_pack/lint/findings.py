"""Findings are data: a stable rule id, a severity, where, what, and a hint."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    chart: str  # what was linted: a folder, an archive, or app.yaml@target
    file: str  # file inside the chart ("" for the chart as a whole)
    path: str  # field path or object (Deployment/name: spec.template...) ("" if none)
    message: str
    hint: str = ""
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sort_key(self) -> tuple[Any, ...]:
        return (self.chart, SEVERITIES.index(self.severity), self.file, self.line or 0, self.rule, self.path, self.message)


# Every rule: id -> (default severity, what it checks). Ids are stable; README lists them.
RULES: dict[str, tuple[Severity, str]] = {
    "chart.structure": ("error", "Chart.yaml, values.yaml, OlaresManifest.yaml and templates/ are present"),
    "chart.name": ("error", "folder name == Chart.yaml name == metadata.name, ^[a-z0-9]{1,30}$, not reserved"),
    "chart.version": ("error", "Chart.yaml version is semver and equals metadata.version (leading zeros: a warning, they install)"),
    "chart.app-version": ("info", "spec.versionName follows Chart.yaml appVersion"),
    "manifest.parse": ("error", "OlaresManifest.yaml parses (after rendering, for manifests below 0.12.0)"),
    "manifest.schema-version": ("error", "olaresManifest.version is semver; apiVersion is v1, v2 or v3; v2 declares shared subCharts"),
    "manifest.metadata": ("error", "metadata fields present, title 1-30 chars, icon an http(s) URL; unknown keys on 0.12.0 are a warning"),
    "manifest.entrances": ("error", "1-10 entrances; name, host, port, title, authLevel, openMethod valid; names unique"),
    "manifest.static": ("error", "a 0.12.0 manifest holds no template syntax outside quoted strings"),
    "manifest.resources": ("error", "resource envelopes complete, valid quantities, limits >= requirements"),
    "manifest.mode-arch": ("error", "a compute mode's architecture is in spec.supportArch (nvidia needs amd64)"),
    "manifest.supported-gpu": ("error", "spec.supportedGpu is empty on 0.12.0"),
    "manifest.workload-replicas": ("error", "workloadReplicas is declared on 0.12.0 manifests (apiVersion other than v2)"),
    "manifest.olares-dependency": ("error", "the olares system dependency exists and sits in its apiVersion's window"),
    "manifest.os-window": ("error", "the target Olares version is inside the chart's olares dependency window"),
    "manifest.provider": ("error", "provider and permission.provider are empty on 0.12.0"),
    "manifest.olares-user": ("error", "no OLARES_USER env names or strings in a 0.12.0 chart"),
    "manifest.api-timeout": ("warning", "streaming LLM APIs set options.apiTimeout: 0"),
    "manifest.i18n": ("warning", "i18n/<locale>/OlaresManifest.yaml parse and hold only translatable texts"),
    "helm.lint": ("warning", "the real Helm engine lints the chart (the installer renders, it does not lint)"),
    "helm.render": ("error", "the chart renders with the installer's values (owner == admin and owner != admin, each mode)"),
    "kube.schema": ("error", "every rendered object validates against the Kubernetes JSON schemas"),
    "template.namespace": ("error", "namespaced objects use the release namespace (or name none)"),
    "template.app-workload": ("error", "a Deployment or StatefulSet is named after the app"),
    "template.hostpath-recreate": ("error", "a Deployment with hostPath volumes uses strategy Recreate"),
    "template.resources": ("error", "every container sets cpu and memory requests and limits, requests <= limits"),
    "template.envelope": ("error", "the containers' sums fit each mode's envelope"),
    "template.userspace-permission": ("error", ".Values.userspace.<x> is used exactly when permission.<x> is granted"),
    "template.workload-replicas": ("error", "workloadReplicas lists exactly the rendered Deployments/StatefulSets"),
    "template.replicas-wiring": ("error", "spec.replicas follows .Values.workloads.<name>.replicaCount (stop/resume)"),
    "template.gpu-memory": ("error", "nvidia.com/gpumem is a bare MiB integer, equal in requests and limits"),
    "template.runtime-class": ("warning", "runtimeClassName is left to the platform"),
    "engine.flag": ("error", "every engine flag is accepted by the pinned engine build"),
    "engine.value": ("error", "flag values are among those the engine build accepts"),
    "engine.defaults": ("warning", "--host, --port and --parallel are set explicitly"),
    "engine.port": ("error", "container port, Service port, entrance port and --port agree"),
    "engine.build": ("info", "which engine build's flag registry was used"),
    "image.unpinned": ("warning", "images are pinned by digest"),
    "vram.budget": ("error", "the GPU memory estimate fits the device, and the declared GPU memory covers it (olares-pack apps)"),
    "secret.plaintext": ("error", "tokens and API keys never appear in plain text (ConfigMap, args, env value)"),
    "lint.internal": ("error", "a rule could not run on this chart (a bug in olares-pack: please report it)"),
}


def make(rule: str, chart: str, message: str, *, file: str = "", path: str = "", hint: str = "",
         line: int | None = None, severity: Severity | None = None) -> Finding:
    return Finding(rule, severity or RULES[rule][0], chart, file, path, message, hint, line)
