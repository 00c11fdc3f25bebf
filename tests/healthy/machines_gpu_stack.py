"""The GPU-stack twins (issue 11): the healthy machines of tests/support/gpu_scenarios.py, replayed from their
recorded facts (tests/snapshots/gpu/healthy-*.json, rewritten by `python tests/support/gpu_scenarios.py`)."""

from __future__ import annotations

from .corpus import HealthyMachine, register

SNAPSHOTS = "tests/snapshots/gpu"

register(
    HealthyMachine("gpu-stack-container-with-sys-admin", ("CUPTI", "CUDA", "DRV"),
                   "root in a Docker container started with --cap-add SYS_ADMIN (CapEff 00000000a82425fb), "
                   "profiling restricted by the driver, a profiler installed",
                   facts=f"{SNAPSHOTS}/healthy-container-with-sys-admin.json"),
    HealthyMachine("gpu-stack-privileged-container-old-kernel", ("CUPTI", "CUDA", "DRV"),
                   "a --privileged container on a kernel before CAP_PERFMON (CapEff 0000003fffffffff)",
                   facts=f"{SNAPSHOTS}/healthy-privileged-container.json"),
    HealthyMachine("gpu-stack-driver-without-nvml", ("DRV", "CUDA"),
                   "driver 550 loaded, the GPU only on the PCI bus, NVML not answering: the driver is judged "
                   "from /proc and passes", facts=f"{SNAPSHOTS}/healthy-driver-without-nvml.json"),
    HealthyMachine("gpu-stack-wsl2-pip", ("DRV", "CUDA", "CUPTI"),
                   "WSL2 (/dev/dxg, /usr/lib/wsl/lib) with a current Windows driver and tensorflow[and-cuda] 2.15",
                   facts=f"{SNAPSHOTS}/healthy-wsl2.json"),
    HealthyMachine("gpu-stack-one-gpu-without-nccl", ("CUDA",),
                   "one GPU, one worker, tensorflow[and-cuda] 2.15 without the NCCL wheel",
                   facts=f"{SNAPSHOTS}/healthy-one-gpu-without-nccl.json"),
    HealthyMachine("gpu-stack-static-nccl-two-gpus", ("CUDA",),
                   "two V100s, TensorFlow 2.13 (NCCL linked in) over a CUDA 11.8 toolkit, no libnccl.so.2",
                   facts=f"{SNAPSHOTS}/healthy-static-nccl-two-gpus.json"),
    HealthyMachine("gpu-stack-cupti-of-the-builds-cuda", ("CUPTI", "CUDA"),
                   "/usr/local/cuda -> 11.8 beside CUDA 12.2's toolkit, whose CUPTI folder is on LD_LIBRARY_PATH "
                   "for tensorflow 2.15", facts=f"{SNAPSHOTS}/healthy-cupti-of-the-builds-cuda.json"),
    HealthyMachine("gpu-stack-tf216-wheels-on-ld-library-path", ("CUDA", "CUPTI"),
                   "tensorflow[and-cuda] 2.16.1 with every site-packages/nvidia/*/lib on LD_LIBRARY_PATH",
                   facts=f"{SNAPSHOTS}/healthy-tf216-wheels-on-ld-library-path.json"),
    HealthyMachine("gpu-stack-conda-activate-d", ("CUDA", "CUPTI", "XLA"),
                   "conda cudatoolkit 11.8 with tensorflow 2.12, LD_LIBRARY_PATH from etc/conda/activate.d",
                   facts=f"{SNAPSHOTS}/healthy-conda-activate-d.json"),
)
