"""The documentation: references written from the code and up to date, every command, option, rule
and manifest field described, the README a front page whose links land, the architecture page
true to the package tree, and no text that a browser would swallow as HTML."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import ROOT
from markdown.extensions.toc import slugify

from olares_pack import docsgen
from olares_pack.lint.findings import RULES, RuleInfo

DOCS = ROOT / "docs"
README = ROOT / "README.md"


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "pending" not in p.relative_to(DOCS).parts)


# ---------------------------------------------------------------- generated references


def test_the_committed_references_are_what_the_code_gives() -> None:
    for name, content in docsgen.pages().items():
        assert (DOCS / "reference" / name).read_text() == content, f"docs/reference/{name} is stale: run `make docs`"


def test_check_names_a_stale_page_and_a_run_writes_it_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reference"
    assert docsgen.main(["--out", str(out)]) == 0
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(written) == sorted(docsgen.PAGES)
    assert docsgen.main(["--check", "--out", str(out)]) == 0
    rules = out / "rules.md"
    rules.write_text(rules.read_text().replace("| error |", "| warning |", 1))
    capsys.readouterr()
    assert docsgen.main(["--check", "--out", str(out)]) == 1
    assert str(rules) in capsys.readouterr().err and rules.read_bytes() != written["rules.md"]
    assert docsgen.main(["--out", str(out)]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == written


def test_the_references_do_not_depend_on_hash_order_or_working_folder(tmp_path: Path) -> None:
    """Another interpreter, another hash seed, another folder: the same bytes."""
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-m", "olares_pack.docsgen", "--out", str(tmp_path)], cwd=tmp_path, env=env,
                   check=True, capture_output=True)
    for name, content in docsgen.pages().items():
        assert (tmp_path / name).read_text() == content, name


def test_every_command_option_rule_and_field_is_described() -> None:
    assert docsgen.undescribed() == []


def test_a_missing_description_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from olares_pack.cli import cli

    @click.command("docs-probe")
    @click.option("--quiet-one", is_flag=True)
    def probe(quiet_one: bool) -> None:
        pass

    monkeypatch.setitem(cli.commands, "docs-probe", probe)
    monkeypatch.setitem(RULES, "docs.probe", RuleInfo("warning", "", "olares-pack policy", policy=True))
    missing = docsgen.undescribed()
    assert "command olares-pack docs-probe" in missing
    assert "option olares-pack docs-probe --quiet-one" in missing
    assert "rule docs.probe" in missing


def test_a_manifest_field_without_description_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from olares_pack.apps.manifest import Image

    monkeypatch.setattr(Image.model_fields["tag"], "description", None)
    assert docsgen.undescribed() == ["field Image.tag"]


def test_the_command_reference_lists_every_command_and_option() -> None:
    page = (DOCS / "reference" / "commands.md").read_text()
    for path, cmd, _ in docsgen.commands():
        section = page.split(f"## `{path}`\n", 1)[1].split("\n## ", 1)[0]
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden:
                assert f"`{p.opts[0]}`" in section, (path, p.opts[0])
                assert docsgen.text(p.help or "") in section, (path, p.opts[0])


def test_the_rule_reference_says_what_lint_explain_prints(capsys: pytest.CaptureFixture[str]) -> None:
    from olares_pack.cli import main

    page = (DOCS / "reference" / "rules.md").read_text()
    for rule in RULES:
        assert main(["lint", "--explain", rule]) == 0
        explained = dict(re.match(r"(\w[\w ]*):\s+(.*)$", line).groups()  # type: ignore[union-attr]
                         for line in capsys.readouterr().out.splitlines())
        section = page.split(f"## `{rule}` {{#{rule}}}\n", 1)[1].split("\n## ", 1)[0]
        assert f"- severity: {explained['severity']}\n" in section
        assert f"- class: {explained['class']}\n" in section
        assert f"- checks: {docsgen.text(explained['checks'])}\n" in section
        assert f"- source: {docsgen.text(explained['source'])}\n" in section
        since = re.match(r"Olares (\S+)", explained["applies to"])
        assert f"- releases: `{since.group(1) if since else 'all'}`" in section


def test_the_manifest_reference_lists_every_field_with_its_default() -> None:
    from olares_pack.apps import manifest as m

    page = (DOCS / "reference" / "manifest.md").read_text()
    assert "| `server.ctx_size` | integer ≥ `0`, ≤ `16777216` | required | --ctx-size; 0 = the model's trained context |" in page
    assert "| `engine.shared` | true/false | `true` |" in page
    for model in docsgen.manifest_models():
        for name, field in model.model_fields.items():
            assert re.search(rf"^\| `(\S+\.)?{name}` \|.*\| {re.escape(docsgen.text(field.description or ''))} \|$",
                             page, re.M), (model.__name__, name)
    assert m.LlamaServer.model_fields["ctx_size"].is_required()


# ---------------------------------------------------------------- the site's pages


def test_every_page_is_in_the_navigation() -> None:
    """MkDocs' --strict fails on a page left out of nav; here the same, without building."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed: list[str] = []

    def walk(nav: object) -> None:
        if isinstance(nav, str):
            listed.append(nav)
        elif isinstance(nav, list):
            for item in nav:
                walk(item)
        elif isinstance(nav, dict):
            for value in nav.values():
                walk(value)

    walk(config["nav"])
    assert sorted(listed) == sorted(p.relative_to(DOCS).as_posix() for p in pages())


def test_no_text_vanishes_as_html() -> None:
    """`<name>` outside code is an HTML tag to Markdown, and the page loses it."""
    for page in [README, *pages()]:
        body = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
        body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
        body = re.sub(r"(`+)(.+?)\1", "", body, flags=re.S)
        tags = re.findall(r"<[A-Za-z/][^>\n]*>", body)
        assert tags == [], f"{page.relative_to(ROOT)}: {tags}"
        lines = re.sub(r"(?ms)^```.*?^```", "", page.read_text()).splitlines()
        assert not [line for line in lines if re.match(r"#[^# !]", line)], page  # a wrapped '#123' reads as a heading


def test_the_architecture_page_names_every_subpackage() -> None:
    package = ROOT / "olares_pack"
    text = (DOCS / "developer" / "index.md").read_text()
    tree = text.split("```\nolares_pack/\n", 1)[1].split("```", 1)[0]
    named = {line.split()[0] for line in tree.splitlines() if line.strip()}
    subpackages = {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
    assert subpackages <= named, f"not in docs/developer/index.md: {sorted(subpackages - named)}"
    assert all((package / n.rstrip("/")).exists() for n in named), f"named but absent: {sorted(n for n in named if not (package / n.rstrip('/')).exists())}"


# ---------------------------------------------------------------- the README, a front page


def test_the_readme_is_a_front_page_with_the_two_commands_ci_runs() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    block = text.split("## Two commands\n", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]
    assert commands == ["make", "make test"]
    assert "exec make test" in (ROOT / ".ci" / "run").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^all: build$", makefile, re.M) and re.search(r"^test: .*\bdocs-check\b", makefile, re.M)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    out = set(re.findall(r"\{#([^}]+)\}", text))
    for title in re.findall(r"^#+ (.*?)(?: \{#[^}]+\})?$", text, re.M):
        out.add(slugify(re.sub(r"[`*]", "", title), "-"))
    return out


def test_every_link_of_the_readme_and_the_pages_lands() -> None:
    for page in [README, *pages()]:
        text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.is_file(), f"{page.relative_to(ROOT)}: {target}"
            if anchor:
                assert anchor in _anchors(dest), f"{page.relative_to(ROOT)}: {target}"


def test_the_readme_walk_is_the_getting_started_walk() -> None:
    def commands(text: str) -> list[str]:
        return [re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines()
                if line.startswith((".venv/bin/olares-pack ", "git add "))]

    readme = README.read_text().split("## Five minutes", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    page = (DOCS / "getting-started.md").read_text()
    walk = commands(readme)
    assert len(walk) == 7 and all(c in commands(page) for c in walk), [c for c in walk if c not in commands(page)]


def test_every_shell_block_of_getting_started_tells_the_walkthrough_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("walkthrough", ROOT / "tests" / "walkthrough.py")
    assert spec and spec.loader
    walkthrough = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "walkthrough", walkthrough)  # its dataclasses look their module up
    spec.loader.exec_module(walkthrough)
    page = (DOCS / "getting-started.md").read_text()
    blocks = walkthrough.blocks(page)
    assert len(blocks) == page.count("```sh\n")
    ran = [c for b in blocks if b.kind in walkthrough.KINDS_RUN for c in b.commands]
    assert any(" release myqwen " in c and "--dry-run" not in c for c in ran) and any(" serve " in c for c in ran)
    with pytest.raises(ValueError, match="without a `<!-- walkthrough"):
        walkthrough.blocks(page.replace("<!-- walkthrough: run -->\n", "", 1))
