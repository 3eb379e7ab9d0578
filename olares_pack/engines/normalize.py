"""Engine arguments as a maintainer thinks of them: one value per flag, whatever the spelling.

`-ngl 99`, `--n-gpu-layers 99`, `--gpu-layers=99` and `LLAMA_ARG_N_GPU_LAYERS=99` all become
`{"--gpu-layers": "99"}`; `--jinja`/`--no-jinja` become "true"/"false"; a flag the registry
does not know is kept as written and reported in `unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from olares_pack.engines.registry import Registry

TRUE = {"true", "1", "on", "enabled", "yes"}
FALSE = {"false", "0", "off", "disabled", "no"}


@dataclass
class Arg:
    flag: str  # canonical name (or the spelling, when unknown)
    value: str
    spelled: str  # as written: '-ngl', '--flash-attn=on', 'env LLAMA_ARG_CTX_SIZE'
    source: str = "args"  # args | env


@dataclass
class NormalizedArgs:
    args: dict[str, Arg] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # flags the registry does not know

    def values(self) -> dict[str, str]:
        return {k: a.value for k, a in sorted(self.args.items())}


def _bool_text(value: str) -> str:
    v = value.strip().lower()
    if v in TRUE:
        return "true"
    if v in FALSE:
        return "false"
    return value


def normalize_llama(argv: list[str], registry: Registry, env: dict[str, str] | None = None) -> NormalizedArgs:
    out = NormalizedArgs()
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("-") or token == "-":
            out.positional.append(token)
            continue
        name, eq, inline = token.partition("=")
        spec = registry.lookup(name)
        if spec is None:
            out.unknown.append(name)
            # An unknown flag takes the next word as its value unless that word is a flag: a long
            # one, or a short one the registry knows (`--mlock -fa on` on a fork whose flags the
            # registry lacks: `-fa` is llama.cpp's, and `on` its value, not --mlock's).
            nxt = argv[i] if i < len(argv) else None
            is_flag = nxt is not None and (nxt.startswith("--") or
                                           (nxt.startswith("-") and registry.lookup(nxt.partition("=")[0]) is not None))
            value = inline if eq else (nxt if nxt is not None and not is_flag else "true")
            if not eq and value != "true":
                i += 1
            out.args[name] = Arg(name, value, token)
            continue
        if name in spec.negations:
            out.args[spec.canonical] = Arg(spec.canonical, "false", token)
            continue
        if not spec.takes_value:
            out.args[spec.canonical] = Arg(spec.canonical, _bool_text(inline) if eq else "true", token)
            continue
        if eq:
            value = inline
        elif spec.optional_value:
            if i < len(argv) and spec.choices and argv[i] in spec.choices:
                value = argv[i]
                i += 1
            else:
                value = "on"  # the bare switch of older builds
        elif i < len(argv):
            value = argv[i]
            i += 1
        else:
            value = ""
        out.args[spec.canonical] = Arg(spec.canonical, value, token if eq else f"{name} {value}")
    # Environment variables set flags the command line left alone (a CLI argument wins).
    for key, value in sorted((env or {}).items()):
        spec = registry.by_env.get(key)
        if spec is None or spec.canonical in out.args:
            continue
        v = value if spec.takes_value else _bool_text(value)
        out.args[spec.canonical] = Arg(spec.canonical, v, f"env {key}", source="env")
    return out


def normalize_generic(argv: list[str]) -> NormalizedArgs:
    """For engines without a registry (vLLM): `--flag=value` = `--flag value`, `--no-x` = x false."""
    out = NormalizedArgs()
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("--"):
            out.positional.append(token)
            continue
        name, eq, inline = token.partition("=")
        if eq:
            out.args[name] = Arg(name, inline, token)
        elif name.startswith("--no-"):
            pos = "--" + name[len("--no-"):]
            out.args[pos] = Arg(pos, "false", token)
        elif i < len(argv) and not argv[i].startswith("--"):
            out.args[name] = Arg(name, argv[i], f"{name} {argv[i]}")
            i += 1
        else:
            out.args[name] = Arg(name, "true", token)
    return out
