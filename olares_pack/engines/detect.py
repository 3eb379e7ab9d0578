"""Find the LLM engine in rendered Kubernetes objects, hand-written charts included: which
container runs llama-server or vLLM, with which argv and environment, once `$(VAR)` (Kubernetes)
and `${VAR:-default}` (shell) references are substituted from the container's env and ConfigMaps."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from olares_pack.charts.objects import pod_spec

ANNOTATION_BUILD = "olares-pack/engine-build"
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SH_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Invocation:
    kind: str  # llamacpp | vllm
    workload: str  # Deployment/name
    container: str
    image: str
    argv: list[str]  # engine arguments only (no program name)
    env: dict[str, str]  # resolved literal env values
    ports: list[int]
    build: str | None  # from the olares-pack annotation, when present
    llmbase: bool = False  # started by the llmbase form's wrapper: argv is ENGINE_ARGS after what the wrapper sets


def configmaps(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {(o.get("metadata") or {}).get("name", ""): {str(k): str(v) for k, v in (o.get("data") or {}).items()}
            for o in objects if o.get("kind") == "ConfigMap"}


def resolve_env(container: dict[str, Any], configmaps: dict[str, dict[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for ref in container.get("envFrom") or []:
        cm = (ref.get("configMapRef") or {}).get("name")
        if cm in configmaps:
            env.update(configmaps[cm])
    for e in container.get("env") or []:
        name = e.get("name")
        if not name:
            continue
        if "value" in e:
            env[name] = _K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), str(e["value"]))
        elif (ref := (e.get("valueFrom") or {}).get("configMapKeyRef")) and ref.get("name") in configmaps:
            value = configmaps[ref["name"]].get(ref.get("key", ""))
            if value is not None:
                env[name] = value
    return env


def _shell_text(script: str, env: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        return m.group(2) if m.group(2) is not None else m.group(0)

    return _SH_VAR.sub(sub, script.replace("\\\n", " "))


def _shell_words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _engine_argv(command: list[str], args: list[str], env: dict[str, str], image: str) -> tuple[str, list[str]] | None:
    words = [*command, *args]
    words = [_K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), w) for w in words]
    # A shell wrapper: look inside the script for the engine command.
    if len(words) >= 3 and words[0].split("/")[-1] in ("sh", "bash", "ash", "dash") and words[1] in ("-c", "-ec", "-xc", "-exc"):
        text = _shell_text(words[2], env)
        if "llama-server" not in text and "vllm" not in text and "vllm" not in image.lower():
            # no engine to find in the script (a vLLM image's entrypoint script may still start one):
            # spare its (slow) shell split
            return None
        # `sh -c 'SCRIPT' NAME ARG...`: the script's "$@" is ARG... (a wrapper that runs a step
        # and then `exec vllm serve "$@"`)
        params = words[4:]
        words = [p for w in _shell_words(text) for p in (params if w in ("$@", "$*") else [w])]
    for i, w in enumerate(words):
        prog = w.split("/")[-1]
        if prog == "llama-server":
            return "llamacpp", words[i + 1 :]
        if prog in ("vllm", "vllm-omni") and i + 1 < len(words) and words[i + 1] == "serve":
            return "vllm", words[i + 1 :]
    image_name = image.split("@")[0].rsplit("/", 1)[-1].lower()
    if "vllm" in image_name:
        # an entrypoint script of a vLLM image that hands its arguments to `vllm` (`/entrypoint.sh serve
        # <model> ...`, as images that prepare the model or the environment first are started)
        for i, w in enumerate(words[:-1]):
            if w.endswith(".sh") and words[i + 1] == "serve":
                return "vllm", words[i + 1 :]
    if not command and args:
        if "vllm" in image_name and args[0] == "serve":
            return "vllm", words
        if "llama" in image_name and args[0].startswith("-"):
            return "llamacpp", words  # the image's entrypoint is llama-server
    return None


_WRAPPER_PORT_ENV = {"llamacpp": "LLAMACPP_PORT", "vllm": "VLLM_PORT"}


def _llmbase_argv(command: list[str], env: dict[str, str]) -> tuple[str, list[str]] | None:
    """The official llmbase form (beclab/apps llamacppllmbasev3, vllmllmbasev3, and olares-pack's
    shared apps): a wrapper script from the llm-init wrappers ConfigMap starts the engine with the
    arguments of ENGINE_ARGS (word-split), after the model, host and port it sets itself."""
    kind = env.get("ENGINE_KIND")
    if kind not in _WRAPPER_PORT_ENV or not any("/llm-init/wrappers/" in w for w in command):
        return None
    return kind, llmbase_argv(kind, env)


def llmbase_argv(kind: str, env: dict[str, str]) -> list[str]:
    """The engine's argv as the llmbase wrapper builds it from its env (ENGINE_ARGS among it)."""
    args = env.get("ENGINE_ARGS", "").split()  # the wrapper's own split: on white space, no quoting
    port = env.get(_WRAPPER_PORT_ENV[kind], "8081" if kind == "llamacpp" else "8000")
    fixed = ["--host", "0.0.0.0", "--port", port]
    if kind == "vllm":
        return ["serve", env.get("MODEL_NAME", "model"), "--served-model-name", env.get("MODEL_NAME", "model"), *fixed, *args]
    return ["--alias", env.get("MODEL_NAME", "model"), *fixed, *args]


def find_engines(objects: list[dict[str, Any]]) -> list[Invocation]:
    maps = configmaps(objects)
    found = []
    for o in objects:
        if o.get("kind") not in ("Deployment", "StatefulSet", "DaemonSet", "Pod"):
            continue
        meta = o.get("metadata") or {}
        pod = pod_spec(o) or {}
        for c in pod.get("containers") or []:
            env = resolve_env(c, maps)
            image = str(c.get("image", ""))
            command = [str(x) for x in c.get("command") or []]
            wrapped = _llmbase_argv(command, env)
            hit = wrapped or _engine_argv(command, [str(x) for x in c.get("args") or []], env, image)
            if hit is None:
                continue
            kind, argv = hit
            ports = [int(p["containerPort"]) for p in c.get("ports") or [] if isinstance(p.get("containerPort"), int)]
            build = (meta.get("annotations") or {}).get(ANNOTATION_BUILD)
            found.append(Invocation(kind, f"{o.get('kind')}/{meta.get('name')}", str(c.get("name")), image, argv, env, ports, build,
                                    llmbase=wrapped is not None))
    return found
