"""`olares-pack pin`: the image tag → the digest it names, the model revision → its commit.

plan_pin asks the registry and Hugging Face and computes the new app.yaml (comments and key
order kept, as `release` edits it) and model.lock.json without writing; write_pins writes every
planned file in one transaction. online_findings is what `release --online` and `lint --online`
check: a pinned digest that no longer resolves, a tag that moved away from it, a commit gone.
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olares_pack.apps.load import parse_app, validate_doc
from olares_pack.apps.manifest import App, ChartApp, LlamaCppApp
from olares_pack.catalogue.journal import Transaction
from olares_pack.catalogue.repo import LOCK_FILE, MANIFEST_FILE, Repo
from olares_pack.common.errors import InputError
from olares_pack.common.yamlsrc import load_yaml, roundtrip_yaml
from olares_pack.remote import hub, oci
from olares_pack.vram import gguf_meta


@dataclass(frozen=True)
class ImageChange:
    repository: str
    tag: str
    old_digest: str | None
    resolved: oci.Resolved

    @property
    def digest(self) -> str:
        return self.resolved.digest

    def describe(self) -> str:
        kind = {oci.OCI_INDEX: "OCI index", oci.DOCKER_LIST: "Docker manifest list", oci.OCI_MANIFEST: "OCI manifest",
                oci.DOCKER_MANIFEST: "Docker v2 manifest"}[self.resolved.media_type]
        platforms = ", ".join(sorted({str(p) for p in self.resolved.platforms}))
        if self.old_digest == self.digest:
            return f"image {self.repository}:{self.tag}@{self.digest} ({kind}: {platforms}): already pinned"
        return f"image {self.repository}:{self.tag} → {self.digest} ({kind}: {platforms})"  # a move: pin_cmd warns


@dataclass(frozen=True)
class ModelChange:
    old_revision: str
    pin: hub.ModelPin

    def describe(self) -> str:
        if self.old_revision == self.pin.commit:
            return f"model {self.pin.repo}@{self.pin.commit} ({len(self.pin.files)} file(s)): already pinned"
        return f"model {self.pin.repo}@{self.old_revision} → {self.pin.commit} ({len(self.pin.files)} file(s))"


@dataclass
class PinPlan:
    app: App
    manifest_path: Path
    old_text: str
    new_text: str
    lock_path: Path
    old_lock: str | None
    new_lock: str | None
    image: ImageChange | None = None
    # the shared form's helper images (engine.llm_init, engine.chown_image): field -> change
    helpers: dict[str, ImageChange] = field(default_factory=dict)
    model: ModelChange | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text or (self.new_lock is not None and self.new_lock != self.old_lock)

    def diff(self, root: Path | None = None) -> str:
        def label(p: Path) -> str:
            try:
                return p.resolve().relative_to(root.resolve()).as_posix() if root else str(p)
            except ValueError:
                return str(p)
        out = "".join(difflib.unified_diff(self.old_text.splitlines(True), self.new_text.splitlines(True),
                                           label(self.manifest_path), label(self.manifest_path)))
        if self.new_lock is not None and self.new_lock != self.old_lock:
            out += "".join(difflib.unified_diff((self.old_lock or "").splitlines(True), self.new_lock.splitlines(True),
                                                "/dev/null" if self.old_lock is None else label(self.lock_path),
                                                label(self.lock_path)))
        return out

    def writes(self) -> dict[Path, str]:
        out = {}
        if self.new_text != self.old_text:
            out[self.manifest_path] = self.new_text
        if self.new_lock is not None and self.new_lock != self.old_lock:
            out[self.lock_path] = self.new_lock
        return out


def set_after(node: Any, key: str, value: Any, after: str) -> None:
    """node[key] = value, a new key placed after `after` (a kept key keeps its place and comment)."""
    if key in node:
        node[key] = value
        return
    keys = list(node.keys())
    node.insert(keys.index(after) + 1 if after in keys else len(keys), key, value)


def drop_comment_above(node: Any, key: str) -> None:
    """Remove the comment lines just above `key` (ruamel keeps them on the key before it, after
    that line's own end): they described the value being replaced. The line's own inline comment stays."""
    keys = list(node.keys())
    if key not in keys or keys.index(key) == 0:
        return
    slot = node.ca.items.get(keys[keys.index(key) - 1])
    tok = slot[2] if slot and len(slot) > 2 else None
    if tok is None or "\n" not in tok.value:
        return
    own = tok.value.split("\n", 1)[0]
    if own.strip():
        tok.value = own + "\n"
    else:
        slot[2] = None


HELPER_IMAGE_FIELDS = ("llm_init", "chown_image", "proxy_image")


def _image_change(client: oci.RegistryClient, img: Any) -> ImageChange:
    return ImageChange(img.repository, img.tag, img.digest, oci.resolve_amd64(client, img.repository, img.tag))


def plan_pin(manifest_path: Path, *, image: bool = True, model: bool = True,
             client: oci.RegistryClient | None = None,
             published: frozenset[tuple[str, str, str]] = frozenset()) -> PinPlan:
    """What pinning this app changes, asked of its registry and Hugging Face; nothing is written.
    `published`: the model files (repo, file, revision) published versions read, whose lock
    entries stay whatever the draft pins (`records.published_models`)."""
    manifest_path = manifest_path / MANIFEST_FILE if manifest_path.is_dir() else manifest_path
    doc = load_yaml(manifest_path)
    app = validate_doc(doc)
    old_text = doc.path.read_text(encoding="utf-8")
    lock_path = manifest_path.parent / LOCK_FILE
    old_lock = lock_path.read_text(encoding="utf-8") if lock_path.exists() else None
    if isinstance(app, ChartApp):
        return PinPlan(app, manifest_path, old_text, old_text, lock_path, old_lock, None,
                       notes=[f"{app.name}: an imported chart: its images are pinned in its own files"])
    tree = doc.tree
    plan = PinPlan(app, manifest_path, old_text, old_text, lock_path, old_lock, None)
    if image:
        owned = client or oci.RegistryClient()
        try:
            img = app.engine.image
            plan.image = _image_change(owned, img)
            set_after(tree["engine"]["image"], "digest", plan.image.digest, "tag")
            if app.engine.shared:
                # the shared form runs more images beside the engine (llm-init and its chown
                # step on current, the proxy client on legacy): a default written out is pinned
                # like the engine's
                for key, helper in app.engine.helper_images(app.targets).items():
                    plan.helpers[key] = change = _image_change(owned, helper)
                    if key not in tree["engine"]:
                        from ruamel.yaml.comments import CommentedMap

                        set_after(tree["engine"], key, CommentedMap(repository=helper.repository, tag=helper.tag), "image")
                    set_after(tree["engine"][key], "digest", change.digest, "tag")
        finally:
            if client is None:
                owned.close()
    if model:
        m = app.model
        pin = hub.resolve_model(m.repo, m.revision)
        plan.model = ModelChange(m.revision, pin)
        node = tree["model"]
        set_after(node, "revision", pin.commit, "repo")
        declared = [(node, f.name) for f in m.files]
        if m.file is None:
            declared = list(zip(node.get("files") or [], [f.name for f in m.files], strict=True))
        for where, name in declared:
            found_file = pin.file(name)
            if found_file is None:
                raise InputError(f"{manifest_path}: model: {name} is not in {m.repo} at {m.revision} "
                                 f"(commit {pin.commit})")
            anchor = "file" if where is node else "name"
            set_after(where, "size", found_file.size, anchor)
            if found_file.sha256:
                set_after(where, "sha256", found_file.sha256, "size")
        lock = gguf_meta.load_lock(manifest_path.parent)
        record = pin.to_dict()
        kept = lock.revision(m.repo, pin.commit)
        if kept is not None and m.revision == pin.commit:
            record["revision"] = kept["revision"]  # the branch it was first pinned from
        lock.put_revision(record, published)
        if isinstance(app, LlamaCppApp):
            # vram and lint read the GGUF numbers at the revision the manifest names
            name = m.files[0].name
            meta = lock.find(m.repo, name, pin.commit)
            if meta is None or meta.revision != pin.commit:
                meta = gguf_meta.from_hub(m.repo, name, pin.commit)
            lock.drop_other_revisions(m.repo, name, pin.commit, published)
            lock.put(meta)
        plan.new_lock = lock.dumps()
    buf = io.StringIO()
    roundtrip_yaml().dump(tree, buf)
    plan.new_text = buf.getvalue()
    parse_app(plan.new_text, manifest_path, derive=False)  # what we wrote reads back as a manifest
    return plan


def write_pins(plans: list[PinPlan], repo: Repo) -> list[Path]:
    """Every changed file of every plan, all or nothing (one transaction per catalogue: an app
    named by a path outside `repo` is written in its own, rooted above its apps folder)."""
    groups: dict[Path, list[PinPlan]] = {}
    for plan in plans:
        root = repo.root
        try:
            plan.manifest_path.resolve().relative_to(root.resolve())
        except ValueError:
            root = Repo.of_apps(plan.manifest_path.parent.parent).root
        groups.setdefault(root, []).append(plan)
    written: list[Path] = []
    for root, group in sorted(groups.items()):
        txn = Transaction(root)
        for plan in group:
            for path, text in plan.writes().items():
                txn.write(path, text)
        written += txn.commit()
    return written


# ---------------------------------------------------------------- online checks


@dataclass(frozen=True)
class OnlineFinding:
    rule: str  # image.digest-online, image.tag-moved, model.revision-online (lint/findings.py RULES)
    severity: str
    path: str
    message: str


def new_image_digests(repository: str, tag: str, helper_refs: dict[str, tuple[str, str]] | None,
                      progress: Callable[[str], None]) -> tuple[str, dict[str, tuple[str, str, str]] | None]:
    """`new`: the engine image's digest and the shared form's helper images' (linux/amd64
    required), asked of their registries as `pin` asks."""
    with oci.RegistryClient() as client:
        digest = oci.resolve_amd64(client, repository, tag).digest
        progress(f"image {repository}:{tag} → {digest}")
        if helper_refs is None:
            return digest, None
        helpers = {}
        for key, (repo, htag) in helper_refs.items():
            helpers[key] = (repo, htag, oci.resolve_amd64(client, repo, htag).digest)
            progress(f"{key} {repo}:{htag} → {helpers[key][2]}")
    return digest, helpers


def _image_online(client: oci.RegistryClient, field: str, img: Any) -> list[OnlineFinding]:
    name = oci.ImageName.parse(img.repository)
    out = []
    if client.head_digest(name, img.digest) is None:
        out.append(OnlineFinding("image.digest-online", "error", f"{field}.digest",
                                 f"{name}@{img.digest} no longer resolves on {name.registry}"))
    now = client.head_digest(name, img.tag)
    if now is None:
        out.append(OnlineFinding("image.tag-moved", "warning", f"{field}.tag",
                                 f"{name}:{img.tag} no longer exists on {name.registry} (the digest is what runs)"))
    elif now != img.digest:
        out.append(OnlineFinding("image.tag-moved", "warning", f"{field}.tag",
                                 f"{name}:{img.tag} now names {now}, not the pinned {img.digest}"))
    return out


def online_findings(app: App, client: oci.RegistryClient | None = None) -> list[OnlineFinding]:
    """Does what the manifest pins still exist, and does its tag still name it? Unpinned parts
    are lint's image.unpinned warning already; network failures raise (exit 2)."""
    if isinstance(app, ChartApp):
        return []
    out: list[OnlineFinding] = []
    fields = {"engine.image": app.engine.image}
    fields |= {f"engine.{key}": img for key, img in app.engine.helper_images(app.targets).items()}
    pinned = {field: img for field, img in fields.items() if img.digest}
    if pinned:
        owned = client or oci.RegistryClient()
        try:
            for field, img in pinned.items():
                out += _image_online(owned, field, img)
        finally:
            if client is None:
                owned.close()
    rev = app.model.revision
    if len(rev) == hub.COMMIT_LEN and all(c in "0123456789abcdef" for c in rev):
        try:
            hub.resolve_model(app.model.repo, rev)
        except hub.HubError as exc:
            if "no such revision" not in str(exc):
                raise
            out.append(OnlineFinding("model.revision-online", "error", "model.revision",
                                     f"{app.model.repo}@{rev}: the pinned commit no longer exists on Hugging Face"))
    return out
