"""`bench` and `history`: how a version performs, recorded and compared."""

from __future__ import annotations

import datetime as dt
import json
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from olares_pack.cli.args import app_folder, parse_date, resolve_app
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option
from olares_pack.common.errors import BenchFailure, ExitCode, InputError

if TYPE_CHECKING:
    from olares_pack.bench.gpu import GpuSampler
    from olares_pack.bench.harness import Client, Result, Server
    from olares_pack.bench.method import Method
    from olares_pack.bench.records import Soak


@cli.command("bench")
@click.argument("app_ref", metavar="APP")
@click.option("--endpoint", metavar="URL", help="The engine's OpenAI-compatible API: the app's URL on the device, or "
              "a port-forward (http://127.0.0.1:8000).")
@click.option("--version", "version", metavar="X.Y.Z", help="The version the endpoint serves (default: app.yaml's).")
@click.option("--runs", type=click.IntRange(min=1), default=10, show_default=True, help="Measured runs.")
@click.option("--warmups", type=click.IntRange(min=0), default=2, show_default=True, help="Warm-up runs, not counted.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=2000, show_default=True, help="Tokens generated a run.")
@click.option("--prompt-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The prompt (default: the Space Invaders HTML prompt of the example app's history).")
@click.option("--temperature", type=float, default=0.6, show_default=True, help="Sampling temperature of every request.")
@click.option("--top-p", type=float, default=0.95, show_default=True, help="Nucleus sampling: the probability mass kept.")
@click.option("--top-k", type=int, default=20, show_default=True, help="Sampling: the most likely tokens kept.")
@click.option("--min-p", type=float, default=0.0, show_default=True,
              help="Sampling: tokens below this share of the likeliest one's probability dropped.")
@click.option("--stop-at-eos", is_flag=True, help="Let runs end at the end-of-sequence token (default: every run "
              "generates --max-tokens).")
@click.option("--request-json", metavar="JSON", help="Extra fields merged into every request, e.g. '{\"seed\": 1}'.")
@click.option("--stall-timeout", type=float, default=120.0, show_default=True,
              help="Seconds without a byte from the server before the bench fails.")
@click.option("--fill", is_flag=True, help="Soak instead: drive the context in steps up to the version's --ctx-size, "
              "drafting active; any failed request or server exit fails it.")
@click.option("--fill-steps", type=click.IntRange(min=1), default=4, show_default=True,
              help="Soak steps: prompts of 1/N, 2/N ... N/N of the context.")
@click.option("--fill-tokens", type=click.IntRange(min=1), default=256, show_default=True,
              help="Tokens generated at each soak step.")
@click.option("--ctx-size", type=click.IntRange(min=1), help="Soak up to this context (default: the version's --ctx-size).")
@click.option("--gpu", is_flag=True, help="Sample GPU memory every 100 ms through NVML (nvidia-ml-py) and report the peak.")
@click.option("--gpu-index", type=int, default=0, show_default=True, help="NVML index of the GPU --gpu samples.")
@click.option("--record", is_flag=True, help="Append the result to apps/<name>/bench/<version>.json.")
@click.option("--device", "device_text", metavar="TEXT", help="The machine measured, for --record (default with "
              "--gpu: NVML's GPU name).")
@click.option("--synthetic-model", metavar="TEXT", help="For --record: the model served was synthetic (say which); "
              "its figures are never shown as the app's speed.")
@click.option("--note", default="", help="For --record: a note kept with the record.")
@click.option("--attach", "attachments", multiple=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="For --record: a raw output to commit beside the record (copied there). Repeatable.")
@click.option("--date", "date_text", metavar="YYYY-MM-DD", help="For --record: the measurement's date (default: today).")
@click.option("--from-json", "from_json", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Do not measure: record (with --record) the result `python3 -m olares_pack.bench` or `bench "
              "--format json` wrote elsewhere, once its runs agree with their server timings and its summary with its "
              "runs (exit 2 otherwise, nothing written).")
@click.option("--launch", "launch_binary", metavar="ENGINE_BINARY", type=click.Path(path_type=Path, dir_okay=False),
              help="Start this llama-server with the version's own argv and environment (its release record's, "
              "else app.yaml's), the model swapped for --model, wait for /health, measure, stop it.")
@click.option("--model", "model_file", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False),
              help="With --launch: the GGUF the engine serves instead of the chart's model path.")
@click.option("--sweep", "sweeps", multiple=True, metavar="'--FLAG=V1,V2'",
              help="With --launch: an engine flag to vary (checked against the pinned build's flag registry). "
              "Repeatable: the grid of all values, or --one-at-a-time.")
@click.option("--sweep-env", "sweep_envs", multiple=True, metavar="'NAME=V1,V2'",
              help="With --launch: an environment variable of the engine to vary (e.g. GGML_CUDA_PDL=0,1). Repeatable.")
@click.option("--one-at-a-time", is_flag=True, help="Change one swept flag or variable at a time from the version's "
              "own configuration, instead of the grid.")
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Sweep rounds: each configuration started, measured (--warmups, --runs) and stopped once a round, "
              "in an order rotating from round to round.")
@click.option("--experiment", "experiment", metavar="NAME", help="For --sweep --record: the experiment's name "
              "(apps/<name>/bench/experiments/NAME.json; `compare` reads it as NAME or NAME:CONFIGURATION).")
@click.option("--engine-log", "engine_log", type=click.Path(path_type=Path, file_okay=False),
              help="With --launch: the folder for the engine's logs, one per start (default: a new temporary folder).")
@click.option("--start-timeout", type=float, default=600.0, show_default=True,
              help="With --launch: seconds the engine has to answer /health.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The per-run table, or the result as JSON (what --from-json reads).")
@apps_dir_option
def bench_cmd(app_ref: str, endpoint: str | None, version: str | None, runs: int, warmups: int, max_tokens: int,
              prompt_file: Path | None, temperature: float, top_p: float, top_k: int, min_p: float, stop_at_eos: bool,
              request_json: str | None, stall_timeout: float, fill: bool, fill_steps: int, fill_tokens: int,
              ctx_size: int | None, gpu: bool, gpu_index: int, record: bool, device_text: str | None,
              synthetic_model: str | None, note: str, attachments: tuple[Path, ...], date_text: str | None,
              from_json: Path | None, launch_binary: Path | None, model_file: Path | None, sweeps: tuple[str, ...],
              sweep_envs: tuple[str, ...], one_at_a_time: bool, rounds: int, experiment: str | None,
              engine_log: Path | None, start_timeout: float, fmt: str, apps_dir: Path) -> int:
    """Measure APP's running engine (llama-server or vLLM) the same way every time: warm-ups, then
    runs of one prompt, figures as the server reports them. The table on stdout, progress on
    stderr. Exit 1 when the server errors, stalls or dies; 2 when the endpoint is no LLM server.
    With --launch, start the engine as the version's chart does; with --sweep, rank configurations
    around the version's own."""
    from olares_pack.bench import harness, report
    from olares_pack.bench.method import DEFAULT_PROMPT, DEFAULT_PROMPT_NAME, Method
    from olares_pack.common import console

    app_dir = app_folder(app_ref, apps_dir)
    app = resolve_app(app_ref, apps_dir)
    version = version or app.version
    if sum(x is not None for x in (endpoint, from_json, launch_binary)) != 1:
        raise click.UsageError("give --endpoint URL (measure a running engine), --launch ENGINE_BINARY --model FILE "
                               "(start it and measure) or --from-json FILE (record a result measured elsewhere)")
    sweeping = bool(sweeps or sweep_envs)
    if launch_binary is None and (model_file or sweeping or one_at_a_time or experiment or engine_log):
        raise click.UsageError("--model, --sweep, --sweep-env, --one-at-a-time, --experiment and --engine-log go with "
                               "--launch ENGINE_BINARY")
    if launch_binary is not None and model_file is None:
        raise click.UsageError("--launch ENGINE_BINARY needs --model FILE (the GGUF to serve)")
    if (one_at_a_time or experiment) and not sweeping:
        raise click.UsageError("--one-at-a-time and --experiment go with --sweep or --sweep-env")
    if sweeping and (fill or from_json):
        raise click.UsageError("--sweep measures runs: not with --fill")
    if sweeping and record and not experiment:
        raise click.UsageError("--sweep --record needs --experiment NAME: the file the sweep is recorded in")
    if from_json is not None and not record:
        raise click.UsageError("--from-json FILE records a result measured elsewhere: give --record (and --device)")
    if not record and (device_text or synthetic_model or note or attachments or date_text):
        raise click.UsageError("--device, --synthetic-model, --note, --attach and --date describe a record: give --record")
    extra = _extra(request_json)
    prompt = prompt_file.read_text(encoding="utf-8") if prompt_file else DEFAULT_PROMPT
    try:
        method = Method(runs, warmups, max_tokens, temperature, top_p, top_k, min_p, prompt,
                        prompt_file.name if prompt_file else DEFAULT_PROMPT_NAME, not stop_at_eos, extra)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    sampler: GpuSampler | None = None
    if gpu:
        from olares_pack.bench.gpu import GpuSampler

        sampler = GpuSampler(gpu_index)
    doc: dict[str, Any] | None = None
    checked: report.Checked | None = None
    if from_json is not None:
        checked = report.check_imported(_read_json(from_json), str(from_json))
        doc = checked.doc
    # everything a record needs is checked before a single request is sent
    asked = _RecordAsked(_device_of(device_text, sampler, doc), synthetic_model, note, attachments,
                         parse_date(date_text) if date_text else None) if record else None
    if asked is not None:
        asked.attached(version if not experiment else experiment)
    if launch_binary is not None:
        assert model_file is not None
        return _launched(app_dir, app.name, version, apps_dir, launch_binary, model_file, sweeps, sweep_envs,
                         one_at_a_time, rounds, experiment, engine_log, start_timeout, method, sampler, asked, fmt,
                         gpu_index, fill)
    if checked is not None:
        assert asked is not None
        import hashlib

        _record(app_dir, app.name, version, checked.doc, asked, tool=checked.tool, started=checked.started,
                ended=checked.ended, imported_sha256=hashlib.sha256(from_json.read_bytes()).hexdigest())
        return ExitCode.OK
    assert endpoint is not None
    client = harness.Client(endpoint, stall_timeout)
    server = harness.probe(client)
    console.info(f"{app.name} {version}: {server.kind} at {server.url}, model {server.model}"
                 + (f", build {server.build}" if server.build else ""))
    if fill:
        return _soak(app_dir, app.name, version, client, server, method, ctx_size, fill_steps, fill_tokens,
                     sampler, asked, fmt, apps_dir)
    with sampler or nullcontext():
        result = harness.bench(client, method, console.info, server)
    _show_and_record(result, sampler, fmt, asked, app_dir, app.name, version)
    return ExitCode.OK


def _show_and_record(result: Result, sampler: GpuSampler | None, fmt: str, asked: _RecordAsked | None,
                     app_dir: Path, name: str, version: str) -> None:
    """A measured result printed (JSON or table) and, with --record, kept with its own times."""
    from olares_pack.bench import report
    from olares_pack.common import console

    doc = report.result_json(result, sampler.peak_mib if sampler else None, sampler.name if sampler else None)
    if fmt == "json":
        console.out.print_json(json.dumps(doc))
    else:
        _print_table(result, sampler)
    if asked is not None:
        _record(app_dir, name, version, doc, asked, tool=report.TOOL,
                started=dt.datetime.fromisoformat(result.started) if result.started else None,
                ended=dt.datetime.fromisoformat(result.ended) if result.ended else None)


class _RecordAsked:
    """What --record was asked to write beside the figures, checked before anything is measured."""

    def __init__(self, device: str, synthetic_model: str | None, note: str, attachments: tuple[Path, ...],
                 date: dt.date | None) -> None:
        self.device, self.synthetic_model, self.note, self.attachments = device, synthetic_model, note, attachments
        self.date = date or dt.date.today()
        self.kept: list[str] = []

    def attached(self, version: str) -> None:
        self.kept = [f"{version}.raw/{a.name}" for a in self.attachments]  # a folder: *.json beside are records
        if len(set(self.kept)) != len(self.kept):
            raise click.UsageError("--attach: two files of the same name")


def _device_of(device_text: str | None, sampler: GpuSampler | None, doc: dict[str, Any] | None) -> str:
    gpu = (doc or {}).get("gpu") if isinstance((doc or {}).get("gpu"), dict) else None
    name = device_text or (sampler.name if sampler is not None else None) or (gpu or {}).get("name")
    if not name:
        raise click.UsageError("--record needs --device TEXT: the machine measured (e.g. 'Olares One (RTX 5090 Laptop "
                               "GPU, 24 GB)'); nothing was measured or written")
    return str(name)


def _extra(request_json: str | None) -> dict[str, object]:
    if not request_json:
        return {}
    try:
        extra = json.loads(request_json)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--request-json") from None
    if not isinstance(extra, dict):
        raise click.BadParameter("expected a JSON object", param_hint="--request-json")
    return extra


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not JSON ({exc})") from None


def _print_table(result: Result, sampler: GpuSampler | None) -> None:
    from rich.table import Table

    from olares_pack.bench import report
    from olares_pack.common import console

    table = Table(*report.HEADERS)
    for row in report.table_rows(result):
        table.add_row(*row)
    console.out.print(table)
    if sampler is not None:
        console.out.print(f"GPU memory peak: {sampler.peak_mib:.0f} MiB ({sampler.name})", markup=False)


def _record(app_dir: Path, name: str, version: str, doc: dict[str, Any], asked: _RecordAsked, *, tool: str,
            started: dt.datetime | None, ended: dt.datetime | None, soak: Soak | None = None,
            imported_sha256: str = "") -> None:
    """Append the result as a measured (or synthetic) record: the tool, times and server facts are
    the result's own, never the name of the file it came in."""
    import shutil

    from pydantic import ValidationError

    from olares_pack.bench import records
    from olares_pack.common import console

    gpu = doc.get("gpu") if isinstance(doc.get("gpu"), dict) else None
    folder = records.path_of(app_dir, version).parent
    try:
        runs = [records.RunFigures(**r) for r in doc["runs"]]
        rec = records.Record(
            date=asked.date, source=records.BENCH_SOURCE, kind="synthetic" if asked.synthetic_model else "measured",
            tool=tool, model_file=doc.get("model_file"), started=started, ended=ended,
            device=asked.device, synthetic_model=asked.synthetic_model, engine=doc.get("engine"),
            engine_build=doc.get("engine_build"), method=records.MethodRecord(**doc["method"]),
            runs=runs, stability=records.run_stability(runs), soak=soak, note=asked.note, attachments=asked.kept,
            peak_gpu_mib=(gpu or {}).get("peak_mib") if soak is None else None, imported_sha256=imported_sha256)
    except (ValidationError, TypeError) as exc:
        raise InputError(f"the result does not make a valid record: {exc}") from None
    for a, k in zip(asked.attachments, asked.kept, strict=True):
        (folder / k).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(a, folder / k)
    path = records.append(app_dir, name, version, rec)
    console.info(f"recorded in {path}" + (f", imported from a file of SHA-256 {imported_sha256} (not measured by this "
                                          "olares-pack: labelled imported)" if imported_sha256 else ""))


def _soak(app_dir: Path, name: str, version: str, client: Client, server: Server, method: Method, ctx_size: int | None,
          steps: int, gen_tokens: int, sampler: GpuSampler | None, asked: _RecordAsked | None, fmt: str,
          apps_dir: Path) -> int:
    from olares_pack.bench import records, report, soak
    from olares_pack.bench.harness import utc_now
    from olares_pack.common import console

    estimate_mib, app_ctx = soak.estimate(app_dir, version, apps_dir)
    ctx = ctx_size or app_ctx
    if ctx is None:
        raise click.UsageError(f"{name} {version} sets no --ctx-size: give --ctx-size")
    started = utc_now()
    try:
        with sampler or nullcontext():
            res = soak.fill(client, server, method, ctx, steps, gen_tokens, console.info)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    peak = sampler.peak_mib if sampler is not None else None
    outcome = records.Soak(outcome="passed" if res.passed else "failed", ctx_size=ctx, filled_to=res.filled_to,
                           peak_gpu_mib=round(peak, 1) if peak is not None else None,
                           estimate_mib=round(estimate_mib, 1) if estimate_mib is not None else None,
                           message=res.failure or "")
    doc = {"soak": outcome.model_dump(mode="json"), "steps": res.steps, "runs": [r.to_dict() for r in res.done]}
    if fmt == "json":
        console.out.print_json(json.dumps(doc))
    else:
        console.out.print(f"soak {'passed' if res.passed else 'FAILED'}: {len(res.done)} of {len(res.steps)} steps, "
                          f"context filled to {res.filled_to or 0} of {ctx} tokens", markup=False)
        peak_text = f"{peak:.0f} MiB" if peak is not None else "not sampled (--gpu)"
        est_text = f"{estimate_mib:.0f} MiB" if estimate_mib is not None else "—"
        console.out.print(f"GPU memory peak {peak_text}; vram's estimate for {name} {version}: {est_text}", markup=False)
    if res.failure:
        console.error(res.failure)
    if asked is not None:
        server_doc = {"engine": server.kind, "engine_build": server.build, "model_file": server.model_file,
                      "method": method.to_record(), "runs": []}
        _record(app_dir, name, version, server_doc, asked, tool=report.TOOL, started=dt.datetime.fromisoformat(started),
                ended=dt.datetime.fromisoformat(utc_now()), soak=outcome)
    return ExitCode.OK if res.passed else ExitCode.FINDINGS


def _launched(app_dir: Path, name: str, version: str, apps_dir: Path, binary: Path, model: Path,
              sweeps: tuple[str, ...], sweep_envs: tuple[str, ...], one_at_a_time: bool, rounds: int,
              experiment: str | None, engine_log: Path | None, start_timeout: float, method: Method,
              sampler: GpuSampler | None, asked: _RecordAsked | None, fmt: str, gpu_index: int, fill: bool) -> int:
    """--launch: everything checked before the engine starts (exit 2), then one bench or a sweep."""
    import tempfile

    from olares_pack.bench import experiments, launch, sweep
    from olares_pack.common import console

    if fill:
        raise click.UsageError("--fill soaks a running engine: give --endpoint")
    launch.check_binary(binary)
    launch.check_model(model)
    if experiment:
        experiments.check_name(experiment)
    inv = launch.invocation(app_dir, version, apps_dir)
    reg = launch.registry_of(inv.build)
    axes = [sweep.parse_axis(t, reg, env=False) for t in sweeps] + [sweep.parse_axis(t, None, env=True) for t in sweep_envs]
    if len({a.name for a in axes}) != len(axes):
        raise click.UsageError("--sweep/--sweep-env: one flag or variable given twice")
    logs = engine_log or Path(tempfile.mkdtemp(prefix="olares-pack-engine-"))
    console.info(f"{name} {version}: starting {binary} as the version's chart does (flags of llama-server "
                 f"{reg.build}); engine logs in {logs}")
    if not axes:
        argv = launch.argv_of(inv, reg, model, launch.free_port(), launch.Config(sweep.OWN, baseline=True))
        engine = launch.Engine(binary, argv, inv.env, logs / "engine.log", start_timeout)
        from olares_pack.bench import harness

        with engine:
            client = harness.Client(engine.url)
            server = harness.probe(client)
            try:
                with sampler or nullcontext():
                    result = harness.bench(client, method, console.info, server)
            except BenchFailure as exc:
                raise engine.failure(exc) from None
        _show_and_record(result, sampler, fmt, asked, app_dir, name, version)
        return ExitCode.OK
    configs = sweep.configurations(axes, inv, reg, one_at_a_time)
    design = "one-at-a-time" if one_at_a_time else "grid"
    console.info(f"{len(configs)} configurations ({design}), {rounds} round(s) of {method.warmups} warm-up(s) and "
                 f"{method.runs} run(s) each")
    make_sampler = None
    if sampler is not None:
        from olares_pack.bench.gpu import GpuSampler

        def make_sampler() -> GpuSampler:
            return GpuSampler(gpu_index)

    res = sweep.run(binary, model, inv, reg, configs, method, rounds, logs, console.info, make_sampler, design,
                    start_timeout)
    doc = sweep.to_json(res, inv, reg)
    if fmt == "json":
        console.out.print_json(json.dumps(doc, ensure_ascii=False))
    else:
        from rich.table import Table

        table = Table(*sweep.HEADERS, title=f"{name} {version}: {design}, {rounds} round(s)")
        for row in sweep.table_rows(res):
            table.add_row(*row)
        console.out.print(table)
        for line in sweep.best_diff(res, inv, reg):
            console.out.print(line, markup=False, highlight=False)
    if asked is not None:
        assert experiment is not None
        _record_experiment(app_dir, name, version, experiment, res, doc, asked)
    return ExitCode.OK if any(r.runs for r in res.rows) else ExitCode.FINDINGS


def _record_experiment(app_dir: Path, name: str, version: str, experiment: str, res: Any, doc: dict[str, Any],
                       asked: _RecordAsked) -> None:
    import shutil

    from pydantic import ValidationError

    from olares_pack.bench import experiments, records, report
    from olares_pack.common import console

    server = res.server
    # the engine's own log of every start goes with the record, beside the files --attach names
    ef = experiments.read(app_dir, experiment)
    n = len(ef.records) if ef else 0
    logs = {log: f"{experiment}.raw/{n}/{log.name}" for log in res.logs if log.is_file()}
    try:
        rec = experiments.ExperimentRecord(
            date=asked.date, kind="synthetic" if asked.synthetic_model else "measured", tool=report.TOOL,
            version=version, device=asked.device, synthetic_model=asked.synthetic_model,
            engine=server.kind if server else None, engine_build=server.build if server else None,
            model_file=server.model_file if server else None,
            started=dt.datetime.fromisoformat(res.started) if res.started else None,
            ended=dt.datetime.fromisoformat(res.ended) if res.ended else None, design=res.design, rounds=res.rounds,
            method=records.MethodRecord(**res.method.to_record()),
            configurations=[experiments.Configuration(
                label=c["label"], baseline=c["baseline"], args=c["args"], env=c["env"],
                runs=[records.RunFigures(**r) for r in c["runs"]], rounds=c["rounds"], failed=c["failed"] or "",
                peak_gpu_mib=round(c["peak_gpu_mib"], 1) if c["peak_gpu_mib"] is not None else None)
                for c in doc["configurations"]],
            note=asked.note, attachments=[*asked.kept, *logs.values()])
    except (ValidationError, TypeError) as exc:
        raise InputError(f"the sweep does not make a valid experiment record: {exc}") from None
    folder = experiments.folder(app_dir)
    for a, k in [*zip(asked.attachments, asked.kept, strict=True), *logs.items()]:
        (folder / k).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(a, folder / k)
    path = experiments.append(app_dir, name, experiment, rec)
    console.info(f"recorded in {path}")


@cli.command("history")
@click.argument("app_ref", metavar="APP")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True,
              help="A table per device as text, markdown (for a README) or JSON.")
@click.option("--picture", type=click.Path(path_type=Path, dir_okay=False),
              help="Also draw the history as SVG (tokens/s and acceptance per version): this file for one device; "
              "with several, one file per device beside it (NAME.<device>.svg).")
@click.option("--device", "device_filter", metavar="TEXT", help="Only the devices whose name contains TEXT.")
@apps_dir_option
def history_cmd(app_ref: str, fmt: str, picture: Path | None, device_filter: str | None, apps_dir: Path) -> int:
    """The performance history of APP from its bench records: version, what changed, tokens/s,
    acceptance, delta to the previous version, stability, and whether the figures were measured,
    transcribed from published notes, or taken on a synthetic model; one table per device. A
    published version whose engine changed without a measured record is a row without figures."""
    from rich.table import Table

    from olares_pack.bench import gaps, history, records
    from olares_pack.bench import picture as pic
    from olares_pack.bench.changed import what_changed
    from olares_pack.catalogue.repo import Repo
    from olares_pack.common import console, fsio

    app_dir = app_folder(app_ref, apps_dir)
    app = resolve_app(app_ref, apps_dir)
    versions = records.versions(app_dir)
    repo = Repo.of_apps(apps_dir)
    notes, missing = gaps.release_notes(repo, app_dir)
    if not versions and not missing:
        raise InputError(f"{app.name}: no bench records in {records.path_of(app_dir, 'X').parent} "
                         "(olares-pack bench --record)")
    changed = what_changed(repo, app_dir, sorted({*versions, *missing}, key=_semver))
    tabs = [t for t in history.tables(app_dir, changed, history.unshipped_versions(app_dir), notes, missing)
            if not device_filter or device_filter.lower() in t.device.lower()]
    if not tabs:
        raise InputError(f"{app.name}: no records of a device matching {device_filter!r}")
    if fmt == "json":
        console.out.print_json(json.dumps(history.to_json(app.name, tabs), ensure_ascii=False))
    elif fmt == "markdown":
        console.out.print(history.to_markdown(app.name, tabs), markup=False, highlight=False)
    else:
        for t in tabs:
            table = Table(*history.HEADERS, title=f"{app.name} on {t.device}")
            for row in t.rows:
                table.add_row(*history.cells(row))
            console.out.print(table)
        for line in history.LEGEND:
            console.out.print(f"- {line}", markup=False, highlight=False)
        if src := history.sources(tabs):
            console.out.print("Transcribed figures come from:", markup=False, highlight=False)
            for line in src:
                console.out.print(f"- {line}", markup=False, highlight=False)
    if picture is not None:
        for path, t in pic.files(picture, tabs):
            fsio.write_text_atomic(path, pic.svg(app.name, t))
            console.info(f"wrote {path} ({t.device})")
    return ExitCode.OK


def _semver(v: str) -> object:
    from olares_pack.common import versions as appver

    return appver.parse(v)


@cli.command("compare")
@click.argument("app_ref", metavar="APP")
@click.argument("a_ref", metavar="A")
@click.argument("b_ref", metavar="B")
@click.option("--allow-method-change", is_flag=True, help="Compare even when the two were measured differently "
              "(prompt, generated tokens, sampling, device, engine build, model file); the output says so.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The comparison in words, or as JSON.")
@apps_dir_option
def compare_cmd(app_ref: str, a_ref: str, b_ref: str, allow_method_change: bool, fmt: str, apps_dir: Path) -> int:
    """Is B faster or slower than A, or within noise? A and B are versions of APP with bench
    records, or experiments (NAME: its best configuration; NAME:LABEL: one configuration).
    Generation tokens/s and draft acceptance from the per-run figures, by Welch's t-test with a
    95 % confidence interval of B − A. A side without per-run figures (a single published figure)
    cannot tell. Exit 1 when the two were measured differently, unless --allow-method-change."""
    from olares_pack.bench import compare
    from olares_pack.common import console

    app_dir = app_folder(app_ref, apps_dir)
    resolve_app(app_ref, apps_dir)
    a, b = compare.side_of(app_dir, a_ref), compare.side_of(app_dir, b_ref)
    res = compare.compare(a, b, allow_method_change)
    if res.differences and not allow_method_change:  # a refusal, with or without figures to test (the docs' exit 1)
        console.error(f"{a.label} and {b.label} were measured differently: " + "; ".join(res.differences)
                      + " (--allow-method-change compares them anyway, labelled)")
        return ExitCode.FINDINGS
    if fmt == "json":
        console.out.print_json(json.dumps(res.to_dict(), ensure_ascii=False))
    else:
        for line in compare.lines(res):
            console.out.print(line, markup=False, highlight=False)
    return ExitCode.OK
