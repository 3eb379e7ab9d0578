"""The model a server loads: a Hugging Face repository, file and revision."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from olares_pack.apps.manifest.base import FileSize, Model_
from olares_pack.apps.manifest.changelog import _unique
from olares_pack.common.fields import (
    HfPath,
    HfRepo,
    HfRevision,
    StoreFolder,
)


class ModelFile(Model_):
    name: HfPath = Field(description="path of the file in the repository")
    size: FileSize | None = Field(default=None, description="bytes")
    sha256: str | None = Field(description="the file's sha256 (its LFS oid); with size, the engine starts only on these exact bytes", default=None, pattern=r"^[0-9a-f]{64}$")


Capability = Literal["tools", "thinking", "vision", "embedding"]


class HFModel(Model_):
    """Weights on Hugging Face. `file`/`size`/`sha256` is the one-file shorthand of `files`."""

    repo: HfRepo = Field(description="Hugging Face repository of the weights")
    revision: HfRevision = Field("main", description="branch, tag or commit; a branch is warned about (`olares-pack pin` replaces it by its commit)")
    # What the model can do, for the device's LLM gateway (shared apps: MODEL_SUPPORTS, expanded
    # to supports_* keys as the official llm-init.yaml of beclab/apps llamacppllmbasev3 does).
    # embedding makes it an embedding model (MODEL_MODE embedding).
    capabilities: list[Capability] = Field(description="what the model can do, for the device's LLM gateway: tools, thinking, vision, embedding (embedding makes it an embedding model)", default_factory=list)
    file: HfPath | None = Field(None, description="the one GGUF (or weights) file: the shorthand of files with one entry")
    size: FileSize | None = Field(default=None, description="bytes")
    sha256: str | None = Field(description="the file's sha256; with size, the engine starts only on these exact bytes (shared form: checked once per file before the engine starts)", default=None, pattern=r"^[0-9a-f]{64}$")
    files: list[ModelFile] = Field(description="several files, each with name, size and sha256 (a model split in parts); a vLLM model without file or files is fetched whole", default_factory=list)
    # Who fetches the weights. olares-pack: its download step (verified, resumable) into its model
    # store. engine: the engine itself (llama.cpp's --hf-repo/--hf-file, vLLM from the hub), no
    # step of olares-pack's. chart: the chart's own step, kept in `workload.init_containers`.
    # Optional rather than defaulted so that records published before it resolve the same.
    fetch: Literal["olares-pack", "engine", "chart"] | None = Field(
        None, description="who fetches the weights: absent or olares-pack (its download step), engine (the engine downloads them itself) or chart (the chart's own step, kept in workload.init_containers)")
    # An upgrade must not download again what an earlier version kept: its own download step kept
    # the files flat (hf-files/<repo>/<revision>/), the shared form reads the hub cache. Named by
    # the maintainer, not guessed from the history, so that a render is a function of the manifest.
    adopt: list[StoreFolder] = Field(
        default_factory=list,
        description="folders of the shared Hugging Face store where earlier versions kept this model's files flat "
        "(olares-pack's per-user download step: hf-files/<repo>/<revision>); the shared form links each file into the "
        "hub cache under the name its content gives it before llm-init runs, so an upgrade does not download it again")
    path: str | None = Field(None, description="fetch: chart: where the engine reads the weights (llama.cpp's --model file, vLLM's model folder)", pattern=r"^\S+$")

    @model_validator(mode="after")
    def _one_form(self) -> HFModel:
        if self.file is not None:
            if self.files:
                raise ValueError("give either file (with size, sha256) or files, not both")
            self.files = [ModelFile(name=self.file, size=self.size, sha256=self.sha256)]
        elif self.size is not None or self.sha256 is not None:
            raise ValueError("size and sha256 belong to file; with several files give them per file")
        if (self.path is not None) != (self.fetch == "chart"):
            raise ValueError("model.path is where the chart's own step puts the weights: give it with fetch: chart, and only then")
        return self

    _caps = field_validator("capabilities")(classmethod(lambda cls, v: _unique(v)))

    @property
    def mode(self) -> str:
        return "embedding" if "embedding" in self.capabilities else "chat"


# ---------------------------------------------------------------- server settings


