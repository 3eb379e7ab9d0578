"""The README's "Publishing a new app, start to finish", run as a new user would, in a fresh clone.

    .venv/bin/python bench/walkthrough.py [--make] [--keep]

Clones this repository's committed HEAD into a temporary folder and runs the walkthrough there,
command by command: copy the bundled llama.cpp app to `apps/myqwen`, edit it (name, version, no
changelog), `lint`, `vram --lock`, `release --dry-run`, `release`, `git commit`, `serve` (then a
device's first requests: hash, info, details, chart). Every warning any step prints is listed
with the step that printed it, and whether the README names it (its rule id, or the warning's
opening words); the last line counts the warnings the README does not explain.

By default the clone's own code and templates run on the dependencies of the environment running
this script (no PyPI needed); `--make` runs `make` in the clone first (needs PyPI) and its `.venv`.
`vram --lock` reads the model's GGUF header from Hugging Face: without network that step fails,
as the README says it needs huggingface.co or a local GGUF; the walkthrough goes on without a lock.
Exit 0 when every step the README promises to work worked and every warning is explained.
"""

from __future__ import annotations

import json
import os
import re
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
EXAMPLE = "llamacppqwen36mtpone"
NAME = "myqwen"
DATE = "2026-06-01"  # release --date: the walkthrough's output does not depend on the day it runs


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


def edit_manifest(path: Path) -> None:
    """The README's $EDITOR step: name myqwen, version 1.0.0, the changelog removed."""
    text = path.read_text()
    text = re.sub(rf"(?m)^name: {EXAMPLE}\b", f"name: {NAME}", text, count=1)
    text = re.sub(r"(?m)^version: .*$", "version: 1.0.0", text, count=1)
    text = re.sub(r"(?ms)^changelog:.*?(?=^\S|\Z)", "", text)
    path.write_text(text)


def lint_warnings(step: Step) -> list[str]:
    doc = json.loads(step.out)
    return [f"{f['rule']}: {f['file']}{':' + str(f['line']) if f['line'] else ''}: {f['message']}"
            for f in doc["findings"] if f["severity"] in ("warning", "error")]


def prose(readme: str) -> str:
    """The README less its tables (the rule table names every rule: naming is not explaining)."""
    text = "\n".join(line for line in readme.splitlines() if not line.lstrip().startswith("|"))
    return " ".join(re.sub(r"[`*_]", "", text).lower().split())


def explained(warning: str, readme_prose: str) -> bool:
    """The README's prose names the warning's rule, or says four words of it in a row."""
    rule = re.search(r"(?<![\w@/.-])([a-z]+\.[a-z-]+):", warning)
    if rule and rule.group(1) in readme_prose:
        return True
    words = re.sub(r"[`*_]", "", warning[rule.end():] if rule else warning).lower().split()
    return any(" ".join(words[i:i + 4]) in readme_prose for i in range(max(0, len(words) - 3)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_sync(clone: Path, cmd: list[str], env: dict[str, str]) -> Step:
    port = free_port()
    argv = [*cmd, "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    step = Step("serve, and a device's first requests", argv)
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


def main(argv: list[str]) -> int:
    keep, make = "--keep" in argv, "--make" in argv
    tmp = Path(tempfile.mkdtemp(prefix="olares-pack-walkthrough-"))
    clone = tmp / "olares-pack"
    steps: list[Step] = []
    env = {**os.environ, "GIT_AUTHOR_NAME": "newcomer", "GIT_AUTHOR_EMAIL": "newcomer@example.org",
           "GIT_COMMITTER_NAME": "newcomer", "GIT_COMMITTER_EMAIL": "newcomer@example.org"}
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        readme = prose((clone / "README.md").read_text())  # the README the newcomer reads
        if make:
            steps.append(run("make", ["make"], clone, env, timeout=1800))
            cmd = [str(clone / ".venv" / "bin" / "olares-pack")]
        else:
            cmd = clone_launcher(clone)
        (clone / "apps" / NAME).mkdir()
        shutil.copy(clone / "apps" / EXAMPLE / "app.yaml", clone / "apps" / NAME / "app.yaml")
        edit_manifest(clone / "apps" / NAME / "app.yaml")

        lint = run("lint apps/myqwen", [*cmd, "lint", f"apps/{NAME}"], clone, env)
        steps.append(lint)
        as_json = run("lint apps/myqwen (the same, as JSON)", [*cmd, "lint", f"apps/{NAME}", "--format", "json"], clone, env)
        lint.warnings += lint_warnings(as_json)
        steps.append(run("vram myqwen --lock", [*cmd, "vram", NAME, "--lock"], clone, env, timeout=300))
        release = [*cmd, "release", NAME, "--version", "1.0.0", "--summary", "first release", "--date", DATE]
        steps.append(run("release --dry-run", [*release, "--dry-run"], clone, env))
        steps.append(run("release", release, clone, env))
        steps.append(run("git add + commit", ["sh", "-c", f"git add apps/{NAME} packages market-index.json && "
                                                          f"git commit -q -m '{NAME} 1.0.0'"], clone, env))
        steps.append(serve_and_sync(clone, cmd, env))
        steps.append(run("build --check", [*cmd, "build", "--check"], clone, env))
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)

    unexplained = 0
    failed = 0
    for s in steps:
        # `vram --lock` may fail for want of network (the README says it needs huggingface.co)
        expected_failure = s.title.startswith("vram") and s.code != 0
        ok = s.code == 0 or (s.title.startswith("lint") and s.code == 1 and "error" not in s.out.lower())
        failed += not ok and not expected_failure
        print(f"{'ok ' if ok else 'FAIL' if not expected_failure else 'n/a'}  {s.title}  (exit {s.code})")
        if not ok:
            for line in (s.err or s.out).strip().splitlines()[-3:]:
                print(f"       {line}")
        for w in dict.fromkeys(s.warnings):
            known = explained(w, readme)
            unexplained += not known
            print(f"       {'explained ' if known else 'UNEXPLAINED'}  {w}")
        if s.title.startswith("serve") and s.out:
            for line in s.out.splitlines():
                print(f"       {line}")
    print(f"{len(steps)} steps, {failed} failed, {unexplained} warning(s) the README does not explain"
          + (f"; clone kept in {clone}" if keep else ""))
    return 1 if failed or unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
