"""Loading app manifests: the bundled apps load, bad ones fail with file:line and write nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import APPS

from olares_pack.apps.load import load_app, parse_app
from olares_pack.apps.manifest import LlamaCppApp, VllmApp
from olares_pack.cli import main
from olares_pack.common.errors import ExitCode, InputError

GOOD = (APPS / "llamacppqwen36mtpone" / "app.yaml").read_text()


def test_bundled_apps_load() -> None:
    llama = load_app(APPS / "llamacppqwen36mtpone")
    vllm = load_app(APPS / "vllmqwen36turbo27bone")
    assert isinstance(llama, LlamaCppApp) and isinstance(vllm, VllmApp)
    assert llama.version == "1.0.15"
    assert llama.server.speculative is not None and llama.server.speculative.type == "draft-mtp"
    assert llama.model.files[0].name == "Qwen3.6-27B-UD-Q3_K_XL.gguf"
    assert vllm.model.files == []  # the whole repo is fetched


def test_unpinned_image_is_a_warning() -> None:
    app = parse_app(GOOD)
    assert any("not pinned by digest" in w for w in app.warnings())
    pinned = GOOD.replace("    digest: null", "    digest: sha256:" + "ab" * 32)
    # the shared form's helper images (llm-init, its chown step; the legacy target's proxy) are
    # warned about too
    assert [w for w in parse_app(pinned).warnings() if "not pinned" in w] == [
        "llamacppqwen36mtpone: image docker.io/beclab/llm-init:v1.3.8 is not pinned by digest (add engine.llm_init.digest: sha256:...)",
        "llamacppqwen36mtpone: image docker.io/beclab/aboveos-busybox:1.37.0 is not pinned by digest (add engine.chown_image.digest: sha256:...)",
        "llamacppqwen36mtpone: image docker.io/beclab/aboveos-bitnami-openresty:1.25.3-2 is not pinned by digest "
        "(add engine.proxy_image.digest: sha256:...)"]
    helpers = pinned.replace("  build: ad27757", "  build: ad27757\n  llm_init: {repository: docker.io/beclab/llm-init, tag: v1.3.8, "
                             "digest: sha256:" + "cd" * 32 + "}\n  chown_image: {repository: docker.io/beclab/aboveos-busybox, "
                             "tag: 1.37.0, digest: sha256:" + "ef" * 32 + "}\n  proxy_image: {repository: "
                             "docker.io/beclab/aboveos-bitnami-openresty, tag: 1.25.3-2, digest: sha256:" + "01" * 32 + "}")
    assert not any("not pinned" in w for w in parse_app(helpers).warnings())


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


BAD_CASES = [
    # (what, replace this, with this, line marker, field path, message fragment)
    ("unknown field", "  ctx_size: 262144", "  ctx_size: 262144\n  ctx_sizee: 4096", "ctx_sizee", "server.ctx_sizee", "unknown field"),
    ("wrong type", "  parallel: 1", "  parallel: lots", "parallel: lots", "server.parallel", "integer"),
    ("bad quantity", "memory: {request: 20Gi, limit: 40Gi}", "memory: {request: 20Gb, limit: 40Gi}", "memory:", "resources.memory.request", "not a Kubernetes quantity"),
    ("request > limit", "cpu: {request: 4, limit: 16}", "cpu: {request: 32, limit: 16}", "cpu: {request: 32", "resources.cpu", "larger than limit"),
    ("bad name", "name: llamacppqwen36mtpone", "name: llama-cpp-qwen", "name: llama-cpp-qwen", "name", "not an Olares app name"),
    ("reserved name", "name: llamacppqwen36mtpone", "name: system", "name: system", "name", "reserved"),
    ("bad digest", "    digest: null", "    digest: sha256:1234", "digest: sha256:1234", "engine.image.digest", "not an image digest"),
    ("bad engine", "  kind: llamacpp", "  kind: ollama", "kind: ollama", "engine.kind", "one of 'llamacpp', 'vllm'"),
    ("bad cache type", "cache_type: {k: q4_0, v: q4_0}", "cache_type: {k: q7_0, v: q4_0}", "cache_type:", "server.cache_type.k", "q4_0"),
]


@pytest.mark.parametrize("what,old,new,marker,path,fragment", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_manifest_fails_with_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, old: str, new: str, marker: str, path: str, fragment: str
) -> None:
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    app_dir = tmp_path / "apps" / "llamacppqwen36mtpone"
    app_dir.mkdir(parents=True)
    (app_dir / "app.yaml").write_text(text)
    out = tmp_path / "out"

    code = main(["render", str(app_dir), "--out", str(out)])

    assert code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line per problem, and these inputs have one problem
    line_no = _line_of(text, marker)
    assert re.search(rf"app\.yaml:{line_no}: {re.escape(path)}: .*{re.escape(fragment)}", lines[0]), lines[0]
    assert not out.exists()  # nothing written


def test_several_problems_are_all_reported(tmp_path: Path) -> None:
    text = GOOD.replace("  parallel: 1", "  parallel: 0").replace("  port: 8000", "  port: 0")
    with pytest.raises(InputError) as exc:
        parse_app(text, tmp_path / "app.yaml")
    paths = sorted(p.path for p in exc.value.problems)
    assert paths == ["server.parallel", "server.port"]


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    f = tmp_path / "app.yaml"
    f.write_text("name: x\nserver: [unclosed\n")
    with pytest.raises(InputError) as exc:
        load_app(f)
    assert re.search(r"app\.yaml:\d+: .*YAML syntax error", str(exc.value))


def test_folder_must_match_name(tmp_path: Path) -> None:
    d = tmp_path / "otherfolder"
    d.mkdir()
    (d / "app.yaml").write_text(GOOD)
    with pytest.raises(InputError, match="differs from its folder"):
        load_app(d)


def test_cpu_mode_is_llamacpp_only() -> None:
    text = (APPS / "vllmqwen36turbo27bone" / "app.yaml").read_text().replace("targets: [current]", "targets: [current]\nmodes: [nvidia, cpu]")
    with pytest.raises(InputError, match="cpu mode"):
        parse_app(text)


def _plain(node: object) -> object:
    """ruamel's round-trip types as plain data (keys as strings, as both readers give them)."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    for t in (int, float, str):
        if isinstance(node, t):
            return t(node)
    return node


TRICKY = """\
on_word: on
yes_word: yes
off_quoted: "off"
octal_looking: 0555
octal: 0o17
hex: 0x1f
underscored: 1_000
exponent: 1e3
float: 0.97
version: 1.0
sexagesimal: 1:30
date: 2026-05-21
null_word: null
tilde: ~
empty:
true_word: true
8000: port
block: |
  two
  lines
"""


@pytest.mark.parametrize("text", [TRICKY, GOOD, (APPS / "vllmqwen36turbo27bone" / "app.yaml").read_text()],
                         ids=["tricky", "llama", "vllm"])
def test_the_fast_reader_reads_what_the_round_trip_reader_reads(text: str) -> None:
    """libyaml (with the YAML 1.2 core schema) and ruamel's round-trip reader agree value for value."""
    from olares_pack.common.yamlsrc import fast_load, roundtrip_yaml

    fast = fast_load(text, Path("x.yaml"))
    assert fast == _plain(roundtrip_yaml().load(text))
    if text is TRICKY:
        assert (fast["on_word"], fast["yes_word"], fast["octal_looking"], fast["underscored"]) == ("on", "yes", 555, 1000)
        assert (fast["octal"], fast["hex"], fast["exponent"], fast["sexagesimal"], fast["8000"]) == (15, 31, 1000.0, "1:30", "port")


def test_a_key_given_twice_is_an_error_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        parse_app(GOOD.replace("title: Qwen36 27B Long Context\n", "title: a\ntitle: b\n"), tmp_path / "app.yaml")
    assert re.search(r"app\.yaml:\d+: YAML syntax error: found duplicate key 'title'", str(exc.value))


@pytest.mark.parametrize("text, line, fragment", [
    ("a: &x 1\nb: *x\n", 1, "used again through an alias"),
    ("base: &b {k: v}\nmore:\n  <<: *b\n", 1, "used again through an alias"),
    ("x: " + "[" * 40 + "]" * 40 + "\n", 1, "nested deeper than 32 levels"),
    ("x: " + "[" * 2000 + "]" * 2000 + "\n", 1, "maximum nesting depth"),
    ("a: 1\na: 2\n", 2, "found duplicate key 'a'"),
], ids=["alias", "merge", "deep", "very-deep", "duplicate"])
def test_yaml_shapes_that_are_refused_before_anything_is_built(text: str, line: int, fragment: str) -> None:
    from olares_pack.common.yamlsrc import fast_load

    with pytest.raises(InputError) as exc:
        fast_load(text, Path("app.yaml"))
    assert f"app.yaml:{line}: " in str(exc.value) and fragment in str(exc.value)


def test_an_alias_bomb_is_refused_without_expanding(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    (tmp_path / "app.yaml").write_text("\n".join(lines) + "\n")  # 10^9 strings once expanded
    assert main(["lint", str(tmp_path / "app.yaml")]) == ExitCode.INPUT


def test_undecodable_bytes_name_their_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "llamacppqwen36mtpone"
    d.mkdir()
    (d / "app.yaml").write_bytes(GOOD.encode().replace(b"title: Qwen36", b"title: Qwen\xff36"))
    assert main(["render", str(d), "--out", str(tmp_path / "out")]) == ExitCode.INPUT
    line = GOOD.splitlines().index(next(x for x in GOOD.splitlines() if x.startswith("title: "))) + 1
    assert f"app.yaml:{line}: not UTF-8 text (byte 0xff" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
