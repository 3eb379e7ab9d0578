"""`olares-pack propose` against the loopback registry and the local hub (fixtures of
test_outdated.py): the next version's draft in app.yaml, its checks, and refusals that write
nothing. The replay: from 1.0.8 toward upstream llama.cpp b9409."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from fakehub import FakeHub
from test_outdated import (
    APP,
    APPS,
    C2,
    NEW_QUANT,
    NEW_REPO,
    OLD_REPO,
    QUANT,
    SHOWN_HOST,
    Upstream,
    catalogue_at_1_0_8,
    docs_block,
    local_hub,
    needs_registry,
    upstream_registry,
)

from olares_pack.cli import main
from olares_pack.common.errors import ExitCode

_upstream = pytest.fixture(scope="module", name="upstream")(upstream_registry)
_hub = pytest.fixture(name="hub")(local_hub)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".olares-pack" not in p.parts}


def propose(apps: Path, up: Upstream, *args: str) -> list[str]:
    return ["propose", APP, *args, "--apps-dir", str(apps), "--upstream-image", up.repo("ggml-org/llama.cpp"),
            "--date", "2026-05-22"]


@needs_registry
def test_replay_1_0_8_proposes_draft_mtp_the_new_repository_and_says_why(
        upstream: Upstream, hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], update_golden: bool) -> None:
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    before = (apps / APP / "app.yaml").read_text()
    code = main(propose(apps, upstream))
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    assert out.split() == [f"apps/{APP}/app.yaml", f"apps/{APP}/model.lock.json"]
    after = (apps / APP / "app.yaml").read_text()
    doc = yaml.safe_load(after)
    assert doc["version"] == "1.0.9"
    # the newest upstream build found, its digest from the registry
    assert doc["engine"]["image"] == {"repository": upstream.repo("ggml-org/llama.cpp"), "tag": "server-cuda-b9409",
                                      "digest": upstream.digests["ggml-org/llama.cpp:server-cuda-b9409"]}
    assert doc["engine"]["build"] == "b9409"
    # the arguments translated: the renamed value; the default change noted, the app's own 5 kept
    assert doc["server"]["speculative"] == {**doc["server"]["speculative"], "type": "draft-mtp", "draft_n_max": 5}
    # the model under its new name, pinned, with its file's size and sha256 from the hub
    gguf = hub.repos[NEW_REPO].commits[C2][QUANT]
    assert doc["model"]["repo"] == NEW_REPO and doc["model"]["revision"] == C2
    [f] = doc["model"]["files"] if "files" in doc["model"] else [doc["model"]]
    assert (f["size"], f["sha256"]) == (len(gguf), hashlib.sha256(gguf).hexdigest())
    # the changelog draft: each change with its reason and upstream reference
    entry = doc["changelog"][-1]
    assert (entry["version"], str(entry["date"])) == ("1.0.9", "2026-05-22")
    texts = [c["text"] for c in entry["changes"]]
    assert any(t.startswith("--spec-type mtp → draft-mtp: same mode, renamed when the MTP branch was merged "
                            "(PR #22673, first in a llama.cpp build between b9101 and b9254, 2026-05-13)") for t in texts), texts
    assert any("--spec-draft-n-max 5 kept: the upstream default became 3 (was 16) (PR #23269" in t for t in texts)
    assert f"Hugging Face repository renamed upstream: {OLD_REPO} → {NEW_REPO} (the hub redirects the old name to it)" in texts
    assert entry["notes"].startswith("Not yet measured: no bench record for 1.0.9")
    # comments and order kept: the old text is the new one's prefix up to the changelog
    assert after.startswith("# the example app as 1.0.8 published it\n")
    assert list(doc) == list(yaml.safe_load(before))
    # what a release would check, printed
    assert "lint: 0 error(s)" in err and "GPU memory on llama.cpp b9409: " in err
    assert "Changes from llamacppqwen36mtpone 1.0.8 to llamacppqwen36mtpone 1.0.9 (draft)" in err
    assert "- arguments: `--spec-type` mtp → draft-mtp" in err
    assert "not yet measured" in err
    # as the how-to page shows them
    shown = (f"$ olares-pack propose {APP} --upstream-image {upstream.repo('ggml-org/llama.cpp')} --date 2026-05-22\n"
             + err + out)
    docs_block("propose", shown.replace(upstream.host, SHOWN_HOST), update_golden)
    docs_block("changelog", after[after.index("  - version: 1.0.9\n"):].replace(upstream.host, SHOWN_HOST), update_golden)


@needs_registry
@pytest.mark.parametrize(("args", "expected"), [
    (["--engine-build", "b12345"], "llama.cpp build 'b12345' is not in the flag registry"),
    (["--engine-build", "b9553"], "server-cuda-b9553: not found"),  # known build, no such tag (only cuda13)
    (["--image-tag", "9.9.9"], "names no llama.cpp build"),
    (["--image-tag", "server-cuda-b9999"], "server-cuda-b9999: not found on"),
    (["--image-tag", "server-cuda-b9999"], "nearest tags: 0.1.0"),  # the fork's only tag: the docs promise them
    (["--engine-build", "b9101"], "cannot move to llama.cpp b9101: --spec-type mtp: not accepted by llama.cpp b9101"),
    (["--model-revision", "v404"], "no such revision"),
    (["--quant", "absent.gguf"], f"absent.gguf is not in {NEW_REPO} at {C2} (its GGUF files: {QUANT}, {NEW_QUANT})"),
])
def test_a_refused_proposal_writes_nothing(upstream: Upstream, hub: FakeHub, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], args: list[str], expected: str) -> None:
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    state = snapshot(tmp_path / "repo")
    assert main(propose(apps, upstream, *args)) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert expected in err, err
    assert snapshot(tmp_path / "repo") == state


@needs_registry
def test_a_build_and_a_quant_asked(upstream: Upstream, hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    assert main(propose(apps, upstream, "--engine-build", "b9254", "--quant", NEW_QUANT, "--dry-run")) == ExitCode.OK
    out, _ = capsys.readouterr()
    assert "+    tag: server-cuda-b9254\n" in out and f"name: {NEW_QUANT}\n" in out and "+    type: draft-mtp\n" in out
    assert "b9409" not in out


def test_an_unreachable_registry_writes_nothing(hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from registry import free_port

    closed = f"127.0.0.1:{free_port()}"
    apps = catalogue_at_1_0_8(tmp_path / "repo", f"{closed}/aamsellem/llamacpp-mtp")
    state = snapshot(tmp_path / "repo")
    code = main(["propose", APP, "--apps-dir", str(apps), "--upstream-image", f"{closed}/ggml-org/llama.cpp"])
    assert code == ExitCode.INPUT and "cannot reach the registry" in capsys.readouterr().err
    assert snapshot(tmp_path / "repo") == state


@needs_registry
def test_a_removed_flag_in_extra_args_takes_its_successor(upstream: Upstream, hub: FakeHub, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    path = apps / APP / "app.yaml"
    path.write_text(path.read_text().replace("  extra_args: []\n", "  extra_args:\n  - --draft-min\n  - '2'\n"))
    assert main(propose(apps, upstream, "--engine-build", "b9254")) == ExitCode.OK, capsys.readouterr().err
    doc = yaml.safe_load(path.read_text())
    assert doc["server"]["extra_args"] == ["--spec-draft-n-min", "2"]
    assert any(c["text"].startswith("--draft-min → --spec-draft-n-min: --draft-min was removed upstream")
               for c in doc["changelog"][-1]["changes"])


def _upstream_with_an_unknown_newest_build(upstream: Upstream, tmp_path: Path) -> str:
    """An upstream repository whose newest build (b99999) is newer than the flag registry."""
    from registry import Layout

    lay = Layout(tmp_path / "layout")
    for b in ("b9254", "b9409", "b99999"):
        lay.multiarch(f"server-cuda-{b}", text=f"unknown-newest:{b}")
        upstream.reg.push(tmp_path / "layout", f"server-cuda-{b}", "unknown-newest/llama.cpp")
    return upstream.repo("unknown-newest/llama.cpp")


@needs_registry
def test_a_fork_moves_to_the_newest_known_build_and_says_why_not_the_newest(
        upstream: Upstream, hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 52.4: the newest upstream build not in the flag registry made propose drop the engine
    # move without a word (the draft changed only the model, --spec-type mtp stayed)
    ups = _upstream_with_an_unknown_newest_build(upstream, tmp_path)
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    # outdated on the same state names the target propose takes: its flag items are against b9409, not the unknown build
    code = main(["outdated", APP, "--apps-dir", str(apps), "--upstream-image", ups, "--format", "json"])
    items = json.loads(capsys.readouterr().out)["apps"][0]["items"]
    assert any(i["kind"] == "renamed-value" and "→ b9409" in i["source"] for i in items)
    code = main(["propose", APP, "--apps-dir", str(apps), "--upstream-image", ups, "--date", "2026-05-22"])
    err = capsys.readouterr().err
    assert code == ExitCode.OK, err
    doc = yaml.safe_load((apps / APP / "app.yaml").read_text())
    assert doc["engine"]["image"]["tag"] == "server-cuda-b9409" and doc["engine"]["build"] == "b9409"
    assert doc["server"]["speculative"]["type"] == "draft-mtp"
    why = "llama.cpp b99999, the newest build found, is not in the flag registry"
    assert why in err and "the draft moves to b9409" in err
    assert why in doc["changelog"][-1]["notes"]


@needs_registry
def test_the_changelog_names_a_change_of_the_served_model_name(upstream: Upstream, hub: FakeHub, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # issue 52.7: without --alias the API answers with the model path, which holds the repository's
    # name and revision: the rename changes the name every client sends
    apps = catalogue_at_1_0_8(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    path = apps / APP / "app.yaml"
    doc = yaml.safe_load(path.read_text())
    had_alias = doc["server"].pop("alias", None)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    assert main(propose(apps, upstream, "--engine-build", "b9254")) == ExitCode.OK, capsys.readouterr().err
    texts = [c["text"] for c in yaml.safe_load(path.read_text())["changelog"][-1]["changes"]]
    [line] = [t for t in texts if t.startswith("the served model name changes: ")]
    assert OLD_REPO in line.split(" → ")[0] and NEW_REPO in line.split(" → ")[1] and C2 in line
    if had_alias:  # with an alias the name stays: no such line
        apps = catalogue_at_1_0_8(tmp_path / "repo2", upstream.repo("aamsellem/llamacpp-mtp"))
        assert main(propose(apps, upstream, "--engine-build", "b9254")) == ExitCode.OK
        doc = yaml.safe_load((apps / APP / "app.yaml").read_text())
        assert not any("served model name" in c["text"] for c in doc["changelog"][-1]["changes"])


def _current_catalogue(root: Path, fork: str) -> Path:
    """The bundled catalogue as it stands (1.0.14 published, its model at the branch `main`), the
    image on `fork` so that the loopback registry answers for it."""
    (root / "apps").mkdir(parents=True)
    shutil.copytree(APPS / APP, root / "apps" / APP)
    path = root / "apps" / APP / "app.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["engine"]["image"] = {"repository": fork, "tag": "0.1.0", "digest": None}
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    shutil.copytree(APPS.parent / "packages", root / "packages")
    shutil.copy(APPS.parent / "market-index.json", root / "market-index.json")
    return root / "apps"


def _weights(apps: Path, version: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["vram", APP, "--version", version, "--apps-dir", str(apps), "--format", "json"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    return {t["name"]: t["mib"] for t in doc["estimates"][0]["terms"]}


@needs_registry
def test_a_draft_never_changes_what_a_published_version_reports(upstream: Upstream, hub: FakeHub, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # issue 52.13: propose pinned the model of the draft and dropped the lock entry that 1.0.14
    # (revision `main`) reads; `vram --version 1.0.14` then read the draft's GGUF (13,146 MiB → 0)
    apps = _current_catalogue(tmp_path / "repo", upstream.repo("aamsellem/llamacpp-mtp"))
    published = _weights(apps, "1.0.14", capsys)
    assert published["weights"] > 10_000
    assert main(propose(apps, upstream, "--engine-build", "b9254")) == ExitCode.OK, capsys.readouterr().err
    capsys.readouterr()
    assert yaml.safe_load((apps / APP / "app.yaml").read_text())["model"]["revision"] == C2
    assert _weights(apps, "1.0.14", capsys) == published
    # the draft reads its own entry: the GGUF pinned at C2, not the published one
    assert main(["vram", APP, "--apps-dir", str(apps), "--format", "json"]) == ExitCode.OK
    draft = json.loads(capsys.readouterr().out)
    assert {t["name"]: t["mib"] for t in draft["estimates"][0]["terms"]}["weights"] < published["weights"]
