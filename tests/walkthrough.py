"""docs/getting-started.md, run as a new user would, in a fresh clone.

    .venv/bin/python tests/walkthrough.py [--make] [--keep]

Clones this repository's committed HEAD into a temporary folder and runs the page's shell blocks
there, in order, each as its marker says (the HTML comment on the line before the block):
`run` runs every command (each must succeed; lint may exit 1 with warnings only), `network` runs
them and accepts a failure for want of network (`vram --lock` reads huggingface.co), `serve`
starts the server on loopback and makes a device's first requests (hash, info, details, chart for
1.12.5 and 1.12.6), `setup` is the clone and `make` this script does itself, `skip` is not run
(the route through Hugging Face). A shell block without a marker is an error: every step the page
gives is a step this bench takes. Every warning a step prints is listed with the step, and whether
the documentation's prose (README and docs/, less the generated references and tables) names it
(its rule id, or the warning's opening words); the last line counts the warnings it does not.

By default the clone's own code and templates run on the dependencies of the environment running
this script (no PyPI needed); `--make` runs `make` in the clone first (needs PyPI) and its `.venv`.
Exit 0 when every step the page promises to work worked and every warning is explained.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = "docs/getting-started.md"
NAME = "myqwen"  # the app the page creates, which the device's requests look for
MARK = re.compile(r"^<!-- walkthrough: (setup|run|network|serve|skip)\b(?: \((.*)\))? -->$")
KINDS_RUN = ("run", "network", "serve")


@dataclass
class Block:
    kind: str  # setup, run, network, serve or skip
    why: str
    line: int  # of the opening fence, 1-based
    commands: list[str]


def blocks(page: str) -> list[Block]:
    """The page's shell blocks in order, each with its marker; a block without one is an error."""
    lines = page.split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            m = MARK.match(before)
            if not m:
                raise ValueError(f"{PAGE}:{i + 1}: a shell block without a `<!-- walkthrough: KIND (why) -->` line before it")
            body = []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append(Block(m.group(1), m.group(2) or "", i - len(body), commands(body)))
        i += 1
    return out


def commands(body: list[str]) -> list[str]:
    """Shell commands of a block: continuation lines joined, comment-only and blank lines left out."""
    out: list[str] = []
    pending = ""
    for line in body:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line.strip())
        pending = ""
    return out


@dataclass
class Step:
    title: str
    argv: list[str]
    code: int = 0
    out: str = ""
    err: str = ""
    warnings: list[str] = field(default_factory=list)


def run(title: str, argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> Step:
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        step = Step(title, argv, p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired as exc:
        step = Step(title, argv, 124, str(exc.stdout or ""), f"timed out after {timeout:.0f} s")
    step.warnings = [line.strip() for line in step.err.splitlines() if re.match(r"\s*(warning|⚠)", line, re.I)]
    return step


def lint_warnings(step: Step) -> list[str]:
    doc = json.loads(step.out)
    return [f"{f['rule']}: {f['file']}{':' + str(f['line']) if f['line'] else ''}: {f['message']}"
            for f in doc["findings"] if f["severity"] in ("warning", "error")]


def prose(root: Path) -> str:
    """What the documentation says in words: README and docs/ less the generated references
    (the rule reference names every rule: naming is not explaining) and less tables."""
    pages = [root / "README.md", *sorted(p for p in (root / "docs").rglob("*.md")
                                         if "reference" not in p.relative_to(root / "docs").parts[:1]
                                         and "pending" not in p.parts)]
    text = "\n".join(line for page in pages for line in page.read_text().splitlines() if not line.lstrip().startswith("|"))
    return " ".join(re.sub(r"[`*_]", "", text).lower().split())


def explained(warning: str, said: str) -> bool:
    """The documentation's prose names the warning's rule, or says four words of it in a row."""
    rule = re.search(r"(?<![\w@/.-])([a-z]+\.[a-z-]+):", warning)
    if rule and rule.group(1) in said:
        return True
    words = re.sub(r"[`*_]", "", warning[rule.end():] if rule else warning).lower().split()
    return any(" ".join(words[i:i + 4]) in said for i in range(max(0, len(words) - 3)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_sync(clone: Path, command: str, cmd: list[str], env: dict[str, str]) -> Step:
    """The page's serve command on loopback and a free port, and a device's first requests."""
    port = free_port()
    argv = [*cmd, *shlex.split(re.sub(r"^\S*olares-pack\s+", "", strip_comment(command)))]
    argv = _with_option(_with_option(argv, "--host", "127.0.0.1"), "--port", str(port))
    proc = subprocess.Popen(argv, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    step = Step(f"{strip_comment(command)}, and a device's first requests", argv)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/health", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        said = []
        for os_version in ("1.12.5", "1.12.6"):
            info = json.loads(urllib.request.urlopen(f"{base}/api/v1/appstore/info?version={os_version}").read())
            apps = {a["name"]: a for a in info["data"]["apps"].values()}
            if NAME not in apps:
                said.append(f"{os_version}: {NAME} not listed")
                step.code = 1
                continue
            req = urllib.request.Request(f"{base}/api/v1/applications/info", method="POST",
                                         data=json.dumps({"app_ids": [apps[NAME]["id"]], "version": os_version}).encode(),
                                         headers={"Content-Type": "application/json"})
            entry = json.loads(urllib.request.urlopen(req).read())["apps"][apps[NAME]["id"]]
            chart = urllib.request.urlopen(f"{base}/api/v1/applications/{NAME}/chart?fileName={entry['chartName']}"
                                           f"&version={entry['version']}").read()
            said.append(f"{os_version}: {NAME} {entry['version']}, {entry['chartName']} ({len(chart)} bytes)")
        step.out = "\n".join(said)
    except OSError as exc:
        step.code, step.err = 1, f"{type(exc).__name__}: {exc}"
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        step.err = (step.err + "\n" + err).strip()
        step.warnings = [line.strip() for line in err.splitlines() if re.match(r"\s*warning", line, re.I)]
    return step


LAUNCHER = """#!{python}
# olares-pack of the clone, on the dependencies of the environment that runs the walkthrough
import importlib.util, sys
sys.path.insert(0, {clone!r})
import olares_pack
# templates/ ships as olares_pack.templates: map it to the clone's folder, as its install would
spec = importlib.util.spec_from_file_location("olares_pack.templates", {clone!r} + "/templates/__init__.py",
                                              submodule_search_locations=[{clone!r} + "/templates"])
module = importlib.util.module_from_spec(spec)
sys.modules["olares_pack.templates"] = module
spec.loader.exec_module(module)
assert olares_pack.__file__.startswith({clone!r}), olares_pack.__file__
from olares_pack.cli import main
sys.exit(main())
"""


def clone_launcher(clone: Path) -> list[str]:
    """The clone's own olares-pack without PyPI: its code and templates, this environment's
    dependencies (a fresh `make` needs PyPI; `--make` does that instead)."""
    path = clone.parent / "bin" / "olares-pack"
    path.parent.mkdir()
    path.write_text(LAUNCHER.format(python=sys.executable, clone=str(clone)))
    path.chmod(0o755)
    return [str(path)]


def strip_comment(command: str) -> str:
    return re.sub(r"\s+#.*$", "", command)


def _with_option(argv: list[str], option: str, value: str) -> list[str]:
    if option in argv:
        i = argv.index(option)
        return [*argv[:i + 1], value, *argv[i + 2:]]
    return [*argv, option, value]


def run_command(command: str, clone: Path, cmd: list[str], env: dict[str, str]) -> Step:
    """One command of the page, through sh, with `.venv/bin/olares-pack` the olares-pack under test."""
    title = strip_comment(command)
    line = title.replace(".venv/bin/olares-pack", " ".join(shlex.quote(c) for c in cmd))
    step = run(title, ["sh", "-c", line], clone, env, timeout=600)
    if re.match(r"\S*olares-pack lint ", title) and "--format" not in title:  # the findings, one by one
        as_json = run(title + " --format json", ["sh", "-c", line + " --format json"], clone, env)
        step.warnings += lint_warnings(as_json)
    return step


def main(argv: list[str]) -> int:
    keep, make = "--keep" in argv, "--make" in argv
    tmp = Path(tempfile.mkdtemp(prefix="olares-pack-walkthrough-"))
    clone = tmp / "olares-pack"
    steps: list[tuple[str, Step]] = []
    env = {**os.environ, "GIT_AUTHOR_NAME": "newcomer", "GIT_AUTHOR_EMAIL": "newcomer@example.org",
           "GIT_COMMITTER_NAME": "newcomer", "GIT_COMMITTER_EMAIL": "newcomer@example.org"}
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        said = prose(clone)  # the documentation the newcomer reads
        page = blocks((clone / PAGE).read_text())
        if make:
            steps.append(("setup", run("make", ["make"], clone, env, timeout=1800)))
            cmd = [str(clone / ".venv" / "bin" / "olares-pack")]
        else:
            cmd = clone_launcher(clone)
        for block in page:
            if block.kind not in KINDS_RUN:
                print(f"skip {PAGE}:{block.line}: {block.kind} ({block.why})")
                continue
            for command in block.commands:
                step = serve_and_sync(clone, command, cmd, env) if block.kind == "serve" else \
                    run_command(command, clone, cmd, env)
                steps.append((block.kind, step))
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)

    unexplained = 0
    failed = 0
    for kind, s in steps:
        # a `network` step may fail for want of network (the page says what it needs)
        expected_failure = kind == "network" and s.code != 0
        ok = s.code == 0 or (" lint " in f" {s.title} " and s.code == 1 and "error" not in s.out.lower())
        failed += not ok and not expected_failure
        print(f"{'ok ' if ok else 'FAIL' if not expected_failure else 'n/a'}  {s.title}  (exit {s.code})")
        if not ok:
            for line in (s.err or s.out).strip().splitlines()[-3:]:
                print(f"       {line}")
        for w in dict.fromkeys(s.warnings):
            known = explained(w, said)
            unexplained += not known
            print(f"       {'explained ' if known else 'UNEXPLAINED'}  {w}")
        if kind == "serve" and s.out:
            for line in s.out.splitlines():
                print(f"       {line}")
    print(f"{len(steps)} steps, {failed} failed, {unexplained} warning(s) the documentation does not explain"
          + (f"; clone kept in {clone}" if keep else ""))
    return 1 if failed or unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
