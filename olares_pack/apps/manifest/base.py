"""Models every part of the manifest shares: the strict base model, names, images, licences, texts."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    field_validator,
)

from olares_pack.common.fields import (
    Url,
)
from olares_pack.common.naming import MAX_LEGACY_TITLE

LOCALE_RE = re.compile(r"^[a-z]{2,3}(-[A-Z][A-Za-z]{1,3})?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
REPOSITORY_RE = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._/-][a-z0-9]+)*)+$|^[a-z0-9]+([._-][a-z0-9]+)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

FileSize = Annotated[StrictInt, Field(gt=0, le=1 << 45)]  # bytes: 32 TiB, above any model file

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


