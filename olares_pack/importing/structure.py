"""`olares-pack import --structured`: a chart whose engine olares-pack models (llama.cpp, vLLM)
as a typed app manifest (LlamaCppApp / VllmApp) instead of the chart as written. Read from the
chart's render: the engine container's image, arguments (parsed back: `sh -c`, `${VAR:-default}`,
LLAMA_ARG_* env), resources and probes; the model's Hugging Face repo, file and revision from
olares-pack's download step (MODEL_REPO/MODEL_REVISION/MODEL_FILES), `-hf`/`--hf-repo`, a model
path under `hf-files/<org>/<repo>/<revision>/`, or a file the chart fetches itself with wget/curl
from a Hugging Face resolve URL (hfurls). What olares-pack renders differently is listed by
the flag-aware diff of the original against the render, in the import report."""

from __future__ import annotations

import json
import re
from typing import Any

from olares_pack import engines
from olares_pack.apps.load import validate_data
from olares_pack.apps.manifest import App, ChartApp
from olares_pack.charts.objects import container, download_env
from olares_pack.common import quantity
from olares_pack.common.errors import InputError
from olares_pack.engines import registry
from olares_pack.engines.detect import Invocation, find_engines
from olares_pack.engines.normalize import NormalizedArgs, normalize_generic, normalize_llama
from olares_pack.importing import hfurls, keep

# llama.cpp flags the typed settings hold (canonical names of the registry), and their fields.
_LLAMA = {"--alias": "alias", "--host": "host", "--port": "port", "--parallel": "parallel", "--ctx-size": "ctx_size",
          "--gpu-layers": "gpu_layers", "--flash-attn": "flash_attn", "--batch-size": "batch_size",
          "--ubatch-size": "ubatch_size", "--threads": "threads", "--jinja": "jinja"}
_SPEC = {"--spec-type": "type", "--spec-draft-n-max": "draft_n_max", "--spec-draft-n-min": "draft_n_min",
         "--spec-draft-p-min": "draft_p_min"}
_VLLM = {"--served-model-name": "alias", "--host": "host", "--port": "port", "--max-model-len": "max_model_len",
         "--gpu-memory-utilization": "gpu_memory_utilization", "--max-num-seqs": "max_num_seqs",
         "--max-num-batched-tokens": "max_num_batched_tokens", "--dtype": "dtype", "--quantization": "quantization",
         "--kv-cache-dtype": "kv_cache_dtype", "--trust-remote-code": "trust_remote_code",
         "--enable-prefix-caching": "enable_prefix_caching", "--enable-chunked-prefill": "enable_chunked_prefill",
         "--enable-auto-tool-choice": "enable_auto_tool_choice", "--reasoning-parser": "reasoning_parser",
         "--tool-call-parser": "tool_call_parser"}
_HF_PATH = re.compile(r"hf-files/([A-Za-z0-9._-]+/[A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)/(.+)$")


def _number(v: str) -> Any:
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


_VLLM_NUMBERS = ("port", "max_model_len", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens")


def _respelled(v: str) -> bool:
    """Whether the typed number would be written otherwise than the chart writes it (`0.60`, `08`)."""
    n = _number(v)
    return not isinstance(n, str) and str(n) != v


def _flag(v: str) -> bool:
    return v.strip().lower() in ("true", "1", "on", "yes", "enabled")


def _container(objects: list[dict[str, Any]], inv: Invocation) -> dict[str, Any]:
    return container(objects, inv.workload, inv.container)


def _program(container: dict[str, Any], inv: Invocation) -> list[str] | None:
    """The words before the engine's arguments in an exec-form command (`vllm-omni` of `vllm-omni
    serve`, `/entrypoint.sh`, `/app/llama-server`); None when the image's entrypoint starts the
    engine or a shell script does (its text is not held by the typed form)."""
    words = [str(w) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not container.get("command") or len(words) <= len(inv.argv):
        return None
    if words[0].split("/")[-1] in ("sh", "bash", "ash", "dash"):
        # `sh -c 'STEP && exec vllm serve "$@"' NAME ARG...`: the wrapper is the program, its
        # arguments the engine's (a script that runs the engine with its own words is not)
        if len(words) >= 4 and words[1] in ("-c", "-ec", "-xc", "-exc") and engines.passes_args(words[2]):
            return words[:4]
        return None
    program = words[: len(words) - len(inv.argv)]
    if inv.kind == "llamacpp" and program[-1].split("/")[-1] != "llama-server":
        return None
    return program


def _script(container: dict[str, Any], inv: Invocation) -> tuple[list[str], str] | None:
    """`sh -c SCRIPT` whose last command starts the engine: the shell and the script up to the
    program (engine.command, engine.script)."""
    words = [str(w) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
    if len(words) != 3 or not engines.is_shell(words):
        return None
    head = engines.script_head(words[2], inv.kind)
    return (words[:2], head) if head is not None else None


def _script_tail(container: dict[str, Any], inv: Invocation) -> str | None:
    """The script's text after the program that starts the engine, as written."""
    words = [str(w) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
    if len(words) != 3 or not engines.is_shell(words):
        return None
    head = engines.script_head(words[2], inv.kind)
    return words[2][len(head):] if head is not None and words[2].startswith(head) else None


def _download_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {k: str(v) for k, v in download_env(objects).items()}


def _model(flags: dict[str, str], download: dict[str, str], positional: list[str],
           fetched: list[hfurls.HfFile] | None = None) -> dict[str, Any]:
    if download.get("MODEL_REPO"):
        files = [line.split("|", 1)[0] for line in download.get("MODEL_FILES", "").splitlines() if line.strip()]
        out: dict[str, Any] = {"repo": download["MODEL_REPO"], "revision": download.get("MODEL_REVISION") or "main"}
        if files:
            out["files"] = [{"name": f} for f in files]
        return out
    if flags.get("--hf-repo"):
        repo, _, quant = flags["--hf-repo"].partition(":")
        out = {"repo": repo, "revision": "main"}
        if flags.get("--hf-file"):
            out["file"] = flags["--hf-file"]
        elif quant:
            raise InputError(f"-hf {flags['--hf-repo']}: a quant tag, not a file name: name the file (--hf-file)")
        return out
    for path in [flags.get("--model", ""), *positional]:
        if m := _HF_PATH.search(path):
            return {"repo": m.group(1), "revision": m.group(2), "file": m.group(3)}
    for served in [*positional[:1], flags.get("--model", "")]:  # vLLM: `serve REPO` or `serve --model REPO`
        if re.fullmatch(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+", served):
            return {"repo": served, "revision": flags.get("--revision", "main")}
    if (found := hfurls.model(fetched or [], flags.get("--model", ""))) is not None:
        return found
    raise InputError("the model's Hugging Face repo is not in the chart (no download step, -hf, hf-files/ path "
                     "or wget/curl of a huggingface.co/<repo>/resolve/<revision>/<file> URL)")


def _resources(container: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    res = container.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    env = next(iter(spec.get("accelerator") or []), spec)
    out: dict[str, Any] = {
        "cpu": {"request": str(req.get("cpu", "1")), "limit": str(lim.get("cpu", req.get("cpu", "1")))},
        "memory": {"request": str(req.get("memory", "1Gi")), "limit": str(lim.get("memory", req.get("memory", "1Gi")))},
        "disk": {"request": str(env.get("requiredDisk") or "10Gi"), "limit": str(env.get("limitedDisk") or env.get("requiredDisk") or "10Gi")},
    }
    gpumem = lim.get("nvidia.com/gpumem") or req.get("nvidia.com/gpumem")
    declared = _gpu_declared(spec)
    whole = lim.get("nvidia.com/gpu") or req.get("nvidia.com/gpu")
    if declared is not None and (whole is not None or declared[1] is None
                                 or quantity.parse(declared[0]) != quantity.parse(declared[1])):
        # The envelope as declared, request and limit apart: a chart that asks 1Gi so that it
        # always schedules and lets the engine use 24Gi keeps both (the limit is what the engine gets).
        out["gpu"] = {"request": declared[0], "limit": declared[1],
                      "container": "whole" if whole is not None else "gpumem" if gpumem is not None else "none"}
    if gpumem is not None and str(gpumem).isdigit():
        out["gpu_memory_mib"] = int(gpumem)
    elif declared is not None:
        mib = max(int(quantity.parse(q) / (1 << 20)) for q in declared if q)
        out["gpu_memory_mib"] = mib if mib > 0 else "auto"  # a count of GPUs (requiredGpu: 1) names no memory
    return out


def _gpu_declared(spec: dict[str, Any]) -> tuple[str, str | None] | None:
    """(requiredGpu, limitedGpu) as the manifest writes them: 0.12.0 per mode, 0.10.0 flat."""
    modes = [r for r in [*(spec.get("accelerator") or []), *(spec.get("resources") or [])] if isinstance(r, dict)]
    for part in [*(r for r in modes if r.get("mode") != "cpu"), spec]:
        req = part.get("requiredGPUMemory") or part.get("requiredGpu") or part.get("requiredGPU")
        lim = part.get("limitedGPUMemory") or part.get("limitedGpu") or part.get("limitedGPU")
        if req not in (None, ""):
            return str(req), None if lim in (None, "") else str(lim)
    return None


def _probes(container: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, key in (("startupProbe", "startup"), ("livenessProbe", "liveness"), ("readinessProbe", "readiness")):
        p = container.get(kind) or {}
        if (p.get("httpGet") or {}).get("path"):
            out["path"] = p["httpGet"]["path"]
        fields = {f: p[c] for f, c in (("initial_delay_seconds", "initialDelaySeconds"), ("period_seconds", "periodSeconds"),
                                       ("timeout_seconds", "timeoutSeconds"), ("failure_threshold", "failureThreshold")) if c in p}
        if fields:
            out[key] = fields
    return out


def structured(app: ChartApp) -> tuple[App, list[str]]:
    """The typed app of a chart whose engine olares-pack models, and the notes; InputError when the
    chart does not fit the typed form (the chart app is then kept)."""
    from olares_pack.importing import llmbase as llmbase_import
    from olares_pack.render import imported as chartrender

    objects = llmbase_import.objects(app) or chartrender.objects(app)
    invs = [i for i in find_engines(objects) if i.kind in ("llamacpp", "vllm")]
    if not invs:
        raise InputError("no llama.cpp or vLLM container: an engine olares-pack does not model")
    if len(invs) > 1:
        raise InputError(f"{len(invs)} engine containers (the typed form has one)")
    inv = invs[0]
    container = _container(objects, inv)
    repo, tag = registry.image_parts(inv.image, as_written=True)
    # An import keeps the chart's form: one engine per user who installs it (its own entrances), or
    # the v2 shared form (a shared server sub-chart, sharedEntrances).
    m = app.chart.manifest
    shared = bool(m.get("sharedEntrances")) or any(isinstance(c, dict) and c.get("shared")
                                                   for c in (m.get("spec") or {}).get("subCharts") or [])
    engine: dict[str, Any] = {"kind": inv.kind, "shared": shared, "image": {"repository": repo.lower(), "tag": tag or "latest",
                                                          "digest": inv.image.split("@", 1)[1] if "@" in inv.image else None}}
    if (program := _program(container, inv)) is not None:
        engine["command"] = program
    elif (wrapper := _script(container, inv)) is not None:
        engine["command"], engine["script"] = wrapper
    elif not shared and not llmbase_import.is_llmbase(app) and engines.is_shell([str(w) for w in [*(container.get("command") or []), *(container.get("args") or [])]]):
        raise InputError(f"{inv.workload} container {inv.container}: a shell script starts the engine, and its "
                         "invocation is not the script's last command naming the program (a program in a variable, "
                         "another command after it): the typed form cannot say where its arguments go")
    if inv.kind == "llamacpp":
        engine["build"] = inv.build or registry.tag_build(tag)
        args, server, used = _llama_server(inv, engine["build"])
    else:
        args, server, used = _vllm_server(inv)
    download = _download_env(objects) or llmbase_import.download_env(objects)
    # flags the typed settings do not hold, as written; one the registry does not know keeps its
    # value (its spelling is the flag alone); one read from the environment stays there
    extra = [(a.spelled if k not in args.unknown or a.value == "true" else f"{k} {a.value}")
             for k, a in sorted(args.args.items()) if k not in used and not a.spelled.startswith("env ")]
    if inv.kind == "vllm" and not download and "--download-dir" in args.args:
        extra.append(args.args["--download-dir"].spelled)  # where vLLM itself caches what it fetches
    server["extra_args"] = [w for s in extra for w in s.split(" ", 1)]
    if inv.kind == "llamacpp":
        # each flag with the words written after it up to the next flag, in the chart's order: a
        # fork's flag the registry of its base reads as a switch keeps its value (`-fa on`)
        extra, server["extra_args"], moved = _as_written(inv.argv, engine["build"], args, used)
        for flag in moved:
            server.pop(_MOVABLE[flag], None)
            server["unset"] = sorted({*server.get("unset", []), {"--gpu-layers": "--n-gpu-layers"}.get(flag, flag)})
    consumed = {k for k in inv.env if k.startswith("LLAMA_ARG_")}
    if download:
        consumed.add("HF_HUB_OFFLINE")  # the typed render sets it whenever a download step fetches the model
    data = {**{k: v for k, v in app.model_dump(mode="json", exclude={"chart"}).items()},
            "engine": engine, "server": server,
            "model": _model(args.values(), download, args.positional, hfurls.downloads(objects, inv.workload)),
            **_chart_fields(app, container, consumed)}
    workload = next((o for o in objects if f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}" == inv.workload), {})
    selector = ((workload.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if selector and selector != {"app.kubernetes.io/name": app.name}:
        data["selector"] = {str(k): str(v) for k, v in selector.items()}  # immutable: the users' upgrade needs it
    notes: list[str] = []
    data = llmbase_import.extras(data, app, objects, inv, notes)
    if not data["engine"].get("shared") and not download and not llmbase_import.is_llmbase(app):
        # A chart of its own: the typed form keeps what it says beyond the engine (apps/kept.py),
        # so that the typed render makes the same app; the model is fetched as the chart does.
        data["model"] = _kept_model(data["model"], inv, args)
        data |= keep.kept(app, inv.workload, inv.container)
        data["env"] = {}
        data.pop("probes", None)
        data["resources"] = _envelope_resources(app.chart.manifest.get("spec") or {}, data["resources"])
        notes.append("the chart's workload, objects and manifest fields kept as typed fields (workload, objects, olares)")
    if data["engine"].get("shared"):
        data.pop("selector", None)  # the shared form keeps the installed selector itself (Helm lookup)
    data["olares"] = {**(data.get("olares") or {}), **keep.carried(app)}
    if data["engine"].get("shared"):
        # the shared form's envelope is derived (the engine plus llm-init or each user's proxy): a
        # written copy would go stale with the next edit; and its manifest holds the installer's
        # template logic (the v2 form), which the kept keys cannot be written into as data. The
        # proof judges the render's own: a shared chart with keys of its own stays as written.
        for key in ("envelope", "appid", "metadata", "spec", "spec_absent", "top"):
            data["olares"].pop(key, None)
    typed = validate_data(data, f"{app.name} (typed)")
    if (tail := _script_tail(container, inv)) is not None and typed.engine.script is not None:  # type: ignore[union-attr]
        # the maintainer's text after the program stays as written while the typed arguments are
        # these (engines.container_args); the proof compares the script as text
        data["engine"] = {**data["engine"], "script_tail": tail, "script_argv": engines.script_words(typed)}
        typed = validate_data(data, f"{app.name} (typed)")
    if extra:
        notes.append(f"engine arguments the typed settings do not hold, kept as server.extra_args: {' '.join(extra)}")
    return typed, notes


def _llama_server(inv: Invocation, build: str) -> tuple[NormalizedArgs, dict[str, Any], set[str]]:
    """llama-server's arguments as typed settings, and the flags they hold."""
    reg = registry.resolve("llamacpp", build, "image tag").registry
    args = normalize_llama(inv.argv, reg, inv.env)
    flags = args.values()
    # a number the typed field would spell otherwise (`0.60`) stays in extra_args as written
    respelled = {f for f, field in _LLAMA.items() if f in flags and field not in ("alias", "host", "flash_attn", "jinja", "port")
                 and _respelled(flags[f])}
    server: dict[str, Any] = {field: _number(flags[f]) if field not in ("alias", "host", "flash_attn") else flags[f]
                              for f, field in _LLAMA.items() if f in flags and f not in respelled}
    if "jinja" in server:
        server["jinja"] = _flag(str(flags["--jinja"]))
    if "gpu_layers" in server and server["gpu_layers"] in ("-1", -1):
        server["gpu_layers"] = "all"
    server.setdefault("ctx_size", 0)
    if "--cache-type-k" in flags or "--cache-type-v" in flags:
        server["cache_type"] = {"k": flags.get("--cache-type-k", "f16"), "v": flags.get("--cache-type-v", "f16")}
    if "--spec-type" in flags:
        server["speculative"] = {field: _number(flags[f]) if field != "type" else flags[f] for f, field in _SPEC.items() if f in flags}
    if "--chat-template-kwargs" in flags:
        server["chat_template_kwargs"] = json.loads(flags["--chat-template-kwargs"])
    stated = {"--host", "--port", "--parallel", "--ctx-size", "--gpu-layers", "--flash-attn", "--cache-type-k", "--cache-type-v"}
    unset = sorted({"--gpu-layers": "--n-gpu-layers"}.get(f, f) for f in stated - set(flags))
    if unset:
        server["unset"] = unset
    used = {*_LLAMA, *_SPEC, "--cache-type-k", "--cache-type-v", "--chat-template-kwargs", "--model", "--hf-repo", "--hf-file"}
    return args, server, used - respelled


# typed settings the render may leave unset (server.unset): a flag of these written otherwise than
# the registry reads it stays in extra_args as written
_MOVABLE = {"--host": "host", "--port": "port", "--parallel": "parallel", "--ctx-size": "ctx_size",
            "--gpu-layers": "gpu_layers", "--flash-attn": "flash_attn"}


def _as_written(argv: list[str], build: str | None, args: NormalizedArgs,
                used: set[str]) -> tuple[list[str], list[str], list[str]]:
    """llama-server's arguments the typed settings do not hold, as written: (each flag group as
    one text for the report, the words). A typed flag written with more words than its setting
    holds (a value given to what the registry reads as a switch) cannot be typed without moving
    a word: InputError."""
    reg = registry.resolve("llamacpp", build, "image tag").registry
    head: list[str] = []
    groups: list[list[str]] = []
    for w in argv:
        if w.startswith("-") and w not in ("-", "--") and not re.fullmatch(r"-[0-9.]+", w):
            groups.append([w])
        elif groups:
            groups[-1].append(w)
        else:
            head.append(w)
    texts: list[str] = []
    words: list[str] = []
    moved: list[str] = []
    for g in groups:
        name = g[0].partition("=")[0] if g[0].startswith("--") else g[0]
        spec = reg.lookup(name)
        canonical = name if spec is None else spec.canonical
        if canonical in used:
            held = args.args.get(canonical)
            taken = 1 if held is None or "=" in g[0] else len(held.spelled.split(" ", 1))
            if len(g) <= taken:
                continue
            if canonical not in _MOVABLE:
                raise InputError(f"{' '.join(g)}: the flag registry of build {build} reads {g[0]} as taking "
                                 f"{taken - 1} word(s) and the chart gives it {len(g) - 1}: the typed setting would "
                                 f"move {' '.join(g[taken:])!r}")
            moved.append(canonical)  # not typed: kept as written, the typed setting left unset
        texts.append(" ".join(g))
        words += g
    return texts, words + head, moved


def _vllm_server(inv: Invocation) -> tuple[NormalizedArgs, dict[str, Any], set[str]]:
    """`vllm serve`'s arguments as typed settings, and the flags they hold."""
    args = normalize_generic(inv.argv[1:] if inv.argv[:1] == ["serve"] else inv.argv)
    flags = args.values()
    server: dict[str, Any] = {}
    # a number the typed field would spell otherwise (`0.60` is 0.6) stays in extra_args as written
    respelled = {f for f, field in _VLLM.items() if f in flags and field in _VLLM_NUMBERS and _respelled(flags[f])}
    for f, field in _VLLM.items():
        if f in flags and f not in respelled:
            server[field] = _flag(flags[f]) if field.startswith(("enable_", "trust_")) else (
                _number(flags[f]) if field in ("port", "max_model_len", "gpu_memory_utilization", "max_num_seqs",
                                               "max_num_batched_tokens") else flags[f])
    if "--speculative-config" in flags:
        server["speculative_config"] = json.loads(flags["--speculative-config"])
    if "--model" in flags and not [w for w in args.positional if w != "serve"]:
        server["model_flag"] = True  # `serve --model REPO`, as written
    return args, server, {*_VLLM, "--speculative-config", "--revision", "--download-dir", "--model"} - respelled


def _chart_fields(app: ChartApp, container: dict[str, Any], consumed: set[str]) -> dict[str, Any]:
    """What the chart's manifest and engine container say beyond the engine: resources, the
    entrance, env, probes, compute modes."""
    spec = app.chart.manifest.get("spec") or {}
    first = next((e for e in app.chart.manifest.get("entrances") or [] if isinstance(e, dict)), {})
    return {"resources": _resources(container, spec),
            "entrance": {"name": first.get("name"), "title": first.get("title") or app.title,
                         "auth_level": first.get("authLevel", "internal"), "open_method": first.get("openMethod", "window")},
            # a null value is no value (never the text "None"): left to the proof, which then finds
            # the entry missing
            "env": {e["name"]: str(e["value"]) for e in container.get("env") or []
                    if e.get("value") is not None and e["name"] not in consumed and not e["name"].startswith("OLARES_")},
            "probes": _probes(container),
            "modes": sorted({str(a.get("mode")) for a in spec.get("accelerator") or [] if a.get("mode") in ("nvidia", "cpu")})
            or ["nvidia"]}


_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


def _kept_model(model: dict[str, Any], inv: Invocation, args: NormalizedArgs) -> dict[str, Any]:
    """Who fetches the model of a chart of its own: the engine (llama.cpp's --hf-repo, vLLM given a
    repository id) or the chart's own step (the engine reads a path: model.path)."""
    flags = args.values()
    if inv.kind == "llamacpp":
        if flags.get("--hf-repo"):
            return {**model, "fetch": "engine"}
        if not flags.get("--model"):
            raise InputError("llama-server is given no --model and no --hf-repo")
        return {**model, "fetch": "chart", "path": flags["--model"]}
    served = args.positional[0] if args.positional else flags.get("--model", "")
    if _REPO_ID.fullmatch(served):
        return {**model, "repo": served, "fetch": "engine", "revision": flags.get("--revision", "main")}
    if not served.startswith("/"):
        raise InputError(f"vLLM serves {served!r}: neither a repository id nor a path")
    return {**model, "fetch": "chart", "path": served}


def _envelope_resources(spec: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
    """The typed resources of a chart whose container resources are kept as written: the
    manifest's envelope as declared (the installer's view), request and limit apart."""
    modes = [r for r in [*(spec.get("accelerator") or []), *(spec.get("resources") or [])] if isinstance(r, dict)]
    env = next((r for r in modes if r.get("mode") != "cpu"), spec)

    def pair(req: str, lim: str, default: str) -> dict[str, str]:
        r = env.get(req) or default
        return {"request": str(r), "limit": str(env.get(lim) or r)}

    out = {**resources, "cpu": pair("requiredCpu", "limitedCpu", resources["cpu"]["request"]),
           "memory": pair("requiredMemory", "limitedMemory", resources["memory"]["request"]),
           "disk": pair("requiredDisk", "limitedDisk", resources["disk"]["request"])}
    declared = _gpu_declared(spec)
    if declared is not None:
        out["gpu"] = {"request": declared[0], "limit": declared[1], "container": "none"}
    if out.get("gpu_memory_mib") == "auto":
        # a count of GPUs (requiredGpu: 1) names no memory: the whole GPU of the catalogue's device
        from olares_pack.vram.estimate import DEVICES

        out["gpu_memory_mib"] = DEVICES["olares-one"].total_mib
    return out


def generic(app: ChartApp) -> tuple[App, list[str]]:
    """The typed app of a per-user chart whose GPU server is neither llama.cpp nor vLLM (GenericApp):
    the GPU container's image, command and arguments, and what the chart says beyond them kept;
    InputError when the chart is no single GPU server."""
    from olares_pack.charts.objects import pod_spec
    from olares_pack.render import imported as chartrender

    m = app.chart.manifest
    if m.get("sharedEntrances") or any(isinstance(c, dict) and c.get("shared") for c in (m.get("spec") or {}).get("subCharts") or []):
        raise InputError("a shared chart (sharedEntrances, a shared sub-chart): the generic kind is per-user")
    objects = chartrender.objects(app)
    gpu = []
    for o in objects:
        if o.get("kind") != "Deployment":
            continue
        containers = [c for c in (pod_spec(o) or {}).get("containers") or [] if isinstance(c, dict)]
        # the GPU the installer injects (HAMi): into the container the annotation names, or a pod's only one
        inject = str(((o.get("metadata") or {}).get("annotations") or {}).get("applications.app.bytetrade.io/gpu-inject", ""))
        for c in containers:
            res = c.get("resources") or {}
            asked = {**(res.get("requests") or {}), **(res.get("limits") or {})}
            if any(k.startswith("nvidia.com/") for k in asked) or inject == c.get("name") or (
                    inject == "true" and len(containers) == 1):
                gpu.append((o, c))
    if len(gpu) != 1:
        raise InputError("no container is given a GPU (nvidia.com/gpu or gpumem, or the installer's gpu-inject for a "
                         "pod of one container): not a GPU server" if not gpu else
                         f"{len(gpu)} containers are given a GPU: the generic kind types one GPU server")
    dep, container = gpu[0]
    workload = f"Deployment/{(dep.get('metadata') or {}).get('name')}"
    image = str(container.get("image", ""))
    repo, tag = registry.image_parts(image, as_written=True)
    engine = {"kind": "generic", "image": {"repository": repo.lower(), "tag": tag or "latest",
                                           "digest": image.split("@", 1)[1] if "@" in image else None},
              "command": [str(w) for w in container["command"]] if container.get("command") else None,
              "args": [str(w) for w in container.get("args") or []]}
    spec = m.get("spec") or {}
    if any(isinstance(a, dict) and a.get("mode") == "cpu" for a in spec.get("accelerator") or []):
        raise InputError("a cpu mode beside nvidia: the generic kind is kept as the chart renders for the GPU")
    data: dict[str, Any] = {**app.model_dump(mode="json", exclude={"chart"}), "engine": engine, "modes": ["nvidia"],
                            "resources": _envelope_resources(spec, _resources(container, spec))}
    found = hfurls.model(hfurls.downloads(objects, workload))
    if found is not None:
        data["model"] = found
    data |= keep.kept(app, workload, str(container.get("name")))
    data["olares"] = {**data["olares"], **keep.carried(app)}
    selector = ((dep.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if selector:
        data["selector"] = {str(k): str(v) for k, v in selector.items()}
    return validate_data(data, f"{app.name} (typed)"), ["a GPU server olares-pack does not model, typed as the generic kind: "
                                                      "its image, command and arguments as written"]
