"""The package's layout: every module imports on its own, and no two modules import each other,
however indirectly (function-level imports included: they run too, only later; `if TYPE_CHECKING:`
imports included: a type a lower room needs belongs in that room, issue #53)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import olares_pack

PACKAGE = Path(olares_pack.__file__).resolve().parent


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `root` by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports: at module level, inside any function, or for the
    type checker alone (`if TYPE_CHECKING:`: a circle of types is a circle of the design too)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found.update(m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if m in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)] + ([node.module] if node.module else [])
                module = ".".join(base)
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in known:
                    found.add(sub)
                elif module in known:
                    found.add(module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a path round it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def graph_of(root: Path, package: str) -> dict[str, set[str]]:
    mods = modules(root, package)
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def test_no_module_imports_itself_through_others() -> None:
    graph = graph_of(PACKAGE, "olares_pack")
    assert len(graph) > 50
    assert cycles(graph) == []


def test_the_cycle_check_sees_circles_through_function_level_and_type_only_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n"
                              "def g():\n    from pkg.a import x\n")
    (pkg / "d.py").write_text("import pkg.c\n")
    graph = graph_of(pkg, "pkg")
    assert graph["pkg.c"] == {"pkg.a", "pkg.d"}  # the TYPE_CHECKING import of d counts
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.d", "pkg.sub.b"]]


def test_every_module_imports_on_its_own_in_a_fresh_interpreter() -> None:
    """Each module first, alone: an import that works only after some other module was loaded
    (a circle that happens to resolve in one order) fails here. One interpreter forks a child
    per module before anything of the package is loaded; it loads the other libraries the
    package imports at module level first, once (no circle of the package's runs through them),
    so that each child pays for its own modules only."""
    found = modules(PACKAGE, "olares_pack")
    names = sorted(found)
    libraries = sorted({alias.name if isinstance(node, ast.Import) else node.module or ""
                        for path in found.values() for node in ast.parse(path.read_text()).body
                        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
                        for alias in node.names} - {"__future__", ""})
    libraries = [lib for lib in libraries if lib.split(".")[0] != "olares_pack"]
    driver = textwrap.dedent("""
        import importlib, os, sys, traceback
        for lib in os.environ["LIBRARIES"].split():
            try:
                importlib.import_module(lib)
            except ImportError:  # one a platform lacks (uvloop): the child says so if it matters
                pass
        assert not [m for m in sys.modules if m.split(".")[0] == "olares_pack"]
        failed = []
        for name in sys.argv[1:]:
            pid = os.fork()
            if pid == 0:
                try:
                    importlib.import_module(name)
                except BaseException:
                    traceback.print_exc()
                    os._exit(1)
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            if status:
                failed.append(name)
        print("failed:", " ".join(failed))
    """)
    proc = subprocess.run([sys.executable, "-c", driver, *names], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "LIBRARIES": " ".join(libraries)})
    assert proc.stdout.strip() == "failed:", proc.stdout + proc.stderr


def test_every_package_is_in_the_wheel() -> None:
    # The tests run an editable install, which finds any folder; a wheel holds only the packages
    # pyproject.toml lists (apps/manifest and proof were missing from it once: an installed
    # olares-pack could not import its own manifest models).
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
