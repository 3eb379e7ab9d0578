"""`olares-pack init --ci github`: the workflow passes actionlint, and each of its jobs, run here
step by step in a fresh clone of a catalogue repository, does what it says.

How a job runs here, without GitHub: its `run:` steps in order, each with bash -eo pipefail (the
runner's `shell: bash`), the workflow's, job's and step's `env:` with their `${{ }}` expressions
evaluated (github.*, secrets.*, vars.*, env.*, steps.<id>.outputs.*, `||`), $GITHUB_OUTPUT,
$RUNNER_TEMP; the first failing step ends the job. The `uses:` steps are replaced by their local
equivalent:
- actions/checkout: the workspace is a fresh `git clone` of the catalogue's origin (a bare
  repository here), at the commit the event is about, full history;
- actions/setup-python: this checkout's .venv/bin first on PATH (olares-pack is installed there,
  so the job's own `pip install olares-pack==<version>` finds it installed and fetches nothing);
- actions/setup-go, actions/setup-node: the go and node of this machine;
- actions/cache/restore and save: ~/.cache/olares-pack, where `make control-plane` built the tools.
Three programs that reach GitHub or Cloudflare are stand-ins on PATH: `gh` (pull requests kept
in a JSON file), `npm install` (the wrangler of node/ is there already) and `npx wrangler deploy`
(starts `wrangler dev`, workerd on loopback, with the exported Worker).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from olares_pack.ci import workflow
from olares_pack.cli import main
from olares_pack.cluster import tools
from olares_pack.common.errors import ExitCode
from tests.conftest import ROOT
from tests.test_check import annotations, draft, git, line_of

ACTIONLINT_VERSION = re.search(r"^ACTIONLINT_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)  # type: ignore[union-attr]
WRANGLER = ROOT / "node" / "node_modules" / ".bin" / "wrangler"
LLAMA = "llamacppqwen36mtpone"


def actionlint() -> Path:
    """actionlint as `make actionlint` builds it; the test skips, saying why, where it is not built."""
    path = tools.cache_root() / f"actionlint-{ACTIONLINT_VERSION}" / "actionlint"
    if not path.is_file():
        log = tools.cache_root() / "actionlint-build.log"
        why = log.read_text()[-500:] if log.is_file() else "`make actionlint` has not run"
        pytest.skip(f"actionlint {ACTIONLINT_VERSION} is not built ({path}): {why}")
    return path


# ---------------------------------------------------------------- init


def test_init_writes_a_workflow_that_passes_actionlint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--ci", "github", "--root", str(tmp_path)]) == ExitCode.OK
    path = tmp_path / ".github" / "workflows" / "olares-pack.yml"
    assert capsys.readouterr().out.strip() == str(path)
    text = path.read_text()
    # every action pinned by a commit, the tag beside it
    uses = re.findall(r"uses: (\S+)@(\S+)( # \S+)?", text)
    assert uses and all(re.fullmatch(r"[0-9a-f]{40}", sha) and tag for _, sha, tag in uses), uses
    doc = yaml.safe_load(text)
    assert doc["permissions"] == {}
    assert {j: d["permissions"] for j, d in doc["jobs"].items()} == {
        "check": {"contents": "read"}, "publish": {"contents": "read"},
        "upstream": {"contents": "write", "pull-requests": "write"}}
    # no secret in the job a pull request (from a fork too) runs; and never pull_request_target
    assert "pull_request_target" not in doc[True] and "secrets." not in yaml.safe_dump(doc["jobs"]["check"])
    assert f"kube-{tools.KUBE_VERSION}-helm-{tools.HELM_VERSION}" in text
    env = {k: v for k, v in os.environ.items() if k != "SHELLCHECK_OPTS"}
    done = subprocess.run([str(actionlint()), str(path)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    if shutil.which("shellcheck") is None:
        pytest.skip("actionlint passed, without shellcheck: the run: scripts were not checked (apt-get install shellcheck)")


def test_init_keeps_a_different_file_and_leaves_an_identical_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / ".github" / "workflows" / "olares-pack.yml"
    path.parent.mkdir(parents=True)
    path.write_text("name: mine\n")
    assert main(["init", "--ci", "github", "--root", str(tmp_path)]) == ExitCode.INPUT
    assert "exists and differs" in capsys.readouterr().err and path.read_text() == "name: mine\n"
    assert main(["init", "--ci", "github", "--root", str(tmp_path), "--force"]) == ExitCode.OK
    written = path.read_text()
    assert written == workflow.render()
    assert main(["init", "--ci", "github", "--root", str(tmp_path)]) == ExitCode.OK
    assert "unchanged" in capsys.readouterr().err and path.read_text() == written
    assert main(["init", "--ci", "github", "--root", str(tmp_path / "absent")]) == ExitCode.INPUT


# ---------------------------------------------------------------- running a job here


@dataclass
class StepRun:
    name: str
    rc: int
    output: str


@dataclass
class JobRun:
    steps: list[StepRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.rc == 0 for s in self.steps)

    def step(self, name: str) -> StepRun:
        return next(s for s in self.steps if s.name == name)


class Runner:
    def __init__(self, doc: dict[str, Any], workspace: Path, tmp: Path, *, event: str, base_ref: str = "",
                 secrets: dict[str, str] | None = None, variables: dict[str, str] | None = None,
                 extra_path: list[Path] | None = None) -> None:
        self.doc, self.workspace, self.tmp = doc, workspace, tmp
        self.github = {"event_name": event, "base_ref": base_ref, "token": "stand-in-token"}
        self.secrets, self.vars = secrets or {}, variables or {}
        self.path = [*(extra_path or []), Path(sys.executable).parent, *os.environ["PATH"].split(os.pathsep)]
        self.outputs: dict[str, dict[str, str]] = {}
        self.env: dict[str, str] = {}

    def value(self, expr: str) -> str:
        for operand in expr.split("||"):
            operand = operand.strip()
            if operand.startswith("'"):
                v = operand.strip("'")
            else:
                head, _, rest = operand.partition(".")
                if head == "steps":
                    step_id, _, name = rest.partition(".outputs.")
                    v = self.outputs.get(step_id, {}).get(name, "")
                else:
                    v = {"github": self.github, "secrets": self.secrets, "vars": self.vars, "env": self.env,
                         "runner": {"os": "Linux", "arch": "X64"}}[head].get(rest, "")
            if v:
                return v
        return ""

    def expand(self, text: str) -> str:
        return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: self.value(m.group(1)), str(text))

    def condition(self, expr: str) -> bool:
        """The `if:` forms the workflow uses: `A == 'x'`, `A != 'x'`, joined with ||."""
        def one(part: str) -> bool:
            left, op, right = re.match(r"^\s*(\S+)\s*(==|!=)\s*'([^']*)'\s*$", part).groups()  # type: ignore[union-attr]
            return (self.value(left) == right) == (op == "==")
        return any(one(p) for p in expr.split("||"))

    def run(self, job: str) -> JobRun:
        spec = self.doc["jobs"][job]
        assert self.condition(spec["if"]), f"{job} does not run on {self.github['event_name']}"
        self.env = {k: self.expand(v) for k, v in self.doc.get("env", {}).items()}
        self.env.update({k: self.expand(v) for k, v in spec.get("env", {}).items()})
        done = JobRun()
        for i, step in enumerate(spec["steps"]):
            name = step.get("name") or step.get("uses") or f"step {i}"
            if "uses" in step:
                self.outputs[step.get("id", f"s{i}")] = self._local_action(step["uses"].split("@")[0])
                done.steps.append(StepRun(name, 0, f"local equivalent of {step['uses']}"))
                continue
            if "if" in step and not self.condition(step["if"]):
                continue
            result = self._run_script(step, name)
            done.steps.append(result)
            if result.rc != 0:
                break
        return done

    def _local_action(self, action: str) -> dict[str, str]:
        if action == "actions/cache/restore":
            return {"cache-hit": "true" if tools.available() else "false"}
        assert action in ("actions/checkout", "actions/setup-python", "actions/setup-go", "actions/setup-node",
                          "actions/cache/save"), action
        return {}

    def _run_script(self, step: dict[str, Any], name: str) -> StepRun:
        out_file = self.tmp / "github_output"
        out_file.write_text("")
        runner_temp = self.tmp / "runner_temp"
        runner_temp.mkdir(exist_ok=True)
        script = self.tmp / "step.sh"
        script.write_text(self.expand(step["run"]))
        env = {**os.environ, **self.env, **{k: self.expand(v) for k, v in step.get("env", {}).items()},
               "PATH": os.pathsep.join(map(str, self.path)), "GITHUB_OUTPUT": str(out_file),
               "RUNNER_TEMP": str(runner_temp), "GITHUB_WORKSPACE": str(self.workspace), "CI": "true"}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
        if "id" in step:
            self.outputs[step["id"]] = outputs
        return StepRun(name, proc.returncode, proc.stdout)


@pytest.fixture(scope="module")
def written_workflow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("init")
    assert main(["init", "--ci", "github", "--root", str(root)]) == ExitCode.OK
    return yaml.safe_load((root / workflow.WORKFLOW_PATH).read_text())


def catalogue_origin(root: Path, *, keep_from: tuple[int, ...] | None = None) -> Path:
    """A bare origin holding a catalogue repository of the bundled apps on main. `keep_from`: of
    llamacppqwen36mtpone only the versions from this one on are published (the catalogue as it would
    be had it started there; `build` derives its ledger and offer), so that a rehearsal from every
    older version stays short."""
    from tests.test_check import make_catalogue

    work = make_catalogue(root / "work")
    if keep_from is not None:
        for rec_path in sorted((work / "apps" / LLAMA / "releases").glob("*.json")):
            if tuple(map(int, rec_path.stem.split("."))) < keep_from:
                for ch in json.loads(rec_path.read_text())["charts"].values():
                    (work / ch["file"]).unlink()
                rec_path.unlink()
        assert main(["build", "--apps-dir", str(work / "apps"), "--out", str(root / "charts")]) == ExitCode.OK
        git(work, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-am", "published from 1.0.15")
    origin = root / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    return origin


def clone(origin: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True)
    git(dest, "config", "user.name", "t")
    git(dest, "config", "user.email", "t@example.org")
    return dest


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


# ---------------------------------------------------------------- pull request


def test_the_pull_request_job_fails_on_the_line_of_a_planted_fault_and_passes_without_it(
        written_workflow: dict[str, Any], tmp_path: Path) -> None:
    if tools.available() is None:  # as the control_plane fixture: on CI a missing control plane fails
        (pytest.fail if os.environ.get("CI") else pytest.skip)(tools.missing_reason())
    origin = catalogue_origin(tmp_path, keep_from=(1, 0, 15))
    ws = clone(origin, tmp_path / "ws")
    git(ws, "checkout", "-q", "-b", "more-drafts")
    # the pull request: the app's next version with one more draft token, and a flag llama-server lacks
    path = draft(ws, LLAMA, "1.0.16", ("    draft_n_max: 3\n", "    draft_n_max: 4\n"))
    path.write_text(path.read_text().replace("\n  threads: 16\n", "\n  threads: 16\n  extra_args: [--no-such-flag]\n"))
    commit(ws, "1.0.16: four draft tokens")
    runner = Runner(written_workflow, ws, tmp_path, event="pull_request", base_ref="main")
    failed = runner.run("check")
    assert not failed.ok and failed.steps[-1].name == "olares-pack check", [(s.name, s.rc) for s in failed.steps]
    errors = [a for a in annotations(failed.steps[-1].output) if a["level"] == "error"]
    assert {(a["file"], a["line"], a["title"]) for a in errors} == {
        (f"apps/{LLAMA}/app.yaml", str(line_of(path, "--no-such-flag")), "engine.flag")}, errors
    # the fault removed: the gate passes, the changed app's install and upgrades rehearsed
    path.write_text(path.read_text().replace("  extra_args: [--no-such-flag]\n", ""))
    commit(ws, "no such flag")
    passed = Runner(written_workflow, ws, tmp_path, event="pull_request", base_ref="main").run("check")
    assert passed.ok, passed.steps[-1].output[-3000:]
    out = passed.step("olares-pack check").output
    assert f"rehearse: passed: {LLAMA} 1.0.16" in out and "::error" not in out


# ---------------------------------------------------------------- push to main

NPX = """#!/usr/bin/env bash
# `npx wrangler deploy` stands for the deploy: wrangler dev (workerd) on loopback, in the background
set -e
[ "$1 $2" = "wrangler deploy" ] || { echo "npx stand-in: $*: not expected" >&2; exit 2; }
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_HIDE_BANNER=true
export XDG_CONFIG_HOME="$RUNNER_TEMP/xdg"
setsid "$WRANGLER" dev --ip 127.0.0.1 --port "$DEV_PORT" > "$RUNNER_TEMP/wrangler-dev.log" 2>&1 &
echo $! > "$DEV_PID"
for _ in $(seq 1 300); do
  if curl -fsS "http://127.0.0.1:$DEV_PORT/health" > /dev/null 2>&1; then
    echo "Deployed $(sed -n 's/^name = "\\(.*\\)"/\\1/p' wrangler.toml) (stand-in: wrangler dev on 127.0.0.1:$DEV_PORT)"
    exit 0
  fi
  sleep 0.2
done
cat "$RUNNER_TEMP/wrangler-dev.log" >&2
exit 1
"""


def stand_in(folder: Path, name: str, text: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A port for `wrangler dev` and the file its pid goes to; the process group is ended after."""
    from tests.test_cloudflare import free_port

    pid_file = tmp_path / "wrangler-dev.pid"
    yield free_port(), pid_file
    if pid_file.is_file():
        import signal

        pid = int(pid_file.read_text())
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


@pytest.mark.skipif(not WRANGLER.exists(), reason="wrangler is not installed (make installs it into node/)")
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_publish_job_exports_deploys_and_finds_the_catalogue_hash(
        written_workflow: dict[str, Any], tmp_path: Path, dev_server: tuple[int, Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    port, pid_file = dev_server
    ws = clone(catalogue_origin(tmp_path), tmp_path / "ws")
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "npx", NPX)
    stand_in(bin_dir, "npm", "#!/bin/sh\n[ \"$1\" = install ] || exit 2\necho 'npm install: the wrangler of node/ stands in'\n")
    monkeypatch.setenv("WRANGLER", str(WRANGLER))
    monkeypatch.setenv("DEV_PORT", str(port))
    monkeypatch.setenv("DEV_PID", str(pid_file))
    # without the secret: exported, not deployed, and said so
    plain = Runner(written_workflow, ws, tmp_path, event="push", extra_path=[bin_dir]).run("publish")
    assert plain.ok, [(s.name, s.rc, s.output[-2000:]) for s in plain.steps if s.rc]
    assert "::notice title=deploy skipped::no CLOUDFLARE_API_TOKEN secret" in plain.step("Deploy with wrangler").output
    assert "not deployed: nothing to verify" in plain.step("The deployed source answers the catalogue's hash").output
    assert (ws / "build" / "worker" / "worker.js").is_file() and not pid_file.exists()
    # with it: deployed (to workerd here), and the deployed hash route answers the catalogue's hash
    url = f"http://127.0.0.1:{port}"
    done = Runner(written_workflow, ws, tmp_path, event="push", extra_path=[bin_dir],
                  secrets={"CLOUDFLARE_API_TOKEN": "stand-in"}, variables={"OLARES_MARKET_URL": url}).run("publish")
    assert done.ok, [(s.name, s.rc, s.output[-2000:]) for s in done.steps if s.rc]
    verified = done.step("The deployed source answers the catalogue's hash").output
    assert verified.count("(the catalogue's)") == len(workflow_versions()), verified
    # the same check fails against a catalogue the deploy does not hold (another hash)
    other = tmp_path / "other"
    shutil.copytree(ws, other, ignore=shutil.ignore_patterns(".git", "build"))
    rec = other / "apps" / "vllmqwen36turbo27bone" / "releases" / "2.5.10.json"
    rec.unlink()
    assert main(["build", "--apps-dir", str(other / "apps"), "--out", str(tmp_path / "charts")]) == ExitCode.OK
    from olares_pack.ci import verify

    assert verify.main([url, "--root", str(other), "--timeout", "0"]) == 1


def workflow_versions() -> list[str]:
    from olares_pack import olares

    return list(olares.KNOWN_RELEASES)


# ---------------------------------------------------------------- nightly


def _push(upstream: Any, tmp_path: Path, path: str, *tags: str, created: str | None = None) -> str:
    """Tags pushed to a repository of this test's own (the module's registry is shared); `created`
    orders tags that name no build."""
    from tests.registry import Layout

    lay = Layout(tmp_path / f"layout-{path.replace('/', '-')}-{'-'.join(tags)}")
    for tag in tags:
        lay.multiarch(tag, text=f"{path}:{tag}", created=created)
        upstream.reg.push(lay.root, tag, path)
    return upstream.repo(path)


def test_the_upstream_job_opens_one_pull_request_per_draft(written_workflow: dict[str, Any], tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    from tests.test_outdated import APP, UPSTREAM_BUILDS, catalogue_at_1_0_8, needs_registry

    if needs_registry.args[0]:
        pytest.skip(needs_registry.kwargs["reason"])
    upstream = request.getfixturevalue("upstream")
    request.getfixturevalue("hub")
    image = _push(upstream, tmp_path, "nightly/llama.cpp", *(f"server-cuda-{b}" for b in UPSTREAM_BUILDS))
    fork = _push(upstream, tmp_path, "nightly/llamacpp-mtp", "0.1.0", created="2026-05-01T10:00:00Z")
    work = tmp_path / "work"
    catalogue_at_1_0_8(work, fork)
    git(work, "init", "-q", "-b", "main")
    commit_env = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    git(work, *commit_env, "add", "-A")
    git(work, *commit_env, "commit", "-q", "-m", "the catalogue at 1.0.8")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    ws = clone(origin, tmp_path / "ws")
    bin_dir = tmp_path / "bin"
    prs = tmp_path / "prs.json"
    prs.write_text("[]")
    stand_in(bin_dir, "gh", GH.replace("@PRS@", str(prs)).replace("@PYTHON@", sys.executable))
    variables = {"OLARES_PACK_UPSTREAM_IMAGE": image}

    def night(event: str = "schedule") -> Any:
        done = Runner(written_workflow, ws, tmp_path, event=event, extra_path=[bin_dir], variables=variables).run("upstream")
        assert done.ok, [(s.name, s.rc, s.output[-3000:]) for s in done.steps if s.rc]
        return done

    night()
    opened = json.loads(prs.read_text())
    assert [(p["base"], p["head"].rsplit("-", 1)[0]) for p in opened] == [("main", f"olares-pack/propose/{APP}-1.0.8")]
    pr = opened[0]
    # the branch on origin holds the proposal: app.yaml's draft 1.0.9 on upstream b9409
    shown = subprocess.run(["git", "-C", str(origin), "show", f"{pr['head']}:apps/{APP}/app.yaml"], check=True,
                           capture_output=True, text=True).stdout
    doc = yaml.safe_load(shown)
    assert doc["version"] == "1.0.9" and doc["engine"]["image"]["tag"] == "server-cuda-b9409"
    assert doc["changelog"][-1]["version"] == "1.0.9"
    # byte for byte what `propose` writes when run by hand on the same catalogue
    by_hand = catalogue_at_1_0_8(tmp_path / "by-hand", fork)
    assert main(["propose", APP, "--apps-dir", str(by_hand), "--upstream-image", image]) == 0
    assert shown == (by_hand / APP / "app.yaml").read_text()
    assert pr["title"].startswith(f"{APP}: draft 1.0.9 (after 1.0.8)")
    body = pr["body"]
    for part in ("lint: 0 error(s)", "GPU memory on llama.cpp b9409", "Changes from llamacppqwen36mtpone 1.0.8 to",
                 "+version: 1.0.9", "+  - version: 1.0.9"):
        assert part in body, (part, body)
    # the next night, upstream unchanged: the same branch, already open, no second pull request
    again = night("workflow_dispatch")
    assert "is open already (the same draft)" in again.steps[-1].output
    assert len(json.loads(prs.read_text())) == 1
    # issue 52.5: a new upstream tag that outdated reports but that leaves the draft as it was
    # (a new tag of the fork, which names no llama.cpp build) opened a second pull request when the
    # branch was keyed on outdated's items
    outdated_before = next(s.output for s in again.steps if s.name == "olares-pack outdated")
    _push(upstream, tmp_path, "nightly/llamacpp-mtp", "0.1.1", created="2026-06-01T10:00:00Z")
    third = night()
    outdated_after = next(s.output for s in third.steps if s.name == "olares-pack outdated")
    assert outdated_after != outdated_before, "the new tag must change what outdated reports, or this proves nothing"
    assert "is open already (the same draft)" in third.steps[-1].output
    assert len(json.loads(prs.read_text())) == 1
    # a new build that changes the draft: a second pull request, and the first is closed as superseded
    _push(upstream, tmp_path, "nightly/llama.cpp", "server-cuda-b9553")
    fourth = night()
    now = json.loads(prs.read_text())
    assert [p["state"] for p in now] == ["closed", "open"], now
    assert now[0]["comment"].startswith("Superseded by https://github.com/example/catalogue/pull/2")
    assert "closed #1 (superseded)" in fourth.steps[-1].output
    moved = subprocess.run(["git", "-C", str(origin), "show", f"{now[1]['head']}:apps/{APP}/app.yaml"], check=True,
                           capture_output=True, text=True).stdout
    assert yaml.safe_load(moved)["engine"]["image"]["tag"] == "server-cuda-b9553"
    # the superseded draft's branch is deleted with its pull request
    heads = subprocess.run(["git", "-C", str(origin), "branch", "--list", "olares-pack/propose/*"], check=True,
                           capture_output=True, text=True).stdout.split()
    assert heads == [now[1]["head"]]


GH = r"""#!@PYTHON@
# `gh` stands in for GitHub's pull requests: kept in @PRS@
import json, re, subprocess, sys
args = sys.argv[1:]
prs = json.load(open("@PRS@"))
def opt(name):
    return args[args.index(name) + 1]
if args[:2] == ["pr", "list"] and "--head" in args:
    print(len([p for p in prs if p["head"] == opt("--head") and p["state"] == "open"]))
elif args[:2] == ["pr", "list"]:
    # the one --jq the workflow asks, evaluated as gh would: open pull requests whose head starts
    # with the prefix and is not the new branch
    m = re.fullmatch(r'.*startswith\("([^"]+)"\).*!= "([^"]+)".*', opt("--jq"))
    for n, p in enumerate(prs, 1):
        if p["state"] == "open" and p["head"].startswith(m[1]) and p["head"] != m[2]:
            print(n)
elif args[:2] == ["pr", "create"]:
    prs.append({"base": opt("--base"), "head": opt("--head"), "title": opt("--title"),
                "body": open(opt("--body-file")).read(), "state": "open"})
    json.dump(prs, open("@PRS@", "w"))
    print("https://github.com/example/catalogue/pull/%d" % len(prs))
elif args[:2] == ["pr", "close"] and "--delete-branch" in args:
    p = prs[int(args[2]) - 1]
    p.update(state="closed", comment=opt("--comment"))
    json.dump(prs, open("@PRS@", "w"))
    subprocess.run(["git", "push", "--quiet", "origin", "--delete", p["head"]], check=True)
else:
    sys.exit("gh stand-in: not expected: %s" % args)
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.test_outdated import upstream_registry

    yield from upstream_registry(tmp_path_factory)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    from tests.test_outdated import local_hub

    yield from local_hub(monkeypatch, tmp_path)


@pytest.mark.parametrize(("cron", "why"), [("99 99 * * *", "minute '99': expected 0–59"),
                                           ("0 24 * * *", "hour '24': expected 0–23"),
                                           ("0 4 0 * *", "day of month '0': expected 1–31"),
                                           ("0 4 * 13 *", "month '13'"), ("0 4 * * 8", "day of week '8'"),
                                           ("*/0 4 * * *", "the step after / is a number from 1"),
                                           ("0 5-3 * * *", "the range runs backwards"), ("0 4 * *", "4 field(s)")])
def test_init_refuses_a_cron_expression_github_would_reject(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            cron: str, why: str) -> None:
    assert main(["init", "--ci", "github", "--root", str(tmp_path), "--cron", cron]) == ExitCode.INPUT
    assert why in capsys.readouterr().err
    assert not (tmp_path / ".github").exists()  # nothing written


def test_init_takes_the_cron_forms_github_documents(tmp_path: Path) -> None:
    for i, cron in enumerate(("17 4 * * *", "*/15 0-6,22 1 JAN-MAR mon-fri", "0 0 * * SUN")):
        (tmp_path / str(i)).mkdir()
        assert main(["init", "--ci", "github", "--root", str(tmp_path / str(i)), "--cron", cron]) == ExitCode.OK
