"""Experiment records: apps/<name>/bench/experiments/<experiment>.json, append-only like the
version records (records.py): each record is chained to the one before by `prev`, and every
committed version of the file must be a prefix of the current one (`build --check`).

A record is one sweep (`bench --launch --sweep --record`): the version whose configuration it
starts from, how it measured (the method, the rounds), and per configuration the arguments and
environment it changed, its runs in the order they ran, or why it failed."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path

from pydantic import ConfigDict, Field

from olares_pack.bench.recordbase import FOLDER, Kind, MethodRecord, RunFigures, _dump, _Model, parse_model
from olares_pack.common import jsontext
from olares_pack.common.errors import InputError
from olares_pack.common.fsio import write_text_atomic

SCHEMA = 1
SUBFOLDER = "experiments"
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class Configuration(_Model):
    label: str
    baseline: bool = False  # the version's own configuration
    args: dict[str, str] = {}  # flag -> value, as run (changed from the version's)
    env: dict[str, str] = {}
    runs: list[RunFigures] = []  # in the order they ran, over the rounds
    rounds: list[int] = []  # the round of each run
    failed: str = ""  # why the configuration has no runs (the engine's last log lines)
    peak_gpu_mib: float | None = None


class ExperimentRecord(_Model):
    date: dt.date
    kind: Kind
    tool: str
    version: str  # the app version whose configuration the sweep starts from
    device: str
    synthetic_model: str | None = None
    engine: str | None = None
    engine_build: str | None = None
    model_file: str | None = None
    started: dt.datetime | None = None
    ended: dt.datetime | None = None
    design: str  # grid | one-at-a-time
    rounds: int = Field(ge=1)
    method: MethodRecord
    configurations: list[Configuration]
    note: str = ""
    attachments: list[str] = []
    prev: str = ""


class ExperimentFile(_Model):
    schema_: int = Field(SCHEMA, alias="schema")
    app: str
    name: str
    records: list[ExperimentRecord]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise InputError(f"experiment name {name!r}: expected lower-case letters, digits, '.', '_' or '-' "
                         "(up to 64, starting with a letter or digit)")
    return name


def folder(app_dir: Path) -> Path:
    return app_dir / FOLDER / SUBFOLDER


def path_of(app_dir: Path, name: str) -> Path:
    return folder(app_dir) / f"{name}.json"


def names(app_dir: Path) -> list[str]:
    d = folder(app_dir)
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def digest(rec: ExperimentRecord) -> str:
    return hashlib.sha256(jsontext.dumps(_dump(rec)).encode("utf-8")).hexdigest()


def text_of(ef: ExperimentFile) -> str:
    return jsontext.dumps(_dump(ef) | {"schema": ef.schema_, "records": [_dump(r) for r in ef.records]})


def parse(text: str, where: str) -> ExperimentFile:
    return parse_model(ExperimentFile, text, where)


def read(app_dir: Path, name: str) -> ExperimentFile | None:
    path = path_of(app_dir, name)
    return parse(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else None


def append(app_dir: Path, app: str, name: str, rec: ExperimentRecord) -> Path:
    current = read(app_dir, name)
    recs = list(current.records) if current else []
    rec = rec.model_copy(update={"prev": digest(recs[-1]) if recs else ""})
    path = path_of(app_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text_of(ExperimentFile(app=app, name=name, records=[*recs, rec])))
    return path


def check_file(path: Path, app: str) -> list[str]:
    """Problems of one experiment file: schema, name, chain, canonical text, attachments."""
    text = path.read_text(encoding="utf-8")
    try:
        ef = parse(text, str(path))
    except InputError as exc:
        return [str(exc).split(": ", 1)[1]]
    problems = []
    if ef.app != app or ef.name != path.stem:
        problems.append(f"holds {ef.app} {ef.name}, expected {app} {path.stem} (its folder and name)")
    for i, rec in enumerate(ef.records):
        want = digest(ef.records[i - 1]) if i else ""
        if rec.prev != want:
            problems.append(f"records.{i}.prev: {rec.prev or '(empty)'} is not the digest of the record before "
                            f"({want or 'empty for the first'}): records are append-only")
        if rec.kind == "synthetic" and not rec.synthetic_model:
            problems.append(f"records.{i}: a synthetic record says which model in `synthetic_model`")
        if rec.kind == "transcribed":
            problems.append(f"records.{i}.kind: an experiment is measured or synthetic")
        if sum(c.baseline for c in rec.configurations) != 1:
            problems.append(f"records.{i}.configurations: expected exactly one baseline (the version's own)")
        for att in rec.attachments:
            if not (path.parent / att).is_file():
                problems.append(f"records.{i}.attachments: {att} is missing beside the file")
    if text != text_of(ef):
        problems.append("is not in canonical form (write experiments with `olares-pack bench --sweep --record`)")
    return problems
