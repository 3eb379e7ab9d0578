"""What a newer llama.cpp build changes for the arguments an app passes: every flag or value it
passes that was renamed or removed, and every default that changed for a flag it sets or relies
on, each with the date, the upstream reference and the first known build that has it.

Two sources: the history overlay (engines/data/llamacpp-history.yaml: renames, removals, default
changes with dates and pull requests) and the generated table (engines/data/llamacpp-flags.json:
which builds' common/arg.cpp declare each flag and value), so that a flag a newer build no longer
declares is found even where no event names it.
"""

from __future__ import annotations

from dataclasses import dataclass

from olares_pack.apps.manifest import App
from olares_pack.engines import build_argv, registry
from olares_pack.engines.normalize import Arg, normalize_llama

ENGINE = "llamacpp"


@dataclass(frozen=True)
class FlagChange:
    kind: str  # renamed-value | removed | default | not-accepted
    flag: str  # the canonical flag concerned
    spelled: str  # the flag as the app writes it ('' for a default it relies on)
    value: str | None  # the value the app passes (None: it relies on the default)
    old: str | None
    new: str | None  # renamed-value: the new value; removed: the successor flag; default: the new default
    date: str | None
    ref: str | None
    build: str | None  # the first sampled build of the table that has the change
    text: str
    builds: str | None = None  # what the table can say of the first build with it ("first in a llama.cpp build between bA and bB")

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.date or "9999", self.flag, self.kind, self.spelled)

    def message(self) -> str:
        when = ", ".join(p for p in (self.ref, self.builds or self.build) if p)
        when = (f" in {when}" if when else "") + (f" ({self.date})" if self.date else "")
        if self.kind == "renamed-value":
            return f"you pass {self.flag} {self.value}; renamed {self.new}{when}: {self.text}"
        if self.kind == "removed":
            instead = f"; use {self.new}" if self.new else "; no successor"
            return f"you pass {self.spelled}; removed{when}{instead}" + (f" ({self.text})" if not self.date else "")
        if self.kind == "default" and self.value is not None:
            return f"you pass {self.flag} {self.value}; the default became {self.new} (was {self.old}){when}"
        if self.kind == "default":
            return f"you rely on the default of {self.flag}: {self.old} → {self.new}{when}"
        return f"you pass {self.flag} {self.value}; not accepted by {self.build}: {self.text}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "flag": self.flag, "spelled": self.spelled, "value": self.value, "old": self.old,
                "new": self.new, "date": self.date, "ref": self.ref, "build": self.build, "builds": self.builds,
                "message": self.message()}


def build_date(build: str | None) -> str | None:
    """When a build was cut: the table's upload date, or the history file's date of a named build."""
    if build is None:
        return None
    table = registry.flag_table(ENGINE)["builds"]
    if build in table:
        return str(table[build]["date"])
    named = registry.builds(ENGINE).get(build)
    return named["date"] if named else None


def known_build(build: str) -> bool:
    return build_date(build) is not None


def first_build(date: str, upto: str | None) -> str | None:
    """The first build of the table cut on or after `date` (and not after `upto`)."""
    dates = registry.flag_table(ENGINE)["builds"]
    limit = build_date(upto) if upto else None
    for b in registry.table_builds(ENGINE):
        d = str(dates[b]["date"])
        if d >= date and (limit is None or d <= limit):
            return b
    return None


def app_build(app: App) -> str | None:
    """The llama.cpp build the app runs: engine.build, else the one its image tag names."""
    return app.engine.build or registry.tag_build(app.engine.image.tag)


def passed(app: App) -> dict[str, Arg]:
    """The engine arguments of `app` by canonical flag, read with its own build's registry."""
    from olares_pack.common.errors import InputError

    try:  # a build the history file names (forks too): its --help, rolled back to its date
        reg = registry.load(ENGINE, app_build(app))
    except InputError:
        reg = registry.resolve(ENGINE, app_build(app), "engine.build").registry
    return dict(normalize_llama(build_argv(app), reg, app.env).args)


def _family(flag: str) -> str:
    return flag.lstrip("-").split("-")[0]


def changes(app: App, target: str) -> list[FlagChange]:
    """What moving `app` from its build to `target` changes for its arguments (InputError when a
    build is unknown)."""
    start = build_date(app_build(app))
    end = build_date(target)
    if start is None or end is None:
        from olares_pack.common.errors import InputError

        which = app_build(app) if start is None else target
        raise InputError(f"llama.cpp build {which!r} is not in the flag registry (known: "
                         f"{', '.join(registry.table_builds(ENGINE))}, and {', '.join(sorted(registry.builds(ENGINE)))})")
    args = passed(app)
    spelled = {a.spelled.split(" ")[0].split("=")[0]: a for a in args.values() if a.source == "args"}
    families = {_family(f) for f in args}
    out: list[FlagChange] = []
    explained: set[tuple[str, str]] = set()
    for ev in registry.history(ENGINE):
        if not (start < ev.date <= end):
            continue
        first = first_build(ev.date, target)
        builds = registry.first_builds(ev.date, target)
        arg = args.get(ev.flag)
        if ev.kind == "rename-value" and arg is not None and arg.value == ev.old:
            out.append(FlagChange("renamed-value", ev.flag, arg.spelled.split(" ")[0], arg.value, ev.old, ev.new,
                                  ev.date, ev.ref, first, ev.text, builds))
            explained.add((ev.flag, "value"))
        elif ev.kind == "removed" and ev.old in spelled:
            a = spelled[ev.old]
            out.append(FlagChange("removed", ev.flag, ev.old, a.value, ev.old, ev.new, ev.date, ev.ref, first, ev.text, builds))
            explained.add((a.flag, "flag"))
        elif ev.kind == "default" and arg is not None:
            out.append(FlagChange("default", ev.flag, arg.spelled.split(" ")[0], arg.value, ev.old, ev.new, ev.date,
                                  ev.ref, first, ev.text, builds))
        elif ev.kind == "default" and _family(ev.flag) in families:
            out.append(FlagChange("default", ev.flag, "", None, ev.old, ev.new, ev.date, ev.ref, first, ev.text, builds))
    if target in registry.table_builds(ENGINE):
        out += _table_changes(args, target, explained)
    return sorted(out, key=FlagChange.sort_key)


def _table_changes(args: dict[str, Arg], target: str, explained: set[tuple[str, str]]) -> list[FlagChange]:
    """What the target build's own arg.cpp no longer accepts, where no event says why."""
    reg = registry.from_table(ENGINE, target)
    out = []
    for flag, a in sorted(args.items()):
        if a.source != "args":
            continue
        name = a.spelled.split(" ")[0].split("=")[0]
        spec = reg.lookup(name)
        if spec is None or spec.removed:
            if (flag, "flag") in explained:
                continue
            successor = spec.replacement if spec is not None else None
            why = f"{target}'s common/arg.cpp " + ("marks it removed" if spec is not None else "no longer declares it")
            out.append(FlagChange("removed", flag, name, a.value, name, successor, None, None, target, why))
        elif spec.choices and a.value not in spec.choices and (flag, "value") not in explained:
            out.append(FlagChange("not-accepted", flag, name, a.value, a.value, None, None, None, target,
                                  f"{target} accepts {', '.join(spec.choices)}"))
    return out
