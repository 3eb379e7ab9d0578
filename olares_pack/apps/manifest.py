"""The app manifest (`apps/<name>/app.yaml`): its pydantic models (apps/load.py loads one)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import semver
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from olares_pack.apps.changelog import CHANGE_KINDS
from olares_pack.apps.kept import KubeObject, OlaresKept, Workload
from olares_pack.common import quantity, shell
from olares_pack.common.fields import (
    MAX_BYTES,
    MAX_CORES,
    MAX_GPU_MIB,
    Count,
    Flag,
    Fraction,
    HfPath,
    HfRepo,
    HfRevision,
    Port,
    Seconds,
    Url,
)
from olares_pack.common.naming import ANY_LINE_NAME_RE, MAX_LEGACY_TITLE, MAX_TITLE, NAME_RE, RESERVED_NAMES
from olares_pack.olares import own_target

LOCALE_RE = re.compile(r"^[a-z]{2,3}(-[A-Z][A-Za-z]{1,3})?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
REPOSITORY_RE = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._/-][a-z0-9]+)*)+$|^[a-z0-9]+([._-][a-z0-9]+)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

FileSize = Annotated[StrictInt, Field(gt=0, le=1 << 45)]  # bytes: 32 TiB, above any model file

UPSTREAM_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
# upstream's types, or a fork's own (turbo3 …) that the fork registry lists, on an image not upstream's
# (engines/data/llamacpp-history.yaml `forks`); LlamaCppApp checks which.
CacheType = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,16}$")]
Target = Literal["current", "legacy"]
Mode = Literal["nvidia", "cpu"]


class Model_(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- texts


class License(Model_):
    text: str = Field(description="the license's name, e.g. Apache-2.0", min_length=1)
    url: Url | None = Field(None, description="where its text is")


class LocaleTexts(Model_):
    """Per-locale overrides of the app's texts (en-US comes from the top-level fields)."""

    title: str = Field(description="the title in this locale (1-30 characters; up to 100 for an app of 1.12.3-1.12.5 alone)",
                       min_length=1, max_length=MAX_LEGACY_TITLE)
    description: str = Field(description="one line for the store, in this locale", min_length=1)
    full_description: str | None = Field(None, description="markdown, in this locale; default: this locale's description")


# ---------------------------------------------------------------- engine and model


class Image(Model_):
    repository: str = Field(description="image repository with its registry, e.g. docker.io/org/llama-cpp")
    tag: str = Field(description="image tag, e.g. b11434")
    digest: str | None = Field(None, description="sha256: digest of what the tag names; an unpinned image is warned about everywhere (`olares-pack pin` fills it)")

    @field_validator("repository")
    @classmethod
    def _repository(cls, v: str) -> str:
        if not REPOSITORY_RE.match(v):
            raise ValueError(f"{v!r} is not an image repository (expected e.g. docker.io/org/name)")
        return v

    @field_validator("tag")
    @classmethod
    def _tag(cls, v: str) -> str:
        if not TAG_RE.match(v):
            raise ValueError(f"{v!r} is not an image tag")
        return v

    @field_validator("digest")
    @classmethod
    def _digest(cls, v: str | None) -> str | None:
        if v is not None and not DIGEST_RE.match(v):
            raise ValueError(f"{v!r} is not an image digest (expected sha256: and 64 hex digits)")
        return v

    @property
    def pinned(self) -> bool:
        return self.digest is not None

    @property
    def ref(self) -> str:
        base = f"{self.repository}:{self.tag}"
        return f"{base}@{self.digest}" if self.digest else base


class ModelFile(Model_):
    name: HfPath = Field(description="path of the file in the repository")
    size: FileSize | None = Field(default=None, description="bytes")
    sha256: str | None = Field(description="the file's sha256 (its LFS oid); with size, the engine starts only on these exact bytes", default=None, pattern=r"^[0-9a-f]{64}$")


Capability = Literal["tools", "thinking", "vision", "embedding"]


class HFModel(Model_):
    """Weights on Hugging Face. `file`/`size`/`sha256` is the one-file shorthand of `files`."""

    repo: HfRepo = Field(description="Hugging Face repository of the weights")
    revision: HfRevision = Field("main", description="branch, tag or commit; a branch is warned about (`olares-pack pin` replaces it by its commit)")
    # What the model can do, for the device's LLM gateway (shared apps: MODEL_SUPPORTS, expanded
    # to supports_* keys as the official llm-init.yaml of beclab/apps llamacppllmbasev3 does).
    # embedding makes it an embedding model (MODEL_MODE embedding).
    capabilities: list[Capability] = Field(description="what the model can do, for the device's LLM gateway: tools, thinking, vision, embedding (embedding makes it an embedding model)", default_factory=list)
    file: HfPath | None = Field(None, description="the one GGUF (or weights) file: the shorthand of files with one entry")
    size: FileSize | None = Field(default=None, description="bytes")
    sha256: str | None = Field(description="the file's sha256; with size, the engine starts only on these exact bytes (shared form: checked once per file before the engine starts)", default=None, pattern=r"^[0-9a-f]{64}$")
    files: list[ModelFile] = Field(description="several files, each with name, size and sha256 (a model split in parts); a vLLM model without file or files is fetched whole", default_factory=list)
    # Who fetches the weights. olares-pack: its download step (verified, resumable) into its model
    # store. engine: the engine itself (llama.cpp's --hf-repo/--hf-file, vLLM from the hub), no
    # step of olares-pack's. chart: the chart's own step, kept in `workload.init_containers`.
    # Optional rather than defaulted so that records published before it resolve the same.
    fetch: Literal["olares-pack", "engine", "chart"] | None = Field(
        None, description="who fetches the weights: absent or olares-pack (its download step), engine (the engine downloads them itself) or chart (the chart's own step, kept in workload.init_containers)")
    path: str | None = Field(None, description="fetch: chart: where the engine reads the weights (llama.cpp's --model file, vLLM's model folder)", pattern=r"^\S+$")

    @model_validator(mode="after")
    def _one_form(self) -> HFModel:
        if self.file is not None:
            if self.files:
                raise ValueError("give either file (with size, sha256) or files, not both")
            self.files = [ModelFile(name=self.file, size=self.size, sha256=self.sha256)]
        elif self.size is not None or self.sha256 is not None:
            raise ValueError("size and sha256 belong to file; with several files give them per file")
        if (self.path is not None) != (self.fetch == "chart"):
            raise ValueError("model.path is where the chart's own step puts the weights: give it with fetch: chart, and only then")
        return self

    _caps = field_validator("capabilities")(classmethod(lambda cls, v: _unique(v)))

    @property
    def mode(self) -> str:
        return "embedding" if "embedding" in self.capabilities else "chat"


# ---------------------------------------------------------------- server settings


def fork_cache_types() -> tuple[str, ...]:
    from olares_pack.engines import registry

    return tuple(sorted({v for f in registry.forks("llamacpp").values() for flag in ("--cache-type-k", "--cache-type-v")
                         for v in f.values.get(flag, ())}))


class CacheTypes(Model_):
    k: CacheType = Field("f16", description="KV cache type of K (--cache-type-k)")
    v: CacheType = Field("f16", description="KV cache type of V (--cache-type-v)")

    @field_validator("k", "v")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in UPSTREAM_CACHE_TYPES and v not in fork_cache_types():
            raise ValueError(f"{v!r} is not a KV cache type: llama.cpp's {', '.join(UPSTREAM_CACHE_TYPES)}, or a "
                             f"fork's {', '.join(fork_cache_types())} (the fork registry)")
        return v


class Speculative(Model_):
    type: str = Field(pattern=r"^[a-z0-9-]+(,[a-z0-9-]+)*$", description="--spec-type, e.g. draft-mtp")
    draft_n_max: Count | None = Field(None, description="--spec-draft-n-max")
    draft_n_min: Count | None = Field(None, description="--spec-draft-n-min")
    draft_p_min: Fraction | None = Field(None, description="--spec-draft-p-min")
    draft_cache_type: CacheTypes | None = Field(None, description="KV cache types of the draft context")

    @model_validator(mode="after")
    def _min_le_max(self) -> Speculative:
        if self.draft_n_min is not None and self.draft_n_max is not None and self.draft_n_min > self.draft_n_max:
            raise ValueError("draft_n_min must be <= draft_n_max")
        return self


def _on_off(v: Any) -> Any:
    # YAML 1.1 readers turn `on`/`off` into booleans; accept both spellings.
    if v is True:
        return "on"
    if v is False:
        return "off"
    return v


class _ExtraArgs(Model_):
    extra_args: list[str] = Field(default_factory=list, description="passed through verbatim, after the typed flags")

    @field_validator("extra_args", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        # `--threads 16` written as a YAML list gives an int; argv items are strings.
        if isinstance(v, list):
            return [str(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else a for a in v]
        return v


class LlamaServer(_ExtraArgs):
    """llama-server settings rendered to long-form flags (see engines/llamacpp.py)."""

    port: Port = Field(8000, description="--port: the port the engine listens on")
    host: str = Field("0.0.0.0", description="--host")
    alias: str | None = Field(None, description="--alias: the model name the API answers to")
    ctx_size: Annotated[Count, Field(description="--ctx-size; 0 = the model's trained context")]
    parallel: Annotated[StrictInt, Field(ge=1, le=1024, description="--parallel (slots)")] = 1
    gpu_layers: Annotated[StrictInt, Field(ge=0, le=100000)] | Literal["auto", "all"] = Field("all", description="--n-gpu-layers: a number, all or auto")
    flash_attn: Literal["on", "off", "auto"] = Field("on", description="--flash-attn: on, off or auto")
    cache_type: CacheTypes = Field(description="KV cache types (--cache-type-k, --cache-type-v)", default_factory=CacheTypes)
    batch_size: Annotated[Count, Field(ge=1)] | None = Field(None, description="--batch-size")
    ubatch_size: Annotated[Count, Field(ge=1)] | None = Field(None, description="--ubatch-size")
    threads: Annotated[StrictInt, Field(ge=-1, le=4096)] | None = Field(None, description="--threads")
    jinja: Flag | None = Field(None, description="--jinja (true) or --no-jinja (false); absent: the build's default")
    speculative: Speculative | None = Field(None, description="speculative decoding (--spec-type and its draft settings)")
    chat_template_kwargs: dict[str, Any] = Field(description="--chat-template-kwargs, rendered as JSON", default_factory=dict)
    # An imported chart that does not state a flag leaves it to the build's default: rendering it
    # would start another process. Its typed value is then olares-pack's reading of that default.
    unset: list[Literal["--host", "--port", "--parallel", "--ctx-size", "--n-gpu-layers", "--flash-attn", "--cache-type-k",
                        "--cache-type-v"]] | None = Field(
        None, description="flags left to the engine build's default and not rendered (an imported chart that does not state them); their typed values are olares-pack's reading of that default")

    _fa = field_validator("flash_attn", mode="before")(classmethod(lambda cls, v: _on_off(v)))


class VllmServer(_ExtraArgs):
    """vLLM `serve` settings rendered to long-form flags (see engines/vllm.py)."""

    port: Port = Field(8000, description="--port")
    host: str = Field("0.0.0.0", description="--host")
    alias: str | None = Field(default=None, description="--served-model-name")
    max_model_len: Annotated[Count, Field(ge=1)] | None = Field(None, description="--max-model-len: the context")
    gpu_memory_utilization: Annotated[Fraction, Field(gt=0)] | None = Field(None, description="--gpu-memory-utilization: the share of the visible GPU memory vLLM takes")
    max_num_seqs: Annotated[Count, Field(ge=1)] | None = Field(None, description="--max-num-seqs")
    max_num_batched_tokens: Annotated[Count, Field(ge=1)] | None = Field(None, description="--max-num-batched-tokens")
    dtype: str | None = Field(None, description="--dtype")
    quantization: str | None = Field(None, description="--quantization")
    kv_cache_dtype: str | None = Field(None, description="--kv-cache-dtype")
    speculative_config: dict[str, Any] | None = Field(None, description="--speculative-config, a mapping rendered as JSON")
    trust_remote_code: Flag = Field(False, description="--trust-remote-code")
    enable_prefix_caching: Flag | None = Field(None, description="--enable-prefix-caching (true) or --no-enable-prefix-caching (false)")
    enable_chunked_prefill: Flag | None = Field(None, description="--enable-chunked-prefill (true) or --no-enable-chunked-prefill (false)")
    enable_auto_tool_choice: Flag = Field(False, description="--enable-auto-tool-choice")
    reasoning_parser: str | None = Field(None, description="--reasoning-parser")
    tool_call_parser: str | None = Field(None, description="--tool-call-parser")


# The model-serving helper of the official catalogue's LLM apps (beclab/apps llamacppllmbasev3
# templates/llm-init.yaml, 1.2.33): the newest tag an official chart runs.
LLM_INIT_IMAGE = {"repository": "docker.io/beclab/llm-init", "tag": "v1.3.8"}
# The init container that hands the hostPath folders to llm-init's user (UID 1000), the
# official charts' image.
CHOWN_IMAGE = {"repository": "docker.io/beclab/aboveos-busybox", "tag": "1.37.0"}
# The v2 shared form's per-user proxy (legacy target), the official v2 client's image
# (beclab/apps llamacppgptoss120bggufv2/llamacppgptoss120bggufv2/templates/clientproxy.yaml).
PROXY_IMAGE = {"repository": "docker.io/beclab/aboveos-bitnami-openresty", "tag": "1.25.3-2"}


class Engine(Model_):
    kind: Literal["llamacpp", "vllm"] = Field(description="the serving engine: llamacpp or vllm")
    image: Image = Field(description="the engine image")
    build: str | None = Field(
        default=None, description="engine build whose flag registry applies, e.g. b11434 (llama.cpp)"
    )
    # One engine for every user of the device, behind llm-init (the official llmbase pattern);
    # false: today's per-user chart (one engine per user who installs it).
    shared: Flag = Field(True, description="true: one engine for every user of the device (the shared form); false: one engine per user who installs the app")
    # The program that starts the engine when the image's entrypoint is not it: `vllm-omni`, a
    # wrapper script that patches the engine before it starts (/entrypoint.sh), /app/llama-server.
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(None, description="per-user form: the container's command, the program that receives the engine's arguments (e.g. [vllm-omni], [/entrypoint.sh]); absent: the image's entrypoint")
    # A shell script that prepares the engine's start (a download, a migration) and then runs it:
    # kept as the chart writes it up to the program, the typed arguments rendered after it.
    script: str | None = Field(None, description="per-user form, with command [sh, -c]: the chart's shell script up to the program that starts the engine (`...\nexec /app/llama-server`); the render appends the typed arguments", min_length=1)
    llm_init: Image = Field(description="shared form, current target: the llm-init image (downloads the model, progress page, API proxy)", default_factory=lambda: Image(**LLM_INIT_IMAGE))
    chown_image: Image = Field(description="shared form, current target: the image of llm-init's init step that hands its folders to its user", default_factory=lambda: Image(**CHOWN_IMAGE))
    # The v2 shared form's per-user proxy (legacy target); null: PROXY_IMAGE unpinned. Optional
    # rather than defaulted so that records published before it resolve the same.
    proxy_image: Image | None = Field(None, description="legacy target's shared form: each user's proxy image; null: the official v2 client's docker.io/beclab/aboveos-bitnami-openresty:1.25.3-2, unpinned")

    @model_validator(mode="after")
    def _command_per_user(self) -> Engine:
        if self.command is not None and self.shared:
            raise ValueError("engine.command is for the per-user form (shared: false): the shared form's wrapper starts the engine")
        if self.script is not None:
            if not (self.command and len(self.command) == 2 and shell.is_shell([*self.command, self.script])):
                raise ValueError("engine.script runs in a shell: engine.command is [sh, -c] (or bash)")
            if shell.script_head(self.script, self.kind) != self.script:
                raise ValueError(f"engine.script must end with the program that starts {self.kind} (e.g. exec /app/llama-server)")
        return self

    @property
    def proxy(self) -> Image:
        return self.proxy_image or Image(**PROXY_IMAGE)

    def helper_images(self, targets: list[str] | tuple[str, ...]) -> dict[str, Image]:
        """The shared form's images beside the engine, by field: llm-init and its chown step
        (current target), the proxy client (legacy target)."""
        if not self.shared:
            return {}
        out = {}
        if "current" in targets:
            out |= {"llm_init": self.llm_init, "chown_image": self.chown_image}
        if "legacy" in targets:
            out["proxy_image"] = self.proxy
        return out


# ---------------------------------------------------------------- resources, entrance, probes


class _Range(Model_):
    request: str = Field(description="what the engine container requests")
    limit: str = Field(description="its limit (at least the request)")

    @model_validator(mode="after")
    def _order(self) -> _Range:
        if quantity.parse(self.request) > quantity.parse(self.limit):
            raise ValueError(f"request {self.request} is larger than limit {self.limit}")
        return self


class CpuRange(_Range):

    @field_validator("request", "limit", mode="before")
    @classmethod
    def _cpu(cls, v: Any) -> str:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise ValueError("expected a CPU quantity such as 4 or 4000m")
        try:
            cores = quantity.parse(v)
        except quantity.QuantityError as exc:
            raise ValueError(str(exc)) from None
        if not 0 < cores <= MAX_CORES:
            raise ValueError(f"{v!r}: a CPU quantity from 1m to {MAX_CORES} cores")
        return str(v)


class ByteRange(_Range):

    @field_validator("request", "limit", mode="before")
    @classmethod
    def _bytes(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError(f"{v!r} has no unit: write a quantity such as 24Gi or 512Mi")
        try:
            size = quantity.parse(v)
        except quantity.QuantityError as exc:
            raise ValueError(str(exc)) from None
        if v.endswith("m"):
            raise ValueError(f"{v!r} is in millibytes: write Mi or Gi")
        if not 0 < size <= MAX_BYTES:
            raise ValueError(f"{v!r}: a size from 1 byte to 1Pi")
        return v


class GpuEnvelope(Model_):
    """The GPU envelope as a chart declares it, request and limit apart (an imported chart's
    `requiredGpu: 1Gi`, `limitedGpu: 24Gi`: the app always schedules, the engine may use 24 GiB)."""

    request: str = Field(description="requiredGpu as written: memory (1Gi) or a count of GPUs (1)", min_length=1)
    limit: str | None = Field(None, description="limitedGpu as written; absent: none declared")
    container: Literal["gpumem", "whole", "none"] = Field(
        "gpumem", description="what the engine container asks: gpumem (HAMi memory, gpu_memory_mib), whole (nvidia.com/gpu: 1), none")

    @field_validator("request", "limit")
    @classmethod
    def _quantity(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                quantity.parse(v)
            except quantity.QuantityError as exc:
                raise ValueError(str(exc)) from None
        return v


class Resources(Model_):
    """The engine container's requests/limits, which are also the manifest envelope."""

    cpu: CpuRange = Field(description="cores or millicores (4, 4000m)")
    memory: ByteRange = Field(description="bytes with a unit (20Gi)")
    disk: ByteRange = Field(description="bytes with a unit (25Gi)")
    gpu_memory_mib: Annotated[StrictInt, Field(gt=0, le=MAX_GPU_MIB)] | Literal["auto"] | None = Field(
        default=None, description="nvidia.com/gpumem, whole MiB; auto: derived from the GPU memory estimate")
    gpu: GpuEnvelope | None = Field(None, description="the GPU envelope as declared, request and limit apart (imported charts); absent: gpu_memory_mib is both")


class Entrance(Model_):
    name: str | None = Field(description="entrance name; default: the app's name", default=None, pattern=r"^[a-z0-9A-Z-]{1,63}$")
    title: str = Field(description="the entrance's title (1-30 characters)", min_length=1, max_length=30)
    auth_level: Literal["", "public", "private", "internal"] = Field("internal", description="who may open it")
    open_method: Literal["", "default", "iframe", "window"] = Field("window", description="how the desktop opens it")
    icon: Url | None = Field(None, description="the entrance's icon")


class Probe(Model_):
    initial_delay_seconds: Seconds = Field(0, description="initialDelaySeconds")
    period_seconds: Annotated[Seconds, Field(ge=1)] = Field(10, description="periodSeconds")
    timeout_seconds: Annotated[Seconds, Field(ge=1)] = Field(5, description="timeoutSeconds")
    failure_threshold: Annotated[StrictInt, Field(ge=1, le=100000)] = Field(3, description="failureThreshold")


class Probes(Model_):
    path: str = Field(description="the HTTP path probed on the server port (per-user form; the shared engine has no probes)", default="/health", pattern=r"^/[A-Za-z0-9/._-]*$")
    startup: Probe = Field(
        description="the startup probe",
        default_factory=lambda: Probe(initial_delay_seconds=30, period_seconds=15, failure_threshold=240))
    liveness: Probe = Field(description="the liveness probe", default_factory=lambda: Probe(period_seconds=30, failure_threshold=5))
    readiness: Probe = Field(description="the readiness probe", default_factory=lambda: Probe(period_seconds=10, failure_threshold=3))


# ---------------------------------------------------------------- changelog

ChangeKind = Literal[CHANGE_KINDS]  # type: ignore[valid-type]


class Change(Model_):
    kind: ChangeKind = Field(description="model, image, engine-args, resources, packaging, fix, docs or feature")
    text: str = Field(description="what changed", min_length=1)


class LocaleChangelog(Model_):
    summary: str = Field(description="the summary in this locale", min_length=1)
    notes: str = Field("", description="markdown notes in this locale")


class ChangelogEntry(Model_):
    version: str = Field(description="the version this entry is for")
    date: dt.date = Field(description="the release date (release --date, default today)")
    summary: str = Field(description="one line: what changed", min_length=1)
    changes: list[Change] = Field(description="what changed, by kind", default_factory=list)
    notes: str = Field("", description="markdown notes")
    # A version that was tried but never published: never packaged, listed or served. Its entry
    # reaches the market's version history only when in_history says so.
    shipped: Flag = Field(True, description="false: a version tried but never shipped (never packaged, listed or served)")
    in_history: Flag = Field(False, description="an unshipped version appears in the market's version history (marked never shipped)")
    locales: dict[str, LocaleChangelog] = Field(description="per-locale summary and notes", default_factory=dict)

    @field_validator("version")
    @classmethod
    def _semver(cls, v: str) -> str:
        return _check_semver(v)

    @field_validator("summary")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v.strip():
            raise ValueError("summary is one line; put details in notes")
        return v.strip()

    @model_validator(mode="after")
    def _history_of_unshipped(self) -> ChangelogEntry:
        if self.in_history and self.shipped:
            raise ValueError("in_history lists an unshipped version (shipped: false); a shipped one is always listed")
        return self


def _unique(v: list[str]) -> list[str]:
    if len(set(v)) != len(v):
        raise ValueError("entries must be unique")
    return v


def _check_semver(v: Any) -> str:
    v = str(v)
    try:
        semver.Version.parse(v)
    except ValueError:
        raise ValueError(f"{v!r} is not a semantic version (expected e.g. 1.0.9)") from None
    return v


# ---------------------------------------------------------------- the app


class AppTexts(Model_):
    """What every app has, whatever runs it: its name, version, texts, targets and changelog."""

    name: str = Field(description="the app's name, also its folder's: ^[a-z0-9]{1,30}$ (up to 63 for an app of "
                      "1.12.3-1.12.5 alone), no hyphens, not reserved")
    version: str = Field(description="semver; Chart.yaml version == metadata.version (release sets it)")
    version_name: str | None = Field(default=None, description="upstream/display version; default: image tag")
    title: str = Field(description="the store's title (1-30 characters; up to 100 for an app of 1.12.3-1.12.5 alone)",
                       min_length=1, max_length=MAX_LEGACY_TITLE)
    description: str = Field(description="one line for the store", min_length=1)
    full_description: str | None = Field(None, description="markdown; default: description")
    icon: Url = Field(description="http(s) URL of a PNG/WEBP, 256x256")
    categories: list[str] = Field(description="market categories", default_factory=lambda: ["AI"], min_length=1)
    developer: str = Field(description="who made what the app runs", min_length=1)
    submitter: str | None = Field(None, description="who submitted the app")
    website: Url | None = Field(None, description="the project's website")
    source_code: Url | None = Field(None, description="where its source is")
    doc: Url | None = Field(None, description="its documentation")
    license: list[License] = Field(description="licenses, each {text, url}", default_factory=list)
    owners: list[str] = Field(description="the chart's owners; default: the developer", default_factory=list)
    locales: dict[str, LocaleTexts] = Field(description="per-locale texts (en-US is the top-level text)", default_factory=dict)
    targets: list[Target] = Field(description="which Olares targets `build` renders: current, legacy", default_factory=lambda: ["current"], min_length=1, validate_default=True)
    changelog: list[ChangelogEntry] = Field(description="one entry per version; the current one becomes spec.upgradeDescription", default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        # the 30-character bound is the 1.12.6+ line's, checked with the targets (_line_limits)
        if not ANY_LINE_NAME_RE.match(v):
            raise ValueError(f"{v!r} is not an Olares app name (expected ^[a-z0-9]{{1,30}}$: lowercase letters and digits, no hyphens)")
        if v in RESERVED_NAMES:
            raise ValueError(f"{v!r} is reserved by Olares")
        return v

    _version = field_validator("version", mode="before")(classmethod(lambda cls, v: _check_semver(v)))

    @field_validator("locales")
    @classmethod
    def _locales(cls, v: dict[str, LocaleTexts]) -> dict[str, LocaleTexts]:
        for key in v:
            if not LOCALE_RE.match(key):
                raise ValueError(f"{key!r} is not a locale (expected e.g. zh-CN)")
            if key == "en-US":
                raise ValueError("en-US texts are the top-level title/description/full_description")
        return dict(sorted(v.items()))

    _targets = field_validator("targets")(classmethod(lambda cls, v: _unique(v)))

    @field_validator("targets")
    @classmethod
    def _line_limits(cls, v: list[str], info: ValidationInfo) -> list[str]:
        """Names and titles as the installer of each line takes them: over 30 characters only for
        an app that installs on 1.12.3-1.12.5 alone (common/naming.py)."""
        if "current" not in v:
            return v
        name, title = info.data.get("name"), info.data.get("title")
        why = "the 1.12.6+ installer's checker takes at most 30 (framework/oac); 1.12.3-1.12.5 take it"
        if isinstance(name, str) and not NAME_RE.match(name):
            raise ValueError(f"name {name!r} is not an Olares app name for the current target (^[a-z0-9]{{1,30}}$): "
                             f"{len(name)} characters and targets holds current: {why}; a new app name for the "
                             "current target (olares-pack import --upgrade --rename)")
        if isinstance(title, str) and len(title) > MAX_TITLE:
            raise ValueError(f"title {title!r} is {len(title)} characters and targets holds current: {why}; "
                             "a shorter title for the current target")
        for loc, texts in (info.data.get("locales") or {}).items():
            if len(texts.title) > MAX_TITLE:
                raise ValueError(f"locales.{loc}.title is {len(texts.title)} characters and targets holds current: "
                                 f"{why}")
        return v

    @property
    def all_locales(self) -> list[str]:
        return ["en-US", *self.locales]

    @property
    def chart_owners(self) -> list[str]:
        return self.owners or [self.developer]

    @property
    def changelog_entry(self) -> ChangelogEntry | None:
        return next((e for e in self.changelog if e.version == self.version), None)

    @model_validator(mode="after")
    def _changelog_once(self) -> AppTexts:
        versions = [e.version for e in self.changelog]
        if len(set(versions)) != len(versions):
            raise ValueError("changelog has a version twice")
        return self


class AcceptedDifference(Model_):
    kind: str = Field(description="the kind of difference (olares_pack.equivalence.KINDS), e.g. manifest.form")
    where: str = Field(description="where it is: the workload and container, or the manifest field")


class ImportProof(Model_):
    """How an imported chart became this typed app: the version of the chart its render was
    compared with, and the differences a maintainer accepted (`import --structured --accept`)."""

    original: str = Field(description="the imported chart's version the typed render was compared with")
    accepted: list[AcceptedDifference] = Field(description="differences from it taken on purpose", default_factory=list)


class AppManifestBase(AppTexts):
    modes: list[Mode] = Field(description="compute modes (spec.accelerator): nvidia; llama.cpp apps may add cpu", default_factory=lambda: ["nvidia"], min_length=1)
    model: HFModel = Field(description="the weights on Hugging Face")
    resources: Resources = Field(description="the engine container's requests and limits, which are also the manifest envelope")
    entrance: Entrance = Field(description="the app's entrance")
    env: dict[str, str] = Field(description="extra engine environment (OLARES_* names are reserved)", default_factory=dict)
    probes: Probes = Field(description="the engine's probes (per-user form)", default_factory=Probes)
    # A Deployment's selector is immutable: an app that replaces a chart installed under the same
    # release name must select its pods as that chart did, or every user's upgrade is refused.
    selector: dict[Annotated[str, Field(min_length=1, max_length=317)], Annotated[str, Field(max_length=63)]] | None = Field(
        None, description="per-user form: the engine Deployment's pod selector (matchLabels), kept from an imported chart so that its users' upgrade is accepted; absent: app.kubernetes.io/name: <name>")
    imported: ImportProof | None = Field(None, description="set by `import --structured`: the chart version the typed render was proven equivalent to, and the differences accepted")
    # What an imported chart says beyond the engine (apps/kept.py): the typed render writes these
    # as the chart did, so that it makes the same app; absent, olares-pack writes its own.
    olares: OlaresKept | None = Field(None, description="OlaresManifest fields as an imported chart states them (apiVersion, entrances, permission, options, envs, locale)")
    workload: Workload | None = Field(None, description="per-user form: the engine Deployment as an imported chart writes it beyond the engine's image, command and arguments (env, mounts, probes, resources, the chart's fetch step, sidecars, volumes)")
    objects: list[KubeObject] | None = Field(None, description="per-user form with workload: the chart's other objects as written (Services, ConfigMaps, …), in place of olares-pack's Service and ConfigMap")

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not ENV_NAME_RE.match(key):
                raise ValueError(f"{key!r} is not an environment variable name")
            if key.startswith("OLARES_"):
                raise ValueError(f"{key!r}: OLARES_* names are the system's; choose another name")
        return v

    _modes = field_validator("modes")(classmethod(lambda cls, v: _unique(v)))

    @model_validator(mode="after")
    def _kept_per_user(self) -> AppManifestBase:
        if self.workload is None:
            if self.objects:
                raise ValueError("objects are the other objects of a kept workload: give workload too")
            if self.model.fetch == "chart":
                raise ValueError("model.fetch: chart needs workload (its init_containers hold the chart's step)")
            return self
        if self.engine.shared:  # type: ignore[attr-defined]
            raise ValueError("workload is for the per-user form (engine.shared: false)")
        if self.env:
            raise ValueError("with workload, the engine's environment is workload.engine.env (env is empty)")
        if "cpu" in self.modes:
            raise ValueError("workload is kept as the chart renders it for the GPU: modes is [nvidia]")
        return self

    @model_validator(mode="after")
    def _selector_per_user(self) -> AppManifestBase:
        if self.selector is not None:
            if self.engine.shared:  # type: ignore[attr-defined]
                raise ValueError("selector is for the per-user form (engine.shared: false): the shared form keeps the installed selector itself")
            if self.selector.get("app.kubernetes.io/name", self.name) != self.name:
                raise ValueError(f"selector: app.kubernetes.io/name is the app's name ({self.name}), the label its Service selects")
        return self

    @model_validator(mode="after")
    def _cross(self) -> AppManifestBase:
        if "nvidia" in self.modes and self.resources.gpu_memory_mib is None:
            raise ValueError("resources.gpu_memory_mib is required when modes include nvidia")
        return self

    # ---- derived values every renderer needs

    @property
    def display_version(self) -> str:
        return self.version_name or self.engine.image.tag  # type: ignore[attr-defined]

    @property
    def entrance_name(self) -> str:
        return self.entrance.name or self.name

    @property
    def service_name(self) -> str:
        # Entrance hosts must start with a letter; app names may start with a digit.
        return self.name if self.name[0].isalpha() else f"app{self.name}"

    def warnings(self) -> list[str]:
        """Things that are allowed but that a maintainer must see."""
        out = []
        image = self.engine.image  # type: ignore[attr-defined]
        if not image.pinned:
            out.append(
                f"{self.name}: image {image.repository}:{image.tag} is not pinned by digest "
                "(add engine.image.digest: sha256:...)"
            )
        for key, helper in self.engine.helper_images(self.targets).items():  # type: ignore[attr-defined]
            if not helper.pinned:
                out.append(f"{self.name}: image {helper.repository}:{helper.tag} is not pinned by digest "
                           f"(add engine.{key}.digest: sha256:...)")
        if self.engine.shared and "current" in self.targets:  # type: ignore[attr-defined]
            unchecked = [f.name for f in self.model.files if not f.sha256] or ([] if self.model.files else [self.model.repo])
            if unchecked:
                out.append(f"{self.name}: the model {', '.join(unchecked)} has no recorded sha256: the engine's "
                           "wrapper can only check it against the sha256 Hugging Face's cache names it by "
                           "(`olares-pack pin APP --model`, or model.size and model.sha256, or model.files with them)")
        if self.model.revision == "main" or not re.fullmatch(r"[0-9a-f]{40}", self.model.revision):
            out.append(f"{self.name}: model revision {self.model.revision!r} is a branch, not a commit")
        return out


class LlamaCppApp(AppManifestBase):
    engine: Engine = Field(description="the engine: image, build, shared or per-user form")
    server: LlamaServer = Field(description="llama-server settings")

    @model_validator(mode="after")
    def _fork_cache_types(self) -> LlamaCppApp:
        from fnmatch import fnmatch

        from olares_pack.engines import registry

        ref = f"{self.engine.image.repository}:{self.engine.image.tag}"
        caches = [("--cache-type-k", self.server.cache_type.k), ("--cache-type-v", self.server.cache_type.v)]
        if self.server.speculative and self.server.speculative.draft_cache_type:
            d = self.server.speculative.draft_cache_type
            caches += [("--cache-type-k", d.k), ("--cache-type-v", d.v)]
        # as lint reads them: a fork's own values are accepted on an image that is not upstream's
        repo = self.engine.image.repository
        upstream = any(fnmatch(repo, pat) or fnmatch(ref, pat) for pat in registry.upstream_images("llamacpp"))
        for flag, value in caches:
            if value not in UPSTREAM_CACHE_TYPES and upstream:
                raise ValueError(f"{flag} {value!r}: a fork's KV cache type, and {ref} is upstream llama.cpp's image "
                                 f"(which takes {', '.join(UPSTREAM_CACHE_TYPES)})")
        return self

    @model_validator(mode="after")
    def _needs_file(self) -> LlamaCppApp:
        if not self.model.files:
            raise ValueError("model.file (or files) is required for llama.cpp: name the GGUF file")
        if not self.model.files[0].name.endswith(".gguf"):
            raise ValueError(f"model file {self.model.files[0].name!r} is not a .gguf file")
        return self


class VllmApp(AppManifestBase):
    engine: Engine = Field(description="the engine: image, build, shared or per-user form")
    server: VllmServer = Field(description="vLLM serve settings")

    @model_validator(mode="after")
    def _gpu_only(self) -> VllmApp:
        if "cpu" in self.modes:
            raise ValueError("cpu mode is for llama.cpp apps: vLLM needs a GPU image")
        return self


class ChartFiles(Model_):
    """A chart olares-pack does not model (imported from a hand-written catalogue): its files
    kept as they were, and its OlaresManifest.yaml less what the app's own fields say (metadata
    texts, version, spec texts, which render() writes back)."""

    manifest_version: str = Field(description="the olaresManifest.version the chart was written for: its target")
    manifest: dict[str, Any] = Field(description="its OlaresManifest.yaml less what the app's own fields say", default_factory=dict)
    # A 0.10.0 manifest with Helm template syntax is not YAML until rendered: kept as its text
    # (then the app's texts are read from it, and editing them means editing this text).
    manifest_text: str | None = Field(None, description="a 0.10.0 manifest with template syntax, kept as its text")
    chart_yaml: dict[str, Any] = Field(description="Chart.yaml fields other than name, version, appVersion, description and icon", default_factory=dict)
    files: dict[str, str] = Field(description="the chart's other files by path (templates/..., values.yaml, .helmignore)", min_length=1)

    @field_validator("files")
    @classmethod
    def _files(cls, v: dict[str, str]) -> dict[str, str]:
        for path in v:
            parts = path.split("/")
            if path.startswith("/") or ".." in parts or "" in parts or path in ("Chart.yaml", "OlaresManifest.yaml") \
                    or path.startswith("i18n/"):
                raise ValueError(f"{path!r}: chart files are relative paths other than Chart.yaml, OlaresManifest.yaml and i18n/")
        if not any(p.startswith("templates/") for p in v):
            raise ValueError("a chart needs templates/")
        return dict(sorted(v.items()))


class ChartApp(AppTexts):
    """An app whose chart is kept as written (olares-pack import): any engine, any containers."""

    chart: ChartFiles = Field(description="the chart kept as written")

    @model_validator(mode="after")
    def _own_target(self) -> ChartApp:
        own = own_target(self.chart.manifest_version)
        if self.targets != [own]:
            raise ValueError(f"a chart written for manifest {self.chart.manifest_version} renders for targets: [{own}] "
                             "(olares-pack import --upgrade converts a legacy chart to the current target)")
        return self

    @property
    def display_version(self) -> str:
        return self.version_name or self.version

    def images(self) -> list[str]:
        """Image references written literally in the chart's templates and values."""
        found = set()
        for text in self.chart.files.values():
            found |= set(re.findall(r"""(?m)^\s*-?\s*image:\s*["']?([^"'\s{}]+)["']?\s*$""", text))
        return sorted(found)

    def warnings(self) -> list[str]:
        return [f"{self.name}: image {ref} is not pinned by digest" for ref in self.images() if "@sha256:" not in ref]


class GenericEngine(Model_):
    """A GPU server olares-pack does not model (a music, speech or embedding server, another LLM
    server): its image, command and arguments, rendered as written."""

    kind: Literal["generic"] = Field(description="generic: a server olares-pack does not model")
    image: Image = Field(description="the server's image")
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(None, description="the container's command; absent: the image's entrypoint")
    args: list[str] = Field(default_factory=list, description="its arguments, as written")

    # what the typed engines have and a generic server has not (the renderers read them)
    build: Literal[None] = Field(None, description="none: no engine build's flag registry applies")
    shared: Literal[False] = Field(False, description="false: a generic server is per-user (one per user who installs it)")

    def helper_images(self, targets: list[str] | tuple[str, ...]) -> dict[str, Image]:
        return {}


class GenericApp(AppTexts):
    """An imported GPU server that runs neither llama.cpp nor vLLM, typed: its server's image,
    command and arguments, its model when known, the GPU envelope, and what its chart says beyond
    them kept as typed fields (workload, objects, olares). Per-user form only."""

    engine: GenericEngine = Field(description="the server: image, command, arguments")
    model: HFModel | None = Field(None, description="the weights it serves, when the chart names them on Hugging Face (informational)")
    modes: list[Literal["nvidia"]] = Field(description="compute modes: nvidia", default_factory=lambda: ["nvidia"], min_length=1)
    resources: Resources = Field(description="the manifest envelope (the containers' own requests and limits are in workload)")
    workload: Workload = Field(description="the server's Deployment as the chart writes it beyond the server's image, command and arguments")
    objects: list[KubeObject] | None = Field(None, description="the chart's other objects as written")
    olares: OlaresKept = Field(description="OlaresManifest fields as the chart states them; entrances required")
    selector: dict[Annotated[str, Field(min_length=1, max_length=317)], Annotated[str, Field(max_length=63)]] | None = Field(
        None, description="the Deployment's pod selector (matchLabels), kept from the imported chart")
    imported: ImportProof | None = Field(None, description="set by `import --structured`: the chart version the typed render was proven equivalent to, and the differences accepted")

    @model_validator(mode="after")
    def _entrances(self) -> GenericApp:
        if not self.olares.entrances:
            raise ValueError("olares.entrances: a generic server names its entrances as its chart does")
        if self.resources.gpu_memory_mib is None:
            raise ValueError("resources.gpu_memory_mib is required: a generic server is a GPU server")
        return self

    @property
    def env(self) -> dict[str, str]:
        return {}

    @property
    def display_version(self) -> str:
        return self.version_name or self.engine.image.tag

    @property
    def service_name(self) -> str:
        return self.name if self.name[0].isalpha() else f"app{self.name}"

    def warnings(self) -> list[str]:
        image = self.engine.image
        return [] if image.pinned else [f"{self.name}: image {image.repository}:{image.tag} is not pinned by digest "
                                        "(add engine.image.digest: sha256:...)"]


def _engine_kind(data: Any) -> str | None:
    if isinstance(data, dict):
        if "chart" in data and "engine" not in data:
            return "chart"
        engine = data.get("engine")
        return engine.get("kind") if isinstance(engine, dict) else None
    if isinstance(data, ChartApp):
        return "chart"
    engine = getattr(data, "engine", None)
    return getattr(engine, "kind", None)


AppManifest = Annotated[
    Union[Annotated[LlamaCppApp, Tag("llamacpp")], Annotated[VllmApp, Tag("vllm")], Annotated[GenericApp, Tag("generic")],
          Annotated[ChartApp, Tag("chart")]],
    Discriminator(
        _engine_kind,
        custom_error_type="engine_kind",
        custom_error_message="engine.kind must be one of 'llamacpp', 'vllm', 'generic' (or the app holds an imported chart:)",
    ),
]
App = LlamaCppApp | VllmApp | GenericApp | ChartApp
ADAPTER: TypeAdapter[App] = TypeAdapter(AppManifest)



def discover(apps_dir: Path) -> list[Path]:
    """App folders under `apps_dir`, sorted by name (never directory order)."""
    from olares_pack.catalogue.repo import Repo

    return Repo.at(apps_dir.parent, apps_dir).app_dirs()
