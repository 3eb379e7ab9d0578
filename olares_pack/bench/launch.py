"""`bench --launch ENGINE_BINARY --model FILE`: start llama-server the way the version's chart
starts it, measure it, stop it.

The argv and environment are the version's own, never derived again here: a published version's
release record holds the engine argv and env its chart runs (catalogue/releases.py
engine_record, the same function that wrote it), an unreleased one gets them from that function
on app.yaml. Three things are swapped, and only these: the model path for FILE, and the host and
port for a free loopback port (the chart's 0.0.0.0:8000 would clash with anything already
there). A sweep changes flags and environment variables on top (sweep.py).

A crash at start, or an engine that exits during the runs, fails with the last lines of the
engine's own log."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from olares_pack.bench import harness
from olares_pack.common.errors import BenchFailure, InputError

if TYPE_CHECKING:
    from olares_pack.engines.registry import Registry

GGUF_MAGIC = b"GGUF"
LOG_LINES = 20
START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Invocation:
    """What the version's chart runs: the engine's argv (without the program) and environment."""

    argv: list[str]
    env: dict[str, str]
    build: str | None
    model_path: str  # the model path the chart passes, which --model FILE replaces


@dataclass
class Config:
    """One configuration: flags and environment variables set on top of the version's own."""

    label: str
    args: dict[str, str] = field(default_factory=dict)  # canonical flag -> value
    env: dict[str, str] = field(default_factory=dict)
    baseline: bool = False


def check_model(path: Path) -> Path:
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise InputError(f"--model {path}: cannot read it ({exc.strerror})") from None
    if magic != GGUF_MAGIC:
        raise InputError(f"--model {path}: not a GGUF file (it starts with {magic!r}, a GGUF with b'GGUF')")
    return path


def check_binary(path: Path) -> Path:
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InputError(f"--launch {path}: not an executable file (the llama-server binary to start)")
    return path


def invocation(app_dir: Path, version: str, apps_dir: Path) -> Invocation:
    """The version's engine argv and env: its release record's, else engine_record of app.yaml."""
    from olares_pack import engines
    from olares_pack.apps.load import load_app
    from olares_pack.catalogue import records as releases
    from olares_pack.catalogue.releases import engine_record
    from olares_pack.catalogue.repo import MANIFEST_FILE, Repo

    repo = Repo.of_apps(apps_dir)
    if version in releases.versions(repo, app_dir.name):
        rel = releases.read(repo, app_dir.name, version)
        app, eng = releases.app_of(rel), rel.engine
    else:
        app = load_app(app_dir / MANIFEST_FILE)
        if app.version != version:
            raise InputError(f"{app_dir.name} {version}: neither released nor app.yaml's version ({app.version})")
        eng = engine_record(app)
    if eng.kind != "llamacpp" or app.engine.kind != "llamacpp":
        raise InputError(f"{app_dir.name} {version}: --launch starts llama-server; this version runs {eng.kind}")
    return Invocation(list(eng.argv), dict(eng.env), eng.build, f"{engines.model_dir(app)}/{app.model.files[0].name}")


def registry_of(build: str | None) -> Registry:
    """The flag registry of the pinned build (engines/registry.py), the newest where none is known."""
    from olares_pack.engines import registry

    try:
        return registry.load("llamacpp", build)
    except InputError:
        return registry.load("llamacpp")


def set_flag(argv: list[str], reg: Registry, flag: str, value: str) -> list[str]:
    """argv with flag (any spelling of it) set to value; appended when argv does not set it."""
    spec = reg.lookup(flag)
    names = set(spec.names) if spec else {flag}
    out = list(argv)
    for i, a in enumerate(out):
        if a in names and i + 1 < len(out):
            out[i + 1] = value
            return out
        if "=" in a and a.split("=", 1)[0] in names:
            out[i] = f"{a.split('=', 1)[0]}={value}"
            return out
    return [*out, spec.canonical if spec else flag, value]


def argv_of(inv: Invocation, reg: Registry, model: Path, port: int, config: Config) -> list[str]:
    if inv.model_path not in inv.argv:
        raise InputError(f"the version's argv does not hold its model path {inv.model_path}: cannot swap in --model")
    argv = [str(model) if a == inv.model_path else a for a in inv.argv]
    argv = set_flag(set_flag(argv, reg, "--host", "127.0.0.1"), reg, "--port", str(port))
    for flag, value in config.args.items():
        argv = set_flag(argv, reg, flag, value)
    return argv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(log: Path, lines: int = LOG_LINES) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"


class Engine:
    """A started engine: `with Engine(...) as e:` waits for /health, stops it on leaving."""

    def __init__(self, binary: Path, argv: list[str], env: dict[str, str], log: Path,
                 start_timeout: float = START_TIMEOUT_S) -> None:
        self.binary, self.argv, self.env, self.log = binary, argv, env, log
        self.start_timeout = start_timeout
        port = argv[argv.index("--port") + 1] if "--port" in argv else "8080"
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Engine:
        lib = str(self.binary.resolve().parent)  # a llama.cpp build keeps its shared libraries beside the binary
        env = {**os.environ, **self.env,
               "LD_LIBRARY_PATH": ":".join(p for p in (lib, os.environ.get("LD_LIBRARY_PATH", "")) if p)}
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([str(self.binary), *self.argv], stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        client = harness.Client(self.url, 10)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchFailure(f"the engine exited at start (status {self.proc.returncode}); its last log "
                                   f"lines ({self.log}):\n{tail(self.log)}")
            try:
                status, _ = client.get("/health", timeout=2)
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise BenchFailure(f"the engine did not answer /health within {self.start_timeout:.0f} s; its last log "
                           f"lines ({self.log}):\n{tail(self.log)}")

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(15)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def failure(self, exc: BenchFailure) -> BenchFailure:
        """A bench failure, with the engine's last log lines when the engine is gone."""
        if self.proc is not None:
            try:  # its connections close while it exits: give the exit a moment to be seen
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                return exc
        assert self.proc is not None
        return BenchFailure(f"{exc} — the engine exited (status {self.proc.returncode}); its last log lines "
                            f"({self.log}):\n{tail(self.log)}")
