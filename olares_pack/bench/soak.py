"""`bench --fill`: drive the context in steps up to the version's --ctx-size with drafting active;
any failed request or a server that exits fails the soak. The GPU's peak (--gpu) is shown beside
`vram`'s estimate: the measurement checks the estimate."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from olares_pack.bench import harness
from olares_pack.bench.method import Method
from olares_pack.common.errors import BenchFailure

MARGIN = 64  # tokens left free at the top: the chat template and a fresh first line


@dataclass
class SoakResult:
    ctx_size: int
    steps: list[int]  # the prompt sizes asked for
    done: list[harness.Run]
    failure: str | None

    @property
    def passed(self) -> bool:
        return self.failure is None

    @property
    def filled_to(self) -> int | None:
        return max((r.prompt_tokens + r.tokens for r in self.done), default=None)


def step_sizes(ctx_size: int, steps: int, gen_tokens: int) -> list[int]:
    """Prompt sizes that, with gen_tokens generated, reach ctx_size in `steps` equal steps."""
    top = ctx_size - gen_tokens - MARGIN
    if top < 1:
        raise ValueError(f"--ctx-size {ctx_size} leaves no room for a prompt and {gen_tokens} generated tokens")
    return [max(1, top * k // steps) for k in range(1, steps + 1)]


def tokenize(client: harness.Client, server: harness.Server, text: str) -> list[int]:
    """Token ids of text by the server's own tokenizer (llama-server's or vLLM's /tokenize)."""
    body = {"content": text} if server.kind == "llama-server" else {"model": server.model, "prompt": text}
    try:
        status, data = client.post("/tokenize", body, timeout=60)
        tokens = json.loads(data).get("tokens") if status == 200 else None
    except (OSError, ValueError) as exc:
        raise BenchFailure(f"/tokenize failed: {exc}") from None
    if not isinstance(tokens, list) or not tokens:
        raise BenchFailure(f"{client.url}/tokenize answered HTTP {status}: the soak needs the server's tokenizer")
    return [t if isinstance(t, int) else int(t["id"]) for t in tokens]


def fill(client: harness.Client, server: harness.Server, method: Method, ctx_size: int, steps: int = 4,
         gen_tokens: int = 256, progress: Callable[[str], None] = lambda _: None) -> SoakResult:
    """One request per step, each a fresh prompt of the step's size (so every step fills the
    context from the start, as a user's long conversation does), gen_tokens generated with the
    method's sampling and the server's drafting."""
    sizes = step_sizes(ctx_size, steps, gen_tokens)
    unit = tokenize(client, server, method.prompt)
    result = SoakResult(ctx_size, sizes, [], None)
    for i, size in enumerate(sizes, 1):
        head = tokenize(client, server, harness.fresh_prompt(method, f"olares-pack soak step {i}").split("\n", 1)[0] + "\n")
        ids = (head + unit * (size // len(unit) + 1))[:size]
        what = f"soak step {i} of {len(sizes)} ({size} prompt tokens)"
        try:
            run = harness.complete(client, server, method, ids, gen_tokens, what)
        except BenchFailure as exc:
            alive = _alive(client)
            result.failure = f"{exc}{'' if alive else ' — the server no longer answers: it exited'}"
            return result
        result.done.append(run)
        drafts = f", drafts {run.draft_accepted}/{run.draft_n}" if run.draft_n is not None else ""
        progress(f"{what}: {run.tokens_per_s:.2f} tokens/s{drafts}")
    return result


def _alive(client: harness.Client) -> bool:
    try:
        status, _ = client.get("/health", timeout=5)
        return status == 200
    except OSError:
        return False


def estimate(app_dir: Path, version: str, apps_dir: Path) -> tuple[float | None, int | None]:
    """`vram`'s estimate (the Olares One profile) of the version a soak fills, beside its peak, and
    that version's --ctx-size (the context the soak drives to by default)."""
    from olares_pack.apps.load import load_app
    from olares_pack.apps.manifest import LlamaCppApp
    from olares_pack.catalogue import records as releases
    from olares_pack.catalogue.repo import MANIFEST_FILE, Repo
    from olares_pack.vram import budget
    from olares_pack.vram import estimate as vram

    repo = Repo.of_apps(apps_dir)
    if version in releases.versions(repo, app_dir.name):
        app = releases.app_of(releases.read(repo, app_dir.name, version))
    else:
        app = load_app(app_dir / MANIFEST_FILE)
    est = budget.app_estimate(app, app_dir, vram.device("olares-one", None, None), None)
    ctx = app.server.ctx_size if isinstance(app, LlamaCppApp) else None
    return est.total_mib, ctx if isinstance(ctx, int) else None
