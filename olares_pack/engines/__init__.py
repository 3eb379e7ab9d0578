"""One module per serving engine: how typed settings become argv."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from olares_pack.common.shell import SHELLS, is_shell, script_head  # noqa: F401 - engines.is_shell, as before
from olares_pack.engines import llamacpp, vllm

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App

# Where the chart mounts the model store inside both the download and the engine containers.
MODELS_MOUNT = "/models"


def model_dir(app: App) -> str:
    """Folder holding the app's listed model files (one per repo and revision)."""
    return f"{MODELS_MOUNT}/hf-files/{app.model.repo}/{app.model.revision}"


def snapshot_cache(app: App) -> str:
    """Hugging Face hub cache used when the whole repo is fetched (no files listed)."""
    return f"{MODELS_MOUNT}/hub"


def build_argv(app: App) -> list[str]:
    # By engine.kind (the union's tag) rather than isinstance: reading argv needs no model classes.
    if app.engine.kind == "generic":  # a server olares-pack does not model: its arguments as written
        return list(app.engine.args)  # type: ignore[union-attr]
    m = app.model
    if app.engine.kind == "llamacpp":
        if m.fetch == "engine":  # llama-server downloads it itself (-hf)
            argv = llamacpp.build_argv(app.server, "")  # type: ignore[arg-type]
            argv = ["--hf-repo", m.repo, "--hf-file", m.files[0].name, *argv[2:]]
        else:
            path = m.path if m.fetch == "chart" else f"{model_dir(app)}/{m.files[0].name}"
            argv = llamacpp.build_argv(app.server, path)  # type: ignore[arg-type]
        return _without(argv, app.server.unset or [])  # type: ignore[union-attr]
    if m.fetch == "chart":
        return vllm.build_argv(app.server, m.path, download_dir=None, revision=None)  # type: ignore[arg-type]
    if m.fetch == "engine":  # vLLM fetches the repository from the hub itself
        return vllm.build_argv(app.server, m.repo, download_dir=None,  # type: ignore[arg-type]
                               revision=None if m.revision == "main" else m.revision)
    if app.model.files:
        return vllm.build_argv(app.server, model_dir(app), download_dir=None, revision=None)  # type: ignore[arg-type]
    return vllm.build_argv(app.server, app.model.repo, download_dir=snapshot_cache(app),  # type: ignore[arg-type]
                           revision=app.model.revision)


def _without(argv: list[str], flags: list[str]) -> list[str]:
    """argv less the typed flags (each with its value) left to the build's default."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in flags:
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


_PASSES_ARGS = re.compile(r'"\$[@*]"|\$[@*]')


def passes_args(script: str) -> bool:
    """A shell script that hands its arguments to the program it runs ("$@")."""
    return bool(_PASSES_ARGS.search(script))


_SHELL_WORD = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def _shell_arg(word: str) -> str:
    """A word for the end of a shell script: a bare variable as the chart wrote it (it may expand
    to several words or none), any other word double-quoted (its variables still expand)."""
    if _SHELL_WORD.fullmatch(word):
        return word
    return '"' + re.sub(r'(["\\`])', r"\\\1", word) + '"'


def script_words(app: App) -> list[str]:
    """The typed arguments an engine.script is followed by."""
    argv = build_argv(app)
    script = getattr(app.engine, "script", None) or ""
    return argv[1:] if argv[:1] == ["serve"] and re.search(r"\bserve$", script) else argv


def container_args(app: App) -> list[str]:
    """The engine container's args: the engine's argv, less the `serve` a wrapper script names
    itself (`sh -c '... exec vllm serve "$@"'`); with engine.script, that script ending with the
    engine's invocation, the typed arguments."""
    argv = build_argv(app)
    script = getattr(app.engine, "script", None)
    if script is not None:
        words = argv[1:] if argv[:1] == ["serve"] and re.search(r"\bserve$", script) else argv
        tail = getattr(app.engine, "script_tail", None)
        if tail is not None and words == list(app.engine.script_argv or []):  # type: ignore[union-attr]
            return [script + tail]  # the maintainer's text: the typed arguments are those it was imported as
        return [script + " " + " ".join(_shell_arg(w) for w in words) + "\n"]
    cmd = app.engine.command or []
    if len(cmd) >= 3 and passes_args(cmd[2]) and re.search(r"\bserve\s+\"?\$[@*]", cmd[2]) and argv[:1] == ["serve"]:
        return argv[1:]
    return argv


def normalized_flags(app: App) -> dict[str, str]:
    """The engine arguments as flag -> value, whatever their spelling (the registry of this build)."""
    from olares_pack.common.errors import InputError
    from olares_pack.engines import registry
    from olares_pack.engines.normalize import normalize_generic, normalize_llama

    argv = build_argv(app)
    if app.engine.kind == "generic":
        return normalize_generic(argv).values()
    if app.engine.kind == "llamacpp":
        try:
            reg = registry.load("llamacpp", app.engine.build)
        except InputError:
            reg = registry.load("llamacpp")
        return normalize_llama(argv, reg, app.env).values()
    return normalize_generic(argv[2:] if argv[:1] == ["serve"] else argv).values()


def container_name(app: App) -> str:
    return app.engine.kind
