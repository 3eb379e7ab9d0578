"""`propose`: the next version's draft in app.yaml, from a newer engine build or model revision.

The draft is computed whole before anything is written: the image tag and its digest (asked of
the registry), the model's repository (followed through a rename), revision (its commit), file,
size and sha256 (asked of the hub, through `pin`'s own planning, which also locks the GGUF's
numbers for the GPU-memory estimate), and the engine arguments translated for the new build
(flags.py: renamed values applied; a removed flag replaced by its successor where the app spells
it in server.extra_args, refused with the reason otherwise). Then what a release checks: lint of
the rendered charts, the GPU-memory verdict on the new build, the diff against the newest
published version, and the changelog entry drafted with each change's reason and upstream
reference. A refused proposal (an unknown build, a tag or revision that does not exist, a flag
with no successor) raises before anything is written.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olares_pack.apps.changelog import entry_map
from olares_pack.apps.load import parse_app, validate_doc
from olares_pack.apps.manifest import App, ChartApp, LlamaCppApp
from olares_pack.catalogue import records
from olares_pack.catalogue.journal import Transaction
from olares_pack.catalogue.repo import LOCK_FILE, MANIFEST_FILE, Repo
from olares_pack.common import versions as appver
from olares_pack.common.errors import InputError, TagNotFound
from olares_pack.common.yamlsrc import load_yaml, roundtrip_yaml
from olares_pack.engines import registry
from olares_pack.remote import hub, oci
from olares_pack.upstream import flags, outdated, tags

if TYPE_CHECKING:
    from olares_pack.lint.findings import Finding
    from olares_pack.vram.verdict import Verdict

# the manifest field each typed llama.cpp setting is written from (engines/llamacpp.py build_argv)
FIELD_OF: dict[str, tuple[str, ...]] = {
    "--spec-type": ("server", "speculative", "type"),
    "--spec-draft-n-max": ("server", "speculative", "draft_n_max"),
    "--spec-draft-n-min": ("server", "speculative", "draft_n_min"),
    "--spec-draft-p-min": ("server", "speculative", "draft_p_min"),
    "--flash-attn": ("server", "flash_attn"),
    "--cache-type-k": ("server", "cache_type", "k"),
    "--cache-type-v": ("server", "cache_type", "v"),
    "--ctx-size": ("server", "ctx_size"),
    "--parallel": ("server", "parallel"),
    "--batch-size": ("server", "batch_size"),
    "--ubatch-size": ("server", "ubatch_size"),
    "--threads": ("server", "threads"),
    "--alias": ("server", "alias"),
    "--gpu-layers": ("server", "gpu_layers"),
}


@dataclass(frozen=True)
class Asked:
    engine_build: str | None = None
    image_tag: str | None = None
    model_revision: str | None = None
    quant: str | None = None
    date: dt.date | None = None


@dataclass
class Proposal:
    name: str
    old_version: str
    version: str
    manifest_path: Path
    lock_path: Path
    old_text: str
    new_text: str
    old_lock: str | None
    new_lock: str | None
    changes: list[tuple[str, str]]
    summary: str
    notes: str
    build: str | None
    findings: list[Finding] = field(default_factory=list)
    verdict: Verdict | None = None
    verdict_note: str = ""
    diff_text: str = ""
    measured: bool = False
    skipped: str = ""  # why the draft does not move to the newest build found

    def writes(self) -> dict[Path, str]:
        out = {self.manifest_path: self.new_text}
        if self.new_lock is not None and self.new_lock != self.old_lock:
            out[self.lock_path] = self.new_lock
        return out


# ---------------------------------------------------------------- the image


@dataclass(frozen=True)
class ImageTarget:
    repository: str
    tag: str
    digest: str
    build: str | None
    why: str  # how it was chosen
    note: str = ""  # why the newest build found is not the one moved to


def unknown_newest(app: App, found: list[tuple[str, str, str, str]]) -> str:
    """Why the draft does not move to the newest build found: it is newer than the flag registry."""
    if app.engine.kind != "llamacpp" or not found:
        return ""
    newest = max(found, key=lambda f: registry.build_number(f[0]))[0]
    if flags.known_build(newest):
        return ""
    known = [f[0] for f in found if flags.known_build(f[0])]
    top = registry.table_builds("llamacpp")[-1]
    then = (f"the draft moves to {max(known, key=registry.build_number)}, the newest build found that it holds"
            if known else f"the draft keeps the engine at {flags.app_build(app)}")
    return (f"llama.cpp {newest}, the newest build found, is not in the flag registry (newest {top}): its flags "
            f"cannot be checked, so {then}; regenerate the registry (docs/developer/engine-registry.md) or give "
            "--engine-build")


def choose_image(app: App, asked: Asked, client: oci.RegistryClient,
                 opts: outdated.Options) -> tuple[ImageTarget | None, str]:
    """The image the draft runs: the tag asked, the build asked (in the image's own tag scheme, or
    upstream llama.cpp's for an image that is not upstream), or the newest build found that the flag
    registry holds; None: keep. With it, why a newer build found was not taken ("" when none)."""
    img = app.engine.image
    if asked.engine_build and asked.image_tag:
        raise InputError("give --engine-build or --image-tag, not both")
    if asked.image_tag:
        repo, tag = img.repository, asked.image_tag
        build = registry.tag_build(tag) or (app.engine.build if tag == img.tag else None)
        if app.engine.kind == "llamacpp" and build is None:
            raise InputError(f"{repo}:{tag} names no llama.cpp build: the engine arguments cannot be translated "
                             "for it; give --engine-build B instead (or a tag such as server-cuda-b9254)")
        why = f"--image-tag {tag}"
    elif asked.engine_build:
        build = asked.engine_build
        if registry.build_number(build) < 0 or not flags.known_build(build):
            raise InputError(f"llama.cpp build {build!r} is not in the flag registry (known: "
                             f"{', '.join(registry.table_builds('llamacpp'))}): its flags cannot be checked; "
                             "docs/developer/engine-registry.md says how to add builds")
        pattern = tags.scheme(img.tag) if outdated.is_upstream(img.repository, opts) else None
        if pattern is not None:
            repo, tag = img.repository, pattern.format(build=build)
        else:
            repo, tag = opts.upstream_image, outdated.UPSTREAM_SCHEME.format(build=build)
        why = f"--engine-build {build}"
    else:
        rep = outdated.AppReport(app.name, app.version)
        found = outdated.image_items(app, rep, client, opts, lambda _: None)
        if rep.unreachable:
            raise InputError("; ".join(i.message for i in rep.items if i.kind == "unreachable"))
        known = [f for f in found if flags.known_build(f[0])] if app.engine.kind == "llamacpp" else found
        note = unknown_newest(app, found)
        if not known:
            return None, note
        build, repo, tag, _ = max(known, key=lambda f: registry.build_number(f[0]))
        why = f"the newest build found, {build}" if not note else f"{build}, the newest build found in the flag registry"
        resolved = oci.resolve_amd64(client, repo, tag)
        return ImageTarget(repo, tag, resolved.digest, build, why, note), note
    try:
        resolved = oci.resolve_amd64(client, repo, tag)
    except TagNotFound as exc:
        raise InputError(f"{exc}" if exc.nearest else f"{exc}; {nearest_tags(client, repo, tag, opts)}") from None
    return ImageTarget(repo, tag, resolved.digest, build, why), ""


def nearest_tags(client: oci.RegistryClient, repository: str, tag: str, opts: outdated.Options) -> str:
    """The tags nearest a missing one: of its build scheme, by build number; else by spelling."""
    import difflib

    listed = client.list_tags(oci.ImageName.parse(repository), page_size=opts.page_size)
    if not listed:
        return f"{repository} has no tags"
    pattern = tags.scheme(tag)
    if pattern is not None and (same := tags.of_scheme(listed, pattern)):
        want = registry.build_number(registry.tag_build(tag) or "")
        near = sorted(same, key=lambda b: (abs(registry.build_number(b) - want), registry.build_number(b)))[:5]
        shown = [same[b] for b in sorted(near, key=registry.build_number)]
    else:
        shown = difflib.get_close_matches(tag, listed, n=5, cutoff=0.0)
    return f"nearest tags: {', '.join(shown)}"


# ---------------------------------------------------------------- the engine arguments


def _node(tree: Any, path: tuple[str, ...]) -> tuple[Any, str] | None:
    node = tree
    for key in path[:-1]:
        if key not in node or node[key] is None:
            return None
        node = node[key]
    return (node, path[-1]) if path[-1] in node else None


def translate(app: App, tree: Any, build: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The app's arguments rewritten for `build` in the round-trip tree: (changelog changes, refusals)."""
    changes: list[tuple[str, str]] = []
    refused: list[str] = []
    extra = tree.get("server", {}).get("extra_args") if isinstance(tree.get("server"), dict) else None
    for c in flags.changes(app, build):
        at = ", ".join(p for p in (c.ref, c.builds, c.date) if p)
        if c.kind == "renamed-value":
            where = _node(tree, FIELD_OF.get(c.flag, ()))
            if where is not None and str(where[0][where[1]]) == c.value:
                where[0][where[1]] = c.new
            elif not _replace_value(extra, c.spelled, str(c.value), str(c.new)):
                refused.append(f"{c.flag} {c.value}: renamed {c.new} upstream, but app.yaml does not spell it where "
                               "olares-pack can rewrite it")
                continue
            changes.append(("engine-args", f"{c.flag} {c.value} → {c.new}: {c.text} ({at})"))
        elif c.kind == "removed":
            if c.new and _replace_flag(extra, c.spelled, c.new):
                changes.append(("engine-args", f"{c.spelled} → {c.new}: {c.spelled} was removed upstream ({at})"))
            else:
                refused.append(f"{c.spelled}: removed by llama.cpp {c.build or build}" +
                               (f"; its successor {c.new} cannot replace it here (olares-pack writes {c.spelled} "
                                f"for {'.'.join(FIELD_OF.get(c.flag, ('server',)))})" if c.new else
                                f" with no successor ({c.text}): the app cannot run on {build} as it is"))
        elif c.kind == "not-accepted":
            refused.append(f"{c.flag} {c.value}: not accepted by llama.cpp {build} ({c.text})")
        elif c.kind == "default" and c.value is not None:
            changes.append(("engine-args", f"{c.flag} {c.value} kept: the upstream default became {c.new} (was "
                            f"{c.old}) ({at}); the app sets it, so its behaviour does not change"))
        elif c.kind == "default":
            changes.append(("engine-args", f"{c.flag} not set: its upstream default changes {c.old} → {c.new} ({at}); "
                            f"this version runs with {c.new}"))
    return changes, refused


def _index(extra: Any, spelled: str) -> int | None:
    for i, tok in enumerate(extra or []):
        if str(tok) == spelled or str(tok).startswith(spelled + "="):
            return i
    return None


def _replace_value(extra: Any, spelled: str, old: str, new: str) -> bool:
    i = _index(extra, spelled)
    if i is None:
        return False
    tok = str(extra[i])
    if tok.startswith(spelled + "="):
        extra[i] = f"{spelled}={new}"
        return True
    if i + 1 < len(extra) and str(extra[i + 1]) == old:
        extra[i + 1] = new
        return True
    return False


def _replace_flag(extra: Any, spelled: str, new: str) -> bool:
    i = _index(extra, spelled)
    if i is None:
        return False
    tok = str(extra[i])
    extra[i] = new + tok[len(spelled):]
    return True


# ---------------------------------------------------------------- the whole draft


def served_name(app: App) -> str:
    """The model name the API answers with: --alias (--served-model-name), else what the engine is
    given as its model (llama-server's --model path or --hf-repo, vLLM's `serve` argument)."""
    from olares_pack import engines

    argv = engines.build_argv(app)
    for flag in ("--alias", "--served-model-name", "--hf-repo", "--model"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1]
    return argv[1] if argv[:1] == ["serve"] and len(argv) > 1 else "?"


def plan_propose(repo: Repo, app_dir: Path, asked: Asked, client: oci.RegistryClient, opts: outdated.Options) -> Proposal:
    """The draft and its checks, computed without writing anything."""
    from olares_pack.apps import pin
    from olares_pack.apps.changelog import next_version

    manifest_path = app_dir / MANIFEST_FILE
    if not manifest_path.is_file():
        raise InputError(f"{app_dir}: no such app ({manifest_path} does not exist)")
    doc = load_yaml(manifest_path)
    app = validate_doc(doc)
    if isinstance(app, ChartApp):
        raise InputError(f"{app.name}: an imported chart: propose drafts apps olares-pack renders (its images are in "
                         "the chart's own files)")
    published = records.versions(repo, app.name)
    if published and app.version not in published:
        raise InputError(f"{manifest_path}: version {app.version} is not published yet: release it (or reset app.yaml "
                         "to the newest published version) before drafting the next one")
    old_text = manifest_path.read_text(encoding="utf-8")
    lock_path = app_dir / LOCK_FILE
    old_lock = lock_path.read_text(encoding="utf-8") if lock_path.exists() else None
    tree = doc.tree
    changes: list[tuple[str, str]] = []
    titles: list[str] = []

    image, skipped = choose_image(app, asked, client, opts)
    build = flags.app_build(app)
    if image is not None and (image.repository, image.tag, image.digest) != (app.engine.image.repository,
                                                                             app.engine.image.tag, app.engine.image.digest):
        node = tree["engine"]["image"]
        node["repository"] = image.repository
        node["tag"] = image.tag
        pin.drop_comment_above(node, "digest")  # it spoke of the old image's digest
        pin.set_after(node, "digest", image.digest, "tag")
        changes.append(("image", f"{image.repository}:{image.tag} ({image.digest}) replaces "
                                 f"{app.engine.image.repository}:{app.engine.image.tag} ({image.why})"))
        if app.engine.kind == "llamacpp" and image.build and image.build != build:
            arg_changes, refused = translate(app, tree, image.build)
            if refused:
                raise InputError(f"{app.name}: cannot move to llama.cpp {image.build}: " + "; ".join(refused)
                                 + ". Nothing was written.")
            pin.set_after(tree["engine"], "build", image.build, "image")
            build = image.build
            changes += arg_changes
            titles.append(f"llama.cpp {image.build}")
        else:
            titles.append(f"image {image.tag}")

    m = app.model
    state = hub.repo_state(m.repo, asked.model_revision or ("main" if outdated.COMMIT.fullmatch(m.revision) else m.revision))
    if state.status in ("gone", "no-revision", "unreachable"):
        raise InputError(state.detail + ". Nothing was written.")
    assert state.pin is not None
    model = tree["model"]
    if state.name != m.repo:
        model["repo"] = state.name
        changes.append(("model", f"Hugging Face repository renamed upstream: {m.repo} → {state.name} (the hub "
                                 f"redirects the old name to it)"))
        titles.append(f"model repository {state.name}")
    file_name = m.files[0].name if m.files else None
    if asked.quant and asked.quant != file_name:
        if len(m.files) != 1:
            raise InputError(f"{manifest_path}: model.files lists {len(m.files)} files: --quant replaces a model of one file")
        if state.pin.file(asked.quant) is None:
            ggufs = sorted(f.path for f in state.pin.files if f.path.endswith(".gguf"))
            raise InputError(f"{asked.quant} is not in {state.name} at {state.pin.commit} (its GGUF files: "
                             f"{', '.join(ggufs) or 'none'}). Nothing was written.")
        where, key = (model, "file") if m.file is not None else (model["files"][0], "name")
        where[key] = asked.quant
        for stale in ("size", "sha256"):  # the old file's: pin writes the new one's
            if stale in where:
                del where[stale]
        changes.append(("model", f"{asked.quant} replaces {file_name}"))
        titles.append(asked.quant)
        file_name = asked.quant
    elif file_name is not None and state.pin.file(file_name) is None:
        raise InputError(f"{file_name} is not in {state.name} at {state.pin.commit}: give --quant FILE. Nothing was written.")
    pinned = outdated.pinned_commit(app, app_dir)
    if state.pin.commit != pinned:
        changes.append(("model", f"{state.name}@{state.pin.commit}" + (f" replaces {pinned}" if pinned else
                                                                       f" pins {m.revision}")
                        + (f" ({len(state.commits)} upstream commit(s))" if state.commits else "")))
    model["revision"] = state.pin.commit
    if state.gated:
        changes.append(("model", f"{state.name} is gated: devices download it only with a token granted access"))

    if not changes:
        raise InputError(f"{app.name} {app.version}: nothing upstream to propose (image, build and model are the newest "
                         "found)" + (f"; {skipped}" if skipped else ""))
    buf = io.StringIO()
    roundtrip_yaml().dump(tree, buf)
    before, after = served_name(app), served_name(parse_app(buf.getvalue(), manifest_path, derive=False))
    if before != after:  # every API client names the model: a change it sees
        changes.append(("model", f"the served model name changes: {before} → {after} (clients that ask for "
                                 f"{before} must ask for {after})"))
    version = next_version(max([app.version, *published], key=appver.parse), "patch")
    tree["version"] = version
    measured = (app_dir / "bench" / f"{version}.json").is_file()
    notes = "" if measured else (f"Not yet measured: no bench record for {version} (apps/{app.name}/bench/{version}.json); "
                                 "bench it on a device before releasing.")
    if skipped:  # the draft says why it stops short of the newest build (propose prints it too)
        notes = " ".join(n for n in (f"Not the newest build: {skipped}.", notes) if n)
    summary = "upstream " + ", ".join(titles) if titles else f"upstream {state.name}@{state.pin.commit[:7]}"
    log = tree.get("changelog")
    if log is None:
        from ruamel.yaml.comments import CommentedSeq

        tree["changelog"] = log = CommentedSeq()
    log.append(entry_map(version, asked.date or dt.date.today(), summary, changes, notes))
    buf = io.StringIO()
    roundtrip_yaml().dump(tree, buf)
    drafted = buf.getvalue()

    with tempfile.TemporaryDirectory(prefix="olares-pack-propose-") as tmp:
        stage = Path(tmp) / "apps" / app.name
        stage.mkdir(parents=True)
        (stage / MANIFEST_FILE).write_text(drafted, encoding="utf-8")
        if old_lock is not None:
            shutil.copy(lock_path, stage / LOCK_FILE)
        # pin's planning: the commit, each file's size and sha256, the GGUF numbers in the lock
        planned = pin.plan_pin(stage, image=False, model=True, client=client,
                               published=records.published_models(repo, app.name))
        (stage / LOCK_FILE).write_text(planned.new_lock or "", encoding="utf-8")
        new_app = parse_app(planned.new_text, manifest_path)
        prop = Proposal(app.name, app.version, version, manifest_path, lock_path, old_text, planned.new_text, old_lock,
                        planned.new_lock, changes, summary, notes, build, measured=measured, skipped=skipped)
        _checks(prop, new_app, stage, repo, app_dir, published)
    return prop


def _checks(prop: Proposal, app: App, stage: Path, repo: Repo, app_dir: Path, published: list[str]) -> None:
    """What a release would check: lint, the GPU-memory verdict on the new build, the diff."""
    from olares_pack import diff
    from olares_pack.catalogue.checks import version_source
    from olares_pack.catalogue.releases import build_packages, lint_app
    from olares_pack.charts.source import ChartSource

    built = build_packages(app, repo)
    prop.findings = lint_app(app, stage, built)
    if isinstance(app, LlamaCppApp) and "nvidia" in app.modes:
        from olares_pack.vram import budget, gate
        from olares_pack.vram.estimate import DEVICES
        from olares_pack.vram.verdict import judge

        dev = DEVICES["olares-one"]
        try:
            est = budget.app_estimate(app, stage, dev)
            prop.verdict = judge(est, gate.references(repo.apps_dir, app.name, dev), app.version)
        except InputError as exc:
            prop.verdict_note = f"no estimate: {exc}"
    if published:
        current = next(b for b in built if b.target == "current") if any(b.target == "current" for b in built) else built[0]
        a = diff.facts(version_source(repo, app_dir, published[-1], current.target))
        b = diff.facts(ChartSource(f"{app.name} {app.version} (draft)", app.name, current.files, app=app,
                                   target=current.target))
        prop.diff_text = diff.to_markdown(diff.compare(a, b))


def write_proposal(prop: Proposal, repo: Repo) -> list[Path]:
    txn = Transaction(repo.root)
    for path, text in prop.writes().items():
        txn.write(path, text)
    return txn.commit()
