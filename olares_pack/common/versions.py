"""An app's version as its maintainer wrote it, and its value.

Devices read versions loosely: Helm loads a chart whose version Masterminds/semver's `NewVersion`
parses (helm.sh/helm/v3 pkg/chart/metadata.go `Metadata.Validate` → `isValidSemver`, v3.19.5), and
that parser takes numbers with leading zeros: `helm package` of a chart at version `26.08.29`
writes `vchart-26.08.29.tgz` and renders `.Chart.Version` as `26.08.29` (reproduced here with the
Helm olares-pack builds), while `26.8.x` is refused ("chart.metadata.version ... is invalid").
Published catalogues use such versions (`26.08.29`); rewriting one to `26.8.29` hands a device
another chart under the version it already has, since both spell one value.

So a version is kept as written; it is ordered by its value (`parse`); two spellings of one value
are one version (`same`); and the next version is written in the scheme of the one before it
(`bump`: `26.08.29` → `26.08.30`).
"""

from __future__ import annotations

import re

import semver

# Three numbers (leading zeros allowed), then a strict pre-release and build, as in SemVer 2.
_LOOSE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


def parse(version: str) -> semver.Version:
    """The value of a version (ValueError when it is none): strict SemVer, or three numbers of
    which some start with 0."""
    try:
        return semver.Version.parse(version)
    except (ValueError, TypeError):
        pass
    m = _LOOSE.match(str(version))
    if m is None:
        raise ValueError(f"{version!r} is not a version (expected e.g. 1.0.9)")
    return semver.Version(int(m[1]), int(m[2]), int(m[3]), m[4], m[5])


def is_version(version: str) -> bool:
    try:
        parse(version)
    except ValueError:
        return False
    return True


def is_strict(version: str) -> bool:
    try:
        semver.Version.parse(version)
    except (ValueError, TypeError):
        return False
    return True


def same(a: str, b: str) -> bool:
    """Whether two spellings name one version (to a device they are the same)."""
    return parse(a) == parse(b)


def bump(version: str, part: str) -> str:
    """The next version after `version` by `part` (patch, minor or major), in its own scheme: each
    number keeps the width it was written with (26.08.29 → 26.08.30, 26.08.09 → 26.08.10), a
    number reset to 0 keeps its width too (26.08.29 → 26.09.00 for minor); a strict version bumps as
    SemVer does (pre-release and build dropped)."""
    if is_strict(version):
        v = semver.Version.parse(version)
        return str({"patch": v.bump_patch, "minor": v.bump_minor, "major": v.bump_major}[part]())
    m = _LOOSE.match(version)
    if m is None:
        raise ValueError(f"{version!r} is not a version (expected e.g. 1.0.9)")
    texts = [m[1], m[2], m[3]]
    at = {"major": 0, "minor": 1, "patch": 2}[part]
    numbers = [int(t) for t in texts]
    numbers[at] += 1
    for i in range(at + 1, 3):
        numbers[i] = 0
    return ".".join(str(n).zfill(len(t)) for n, t in zip(numbers, texts, strict=True))


def newest(versions: list[str]) -> str:
    return max(versions, key=parse)


def _core(version: str) -> str:
    """The three numbers as written."""
    m = _LOOSE.match(version)
    if m is None:
        raise ValueError(f"{version!r} is not a version (expected e.g. 1.0.9)")
    return f"{m[1]}.{m[2]}.{m[3]}"


def with_prerelease(version: str, identifier: str) -> str:
    """`version` as a pre-release `identifier` of itself (1.0.9 → 1.0.9-legacy; its own pre-release
    identifiers after: 1.1.0-rc.1 → 1.1.0-legacy.rc.1), the numbers spelt as written, no build."""
    v = parse(version)
    return f"{_core(version)}-{identifier}.{v.prerelease}" if v.prerelease else f"{_core(version)}-{identifier}"


def without_prerelease(version: str) -> str:
    """`version` without its pre-release identifiers, the numbers spelt as written, build kept."""
    v = parse(version)
    return _core(version) + (f"+{v.build}" if v.build else "")
