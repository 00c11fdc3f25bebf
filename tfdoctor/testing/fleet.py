"""Facts files of a made-up GPU fleet, in the shape `tfdoctor collect` writes, for compare tests and
benchmarks. Every node is the same except for what the caller changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tfdoctor.facts import SCHEMA_VERSION

CPU_FLAGS = ("fpu", "sse", "sse2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "amx_tile")
PACKAGES = {"tensorflow": "2.16.1", "numpy": "1.26.4", "keras": "3.3.3", "nvidia-cudnn-cu12": "8.9.7.29",
            "nvidia-cublas-cu12": "12.3.4.1", "protobuf": "4.25.3"}


def node_facts(hostname: str, driver: str = "550.54.15", gpus: int = 4, cpu_flags: tuple[str, ...] = CPU_FLAGS,
               env: dict[str, str] | None = None, packages: dict[str, str] | None = None,
               extra_libraries: dict[str, Any] | None = None) -> dict[str, Any]:
    devices = [{
        "index": i, "uuid": f"GPU-{hostname}-{i}", "name": "NVIDIA A100-SXM4-40GB",
        "pci_bus_id": f"00000000:{0x07 + 0x40 * i:02X}:00.0", "compute_capability": "8.0",
        "memory_total_mib": 40960, "memory_used_mib": 3 + i, "persistence_mode": True,
        "ecc": {"enabled": True, "uncorrected_volatile": 0, "uncorrected_aggregate": 0},
        "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False},
        "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failed": False},
        "pcie": {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16},
        "mig_mode": {"current": False, "pending": False}, "mig_devices": [], "processes": [],
    } for i in range(gpus)]
    cudnn_dir = "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib"
    cuda_libs = {"libraries": {
        "cudnn": {"resolved": {"libcudnn.so.8": {"path": f"{cudnn_dir}/libcudnn.so.8", "via": "RUNPATH"}},
                  "files": [{"name": "libcudnn.so.8", "dir": cudnn_dir, "file_version": "8",
                             "wheel_version": "8.9.7.29", "origin": "pip wheel", "broken": False, "target": None}]},
        **(extra_libraries or {}),
    }}
    # A well-configured job: the GPU launch threads and the mixed-precision policy are declared.
    variables = {"OMP_NUM_THREADS": "8", "SLURM_NODEID": hostname[-2:], "HOSTNAME": hostname,
                 "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "TF_GPU_THREAD_MODE": "gpu_private",
                 "TFDOCTOR_MIXED_PRECISION": "mixed_bfloat16", **(env or {})}
    distributions = {name: {"version": version, "location": "/opt/venv/lib/python3.11/site-packages"}
                     for name, version in {**PACKAGES, **(packages or {})}.items()}
    return {
        "schema_version": SCHEMA_VERSION,
        "meta": {"hostname": hostname, "tfdoctor_version": "0.1.0", "collected_at": "2026-01-01T00:00:00+00:00"},
        "sections": {
            "host": {"arch": "x86_64", "kernel": "5.14.0-362.el9.x86_64", "system": "Linux",
                     "nvidia_driver": f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}",
                     "os_release": {"id": "rhel", "version_id": "9.3", "pretty_name": "Red Hat Enterprise Linux 9.3"},
                     "container": {"detected": False, "signs": []}},
            "cpu": {"cpuinfo": {"vendor": "GenuineIntel", "model_name": "Intel(R) Xeon(R) Platinum 8480+",
                                "processors": 64, "flags": list(cpu_flags)},
                    "online": list(range(64)), "allowed_cpus": list(range(64)), "allowed_mems": [0, 1]},
            "cuda_libs": cuda_libs,
            "nvml": {"source": "nvml", "driver_version": driver, "cuda_driver_version": "12.4", "devices": devices},
            "numa": {"nodes": [{"node": n, "cpus": list(range(32 * n, 32 * n + 32)), "mem_total_kib": 263921532}
                               for n in range(2)],
                     "pci_gpus": [{"pci_bus_id": d["pci_bus_id"], "numa_node": d["index"] // 2} for d in devices]},
            "python": {"version": "3.11.7", "executable": "/opt/venv/bin/python3", "distributions": distributions},
            "env": {"variables": variables},
        },
    }


def write_fleet(folder: Path, count: int, odd: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """node01.json … nodeNN.json; `odd` maps a hostname to node_facts keyword changes."""
    folder.mkdir(parents=True, exist_ok=True)
    width = max(2, len(str(count)))
    paths = []
    for number in range(1, count + 1):
        hostname = f"node{number:0{width}d}"
        path = folder / f"{hostname}.json"
        path.write_text(json.dumps(node_facts(hostname, **(odd or {}).get(hostname, {})), indent=2))
        paths.append(path)
    return paths
