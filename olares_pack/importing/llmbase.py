"""`olares-pack import --structured` of a chart in the official llmbase form (beclab/apps
llamacppllmbasev3, vllmllmbasev3 and the apps made from them, and olares-pack's own shared apps):
the engine behind an llm-init wrapper, its arguments in ENGINE_ARGS, the model in llm-init's
MODEL_SOURCE (or olares-pack's MODEL_REPO/MODEL_FILES), the clone surface in the manifest's envs.

structure.structured calls in here: `objects` renders such a chart with the values the installer
gives a fresh install (each env's default as .Values.olaresEnv), and `extras` turns what only this
form has into typed fields (engine.shared, llm-init's image, the model's capabilities)."""

from __future__ import annotations

import re
from typing import Any

from olares_pack.apps.manifest import ChartApp
from olares_pack.engines import registry
from olares_pack.engines.detect import Invocation

# Env the wrapper and llm-init read, which the typed render writes again: not the app's own env.
FORM_ENV = {"ENGINE_KIND", "MODEL_NAME", "MODEL_MODE", "MODEL_SOURCE", "MODEL_SUPPORTS", "MODEL_REPO", "MODEL_REVISION",
            "MODEL_FILES", "LLAMACPP_PORT", "VLLM_PORT", "WAIT_TIMEOUT", "ENGINE_ARGS", "ENGINE_EXTRA_ARGS", "HF_HUB_CACHE",
            "HF_HUB_OFFLINE", "RUN_DIR", "VERIFY_DIR", "VLLM_CACHE_ROOT", "HF_ENDPOINT", "HF_TOKEN", "CUDA_VISIBLE_DEVICES",
            # conventions of the images the official charts run, which llama-server and vLLM do not read
            "PYTHONUNBUFFERED", "PGID", "PUID", "TZ"}
_SOURCE = re.compile(r"hf://([A-Za-z0-9._-]+/[A-Za-z0-9._-]+)(?:\s+--include\s+(\S+))?")


def _envs(app: ChartApp) -> dict[str, dict[str, Any]]:
    return {str(e.get("envName")): e for e in app.chart.manifest.get("envs") or [] if isinstance(e, dict)}


def is_llmbase(app: ChartApp) -> bool:
    envs = _envs(app)
    return "ENGINE_ARGS" in envs and ("MODEL_SOURCE" in envs or "MODEL_NAME" in envs)


def objects(app: ChartApp, mode: str = "nvidia") -> list[dict[str, Any]] | None:
    """The chart's objects as a fresh install renders them (None: not the llmbase form)."""
    if not is_llmbase(app):
        return None
    from olares_pack import olares
    from olares_pack.charts import helm, package
    from olares_pack.render import imported as chartrender

    files = chartrender.render(app, olares.get(app.targets[0]))
    olares_env = helm.env_defaults(app.chart.manifest)
    entrances = [str(e.get("name")) for e in app.chart.manifest.get("entrances") or [] if isinstance(e, dict)]
    values = helm.installer_values(app.name, entrances, owner="alice", admin="alice", gpu_type=mode, olares_env=olares_env)
    with helm.load_bytes(package.build_archive(app.name, files)) as chart:
        rendered = chart.render(values=values, name=app.name, namespace=f"{app.name}-alice")
    return [o for _, o in helm.objects(rendered) if isinstance(o, dict)]


def _containers(objects: list[dict[str, Any]], init: bool = False) -> list[dict[str, Any]]:
    key = "initContainers" if init else "containers"
    return [c for o in objects for c in (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get(key) or []]


def _env(c: dict[str, Any]) -> dict[str, str]:
    return {e.get("name"): str(e.get("value", "")) for e in c.get("env") or [] if "value" in e}


def download_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    """MODEL_REPO/MODEL_REVISION/MODEL_FILES: olares-pack's engine env, else llm-init's MODEL_SOURCE."""
    for c in _containers(objects):
        env = _env(c)
        if env.get("MODEL_REPO") and env.get("ENGINE_KIND"):
            return env
    for c in _containers(objects):
        env = _env(c)
        if env.get("MODEL_SOURCE") and (m := _SOURCE.findall(env["MODEL_SOURCE"])):
            files = [f for _, f in m if f]
            return {"MODEL_REPO": m[0][0], "MODEL_REVISION": "main", "MODEL_FILES": "\n".join(files)}
    return {}


def _image(ref: str) -> dict[str, Any]:
    repo, tag = registry.image_parts(ref, as_written=True)
    return {"repository": repo.lower(), "tag": tag or "latest", "digest": ref.split("@", 1)[1] if "@" in ref else None}


def extras(data: dict[str, Any], app: ChartApp, objects: list[dict[str, Any]], inv: Invocation, notes: list[str]) -> dict[str, Any]:
    """The typed app data of an llmbase chart: what structure.structured read, plus the form's own."""
    if not is_llmbase(app):
        return data
    helper = next((c for c in _containers(objects) if _env(c).get("ENGINE_KIND") and c.get("name") == "llm-init"), None)
    chown = next((c for c in _containers(objects, init=True) if c.get("name") == "init-chown"), None)
    engine = dict(data["engine"], shared=True)
    if helper is not None:
        engine["llm_init"] = _image(str(helper.get("image", "")))
    if chown is not None:
        engine["chown_image"] = _image(str(chown.get("image", "")))
    envs = _envs(app)
    groups = str((envs.get("MODEL_SUPPORTS") or {}).get("default") or "")
    caps = [g for g in ("tools", "thinking", "vision") if g in [t.strip() for t in groups.split(",")]]
    if str((envs.get("MODEL_MODE") or {}).get("default") or "") == "embedding":
        caps.append("embedding")
    model = dict(data["model"])
    if caps:
        model["capabilities"] = caps
    # olares-pack's own step that links earlier versions' copies into the cache (model.adopt)
    adopt = next((c for c in _containers(objects, init=True) if c.get("name") == "adopt-model"), None)
    if adopt is not None and (folders := [f for f in _env(adopt).get("ADOPT_FROM", "").splitlines() if f.strip()]):
        model["adopt"] = folders
    # size and sha256 as olares-pack's MODEL_FILES carries them
    lines = [line.split("|") for line in download_env(objects).get("MODEL_FILES", "").splitlines() if line.strip()]
    if lines and any(len(p) >= 3 and (p[1] or p[2]) for p in lines):
        model.pop("file", None)
        model["files"] = [{"name": p[0], **({"size": int(p[1])} if len(p) > 1 and p[1] else {}),
                           **({"sha256": p[2]} if len(p) > 2 and p[2] else {})} for p in lines]
    # the wrapper's own: where the engine listens, and the served name (MODEL_NAME)
    server = {k: v for k, v in data["server"].items() if k not in ("host", "port", "alias")}
    dropped = sorted(k for k in _env(next(iter(c for c in _containers(objects) if c.get("name") == inv.container), {}))
                     if k in FORM_ENV)
    if dropped:
        notes.append(f"llmbase form: {', '.join(dropped)} are the form's own env, written again by the render")
    first = next((e for e in app.chart.manifest.get("entrances") or [] if isinstance(e, dict)), {})
    entrance = dict(data["entrance"], name=first.get("name") or None)
    return {**data, "engine": engine, "model": model, "server": server, "probes": {}, "entrance": entrance,
            "env": {k: v for k, v in data["env"].items() if k not in FORM_ENV}}
