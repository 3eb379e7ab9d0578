"""The model a hand-written chart downloads itself: a container of the engine's pod (an init
container, or the engine's own shell before it starts the server) that runs `wget` or `curl` on a
Hugging Face file URL, `https://huggingface.co/<org>/<repo>/resolve/<revision>/<file>`. The URL
may be written in the script, or held in an env variable set in the container or in a ConfigMap
the container reads (env valueFrom.configMapKeyRef, envFrom.configMapRef); a mirror written as
`$HF_ENDPOINT/<org>/<repo>/resolve/...` is read the same way (the path is Hugging Face's)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from olares_pack.charts.objects import pod_spec
from olares_pack.engines.detect import configmaps, resolve_env

_PART = r"[A-Za-z0-9][A-Za-z0-9._-]*"
# .../<org>/<repo>/resolve/<revision>/<path>: on huggingface.co, or after an endpoint variable
_RESOLVE = re.compile(rf"(?:https?://(?:www\.)?huggingface\.co|\$\{{?[A-Za-z_][A-Za-z0-9_]*\}}?)/({_PART}/{_PART})/resolve/"
                      rf"({_PART})/([^\s\"'?#;|&<>)]+)")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_FETCHERS = re.compile(r"(?<![\w-])(?:wget|curl)(?![\w-])")


@dataclass(frozen=True)
class HfFile:
    repo: str
    revision: str
    path: str  # inside the repository

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def _text(container: dict[str, Any]) -> str:
    return "\n".join(str(w) for w in [*(container.get("command") or []), *(container.get("args") or [])])


def _expanded(text: str, env: dict[str, str]) -> str:
    """The script with the variables it names replaced by their values (one word each), where
    known; an endpoint variable (HF_ENDPOINT) is left as it is, the pattern reads it as an endpoint."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        value = env.get(name)
        # a URL in a variable, or a part of one (`.../${TARGET_MODEL}/resolve/main/${TARGET_FILE}`);
        # an endpoint variable stays, the pattern reads it as an endpoint
        if value is None or "ENDPOINT" in name or (not value.strip()) or any(c.isspace() for c in value):
            return m.group(0)
        return value

    return _VAR.sub(sub, text)


def downloads(objects: list[dict[str, Any]], workload: str) -> list[HfFile]:
    """The Hugging Face files the pod of `workload` (Kind/name) fetches with wget or curl, in the
    order its containers name them (init containers first), each once."""
    maps = configmaps(objects)
    found: dict[HfFile, None] = {}
    for o in objects:
        if f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}" != workload:
            continue
        pod = pod_spec(o) or {}
        for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            script = _text(c)
            if not _FETCHERS.search(script):
                continue
            env = resolve_env(c, maps)
            for m in _RESOLVE.finditer(_expanded(script, env)):
                found.setdefault(HfFile(m.group(1), m.group(2), unquote(m.group(3))), None)
    return list(found)


def model(files: list[HfFile], engine_path: str = "") -> dict[str, Any] | None:
    """The typed `model` of what a chart downloads: the repository and revision of the file the
    engine loads (its basename matches the engine's --model), else of the first file; every
    file of that repository and revision, the loaded one first."""
    if not files:
        return None
    base = engine_path.rsplit("/", 1)[-1]
    lead = next((f for f in files if base and f.name == base), files[0])
    same = [f for f in files if (f.repo, f.revision) == (lead.repo, lead.revision)]
    same.sort(key=lambda f: f != lead)
    out: dict[str, Any] = {"repo": lead.repo, "revision": lead.revision}
    if len(same) == 1:
        out["file"] = lead.path
    else:
        out["files"] = [{"name": f.path} for f in same]
    return out
