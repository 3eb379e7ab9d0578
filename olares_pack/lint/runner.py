"""Run every rule on every chart; a rule that breaks on odd input becomes a finding, not a crash."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from olares_pack.charts.source import ChartSource
from olares_pack.lint import engine_rules, installer_rules, manifest_rules, raw_rules, template_rules
from olares_pack.lint.context import ChartContext, LintOptions, build_context, run_helm
from olares_pack.lint.findings import Finding, allow, for_release


@dataclass(frozen=True)
class ChartResult:
    label: str
    olares: str  # the Olares release whose rule set was applied
    olares_how: str  # why that release
    findings: list[Finding]


def _apply(ctx: ChartContext, rules: Iterable[manifest_rules.Rule]) -> None:
    for rule in rules:
        try:
            rule(ctx)
        except Exception as exc:  # noqa: BLE001 - hand-written charts hold anything; keep linting
            ctx.add("lint.internal", f"{rule.__name__}: {type(exc).__name__}: {exc}")


def lint_chart(source: ChartSource, options: LintOptions | None = None) -> ChartResult:
    ctx = build_context(source, options or LintOptions())
    _apply(ctx, [manifest_rules.static_manifest])  # on the text: it may not parse as YAML
    _apply(ctx, raw_rules.RAW_RULES)  # on the template text, as the app service reads it
    if ctx.manifest:
        _apply(ctx, [*manifest_rules.RULES, *installer_rules.RULES])
        run_helm(ctx)
        _apply(ctx, [*template_rules.RULES, *engine_rules.RULES, *manifest_rules.POST_RENDER])
    allowed = frozenset(ctx.options.allow)
    kept = {allow(for_release(f, ctx.olares), allowed) for f in ctx.findings}
    return ChartResult(source.label, ctx.olares, ctx.olares_how, sorted(kept, key=Finding.sort_key))


def lint_source(source: ChartSource, options: LintOptions | None = None) -> list[Finding]:
    return lint_chart(source, options).findings


def lint_charts(sources: list[ChartSource], options: LintOptions | None = None, jobs: int = 1) -> list[ChartResult]:
    """Each chart on its own; with jobs > 1 in that many worker processes (spawned, not forked:
    the Helm engine is a Go runtime in this process), results in the order of `sources`."""
    if jobs <= 1 or len(sources) <= 1:
        return [lint_chart(s, options) for s in sources]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(jobs, len(sources)), mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(lint_chart, sources, [options] * len(sources), chunksize=max(1, len(sources) // (4 * jobs))))
