"""What the GPU memory budget needs from a GGUF file: architecture numbers and tensor sizes.

Read from a local file (gguf.GGUFReader), or from Hugging Face without downloading the file: the
GGUF header (metadata and tensor infos) sits at the start, so a few HTTP range reads of the
`resolve` URL are enough. The result is stored next to the app (`model.lock.json`), so builds
and CI need no network afterwards.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from olares_pack.catalogue.repo import LOCK_FILE
from olares_pack.common.errors import InputError


@dataclass
class ModelMeta:
    """Architecture numbers and tensor bytes of one GGUF file."""

    arch: str
    block_count: int
    embedding_length: int
    head_count: int
    head_count_kv: list[int]  # per block
    key_length: int
    value_length: int
    context_length: int
    vocab_size: int
    nextn_predict_layers: int = 0
    full_attention_interval: int = 0  # 0: every layer has attention
    ssm_conv_kernel: int = 0
    ssm_state_size: int = 0
    ssm_group_count: int = 0
    ssm_inner_size: int = 0
    tensor_bytes: int = 0  # all tensors
    token_embd_bytes: int = 0  # kept in host memory by llama.cpp
    # the MTP/NextN blocks' tensors: llama.cpp loads them only when MTP drafting is on (b11434
    # src/models/qwen35.cpp: TENSOR_SKIP without load_mtp; measured, measurements/vram). 0 = unknown.
    nextn_bytes: int = 0
    file_size: int | None = None
    # where the numbers come from: "gguf-header" (read from the file) or "published" (the file's
    # published size and the model card's architecture; tensor split estimated, see notes)
    provenance: str = "gguf-header"
    notes: str = ""
    # the whole file's sha256: hashed from a local file, or the hub's LFS oid
    sha256: str | None = None
    repo: str | None = None
    file: str | None = None
    revision: str | None = None

    @property
    def trunk_layers(self) -> int:
        return self.block_count - self.nextn_predict_layers

    def has_attention(self, layer: int) -> bool:
        """Hybrid models (qwen35, qwen3next) have attention on every interval-th layer only."""
        if self.full_attention_interval <= 0:
            return True
        return (layer + 1) % self.full_attention_interval == 0

    @property
    def recurrent_layers(self) -> int:
        if self.full_attention_interval <= 0 or not self.ssm_inner_size:
            return 0
        return sum(1 for i in range(self.trunk_layers) if not self.has_attention(i))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------- reading a header


@cache
def _gguf():  # noqa: ANN202 - the gguf package
    """gguf imports numpy (0.1 s a process): imported when a header is read, not by every command
    that imports the VRAM estimate (release, lint, render)."""
    import gguf

    return gguf


@cache
def _scalar() -> dict[int, str]:
    t = _gguf().GGUFValueType
    return {t.UINT8: "<B", t.INT8: "<b", t.UINT16: "<H", t.INT16: "<h", t.UINT32: "<I", t.INT32: "<i",
            t.FLOAT32: "<f", t.BOOL: "<?", t.UINT64: "<Q", t.INT64: "<q", t.FLOAT64: "<d"}


class _Stream:
    def __init__(self, f: BinaryIO) -> None:
        self.f = f

    def read(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise InputError("the GGUF header ends early (truncated file?)")
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.read(self.unpack("<Q")).decode("utf-8", errors="replace")

    def value(self, vtype: int, keep_arrays: bool) -> Any:
        gguf, scalar = _gguf(), _scalar()
        t = gguf.GGUFValueType(vtype)
        if t == gguf.GGUFValueType.STRING:
            return self.string()
        if t == gguf.GGUFValueType.ARRAY:
            item = gguf.GGUFValueType(self.unpack("<I"))
            n = self.unpack("<Q")
            if item in scalar and not keep_arrays:
                self.read(n * struct.calcsize(scalar[item]))  # skip: a token table is megabytes
                return n
            if item == gguf.GGUFValueType.STRING and not keep_arrays:
                for _ in range(n):
                    self.read(self.unpack("<Q"))
                return n
            return [self.value(item, keep_arrays) for _ in range(n)]
        return self.unpack(scalar[t])


def read_header(f: BinaryIO) -> tuple[dict[str, Any], dict[str, int]]:
    """(metadata, tensor name -> bytes) from the start of a GGUF file, read sequentially.

    Arrays are returned as their length, except numeric arrays under the architecture prefix
    (per-layer head counts), which are returned whole.
    """
    gguf = _gguf()
    s = _Stream(f)
    if s.read(4) != b"GGUF":
        raise InputError("not a GGUF file (bad magic)")
    version = s.unpack("<I")
    if version < 2:
        raise InputError(f"GGUF version {version} is not supported")
    n_tensors, n_kv = s.unpack("<Q"), s.unpack("<Q")
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = s.string()
        vtype = s.unpack("<I")
        keep = not key.startswith(("tokenizer.", "general."))
        meta[key] = s.value(vtype, keep)
    tensors: dict[str, int] = {}
    for _ in range(n_tensors):
        name = s.string()
        dims = [s.unpack("<Q") for _ in range(s.unpack("<I"))]
        qtype = gguf.GGMLQuantizationType(s.unpack("<I"))
        s.unpack("<Q")  # offset
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        elements = 1
        for d in dims:
            elements *= d
        tensors[name] = elements // block * type_size
    return meta, tensors


def meta_from(meta: dict[str, Any], tensors: dict[str, int]) -> ModelMeta:
    arch = str(meta.get("general.architecture", ""))
    if not arch:
        raise InputError("the GGUF has no general.architecture")

    def get(key: str, default: Any = None) -> Any:
        return meta.get(f"{arch}.{key}", default)

    blocks = int(get("block_count") or 0)
    heads = int(get("attention.head_count") or 0) if not isinstance(get("attention.head_count"), list) else max(get("attention.head_count"))
    kv = get("attention.head_count_kv", heads)
    kv_list = [int(x) for x in kv] if isinstance(kv, list) else [int(kv)] * blocks
    n_embd = int(get("embedding_length") or 0)
    key_len = int(get("attention.key_length") or (n_embd // heads if heads else 0))
    vocab = get("vocab_size") or meta.get("tokenizer.ggml.tokens") or 0
    return ModelMeta(
        arch=arch,
        block_count=blocks,
        embedding_length=n_embd,
        head_count=heads,
        head_count_kv=kv_list,
        key_length=key_len,
        value_length=int(get("attention.value_length") or key_len),
        context_length=int(get("context_length") or 0),
        vocab_size=int(vocab if not isinstance(vocab, list) else len(vocab)),
        nextn_predict_layers=int(get("nextn_predict_layers") or 0),
        full_attention_interval=int(get("full_attention_interval") or 0),
        ssm_conv_kernel=int(get("ssm.conv_kernel") or 0),
        ssm_state_size=int(get("ssm.state_size") or 0),
        ssm_group_count=int(get("ssm.group_count") or 0),
        ssm_inner_size=int(get("ssm.inner_size") or 0),
        tensor_bytes=sum(tensors.values()),
        token_embd_bytes=tensors.get("token_embd.weight", 0),
        nextn_bytes=sum(n for name, n in tensors.items()
                        if name.startswith("blk.") and name.split(".")[1].isdigit()
                        and int(name.split(".")[1]) >= blocks - int(get("nextn_predict_layers") or 0)),
    )


def from_file(path: Path) -> ModelMeta:
    """Read a local GGUF, or a header excerpt of one (its first bytes up to the end of the tensor
    table, header_excerpt): the numbers the budget needs are all in the header."""
    try:
        with path.open("rb") as f:
            meta, tensors = read_header(f)
            header = f.tell()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except (ValueError, struct.error) as exc:
        raise InputError(f"{path}: not a readable GGUF header: {exc}") from None
    m = meta_from(meta, tensors)
    size = path.stat().st_size
    m.file = path.name
    if size > header:
        m.file_size = size
        m.sha256 = _sha256_file(path)
    else:
        m.notes = "read from a header excerpt: file size unknown"
    return m


def _sha256_file(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def header_excerpt(path: Path) -> bytes:
    """The first bytes of a GGUF, up to the end of its tensor table: small enough to commit, and
    enough for `vram --lock --gguf EXCERPT` without the file or the hub."""
    with path.open("rb") as f:
        read_header(f)
        end = f.tell()
        f.seek(0)
        return f.read(end)


def from_hub(repo: str, file: str, revision: str = "main") -> ModelMeta:
    """Read the header of a GGUF on Hugging Face with range requests (huggingface_hub's
    HfFileSystem, at the commit `revision` names); no download of the weights."""
    from olares_pack.remote import hub

    pin = hub.resolve_model(repo, revision)
    found = pin.file(file)
    if found is None:
        raise InputError(f"{repo}@{revision}: no file {file} at commit {pin.commit}")
    try:
        with hub.open_file(repo, file, pin.commit) as f:
            meta, tensors = read_header(f)
    except (ValueError, struct.error) as exc:
        raise InputError(f"{repo}/{file}@{pin.commit}: not a readable GGUF header: {exc}") from None
    m = meta_from(meta, tensors)
    m.file_size, m.repo, m.file, m.revision = found.size, repo, file, pin.commit
    m.sha256 = found.sha256  # the LFS oid: what the shared form's wrapper checks before the engine starts
    return m


# ---------------------------------------------------------------- the lock file


@dataclass
class Lock:
    models: list[ModelMeta] = field(default_factory=list)
    # `olares-pack pin`: what each pinned revision named (hub.ModelPin.to_dict: repo, the revision
    # asked for, its commit, and every file at it with size, LFS sha256 and git blob id)
    revisions: list[dict[str, Any]] = field(default_factory=list)

    def find(self, repo: str, file: str, revision: str) -> ModelMeta | None:
        """The entry read at this revision; for the branch `main` with none recorded under that name,
        the one entry of the file (a lock written before pins kept the branch's name)."""
        same = [m for m in self.models if m.repo == repo and m.file == file]
        exact = next((m for m in same if m.revision == revision), None)
        if exact is not None or revision != "main":
            return exact
        return same[0] if len(same) == 1 else None

    def put(self, meta: ModelMeta) -> None:
        self.models = [m for m in self.models if (m.repo, m.file, m.revision) != (meta.repo, meta.file, meta.revision)]
        self.models.append(meta)
        self.models.sort(key=lambda m: (m.repo or "", m.file or "", m.revision or ""))

    def drop_other_revisions(self, repo: str, file: str, keep: str,
                             published: frozenset[tuple[str, str, str]] = frozenset()) -> None:
        """The manifest now names one commit of this file: entries read at other revisions describe
        nothing it runs, unless a published version reads them (`published`: repo, file, revision
        of each), whose `vram --version` must report what it did when it shipped."""
        self.models = [m for m in self.models
                       if not (m.repo == repo and m.file == file and m.revision != keep)
                       or (m.repo, m.file, m.revision) in published]

    def put_revision(self, pin: dict[str, Any], published: frozenset[tuple[str, str, str]] = frozenset()) -> None:
        """The pinned snapshot the manifest names, beside those of published versions (by repo and
        revision asked for); any other snapshot of the repository goes."""
        shipped = {(r, rev) for r, _f, rev in published}

        def kept(r: dict[str, Any]) -> bool:
            return r["repo"] != pin["repo"] or ((r["repo"], r.get("revision")) in shipped and r["commit"] != pin["commit"])
        self.revisions = sorted([r for r in self.revisions if kept(r)] + [pin], key=lambda r: (r["repo"], r["commit"]))

    def revision(self, repo: str, commit: str) -> dict[str, Any] | None:
        return next((r for r in self.revisions if r["repo"] == repo and r["commit"] == commit), None)

    def dumps(self) -> str:
        data: dict[str, Any] = {"format": 1, "models": [m.to_dict() for m in self.models]}
        if self.revisions:  # absent before the first pin: existing lock files keep their bytes
            data["revisions"] = self.revisions
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def load_lock(app_dir: Path) -> Lock:
    path = app_dir / LOCK_FILE
    if not path.exists():
        return Lock()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        revisions = data.get("revisions", [])
        if not isinstance(revisions, list) or not all(isinstance(r, dict) and {"repo", "commit", "files"} <= r.keys()
                                                       for r in revisions):
            raise TypeError("revisions: expected a list of {repo, revision, commit, files}")
        return Lock([ModelMeta(**m) for m in data.get("models", [])], revisions)
    except (json.JSONDecodeError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a model lock file: {exc}") from None
