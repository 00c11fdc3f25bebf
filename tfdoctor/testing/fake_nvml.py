"""A fake NVML with pynvml's API, for tests and recorded fixtures: healthy or sick GPUs, a missing
library, an init error, one call that raises, one call that hangs.

    from tfdoctor.facts.probes import nvml
    nvml.NVML_OVERRIDE = lambda: FakeNvml([FakeGpu()], hang={"nvmlDeviceGetName"})
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):  # pynvml's own spelling
    pass


class NVMLError_NotSupported(NVMLError):
    def __init__(self) -> None:
        super().__init__("Not Supported")


class NVMLError_InvalidArgument(NVMLError):
    def __init__(self) -> None:
        super().__init__("Invalid Argument")


class NVMLError_NotFound(NVMLError):
    def __init__(self) -> None:
        super().__init__("Not Found")


MIB = 1024 * 1024


@dataclass
class FakeGpu:
    """A GPU as the fake NVML answers for it, field by field."""

    name: str = "NVIDIA A100-SXM4-40GB"
    uuid: str = "GPU-8c4e2f19-5a1d-4b2e-9f3a-0d6c7b8e9f10"
    pci_bus_id: str = "00000000:3B:00.0"
    compute_capability: tuple[int, int] = (8, 0)
    memory_total_mib: int = 40960
    memory_used_mib: int = 3
    processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, MiB)
    persistence: bool | None = True  # None: not supported (Windows, WSL2)
    ecc: tuple[bool, int, int] | None = (True, 0, 0)  # enabled, uncorrected volatile, aggregate; None: unsupported
    retired: tuple[int, int, bool] = (0, 0, False)  # single-bit, double-bit, pending
    remapped: tuple[int, int, bool, bool] | None = (0, 0, False, False)  # None: pre-Ampere
    clock_reasons: int = 0x1  # gpu_idle
    utilization: int = 0
    pcie: tuple[int, int, int, int] = (4, 4, 16, 16)  # gen current/max, width current/max
    mig: tuple[bool, bool] | None = (False, False)  # None: not MIG-capable
    mig_uuids: list[str] = field(default_factory=list)
    # Active NVLinks, one (remote PCI bus id, remote type: 0 GPU, 2 NVSwitch) per link; None: no NVLink (PCIe card).
    nvlinks: list[tuple[str, int]] | None = None


class FakeNvml:
    def __init__(self, gpus: Iterable[FakeGpu] = (), driver: str = "550.54.15", cuda: int = 12040,
                 fail: dict[str, Exception] | None = None, hang: Iterable[str] = (),
                 init_error: Exception | None = None) -> None:
        self.gpus = list(gpus)
        self.driver, self.cuda = driver, cuda
        self.fail = dict(fail or {})
        self.hang = set(hang)
        self.init_error = init_error
        self.release = threading.Event()  # set it to let a hung call return (test teardown)
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        impl = getattr(type(self), "_" + name, None)
        if impl is None or not name.startswith("nvml"):
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            self.calls.append(name)
            if name in self.hang:
                self.release.wait()
            if name in self.fail:
                raise self.fail[name]
            return impl(self, *args)

        return call

    # -- the API ----------------------------------------------------------------------------------
    def _nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error

    def _nvmlShutdown(self) -> None:
        return None

    def _nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def _nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def _nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def _nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        return self.gpus[index]

    def _nvmlDeviceGetName(self, gpu: FakeGpu) -> str:
        return gpu.name

    def _nvmlDeviceGetUUID(self, gpu: Any) -> str:
        return gpu if isinstance(gpu, str) else gpu.uuid

    def _nvmlDeviceGetPciInfo(self, gpu: FakeGpu) -> Any:
        return SimpleNamespace(busId=gpu.pci_bus_id.encode())

    def _nvmlDeviceGetCudaComputeCapability(self, gpu: FakeGpu) -> tuple[int, int]:
        return gpu.compute_capability

    def _nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> Any:
        return SimpleNamespace(total=gpu.memory_total_mib * MIB, used=gpu.memory_used_mib * MIB,
                               free=(gpu.memory_total_mib - gpu.memory_used_mib) * MIB)

    def _nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> Any:
        return SimpleNamespace(gpu=gpu.utilization, memory=0)

    def _nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[Any]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=mib * MIB) for pid, mib in gpu.processes]

    def _nvmlDeviceGetPersistenceMode(self, gpu: FakeGpu) -> int:
        if gpu.persistence is None:  # Windows and WSL2 drivers have no persistence mode
            raise NVMLError_NotSupported()
        return int(gpu.persistence)

    def _nvmlDeviceGetEccMode(self, gpu: FakeGpu) -> list[int]:
        if gpu.ecc is None:
            raise NVMLError_NotSupported()
        return [int(gpu.ecc[0]), int(gpu.ecc[0])]

    def _nvmlDeviceGetTotalEccErrors(self, gpu: FakeGpu, error_type: int, counter: int) -> int:
        if gpu.ecc is None:
            raise NVMLError_NotSupported()
        return gpu.ecc[1] if counter == 0 else gpu.ecc[2]

    def _nvmlDeviceGetRetiredPages(self, gpu: FakeGpu, cause: int) -> list[int]:
        return [0x1000 * i for i in range(gpu.retired[cause])]

    def _nvmlDeviceGetRetiredPagesPendingStatus(self, gpu: FakeGpu) -> int:
        return int(gpu.retired[2])

    def _nvmlDeviceGetRemappedRows(self, gpu: FakeGpu) -> tuple[int, int, int, int]:
        if gpu.remapped is None:
            raise NVMLError_NotSupported()
        c, u, p, f = gpu.remapped
        return c, u, int(p), int(f)

    def _nvmlDeviceGetCurrentClocksEventReasons(self, gpu: FakeGpu) -> int:
        return gpu.clock_reasons

    def _nvmlDeviceGetCurrPcieLinkGeneration(self, gpu: FakeGpu) -> int:
        return gpu.pcie[0]

    def _nvmlDeviceGetMaxPcieLinkGeneration(self, gpu: FakeGpu) -> int:
        return gpu.pcie[1]

    def _nvmlDeviceGetCurrPcieLinkWidth(self, gpu: FakeGpu) -> int:
        return gpu.pcie[2]

    def _nvmlDeviceGetMaxPcieLinkWidth(self, gpu: FakeGpu) -> int:
        return gpu.pcie[3]

    def _nvmlDeviceGetMigMode(self, gpu: FakeGpu) -> list[int]:
        if gpu.mig is None:
            raise NVMLError_NotSupported()
        return [int(gpu.mig[0]), int(gpu.mig[1])]

    def _nvmlDeviceGetMaxMigDeviceCount(self, gpu: FakeGpu) -> int:
        return 7

    def _nvmlDeviceGetMigDeviceHandleByIndex(self, gpu: FakeGpu, slot: int) -> str:
        if slot >= len(gpu.mig_uuids):
            raise NVMLError_NotFound()
        return gpu.mig_uuids[slot]

    def _nvmlDeviceGetNvLinkState(self, gpu: FakeGpu, link: int) -> int:
        if gpu.nvlinks is None:
            raise NVMLError_NotSupported()
        if link >= max(len(gpu.nvlinks), 12):
            raise NVMLError_InvalidArgument()
        return int(link < len(gpu.nvlinks))

    def _nvmlDeviceGetNvLinkRemoteDeviceType(self, gpu: FakeGpu, link: int) -> int:
        return (gpu.nvlinks or [])[link][1]

    def _nvmlDeviceGetNvLinkRemotePciInfo(self, gpu: FakeGpu, link: int) -> Any:
        return SimpleNamespace(busId=(gpu.nvlinks or [])[link][0].encode())
