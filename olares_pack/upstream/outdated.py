"""`outdated`: per app, what upstream has that its newest version lacks, each with where it was read.

Three parts, each an Item list: the engine image (newer tags of its scheme in its own repository,
and, for an image that is not upstream llama.cpp, the upstream image's build tags; the pinned tag
moved to another digest), the model (the repository's revision against the pinned commit, the
pinned files changed, new quant files, a renamed, gone or gated repository) and the engine flags
(flags.py, between the pinned build and the newest build found). A registry or hub that does not
answer is an `unreachable` item: never taken for "up to date".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from olares_pack.apps.manifest import App, ChartApp, LlamaCppApp
from olares_pack.common.errors import RegistryError
from olares_pack.engines import registry
from olares_pack.remote import hub, oci
from olares_pack.upstream import flags, tags
from olares_pack.vram import gguf_meta

# the tag scheme of upstream llama.cpp's CUDA server images (ghcr.io/ggml-org/llama.cpp)
UPSTREAM_SCHEME = "server-cuda-{build}"
COMMIT = re.compile(r"[0-9a-f]{40}")
QUANT = re.compile(r"\.gguf$")
NOT_OUTDATED = {"not-checked"}  # items that say what was not looked at, not what upstream has


@dataclass(frozen=True)
class Item:
    app: str
    part: str  # image | model | flags
    kind: str
    subject: str  # what it is about: an image, a file, a flag
    current: str | None  # what the app has
    upstream: str | None  # what upstream has
    source: str  # where it was read
    message: str
    build: str | None = None  # image and flag items: the llama.cpp build concerned

    def key(self) -> tuple[str, ...]:
        # numbers compared as numbers: b9409 before b11434 before b12000
        return tuple(natural(x) for x in (self.app, self.part, self.kind, self.subject, self.upstream or "", self.message))

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("app", "part", "kind", "subject", "current", "upstream", "source",
                                               "message", "build")}


def natural(text: str) -> str:
    """`text` with each digit run zero-padded, so that string order is numeric order."""
    return re.sub(r"[0-9]+", lambda m: m.group().zfill(20), text)


@dataclass
class Options:
    upstream_image: str  # upstream llama.cpp's image repository
    page_size: int = 1000  # tags/list page size asked of registries


@dataclass
class AppReport:
    app: str
    version: str
    items: list[Item] = field(default_factory=list)
    newest_build: str | None = None  # the newest llama.cpp build found, for propose
    newest_image: tuple[str, str, str] | None = None  # (repository, tag, digest) of that build

    @property
    def unreachable(self) -> bool:
        return any(i.kind == "unreachable" for i in self.items)

    @property
    def invalid(self) -> bool:
        return any(i.kind == "invalid" for i in self.items)

    @property
    def status(self) -> str:
        if self.invalid:
            return "invalid"
        if self.unreachable:
            return "unreachable"
        return "outdated" if any(i.kind not in NOT_OUTDATED for i in self.items) else "up to date"

    def to_dict(self) -> dict[str, object]:
        return {"app": self.app, "version": self.version, "status": self.status,
                "items": [i.to_dict() for i in sorted(self.items, key=Item.key)]}


def default_upstream() -> str:
    return registry.upstream_images()[0]


def is_upstream(repository: str, opts: Options) -> bool:
    name = str(oci.ImageName.parse(repository))
    ups = {str(oci.ImageName.parse(r)) for r in (*registry.upstream_images(), opts.upstream_image)}
    return name in ups


# ---------------------------------------------------------------- engine image


def _later(build: str, after: str | None) -> bool:
    """Is `build` (a numbered build) later than the app's build (numbered, or named with a date)?"""
    if after is None:
        return True
    if registry.build_number(after) >= 0:
        return registry.build_number(build) > registry.build_number(after)
    since = flags.build_date(after)
    mine = flags.build_date(build)
    if since is None:
        return True
    if mine is None:  # a build newer than the table: later than any dated build the table covers
        return registry.build_number(build) > registry.build_number(registry.table_builds("llamacpp")[-1])
    return mine > since


def image_items(app: App, rep: AppReport, client: oci.RegistryClient, opts: Options,
                progress: Callable[[str], None]) -> list[tuple[str, str, str, str]]:
    """The engine image's items; returns the newer (build, repository, tag, digest) found."""
    img = app.engine.image
    name = oci.ImageName.parse(img.repository)
    found: list[tuple[str, str, str, str]] = []
    build = flags.app_build(app)
    progress(f"{app.name}: {name} tags")
    try:
        newer, how = tags.newer_tags(client, img.repository, img.tag, page_size=opts.page_size)
        if len(newer) > tags.WITH_DIGEST:
            older = newer[:-tags.WITH_DIGEST]
            rep.items.append(Item(app.name, "image", "newer-tags", f"{name}:{img.tag}", img.tag,
                                  f"{older[0].tag} … {older[-1].tag}", f"{name.registry} tags/list ({how})",
                                  f"{len(older)} more newer tags before the {tags.WITH_DIGEST} shown: "
                                  + ", ".join(t.tag for t in older[-10:]) + (" …" if len(older) > 10 else "")))
        for t in newer[-tags.WITH_DIGEST:]:
            rep.items.append(Item(app.name, "image", "newer-tag", f"{name}:{img.tag}", img.tag, f"{t.tag}@{t.digest}",
                                  f"{name.registry} tags/list ({how})",
                                  f"{name}:{t.tag} ({t.digest}" + (f", created {t.created}" if t.created else "")
                                  + ") is newer than " + img.tag, t.build))
        for t in newer:
            if t.build:
                found.append((t.build, img.repository, t.tag, t.digest or ""))
        if not img.digest:  # what the tag names can change unseen: nothing to compare it with
            rep.items.append(Item(app.name, "image", "unpinned", f"{name}:{img.tag}", img.tag, None, "app.yaml",
                                  f"{name}:{img.tag} is not pinned to a digest: a moved tag cannot be seen "
                                  "(olares-pack pin records the digest)"))
        else:
            now = client.head_digest(name, img.tag)
            if now is None:
                rep.items.append(Item(app.name, "image", "tag-gone", f"{name}:{img.tag}", img.digest, None,
                                      f"{name.registry} manifests/{img.tag}",
                                      f"{name}:{img.tag} no longer exists (the pinned digest is what runs)"))
            elif now != img.digest:
                rep.items.append(Item(app.name, "image", "tag-moved", f"{name}:{img.tag}", img.digest, now,
                                      f"{name.registry} manifests/{img.tag}",
                                      f"{name}:{img.tag} now names {now}, not the pinned {img.digest}"))
    except oci.TagNotFound as exc:  # the repository answers, without the app's tag
        rep.items.append(Item(app.name, "image", "tag-gone", f"{name}:{img.tag}", img.tag, None,
                              f"{name.registry} manifests/{img.tag}", str(exc)))
    except RegistryError as exc:
        rep.items.append(Item(app.name, "image", "unreachable", str(name), img.tag, None, name.registry, str(exc)))
    if app.engine.kind == "llamacpp" and not is_upstream(img.repository, opts):
        up = oci.ImageName.parse(opts.upstream_image)
        progress(f"{app.name}: {up} tags (upstream llama.cpp)")
        try:
            listed = tags.of_scheme(client.list_tags(up, page_size=opts.page_size), UPSTREAM_SCHEME)
            later = sorted((b for b in listed if _later(b, build)), key=registry.build_number)
            if later:
                newest = later[-1]
                digest = client.head_digest(up, listed[newest]) or ""
                # every later build, not the newest alone: when the newest is not in the flag
                # registry, propose and the flag items move to the newest build it knows
                found += [(b, opts.upstream_image, listed[b], "") for b in later[:-1]]
                found.append((newest, opts.upstream_image, listed[newest], digest))
                shown = ", ".join(later[-5:]) + (f" and {len(later) - 5} earlier" if len(later) > 5 else "")
                rep.items.append(Item(app.name, "image", "upstream-build", str(up), img.tag,
                                      f"{listed[newest]}@{digest}", f"{up.registry} tags/list (tags {UPSTREAM_SCHEME})",
                                      f"upstream llama.cpp has builds after {build or 'the image'}: {shown}; newest "
                                      f"{up}:{listed[newest]} ({digest})", newest))
        except RegistryError as exc:
            rep.items.append(Item(app.name, "image", "unreachable", str(up), None, None, up.registry, str(exc)))
    return found


# ---------------------------------------------------------------- flags


def flag_items(app: App, rep: AppReport, found: list[tuple[str, str, str, str]]) -> None:
    if app.engine.kind != "llamacpp" or not found:
        return
    newest = max(found, key=lambda f: registry.build_number(f[0]))
    rep.newest_build, rep.newest_image = newest[0], newest[1:]
    known = [f for f in found if flags.known_build(f[0])]
    src = "flag registry (engines/data/llamacpp-history.yaml, llamacpp-flags.json)"
    if not flags.known_build(newest[0]):
        top = registry.table_builds("llamacpp")[-1]
        rep.items.append(Item(app.name, "flags", "unknown-build", newest[0], app.engine.build, newest[0], src,
                              f"llama.cpp {newest[0]} is newer than the flag registry (newest {top}): what it changes "
                              "is not known (docs/developer/engine-registry.md: regenerate it)", newest[0]))
    mine = flags.app_build(app)
    if not known or flags.build_date(mine) is None:
        if flags.build_date(mine) is None:
            rep.items.append(Item(app.name, "flags", "unknown-build", str(mine), mine, None, src,
                                  f"the app's build {mine!r} is not in the flag registry: set engine.build"))
        return
    target = max(known, key=lambda f: registry.build_number(f[0]))[0]
    for c in flags.changes(app, target):
        rep.items.append(Item(app.name, "flags", c.kind, c.flag, c.value, c.new, f"{src}, {mine} → {target}",
                              c.message(), c.build))


# ---------------------------------------------------------------- model


def pinned_commit(app: App, app_dir: Path) -> str | None:
    """The commit the app runs: its revision when that is a commit, else what `pin` recorded for it."""
    m = app.model
    if COMMIT.fullmatch(m.revision):
        return m.revision
    lock = gguf_meta.load_lock(app_dir)
    rec = next((r for r in lock.revisions if r["repo"] == m.repo and r.get("revision") == m.revision), None)
    return str(rec["commit"]) if rec else None


def model_items(app: App, app_dir: Path, rep: AppReport, progress: Callable[[str], None]) -> hub.RepoState:
    m = app.model
    pinned = pinned_commit(app, app_dir)
    branch = "main" if pinned == m.revision else m.revision
    where = f"Hugging Face {m.repo}@{branch}"
    progress(f"{app.name}: {where}")
    state = hub.repo_state(m.repo, branch, since=pinned)

    def add(kind: str, subject: str, current: str | None, upstream: str | None, message: str, source: str = where) -> None:
        rep.items.append(Item(app.name, "model", kind, subject, current, upstream, source, message))

    if state.status in ("unreachable", "gone", "no-revision"):
        add(state.status, m.repo, pinned or m.revision, None, state.detail)
        return state
    if state.status == "moved":
        add("moved", m.repo, m.repo, state.name, f"{m.repo} was renamed {state.name}: the hub redirects the old name "
            "(a device downloading by the old name depends on that redirect)", f"{where} (answered as {state.name})")
    if state.gated:
        add("gated", state.name, None, "gated", state.detail)
    pin = state.pin
    assert pin is not None
    if pinned is None:
        add("unpinned", m.repo, m.revision, pin.commit, f"{m.repo}@{m.revision} is not pinned: it names {pin.commit} now "
            "(olares-pack pin records the commit)")
    elif pin.commit != pinned:
        titles = "; ".join(c.title for c in state.commits[:3])
        count = f"{len(state.commits)} commit(s)" if state.commits else "new commits"
        add("new-revision", m.repo, pinned, pin.commit, f"{state.name}@{branch} is at {pin.commit}, {count} after the "
            f"pinned {pinned}" + (f": {titles}" if titles else ""))
    old_files = _files_at(app, app_dir, state.name, pinned)
    for f in m.files:
        now = pin.file(f.name)
        if now is None:
            add("file-gone", f.name, pinned, None, f"{f.name} is not in {state.name}@{branch} any more")
            continue
        before = old_files.get(f.name)
        size = f.size if f.size is not None else (before.size if before else None)
        sha = f.sha256 if f.sha256 is not None else (before.sha256 if before else None)
        if (size is not None and size != now.size) or (sha is not None and now.sha256 and sha != now.sha256):
            add("file-changed", f.name, f"{size} bytes, sha256 {sha}", f"{now.size} bytes, sha256 {now.sha256}",
                f"{f.name} changed at {pin.commit}: {size} → {now.size} bytes, sha256 {_short(sha)} → {_short(now.sha256)}")
    if isinstance(app, LlamaCppApp) and old_files:
        for q in sorted(p for p in (f.path for f in pin.files) if QUANT.search(p) and p not in old_files):
            add("new-quant", q, None, q, f"{state.name}@{branch} has a new GGUF file {q}")
    return state


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "unknown"


def _files_at(app: App, app_dir: Path, repo: str, commit: str | None) -> dict[str, hub.HubFile]:
    """The repository's files at the pinned commit: from the lock when `pin` recorded them, else the hub."""
    if commit is None:
        return {}
    rec = gguf_meta.load_lock(app_dir).revision(app.model.repo, commit)
    if rec is not None:
        return {f["path"]: hub.HubFile(f["path"], int(f["size"]), f.get("sha256"), f.get("blob_id", "")) for f in rec["files"]}
    state = hub.repo_state(repo, commit)
    return {f.path: f for f in state.pin.files} if state.pin else {}


# ---------------------------------------------------------------- one app


def check_app(app: App, app_dir: Path, client: oci.RegistryClient, opts: Options,
              progress: Callable[[str], None]) -> AppReport:
    rep = AppReport(app.name, app.version)
    if isinstance(app, ChartApp):
        rep.items.append(Item(app.name, "image", "not-checked", app.name, None, None, "app.yaml",
                              "an imported chart: its images are in its own files"))
        return rep
    found = image_items(app, rep, client, opts, progress)
    flag_items(app, rep, found)
    model_items(app, app_dir, rep, progress)
    return rep


def to_text(reports: list[AppReport]) -> str:
    lines = []
    for r in sorted(reports, key=lambda r: r.app):
        lines.append(f"{r.app} {r.version}: {r.status}")
        for i in sorted(r.items, key=Item.key):
            lines.append(f"  {i.part:<6} {i.kind:<14} {i.message}")
            lines.append(f"  {'':<6} {'':<14} read from: {i.source}")
    return "\n".join(lines) + "\n"
