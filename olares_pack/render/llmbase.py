"""The official catalogue's LLM app pattern ("llmbase"), as olares-pack renders it for the current
target: one engine Deployment on the GPU and a GPU-less `llm-init` Deployment that downloads the
model into the App Common Hugging Face cache, serves the entrance (a progress page, then an
OpenAI-compatible /v1 proxy to the engine) and owns readiness; the app is shared (one engine for
every user of the device) and exposes its API to the device's LLM gateway.

Read from beclab/apps: llamacppllmbasev3 and vllmllmbasev3 (templates/llm-init.yaml, wrappers.yaml,
llamacpp.yaml / vllm.yaml, _helpers.tpl, OlaresManifest.yaml) and llamacppqwen3627bmtpq4kxlv3
(a concrete app: the clone surface locked but for ENGINE_ARGS and LOG_LEVEL, the envelope summed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from olares_pack import engines
from olares_pack.apps.manifest import App, ChartApp
from olares_pack.common import quantity
from olares_pack.common.errors import InputError
from olares_pack.olares import TargetProfile

# llm-init derives the engine's URL from ENGINE_KIND (http://llamacpp:8081, http://vllm:8000:
# the Service comments of llamacppllmbasev3/templates/llamacpp.yaml and vllm.yaml), so the
# engine's Service name and port are fixed by the kind.
ENGINE_PORT = {"llamacpp": 8081, "vllm": 8000}
ENTRANCE_PORT = 8090
SHARED_HOST = "sharedentrances-api"
LLM_INIT_WORKLOAD = "llminit"
HF_CACHE = "/cache/hf/hub"
RUN_DIR = "/run/llm-init"
VERIFY_DIR = "/var/lib/olares-pack/verified"
# llm-init's own container: the official concrete app's figures (llamacppqwen3627bmtpq4kxlv3
# 1.0.8: "llm-init limit 2Gi").
LLM_INIT_CPU = ("200m", "1")
LLM_INIT_MEMORY = ("256Mi", "2Gi")

# MODEL_SUPPORTS groups -> the supports_* keys llm-init registers with the gateway
# (llamacppllmbasev3/templates/llm-init.yaml, $supportsGroups).
SUPPORTS = {
    "vision": "supports_vision",
    "tools": "supports_function_calling,supports_parallel_function_calling,supports_tool_choice",
    "thinking": "supports_reasoning,supports_reasoning_effort",
    "embedding": "",
    "none": "",
}

# Flags the wrapper sets itself (the verified model path, the served name, where it listens):
# they are not part of ENGINE_ARGS.
_OWNED = {
    "llamacpp": {"--model", "--alias", "--host", "--port"},
    "vllm": {"--served-model-name", "--host", "--port", "--download-dir", "--revision"},
}


def active(app: App, target: TargetProfile) -> bool:
    """Whether this app renders in the shared llm-init form for this target."""
    return not isinstance(app, ChartApp) and app.engine.shared and target.workload_replicas


def cache_folder(repo: str) -> str:
    """The repository's folder in llm-init's Hugging Face cache (huggingface_hub's models--<org>--<name>)."""
    return "models--" + repo.replace("/", "--")


def env_prefix(app: App) -> str:
    return "LLAMACPP" if app.engine.kind == "llamacpp" else "VLLM"


def model_name(app: App) -> str:
    """The model's id on the API and in the gateway: owner/repo:quant for llama.cpp, owner/repo for
    vLLM, the official charts' MODEL_NAME convention."""
    if app.engine.kind == "llamacpp":
        stem = app.model.files[0].name.rsplit("/", 1)[-1].removesuffix(".gguf")
        m = re.search(r"((?:UD-)?(?:I?Q[0-9][A-Za-z0-9_]*|[BM]?F(?:16|32)|BF16|MXFP4[A-Za-z0-9_]*))$", stem, re.I)
        return f"{app.model.repo}:{m.group(1)}" if m else app.model.repo
    return app.model.repo


def model_source(app: App) -> str:
    """llm-init's MODEL_SOURCE: hf://<repo> --include <file>, comma-separated per file, for
    llama.cpp; hf://<repo> (the whole repository) for vLLM, as the official base charts write it."""
    if app.engine.kind == "llamacpp":
        return ",".join(f"hf://{app.model.repo} --include {f.name}" for f in app.model.files)
    return f"hf://{app.model.repo}"


def supports(app: App) -> str:
    """MODEL_SUPPORTS as the clone dialog holds it (groups; the template expands them)."""
    groups = [c for c in ("vision", "tools", "thinking") if c in app.model.capabilities]
    return ",".join(groups) or "none"


def _args(app: App) -> list[str]:
    """The engine's argv less what the wrapper sets, JSON values written without spaces."""
    argv = engines.build_argv(app)
    if app.engine.kind == "vllm":
        argv = argv[2:]  # "serve <model>": the wrapper serves the verified snapshot
    owned = _OWNED[app.engine.kind]
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in owned:
            i += 2
            continue
        if any(ch.isspace() for ch in a) and a[:1] in "{[":
            try:
                a = json.dumps(json.loads(a), separators=(",", ":"))
            except ValueError:
                pass
        out.append(a)
        i += 1
    if app.engine.kind == "llamacpp" and app.model.mode == "embedding" and "--embedding" not in out:
        out.append("--embedding")
    return out


def bad_argument(app: App) -> str | None:
    """An engine argument that cannot travel in ENGINE_ARGS (empty, or with white space)."""
    return next((a for a in _args(app) if a == "" or any(ch.isspace() for ch in a)), None)


def engine_args(app: App) -> str:
    """The manifest's validated engine arguments as ENGINE_ARGS: the argv olares-pack builds, less
    what the wrapper sets, one string the wrapper splits on white space (the manifest refuses an
    argument that cannot travel so: bad_argument)."""
    if (bad := bad_argument(app)) is not None:
        raise InputError(f"{app.name}: the engine argument {bad!r} is empty or holds white space (ENGINE_ARGS is "
                         "split on white space): write it without, or set engine.shared: false")
    return " ".join(_args(app))


def wrapper_argv(app: App) -> list[str]:
    """The engine's arguments as the wrapper runs them and lint reads them (engines.detect): the
    served name, host and port it sets, then ENGINE_ARGS' default split on white space."""
    kind = app.engine.kind
    fixed = ["--host", "0.0.0.0", "--port", str(ENGINE_PORT[kind])]
    if kind == "vllm":
        return ["serve", model_name(app), "--served-model-name", model_name(app), *fixed, *engine_args(app).split()]
    return ["--alias", model_name(app), *fixed, *engine_args(app).split()]


def edited_args_note(app: App) -> str | None:
    """What `vram` says of a shared app: it estimates ENGINE_ARGS' default, which the installer may
    edit in the clone dialog."""
    if isinstance(app, ChartApp) or not app.engine.shared or "current" not in app.targets:
        return None
    return (f"estimated for the default ENGINE_ARGS (Olares 1.12.6+: `{engine_args(app)}`); the clone dialog lets "
            "the installer edit ENGINE_ARGS, and an edited value is the installer's own risk: this estimate does not "
            f"cover it and the GPU memory request stays {app.resources.gpu_memory_mib} MiB")


def model_files(app: App) -> str:
    """One `name|size|sha256` line per model file: what the engine's wrapper checks each file
    against before the engine starts (empty fields: not checked)."""
    return "\n".join(f"{f.name}|{f.size or ''}|{f.sha256 or ''}" for f in app.model.files)


@dataclass(frozen=True)
class Sized:
    """The engine's requests and limits (manifest resources) and the envelope: engine + llm-init,
    the sum the installer checks the primary containers against."""

    cpu: tuple[str, str]
    memory: tuple[str, str]
    envelope_cpu: tuple[str, str]
    envelope_memory: tuple[str, str]


def add_quantities(a: str, b: str, *, cpu: bool) -> str:
    total = quantity.parse(a) + quantity.parse(b)
    if cpu:
        return quantity.canonical_cpu(f"{round(total * 1000)}m")
    mib = total / (1 << 20)
    return f"{int(mib)}Mi" if mib == int(mib) else str(int(total))


def sized(app: App) -> Sized:
    r = app.resources
    cpu = (quantity.canonical_cpu(r.cpu.request), quantity.canonical_cpu(r.cpu.limit))
    mem = (r.memory.request, r.memory.limit)
    return Sized(
        cpu=cpu,
        memory=mem,
        envelope_cpu=(add_quantities(cpu[0], LLM_INIT_CPU[0], cpu=True), add_quantities(cpu[1], LLM_INIT_CPU[1], cpu=True)),
        envelope_memory=(add_quantities(mem[0], LLM_INIT_MEMORY[0], cpu=False), add_quantities(mem[1], LLM_INIT_MEMORY[1], cpu=False)),
    )


def context(app: App) -> dict[str, object]:
    """What the llmbase templates need beyond render.context."""
    kind = app.engine.kind
    s = sized(app)
    return {
        "kind": kind,
        "prefix": env_prefix(app),
        "engine_port": ENGINE_PORT[kind],
        # The entrance is named after the app and served by a Service of its name (the pattern of
        # charts known to route on devices); the official charts call theirs <kind>client on
        # download-svc, a name nothing else depends on.
        "entrance_name": app.entrance_name,
        "entrance_host": app.service_name,
        "entrance_port": ENTRANCE_PORT,
        "shared_host": SHARED_HOST,
        "llminit": LLM_INIT_WORKLOAD,
        "llm_init_image": app.engine.llm_init.ref,
        "chown_image": app.engine.chown_image.ref,
        "llm_init_cpu": LLM_INIT_CPU,
        "llm_init_memory": LLM_INIT_MEMORY,
        "hf_cache": HF_CACHE,
        "run_dir": RUN_DIR,
        "verify_dir": VERIFY_DIR,
        "model_name": model_name(app),
        "model_source": model_source(app),
        "model_mode": app.model.mode,
        "model_supports": supports(app),
        "model_files": model_files(app),
        "adopt_from": "\n".join(app.model.adopt),
        "adopt_into": cache_folder(app.model.repo),
        "engine_args": engine_args(app),
        "supports_groups": SUPPORTS,
        "sized": s,
        "gpu_mib": app.resources.gpu_memory_mib,
    }
