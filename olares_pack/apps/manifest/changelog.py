"""The changelog: one entry a version, its kinds of change, per-locale texts."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from olares_pack.apps.changelog import CHANGE_KINDS
from olares_pack.apps.manifest.base import Model_
from olares_pack.common import versions as appver
from olares_pack.common.fields import (
    Flag,
)

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
        appver.parse(v)
    except ValueError:
        raise ValueError(f"{v!r} is not a semantic version (expected e.g. 1.0.9)") from None
    return v


# ---------------------------------------------------------------- the app


