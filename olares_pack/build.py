"""Render every app of a catalogue for every target it declares."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import render, targets
from .manifest import App, discover, load_app


@dataclass(frozen=True)
class RenderedChart:
    app: App
    target: targets.TargetProfile
    files: dict[str, str]

    @property
    def relpath(self) -> str:
        """Where the chart folder goes under the output folder."""
        return f"{self.target.name}/{self.app.name}"


def load_catalogue(apps_dir: Path) -> list[App]:
    return [load_app(p) for p in discover(apps_dir)]


def render_catalogue(apps: list[App], only: list[str] | None = None) -> list[RenderedChart]:
    out = []
    for app in apps:
        for name in app.targets:
            if only and name not in only:
                continue
            t = targets.get(name)
            out.append(RenderedChart(app, t, render.render(app, t)))
    return out
