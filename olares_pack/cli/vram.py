"""`vram`: the GPU memory an app needs."""

from __future__ import annotations

import json
from pathlib import Path

import click

from olares_pack.catalogue.repo import Repo
from olares_pack.cli.args import app_folder, device, resolve_app
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option, device_options
from olares_pack.cli.report import largest_ctx_lines, print_estimate
from olares_pack.common.errors import ExitCode, InputError


@cli.command("vram")
@click.argument("app_ref", metavar="APP")
@click.option("--version", "version", metavar="X.Y.Z", help="A published version (default: app.yaml).")
@click.option("--ctx", "ctxs", type=int, multiple=True, help="Context size(s) to estimate at (default: the app's). Repeatable.")
@device_options
@click.option("--largest-ctx", is_flag=True, help="Also answer: the largest context that fits.")
@click.option("--quants", is_flag=True, help="Also answer: which locked quant of this repo fits at this context.")
@click.option("--lock", is_flag=True, help="Read the GGUF header (Hugging Face range reads, or --gguf) into model.lock.json first.")
@click.option("--gguf", "gguf_file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A local GGUF file, or a header excerpt of one (--save-header), for --lock.")
@click.option("--save-header", type=click.Path(path_type=Path, dir_okay=False),
              help="With --gguf: also write the file's header excerpt (metadata and tensor table) here, to commit.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the terms as a table; json: for scripts (warnings listed too).")
@apps_dir_option
def vram_cmd(app_ref: str, version: str | None, ctxs: tuple[int, ...], device_name: str, gpu_mib: int | None,
             reserve_mib: int | None, largest_ctx: bool, quants: bool, lock: bool, gguf_file: Path | None,
             save_header: Path | None, fmt: str, apps_dir: Path) -> int:
    """Estimate the GPU memory APP needs at full context, term by term, and whether it fits.
    Exit 1 unless every verdict is `fits` (the verdict lint's vram.budget and `release` give)."""
    from olares_pack.apps.manifest import LlamaCppApp
    from olares_pack.catalogue import records
    from olares_pack.common import console
    from olares_pack.vram import budget, gate, gguf_meta, outcomes, verdict

    app_dir = app_folder(app_ref, apps_dir)
    repo = Repo.of_apps(apps_dir)
    app = records.app_of(records.read(repo, app_dir.name, version)) if version else resolve_app(app_ref, apps_dir)
    dev = device(device_name, gpu_mib, reserve_mib)
    if lock:
        if not isinstance(app, LlamaCppApp):
            raise InputError("--lock reads a GGUF header: llama.cpp apps only")
        had = app.model.files[0].sha256
        meta = budget.lock_model(app, app_dir, gguf_file)
        console.info(f"locked {meta.repo}/{meta.file}@{meta.revision} in {app_dir / gguf_meta.LOCK_FILE}")
        if meta.sha256 and had is None:
            console.info(f"{meta.file}: {meta.file_size} bytes, sha256 {meta.sha256}: recorded in app.yaml "
                         "(the engine starts only on these bytes)")
            app = resolve_app(app_ref, apps_dir)
    if save_header:
        if gguf_file is None:
            raise click.UsageError("--save-header needs --gguf FILE")
        from olares_pack.common import fsio

        fsio.write_bytes_atomic(save_header, gguf_meta.header_excerpt(gguf_file))
        console.info(f"wrote the header excerpt of {gguf_file.name} to {save_header}")
    estimates = [budget.app_estimate(app, app_dir, dev, c) for c in (ctxs or [None])]
    refs = gate.references(app_dir.parent, app.name, dev) if isinstance(app, LlamaCppApp) else []
    verdicts = [verdict.judge(e, refs, app.version) for e in estimates]
    from olares_pack.render.llmbase import edited_args_note

    if note := edited_args_note(app):
        for e in estimates:
            e.notes.append(note)
    extra: dict[str, object] = {}
    if isinstance(app, LlamaCppApp) and largest_ctx:
        extra["largest_ctx"] = budget.largest_contexts(app, app_dir, dev)
    if isinstance(app, LlamaCppApp) and quants:
        extra["quants"] = budget.quant_rows(app, app_dir, dev, ctxs[0] if ctxs else None)
    # what devices did with this version, where its app's records say it ran out of memory: set
    # beside the verdict at the version's own context on the device the records are from
    record_rows: list[dict[str, object]] = []
    if device_name == "olares-one" and gpu_mib is None and reserve_mib is None:
        found = outcomes.recorded(repo, app.name, app.version)
        if found:
            own = verdicts[0] if not ctxs else verdict.judge(budget.app_estimate(app, app_dir, dev, None), refs, app.version)
            record_rows = [o.to_dict(own.verdict) for o in found]
            extra["recorded_outcomes"] = record_rows
    if fmt == "json":

        doc = {"app": app.name, "version": app.version,
               "estimates": [e.to_dict() | v.to_dict() for e, v in zip(estimates, verdicts, strict=True)], **extra}
        console.out.print_json(json.dumps(doc))
    else:
        for v in verdicts:
            print_estimate(f"{app.name} {app.version}", v.estimate, v.verdict, v.reasons)
        for row in record_rows:
            console.out.print(f"  record: {row['recorded_in']}'s changelog (fix): {row['text']}", markup=False)
        if "largest_ctx" in extra:
            for line in largest_ctx_lines(extra["largest_ctx"]):  # type: ignore[arg-type]
                console.out.print(line, markup=False)
        for row in extra.get("quants", []):  # type: ignore[attr-defined]
            console.out.print(f"{row['file']}: {row['total_mib']} MiB, headroom {row['headroom_mib']} MiB, {row['verdict']}, "
                              f"largest context that fits {row['largest_ctx']}", markup=False)
    return ExitCode.OK if all(v.verdict == "fits" for v in verdicts) else ExitCode.FINDINGS
