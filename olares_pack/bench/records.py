"""Bench records: apps/<name>/bench/<version>.json, one file per version, append-only.

Every record says what its figures are (`kind`, see Record.provenance_kind):
- measured: by `olares-pack bench` on the app's model (tool version, dates, device, the engine's
  build string and model file as the server reported them);
- synthetic: measured the same way on a made-up model of the same shape (which one): never the
  app's speed;
- transcribed: copied from a published document (its address in `source`, the words in `quote`),
  holding only the fields that document states.
A record that corrects an earlier one names its digest in `supersedes`; the earlier one stays in
the file (the chain) but is no longer shown.

Measurements accumulate about a version; nothing edits one. Two guards, both checked by
`build --check` (check()):

- a hash chain: each record's `prev` is the SHA-256 of the canonical JSON of the record before it
  ("" for the first), so an edited or removed record breaks the chain in any copy of the file;
- git history: every committed version of the file must be a prefix of the current one, so even a
  rewritten chain is caught where the history is at hand.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from olares_pack.bench.recordbase import (
    FOLDER,
    Kind,
    MethodRecord,
    RunFigures,
    _dump,
    _git,
    _Model,
    history_problems,
    parse_model,
)
from olares_pack.bench.stats import Summary, summarize
from olares_pack.common import jsontext
from olares_pack.common.errors import InputError
from olares_pack.common.fsio import write_text_atomic

SCHEMA = 1


class Published(_Model):
    """Figures published without their runs: a single figure, or a mean with perhaps a range."""

    tokens_per_s: float = Field(gt=0)
    runs: int | None = Field(default=None, ge=1)  # how many runs the document says the figure is a mean of
    qualifier: str = ""  # what the document says the figure is when not a measurement (e.g. "extrapolated")
    tokens_per_s_min: float | None = None
    tokens_per_s_max: float | None = None
    acceptance: float | None = Field(default=None, ge=0, le=1)
    acceptance_min: float | None = Field(default=None, ge=0, le=1)
    acceptance_max: float | None = Field(default=None, ge=0, le=1)


class Soak(_Model):
    outcome: Literal["passed", "failed", "oom"]
    ctx_size: int | None = None
    filled_to: int | None = None  # prompt tokens of the largest step that completed
    peak_gpu_mib: float | None = None
    estimate_mib: float | None = None  # `vram`'s estimate for the version, beside the peak
    message: str = ""


class RunStability(_Model):
    """The pattern of the runs in the order they ran (stability.py), written with the record."""

    pattern: str
    text: str
    cv_pct: float | None = None
    drift_pct: float | None = None
    states: str = ""
    period: int | None = None


def run_stability(runs: list[RunFigures]) -> RunStability | None:
    from olares_pack.bench.stability import analyse

    if not runs:
        return None
    s = analyse([r.tokens_per_s for r in runs])
    return RunStability(pattern=s.pattern, text=s.text(), cv_pct=s.cv_pct, drift_pct=s.drift_pct, states=s.states,
                        period=s.period)


BENCH_SOURCE = "olares-pack bench"


class Record(_Model):
    date: dt.date
    source: str  # "olares-pack bench" for a measurement, else the address of the document it came from
    # None in records written before kinds were recorded: provenance_kind() derives it
    kind: Kind | None = None
    tool: str | None = None  # measured/synthetic: the olares-pack that measured ("olares-pack X.Y.Z")
    model_file: str | None = None  # measured/synthetic: the model file the server reported (/props model_path)
    started: dt.datetime | None = None  # measured/synthetic: the first measured request, UTC
    ended: dt.datetime | None = None
    quote: str = ""  # transcribed: the document's own words the figures come from
    stated_stability: str = ""  # transcribed: the stability the document states, in its words
    supersedes: str = ""  # the digest of an earlier record of this file that this one corrects
    correction: str = ""  # why it corrects it
    device: str
    # set when the model served was synthetic (same shape, made-up weights): never the app's speed
    synthetic_model: str | None = None
    engine: str | None = None  # llama-server | vllm | openai
    engine_build: str | None = None
    method: MethodRecord
    runs: list[RunFigures] = []
    published: Published | None = None
    soak: Soak | None = None
    peak_gpu_mib: float | None = None  # NVML's peak over the runs (--gpu)
    stability: RunStability | None = None  # the runs' pattern when recorded (absent in older records)
    note: str = ""
    attachments: list[str] = []  # raw outputs committed beside the file (paths relative to it)
    # `bench --from-json`: the SHA-256 of the file the figures were imported from. Its runs agree
    # with the server timings it carries, but the file was not written by this run of the tool, so
    # the figures are labelled imported, never "measured by olares-pack bench" without a word
    imported_sha256: str = Field(default="", pattern=r"^([0-9a-f]{64})?$")
    prev: str = ""

    def provenance_kind(self) -> Kind:
        if self.kind is not None:
            return self.kind
        if self.synthetic_model:
            return "synthetic"
        return "measured" if self.source == BENCH_SOURCE else "transcribed"

    @model_validator(mode="after")
    def _kind_fits(self) -> Record:
        kind = self.provenance_kind()
        if kind == "transcribed" and (self.source == BENCH_SOURCE or (self.kind is not None and not self.quote)):
            raise ValueError("a transcribed record names its document in `source` and quotes its words in `quote`")
        if kind == "synthetic" and not self.synthetic_model:
            raise ValueError("a synthetic record says which model in `synthetic_model`")
        if kind == "measured" and self.synthetic_model:
            raise ValueError("a record of a synthetic model is kind `synthetic`")
        if kind != "transcribed" and self.stated_stability:
            raise ValueError("`stated_stability` is a document's words: transcribed records only")
        return self

    def summary(self) -> Summary | None:
        if self.runs:
            return summarize([r.tokens_per_s for r in self.runs], [r.draft_n for r in self.runs],
                             [r.draft_accepted for r in self.runs], [r.prompt_tokens_per_s for r in self.runs],
                             [r.ttft_ms for r in self.runs])
        if self.published:
            p = self.published
            return Summary(p.runs or 0, p.tokens_per_s, p.tokens_per_s_min, p.tokens_per_s_max, None, p.acceptance,
                           p.acceptance_min, p.acceptance_max, stated=True, qualifier=p.qualifier)
        return None


class BenchFile(_Model):
    schema_: int = Field(SCHEMA, alias="schema")
    app: str
    version: str
    records: list[Record]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def current(bf: BenchFile) -> list[Record]:
    """The records shown: those no later record supersedes, in file order."""
    gone = {r.supersedes for r in bf.records if r.supersedes}
    return [r for r in bf.records if digest(r) not in gone]


def digest(rec: Record) -> str:
    return hashlib.sha256(jsontext.dumps(_dump(rec)).encode("utf-8")).hexdigest()


def path_of(app_dir: Path, version: str) -> Path:
    return app_dir / FOLDER / f"{version}.json"


def versions(app_dir: Path) -> list[str]:
    """Versions with records, oldest first (semantic order)."""
    from olares_pack.common import versions as appver

    folder = app_dir / FOLDER
    found = [p.stem for p in folder.glob("*.json")] if folder.is_dir() else []
    return sorted(found, key=appver.parse)


def parse(text: str, where: str) -> BenchFile:
    return parse_model(BenchFile, text, where)


def read(app_dir: Path, version: str) -> BenchFile | None:
    path = path_of(app_dir, version)
    return parse(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else None


def text_of(bf: BenchFile) -> str:
    return jsontext.dumps(_dump(bf) | {"schema": bf.schema_, "records": [_dump(r) for r in bf.records]})


def append(app_dir: Path, app: str, version: str, rec: Record) -> Path:
    """Add rec at the end of the version's file, chained to the record before it."""
    current = read(app_dir, version)
    records = list(current.records) if current else []
    rec = rec.model_copy(update={"prev": digest(records[-1]) if records else ""})
    path = path_of(app_dir, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text_of(BenchFile(app=app, version=version, records=[*records, rec])))
    return path


# ---------------------------------------------------------------- build --check


def check_file(path: Path, app: str, git_root: Path | None) -> list[str]:
    """Problems of one record file: schema, name and version, chain, canonical text, git history."""
    text = path.read_text(encoding="utf-8")
    try:
        bf = parse(text, str(path))
    except InputError as exc:
        return [str(exc).split(": ", 1)[1]]
    problems = []
    if bf.app != app or bf.version != path.stem:
        problems.append(f"holds {bf.app} {bf.version}, expected {app} {path.stem} (its folder and name)")
    if not bf.records:
        problems.append("holds no record")
    for i, rec in enumerate(bf.records):
        want = digest(bf.records[i - 1]) if i else ""
        if rec.prev != want:
            problems.append(f"records.{i}.prev: {rec.prev or '(empty)'} is not the digest of the record before "
                            f"({want or 'empty for the first'}): a record was edited or removed; records are append-only")
        if not rec.runs and rec.published is None and rec.soak is None and not rec.stated_stability:
            problems.append(f"records.{i}: neither runs, published figures, a soak nor a stated stability")
        if rec.stability is not None and rec.stability != run_stability(list(rec.runs)):
            problems.append(f"records.{i}.stability: not what its runs give ({run_stability(list(rec.runs))})")
        if rec.supersedes and rec.supersedes not in {digest(r) for r in bf.records[:i]}:
            problems.append(f"records.{i}.supersedes: {rec.supersedes} is the digest of no earlier record of this file")
        for att in rec.attachments:
            if not (path.parent / att).is_file():
                problems.append(f"records.{i}.attachments: {att} is missing beside the file")
    if text != text_of(bf):
        problems.append("is not in canonical form (write records with `olares-pack bench --record`)")
    if git_root is not None:
        problems += _history_problems(path, bf, git_root)
    return problems


def _history_problems(path: Path, bf: BenchFile, root: Path) -> list[str]:
    """Every committed version of the file must be a prefix of the current records."""
    return history_problems(path, [digest(r) for r in bf.records], root, lambda t, w: [digest(r) for r in parse(t, w).records])


def check(apps_dir: Path) -> list[tuple[Path, str]]:
    """(file, problem) of every app's bench records and experiments."""
    from olares_pack.bench import experiments

    root = _git(apps_dir, "rev-parse", "--show-toplevel")
    git_root = Path(root.strip()) if root else None
    out = []
    for app_dir in sorted(p for p in apps_dir.iterdir() if (p / FOLDER).is_dir()) if apps_dir.is_dir() else []:
        for path in sorted((app_dir / FOLDER).glob("*.json")):
            out += [(path, p) for p in check_file(path, app_dir.name, git_root)]
        for path in sorted((app_dir / FOLDER / experiments.SUBFOLDER).glob("*.json")):
            problems = experiments.check_file(path, app_dir.name)
            if git_root is not None and not problems:
                ef = experiments.parse(path.read_text(encoding="utf-8"), str(path))
                problems = history_problems(path, [experiments.digest(r) for r in ef.records], git_root,
                                            lambda t, w: [experiments.digest(r) for r in experiments.parse(t, w).records])
            out += [(path, p) for p in problems]
    return out
