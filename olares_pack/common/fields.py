"""The manifest boundary: one discipline for every value that reaches YAML, Helm templates, the
download script and URLs.

Two layers, both applied to every app manifest (app.yaml and release records) before anything is
rendered:

- `text_problems` walks the raw data once, every string and every key wherever it stands: no NUL,
  CR, U+0085, U+2028/2029 or other control character (a newline only in the multi-line fields,
  a tab only there too), never blank, and no template delimiter (`{{`, `}}`, `{%`, `{#`) outside
  the engine arguments and environment values, which are rendered through the Helm-escaping
  filter instead (render._helm_str, proven by tests/test_hostile.py).
- typed fields for what has a grammar: names, URLs, Hugging Face repo ids, revisions and file
  paths, strict integers and booleans (YAML `true` is not 1), bounded numbers.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, StrictBool, StrictInt

# C0 controls but tab and newline, DEL, C1 controls (U+0085 NEL among them), line and paragraph
# separators: YAML 1.1 readers (the device's) break lines on U+0085/2028/2029 and CR.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NEWLINE_OR_TAB = re.compile("[\n\t]")
# What opens a template action. A lone `}}` is text to Go templates (text/template lexes an action
# from its left delimiter only; reproduced: `helm template` of a ConfigMap whose value is
# `a }} b {"k": {"a": 1}}` writes it unchanged, helm v3.19.5), so JSON in a text is kept as written.
TEMPLATE_DELIMITERS = ("{{", "{%", "{#")
MAX_TEXT = 64 * 1024  # characters in one string value

# Field paths (tuples; "*" matches any key or index) where newlines and tabs belong.
MULTILINE = (
    ("full_description",),
    ("locales", "*", "full_description"),
    ("changelog", "*", "notes"),
    ("changelog", "*", "locales", "*", "notes"),
    ("engine", "command", "*"),  # a wrapper's shell script (`sh -c '...'`), rendered Helm-escaped
    ("engine", "script"),
    ("engine", "script_tail"),  # the rest of that script after the program, as written
    ("engine", "args", "*"),  # a generic server's arguments (a shell script among them), rendered Helm-escaped
)
# Rendered through the Helm-escaping filter, so template delimiters are literal text there.
ESCAPED = (("server", "extra_args"), ("server", "chat_template_kwargs"), ("server", "speculative_config"),
           ("env",))


def _matches(loc: tuple[Any, ...], patterns: tuple[tuple[str, ...], ...], prefix: bool) -> bool:
    for pat in patterns:
        if len(loc) < len(pat) or (not prefix and len(loc) != len(pat)):
            continue
        if all(p == "*" or p == str(k) for p, k in zip(pat, loc[:len(pat)], strict=True)):
            return True
    return False


def describe(ch: str) -> str:
    return {"\x00": "NUL", "\r": "a carriage return", "\u2028": "U+2028 (line separator)",
            "\u2029": "U+2029 (paragraph separator)", "\x85": "U+0085 (next line)",
            "\n": "a newline", "\t": "a tab"}.get(ch, f"the control character U+{ord(ch):04X}")


# An imported chart's own files and manifest (ChartApp.chart): Helm templates and YAML as written,
# multi-line, with template delimiters; only their size and control characters are checked.
# What a typed app keeps of an imported chart (apps/kept.py) is the same: scripts, Helm expressions
# naming the installer's values (the render escapes any other `{{`).
RAW = (("chart",), ("workload",), ("objects",), ("olares",))
# Characters in one chart file: Helm's own limit on a chart file (MaxDecompressedFileSize, 5 MiB, in
# pkg/chart/loader of helm.sh/helm/v3 v3.19.5, which beclab/Olares framework/app-service links).
MAX_FILE = 5 << 20


# Any character one of the rules below looks at (controls, newline and tab among them, and the `{`
# of a template delimiter): a string without one, not blank and not too long, passes every rule,
# whatever its path. Most strings of a manifest are such; `build --check` reads hundreds of
# records, and matching each string's path against the rules' paths was most of its time.
_SUSPECT = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029{]")


def string_problem(text: str, loc: tuple[Any, ...]) -> str | None:
    """What is wrong with one string at `loc`, or None."""
    if len(text) <= MAX_TEXT and not _SUSPECT.search(text) and (not text or text.strip()):
        return None
    if _matches(loc, RAW, prefix=True):
        if len(text) > MAX_FILE:
            return f"is {len(text):,} characters long; at most {MAX_FILE:,}"
        # A carriage return is text to Helm's template engine and a line break to the YAML reader
        # of the rendered objects; official charts carry lone ones (beclab/apps lobechat).
        m = _CONTROL.search(text.replace("\r", "\n"))
        return f"holds {describe(m.group())}: plain text only" if m else None
    if len(text) > MAX_TEXT:
        return f"is {len(text):,} characters long; at most {MAX_TEXT:,}"
    if m := _CONTROL.search(text):
        return f"holds {describe(m.group())}: plain text only"
    if not _matches(loc, MULTILINE, prefix=False) and (m := _NEWLINE_OR_TAB.search(text)):
        return f"holds {describe(m.group())}: this field is one line"
    if text and not text.strip():
        return "is blank (only white space)"
    if not _matches(loc, ESCAPED, prefix=True):
        for d in TEMPLATE_DELIMITERS:
            if d in text:
                return f"holds {d!r}: template delimiters are evaluated by the device's Helm step; remove them"
    return None


def text_problems(data: Any, loc: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """Every string (and mapping key) of a manifest that breaks the plain-text rules, by path."""
    out: list[tuple[tuple[Any, ...], str]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [(loc, data)]
    while stack:
        here, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and (msg := string_problem(k, (*here, k))):
                    out.append(((*here, k), f"key {msg}"))
                stack.append(((*here, k), v))
        elif isinstance(value, list):
            stack.extend(((*here, i), v) for i, v in enumerate(value))
        elif isinstance(value, str) and (msg := string_problem(value, here)):
            out.append((here, msg))
    return sorted(out, key=lambda p: [str(x) for x in p[0]])


# ---------------------------------------------------------------- typed fields

def _url(value: str) -> str:
    if any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not a URL: it holds white space")
    parts = urllib.parse.urlsplit(value)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or "@" in parts.netloc or not (
            re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", host) or _is_ip(host)):
        raise ValueError(f"{value!r} is not an http(s) URL with a host name (and no user or password)")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ValueError(f"{value!r} has a port that is not a number from 0 to 65535") from None
    return value


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


Url = Annotated[str, Field(max_length=2048), AfterValidator(_url)]

# Hugging Face repo ids, as huggingface_hub validates them: owner/name, letters, digits, '-', '_',
# '.', no '--' or '..', not starting or ending with '-' or '.', 96 characters at most.
_HF_PART = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")


def _hf_repo(value: str) -> str:
    parts = value.split("/")
    if len(parts) != 2 or not all(_HF_PART.match(p) for p in parts) or "--" in value or ".." in value or len(value) > 96:
        raise ValueError(f"{value!r} is not a Hugging Face repo id (owner/name: letters, digits, '-', '_', '.'; "
                         "no '--' or '..')")
    return value


def _segments(value: str, what: str, extra: str) -> str:
    """A relative path of plain segments: no empty, '.' or '..' segment, no leading '/'."""
    if not value or value.startswith("/") or value.endswith("/"):
        raise ValueError(f"{value!r} is not a {what}: no leading or trailing '/'")
    for seg in value.split("/"):
        if seg in ("", ".", ".."):
            raise ValueError(f"{value!r} is not a {what}: no empty, '.' or '..' segment")
        if not re.fullmatch(rf"[A-Za-z0-9._\-{extra}]+", seg):
            raise ValueError(f"{value!r} is not a {what}: segment {seg!r} holds characters outside "
                             f"letters, digits, '.', '_', '-'{' and ' + repr(extra) if extra else ''}")
    return value


def _revision(value: str) -> str:
    # A branch, a tag or a commit: git's ref rules, with what the download path can carry.
    _segments(value, "Hugging Face revision (a branch, tag or commit)", "")
    if any(seg.startswith(".") or seg.endswith(".lock") for seg in value.split("/")):
        raise ValueError(f"{value!r} is not a git ref: no segment starting with '.' or ending with '.lock'")
    return value


def _file(value: str) -> str:
    return _segments(value, "file path inside the repo", " +=,@()")


def _store_folder(value: str) -> str:
    # It lands in a shell script of the chart (templates/llmbase/adopt.sh): plain segments only.
    return _segments(value, "folder of the shared Hugging Face store", "")


HfRepo = Annotated[str, AfterValidator(_hf_repo)]
StoreFolder = Annotated[str, Field(max_length=512), AfterValidator(_store_folder)]
HfRevision = Annotated[str, Field(max_length=128), AfterValidator(_revision)]
HfPath = Annotated[str, Field(max_length=512), AfterValidator(_file)]


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


Port = Annotated[StrictInt, Field(ge=1, le=65535)]
Count = Annotated[StrictInt, Field(ge=0, le=1 << 24)]  # tokens, slots, batch sizes, attempts
Seconds = Annotated[StrictInt, Field(ge=0, le=7 * 86400)]
Fraction = Annotated[float, BeforeValidator(_no_bool), Field(ge=0, le=1)]
Flag = StrictBool

# Resource bounds: far above any real node, low enough that arithmetic and the device's parsers
# stay in range (a 10^30-core request is a typo, not a plan).
MAX_CORES = 4096
MAX_BYTES = 1 << 50  # 1 PiB
MAX_GPU_MIB = 1 << 20  # 1 TiB
