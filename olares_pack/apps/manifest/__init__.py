"""The app manifest (`apps/<name>/app.yaml`): its pydantic models (apps/load.py loads one), one
concern a module: base, model, servers, engine, resources, changelog, app."""

from __future__ import annotations

from olares_pack.apps.manifest.app import (  # noqa: F401
    ADAPTER,
    AcceptedDifference,
    App,
    AppManifest,
    AppManifestBase,
    AppTexts,
    ChartApp,
    ChartFiles,
    GenericApp,
    GenericEngine,
    ImportProof,
    LlamaCppApp,
    VllmApp,
    _engine_kind,
    discover,
)
from olares_pack.apps.manifest.base import (  # noqa: F401
    DIGEST_RE,
    ENV_NAME_RE,
    LOCALE_RE,
    REPOSITORY_RE,
    TAG_RE,
    FileSize,
    Image,
    License,
    LocaleTexts,
    Mode,
    Model_,
    Target,
)
from olares_pack.apps.manifest.changelog import (  # noqa: F401
    Change,
    ChangeKind,
    ChangelogEntry,
    LocaleChangelog,
    _check_semver,
    _unique,
)
from olares_pack.apps.manifest.engine import (  # noqa: F401
    CHOWN_IMAGE,
    LLM_INIT_IMAGE,
    PROXY_IMAGE,
    Engine,
)
from olares_pack.apps.manifest.model import (  # noqa: F401
    Capability,
    HFModel,
    ModelFile,
)
from olares_pack.apps.manifest.resources import (  # noqa: F401
    ByteRange,
    CpuRange,
    Entrance,
    GpuEnvelope,
    Probe,
    Probes,
    Resources,
    _Range,
)
from olares_pack.apps.manifest.servers import (  # noqa: F401
    UPSTREAM_CACHE_TYPES,
    CacheType,
    CacheTypes,
    LlamaServer,
    Speculative,
    VllmServer,
    _ExtraArgs,
    _on_off,
    fork_cache_types,
)
