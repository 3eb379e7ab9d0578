"""Loading an app manifest: YAML with lines, the models' verdict as file:line problems, the
checks that need more than the models (the shared form's engine arguments), and `auto` values
derived from the GPU memory estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from olares_pack.apps.manifest import ADAPTER, App, ChartApp, LlamaCppApp
from olares_pack.catalogue import MANIFEST_FILE
from olares_pack.common.errors import InputError, Problem
from olares_pack.common.fields import text_problems
from olares_pack.common.yamlsrc import SourceDoc, load_yaml, parse_yaml


def _problems(doc: SourceDoc, exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if loc and loc[0] in ("llamacpp", "vllm", "chart"):
            loc = loc[1:]  # the union tag is ours, not a field the user wrote
        if err["type"] == "engine_kind":
            loc = ("engine", "kind")
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not part of the app manifest; check the spelling)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif "input" in err and err["type"] not in ("model_type", "dict_type"):
            shown = repr(err["input"])
            msg = f"{msg} (got {shown if len(shown) <= 80 else shown[:77] + '...'})"
        problems.append(doc.problem(loc, msg))
    return problems


def validate_doc(doc: SourceDoc) -> App:
    if not isinstance(doc.data, dict):
        raise InputError("", [Problem(str(doc.path), 1, "", "expected a mapping of app fields")])
    if problems := text_problems(doc.data):
        raise InputError("", [doc.problem(loc, msg) for loc, msg in problems])
    try:
        app = ADAPTER.validate_python(doc.data)
    except ValidationError as exc:
        raise InputError("", _problems(doc, exc)) from None
    if (message := _shared_args_problem(app)) is not None:
        raise InputError("", [doc.problem((), message)])
    return app


def _shared_args_problem(app: App) -> str | None:
    # The shared form passes the engine arguments as one ENGINE_ARGS string its wrapper splits
    # on white space: an argument that cannot travel that way is refused here, at load.
    if isinstance(app, ChartApp) or not app.engine.shared or "current" not in app.targets:
        return None
    from olares_pack.render.llmbase import bad_argument  # Jinja-free, but it loads the engines

    if (bad := bad_argument(app)) is None:
        return None
    return (f"server: the engine argument {bad!r} is empty or holds white space, and ENGINE_ARGS "
            "(the shared form) is split on white space: write it without, or set engine.shared: false")


def validate_data(data: dict[str, Any], label: str) -> App:
    """An app from data that has no YAML source (a release record): problems name `label`."""
    return validate_doc(SourceDoc(path=Path(label), text=None, data=data))


def load_app(path: Path, *, derive: bool = True) -> App:
    """Load `apps/<name>/app.yaml` (or the folder holding it); the folder must be named after the app.
    With derive=False, `auto` values stay `auto` (nothing is estimated)."""
    path = Path(path)
    file = path / MANIFEST_FILE if path.is_dir() else path
    if not file.exists():
        raise InputError(f"{file}: no such app manifest")
    doc = load_yaml(file)
    app = validate_doc(doc)
    if file.name == MANIFEST_FILE and file.parent.name != app.name:
        raise InputError("", [doc.problem(("name",), f"{app.name!r} differs from its folder {file.parent.name!r}")])
    if derive and not isinstance(app, ChartApp) and app.resources.gpu_memory_mib == "auto":
        _derive_gpu_memory(app, doc)
    return app


def _derive_gpu_memory(app: App, doc: SourceDoc) -> None:
    """gpu_memory_mib: auto -> the full-context estimate on an Olares One, rounded up to 256 MiB."""
    from olares_pack.vram import budget
    from olares_pack.vram import estimate as vram

    loc = ("resources", "gpu_memory_mib")
    if not isinstance(app, LlamaCppApp):
        raise InputError("", [doc.problem(loc, "auto is derived from the llama.cpp estimate; give vLLM apps a number")])
    try:
        est = budget.app_estimate(app, budget.app_dir_of(doc.path), vram.device())
    except InputError as exc:
        raise InputError("", [doc.problem(loc, f"auto needs the model's metadata: {exc}")]) from None
    if est.verdict == "does not fit":
        raise InputError("", [doc.problem(loc, f"auto: the estimate ({est.total_mib:.0f} MiB at --ctx-size "
                                          f"{est.settings.ctx}) does not fit {est.device.name}")])
    app.resources.gpu_memory_mib = vram.gpu_request_mib(est)


def parse_app(text: str, path: Path = Path("<string>"), *, derive: bool = True) -> App:
    doc = parse_yaml(text, path)
    app = validate_doc(doc)
    if derive and not isinstance(app, ChartApp) and app.resources.gpu_memory_mib == "auto":
        _derive_gpu_memory(app, doc)
    return app
