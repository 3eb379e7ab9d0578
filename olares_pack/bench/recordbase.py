"""What the version records (records.py) and the experiment records (experiments.py) share: the
per-run figures, the method, the kinds of figures, the canonical dump and the git-history guard
of an append-only file."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from olares_pack.common import jsontext
from olares_pack.common.errors import InputError

FOLDER = "bench"


M = TypeVar("M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunFigures(_Model):
    tokens_per_s: float = Field(gt=0)
    tokens: int | None = Field(default=None, ge=0)
    prompt_tokens: int | None = Field(default=None, ge=0)
    prompt_tokens_per_s: float | None = Field(default=None, gt=0)
    ttft_ms: float | None = Field(default=None, ge=0)
    draft_n: int | None = Field(default=None, ge=0)
    draft_accepted: int | None = Field(default=None, ge=0)
    timings: dict[str, float] = {}  # what the server reported for the run (absent in older records)


class MethodRecord(_Model):
    runs: int | None = None
    warmups: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    prompt_name: str | None = None
    prompt_sha256: str | None = None
    ignore_eos: bool | None = None
    extra: dict[str, object] = {}
    description: str = ""  # a published method in words


Kind = Literal["measured", "transcribed", "synthetic"]


def _dump(model: BaseModel) -> dict[str, object]:
    return model.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def parse_model(model: type[M], text: str, where: str) -> M:
    """TEXT as MODEL (a record file), or an InputError naming WHERE, the field path and the problem."""
    try:
        doc = jsontext.loads(text)
    except jsontext.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{where}: {path}: {first['msg']} ({len(exc.errors())} problem(s))") from None


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def history_problems(path: Path, current: list[str], root: Path, digests: Callable[[str, str], list[str]]) -> list[str]:
    """Every committed version of an append-only file must be a prefix of its current records
    (`digests` reads a committed text's record digests)."""
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    log = _git(root, "log", "--format=%H", "--", rel)
    for commit in (log or "").split():
        old_text = _git(root, "show", f"{commit}:{rel}")
        if old_text is None:  # deleted in that commit
            continue
        try:
            old = digests(old_text, rel)
        except InputError:
            continue  # that commit's own check reported it
        if current[:len(old)] != old:
            return [f"changes records committed in {commit[:12]}: records are append-only (add a record instead)"]
    return []
