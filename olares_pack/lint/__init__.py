"""`olares-pack lint`: the installer's rules, real Helm, Kubernetes schemas and engine-aware checks."""

from .context import LintOptions
from .findings import RULES, Finding
from .runner import ChartResult, lint_chart, lint_charts, lint_source, lint_sources

__all__ = ["RULES", "ChartResult", "Finding", "LintOptions", "lint_chart", "lint_charts", "lint_source", "lint_sources"]
