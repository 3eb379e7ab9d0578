"""`new` and `pin`: the commands that write an app manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from olares_pack.catalogue.repo import MANIFEST_FILE, Repo
from olares_pack.cli.args import app_folder, device
from olares_pack.cli.group import cli
from olares_pack.cli.options import apps_dir_option, device_options, lock_timeout_option
from olares_pack.cli.report import print_ladder
from olares_pack.common.errors import ExitCode, InputError

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App


@cli.command("pin")
@click.argument("app_refs", metavar="APP...", nargs=-1)
@click.option("--all", "all_apps", is_flag=True, help="Every app under --apps-dir.")
@click.option("--image", "only_image", is_flag=True, help="Only the engine image (tag → digest).")
@click.option("--model", "only_model", is_flag=True, help="Only the model (revision → commit, file sizes and sha256).")
@click.option("--dry-run", is_flag=True, help="Show the diff of app.yaml and model.lock.json; write nothing.")
@lock_timeout_option
@apps_dir_option
def pin_cmd(app_refs: tuple[str, ...], all_apps: bool, only_image: bool, only_model: bool, dry_run: bool,
            lock_timeout: float, apps_dir: Path) -> int:
    """Pin APP's engine image by digest (asked of its registry; linux/amd64 must be offered) and its
    model by commit (asked of Hugging Face), in app.yaml (comments and order kept) and
    model.lock.json. Every app is resolved before anything is written; any error writes nothing."""
    from olares_pack.apps import pin
    from olares_pack.catalogue import records
    from olares_pack.common import console
    from olares_pack.remote import oci
    if all_apps == bool(app_refs):
        raise click.UsageError("give APP... or --all")
    if only_image and only_model:
        raise click.UsageError("--image and --model exclude each other (neither: both)")
    repo = Repo.of_apps(apps_dir)
    with repo.open(write=not dry_run, timeout=lock_timeout, purpose="pin"):
        dirs = repo.app_dirs() if all_apps else [app_folder(r, apps_dir) for r in app_refs]
        plans = []
        with oci.RegistryClient() as client:
            for d in dirs:
                plans.append(pin.plan_pin(d, image=not only_model, model=not only_image, client=client,
                                          published=records.published_models(repo, d.name)))
        for plan in plans:
            for note in plan.notes:
                console.info(note)
            images = [c for c in (plan.image, *plan.helpers.values()) if c is not None]
            for change in (*images, plan.model):
                if change is not None:
                    console.info(f"{plan.app.name}: {change.describe()}")
            for image in images:
                if image.old_digest and image.old_digest != image.digest:
                    console.warn(f"{plan.app.name}: {image.repository}:{image.tag} moved from "
                                 f"{image.old_digest} to {image.digest}")
        if dry_run:
            text = "".join(p.diff(repo.root) for p in plans)
            if text:
                console.out.print(text, markup=False, highlight=False, end="")
            return ExitCode.OK
        for path in pin.write_pins(plans, repo):
            console.out.print(repo.rel(path), markup=False)
    if not any(p.changed for p in plans):
        console.info("already pinned; nothing to write")
    return ExitCode.OK


def online_check(app: App) -> list[tuple[str, str, str, str]]:
    """(rule, severity, path, message) of `--online`: what app.yaml pins still exists upstream."""
    from olares_pack.apps import pin
    return [(f.rule, f.severity, f.path, f.message) for f in pin.online_findings(app)]


@cli.command("new")
@click.argument("name")
@click.option("--hf", "hf_repo", required=True, metavar="OWNER/REPO", help="The Hugging Face repository of GGUF quants.")
@click.option("--revision", default="main", show_default=True, help="Branch, tag or commit to read (pinned to its commit).")
@click.option("--ctx", type=click.IntRange(min=1), help="Context size the quant must fit at (default: 32768, or the trained context if smaller).")
@click.option("--quant", help="Take this quant (e.g. Q4_K_M) instead of the largest that fits.")
@click.option("--engine", type=click.Choice(["llamacpp", "vllm"]), default="llamacpp", show_default=True,
              help="llamacpp: a repository of GGUF quants; vllm: a safetensors repository.")
@click.option("--image", help="Engine image REPOSITORY:TAG, pinned by digest (default: upstream llama.cpp's CUDA server "
              "image of the newest known build).")
@click.option("--draft", type=click.Choice(["mtp"]), help="Speculative decoding with the GGUF's MTP block (refused without one).")
@device_options
@click.option("--per-user", is_flag=True, help="One engine per user who installs it (engine.shared: false) instead of "
              "the shared form.")
@click.option("--llm-init-image", metavar="REPOSITORY:TAG", help="The shared form's llm-init image (default: the "
              "official charts' docker.io/beclab/llm-init).")
@click.option("--chown-image", metavar="REPOSITORY:TAG", help="The shared form's chown step image (default: the "
              "official charts' docker.io/beclab/aboveos-busybox).")
@click.option("--proxy-image", metavar="REPOSITORY:TAG", help="The shared form's per-user proxy on Olares 1.12.3-1.12.5 "
              "(llama.cpp; default: the official v2 charts' docker.io/beclab/aboveos-bitnami-openresty).")
@click.option("--dry-run", is_flag=True, help="Print the ladder and the pick; write nothing.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the ladder as a table; json: the ladder for scripts.")
@lock_timeout_option
@apps_dir_option
def new_cmd(name: str, hf_repo: str, revision: str, ctx: int | None, quant: str | None, engine: str, image: str | None,
            draft: str | None, device_name: str, gpu_mib: int | None, reserve_mib: int | None, per_user: bool,
            llm_init_image: str | None, chown_image: str | None, proxy_image: str | None, dry_run: bool, fmt: str,
            lock_timeout: float, apps_dir: Path) -> int:
    """Start app NAME from a Hugging Face repository: read every GGUF quant's header (range
    requests, never the weights), print the ladder (estimate at the context, headroom, verdict,
    largest context that fits), pick the largest quant that fits with a margin, and write
    apps/NAME/app.yaml and model.lock.json, pinned (model commit, image digest). Never overwrites.
    --engine vllm: a safetensors repository (config.json, the weights' sizes), with the GPU grant
    and --gpu-memory-utilization derived from the estimate."""
    from olares_pack.apps import new_llamacpp as newapp
    from olares_pack.apps import new_vllm as newvllm
    from olares_pack.apps.pin import new_image_digests
    from olares_pack.common import console
    from olares_pack.engines import registry
    from olares_pack.vram import budget, gguf_meta
    from olares_pack.vram import estimate as vram

    dev = device(device_name, gpu_mib, reserve_mib)
    app_dir = apps_dir / name
    if app_dir.exists():
        raise InputError(f"{app_dir}: already exists; `new` never overwrites an app (choose another NAME)")
    if image:
        image_repo, image_tag = registry.image_parts(image, as_written=True)
        if not image_tag:
            raise click.BadParameter(f"{image!r}: expected REPOSITORY:TAG", param_hint="--image")
    elif engine == "vllm":
        image_repo, image_tag = newvllm.UPSTREAM_IMAGE
    else:
        image_repo, image_tag = newapp.UPSTREAM_IMAGE, f"server-cuda-{registry.table_builds('llamacpp')[-1]}"
    helper_refs: dict[str, tuple[str, str]] | None = None
    if not per_user:
        from olares_pack.apps.manifest import CHOWN_IMAGE, LLM_INIT_IMAGE, PROXY_IMAGE

        helper_refs = {}
        # llm-init and its chown step (current target), the proxy client (legacy: a llama.cpp app
        # of `new` is written for both targets, a vLLM one for current only)
        wanted = [("llm_init", llm_init_image, LLM_INIT_IMAGE), ("chown_image", chown_image, CHOWN_IMAGE)]
        if engine != "vllm":
            wanted.append(("proxy_image", proxy_image, PROXY_IMAGE))
        for key, given, default in wanted:
            ref = registry.image_parts(given, as_written=True) if given else (default["repository"], default["tag"])
            if not ref[1]:
                raise click.BadParameter(f"{given!r}: expected REPOSITORY:TAG", param_hint=f"--{key.replace('_', '-')}")
            helper_refs[key] = ref
    elif llm_init_image or chown_image or proxy_image:
        raise click.UsageError("--llm-init-image, --chown-image and --proxy-image are the shared form's: not with --per-user")
    if engine == "vllm":
        if quant or draft:
            raise click.UsageError("--quant and --draft are for GGUF quants (--engine llamacpp)")
        vplan, pin = newvllm.plan(name, hf_repo, revision, ctx, dev, console.info)
        doc = {"name": name, "repo": hf_repo, "commit": vplan.commit, "ctx": vplan.est.ctx, "engine": "vllm",
               "device": {"name": dev.name, "total_mib": dev.total_mib, "reserve_mib": dev.reserve_mib}, **vplan.est.to_dict()}
        if fmt == "json":
            console.out.print_json(json.dumps(doc))
        else:
            console.out.print(f"{hf_repo}@{vplan.commit[:12]} on vLLM at --max-model-len {vplan.est.ctx} on {dev.name}: "
                              f"weights {doc['weights_mib']} MiB + KV {doc['kv_mib']} MiB + overhead {doc['overhead_mib']} MiB "
                              f"= {doc['total_mib']} MiB, headroom {doc['headroom_mib']} MiB, {doc['verdict']}; largest context "
                              f"that fits {doc['largest_ctx']}; --gpu-memory-utilization {doc['gpu_memory_utilization']} of "
                              f"{doc['gpu_memory_mib']} MiB", markup=False)
            for n in vplan.est.notes:
                console.out.print(f"  note: {n}", markup=False)
        if doc["verdict"] != "fits":
            raise InputError(f"{hf_repo}: does not fit at --ctx {vplan.est.ctx} on {dev.name}; the largest context that "
                             f"would fit: {doc['largest_ctx']}" if doc["largest_ctx"] else
                             f"{hf_repo}: the weights alone do not fit on {dev.name}")
        digest, helpers = new_image_digests(image_repo, image_tag, helper_refs, console.info)
        card = newapp.card_front_matter(hf_repo, pin)
        app_text = newvllm.app_yaml(vplan, pin, card, image_repo, image_tag, digest, helpers)
        lock = gguf_meta.Lock()
        lock.put_revision(pin.to_dict())
        return _write_new(apps_dir, app_dir, app_text, lock.dumps(), dry_run, lock_timeout)
    build = registry.tag_build(image_tag) or registry.table_builds("llamacpp")[-1]
    plan, pin = newapp.ladder(name, hf_repo, revision, ctx=ctx, quant=quant, draft_mtp=draft == "mtp", dev=dev,
                              progress=console.info, build=build)
    if fmt == "json":
        console.out.print_json(json.dumps(plan.to_dict()))
    else:
        print_ladder(plan)
    if plan.picked is None:
        best = max(plan.rows, key=lambda r: r["largest_ctx"])
        would = (f"; the largest context that would fit: {best['largest_ctx']} with {best['quant']}" if best["largest_ctx"]
                 else "; none fits even at 1024 tokens (a larger GPU)")
        raise InputError(f"{hf_repo}: {plan.reason} at --ctx-size {plan.server.ctx_size} on {dev.name}{would}")
    console.info(f"picked {plan.reason}")
    if plan.picked["verdict"] == "tight":
        console.warn(f"{plan.picked['quant']} fits by less than the estimate's uncertainty")
    one = vram.device()
    if dev != one:
        meta = next(m for m in plan.metas if m.file == plan.picked["file"])
        on_one = vram.estimate(meta, budget.settings_for(plan.server), one, build=build)
        if on_one.verdict == "does not fit":
            console.warn(f"{plan.picked['quant']} does not fit the {one.name} ({on_one.total_mib:,.0f} MiB): lint "
                         "checks the catalogue's device and will refuse it (vram.budget)")
    digest, helpers = new_image_digests(image_repo, image_tag, helper_refs, console.info)
    newapp.finish(plan, pin, app_dir / MANIFEST_FILE, image_repo=image_repo, image_tag=image_tag, digest=digest, build=build,
                  helpers=helpers)
    return _write_new(apps_dir, app_dir, plan.app_text, plan.lock_text, dry_run, lock_timeout)


def _write_new(apps_dir: Path, app_dir: Path, app_text: str, lock_text: str, dry_run: bool, lock_timeout: float) -> int:
    """app.yaml (parsed back as a manifest first) and model.lock.json, in one transaction."""
    from olares_pack.apps.load import parse_app
    from olares_pack.apps.new_llamacpp import write_app
    from olares_pack.common import console

    manifest = app_dir / MANIFEST_FILE
    parse_app(app_text, manifest, derive=False)
    if dry_run:
        console.out.print(app_text, markup=False, highlight=False, end="")
        return ExitCode.OK
    repo = Repo.of_apps(apps_dir)
    for path in write_app(repo, app_dir, app_text, lock_text, lock_timeout):
        console.info(f"wrote {repo.rel(path)}")
    console.info(f"next: olares-pack lint {app_dir} && olares-pack release {app_dir.name} --version 1.0.0 --dry-run")
    return ExitCode.OK
