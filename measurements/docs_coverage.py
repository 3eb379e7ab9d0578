"""Did every fact of the one-page README reach exactly one page of the documentation?

    .venv/bin/python bench/docs_coverage.py [REV] [--list]

Reads README.md as it was at REV (default e7bc030, the last commit with the 1,613-line README) and
cuts it into units: each sentence of prose, each line of a code block, each row of a table. A unit
is found in a page when the page's text, with Markdown's links, emphasis and line breaks taken
out, holds it. Prints how many units are in exactly one page (README.md or docs/**), in several,
and in none; `--list` lists the latter two. The lint rule table and the command table were
replaced by pages written from the code (docs/reference/): their rows are checked there by the
rule's id and fields, and by the command's options.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def flat(text: str) -> str:
    """Text as a reader sees it: no link targets, emphasis, heading marks or line breaks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\{#[^}]*\}", "", text)
    text = re.sub(r"[*]", "", text)
    text = re.sub(r"(?m)^#+ ", "", text)
    text = text.replace("\\|", "|").replace("\\", "")
    return " ".join(text.split())


def units(readme: str) -> list[tuple[str, str]]:
    """(kind, text) of every sentence, code line and table row of the old README."""
    out: list[tuple[str, str]] = []
    in_code = False
    para: list[str] = []

    def close() -> None:
        text = flat(" ".join(para))
        para.clear()
        for sentence in re.split(r"(?<=[.:;])\s+(?=[A-Z`(])", text):
            if len(sentence) > 12:
                out.append(("prose", sentence))

    for line in readme.splitlines():
        if line.strip().startswith("```"):
            close()
            in_code = not in_code
            continue
        if in_code:
            if line.strip():
                out.append(("code", " ".join(line.split())))
        elif line.startswith("|"):
            close()
            if not re.match(r"^\|[-|]+\|$", line):
                out.append(("row", flat(line)))
        elif line.startswith("#"):
            close()
        elif not line.strip():
            close()
        else:
            para.append(line)
    close()
    return out


def main(argv: list[str]) -> int:
    rev = next((a for a in argv if not a.startswith("-")), "e7bc030")
    readme = subprocess.run(["git", "show", f"{rev}:README.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    pages = {p.relative_to(ROOT).as_posix(): p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
             if "pending" not in p.parts}
    flat_pages = {name: flat(text) for name, text in pages.items()}
    code_pages = {name: {" ".join(line.split()) for line in text.splitlines()} for name, text in pages.items()}
    rules = pages["docs/reference/rules.md"]
    commands = pages["docs/reference/commands.md"]
    once = several = 0
    missing: list[str] = []
    shared: list[str] = []
    for kind, unit in units(readme):
        if kind == "row" and (m := re.match(r"\| `([a-z]+\.[a-z0-9-]+)` \| (error|warning|info) \| (installer|policy) \|", unit)):
            found = [n for n in ("docs/reference/rules.md",) if f"## `{m.group(1)}`" in rules
                     and f"- severity: {m.group(2)}" in rules.split(f"## `{m.group(1)}`", 1)[1].split("\n## ", 1)[0]]
        elif kind == "row" and (m := re.match(r"\| `olares-pack (\w+(?: [a-z][a-z-]+)?)", unit)):
            section = commands.split(f"## `olares-pack {m.group(1)}", 1)[-1].split("\n## `olares-pack ", 1)[0]
            options = set(re.findall(r"(--[a-z][a-z-]+)", unit.split("|")[1]))
            found = ["docs/reference/commands.md"] if all(f"`{o}`" in section for o in options) else []
        elif kind == "code":
            found = [n for n, lines in code_pages.items() if unit in lines]
        else:
            found = [n for n, text in flat_pages.items() if unit in text]
        if len(found) == 1:
            once += 1
        elif found:
            several += 1
            shared.append(f"{', '.join(found)}: {unit[:110]}")
        else:
            missing.append(f"{kind}: {unit[:140]}")
    total = once + several + len(missing)
    print(f"README at {rev}: {total} units; in exactly one page {once}, in several {several}, in none {len(missing)}")
    if "--list" in argv:
        for line in shared:
            print(f"several  {line}")
        for line in missing:
            print(f"none     {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
