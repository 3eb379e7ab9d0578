"""Engine flag registries: which flags a pinned engine build accepts, their aliases, env vars,
defaults and allowed values, plus the history that explains renames, removals and default
changes.

Two sources, both from llama.cpp itself: engines/data/llamacpp-flags.json, generated from
common/arg.cpp of many builds (engines/argcpp.py; per flag definition the builds that have it),
and, for builds whose `llama-server --help` is bundled (engines/data/llama-server-help-<build>.txt),
that help with its defaults and descriptions. The history overlay (renames, removals, default
changes with their dates) is engines/data/llamacpp-history.yaml.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from olares_pack.common.errors import InputError
from olares_pack.common.yamlsrc import safe_load


def _data_text(name: str) -> str:
    """A file of the package's data/ folder. importlib.resources.files() of a package on disk is
    this same path; reading it directly spares importing its readers (zipfile and more, some
    2 ms of every lint run that meets an engine)."""
    return (Path(__file__).parent / "data" / name).read_text()


@dataclass
class FlagSpec:
    canonical: str  # the first long name, e.g. --ctx-size
    names: list[str]  # every spelling that sets it, negations excluded
    negations: list[str] = field(default_factory=list)  # --no-jinja, -nkvo ...
    value: str | None = None  # value placeholder; None for a switch
    optional_value: bool = False  # `-fa [on|off|auto]`
    choices: list[str] | None = None
    default: str | None = None
    env: str | None = None
    removed: bool = False
    replacement: str | None = None  # for removed flags: what to use instead
    description: str = ""

    @property
    def takes_value(self) -> bool:
        return self.value is not None


@dataclass
class Registry:
    engine: str
    build: str
    flags: list[FlagSpec]
    by_name: dict[str, FlagSpec] = field(default_factory=dict)
    by_env: dict[str, FlagSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for spec in self.flags:
            for name in spec.names + spec.negations:
                self.by_name.setdefault(name, spec)
            if spec.env:
                self.by_env[spec.env] = spec

    def lookup(self, name: str) -> FlagSpec | None:
        return self.by_name.get(name)


_FLAG_LINE = re.compile(r"^(-{1,2}[A-Za-z0-9][^\s,]*)")
_COLUMN = 40  # llama.cpp's help puts descriptions at column 40


def _split_names(spec_text: str) -> tuple[list[str], str | None]:
    """'-c,    --ctx-size N' -> (['-c', '--ctx-size'], 'N')."""
    names: list[str] = []
    value: str | None = None
    for token in spec_text.split(","):
        token = token.strip()
        if not token:
            continue
        if token.startswith("-") and not token.startswith("-<"):
            name, _, rest = token.partition(" ")
            names.append(name)
            value = rest.strip() or None
        elif value is not None:  # a comma inside the value placeholder: 'none,draft-simple,...'
            value += "," + token
    return names, value


def parse_llama_help(text: str) -> list[FlagSpec]:
    """Flags of one `llama-server --help` output."""
    specs: list[FlagSpec] = []
    current: FlagSpec | None = None
    desc: list[str] = []

    def finish() -> None:
        if current is None:
            return
        current.description = " ".join(d.strip() for d in desc if d.strip())
        _annotate(current)
        specs.append(current)

    for line in text.splitlines():
        if line.startswith("-----") or not line.strip():
            if line.startswith("-----"):
                finish()
                current, desc = None, []
            continue
        if _FLAG_LINE.match(line):
            finish()
            head, tail = (line[:_COLUMN], line[_COLUMN:]) if len(line) > _COLUMN and line[_COLUMN - 1] == " " else (line, "")
            names, value = _split_names(head.rstrip())
            current = _make_spec(names, value)
            desc = [tail]
        elif current is not None:
            desc.append(line)
    finish()
    return specs


def _make_spec(names: list[str], value: str | None) -> FlagSpec:
    positive, negative = names, []
    first_no = next((i for i, n in enumerate(names) if n.startswith("--no-")), None)
    if first_no is not None and any(n.startswith("--") and not n.startswith("--no-") for n in names[:first_no]):
        last_long = max(i for i, n in enumerate(names[:first_no]) if n.startswith("--"))
        positive, negative = names[: last_long + 1], names[last_long + 1 :]
    canonical = next((n for n in positive if n.startswith("--")), positive[0])
    spec = FlagSpec(canonical=canonical, names=positive, negations=negative, value=value)
    if value and value.startswith("[") and value.endswith("]"):
        spec.optional_value = True
        spec.choices = [c for c in value.strip("[]").split("|") if c]
    elif value and value.startswith("{") and value.endswith("}"):
        spec.choices = [c for c in value.strip("{}").split(",") if c]
    elif value and re.fullmatch(r"[a-z0-9-]+(,[a-z0-9-]+)+", value):
        spec.choices = value.split(",")
    return spec


def _annotate(spec: FlagSpec) -> None:
    d = spec.description
    if m := re.search(r"\(env: ([A-Z0-9_]+)\)", d):
        spec.env = m.group(1)
    if m := re.search(r"\(default: ([^)]*)\)", d):
        # '-1, -1 = auto' and '0, 0 = loaded from model': the value is before the explanation.
        spec.default = m.group(1).split(", ")[0].strip().strip("'\"")
    if m := re.search(r"allowed values: ([a-z0-9_, ]+)", d):
        spec.choices = [c.strip() for c in m.group(1).split(",") if c.strip()]
    if "argument has been removed" in d:
        spec.removed = True
        if m := re.search(r"use (?:the respective )?(--[a-z0-9-]+)", d):
            spec.replacement = m.group(1)


# ---------------------------------------------------------------- history overlay


@dataclass(frozen=True)
class HistoryEvent:
    """One upstream change that explains a difference between two configurations."""

    kind: str  # rename-value | rename-flag | default | removed
    flag: str
    date: str
    text: str
    old: str | None = None
    new: str | None = None
    ref: str | None = None


@lru_cache(maxsize=None)
def history(engine: str = "llamacpp") -> tuple[HistoryEvent, ...]:
    return tuple(HistoryEvent(**e) for e in _history_doc(engine)["events"])


@lru_cache(maxsize=None)
def builds(engine: str = "llamacpp") -> dict[str, dict[str, str]]:
    return {str(k): {kk: str(vv) for kk, vv in v.items()} for k, v in (_history_doc(engine).get("builds") or {}).items()}


@lru_cache(maxsize=None)
def load(engine: str = "llamacpp", build: str | None = None) -> Registry:
    """The registry of `build` (default: the newest known build of `engine`)."""
    known = builds(engine)
    if build is None:
        build = max((b for b in known if "help" in known[b]), key=lambda b: known[b]["date"])
    info = known.get(build)
    if info is None:
        raise InputError(f"no flag registry for {engine} build {build!r} (known: {', '.join(sorted(known))})")
    if "help" in info:
        text = _data_text(info["help"])
        return Registry(engine, build, parse_llama_help(text))
    # A build without its own --help: the newest registry, rolled back through the history to
    # the build's date (values renamed after it are the old spelling, flags removed after it exist).
    base = load(engine, None)
    return _rollback(base, build, info["date"])


_TAG_BUILD = re.compile(r"(?:^|[-_.])(b[0-9]{3,6})(?:$|[-_.])")


def image_parts(image: str, *, as_written: bool = False) -> tuple[str, str]:
    """(repository, tag) of an image reference ('' when it has no tag); the repository without
    docker.io/ unless as_written."""
    ref = image.split("@")[0]
    repo, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    return (repo if as_written else repo.removeprefix("docker.io/")), tag


def tag_build(tag: str) -> str | None:
    """The llama.cpp build a tag names: server-cuda-b9101, server-cuda13-b11434, b9101."""
    m = _TAG_BUILD.search(tag)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Fork:
    name: str
    images: tuple[str, ...]
    values: dict[str, tuple[str, ...]]
    flags: tuple[str, ...]
    source: str


@lru_cache(maxsize=None)
def _history_doc(engine: str) -> dict[str, Any]:
    return cast(dict[str, Any], safe_load(_data_text(f"{engine}-history.yaml")))


def forks(engine: str = "llamacpp") -> dict[str, Fork]:
    return {name: Fork(name, tuple(f.get("images") or ()), {k: tuple(v) for k, v in (f.get("values") or {}).items()},
                       tuple(f.get("flags") or ()), str(f.get("source", "")))
            for name, f in (_history_doc(engine).get("forks") or {}).items()}


def upstream_images(engine: str = "llamacpp") -> tuple[str, ...]:
    return tuple(_history_doc(engine).get("upstream_images") or ())


@lru_cache(maxsize=None)
def flag_table(engine: str = "llamacpp") -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(_data_text(f"{engine}-flags.json")))


def table_builds(engine: str = "llamacpp") -> list[str]:
    """Builds of the generated table, oldest first."""
    return sorted(flag_table(engine)["builds"], key=build_number)


def first_builds(date: str, upto: str | None = None, engine: str = "llamacpp") -> str | None:
    """Which builds first carry an upstream change dated `date`, as far as the table can tell: the
    table samples builds (b9093, b9101, b9254, ...), so the first sampled build on or after the date
    is the first to have it only when the build just before it is sampled too. Otherwise the change
    came in a build between the last sampled one before the date and that one. None: no sampled
    build (up to `upto`) has it yet."""
    table = flag_table(engine)["builds"]
    ordered = table_builds(engine)
    limit = str(table[upto]["date"]) if upto in table else None
    after = [b for b in ordered if str(table[b]["date"]) >= date and (limit is None or str(table[b]["date"]) <= limit)]
    if not after:
        return None
    first = after[0]
    before = [b for b in ordered if build_number(b) < build_number(first)]
    if not before:
        return f"in llama.cpp {first} or earlier"
    if build_number(before[-1]) == build_number(first) - 1:
        return f"first in llama.cpp {first}"
    return f"first in a llama.cpp build between {before[-1]} and {first}"


def build_number(build: str) -> int:
    return int(build[1:]) if re.fullmatch(r"b[0-9]+", build) else -1


@lru_cache(maxsize=None)
def from_table(engine: str, build: str) -> Registry:
    """The registry of a build of the generated table (flags as arg.cpp declares them)."""
    flags = []
    for f in flag_table(engine)["flags"]:
        if build not in f["builds"]:
            continue
        names = list(f["names"])
        value = f.get("value")
        spec = FlagSpec(canonical=next((n for n in names if n.startswith("--")), names[0]), names=names,
                        negations=list(f.get("negations", [])), value=value, env=f.get("env"),
                        choices=list(f["choices"]) if f.get("choices") else None, removed=bool(f.get("removed")),
                        replacement=f.get("replacement"))
        spec.optional_value = bool(value and value.startswith("[") and spec.choices)
        flags.append(spec)
    return Registry(engine, build, flags)


@dataclass(frozen=True)
class Resolved:
    """The registry a chart's build is checked against, and how sure that is."""

    registry: Registry
    exact: bool  # the build itself is in the table
    note: str  # how the build was told, for an engine.build finding
    neighbours: tuple[Registry, ...] = ()  # for an inexact build: the table builds around it
    named: bool = False  # not in the table, but a build the history file names (with its date)

    @property
    def sure(self) -> bool:
        """The build is known: in the table, or named with a date by the history file."""
        return self.exact or self.named


def resolve(engine: str, build: str | None, how: str) -> Resolved:
    """The registry for `build` ('b9101', a named build of the history file, or None): the build
    itself when the table has it, else the nearest table build (by number, or by date for named
    builds), with the table builds on either side so that a difference between them is a doubt,
    not an error."""
    known = table_builds(engine)
    if build in known:
        return Resolved(from_table(engine, build), True, f"llama.cpp {build} ({how})")
    dates = {b: flag_table(engine)["builds"][b]["date"] for b in known}
    if build is not None and build_number(build) >= 0:
        key = build_number(build)
        lower = [b for b in known if build_number(b) < key]
        upper = [b for b in known if build_number(b) > key]
    elif build is not None and build in builds(engine):
        date = builds(engine)[build]["date"]
        lower = [b for b in known if dates[b] <= date]
        upper = [b for b in known if dates[b] > date]
    else:
        newest = known[-1]
        return Resolved(from_table(engine, newest), False, f"build unknown ({how}): checked against llama.cpp {newest}, "
                        "the newest known")
    around = tuple(from_table(engine, b) for b in (lower[-1:] + upper[:1]))
    nearest = around[0] if lower else around[-1]
    return Resolved(nearest, False, f"llama.cpp {build} ({how}) is not in the registry: checked against {nearest.build}, the "
                    f"nearest known ({' and '.join(r.build for r in around)} around it); flags that differ between them are warnings",
                    around, named=build in builds(engine))


def _rollback(base: Registry, build: str, date: str) -> Registry:
    flags = [FlagSpec(**{**s.__dict__, "names": list(s.names), "negations": list(s.negations),
                         "choices": list(s.choices) if s.choices else None}) for s in base.flags]
    by_canon = {f.canonical: f for f in flags}
    for ev in history(base.engine):
        if ev.date <= date:
            continue  # the build already has this change
        spec = by_canon.get(ev.flag)
        if ev.kind == "rename-value" and spec and spec.choices is not None and ev.old and ev.new:
            spec.choices = [ev.old if c == ev.new else c for c in spec.choices]
        elif ev.kind == "default" and spec and ev.old is not None:
            spec.default = ev.old
        elif ev.kind == "removed" and ev.old:
            # removed after this build: the old flag still worked then
            old = next((f for f in flags if ev.old in f.names), None)
            if old is not None:
                old.removed = False
        elif ev.kind == "added" and spec:
            flags.remove(spec)
            del by_canon[ev.flag]
    return Registry(base.engine, build, flags)


# ---------------------------------------------------------------- vLLM

VLLM_UPSTREAM = ("vllm/vllm-openai",)  # docker.io/vllm/vllm-openai: `vllm serve` of a PyPI release


@lru_cache(maxsize=None)
def vllm_table() -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(_data_text("vllm-flags.json")))


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"[0-9]+", v)[:3])


@dataclass(frozen=True)
class VllmFlags:
    version: str  # the table version checked against
    exact: bool
    flags: frozenset[str]
    neighbours: tuple[frozenset[str], ...]  # the table versions around an inexact one

    def accepts(self, flag: str) -> bool:
        return vllm_accepts(self.flags, flag)


def vllm_accepts(flags: frozenset[str], flag: str) -> bool:
    # every boolean takes --no-<flag> (argparse.BooleanOptionalAction)
    return flag in flags or (flag.startswith("--no-") and f"--{flag[5:]}" in flags)


def vllm_flags(version: str | None) -> VllmFlags:
    """The flags of `vllm serve` in `version` ('0.11.0'), or of the nearest release of the table."""
    table = vllm_table()
    known = sorted(table["versions"], key=_version_tuple)

    def of(v: str) -> frozenset[str]:
        return frozenset(f for f, vs in table["flags"].items() if v in vs)

    if version in known:
        return VllmFlags(version, True, of(version), ())
    if version is None:
        return VllmFlags(known[-1], False, of(known[-1]), ())
    key = _version_tuple(version)
    lower = [v for v in known if _version_tuple(v) <= key]
    upper = [v for v in known if _version_tuple(v) > key]
    around = lower[-1:] + upper[:1]
    nearest = around[0]
    return VllmFlags(nearest, False, of(nearest), tuple(of(v) for v in around))
