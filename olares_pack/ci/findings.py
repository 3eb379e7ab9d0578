"""What `check` reports: findings placed on a repository file and line, grouped by stage."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
# The stages of the gate, in the order they run; a stage is one existing command's core.
STAGES = ("lint", "build", "offer", "bench", "rehearse")


@dataclass(frozen=True)
class CheckFinding:
    stage: str
    rule: str  # a lint rule id, a rehearsal rule id, or check.* for the catalogue's own checks
    severity: Severity
    file: str  # relative to the repository root ("" when the finding has no file)
    line: int | None
    message: str
    subject: str = ""  # what was checked: app.yaml@target, an app, a package

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sort_key(self) -> tuple[Any, ...]:
        return (STAGES.index(self.stage), self.file, self.line or 0, self.rule, self.message)


@dataclass
class Stage:
    name: str
    checked: str = ""  # what it covered, in words ("2 apps, 3 charts")
    skipped: str = ""  # why it did not run, when it did not
    seconds: float = 0.0
    findings: list[CheckFinding] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == "warning" for f in self.findings)

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else ("failed" if self.errors else "passed")

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, "status": self.status, "checked": self.checked, "skipped": self.skipped,
                "errors": self.errors, "warnings": self.warnings}


@dataclass
class Report:
    stages: list[Stage]
    changed_since: str | None = None
    changed_apps: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[CheckFinding]:
        return sorted((f for s in self.stages for f in s.findings), key=CheckFinding.sort_key)

    @property
    def failed(self) -> bool:
        return any(s.errors for s in self.stages)
