"""The template generation, and a fingerprint of everything that can change a rendered chart.

Kept apart from render.py (Jinja, the manifest models) so that commands which only need to know
whether a render could have changed (an unchanged `build`, cache keys) load neither.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable

# The template generation: raise it with every change to templates/ or to this renderer that
# changes a rendered chart. Each release records the generation its packages were rendered
# with; a published version keeps its committed bytes whatever the generation is now, and
# `build --check` fails when the newest version of an app recorded with this generation no
# longer renders to its package (a template changed and this number did not).
# 1: the first charts (0.1.0). 2: the download step reads percent-encoded URL paths, passes the
#    token outside argv, calls curl with -g and stays inside the app's folder of the store.
# 3: each target's chart is a version of its own (1.0.9 and 1.0.9-legacy, olares.chart_version).
# 4: the app's pod carries the label app: <name>, the pattern of charts that route on devices.
# 5: current-target LLM apps render the official llmbase pattern (engine + llm-init, shared, the
#    clone surface, the gateway, the model checked before the engine starts; llmbase.py).
# 6: the per-user form's pod-label comment cites no working notes (a comment only).
# 7: legacy-target shared apps (engine.shared) render the apiVersion v2 shared form: the engine in
#    a shared server sub-chart, a proxy client per user (sharedv2.py).
# 8: a model file whose sha256 the app does not record is checked against the sha256 Hugging Face
#    publishes for it: by the shared form's engine wrapper against its cache's blob name
#    (templates/llmbase/engine.sh), by the download step against X-Linked-Etag (download.sh).
# 9: the shared form's engine Deployment keeps the selector of the installed version (Helm `lookup`):
#    an upgrade from the per-user form no longer fails on the immutable spec.selector.
# 10: model.adopt: llm-init's Deployment links the copies earlier versions kept flat in the store
#    (hf-files/...) into the hub cache before llm-init runs (templates/llmbase/adopt.sh).
GENERATION = 10


def templates_root() -> Traversable:
    return resources.files("olares_pack.templates")


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """A digest of everything that can change a render: the templates and olares-pack's own
    sources. Cached verdicts ("this record still renders to its package") are keyed by it."""
    h = hashlib.sha256()

    def add(node: Traversable, rel: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                add(child, f"{rel}{child.name}/")
            elif child.name.endswith((".py", ".j2", ".sh", ".yaml", ".txt", ".json")):
                h.update(f"{rel}{child.name}\0".encode())
                h.update(child.read_bytes())

    add(templates_root(), "templates/")
    add(resources.files("olares_pack"), "olares_pack/")
    h.update(f"generation {GENERATION}".encode())
    return h.hexdigest()
