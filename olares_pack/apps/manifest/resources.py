"""What the app asks of the device: CPU, memory, disk and GPU envelopes; its entrance and probes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictInt,
    field_validator,
    model_validator,
)

from olares_pack.apps.manifest.base import Model_
from olares_pack.common import quantity
from olares_pack.common.fields import (
    MAX_BYTES,
    MAX_CORES,
    MAX_GPU_MIB,
    Seconds,
    Url,
)


class _Range(Model_):
    request: str = Field(description="what the engine container requests")
    limit: str = Field(description="its limit (at least the request)")

    @model_validator(mode="after")
    def _order(self) -> _Range:
        if quantity.parse(self.request) > quantity.parse(self.limit):
            raise ValueError(f"request {self.request} is larger than limit {self.limit}")
        return self


class CpuRange(_Range):

    @field_validator("request", "limit", mode="before")
    @classmethod
    def _cpu(cls, v: Any) -> str:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise ValueError("expected a CPU quantity such as 4 or 4000m")
        try:
            cores = quantity.parse(v)
        except quantity.QuantityError as exc:
            raise ValueError(str(exc)) from None
        if not 0 < cores <= MAX_CORES:
            raise ValueError(f"{v!r}: a CPU quantity from 1m to {MAX_CORES} cores")
        return str(v)


class ByteRange(_Range):

    @field_validator("request", "limit", mode="before")
    @classmethod
    def _bytes(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError(f"{v!r} has no unit: write a quantity such as 24Gi or 512Mi")
        try:
            size = quantity.parse(v)
        except quantity.QuantityError as exc:
            raise ValueError(str(exc)) from None
        if v.endswith("m"):
            raise ValueError(f"{v!r} is in millibytes: write Mi or Gi")
        if not 0 < size <= MAX_BYTES:
            raise ValueError(f"{v!r}: a size from 1 byte to 1Pi")
        return v


class GpuEnvelope(Model_):
    """The GPU envelope as a chart declares it, request and limit apart (an imported chart's
    `requiredGpu: 1Gi`, `limitedGpu: 24Gi`: the app always schedules, the engine may use 24 GiB)."""

    request: str = Field(description="requiredGpu as written: memory (1Gi) or a count of GPUs (1)", min_length=1)
    limit: str | None = Field(None, description="limitedGpu as written; absent: none declared")
    container: Literal["gpumem", "whole", "none"] = Field(
        "gpumem", description="what the engine container asks: gpumem (HAMi memory, gpu_memory_mib), whole (nvidia.com/gpu: 1), none")

    @field_validator("request", "limit")
    @classmethod
    def _quantity(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                quantity.parse(v)
            except quantity.QuantityError as exc:
                raise ValueError(str(exc)) from None
        return v


class Resources(Model_):
    """The engine container's requests/limits, which are also the manifest envelope."""

    cpu: CpuRange = Field(description="cores or millicores (4, 4000m)")
    memory: ByteRange = Field(description="bytes with a unit (20Gi)")
    disk: ByteRange = Field(description="bytes with a unit (25Gi)")
    gpu_memory_mib: Annotated[StrictInt, Field(gt=0, le=MAX_GPU_MIB)] | Literal["auto"] | None = Field(
        default=None, description="nvidia.com/gpumem, whole MiB; auto: derived from the GPU memory estimate")
    gpu: GpuEnvelope | None = Field(None, description="the GPU envelope as declared, request and limit apart (imported charts); absent: gpu_memory_mib is both")


class Entrance(Model_):
    name: str | None = Field(description="entrance name; default: the app's name", default=None, pattern=r"^[a-z0-9A-Z-]{1,63}$")
    title: str = Field(description="the entrance's title (1-30 characters)", min_length=1, max_length=30)
    auth_level: Literal["", "public", "private", "internal"] = Field("internal", description="who may open it")
    open_method: Literal["", "default", "iframe", "window"] = Field("window", description="how the desktop opens it")
    icon: Url | None = Field(None, description="the entrance's icon")


class Probe(Model_):
    initial_delay_seconds: Seconds = Field(0, description="initialDelaySeconds")
    period_seconds: Annotated[Seconds, Field(ge=1)] = Field(10, description="periodSeconds")
    timeout_seconds: Annotated[Seconds, Field(ge=1)] = Field(5, description="timeoutSeconds")
    failure_threshold: Annotated[StrictInt, Field(ge=1, le=100000)] = Field(3, description="failureThreshold")


class Probes(Model_):
    path: str = Field(description="the HTTP path probed on the server port (per-user form; the shared engine has no probes)", default="/health", pattern=r"^/[A-Za-z0-9/._-]*$")
    startup: Probe = Field(
        description="the startup probe",
        default_factory=lambda: Probe(initial_delay_seconds=30, period_seconds=15, failure_threshold=240))
    liveness: Probe = Field(description="the liveness probe", default_factory=lambda: Probe(period_seconds=30, failure_threshold=5))
    readiness: Probe = Field(description="the readiness probe", default_factory=lambda: Probe(period_seconds=10, failure_threshold=3))


# ---------------------------------------------------------------- changelog

