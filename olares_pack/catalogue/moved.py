"""Where each published version of an app keeps its model in the device's shared Hugging Face store,
and the release finding `model.moved`: a new version that reads the model from another folder than
an older published version kept the same files in, without `model.adopt` naming that folder, makes
that version's users download the model again on upgrade.

llm-init (the shared form) downloads with `hf download`, and huggingface_hub skips a file whose
blob is already in the cache it is given (file_download.py, `_hf_hub_download_to_cache_dir`); a
copy anywhere else in the store is not seen. llamacppqwen36mtpone 1.0.11-1.0.14 shipped with
exactly this (1.0.9/1.0.10 kept the file under hf-files/): the release gate's node run upgrades only
from the previous version, so only this reading of the records catches it for every older one.

The folders, relative to the store (`<appCommon>/huggingface`, which every olares-pack current-line
chart mounts):
- the shared form (template generation 5 and later): `models--<org>--<name>` (llm-init's cache);
- the per-user form's own download step (templates/download.sh): listed files flat in
  `hf-files/<repo>/<revision>`, a whole repository through huggingface_hub into `hub/`.
"""

from __future__ import annotations

from olares_pack import olares
from olares_pack.apps.manifest import App, ChartApp
from olares_pack.catalogue import records
from olares_pack.catalogue.repo import Repo
from olares_pack.common import versions as appver
from olares_pack.lint.findings import Finding

RULE = "model.moved"
SHARED_FORM_GENERATION = 5  # render/generation.py: the current target renders llm-init from 5 on


def store_folder(app: App, generation: int) -> str | None:
    """The folder of the store where this version's current-line chart keeps the model; None where
    olares-pack's chart does not fetch it (an imported chart, fetch: engine or chart)."""
    from olares_pack import engines
    from olares_pack.render import llmbase

    if isinstance(app, ChartApp) or app.model.fetch not in (None, "olares-pack"):
        return None
    if generation >= SHARED_FORM_GENERATION and llmbase.active(app, olares.CURRENT):
        return llmbase.cache_folder(app.model.repo)
    # the per-user form mounts the store at engines.MODELS_MOUNT: its download step's folders there
    if app.model.files:
        return engines.model_dir(app).removeprefix(engines.MODELS_MOUNT + "/")
    return f"{engines.snapshot_cache(app).removeprefix(engines.MODELS_MOUNT + '/')}/{llmbase.cache_folder(app.model.repo)}"


def _files(app: App) -> frozenset[str]:
    return frozenset(f.name for f in app.model.files)  # empty: the whole repository


def findings(repo: Repo, app: App, generation: int, allow: tuple[str, ...]) -> list[Finding]:
    """One finding per older published version of the current line whose model files (the same
    repository, and the same file names or both the whole repository) the new version reads from
    another folder that model.adopt does not name."""
    mine = store_folder(app, generation)
    if mine is None or "current" not in app.targets:
        return []
    out = []
    for v in records.versions(repo, app.name):
        if appver.parse(v) >= appver.parse(app.version):
            continue
        rec = records.read(repo, app.name, v)
        if "current" not in rec.charts:
            continue
        old = records.app_of(rec)
        theirs = store_folder(old, rec.generation)
        if theirs is None or theirs == mine or theirs in app.model.adopt or isinstance(old, ChartApp):
            continue
        if old.model.repo != app.model.repo or (_files(old) != _files(app) and not (_files(old) & _files(app))):
            continue  # another model: its users download this version's once whatever
        out.append(Finding(
            RULE, "warning" if RULE in allow else "error", f"{app.name}@current", "app.yaml", "model.adopt",
            f"{v} kept the model in <store>/{theirs}; this version reads <store>/{mine}: its users would "
            f"download the model again on upgrade",
            hint=f"add {theirs} to model.adopt (the chart links that copy into the cache before llm-init runs)"))
    return out
