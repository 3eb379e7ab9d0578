"""Olares facts, each written once: the releases olares-pack knows, the two targets a chart can be
rendered for (their manifest generations, dependency windows and what differs between them), the
release that brought the v2 sync, and the OS version assumed where none is named."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import semver

from olares_pack.common.errors import InputError

# Olares releases whose installer rules olares-pack knows, oldest first: the two targets' windows
# (1.12.3-1.12.5 for v1/v2 manifests, 1.12.6+ for v3, the windows oac pins them to) and 1.12.7. lint --olares picks a rule
# set among them; the newest is the default when a chart names no window.
KNOWN_RELEASES = ("1.12.3", "1.12.4", "1.12.5", "1.12.6", "1.12.7")

# 1.12.6 brought manifest 0.12.0 (apiVersion v3): the installer pins older manifests to
# >=1.12.3-0,<1.12.6 and 0.12.0 ones to >=1.12.6-0 (framework/oac options.go).
MODERN_MANIFEST = "0.12.0"
FIRST_MODERN_RELEASE = "1.12.6"
# 1.12.7 syncs a source through the /api/v2 routes (market/v2.py).
FIRST_V2_SYNC_RELEASE = "1.12.7"
# What a device that names no version is taken to run, and the release a chart for the current
# target is checked against: the first of the current target.
DEFAULT_OS_VERSION = FIRST_MODERN_RELEASE
# A live source's catalogue is read as the newest release of each window sees it.
LIVE_SOURCE_OS_VERSIONS = ("1.12.5", FIRST_V2_SYNC_RELEASE)

# Olares installs k3s v1.32 (installer DefaultK3sVersion v1.32.2-k3s): its schemas validate objects.
DEFAULT_KUBE_VERSION = "1.32.0"


@dataclass(frozen=True)
class TargetProfile:
    name: str
    olares: str  # the OS versions, for humans
    manifest_version: str
    api_version: str
    dependency: str  # the olares system dependency window written into the manifest
    min_os: str  # inclusive, for the market's ?version= filter
    max_os: str | None  # exclusive
    accelerator_envelopes: bool  # 0.12.0 spec.accelerator[] instead of flat spec fields
    workload_replicas: bool
    gpumem_in_container: bool  # nvidia.com/gpumem (bare MiB) in container requests and limits
    gpu_inject_container: bool  # annotation names the container (1.12.6) rather than "true"
    # Where the model store lives: the userspace key (needs the same-named permission) and subfolder.
    model_userspace: str
    model_subdir: str
    # olaresEnv names the chart declares for the Hugging Face endpoint and token, and their sources.
    hf_endpoint_env: str
    hf_token_env: str
    hf_endpoint_from: str
    hf_token_from: str
    # The pre-release identifier that makes this target's chart a version of its own (None: the
    # release version itself). See chart_version.
    line: str | None = None

    def admits(self, os_version: str) -> bool:
        """Whether an Olares OS version falls inside this target's dependency window."""
        v = parse_os_version(os_version)
        if v.compare(self.min_os) < 0:
            return False
        return self.max_os is None or v.compare(self.max_os) < 0


CURRENT = TargetProfile(
    name="current",
    olares=f"{FIRST_MODERN_RELEASE} and newer",
    manifest_version=MODERN_MANIFEST,
    api_version="v3",
    dependency=f">={FIRST_MODERN_RELEASE}-0",
    min_os=f"{FIRST_MODERN_RELEASE}-0",
    max_os=None,
    accelerator_envelopes=True,
    workload_replicas=True,
    gpumem_in_container=True,
    gpu_inject_container=True,
    model_userspace="appCommon",
    model_subdir="huggingface",
    hf_endpoint_env="HF_ENDPOINT",
    hf_token_env="HF_TOKEN",
    hf_endpoint_from="OLARES_SYSTEM_HUGGINGFACE_SERVICE",
    hf_token_from="OLARES_SYSTEM_HUGGINGFACE_TOKEN",
)

LEGACY = TargetProfile(
    name="legacy",
    olares="1.12.3 to 1.12.5",
    manifest_version="0.10.0",
    # Not v2: the installer's linter (framework/oac checkSubCharts) requires apiVersion v2 charts
    # to declare spec.subCharts with a shared entry, and app-service installs a v2 app of one chart
    # as v1 anyway (framework/app-service/pkg/appinstaller/v2/helm_ops_install.go HelmOpsV2.Install).
    api_version="v1",
    dependency=f">={KNOWN_RELEASES[0]}-0,<{FIRST_MODERN_RELEASE}",
    min_os=f"{KNOWN_RELEASES[0]}-0",
    max_os=f"{FIRST_MODERN_RELEASE}-0",
    accelerator_envelopes=False,
    workload_replicas=False,
    gpumem_in_container=False,
    gpu_inject_container=False,
    model_userspace="appData",
    model_subdir="models",
    hf_endpoint_env="OLARES_USER_HUGGINGFACE_SERVICE",
    hf_token_env="OLARES_USER_HUGGINGFACE_TOKEN",
    hf_endpoint_from="OLARES_USER_HUGGINGFACE_SERVICE",
    hf_token_from="OLARES_USER_HUGGINGFACE_TOKEN",
    line="legacy",
)

TARGETS: dict[str, TargetProfile] = {t.name: t for t in (CURRENT, LEGACY)}


def chart_version(version: str, target: TargetProfile) -> str:
    """The version a target's chart carries, its file is named after and devices see.

    A device caches charts by file name (`<name>-<version>.tgz`) and asks for one by its app version
    and file name only (beclab/market internal/v2/appinfo/hydrationfn/source_chart_step.go, Execute
    and buildChartDownloadURL), so the chart route answers by file name alone: two targets' charts
    of one release need two versions (docs/concepts/targets.md, "One version per OS line"). The current line keeps the
    release version; the legacy line is the same release as a pre-release, `1.0.9-legacy`, which
    semver orders just below `1.0.9`, so a 1.12.5 device that upgrades its OS to 1.12.6 sees a new,
    higher version and fetches a new file. A release version that is itself a pre-release keeps
    its identifiers after the line's (`1.1.0-rc.1` -> `1.1.0-legacy.rc.1`)."""
    if target.line is None:
        return version
    from olares_pack.common import versions as appver

    return appver.with_prerelease(version, target.line)


def line_clash(version: str) -> str | None:
    """The target line a release version would be mistaken for ('1.0.9-legacy' is the legacy chart
    of 1.0.9, so it cannot be a release of its own)."""
    pre = semver.Version.parse(version).prerelease or ""
    head = pre.split(".", 1)[0]
    return next((t.name for t in TARGETS.values() if t.line is not None and head == t.line), None)


def own_target(manifest_version: str) -> str:
    """The target a manifest generation installs on: 0.12.0 and later on 1.12.6+, older on 1.12.3-1.12.5."""
    try:
        parts = tuple(int(p) for p in manifest_version.split(".")[:3])
    except ValueError:
        return LEGACY.name
    modern = tuple(int(p) for p in MODERN_MANIFEST.split("."))
    return CURRENT.name if parts >= modern else LEGACY.name


def is_modern(manifest_version: str) -> bool:
    """A manifest version (as a chart declares it, strictly semver) of the 0.12.0 generation or later."""
    try:
        return semver.Version.parse(manifest_version) >= semver.Version.parse(MODERN_MANIFEST)
    except ValueError:
        return False


def get(name: str) -> TargetProfile:
    try:
        return TARGETS[name]
    except KeyError:
        raise InputError(f"unknown target {name!r} (expected one of: {', '.join(TARGETS)})") from None


# Loose, as the installer and Helm read versions (Masterminds NewVersion): one to three numbers
# with leading zeros allowed, a pre-release and build metadata; ASCII digits only (Python's \\d
# would take Arabic-Indic digits).
_OS_VERSION = re.compile(r"v?([0-9]{1,9})(?:\.([0-9]{1,9}))?(?:\.([0-9]{1,9}))?"
                         r"(?:-([0-9A-Za-z-]{1,64}(?:\.[0-9A-Za-z-]{1,64}){0,15}))?(?:\+[0-9A-Za-z.-]{1,64})?", re.ASCII)


def parse_os_version(text: str) -> semver.Version:
    """Olares versions as devices send them ('1.12.6', '1.12.6-20260101', '01.12.6'); a bare '1.12'
    is 1.12.0. Leading zeros are dropped; anything else is an error."""
    m = _OS_VERSION.fullmatch(text.strip()) if len(text) <= 256 else None
    if m is None:
        raise InputError(f"{text[:64]!r} is not an Olares version (expected e.g. 1.12.6)")
    major, minor, patch = (int(g or 0) for g in m.groups()[:3])
    pre = m.group(4)
    if pre:
        pre = ".".join(str(int(p)) if p.isdigit() else p for p in pre.split("."))
    return semver.Version(major, minor, patch, prerelease=pre)


Term = tuple[str, semver.Version]  # (one of >= > <= < = !=, version)

_OPS = {">=": lambda c: c >= 0, ">": lambda c: c > 0, "<=": lambda c: c <= 0, "<": lambda c: c < 0,
        "=": lambda c: c == 0, "!=": lambda c: c != 0}


@lru_cache(maxsize=1024)
def constraint_terms(constraint: str) -> tuple[tuple[Term, ...], ...]:
    """A Masterminds-style constraint ('>=1.12.3-0,<1.12.6', '~1.12.3', '1.12.x || >=1.13') as
    alternatives of plain comparisons: the one form both `admits` and the exported Worker
    evaluate. Wildcards, ~ and ^ become ranges ('1.12.x' is >=1.12.0-0,<1.13.0-0)."""
    alternatives = []
    for alternative in constraint.split("||"):
        terms: list[Term] = []
        for part in re.split(r"[,\s]+(?=[<>=!~^]|\d)", alternative.strip()):
            part = part.strip().rstrip(",")
            if not part or part in ("*", "x", "X"):
                continue
            m = re.match(r"^(>=|<=|>|<|!=|=|==|~|\^)?\s*v?([0-9xX*][^\s,]*)$", part)
            if not m:
                raise InputError(f"cannot read the version constraint {constraint!r}")
            op, ref = m.group(1) or "=", m.group(2)
            if "x" in ref.lower() or "*" in ref:
                prefix = [int(p) for p in ref.split(".") if p not in ("x", "X", "*")]
                if not prefix:
                    continue
                low = prefix + [0] * (3 - len(prefix))
                high = prefix[:-1] + [prefix[-1] + 1] + [0] * (3 - len(prefix))
                terms += [(">=", semver.Version(*low, prerelease="0")), ("<", semver.Version(*high, prerelease="0"))]
                continue
            r = parse_os_version(ref)
            if op == "~":
                terms += [(">=", r), ("<", semver.Version(r.major, r.minor + 1, 0, prerelease="0"))]
            elif op == "^":
                terms += [(">=", r), ("<", semver.Version(r.major + 1, 0, 0, prerelease="0"))]
            else:
                terms.append(("=" if op == "==" else op, r))
        alternatives.append(tuple(terms))
    return tuple(alternatives)


@lru_cache(maxsize=4096)  # lint asks it for every finding (the releases of its rule)
def admits(constraint: str, version: str) -> bool:
    """Whether a Masterminds-style constraint ('>=1.12.3-0,<1.12.6', '>=1.12.6-0', '1.12.x || >=1.13')
    admits an Olares version."""
    v = parse_os_version(version)
    return any(all(_OPS[op](v.compare(r)) for op, r in terms) for terms in constraint_terms(constraint))


def probe_versions(constraints: set[str] | list[str]) -> list[str]:
    """OS versions that between them meet every combination of these constraints' answers that any
    OS version can meet: each boundary a constraint names, the smallest version above it, and the
    smallest version of all. Admission is constant between neighbouring boundaries, so a view per
    probe is a view for every version."""
    points = {semver.Version(0, 0, 0, prerelease="0")}
    for c in constraints:
        for terms in constraint_terms(c):
            for _, r in terms:
                points.add(r)
                points.add(r.replace(prerelease=f"{r.prerelease}.0") if r.prerelease
                           else semver.Version(r.major, r.minor, r.patch + 1, prerelease="0"))
    return [str(p) for p in sorted(points)]
