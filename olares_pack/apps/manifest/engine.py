"""The engine: its image, build, helper images, shared or per-user form, command and script."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    model_validator,
)

from olares_pack.apps.manifest.base import Image, Model_
from olares_pack.common import shell
from olares_pack.common.fields import (
    Flag,
)

LLM_INIT_IMAGE = {"repository": "docker.io/beclab/llm-init", "tag": "v1.3.8"}
# The init container that hands the hostPath folders to llm-init's user (UID 1000), the
# official charts' image.
CHOWN_IMAGE = {"repository": "docker.io/beclab/aboveos-busybox", "tag": "1.37.0"}
# The v2 shared form's per-user proxy (legacy target), the official v2 client's image
# (beclab/apps llamacppgptoss120bggufv2/llamacppgptoss120bggufv2/templates/clientproxy.yaml).
PROXY_IMAGE = {"repository": "docker.io/beclab/aboveos-bitnami-openresty", "tag": "1.25.3-2"}


class Engine(Model_):
    kind: Literal["llamacpp", "vllm"] = Field(description="the serving engine: llamacpp or vllm")
    image: Image = Field(description="the engine image")
    build: str | None = Field(
        default=None, description="engine build whose flag registry applies, e.g. b11434 (llama.cpp)"
    )
    # One engine for every user of the device, behind llm-init (the official llmbase pattern);
    # false: today's per-user chart (one engine per user who installs it).
    shared: Flag = Field(True, description="true: one engine for every user of the device (the shared form); false: one engine per user who installs the app")
    # The program that starts the engine when the image's entrypoint is not it: `vllm-omni`, a
    # wrapper script that patches the engine before it starts (/entrypoint.sh), /app/llama-server.
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(None, description="per-user form: the container's command, the program that receives the engine's arguments (e.g. [vllm-omni], [/entrypoint.sh]); absent: the image's entrypoint")
    # A shell script that prepares the engine's start (a download, a migration) and then runs it:
    # kept as the chart writes it up to the program, the typed arguments rendered after it.
    script: str | None = Field(None, description="per-user form, with command [sh, -c]: the chart's shell script up to the program that starts the engine (`...\nexec /app/llama-server`); the render appends the typed arguments", min_length=1)
    # The maintainer's words after the program, as written (`--model "$MODELS_DIR/$TARGET_FILE" …`):
    # rendered as written while the typed arguments are the ones they were imported as, so that
    # the script keeps its author's text; a typed setting changed renders the typed arguments.
    script_tail: str | None = Field(None, description="with engine.script: the chart's text after the program, as written; rendered while the typed arguments are script_argv (import --structured)")
    script_argv: list[str] | None = Field(None, description="with script_tail: the typed arguments the chart's text was imported as")
    llm_init: Image = Field(description="shared form, current target: the llm-init image (downloads the model, progress page, API proxy)", default_factory=lambda: Image(**LLM_INIT_IMAGE))
    chown_image: Image = Field(description="shared form, current target: the image of llm-init's init step that hands its folders to its user", default_factory=lambda: Image(**CHOWN_IMAGE))
    # The v2 shared form's per-user proxy (legacy target); null: PROXY_IMAGE unpinned. Optional
    # rather than defaulted so that records published before it resolve the same.
    proxy_image: Image | None = Field(None, description="legacy target's shared form: each user's proxy image; null: the official v2 client's docker.io/beclab/aboveos-bitnami-openresty:1.25.3-2, unpinned")

    @model_validator(mode="after")
    def _command_per_user(self) -> Engine:
        if self.command is not None and self.shared:
            raise ValueError("engine.command is for the per-user form (shared: false): the shared form's wrapper starts the engine")
        if self.script is not None:
            if not (self.command and len(self.command) == 2 and shell.is_shell([*self.command, self.script])):
                raise ValueError("engine.script runs in a shell: engine.command is [sh, -c] (or bash)")
            if shell.script_head(self.script, self.kind) != self.script:
                raise ValueError(f"engine.script must end with the program that starts {self.kind} (e.g. exec /app/llama-server)")
        if (self.script_tail is None) != (self.script_argv is None) or (self.script_tail is not None and self.script is None):
            raise ValueError("engine.script_tail and engine.script_argv go together, with engine.script")
        return self

    @property
    def proxy(self) -> Image:
        return self.proxy_image or Image(**PROXY_IMAGE)

    def helper_images(self, targets: list[str] | tuple[str, ...]) -> dict[str, Image]:
        """The shared form's images beside the engine, by field: llm-init and its chown step
        (current target), the proxy client (legacy target)."""
        if not self.shared:
            return {}
        out = {}
        if "current" in targets:
            out |= {"llm_init": self.llm_init, "chown_image": self.chown_image}
        if "legacy" in targets:
            out["proxy_image"] = self.proxy
        return out


# ---------------------------------------------------------------- resources, entrance, probes


