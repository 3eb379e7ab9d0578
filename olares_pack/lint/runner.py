"""Run every rule on every chart; a rule that breaks on odd input becomes a finding, not a crash."""

from __future__ import annotations

from collections.abc import Iterable

from . import engine_rules, manifest_rules, template_rules
from .context import ChartContext, LintOptions, build_context, run_helm
from .findings import Finding
from .source import ChartSource


def _apply(ctx: ChartContext, rules: Iterable[manifest_rules.Rule]) -> None:
    for rule in rules:
        try:
            rule(ctx)
        except Exception as exc:  # noqa: BLE001 - hand-written charts hold anything; keep linting
            ctx.add("lint.internal", f"{rule.__name__}: {type(exc).__name__}: {exc}")


def lint_source(source: ChartSource, options: LintOptions | None = None) -> list[Finding]:
    ctx = build_context(source, options or LintOptions())
    _apply(ctx, [manifest_rules.static_manifest])  # on the text: it may not parse as YAML
    if ctx.manifest:
        _apply(ctx, manifest_rules.RULES)
        run_helm(ctx)
        _apply(ctx, [*template_rules.RULES, *engine_rules.RULES, *manifest_rules.POST_RENDER])
    return sorted(set(ctx.findings), key=Finding.sort_key)


def lint_sources(sources: list[ChartSource], options: LintOptions | None = None) -> list[Finding]:
    out: list[Finding] = []
    for source in sources:
        out.extend(lint_source(source, options))
    return out
