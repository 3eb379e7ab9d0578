"""GPU memory sampled every 100 ms through NVML's Python binding (nvidia-ml-py), where the caller
sees the GPU; the peak of the device's used memory over a bench or soak."""

from __future__ import annotations

import threading
from typing import Any

from olares_pack.common.errors import InputError

INTERVAL_S = 0.1


class GpuSampler:
    """`with GpuSampler(index) as s: ...` then s.peak_mib (MiB used on the device, all processes)."""

    def __init__(self, index: int = 0, interval_s: float = INTERVAL_S) -> None:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            raise InputError("--gpu samples GPU memory through NVML's Python binding: pip install nvidia-ml-py") from None
        self._nvml: Any = pynvml
        try:
            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.name = str(pynvml.nvmlDeviceGetName(self._handle))
        except pynvml.NVMLError as exc:
            raise InputError(f"--gpu: NVML sees no GPU {index} here ({exc}); run the bench where the GPU is visible") from None
        self.interval_s = interval_s
        self.samples = 0
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _used_mib(self) -> float:
        return self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used / 2**20

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak_mib = max(self.peak_mib, self._used_mib())
            self.samples += 1
            self._stop.wait(self.interval_s)

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mib = max(self.peak_mib, self._used_mib())
        self._nvml.nvmlShutdown()
