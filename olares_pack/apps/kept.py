"""What an imported chart says beyond the engine, kept as typed fields so that the typed render
makes the same app (`import --structured`): the OlaresManifest fields as the original states them
(`olares:`), the engine Deployment's pod as written (`workload:`: the engine container's env,
mounts, probes and resources, the chart's own fetch step, sidecars, volumes) and the chart's other
objects (`objects:`: Services, ConfigMaps, …).

The shapes mirror Kubernetes' (field names as the API spells them) with extra keys forbidden: a
chart using a field these models do not know stays a chart as written, with that field named,
never typed on a guess. String values may hold the installer's values as Helm expressions
(HELM_VALUE): the render emits them, so that each user's install gets its own paths and names."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

# The installer's values a kept string may name; any other `{{` in a kept value is text.
HELM_VALUE = re.compile(
    r"\{\{ (?:\.Release\.Namespace|\.Values\.(?:bfl\.username|user\.zone|admin|"
    r"userspace\.(?:appData|appCache|userData|appCommon)|olaresEnv\.[A-Za-z_][A-Za-z0-9_]*)"
    r'(?: \| default "[^"\\{}]*")?) \}\}')


class _K8s(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EnvVar(_K8s):
    name: str = Field(description="the variable's name", min_length=1)
    value: str | None = Field(None, description="its value (may name the installer's values as Helm expressions)")
    valueFrom: dict[str, Any] | None = Field(None, description="where the value comes from (secretKeyRef, configMapKeyRef, fieldRef)")

    @field_validator("value", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


class VolumeMount(_K8s):
    name: str = Field(description="the volume mounted")
    mountPath: str = Field(description="where in the container")
    subPath: str | None = Field(None, description="a path inside the volume")
    subPathExpr: str | None = Field(None, description="subPath with $(VAR) expansion")
    readOnly: StrictBool | None = Field(None, description="mounted read-only")
    mountPropagation: str | None = Field(None, description="mount propagation")


class ContainerPort(_K8s):
    containerPort: StrictInt = Field(description="the port the container listens on")
    name: str | None = Field(None, description="its name (probes and Services may name it)")
    protocol: str | None = Field(None, description="TCP or UDP")
    hostPort: StrictInt | None = Field(None, description="a port of the node")
    hostIP: str | None = Field(None, description="the node address of hostPort")


class _ContainerFrame(_K8s):
    name: str = Field(description="the container's name", min_length=1)
    imagePullPolicy: str | None = Field(None, description="when the image is pulled")
    workingDir: str | None = Field(None, description="its working directory")
    env: list[EnvVar] = Field(default_factory=list, description="its environment, in order")
    envFrom: list[dict[str, Any]] = Field(default_factory=list, description="ConfigMaps and Secrets read as environment")
    ports: list[ContainerPort] = Field(default_factory=list, description="its ports")
    volumeMounts: list[VolumeMount] = Field(default_factory=list, description="its mounts")
    resources: dict[str, Any] | None = Field(None, description="requests and limits as written")
    startupProbe: dict[str, Any] | None = Field(None, description="the startup probe as written")
    livenessProbe: dict[str, Any] | None = Field(None, description="the liveness probe as written")
    readinessProbe: dict[str, Any] | None = Field(None, description="the readiness probe as written")
    securityContext: dict[str, Any] | None = Field(None, description="its security context")
    lifecycle: dict[str, Any] | None = Field(None, description="its lifecycle hooks")
    stdin: StrictBool | None = Field(None, description="keeps stdin open")
    tty: StrictBool | None = Field(None, description="allocates a TTY")
    terminationMessagePath: str | None = Field(None, description="where its termination message is written")
    terminationMessagePolicy: str | None = Field(None, description="how its termination message is read")


class Container(_ContainerFrame):
    """A container other than the engine's (the chart's own fetch step, a sidecar), as written."""

    image: str = Field(description="its image", min_length=1)
    command: list[str] | None = Field(None, description="its command")
    args: list[str] | None = Field(None, description="its arguments")
    restartPolicy: str | None = Field(None, description="Always: a native sidecar (an init container that keeps running)")

    @field_validator("command", "args", mode="before")
    @classmethod
    def _words(cls, v: Any) -> Any:
        return [str(w) if isinstance(w, (int, float)) and not isinstance(w, bool) else w for w in v] if isinstance(v, list) else v


class EngineContainer(_ContainerFrame):
    """The engine container beyond its image, command and arguments (which the typed engine and
    server settings render): its env, mounts, ports, probes and resources as the chart writes them."""


class Volume(_K8s):
    name: str = Field(description="the volume's name")
    hostPath: dict[str, Any] | None = Field(None, description="a folder of the node (path, type)")
    configMap: dict[str, Any] | None = Field(None, description="a ConfigMap's keys as files")
    secret: dict[str, Any] | None = Field(None, description="a Secret's keys as files")
    emptyDir: dict[str, Any] | None = Field(None, description="scratch space for the pod's life")
    persistentVolumeClaim: dict[str, Any] | None = Field(None, description="a claim")
    projected: dict[str, Any] | None = Field(None, description="several sources in one folder")
    downwardAPI: dict[str, Any] | None = Field(None, description="the pod's own fields as files")


# Pod spec fields a kept workload may set besides its containers and volumes.
PodField = Literal["nodeSelector", "tolerations", "affinity", "securityContext", "runtimeClassName", "hostIPC",
                   "hostNetwork", "hostPID", "dnsPolicy", "dnsConfig", "serviceAccountName", "serviceAccount",
                   "automountServiceAccountToken", "terminationGracePeriodSeconds", "priorityClassName",
                   "schedulerName", "imagePullSecrets", "restartPolicy", "shareProcessNamespace", "hostname",
                   "subdomain", "enableServiceLinks", "nodeName"]


class Workload(_K8s):
    """The engine Deployment as the imported chart writes it, less what the typed engine renders
    (the engine container's image, command and arguments) and its selector (`selector`)."""

    name: str | None = Field(None, description="the Deployment's name; absent: the app's", pattern=r"^[a-z0-9][-a-z0-9.]*$", max_length=253)
    labels: dict[str, str] = Field(default_factory=dict, description="the Deployment's labels")
    annotations: dict[str, str] = Field(default_factory=dict, description="the Deployment's annotations")
    replicas: StrictInt | None = Field(None, description="its replicas as written; absent: .Values.workloads.<app>.replicaCount (1; the installer's stop and resume set it)")
    strategy: dict[str, Any] | None = Field(None, description="its update strategy")
    revisionHistoryLimit: StrictInt | None = Field(None, description="how many old ReplicaSets are kept")
    pod_labels: dict[str, str] = Field(default_factory=dict, description="the pod's labels")
    pod_annotations: dict[str, str] = Field(default_factory=dict, description="the pod's annotations")
    pod: dict[PodField, Any] = Field(default_factory=dict, description="the pod's other fields (nodeSelector, securityContext, …)")
    volumes: list[Volume] = Field(default_factory=list, description="the pod's volumes")
    init_containers: list[Container] = Field(default_factory=list, description="its init containers, as written (the chart's own fetch step)")
    sidecars: list[Container] = Field(default_factory=list, description="its other containers, as written")
    engine_index: StrictInt = Field(0, ge=0, description="the engine container's position among the pod's containers")
    engine: EngineContainer = Field(description="the engine container beyond its image, command and arguments")


class KubeObject(_K8s):
    """One of the chart's other objects (a Service, a ConfigMap, …), as written."""

    apiVersion: str = Field(description="its API version")
    kind: str = Field(description="its kind")
    metadata: dict[str, Any] = Field(description="its metadata (name, labels, …)")
    spec: dict[str, Any] | None = Field(None, description="its spec")
    data: dict[str, str | None] | None = Field(None, description="a ConfigMap's or Secret's data")
    stringData: dict[str, str] | None = Field(None, description="a Secret's data as text")
    type: str | None = Field(None, description="a Secret's type")
    immutable: StrictBool | None = Field(None, description="a ConfigMap or Secret that cannot change")


class EntranceKept(_K8s):
    name: str = Field(description="the entrance's name")
    host: str = Field(description="the Service it opens")
    port: StrictInt = Field(description="the Service port")
    title: str | None = Field(None, description="its title")
    icon: str | None = Field(None, description="its icon")
    authLevel: str | None = Field(None, description="who may open it")
    openMethod: str | None = Field(None, description="how the desktop opens it")
    invisible: StrictBool | None = Field(None, description="hidden from the desktop")
    windowPushState: StrictBool | None = Field(None, description="the window follows the page's history")
    skip: StrictBool | None = Field(None, description="not checked by the installer")


class EnvSetting(_K8s):
    """One entry of OlaresManifest `envs` (what the install dialog shows), as written."""

    envName: str = Field(description="the variable's name")
    required: StrictBool | None = Field(None, description="the install dialog requires a value")
    type: str | None = Field(None, description="its type (string, int, bool, url, …)")
    editable: StrictBool | None = Field(None, description="the user may change it after install")
    applyOnChange: StrictBool | None = Field(None, description="a change is applied to the running app")
    default: Any = Field(None, description="its default value")
    value: Any = Field(None, description="a fixed value")
    description: str | None = Field(None, description="what it is, for the dialog")
    regex: str | None = Field(None, description="a pattern the value must match")
    options: list[Any] | None = Field(None, description="the values offered ({title, value})")
    remoteOptions: str | None = Field(None, description="a URL the offered values are read from")
    valueFrom: dict[str, Any] | None = Field(None, description="a system env it takes its value from (envName)")
    multiSelect: StrictBool | None = Field(None, description="several options may be chosen")
    splitter: str | None = Field(None, description="what separates several chosen values")
    title: str | None = Field(None, description="its title in the dialog")
    allowUnset: StrictBool | None = Field(None, description="the value may stay unset")


OptionKey = Literal["apiTimeout", "allowMultipleInstall", "dependencies", "conflicts", "policies", "appScope",
                    "analytics", "resetCookie", "mobileSupported", "websocket", "upgradePolicy", "allowedOutboundPorts",
                    "shared", "LLMGatewaySupported", "oidc", "clusterScoped"]
PermissionKey = Literal["appData", "appCache", "userData", "appCommon", "sysData", "provider"]


Scalar = str | int | float  # a value as the chart writes it: `requiredCpu: 4` and `"4"` are kept apart

EnvelopeKey = Literal["requiredCpu", "limitedCpu", "requiredMemory", "limitedMemory", "requiredDisk", "limitedDisk",
                      "requiredGpu", "limitedGpu", "requiredGPU", "limitedGPU", "requiredGPUMemory", "limitedGPUMemory"]


class ModeEnvelope(_K8s):
    """One mode's entry of a per-mode envelope (spec.accelerator or spec.resources), as written."""

    mode: str = Field(description="the compute mode (nvidia, cpu, …)")
    requiredCpu: Scalar | None = Field(None, description="as written")
    limitedCpu: Scalar | None = Field(None, description="as written")
    requiredMemory: Scalar | None = Field(None, description="as written")
    limitedMemory: Scalar | None = Field(None, description="as written")
    requiredDisk: Scalar | None = Field(None, description="as written")
    limitedDisk: Scalar | None = Field(None, description="as written")
    requiredGPU: Scalar | None = Field(None, description="as written: a count of GPUs")
    limitedGPU: Scalar | None = Field(None, description="as written")
    requiredGpu: Scalar | None = Field(None, description="as written")
    limitedGpu: Scalar | None = Field(None, description="as written")
    requiredGPUMemory: Scalar | None = Field(None, description="as written: GPU memory")
    limitedGPUMemory: Scalar | None = Field(None, description="as written")


class EnvelopeKept(_K8s):
    """The manifest's envelope in the form the chart writes it: flat (`spec.requiredCpu` …
    `spec.requiredGpu: 1`, a GPU count stays a count) or per mode (`spec.accelerator` /
    `spec.resources` entries). The typed render writes this form instead of its own; `resources`
    stays the engine's (the two must agree: `_agrees`)."""

    form: Literal["flat", "accelerator", "resources"] = Field(description="flat fields, or per-mode entries under that key")
    flat: dict[EnvelopeKey, Scalar] | None = Field(None, description="form flat: the spec's envelope fields as written")
    modes: list[ModeEnvelope] | None = Field(None, description="per-mode forms: each mode's entry as written")

    @field_validator("modes")
    @classmethod
    def _some_modes(cls, v: list[ModeEnvelope] | None) -> list[ModeEnvelope] | None:
        if v is not None and not v:
            raise ValueError("a per-mode envelope has at least one mode")
        return v


class OlaresKept(_K8s):
    """OlaresManifest.yaml fields as the imported chart states them, where the typed render would
    otherwise write its own: each one absent keeps olares-pack's."""

    apiVersion: Literal["v1", "v2", "v3"] | None = Field(None, description="the chart's apiVersion (v2 per-user charts of 1.12.3-1.12.5)")
    entrances: list[EntranceKept] | None = Field(None, description="the entrances as written (ports of a sidecar proxy, several entrances)")
    permission: dict[PermissionKey, Any] | None = Field(None, description="permission as written (appData, appCache, userData, …)")
    options: dict[OptionKey, Any] | None = Field(None, description="options as written (dependencies, apiTimeout, policies, …)")
    envs: list[EnvSetting] | None = Field(None, description="envs as written (what the install dialog shows and the chart reads)")
    locale: list[str] | None = Field(None, description="spec.locale as written; [] when the chart lists none")
    undeclared: list[Literal["limitedCpu", "limitedMemory", "limitedDisk"]] | None = Field(
        None, description="envelope limits the chart does not declare (not written; the installer then applies none)")
    envelope: EnvelopeKept | None = Field(None, description="the envelope in the chart's own form (flat or per mode), as written")
    appid: StrictBool | None = Field(None, description="false: the chart writes no metadata.appid (the render then writes none)")
    metadata: dict[str, Any] | None = Field(None, description="metadata keys the app's fields do not model, as written (bento: the catalogue's card, …)")
    spec: dict[str, Any] | None = Field(None, description="spec keys the app's fields do not model, as written (envs, featuredImage, …)")
    spec_absent: list[str] | None = Field(None, description="spec keys the render writes and the chart does not (supportArch, …): not written")
    top: dict[str, Any] | None = Field(None, description="top-level OlaresManifest keys the app's fields do not model, as written")
    chart_yaml: dict[str, Any] | None = Field(None, description="Chart.yaml as the chart writes it, less name and version (appVersion, description, home, sources, maintainers, …)")

    @field_validator("entrances")
    @classmethod
    def _some(cls, v: list[EntranceKept] | None) -> list[EntranceKept] | None:
        if v is not None and not v:
            raise ValueError("an app has at least one entrance")
        return v


def k8s(model: BaseModel) -> dict[str, Any]:
    """A kept object as the Kubernetes API reads it (fields not set are left out)."""
    return model.model_dump(mode="json", exclude_defaults=True)
