"""Read the flags `vllm serve` accepts from vLLM's own sources, per release, without importing
vLLM (it needs torch). Two ways vLLM declares a flag: a string literal given to `add_argument`
(or listed as a flag in the kwargs it passes: "-O", "--compilation-config"), and a field of a
frontend dataclass (`FrontendArgs` and its bases) that `add_cli_args` turns into `--field-name`.
Booleans also take `--no-<flag>` (argparse.BooleanOptionalAction), which lint accepts for every
flag. Reading every whole-string constant that looks like a flag errs towards accepting: lint
must not call a flag unknown that vLLM takes.

    python -m olares_pack.engines.vllmargs SRC_DIR... --out olares_pack/engines/data/vllm-flags.json

where each SRC_DIR is named v<version>, holds the sdist's vllm/engine/arg_utils.py and
vllm/entrypoints/ tree and a `meta` file (`<version> <sdist sha256> <upload time>`).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

_FLAG = re.compile(r"^(--[a-z][a-z0-9-]*|-[A-Za-z]{1,3})$")


def serve_flags(argv: list[str]) -> list[tuple[str, str]]:
    """The options of a `vllm serve` argv as vLLM's own parser names them, each with the word as
    written: (name, spelled). vLLM's FlexibleArgumentParser.parse_args (vllm-project/vllm,
    vllm/utils/argparse_utils.py, read at commit 00da11e37d1f; older releases hold the same class
    in vllm/utils/__init__.py) rewrites the argv before argparse reads it, and a rule that reads
    the raw words calls good flags unknown:
    - in `--name` and `--name=value`, `_` becomes `-` in the name (`--compilation_config`
      is `--compilation-config`); only the part before the first `.`;
    - `--name.key value`, `--name.key=value` and `--name.key+ value` set one key of the
      JSON-valued option `--name` (merged into `--name '{"key": ...}'`);
    - `-O3`, `-O=3`, `-Odecode` and `-O 3` are `--optimization-level` (v0.14.0+; before, `-O`
      was itself an alias of `--compilation-config`, and argparse reads `-O3` as `-O 3`);
    - `--help=topic` is `--help`.
    Values are not options: a word after one that takes a value is not read as a flag unless it
    starts with `--` (what argparse does too). `--` ends the options."""
    out: list[tuple[str, str]] = []
    for word in argv:
        if word == "--":
            break
        if word.startswith("--"):
            key = word.split("=", 1)[0]
            if key.startswith("--help"):
                out.append(("--help", word))
                continue
            head = key.split(".", 1)[0] if "." in key else key
            out.append(("--" + head[2:].replace("_", "-"), word))
        elif word.startswith("-O"):
            out.append(("-O", word))  # an option up to 0.11, --optimization-level from 0.14 (lint accepts either)
        elif re.fullmatch(r"-[A-Za-z]{1,3}", word):
            out.append((word, word))  # a short option as a word of its own (`-tp 2`); not a value such as -1
    return out


def _frontend_fields(tree: ast.Module) -> dict[str, tuple[set[str], list[str]]]:
    """class name -> (its annotated fields, its base class names), for *FrontendArgs classes."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
            fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            out[node.name] = (fields, bases)
    return out


def flags_of(sources: dict[str, str]) -> set[str]:
    """Every flag the sources declare (file path -> Python text)."""
    flags: set[str] = set()
    classes: dict[str, tuple[set[str], list[str]]] = {}
    for text in sources.values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _FLAG.match(node.value):
                flags.add(node.value)
        classes.update(_frontend_fields(tree))
    for name in classes:
        seen, todo = set(), [name]
        while todo:
            cls = todo.pop()
            if cls in seen or cls not in classes:
                continue
            seen.add(cls)
            fields, bases = classes[cls]
            flags |= {"--" + f.replace("_", "-") for f in fields if not f.startswith("_")}
            todo += bases
    return {f for f in flags if f not in ("-", "--")}


def read_version(folder: Path) -> dict[str, str]:
    """The files that build `vllm serve`'s parser: the engine's arguments, the serve command, and
    the module of the frontend arguments (it moved between releases). Other commands' files
    (bench, run_batch) are left out: their flags are not serve's."""
    out = {}
    for p in sorted(folder.rglob("*.py")):
        rel = p.relative_to(folder).as_posix()
        text = p.read_text(errors="replace")
        if rel.endswith(("engine/arg_utils.py", "entrypoints/cli/serve.py")) or \
                ("FrontendArgs" in text and "class " in text and "run_batch" not in rel and "/benchmark" not in rel):
            out[rel] = text
    return out


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"[0-9]+", v)[:3])


def build_table(folders: list[Path]) -> dict[str, object]:
    versions: dict[str, dict[str, str]] = {}
    flags: dict[str, list[str]] = {}
    for folder in sorted(folders, key=lambda p: _version_key(p.name)):
        version, sha256, uploaded = (folder / "meta").read_text().split()
        versions[version] = {"date": uploaded[:10], "sdist": f"vllm-{version}.tar.gz", "sha256": sha256}
        for flag in sorted(flags_of(read_version(folder))):
            flags.setdefault(flag, []).append(version)
    return {"source": "vllm/engine/arg_utils.py and vllm/entrypoints/ of the vllm source packages on PyPI "
                      "(python -m olares_pack.engines.vllmargs)", "versions": versions, "flags": dict(sorted(flags.items()))}


def dumps(table: dict[str, object]) -> str:
    def rows(items: dict[str, object]) -> str:
        return ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in items.items())

    return (f'{{\n "source": {json.dumps(table["source"])},\n "versions": {{\n{rows(table["versions"])}\n }},\n'  # type: ignore[arg-type]
            f' "flags": {{\n{rows(table["flags"])}\n }}\n}}\n')  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    from olares_pack.engines.gentable import run

    return run(argv, build_table, dumps)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
