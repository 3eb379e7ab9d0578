"""`market.yaml` beside apps/: how the source describes itself to Olares 1.12.7+ devices.

Olares 1.12.7's v2 sync asks a source for its taxonomy (`GET /api/v2/taxonomy`): who the source
is (id, label, display name, icon), its languages and its categories. The file is optional;
without it the source is `olares-pack`, in English, with one category per category its apps
carry. Only the v2 routes read it: the v1 answers stay byte for byte what they were.

    source:
      source_id: my-llm-market        # echoed when the device sends none
      short_label: LLM servers
      display_name: {en-US: GPU LLM servers, fr-FR: Serveurs LLM GPU}
      icon: https://market.example.org/icons/source.png
    categories:                       # order = sidebar order; apps' other categories follow
      - id: AI
        title: {en-US: AI, zh-CN: 人工智能}
        description: {en-US: Local LLM servers}
        icon: https://app.cdn.olares.com/icons/market/sidebar/neurology.svg
    languages:                        # default: en-US and every locale the apps' charts carry
      - {code: en-US, display_name: English}
    updated: 2026-12-01               # bump when you edit this file: devices refetch the taxonomy
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.common.errors import InputError, Problem

CONFIG_FILE = "market.yaml"
DEFAULT_SOURCE_ID = "olares-pack"
# Names the store shows for the locales Olares ships (beclab/apps i18n folders); others show their code.
LANGUAGE_NAMES = {"en-US": "English", "zh-CN": "简体中文", "zh-TW": "繁體中文", "ja-JP": "日本語", "ko-KR": "한국어",
                  "fr-FR": "Français", "de-DE": "Deutsch", "es-ES": "Español", "pt-BR": "Português", "ru-RU": "Русский"}


# What the server holds: plain dataclasses, so that `serve` without a market.yaml never imports
# pydantic (its memory and start-up time are budgeted: docs/developer/performance.md).
@dataclass(frozen=True)
class Source:
    source_id: str = DEFAULT_SOURCE_ID
    short_label: str = "LLM servers"
    display_name: dict[str, str] = field(default_factory=lambda: {"en-US": "GPU LLM servers"})
    icon: str = ""


@dataclass(frozen=True)
class Category:
    id: str
    title: dict[str, str] = field(default_factory=dict)
    description: dict[str, str] = field(default_factory=dict)
    icon: str = ""


@dataclass(frozen=True)
class Language:
    code: str
    display_name: str


@dataclass(frozen=True)
class Taxonomy:
    source: Source = field(default_factory=Source)
    categories: tuple[Category, ...] = ()
    languages: tuple[Language, ...] | None = None
    updated: dt.date | None = None


def _validate(data: dict[str, Any]) -> Any:
    """The file's data checked by pydantic models (extra fields refused), imported only here."""
    from pydantic import BaseModel, ConfigDict, Field

    locales = dict[str, str]

    class Model(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

    class SourceModel(Model):
        source_id: str = Field(DEFAULT_SOURCE_ID, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
        short_label: str = Field("LLM servers", min_length=1, max_length=64)
        display_name: locales = Field(default_factory=lambda: {"en-US": "GPU LLM servers"}, min_length=1)
        icon: str = ""

    class CategoryModel(Model):
        id: str = Field(min_length=1, max_length=64)
        title: locales = Field(default_factory=dict)
        description: locales = Field(default_factory=dict)
        icon: str = ""

    class LanguageModel(Model):
        code: str = Field(pattern=r"^[a-z]{2,3}(-[A-Z][A-Za-z]{1,3})?$")
        display_name: str = Field(min_length=1, max_length=64)

    class TaxonomyModel(Model):
        source: SourceModel = Field(default_factory=SourceModel)
        categories: list[CategoryModel] = Field(default_factory=list)
        languages: list[LanguageModel] | None = None
        updated: dt.date | None = Field(None, strict=False)  # 2026-12-01, quoted or not

    return TaxonomyModel.model_validate(data)


def load(root: Path) -> Taxonomy:
    """The taxonomy of the catalogue at root: market.yaml when there is one, else the defaults."""
    path = root / CONFIG_FILE
    if not path.exists():
        return Taxonomy()
    from pydantic import ValidationError

    from olares_pack.common.fields import text_problems
    from olares_pack.common.yamlsrc import load_yaml

    doc = load_yaml(path)
    data = {} if doc.data is None else doc.data
    if not isinstance(data, dict):
        raise InputError("", [Problem(str(path), 1, "", "expected a mapping (source, categories, languages, updated)")])
    if problems := text_problems(data):
        raise InputError("", [doc.problem(loc, msg) for loc, msg in problems])
    try:
        m = _validate(data)
    except ValidationError as exc:
        raise InputError("", [doc.problem(tuple(e["loc"]), "unknown field (see docs/concepts/market-source.md, \"The source's taxonomy\")"
                                          if e["type"] == "extra_forbidden" else e["msg"])
                              for e in exc.errors(include_url=False)]) from None
    seen: set[str] = set()
    for i, c in enumerate(m.categories):
        if c.id in seen:
            raise InputError("", [doc.problem(("categories", i, "id"), f"category {c.id!r} is listed twice")])
        seen.add(c.id)
    return Taxonomy(Source(**m.source.model_dump()), tuple(Category(**c.model_dump()) for c in m.categories),
                    None if m.languages is None else tuple(Language(**x.model_dump()) for x in m.languages), m.updated)
