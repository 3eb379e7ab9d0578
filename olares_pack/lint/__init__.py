"""`olares-pack lint`: the installer's rules, real Helm, Kubernetes schemas and engine-aware checks."""

from olares_pack.lint.context import LintOptions
from olares_pack.lint.findings import RULES, Finding
from olares_pack.lint.runner import ChartResult, lint_chart, lint_charts, lint_source

__all__ = ["RULES", "ChartResult", "Finding", "LintOptions", "lint_chart", "lint_charts", "lint_source"]
