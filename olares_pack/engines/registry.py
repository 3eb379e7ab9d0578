"""Engine flag registries: which flags a pinned engine build accepts, their aliases, env vars,
defaults and allowed values, plus the history that explains renames, removals and default
changes. The registry of a llama.cpp build is parsed from that build's own `llama-server --help`
(engines/data/llama-server-help-<build>.txt); the history overlay is engines/data/llamacpp-history.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from ..errors import InputError
from ..yamlsrc import safe_load


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
    data = safe_load(resources.files("olares_pack.engines").joinpath(f"data/{engine}-history.yaml").read_text())
    return tuple(HistoryEvent(**e) for e in data["events"])


@lru_cache(maxsize=None)
def builds(engine: str = "llamacpp") -> dict[str, dict[str, str]]:
    data = safe_load(resources.files("olares_pack.engines").joinpath(f"data/{engine}-history.yaml").read_text())
    return {str(k): {kk: str(vv) for kk, vv in v.items()} for k, v in (data.get("builds") or {}).items()}


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
        text = resources.files("olares_pack.engines").joinpath(f"data/{info['help']}").read_text()
        return Registry(engine, build, parse_llama_help(text))
    # A build without its own --help: the newest registry, rolled back through the history to
    # the build's date (values renamed after it are the old spelling, flags removed after it exist).
    base = load(engine, None)
    return _rollback(base, build, info["date"])


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
