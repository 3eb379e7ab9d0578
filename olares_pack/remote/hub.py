"""Hugging Face through huggingface_hub: a revision's commit and files, and reads of one file.

huggingface_hub honours HF_ENDPOINT (a mirror, or the tests' local hub) and HF_TOKEN / the token
of `hf auth login`. Every failure becomes one HubError line (exit 2).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from olares_pack.common.errors import HubError, InputError

COMMIT_LEN = 40




@dataclass(frozen=True)
class HubFile:
    path: str
    size: int
    sha256: str | None  # the LFS oid: sha256 of the file's bytes; None for a file kept in git
    blob_id: str  # the git blob id


@dataclass(frozen=True)
class ModelPin:
    """What a revision of a model repository names: its commit and its files at that commit."""

    repo: str
    revision: str  # as asked (a branch, a tag or a commit)
    commit: str
    files: tuple[HubFile, ...]

    def file(self, path: str) -> HubFile | None:
        return next((f for f in self.files if f.path == path), None)

    def to_dict(self) -> dict[str, object]:
        return {"repo": self.repo, "revision": self.revision, "commit": self.commit,
                "files": [{"path": f.path, "size": f.size, "sha256": f.sha256, "blob_id": f.blob_id} for f in self.files]}


def _explain(exc: Exception, what: str) -> HubError:
    """One line for what huggingface_hub raised."""
    from huggingface_hub import errors

    status = getattr(getattr(exc, "response", None), "status_code", None)
    headers = getattr(getattr(exc, "response", None), "headers", {}) or {}
    if isinstance(exc, errors.GatedRepoError):
        return HubError(f"{what}: a gated model: accept its terms on Hugging Face and set HF_TOKEN")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return HubError(f"{what}: no such model, or a private one (HTTP {status}); set HF_TOKEN if it is yours")
    if isinstance(exc, errors.RevisionNotFoundError):
        return HubError(f"{what}: no such revision (branch, tag or commit) on Hugging Face")
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return HubError(f"{what}: no such file at that revision")
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return HubError(f"{what}: HF_HUB_OFFLINE is set: Hugging Face cannot be asked")
    if status == 429:
        after = headers.get("Retry-After")
        return HubError(f"{what}: rate-limited by Hugging Face (429)" + (f"; retry after {after} s" if after else ""))
    if status == 401:
        return HubError(f"{what}: unauthorised: Hugging Face refused the token (HF_TOKEN)")
    if status == 403:
        return HubError(f"{what}: Hugging Face refuses access (403); check the token's permissions")
    if status is not None and status >= 500:
        return HubError(f"{what}: Hugging Face is refusing requests (HTTP {status}); try again later")
    if status is not None:
        return HubError(f"{what}: Hugging Face answered HTTP {status}")
    return HubError(f"{what}: cannot reach Hugging Face (no network?): {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def endpoint() -> str | None:
    """HF_ENDPOINT read at each call (huggingface_hub reads it once, at import)."""
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or None


def _api():  # type: ignore[no-untyped-def]
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint(), library_name="olares-pack")


def resolve_model(repo: str, revision: str) -> ModelPin:
    """The commit `revision` names and every file at it, with sizes and LFS sha256
    (GET /api/models/{repo}/revision/{revision}?blobs=true, as HfApi.model_info asks)."""
    try:
        info = _api().model_info(repo, revision=revision, files_metadata=True)
    except Exception as exc:  # noqa: BLE001 - huggingface_hub raises HTTP, OS and its own errors
        raise _explain(exc, f"{repo}@{revision}") from None
    if not info.sha or len(info.sha) != COMMIT_LEN:
        raise HubError(f"{repo}@{revision}: Hugging Face named no commit for it")
    files = []
    for s in info.siblings or []:
        if s.size is None:
            raise HubError(f"{repo}@{revision}: Hugging Face gave no size for {s.rfilename}")
        files.append(HubFile(s.rfilename, int(s.size), s.lfs.sha256 if s.lfs else None, s.blob_id or ""))
    return ModelPin(repo, revision, info.sha, tuple(sorted(files, key=lambda f: f.path)))


@contextmanager
def open_file(repo: str, path: str, revision: str, block_size: int = 1 << 20) -> Iterator[BinaryIO]:
    """A read-only file over HTTP range requests (HfFileSystem: blocks of `block_size`, never the whole file)."""
    from huggingface_hub import HfFileSystem

    what = f"{repo}/{path}@{revision}"
    fs = HfFileSystem(endpoint=endpoint(), skip_instance_cache=True)
    try:
        f = fs.open(f"{repo}/{path}", "rb", revision=revision, block_size=block_size, cache_type="readahead")
    except FileNotFoundError:
        raise HubError(f"{what}: no such file at that revision") from None
    except Exception as exc:  # noqa: BLE001
        raise _explain(exc, what) from None
    try:
        yield f  # type: ignore[misc]
    except InputError:
        raise
    except (ValueError, KeyError, struct.error) as exc:
        if not isinstance(exc, OSError):
            raise  # the caller's parsing, not the transfer
        raise _explain(exc, what) from None
    except Exception as exc:  # noqa: BLE001 - a read that failed half-way
        raise _explain(exc, what) from None
    finally:
        f.close()


# ---------------------------------------------------------------- what a repository is now (outdated, propose)


@dataclass(frozen=True)
class Commit:
    commit: str
    date: str  # ISO 8601 as the hub gives it
    title: str


@dataclass(frozen=True)
class RepoState:
    """A model repository as the hub answers for it now.

    status: ok; moved (the hub answered under another name: a renamed repository redirects, 307,
    and huggingface_hub follows it, so the model's `id` is the new name); gone (RepoNotFound);
    gated (files only for accounts granted access); no-revision (the revision asked names nothing);
    unreachable (no answer, or a refusal that says nothing of the repository)."""

    asked: str
    revision: str
    status: str
    name: str  # the name the hub answers under
    detail: str = ""
    pin: ModelPin | None = None
    gated: bool = False
    commits: tuple[Commit, ...] = ()  # newest first, down to the asked commit when known


def repo_state(repo: str, revision: str = "main", since: str | None = None) -> RepoState:
    """What `repo` at `revision` is now: its commit and files (GET /api/models/{repo}/revision/{rev}
    ?blobs=true, redirects followed), and the commits on it after `since` (GET /api/models/{repo}/
    commits/{rev}); every failure becomes a status, never an exception."""
    from huggingface_hub import errors

    api = _api()
    try:
        info = api.model_info(repo, revision=revision, files_metadata=True)
    except errors.GatedRepoError as exc:
        return RepoState(repo, revision, "gated", repo, str(_explain(exc, repo)), gated=True)
    except errors.RepositoryNotFoundError as exc:
        return RepoState(repo, revision, "gone", repo, str(_explain(exc, repo)))
    except errors.RevisionNotFoundError as exc:
        return RepoState(repo, revision, "no-revision", repo, str(_explain(exc, f"{repo}@{revision}")))
    except Exception as exc:  # noqa: BLE001 - network and HTTP errors: nothing is known
        return RepoState(repo, revision, "unreachable", repo, str(_explain(exc, f"{repo}@{revision}")))
    name = str(info.id or repo)
    files = tuple(sorted((HubFile(s.rfilename, int(s.size or 0), s.lfs.sha256 if s.lfs else None, s.blob_id or "")
                          for s in info.siblings or []), key=lambda f: f.path))
    pin = ModelPin(name, revision, str(info.sha), files)
    commits: list[Commit] = []
    if since is not None and since != info.sha:
        try:
            for c in api.list_repo_commits(name, revision=str(info.sha)):
                if c.commit_id == since:
                    break
                commits.append(Commit(c.commit_id, c.created_at.isoformat(), c.title))
        except Exception:  # noqa: BLE001 - the history is a detail; the commit itself is known
            commits = []
    gated = bool(info.gated)
    status = "moved" if name != repo else ("gated" if gated else "ok")
    detail = f"{repo} now answers as {name} (the hub redirects the old name)" if status == "moved" else (
        f"{repo}: gated ({info.gated}): the device downloads it only with a token granted access" if gated else "")
    return RepoState(repo, revision, status, name, detail, pin, gated, tuple(commits))
