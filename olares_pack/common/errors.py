"""One error hierarchy: everything a user should see maps to an exit code."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3  # a bug in olares-pack, not in the input


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

    exit_code = EXIT_INPUT


class InputError(OlaresPackError):
    """Bad input (a manifest, a chart, an argument): exit 2, nothing written."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        self.problems = sorted(problems or [], key=lambda p: (p.file, p.line or 0, p.path))
        if self.problems:
            message = "\n".join(str(p) for p in self.problems)
        super().__init__(message)
