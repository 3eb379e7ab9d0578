"""A chart as lint and import read it: a chart folder, a chart archive, an app manifest rendered
per target, or a version a market source serves; and the one walk that finds charts in a folder."""

from __future__ import annotations

import datetime as dt
import tarfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from olares_pack import olares
from olares_pack.catalogue import MANIFEST_FILE
from olares_pack.charts import package
from olares_pack.common import fsio
from olares_pack.common.errors import InputError

if TYPE_CHECKING:
    from olares_pack.apps.manifest import App


@dataclass
class ChartSource:
    label: str  # how findings name it
    folder: str  # the chart's folder name (the archive's top folder)
    files: dict[str, str]
    app: App | None = None  # set when rendered by olares-pack from an app manifest
    target: str | None = None
    binary: dict[str, bytes] = field(default_factory=dict)  # icons and other non-text files
    app_dir: Path | None = None  # the app's folder (model.lock.json), for olares-pack apps
    package: bytes | None = None  # the .tgz a source serves for it (an archive's own bytes)
    date: dt.date | None = None  # when a market source published it (its versionHistory)
    upgrade: str | None = None  # its "what's new" from a market source's versionHistory
    # A chart read from a folder: its files are that folder's, byte for byte, so Helm loads the
    # folder itself rather than a copy written to a scratch folder (5 % of a lint of 198 charts).
    on_disk: Path | None = None


def from_folder(path: Path) -> ChartSource:
    text, binary = fsio.read_tree_split(path)
    return ChartSource(str(path), path.resolve().name, text, binary=binary, on_disk=path)


def from_archive(path: Path) -> ChartSource:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    return from_archive_bytes(data, str(path))


def from_archive_bytes(data: bytes, label: str) -> ChartSource:
    try:
        folder, files, binary = package.read_archive_split(data)
    except (ValueError, OSError, EOFError, tarfile.TarError) as exc:
        raise InputError(f"{label}: not a chart archive: {exc}") from None
    return ChartSource(label, folder, files, binary=binary, package=data)


def packaged(path: Path) -> ChartSource:
    """A chart folder or archive with the package that stands for it: an archive's own bytes, a
    folder packaged the way olares-pack packages charts (sorted, no clock, no owner)."""
    if path.is_file():
        return from_archive(path)
    src = from_folder(path)
    return replace(src, package=package.compress(package.build_tar(src.folder, {**src.files, **src.binary})))


def from_app(path: Path, target_names: list[str] | None = None) -> list[ChartSource]:
    from olares_pack.apps.load import load_app
    from olares_pack.render import app as render
    from olares_pack.vram.budget import app_dir_of

    app = load_app(path)
    out = []
    for name in target_names or app.targets:
        t = olares.get(name)
        out.append(ChartSource(f"{path}@{t.name}", app.name, render.render(app, t), app=app, target=t.name,
                               app_dir=app_dir_of(path)))
    return out


def offered_to(sources: list[ChartSource], os_version: str) -> tuple[list[ChartSource], list[ChartSource]]:
    """The charts a device of `os_version` is offered, and the rest: of an app manifest rendered
    per target, the targets whose window excludes the release (a 1.12.6 device never sees an app's
    legacy chart). Charts read as files are all kept (their own window is theirs to check), and so
    is every chart of an app none of whose targets admits the release, so that the window error
    reaches the maintainer."""
    def admitted(src: ChartSource) -> bool:
        return src.target is not None and olares.get(src.target).admits(os_version)

    offered_apps = {id(src.app) for src in sources if src.app is not None and admitted(src)}
    kept = [src for src in sources if src.app is None or src.target is None or id(src.app) not in offered_apps or admitted(src)]
    kept_ids = {id(src) for src in kept}
    return kept, [src for src in sources if id(src) not in kept_ids]


def is_archive(path: Path) -> bool:
    return path.name.endswith((".tgz", ".tar.gz"))


def walk(folder: Path, *, apps: bool = True) -> list[Path]:
    """Chart folders, .tgz files and (with `apps`) app folders under `folder`, in path order, not
    descending into what it finds nor into hidden entries."""
    found = []
    for p in sorted(x for x in folder.iterdir() if not x.name.startswith(".")):
        if p.is_dir() and ((p / "Chart.yaml").exists() or (apps and (p / MANIFEST_FILE).exists())):
            found.append(p)
        elif p.is_dir():
            found.extend(walk(p, apps=apps))
        elif is_archive(p):
            found.append(p)
    return found


def resolve(paths: list[Path], target_names: list[str] | None = None) -> list[ChartSource]:
    """Every chart named by `paths`: folders holding Chart.yaml, .tgz files, app manifests, or
    folders of those (searched one level deep, in name order)."""
    out: list[ChartSource] = []
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if path.is_file() and is_archive(path):
            out.append(from_archive(path))
        elif path.is_file() and path.suffix in (".yaml", ".yml"):
            out.extend(from_app(path, target_names))
        elif path.is_dir() and (path / "Chart.yaml").exists():
            out.append(from_folder(path))
        elif path.is_dir() and (path / MANIFEST_FILE).exists():
            out.extend(from_app(path / MANIFEST_FILE, target_names))
        elif path.is_dir():
            found = walk(path)
            if not found:
                raise InputError(f"{path}: holds no chart folder, chart archive or app manifest")
            out.extend(resolve(found, target_names))
        else:
            raise InputError(f"{path}: not a chart folder, a .tgz chart or an app manifest")
    return out


def single(path: Path, target_name: str) -> ChartSource:
    """The one chart `path` names (an app manifest rendered for `target_name`)."""
    found = resolve([path], [target_name] if path.suffix in (".yaml", ".yml") or (path / MANIFEST_FILE).exists() else None)
    if len(found) != 1:
        raise InputError(f"{path}: holds {len(found)} charts; name one chart")
    return found[0]
