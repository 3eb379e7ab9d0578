"""How a bench measures: the example app's published method by default, every part configurable."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

# The maintainer's method (2 warm-ups, 10 runs of one prompt, 2,000 generated tokens, the Qwen3.6
# recommended sampling): one HTML game asked for, long enough that a model writes 2,000 tokens.
DEFAULT_PROMPT = (
    "Write a complete, playable Space Invaders game as a single HTML file with inline CSS and "
    "JavaScript. Use a canvas; the player moves with the arrow keys and shoots with the space bar; "
    "five rows of invaders march sideways and step down at each edge, speeding up as fewer remain; "
    "the invaders shoot back; four shields erode where they are hit; show the score, the lives and "
    "a game-over screen with a restart button. Comment every function."
)
DEFAULT_PROMPT_NAME = "space-invaders"


@dataclass(frozen=True)
class Method:
    runs: int = 10
    warmups: int = 2
    max_tokens: int = 2000
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int = 20
    min_p: float = 0.0
    prompt: str = DEFAULT_PROMPT
    prompt_name: str = DEFAULT_PROMPT_NAME
    # every run generates max_tokens: the figures of two versions then cover the same lengths
    ignore_eos: bool = True
    # extra request fields (a test's logit_bias, a vendor option), sent as given
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("runs", "max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: expected at least 1, got {getattr(self, name)}")
        if self.warmups < 0:
            raise ValueError(f"warmups: expected 0 or more, got {self.warmups}")

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()

    def sampling(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k, "min_p": self.min_p}

    def to_record(self) -> dict[str, Any]:
        """What a record keeps of the method: the prompt by name and digest, not its text."""
        d = asdict(self)
        d.pop("prompt")
        d["prompt_sha256"] = self.prompt_sha256
        return d
