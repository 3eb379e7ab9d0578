"""kill -9 a release at random moments; after each, the next command must leave a whole repository.

    .venv/bin/python measurements/release_crash.py [TRIALS] [SEED]

Each trial copies the example catalogue, starts `olares-pack release <app> --bump patch`, sends
SIGKILL after a random delay drawn over the release's own duration (measured first), then runs
`olares-pack build --check` (which recovers an interrupted write first) and verifies: exit 0, no
temporary file, no staging folder or journal, and the release either entirely there (record,
ledger entry, app.yaml version, both packages) or entirely absent.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from olares_pack.common.errors import ExitCode

ROOT = Path(__file__).resolve().parent.parent
BIN = [sys.executable, "-c", "from olares_pack.cli import main; main()"]
NAME = "llamacppqwen36mtpone"
RELEASE = ["release", NAME, "--bump", "patch", "--summary", "crash trial", "--date", "2026-06-01"]


def fresh(dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ROOT / "apps", dest / "apps")
    shutil.copytree(ROOT / "packages", dest / "packages")
    shutil.copy(ROOT / "market-index.json", dest / "market-index.json")
    return dest


def state(repo: Path) -> str:
    """'released', 'absent', or what is inconsistent."""
    parts = {
        "record": (repo / "apps" / NAME / "releases" / "1.0.10.json").exists(),
        "app.yaml": "version: 1.0.10\n" in (repo / "apps" / NAME / "app.yaml").read_text(),
        "ledger": '"version": "1.0.10"' in (repo / "market-index.json").read_text(),
        "current": (repo / "packages" / "current" / f"{NAME}-1.0.10.tgz").exists(),
        "legacy": (repo / "packages" / "legacy" / f"{NAME}-1.0.10.tgz").exists(),
    }
    if all(parts.values()):
        return "released"
    if not any(parts.values()):
        return "absent"
    return "half: " + ", ".join(k for k, v in parts.items() if v)


def strays(repo: Path) -> list[str]:
    out = [str(p.relative_to(repo)) for p in repo.rglob("*")
           if ".tmp" in p.name or (p.name.startswith(".") and p.name != ".olares-pack")]
    state_dir = repo / ".olares-pack"
    if state_dir.exists():
        out += [p.name for p in state_dir.iterdir() if p.name not in ("lock", "cache")]
    return out


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 12)
    with tempfile.TemporaryDirectory(prefix="olares-crash-") as tmp:
        repo = Path(tmp) / "repo"
        fresh(repo)
        t = time.perf_counter()
        subprocess.run([*BIN, *RELEASE], cwd=repo, capture_output=True, check=True)
        duration = time.perf_counter() - t
        outcomes: Counter[str] = Counter()
        failures = []
        for i in range(trials):
            fresh(repo)
            proc = subprocess.Popen([*BIN, *RELEASE], cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, duration * 1.1))
            proc.send_signal(signal.SIGKILL)
            killed = proc.wait() == -signal.SIGKILL
            check = subprocess.run([*BIN, "build", "--check"], cwd=repo, capture_output=True, text=True)
            after = state(repo)
            left = strays(repo)
            outcomes[f"{'killed' if killed else 'finished'} -> {after}"] += 1
            if check.returncode != ExitCode.OK or left or after.startswith("half"):
                failures.append(f"trial {i}: check exit {check.returncode}, {after}, strays {left}: {check.stderr[-500:]}")
    print(f"{trials} trials, kill within 0 - {duration * 1.1:.2f} s of a {duration:.2f} s release")
    for k, v in sorted(outcomes.items()):
        print(f"  {v:4d}  {k}")
    print(f"failures: {len(failures)}")
    for f in failures:
        print("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
