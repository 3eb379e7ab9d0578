"""`init --ci github`: the GitHub Actions workflow of a catalogue repository, written from
olares-pack.yml.in with this olares-pack's facts (its version, the control plane's tool versions
the cache key is made of, the actions' commits).

The actions are pinned by commit, each the commit of the tag named beside it (read from the
actions' own repositories: `git rev-parse <tag>^{commit}`); a tag can be moved, a commit cannot."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from olares_pack import __version__
from olares_pack.common.errors import InputError

WORKFLOW_PATH = Path(".github") / "workflows" / "olares-pack.yml"

# action -> (commit, tag): github.com/actions/<name>, tags as of 2026-07
ACTIONS: dict[str, tuple[str, str]] = {
    "CHECKOUT": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "SETUP_PYTHON": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "SETUP_GO": ("b7ad1dad31e06c5925ef5d2fc7ad053ef454303e", "v7.0.0"),
    "SETUP_NODE": ("820762786026740c76f36085b0efc47a31fe5020", "v7.0.0"),
    "CACHE": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
}
PYTHON_VERSION = "3.12"
# helm.sh/helm/v3 v3.19.5's go.mod asks for go 1.24.0; k8s.io/kubernetes v1.32.2 builds with it too
GO_VERSION = "1.24"
# wrangler 4.86 (the export's package.json) runs on Node 20 and newer
NODE_VERSION = "22"


@dataclass(frozen=True)
class Settings:
    install: str = f"olares-pack=={__version__}"  # what `pip install` is given
    branch: str = "main"
    cron: str = "17 4 * * *"


# the POSIX cron fields GitHub's `schedule:` takes (docs.github.com, "Events that trigger workflows",
# schedule): name, lowest, highest, and the names a field may use instead of numbers
CRON_FIELDS = (("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
               ("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
               ("day of week", 0, 6, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")))


def cron_problem(cron: str) -> str | None:
    """What is wrong with a cron expression (None: nothing): values out of range, bad steps or ranges."""
    parts = cron.split()
    if len(parts) != 5:
        return f"{len(parts)} field(s)"
    for text, (name, lo, hi, names) in zip(parts, CRON_FIELDS, strict=True):
        for item in text.split(","):
            span, slash, step = item.partition("/")
            if slash and not (step.isdigit() and int(step) >= 1):
                return f"{name} {item!r}: the step after / is a number from 1"
            if span == "*":
                continue
            bounds = span.split("-")
            if len(bounds) > 2:
                return f"{name} {item!r}: a value or a range a-b"
            values = []
            for b in bounds:
                v = (names.index(b.upper()) + lo) if b.upper() in names else int(b) if b.isdigit() else None
                if v is None or not lo <= v <= hi:
                    return f"{name} {b!r}: expected {lo}–{hi}" + (f" or {names[0]}–{names[-1]}" if names else "")
                values.append(v)
            if len(values) == 2 and values[0] > values[1]:
                return f"{name} {item!r}: the range runs backwards"
    return None


def tools_key() -> str:
    """The cache key of the control plane's programs: their versions, so that an olares-pack that
    moves to another kube-apiserver or Helm builds (and caches) the new ones."""
    from olares_pack.cluster import tools

    return f"olares-pack-tools-${{{{ runner.os }}}}-${{{{ runner.arch }}}}-kube-{tools.KUBE_VERSION}-helm-{tools.HELM_VERSION}"


def render(settings: Settings = Settings()) -> str:
    from olares_pack.cluster import tools

    for what, value in (("--install", settings.install), ("--branch", settings.branch), ("--cron", settings.cron)):
        if not value.strip() or any(c in value for c in "\n\"'`$\\"):
            raise InputError(f"{what} {value!r}: one line without quotes, backslashes, backticks or $")
    if (why := cron_problem(settings.cron)) is not None:
        raise InputError(f"--cron {settings.cron!r}: {why}; five fields (minute hour day month weekday), e.g. '17 4 * * *'")
    text = resources.files("olares_pack.ci").joinpath("olares-pack.yml.in").read_text(encoding="utf-8")
    values = {"OLARES_PACK_VERSION": __version__, "INSTALL": settings.install, "BRANCH": settings.branch,
              "CRON": settings.cron, "PYTHON_VERSION": PYTHON_VERSION, "GO_VERSION": GO_VERSION,
              "NODE_VERSION": NODE_VERSION, "KUBE_VERSION": tools.KUBE_VERSION, "HELM_VERSION": tools.HELM_VERSION,
              "TOOLS_KEY": tools_key()}
    values.update({name: f"{sha} # {tag}" for name, (sha, tag) in ACTIONS.items()})
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    return text


@dataclass(frozen=True)
class Written:
    path: Path
    how: str  # "written", "unchanged", "replaced"


def write(root: Path, settings: Settings, force: bool) -> Written:
    """The workflow into ROOT/.github/workflows/olares-pack.yml; a different file there is kept
    (InputError) unless `force`."""
    from olares_pack.common import fsio

    if not root.is_dir():
        raise InputError(f"{root}: no such directory")
    path = root / WORKFLOW_PATH
    text = render(settings)
    if path.exists():
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            current = f"unreadable: {exc}"
        if current == text:
            return Written(path, "unchanged")
        if not force:
            raise InputError(f"{path}: exists and differs from what this olares-pack writes; nothing was written "
                             "(--force replaces it; `git diff` then shows what changed)")
    how = "replaced" if path.exists() else "written"
    fsio.write_text_atomic(path, text)
    return Written(path, how)
