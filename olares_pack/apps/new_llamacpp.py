"""`olares-pack new`: a Hugging Face repository of GGUF quants → an app that fits the GPU.

The repository's files and commit come from hub.resolve_model; each quant's GGUF header (every
part of a split file: each part holds its own share of the tensor table) is read through range
requests (hub.open_file), never the weights. The ladder is budget.quant_row on the same ModelMeta
that model.lock.json then holds, so `vram APP --quants` on the written app gives the same numbers.
The app.yaml is written as text (commented like the bundled apps) and parsed back as a manifest
before anything is written; both files land in one transaction.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.apps.load import parse_app
from olares_pack.apps.manifest import LlamaServer, Speculative
from olares_pack.common.errors import InputError
from olares_pack.remote import hub
from olares_pack.vram import budget, gguf_meta
from olares_pack.vram import estimate as vram

if TYPE_CHECKING:
    from olares_pack.catalogue.repo import Repo

UPSTREAM_IMAGE = "ghcr.io/ggml-org/llama.cpp"  # upstream's CUDA server images are tagged server-cuda-bNNNN
DEFAULT_CTX = 32768
SPLIT_RE = re.compile(r"^(?P<base>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")
QUANT_RE = re.compile(r"(?:^|[-_.])((?:UD-)?(?:I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32|MXFP4(?:_MOE)?))$", re.IGNORECASE)
DRAFT_N_MAX = 3  # upstream's default since ggml-org/llama.cpp PR #23269


@dataclass(frozen=True)
class Candidate:
    """One quant: a GGUF file, or the parts of a split one (llama.cpp loads the first part)."""

    quant: str
    parts: tuple[hub.HubFile, ...]

    @property
    def name(self) -> str:
        return self.parts[0].path

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)


def quant_of(path: str) -> str:
    stem = SPLIT_RE.sub(r"\g<base>.gguf", path.rsplit("/", 1)[-1]).removesuffix(".gguf")
    m = QUANT_RE.search(stem)
    return m.group(1).upper() if m else stem


def candidates(pin: hub.ModelPin) -> list[Candidate]:
    """The repository's GGUF models, a split file as one, vision projectors (mmproj) left out;
    smallest first."""
    singles: list[Candidate] = []
    splits: dict[str, dict[int, hub.HubFile]] = {}
    counts: dict[str, int] = {}
    for f in pin.files:
        base = f.path.rsplit("/", 1)[-1]
        if not base.endswith(".gguf") or "mmproj" in base.lower():
            continue
        m = SPLIT_RE.match(f.path)
        if m:
            splits.setdefault(m["base"], {})[int(m["i"])] = f
            counts[m["base"]] = int(m["n"])
        else:
            singles.append(Candidate(quant_of(f.path), (f,)))
    for base, parts in splits.items():
        if sorted(parts) != list(range(1, counts[base] + 1)):
            raise InputError(f"{pin.repo}@{pin.commit}: {base}.gguf is split in {counts[base]} parts but the repository "
                             f"has parts {', '.join(map(str, sorted(parts)))}")
        singles.append(Candidate(quant_of(parts[1].path), tuple(parts[i] for i in sorted(parts))))
    if not singles:
        raise InputError(f"{pin.repo}@{pin.commit}: no GGUF file in the repository (llama.cpp needs one; "
                         "a safetensors repository is for vLLM)")
    return sorted(singles, key=lambda c: (c.size, c.name))


def read_meta(repo: str, cand: Candidate, commit: str, progress: Callable[[str], None]) -> gguf_meta.ModelMeta:
    """The budget's numbers from the headers of every part (a few MiB each, by range requests)."""
    first: dict[str, Any] = {}
    tensors: dict[str, int] = {}
    for i, part in enumerate(cand.parts, 1):
        with hub.open_file(repo, part.path, commit) as f:
            try:
                meta, part_tensors = gguf_meta.read_header(f)
            except (ValueError, struct.error) as exc:
                raise InputError(f"{repo}/{part.path}@{commit}: not a readable GGUF header: {exc}") from None
            read = f.tell()
        progress(f"read the header of {part.path}" + (f" (part {i} of {len(cand.parts)})" if len(cand.parts) > 1 else "")
                 + f": {_human(read)} of {_human(part.size)}")
        first = first or meta
        tensors.update(part_tensors)
    m = gguf_meta.meta_from(first, tensors)
    m.file_size, m.repo, m.file, m.revision = cand.size, repo, cand.name, commit
    return m


def card_front_matter(repo: str, pin: hub.ModelPin) -> dict[str, Any]:
    """The YAML front matter of the model card (README.md), {} when there is none."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    card = pin.file("README.md")
    if card is None or card.size > 1 << 20:
        return {}
    with hub.open_file(repo, "README.md", pin.commit) as f:
        text = f.read().decode("utf-8", errors="replace")
    m = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.DOTALL)
    if not m:
        return {}
    try:
        data = YAML(typ="safe").load(m.group(1))
    except YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


# ---------------------------------------------------------------- the plan


@dataclass
class NewPlan:
    name: str
    repo: str
    commit: str
    device: vram.Device
    server: LlamaServer
    rows: list[dict[str, Any]]  # the ladder: budget.quant_row + quant, parts
    picked: dict[str, Any] | None
    reason: str
    metas: list[gguf_meta.ModelMeta] = field(default_factory=list)
    app_text: str = ""
    lock_text: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "repo": self.repo, "commit": self.commit, "ctx": self.server.ctx_size,
                "device": {"name": self.device.name, "total_mib": self.device.total_mib, "reserve_mib": self.device.reserve_mib},
                "ladder": self.rows, "picked": self.picked["file"] if self.picked else None, "reason": self.reason,
                "notes": self.notes}


def server_for(name: str, ctx: int, draft_mtp: bool) -> LlamaServer:
    """The llama-server settings the estimate and the app share: one slot, everything on the GPU,
    flash attention, f16 KV cache (llama.cpp's default), ubatch 512."""
    return LlamaServer(port=8000, alias=name, ctx_size=ctx, parallel=1, gpu_layers="all", flash_attn="on",
                       batch_size=512, ubatch_size=512, jinja=True,
                       speculative=Speculative(type="draft-mtp", draft_n_max=DRAFT_N_MAX) if draft_mtp else None)


def pick(rows: list[dict[str, Any]], sizes: dict[str, int], ctx: int) -> tuple[dict[str, Any] | None, str]:
    """The largest quant (by weights) whose verdict is `fits`: its headroom exceeds the
    estimate's uncertainty, the margin."""
    fitting = [r for r in rows if r["verdict"] == "fits"]
    if not fitting:
        return None, "no quant fits with a margin"
    best = max(fitting, key=lambda r: (sizes[r["file"]], r["file"]))
    return best, (f"{best['quant']}: the largest quant that fits at --ctx-size {ctx}: {best['total_mib']} MiB, headroom "
                  f"{best['headroom_mib']} MiB > the estimate's uncertainty ±{best['uncertainty_mib']} MiB")


def ladder(name: str, repo: str, revision: str, *, ctx: int | None, quant: str | None, draft_mtp: bool,
           dev: vram.Device, progress: Callable[[str], None], build: str | None = None) -> tuple[NewPlan, hub.ModelPin]:
    """Read every quant's header and estimate each at the context on the engine build the app will
    run; pick one (or take `quant`) by the gates' verdict (budget.quant_row)."""
    pin = hub.resolve_model(repo, revision)
    cands = candidates(pin)
    if quant is not None:
        chosen = [c for c in cands if quant.upper() in (c.quant.upper(), c.name.upper())]
        if not chosen:
            raise InputError(f"{repo}@{pin.commit}: no quant {quant!r} (quants: {', '.join(c.quant for c in cands)})")
    progress(f"{repo}@{pin.commit}: {len(cands)} GGUF model(s); reading their headers (range requests, not the weights)")
    metas = [read_meta(repo, c, pin.commit, progress) for c in cands]
    # the ladder in order of weights (a file's size also counts its tokenizer and metadata)
    order = sorted(range(len(cands)), key=lambda i: (metas[i].tensor_bytes, cands[i].name))
    cands, metas = [cands[i] for i in order], [metas[i] for i in order]
    if draft_mtp:
        with_mtp = [(c, m) for c, m in zip(cands, metas, strict=True) if m.nextn_predict_layers > 0 and m.nextn_bytes > 0]
        if not with_mtp:
            raise InputError(f"{repo}@{pin.commit}: --draft mtp needs a GGUF with MTP (NextN) tensors; none of "
                             f"{', '.join(c.name for c in cands)} has them")
        cands, metas = [c for c, _ in with_mtp], [m for _, m in with_mtp]
    trained = max(m.context_length for m in metas)
    want_ctx = ctx if ctx is not None else min(DEFAULT_CTX, trained)
    if want_ctx > trained:
        raise InputError(f"--ctx {want_ctx}: larger than the model's trained context, {trained}")
    server = server_for(name, want_ctx, draft_mtp)
    s = budget.settings_for(server)
    rows = []
    for c, m in zip(cands, metas, strict=True):
        rows.append({"quant": c.quant, "parts": len(c.parts), **budget.quant_row(m, s, dev, build)})
    sizes = {m.file or "": m.tensor_bytes for m in metas}
    if quant is not None:
        row = next((r for r in rows if quant.upper() in (r["quant"].upper(), str(r["file"]).upper())), None)
        if row is None:
            raise InputError(f"{repo}@{pin.commit}: --quant {quant} has no MTP tensors; --draft mtp needs them "
                             f"(with them: {', '.join(r['quant'] for r in rows)})")
        picked, reason = row, f"{row['quant']}: asked for (--quant); {row['verdict']} at --ctx-size {want_ctx}"
        if row["verdict"] == "does not fit":
            picked, reason = None, f"{row['quant']} does not fit at --ctx-size {want_ctx}"
    else:
        picked, reason = pick(rows, sizes, want_ctx)
    return NewPlan(name, repo, pin.commit, dev, server, rows, picked, reason, metas), pin


# ---------------------------------------------------------------- the app.yaml


def _human(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def yaml_scalar(v: object) -> str:
    """A YAML scalar: JSON strings are YAML."""
    return json.dumps(v, ensure_ascii=False)


def gib_up(n: int) -> int:
    return -(-n // 2**30)


def title_of(repo: str) -> str:
    base = repo.split("/")[-1]
    base = re.sub(r"[-_.]?GGUF$", "", base, flags=re.IGNORECASE).replace("-", " ").replace("_", " ").strip() or base
    return base[:30].rstrip()


def listing_lines(repo: str, page: str, source_code: str, card: dict[str, Any]) -> list[str]:
    """The store listing's fields after the texts: icon, category, developer, links, and the
    license from the model card's front matter when it names one."""
    lines = ["# The icon of the bundled apps: replace it with the model's own.",
             "icon: https://app.cdn.olares.com/appstore/llm/llamacpp/qwen.png",
             "categories: [AI]",
             f"developer: {yaml_scalar(repo.split('/')[0])}",
             f"website: {yaml_scalar(page)}",
             f"source_code: {source_code}"]
    lic = card.get("license")
    lic = lic[0] if isinstance(lic, list) and lic else lic
    if isinstance(lic, str) and lic.strip():
        link = card.get("license_link")
        url = link if isinstance(link, str) and link.startswith(("https://", "http://")) else page
        lines += ["license:  # from the model card's front matter", f"  - text: {yaml_scalar(lic.strip())}", f"    url: {yaml_scalar(url)}"]
    return lines


def entrance_lines(title: str) -> list[str]:
    """The API entrance (internal, opened in a window) and the probes' path, as both engines serve it."""
    return ["entrance:", f"  title: {yaml_scalar(title)}", "  auth_level: internal", "  open_method: window", "",
            "probes:", "  path: /health"]


def engine_form_lines(helpers: dict[str, tuple[str, str, str]] | None) -> list[str]:
    """engine.shared and the shared form's helper images (field -> repository, tag, digest)."""
    if helpers is None:
        return ["  shared: false  # one engine per user who installs it (--per-user)"]
    lines = ["  # the shared form (one engine for every user of the device) runs helper images beside the",
             "  # engine, pinned like it: llm-init and its chown step (1.12.6+), the proxy client (1.12.3-1.12.5)"]
    for key, (repo, tag, digest) in helpers.items():
        lines.append(f"  {key}: {{repository: {repo}, tag: {yaml_scalar(tag)}, digest: {digest}}}")
    return lines


def app_yaml(plan: NewPlan, meta: gguf_meta.ModelMeta, cand_parts: tuple[hub.HubFile, ...], card: dict[str, Any],
             image_repo: str, image_tag: str, digest: str | None, build: str,
             helpers: dict[str, tuple[str, str, str]] | None) -> str:
    """The manifest, commented like the bundled apps (why, not what)."""
    row = plan.picked
    assert row is not None
    s = plan.server
    est = vram.estimate(meta, budget.settings_for(s), plan.device)
    gpu = vram.gpu_request_mib(est)
    size = sum(p.size for p in cand_parts)
    title = title_of(plan.repo)
    base_model = card.get("base_model")
    base_model = base_model[0] if isinstance(base_model, list) and base_model else base_model
    page = f"https://huggingface.co/{plan.repo}"
    mtp = s.speculative is not None
    desc = f"{title} {row['quant']} with llama.cpp at {s.ctx_size} context" + (" and MTP speculative decoding" if mtp else "")
    lines = [
        f"# {plan.repo} ({row['quant']}) with llama.cpp at a {s.ctx_size}-token context on {plan.device.name}.",
        f"# Written by `olares-pack new`: {plan.reason}.",
        "# Re-check the fit with `olares-pack vram NAME --quants --largest-ctx` after any change.".replace("NAME", plan.name),
        f"name: {plan.name}",
        "version: 1.0.0",
        f"title: {yaml_scalar(title)}",
        f"description: {yaml_scalar(desc)}",
        "full_description: |",
        f"  **{title}, {row['quant']}, {s.ctx_size}-token context**",
        "",
        f"  Serves {plan.repo} ({row['parts']} file(s), {size / 1e9:.2f} GB)"
        + (f", a quant of {base_model}," if isinstance(base_model, str) else "")
        + " with llama.cpp: one slot, flash attention, every layer on the GPU.",
        "",
        f"  - OpenAI-compatible API on port {s.port}, model name `{s.alias}`",
        f"  - GPU memory: about {row['total_mib']} MiB at the full context (estimate)",
        "",
        "  The model is downloaded into the shared Hugging Face store on first start.",
        *listing_lines(plan.repo, page, "https://github.com/ggml-org/llama.cpp", card),
    ]
    lines += [
        "targets: [current, legacy]",
        "",
        "engine:",
        "  kind: llamacpp",
        "  image:",
        f"    repository: {image_repo}",
        f"    tag: {yaml_scalar(image_tag)}",
        f"    digest: {digest if digest else 'null'}" + ("" if digest else "  # not pinned: run `olares-pack pin " + plan.name + " --image`"),
        f"  build: {build}  # flag registry: olares_pack/engines/data/llamacpp-history.yaml",
        *engine_form_lines(helpers),
        "",
        "model:",
        f"  repo: {plan.repo}",
    ]
    if len(cand_parts) == 1:
        p = cand_parts[0]
        lines += [f"  file: {yaml_scalar(p.path)}", f"  revision: {yaml_scalar(plan.commit)}  # pinned: the commit `new` read", f"  size: {p.size}"]
        if p.sha256:
            lines.append(f"  sha256: {p.sha256}")
    else:
        lines += [f"  revision: {yaml_scalar(plan.commit)}  # pinned: the commit `new` read",
                  "  files:  # a split GGUF: llama.cpp opens the first part and finds the others beside it"]
        for p in cand_parts:
            lines += [f"    - name: {yaml_scalar(p.path)}", f"      size: {p.size}"] + ([f"      sha256: {p.sha256}"] if p.sha256 else [])
    lines += [
        "",
        "server:",
        f"  port: {s.port}",
        f"  alias: {s.alias}",
        f"  ctx_size: {s.ctx_size}",
        "  parallel: 1              # each slot would need its own KV cache and recurrent state",
        "  gpu_layers: all",
        '  flash_attn: "on"',
        f"  cache_type: {{k: {s.cache_type.k}, v: {s.cache_type.v}}}",
        f"  batch_size: {s.batch_size}",
        f"  ubatch_size: {s.ubatch_size}  # the compute buffers grow with it (vram estimate)",
        "  jinja: true",
    ]
    if mtp:
        assert s.speculative is not None
        lines += ["  speculative:  # the GGUF carries the MTP (NextN) block: drafting with it costs its weights and a draft context",
                  f"    type: {s.speculative.type}", f"    draft_n_max: {s.speculative.draft_n_max}"]
    mem = gib_up(meta.token_embd_bytes) + 4
    disk = gib_up(int(size * 1.1)) + 1
    lines += [
        "",
        "resources:",
        "  cpu: {request: 4, limit: 16}",
        "  # token_embd stays in host memory (llama.cpp keeps it off the GPU), plus the server itself",
        f"  memory: {{request: {mem}Gi, limit: {2 * mem}Gi}}",
        "  # the GGUF file(s) with a margin; the download lands in the shared store",
        f"  disk: {{request: {disk}Gi, limit: {2 * disk}Gi}}",
        f"  gpu_memory_mib: {gpu}  # the full-context estimate, {est.total_mib:.0f} MiB, rounded up to 256 MiB",
        "",
        *entrance_lines(title),
        "  # the first start downloads the model: allow 30 minutes before giving up",
        "  startup: {initial_delay_seconds: 60, period_seconds: 15, failure_threshold: 120}",
        "  liveness: {initial_delay_seconds: 600, period_seconds: 30, failure_threshold: 5}",
        "",
    ]
    return "\n".join(lines)


def finish(plan: NewPlan, pin: hub.ModelPin, manifest_path: Path, *, image_repo: str, image_tag: str,
           digest: str | None, build: str, helpers: dict[str, tuple[str, str, str]] | None) -> None:
    """The app.yaml and model.lock.json texts, the manifest parsed back before anything is written."""
    assert plan.picked is not None
    meta = next(m for m in plan.metas if m.file == plan.picked["file"])
    cand = next(c for c in candidates(pin) if c.name == meta.file)
    card = card_front_matter(plan.repo, pin)
    plan.app_text = app_yaml(plan, meta, cand.parts, card, image_repo, image_tag, digest, build, helpers)
    lock = gguf_meta.Lock()
    for m in plan.metas:  # every quant read: `vram --quants` answers from these
        lock.put(m)
    lock.put_revision(pin.to_dict())
    plan.lock_text = lock.dumps()
    parse_app(plan.app_text, manifest_path, derive=False)


def write_app(repo: Repo, app_dir: Path, app_text: str, lock_text: str, lock_timeout: float) -> list[Path]:
    """A new app's app.yaml and model.lock.json, in one transaction under the repository's lock;
    never over an app that exists."""
    from olares_pack.catalogue.journal import Transaction
    from olares_pack.catalogue.repo import LOCK_FILE, MANIFEST_FILE

    with repo.open(write=True, timeout=lock_timeout, purpose="new"):
        if app_dir.exists():
            raise InputError(f"{app_dir}: already exists; `new` never overwrites an app")
        txn = Transaction(repo.root)
        txn.write(app_dir / MANIFEST_FILE, app_text)
        txn.write(app_dir / LOCK_FILE, lock_text)
        return txn.commit()
