"""The local hub (tests/fakehub.py) checked against huggingface_hub itself: every route the
client calls for pin and vram --lock, read back through the client's own parsing and errors."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakehub import COMMIT, PAGE, REPO, FakeHub, serve
from huggingface_hub import (
    HfApi,
    HfFileSystem,
    get_hf_file_metadata,
    hf_hub_download,
    hf_hub_url,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile, RepoFolder

BIG = bytes(range(256)) * 8192  # 2 MiB, stored in LFS (.gguf)
MANY = PAGE * 2 + 7  # more files than two pages of the tree


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    with serve() as (fake, _):
        fake.files["m.gguf"] = BIG
        fake.files["README.md"] = b"# tiny\n"
        for i in range(MANY):
            fake.files[f"shards/part-{i:03d}.txt"] = f"shard {i}\n".encode()
        yield fake


def test_model_info_at_a_revision_with_files_metadata(hub: FakeHub) -> None:
    info = HfApi(endpoint=hub.url).model_info(REPO, revision="main", files_metadata=True)
    assert info.sha == COMMIT and info.id == REPO
    sib = {s.rfilename: s for s in info.siblings or []}
    assert len(sib) == MANY + 2
    assert sib["m.gguf"].size == len(BIG) and sib["m.gguf"].lfs is not None
    assert sib["m.gguf"].lfs.sha256 == hashlib.sha256(BIG).hexdigest()
    assert sib["README.md"].lfs is None and sib["README.md"].blob_id == hashlib.sha1(b"blob 7\0# tiny\n").hexdigest()  # noqa: S324
    # without blobs=true the hub lists names only
    plain = HfApi(endpoint=hub.url).model_info(REPO, revision=COMMIT)
    assert plain.sha == COMMIT and {s.size for s in plain.siblings or []} == {None}


def test_the_tree_pages_and_folders(hub: FakeHub) -> None:
    api = HfApi(endpoint=hub.url)
    everything = list(api.list_repo_tree(REPO, revision="main", recursive=True))
    files = [e for e in everything if isinstance(e, RepoFile)]
    assert len(files) == MANY + 2 and [e.path for e in everything if isinstance(e, RepoFolder)] == ["shards"]
    assert sum(1 for r in hub.requests if "/tree/" in str(r["path"])) == 3  # followed the Link header twice
    gguf = next(f for f in files if f.path == "m.gguf")
    assert gguf.lfs is not None and gguf.lfs.sha256 == hashlib.sha256(BIG).hexdigest() and gguf.size == len(BIG)
    top = list(api.list_repo_tree(REPO, revision="main"))
    assert sorted(e.path for e in top) == ["README.md", "m.gguf", "shards"]
    inside = list(api.list_repo_tree(REPO, path_in_repo="shards", revision="main"))
    assert len(inside) == MANY
    found = api.get_paths_info(REPO, ["m.gguf", "shards", "absent.txt"], revision="main")
    assert [(type(e).__name__, e.path) for e in found] == [("RepoFile", "m.gguf"), ("RepoFolder", "shards")]


def test_resolve_redirects_lfs_files_and_honours_ranges(hub: FakeHub, tmp_path: Path) -> None:
    meta = get_hf_file_metadata(hf_hub_url(REPO, "m.gguf", revision="main", endpoint=hub.url))
    assert (meta.commit_hash, meta.etag, meta.size) == (COMMIT, hashlib.sha256(BIG).hexdigest(), len(BIG))
    path = hf_hub_download(REPO, "m.gguf", revision="main", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_bytes() == BIG and COMMIT in path
    assert any(str(r["path"]).startswith("/lfs/") for r in hub.requests)  # through the redirect
    fs = HfFileSystem(endpoint=hub.url, skip_instance_cache=True)
    with fs.open(f"{REPO}/m.gguf", "rb", revision=COMMIT, block_size=4096) as f:
        f.seek(1_000_000)
        assert f.read(10) == BIG[1_000_000:1_000_010]
    assert hub.bytes_served < 2 * len(BIG)  # ranges, not the file again


def test_errors_as_the_client_reads_them(hub: FakeHub, tmp_path: Path) -> None:
    api = HfApi(endpoint=hub.url)
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("acme/absent")
    with pytest.raises(RevisionNotFoundError):
        api.model_info(REPO, revision="v9")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(REPO, "absent.bin", cache_dir=tmp_path, endpoint=hub.url)
    hub.add_commit("acme/private", "1" * 40, {"a.txt": b"a"}, "main", private=True)
    hub.token = "hf_secret"
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("acme/private")
    assert HfApi(endpoint=hub.url, token="hf_secret").model_info("acme/private").sha == "1" * 40
    # a gated repository: listed to anyone, its files only with a token that was granted access
    hub.add_commit("acme/gated", "2" * 40, {"m.gguf": BIG}, "main")
    hub.repos["acme/gated"].gated = True
    assert api.model_info("acme/gated").gated == "manual"
    with pytest.raises(GatedRepoError):
        hf_hub_download("acme/gated", "m.gguf", cache_dir=tmp_path, endpoint=hub.url)
    with pytest.raises(GatedRepoError), HfFileSystem(endpoint=hub.url, skip_instance_cache=True).open("acme/gated/m.gguf", "rb") as f:
        f.read(16)
    with HfFileSystem(endpoint=hub.url, token="hf_secret", skip_instance_cache=True).open("acme/gated/m.gguf", "rb") as f:
        assert f.read(16) == BIG[:16]


def test_a_renamed_repository_redirects_and_the_client_follows(hub: FakeHub, tmp_path: Path) -> None:
    """The hub answers a renamed repository's old name with a 307 to the new one; huggingface_hub
    follows it, so the old name still works and the model's id is the new name."""
    hub.repos["acme/tiny-v2-GGUF"] = hub.repos.pop(REPO)
    hub.renames[REPO] = "acme/tiny-v2-GGUF"
    api = HfApi(endpoint=hub.url)
    info = api.model_info(REPO, revision="main", files_metadata=True)
    assert info.id == "acme/tiny-v2-GGUF" and info.sha == COMMIT
    assert any(r["path"].startswith(f"/api/models/{REPO}/") for r in hub.requests)  # type: ignore[union-attr]
    path = hf_hub_download(REPO, "m.gguf", revision="main", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_bytes() == BIG
    assert [e.path for e in api.get_paths_info(REPO, ["m.gguf"], revision="main")] == ["m.gguf"]


def test_refs_and_commits(hub: FakeHub) -> None:
    api = HfApi(endpoint=hub.url)
    for i in range(PAGE + 3):  # more commits than a page: the client follows the Link header
        hub.add_commit(REPO, f"{i:040x}", {"m.gguf": BIG}, "main", title=f"update {i}")
    hub.repos[REPO].refs["v1"] = COMMIT
    hub.repos[REPO].tags.add("v1")
    refs = api.list_repo_refs(REPO)
    assert [(b.name, b.target_commit) for b in refs.branches] == [("main", f"{PAGE + 2:040x}")]
    assert [(t.name, t.ref, t.target_commit) for t in refs.tags] == [("v1", "refs/tags/v1", COMMIT)]
    log = api.list_repo_commits(REPO, revision="main")
    assert len(log) == PAGE + 4 and log[0].title == f"update {PAGE + 2}" and log[-1].commit_id == COMMIT
    assert [c.commit_id for c in api.list_repo_commits(REPO, revision=COMMIT)] == [COMMIT]


def test_missing_and_gated_as_an_authenticated_caller_sees_them(hub: FakeHub, tmp_path: Path) -> None:
    hub.token, hub.ungranted_token = "hf_granted", "hf_other"
    with pytest.raises(RepositoryNotFoundError) as missing:
        HfApi(endpoint=hub.url, token="hf_other").model_info("acme/absent")
    assert missing.value.response.status_code == 404
    with pytest.raises(RepositoryNotFoundError) as anonymous:
        HfApi(endpoint=hub.url, token=False).model_info("acme/absent")
    assert anonymous.value.response.status_code == 401
    hub.add_commit("acme/gated", "2" * 40, {"m.gguf": BIG}, "main")
    hub.repos["acme/gated"].gated = True
    with pytest.raises(GatedRepoError) as refused:
        hf_hub_download("acme/gated", "m.gguf", cache_dir=tmp_path, endpoint=hub.url, token="hf_other")
    assert refused.value.response.status_code == 403
    assert Path(hf_hub_download("acme/gated", "m.gguf", cache_dir=tmp_path / "ok", endpoint=hub.url,
                                token="hf_granted")).read_bytes() == BIG
