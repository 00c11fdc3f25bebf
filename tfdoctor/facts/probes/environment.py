"""The environment variables that matter to TensorFlow performance — and only those.

An allowlist, not a prefix grab: `TF_CLI_CONFIG_FILE` belongs to Terraform, and most of a user's
environment is none of tfdoctor's business (and may hold secrets).
"""

from __future__ import annotations

from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe

# TensorFlow, Keras, XLA and the math libraries' own variables.
TENSORFLOW_VARIABLES = frozenset({
    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_ENABLE_ONEDNN_OPTS", "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS",
    "TF_ONEDNN_USE_SYSTEM_ALLOCATOR", "TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MAX_VLOG_LEVEL", "TF_CPP_VMODULE",
    "TF_USE_LEGACY_KERAS", "TF_XLA_FLAGS", "XLA_FLAGS", "TF_GPU_THREAD_MODE", "TF_GPU_THREAD_COUNT",
    "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR", "TF_CUDNN_DETERMINISTIC", "TF_DETERMINISTIC_OPS",
    "TF_CUDNN_USE_AUTOTUNE", "TF_CUDNN_USE_FRONTEND", "TF_ENABLE_AUTO_MIXED_PRECISION",
    "TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE", "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL",
    "TF_CONFIG", "TF_FORCE_UNIFIED_MEMORY", "TF_GPU_HOST_MEM_LIMIT_IN_MB", "TF_CUDA_PATHS",
    "TF_GPU_ALLOCATOR_MAX_ALLOC_FRACTION", "TF_ENABLE_GPU_GARBAGE_COLLECTION", "TF_XLA_ENABLE_XLA_DEVICES",
    "TF2_BEHAVIOR", "KERAS_HOME", "KERAS_BACKEND", "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
    "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_ENABLE_INSTRUCTIONS", "OPENBLAS_NUM_THREADS",
    "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "ONEDNN_VERBOSE", "DNNL_VERBOSE",
    "GOMP_CPU_AFFINITY", "GOMP_SPINCOUNT",
    # read by TensorFlow's CUPTI tracer only: set by a job that profiles (issue 35)
    "TF_GPU_CUPTI_FORCE_CONCURRENT_KERNEL", "TF_GPU_CUPTI_USE_ACTIVITY_API",
})

# CUDA, the loader, Python and the process's place in a job.
PLATFORM_VARIABLES = frozenset({
    "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_PATH", "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE", "CUDA_CACHE_DISABLE", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
    "CUDA_LAUNCH_BLOCKING", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX",
    "HOME", "USER", "HOSTNAME", "LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "PMI_RANK",
    "PMI_SIZE", "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "KUBERNETES_SERVICE_HOST", "container", "NCPUS",
    "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PALS_LOCAL_RANKID", "PALS_LOCAL_SIZE", "HOROVOD_LOCAL_RANK",
    "HOROVOD_LOCAL_SIZE",
    "MALLOC_ARENA_MAX", "TCMALLOC_RELEASE_RATE",
    # what gRPC channels between workers go through, and the rendezvous hosts they reach (issue 35); a
    # proxy URL's password is redacted like any other (tfdoctor/facts/redact.py)
    "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "grpc_proxy", "no_proxy", "NO_PROXY",
    "no_grpc_proxy", "MASTER_ADDR", "MASTER_PORT",
})

# tfdoctor's own: what the user tells it about the job (docs/framework.md).
TFDOCTOR_VARIABLES = frozenset({"TFDOCTOR_PARAMS", "TFDOCTOR_MIXED_PRECISION", "TFDOCTOR_PROCESSES_PER_NODE"})

# Whole families whose every member concerns threads, affinity, communication or the scheduler.
PREFIXES = ("OMP_", "KMP_", "SLURM_", "SBATCH_", "PBS_", "LSB_", "NCCL_", "OMPI_COMM_WORLD_", "MV2_COMM_WORLD_")

# Scheduler variables that describe the user's session rather than the job: noise in a facts file.
EXCLUDED = frozenset({"SLURM_JOB_USER", "SLURM_JOB_ACCOUNT", "PBS_O_MAIL", "LSB_MAILTO"})


def is_relevant(name: str) -> bool:
    if name in EXCLUDED:
        return False
    return (name in TENSORFLOW_VARIABLES or name in PLATFORM_VARIABLES or name in TFDOCTOR_VARIABLES
            or name.startswith(PREFIXES))


@probe("env")
def probe_environment(machine: Machine) -> dict[str, object]:
    variables = {k: v for k, v in machine.environ.items() if is_relevant(k)}
    return {"variables": dict(sorted(variables.items()))}
