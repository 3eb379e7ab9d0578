"""Shell wrappers around an engine's program (`sh -c '... exec llama-server ...'`): what both the app
manifest (apps/) and the engines' renderers (engines/) read, kept below both so neither imports
the other for it."""

from __future__ import annotations

import re
import shlex

SHELLS = ("sh", "bash", "ash", "dash")


def is_shell(words: list[str]) -> bool:
    """`sh -c SCRIPT ...` (any shell, -c with other options)."""
    return len(words) >= 3 and words[0].split("/")[-1] in SHELLS and words[1].startswith("-") and "c" in words[1]


def script_head(script: str, kind: str) -> str | None:
    """A wrapper script up to the program that starts the engine (`...\nexec /app/llama-server`,
    `... vllm serve`), when that invocation is the script's last command; else None."""
    # vLLM: `vllm serve`, `vllm-omni serve`, or an image's entrypoint script handed `serve` (detect.py)
    pat = r"\S*llama-server\b" if kind == "llamacpp" else r"\S*\b(?:vllm|vllm-omni)\s+serve\b|\S+\.sh\s+serve\b"
    found = list(re.finditer(pat, script))
    if not found:
        return None
    head = script[: found[-1].end()]
    try:
        tail = list(shlex.shlex(script[found[-1].end():].replace("\\\n", " "), posix=True, punctuation_chars=True))
    except ValueError:
        return None
    if any(t and set(t) <= set(";&|()<>") for t in tail) or "\n" in script[found[-1].end():].replace("\\\n", " ").strip():
        return None  # another command after the engine's
    return head
