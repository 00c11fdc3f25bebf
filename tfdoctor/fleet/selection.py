"""Which facts `tfdoctor compare` looks at: a table of dotted patterns, one row per fact family.

A pattern is a dotted path into the facts sections; each part is an fnmatch pattern matched against
mapping keys (and, for lists, against the element's index), so `nvml.devices.*.name` names every GPU's
name. A pattern that reaches a mapping takes every leaf below it. Parts that are absent on a node simply
produce nothing there: a section another tfdoctor version (or another probe set) does not write is not
an error, it only shows up as "(absent)" next to the nodes that have it.

How a matched value becomes comparable is the rule's `mode`:
  value  the value itself (lists compared whole)
  count  the number of elements (GPUs, NUMA nodes, online CPUs)
  set    one fact per element, `path[element]` = present: a CPU flag missing on one node is named as such,
         instead of a 100-flag list that differs somewhere
  by:F   a list of records keyed by their field F, `path[<F>].leaf` (library files keyed by file name),
         so a copy that exists on one node only is named, not the position it shifts

Facts that differ between healthy nodes by nature (ranks, hostnames, UUIDs, serials, temperatures,
memory in use) are deliberately not listed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FactRule:
    """Which facts a fleet comparison looks at (a path pattern), how it compares them and under which topic."""

    pattern: str
    mode: str = "value"  # value | count | set | by:FIELD
    topic: str = ""


# Section shapes: "nvml" as in tfdoctor/derive/gpu_inventory.py and its probe; "cuda_libs" as in docs/facts-gpu.md
# ({"libraries": {key: {"resolved": {soname: {"path", "via"}}, "files": [{"name", "file_version", ...}]}}});
# "numa" {"nodes": [{"node", "cpus", ...}],
# "pci_gpus": [{"numa_node", ...}]}; "cpu", "host", "python", "env" as their probes write them.
FACT_RULES: tuple[FactRule, ...] = (
    # NVIDIA driver and GPUs
    FactRule("host.nvidia_driver", topic="gpu"),
    FactRule("nvml.source", topic="gpu"),
    FactRule("nvml.driver_version", topic="gpu"),
    FactRule("nvml.cuda_driver_version", topic="gpu"),
    FactRule("nvml.devices", "count", topic="gpu"),
    *(FactRule(f"nvml.devices.*.{field}", topic="gpu") for field in (
        "name", "compute_capability", "memory_total_mib", "pci_bus_id", "error", "persistence_mode", "ecc",
        "retired_pages", "remapped_rows", "clock_event_reasons", "pcie", "mig_mode",
    )),
    FactRule("nvml.devices.*.mig_devices", "count", topic="gpu"),
    FactRule("gpu_pci.devices", "count", topic="gpu"),
    FactRule("gpu_pci.devices.*.driver_bound", topic="gpu"),
    # CUDA libraries: what the loader resolves each soname to, and every copy on disk with its version
    FactRule("cuda_libs.libraries.*.resolved", topic="cuda"),
    FactRule("cuda_libs.libraries.*.files", "by:name", topic="cuda"),
    FactRule("cuda_libs.ld_library_path", topic="cuda"),
    FactRule("cuda_libs.ld_library_path_dirs", "by:dir", topic="cuda"),
    FactRule("python.tensorflow.build_info", topic="cuda"),
    # NUMA layout
    FactRule("numa.nodes", "count", topic="numa"),
    FactRule("numa.nodes.*.cpus", topic="numa"),
    FactRule("numa.pci_gpus.*.numa_node", topic="numa"),
    FactRule("numa.membind.permitted", topic="numa"),
    # CPU and host
    FactRule("cpu.cpuinfo.vendor", topic="cpu"),
    FactRule("cpu.cpuinfo.model_name", topic="cpu"),
    FactRule("cpu.cpuinfo.processors", topic="cpu"),
    FactRule("cpu.cpuinfo.flags", "set", topic="cpu"),
    FactRule("cpu.online", "count", topic="cpu"),
    FactRule("cpu.allowed_cpus", "count", topic="cpu"),
    FactRule("cgroup.version", topic="cpu"),
    FactRule("host.arch", topic="host"),
    FactRule("host.kernel", topic="host"),
    FactRule("host.os_release.pretty_name", topic="host"),
    FactRule("host.container.detected", topic="host"),
    # Python, TensorFlow and packages
    FactRule("python.version", topic="python"),
    FactRule("python.executable", topic="python"),
    FactRule("python.distributions.*.version", topic="python"),
    # Environment variables that change how TensorFlow runs (not ranks, hosts or users)
    *(FactRule(f"env.variables.{name}", topic="env") for name in (
        "OMP_*", "KMP_*", "MKL_*", "OPENBLAS_*", "GOMP_*", "TF_*", "XLA_FLAGS", "DNNL_*", "ONEDNN_*",
        "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDNN_PATH", "CUDA_MODULE_LOADING", "NCCL_*",
        "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "MALLOC_*",
        "KERAS_BACKEND", "NVIDIA_VISIBLE_DEVICES",
    )),
)
