"""The whole app: its texts and each kind of app (llama.cpp, vLLM, a generic GPU server, a chart kept as written)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from olares_pack.apps.kept import KubeObject, OlaresKept, Workload
from olares_pack.apps.manifest.base import ENV_NAME_RE, LOCALE_RE, Image, License, LocaleTexts, Mode, Model_, Target
from olares_pack.apps.manifest.changelog import ChangelogEntry, _check_semver, _unique
from olares_pack.apps.manifest.engine import Engine
from olares_pack.apps.manifest.model import HFModel
from olares_pack.apps.manifest.resources import Entrance, Probes, Resources
from olares_pack.apps.manifest.servers import UPSTREAM_CACHE_TYPES, LlamaServer, VllmServer
from olares_pack.common.fields import (
    Url,
)
from olares_pack.common.naming import ANY_LINE_NAME_RE, MAX_LEGACY_TITLE, MAX_TITLE, NAME_RE, RESERVED_NAMES
from olares_pack.olares import own_target


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
        if (why := _envelope_disagrees(self.olares, self.resources)) is not None:
            raise ValueError(why)
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


def _envelope_disagrees(olares: OlaresKept | None, resources: Resources) -> str | None:
    """Where an envelope kept in the chart's own form says other than `resources` (an edit of one
    and not the other): the render writes the kept form, so both must say the same."""
    from olares_pack.common import quantity

    env = olares.envelope if olares is not None else None
    if env is None:
        return None
    if env.form == "flat":
        entry: dict[str, Any] = dict(env.flat or {})
    else:
        modes = [m.model_dump(exclude_none=True) for m in env.modes or []]
        entry = next((m for m in modes if m.get("mode") != "cpu"), modes[0] if modes else {})
    pairs = (("requiredCpu", resources.cpu.request), ("limitedCpu", resources.cpu.limit),
             ("requiredMemory", resources.memory.request), ("limitedMemory", resources.memory.limit),
             ("requiredDisk", resources.disk.request), ("limitedDisk", resources.disk.limit))
    for key, value in pairs:
        if key in entry:
            try:
                if quantity.parse(str(entry[key])) != quantity.parse(str(value)):
                    return f"olares.envelope {key}: {entry[key]!r} and resources say {value!r}: edit both"
            except quantity.QuantityError:
                return f"olares.envelope {key}: {entry[key]!r} is not a quantity"
    return None


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
        if (why := _envelope_disagrees(self.olares, self.resources)) is not None:
            raise ValueError(why)
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
