"""One error hierarchy: everything a user should see maps to an exit code.

Every exception olares-pack raises on purpose is defined here, so a reader sees at once what can
go wrong and what the command exits with; the rooms raise them, the CLI maps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """The exit codes of `olares-pack`."""

    OK = 0
    FINDINGS = 1  # lint findings, a stale build, a diff that found changes
    INPUT = 2  # usage or input error: nothing written
    INTERNAL = 3  # a bug in olares-pack, not in the input


@dataclass(frozen=True)
class Problem:
    """One located problem in an input file."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {self.path}:" if self.path else ""
        return f"{where}:{field} {self.message}"


class OlaresPackError(Exception):
    """An error to show the user as it is, without a traceback."""

    exit_code = ExitCode.INPUT


class InputError(OlaresPackError):
    """Bad input (a manifest, a chart, an argument): exit 2, nothing written."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        self.problems = sorted(problems or [], key=lambda p: (p.file, p.line or 0, p.path))
        if self.problems:
            message = "\n".join(str(p) for p in self.problems)
        super().__init__(message)


class BenchFailure(OlaresPackError):
    """A bench or soak that could not complete: the server errored, stalled or died (exit 1)."""

    exit_code = ExitCode.FINDINGS


class QuantityError(ValueError):
    """Not a Kubernetes quantity. A ValueError, so that a manifest field's validator reports it as
    that field's problem."""


# ---- the repository


class LockTimeout(OlaresPackError):
    """Another command held the repository for longer than we were told to wait."""


class ImmutableVersionError(InputError):
    """A published version's record, package or changelog entry would change."""


# ---- the network: Hugging Face, registries, market sources


class HubError(InputError):
    """Hugging Face could not answer, or answered that the model or revision is not there."""


class RegistryError(InputError):
    """A registry answered something other than the manifest asked for, or could not be reached."""


class TagNotFound(RegistryError):
    def __init__(self, message: str, nearest: list[str]) -> None:
        super().__init__(message)
        self.nearest = nearest


class HTTPStatus(InputError):
    """A market source answered with an HTTP error status."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"{url}: HTTP {status}")
        self.status = status


# ---- import


class UpgradeBlocked(InputError):
    """What stops the conversion of a legacy chart, said exactly; the app stays as it was imported."""


# ---- serving


class BadRequest(OlaresPackError):
    """A request the market server answers with a 4xx status and this message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
