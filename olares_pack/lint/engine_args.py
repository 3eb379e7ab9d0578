"""Where a chart in the shared (llmbase) form writes its engine's arguments.

The form's wrapper starts the engine with the words of ENGINE_ARGS (engines/detect.py, the reader
`import` uses too). The installer passes the manifest's envs as .Values.olaresEnv, each at its
default unless the clone dialog changed it (charts/helm.env_defaults); the templates fall back on a
default of their own where olaresEnv carries none. Every one of these is an ENGINE_ARGS the engine
can be started with, so lint checks each, and names the file, line and field that holds it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from olares_pack.lint.context import MANIFEST, ChartContext

ENV = "ENGINE_ARGS"
# `$oe.ENGINE_ARGS | default "..."` (or a raw `...` string): the templates' own fallback
_FALLBACK = re.compile(r"\.ENGINE_ARGS\s*\|\s*default\s+(\"(?:[^\"\\]|\\.)*\"|`[^`]*`)")


@dataclass(frozen=True)
class ArgsSource:
    """One place that sets ENGINE_ARGS: its text, and where a finding about it points."""

    text: str
    file: str
    path: str
    loc: tuple[Any, ...] | None = None  # node path in the manifest (its line is looked up)
    line: int | None = None

    @property
    def words(self) -> frozenset[str]:
        return frozenset(self.text.split())

    def within(self, rendered: str) -> bool:
        """Whether the arguments a render started the engine with carry this text (a template may
        add words around it: the official charts' helpers add -ngl 0 in CPU mode)."""
        return f" {' '.join(self.text.split())} " in f" {' '.join(rendered.split())} "

    def where(self) -> dict[str, Any]:
        return {"file": self.file, "path": self.path, "loc": self.loc, "line": self.line}


def _manifest_sources(ctx: ChartContext) -> list[ArgsSource]:
    out = []
    for i, e in enumerate(ctx.manifest.get("envs") or []):
        if not isinstance(e, dict) or e.get("envName") != ENV:
            continue
        for key in ("default", "value"):
            if isinstance(e.get(key), str) and e[key].strip():
                out.append(ArgsSource(e[key], MANIFEST, f"envs[{i}].{key}", loc=("envs", i, key)))
        for j, o in enumerate(e.get("options") or []):
            if isinstance(o, dict) and isinstance(o.get("value"), str) and o["value"].strip():
                out.append(ArgsSource(o["value"], MANIFEST, f"envs[{i}].options[{j}].value", loc=("envs", i, "options", j, "value")))
    return out


def _go_string(literal: str) -> str | None:
    if literal.startswith("`"):
        return literal[1:-1]
    try:
        return str(json.loads(literal))  # Go's interpreted strings escape as JSON's do, for what templates write
    except ValueError:
        return None


def _template_sources(ctx: ChartContext) -> list[ArgsSource]:
    out = []
    for path, text in sorted(ctx.templates_text().items()):
        if ENV not in text:
            continue
        for m in _FALLBACK.finditer(text):
            value = _go_string(m.group(1))
            if value and value.strip():
                out.append(ArgsSource(value, path, f"{ENV} default", line=text.count("\n", 0, m.start()) + 1))
    return out


def sources(ctx: ChartContext) -> list[ArgsSource]:
    """Every ENGINE_ARGS the chart writes: the manifest's env (default, value, each option), then
    the templates' fallback defaults. Computed once per chart."""
    if "engine_args" not in ctx.memo:
        ctx.memo["engine_args"] = _manifest_sources(ctx) + _template_sources(ctx)
    return ctx.memo["engine_args"]  # type: ignore[no-any-return]


def placer(ctx: ChartContext, rendered: str | None) -> Any:
    """For the arguments the render carries: where a word of them is written, so that a finding
    points at the manifest's ENGINE_ARGS (or the template's fallback) rather than the Deployment.
    None for a word that no source holds (one the wrapper or the template adds)."""
    if rendered is None:
        return lambda word: None
    held = [s for s in sources(ctx) if s.within(rendered)]

    def where(word: str) -> dict[str, Any] | None:
        return next((s.where() for s in held if word in s.words), None)

    return where
