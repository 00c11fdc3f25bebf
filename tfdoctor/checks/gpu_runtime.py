"""GPU101–GPU199 — TensorFlow's GPU runtime variables: thread mode, memory allocation, logging,
determinism."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.gpu_inventory import all_gpus, visible_gpus
from tfdoctor.derive.gpu_sharing import gpu_sharing
from tfdoctor.facts import Facts
from tfdoctor.facts.parse import count as whole_number
from tfdoctor.model import Applicability, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check

THREAD_MODES = ("global", "gpu_private", "gpu_shared")
ALLOCATORS = ("cuda_malloc_async", "cuda_malloc", "bfc")
RECOMMENDED_GPU_THREADS = "2"


def _private_threads_fix() -> EnvFix:
    return EnvFix("Give each GPU its own launch threads",
                  (set_env("TF_GPU_THREAD_MODE", "gpu_private"),
                   set_env("TF_GPU_THREAD_COUNT", RECOMMENDED_GPU_THREADS)))


@check("GPU101", "gpu-thread-mode-shared-when-busy", Severity.INFO)
def gpu_thread_mode_shared_when_busy(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_GPU_THREAD_MODE unset (or "global") on a multi-GPU job, or on any GPU job the
    micro-profile found input-bound (`profile.input_bound`).

    Why is this bad?
    By default GPU kernels are launched from TensorFlow's shared inter-op pool, where they queue
    behind input-pipeline and host work; the GPU idles between kernels. The GPU performance guide
    recommends gpu_private: dedicated launch threads per GPU.

    Example:
    Four GPUs under MirroredStrategy, TF_GPU_THREAD_MODE unset.

    Fix:
    TF_GPU_THREAD_MODE=gpu_private with TF_GPU_THREAD_COUNT=2.

    Fix safety:
    Safe: changes which threads launch kernels, not what they compute.
    """
    mode = facts.env("TF_GPU_THREAD_MODE")
    if mode is not None and mode.strip() not in ("", "global"):
        return
    gpus = visible_gpus(facts)
    input_bound = facts.peek("profile.input_bound") is True
    if len(gpus) < 2 and not (gpus and input_bound):
        return
    why = f"{len(gpus)} GPUs" if len(gpus) >= 2 else "an input-bound job (micro-profile)"
    yield Finding(
        f"TF_GPU_THREAD_MODE is {mode or 'unset'} with {why}: kernel launches queue behind host work",
        evidence={"env.TF_GPU_THREAD_MODE": mode, "gpus.visible": len(gpus),
                  **({"profile.input_bound": True} if input_bound else {})},
        fixes=(_private_threads_fix(),),
    )


@check("GPU102", "gpu-thread-settings-invalid", Severity.WARNING)
def gpu_thread_settings_invalid(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks TF_GPU_THREAD_MODE is global, gpu_private or gpu_shared, TF_GPU_THREAD_COUNT a positive
    whole number, and that a count is only set with a mode that uses it.

    Why is this bad?
    TensorFlow falls back to the shared global pool for a mode it does not know, and ignores
    TF_GPU_THREAD_COUNT unless the mode is gpu_private or gpu_shared: the tuning is not in force.

    Example:
    TF_GPU_THREAD_MODE=private, or TF_GPU_THREAD_COUNT=2 without TF_GPU_THREAD_MODE.

    Fix:
    TF_GPU_THREAD_MODE=gpu_private, TF_GPU_THREAD_COUNT=2.

    Fix safety:
    Safe: thread placement only.
    """
    mode, count = facts.env("TF_GPU_THREAD_MODE"), facts.env("TF_GPU_THREAD_COUNT")
    evidence = {"env.TF_GPU_THREAD_MODE": mode, "env.TF_GPU_THREAD_COUNT": count}
    if mode is not None and mode.strip() not in THREAD_MODES:
        yield Finding(f"TF_GPU_THREAD_MODE={mode!r} is not one of {', '.join(THREAD_MODES)}; TensorFlow uses the "
                      "global pool", evidence=evidence, fixes=(_private_threads_fix(),))
        return
    if count is not None and not whole_number(count):
        yield Finding(f"TF_GPU_THREAD_COUNT={count!r} is not a positive whole number", evidence=evidence,
                      fixes=(EnvFix(f"Set TF_GPU_THREAD_COUNT={RECOMMENDED_GPU_THREADS}",
                                    (set_env("TF_GPU_THREAD_COUNT", RECOMMENDED_GPU_THREADS),)),))
    elif count is not None and (mode is None or mode.strip() == "global"):
        yield Finding(f"TF_GPU_THREAD_COUNT={count} is ignored: TF_GPU_THREAD_MODE is {mode or 'unset'}",
                      evidence=evidence,
                      fixes=(EnvFix("Set TF_GPU_THREAD_MODE=gpu_private",
                                    (set_env("TF_GPU_THREAD_MODE", "gpu_private"),)),))


def _growth_on(facts: Facts) -> bool:
    return facts.env("TF_FORCE_GPU_ALLOW_GROWTH") == "true"


@check("GPU103", "shared-gpu-without-memory-growth", Severity.WARNING)
def shared_gpu_without_memory_growth(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds several processes sharing a GPU — more processes on the node (LOCAL_WORLD_SIZE,
    OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_NTASKS_PER_NODE) than the GPUs they are given, or other compute
    processes on a visible GPU — with neither TF_FORCE_GPU_ALLOW_GROWTH=true nor TF_GPU_ALLOCATOR=cuda_malloc_async.
    The GPUs given are the launcher's (SLURM_GPUS_PER_TASK: each task its own; SLURM_JOB_GPUS or
    SLURM_GPUS_ON_NODE), else the host's counted on the PCI bus, which a device cgroup (Slurm's
    ConstrainDevices, a container) does not hide as it hides them from NVML.

    Why is this bad?
    TensorFlow's default allocator reserves almost all GPU memory at start-up: the first process
    takes it and the others fail with out-of-memory or fall back to slow paths.

    Example:
    SLURM_NTASKS_PER_NODE=8 on a node with 4 GPUs, no memory setting.

    Fix:
    TF_FORCE_GPU_ALLOW_GROWTH=true (grow on demand), or TF_GPU_ALLOCATOR=cuda_malloc_async (CUDA's
    pool allocator, which also returns memory).

    Fix safety:
    Safe: memory is allocated as needed instead of up front. The automatic fix sets growth; the
    asynchronous allocator (needs CUDA 11.2+) is the alternative to choose by hand.
    """
    if _growth_on(facts) or facts.env("TF_GPU_ALLOCATOR") == "cuda_malloc_async":
        return
    sharing = gpu_sharing(facts, visible_gpus(facts), all_gpus(facts))
    if sharing is None:
        return
    yield Finding(
        "several processes share a GPU but each will reserve nearly all of its memory at start-up",
        evidence={**sharing, "env.TF_FORCE_GPU_ALLOW_GROWTH": facts.env("TF_FORCE_GPU_ALLOW_GROWTH"),
                  "env.TF_GPU_ALLOCATOR": facts.env("TF_GPU_ALLOCATOR")},
        # One fix, not two alternatives: `tfdoctor fix --unsafe-fixes` would otherwise apply both.
        fixes=(EnvFix("Let TensorFlow grow GPU memory on demand", (set_env("TF_FORCE_GPU_ALLOW_GROWTH", "true"),)),),
    )


@check("GPU104", "gpu-memory-settings-invalid", Severity.WARNING)
def gpu_memory_settings_invalid(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks TF_FORCE_GPU_ALLOW_GROWTH is exactly "true" or "false" and TF_GPU_ALLOCATOR names an
    allocator; flags TF_GPU_ALLOCATOR=cuda_malloc, a debugging allocator.

    Why is this bad?
    TensorFlow compares TF_FORCE_GPU_ALLOW_GROWTH with "true"/"false" literally and ignores anything
    else ("1", "True") with a logged error; an unknown allocator name falls back to BFC. cuda_malloc
    calls cudaMalloc/cudaFree for every tensor and is many times slower.

    Example:
    TF_FORCE_GPU_ALLOW_GROWTH=1, TF_GPU_ALLOCATOR=async, TF_GPU_ALLOCATOR=cuda_malloc.

    Fix:
    TF_FORCE_GPU_ALLOW_GROWTH=true; TF_GPU_ALLOCATOR=cuda_malloc_async or unset.

    Fix safety:
    Safe: memory allocation only.
    """
    growth, allocator = facts.env("TF_FORCE_GPU_ALLOW_GROWTH"), facts.env("TF_GPU_ALLOCATOR")
    if growth is not None and growth not in ("true", "false"):
        value = "true" if growth.strip().lower() in ("1", "true", "yes", "on") else "false"
        yield Finding(f"TF_FORCE_GPU_ALLOW_GROWTH={growth!r} is ignored: TensorFlow accepts only \"true\" or \"false\"",
                      evidence={"env.TF_FORCE_GPU_ALLOW_GROWTH": growth},
                      fixes=(EnvFix(f"Set TF_FORCE_GPU_ALLOW_GROWTH={value}",
                                    (set_env("TF_FORCE_GPU_ALLOW_GROWTH", value),)),))
    if allocator is not None and allocator not in ALLOCATORS:
        yield Finding(f"TF_GPU_ALLOCATOR={allocator!r} is not an allocator TensorFlow knows; it uses BFC",
                      evidence={"env.TF_GPU_ALLOCATOR": allocator},
                      fixes=(EnvFix("Set TF_GPU_ALLOCATOR=cuda_malloc_async",
                                    (set_env("TF_GPU_ALLOCATOR", "cuda_malloc_async"),)),))
    elif allocator == "cuda_malloc":
        yield Finding("TF_GPU_ALLOCATOR=cuda_malloc is a debugging allocator: every tensor costs a cudaMalloc",
                      evidence={"env.TF_GPU_ALLOCATOR": allocator},
                      fixes=(EnvFix("Unset TF_GPU_ALLOCATOR", (unset_env("TF_GPU_ALLOCATOR"),)),))


@check("GPU105", "log-level-hides-warnings", Severity.INFO)
def log_level_hides_warnings(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_CPP_MIN_LOG_LEVEL at 2 or 3.

    Why is this bad?
    Level 2 hides TensorFlow's C++ warnings — exactly the messages that explain a slow job: a GPU
    library that failed to load, a kernel falling back to a slow path, an XLA recompilation, a
    lost GPU. Level 3 hides errors too.

    Example:
    TF_CPP_MIN_LOG_LEVEL=3 in a job template, copied to silence start-up noise.

    Fix:
    TF_CPP_MIN_LOG_LEVEL=1 hides the informational noise and keeps warnings.

    Fix safety:
    Safe: logging only.
    """
    raw = facts.env("TF_CPP_MIN_LOG_LEVEL")
    level = whole_number(raw) if raw is not None else None
    if raw is None or level is None or level < 2:
        return
    hidden = "warnings and errors" if level >= 3 else "warnings"
    yield Finding(f"TF_CPP_MIN_LOG_LEVEL={raw.strip()} hides TensorFlow's {hidden}, which explain slow jobs",
                  evidence={"env.TF_CPP_MIN_LOG_LEVEL": raw},
                  fixes=(EnvFix("Set TF_CPP_MIN_LOG_LEVEL=1", (set_env("TF_CPP_MIN_LOG_LEVEL", "1"),)),))


@check("GPU106", "deterministic-ops-enabled", Severity.INFO)
def deterministic_ops_enabled(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_DETERMINISTIC_OPS or TF_CUDNN_DETERMINISTIC turned on.

    Why is this bad?
    Determinism restricts cuDNN to deterministic algorithms (no autotuned fastest choice) and forces
    deterministic, slower implementations of scatter/segment reductions and bias-add gradients;
    some ops raise instead. Right for a reproducibility run, costly when left on by accident.

    Example:
    TF_DETERMINISTIC_OPS=1 exported in a shared .bashrc.

    Fix:
    Unset both variables outside reproducibility runs.

    Fix safety:
    Unsafe: results stop being bit-for-bit reproducible.
    """
    on = {name: value for name in ("TF_DETERMINISTIC_OPS", "TF_CUDNN_DETERMINISTIC")
          if (value := facts.env(name)) is not None and value.strip().lower() in ("1", "true")}
    if not on:
        return
    yield Finding(f"{', '.join(f'{k}={v}' for k, v in on.items())}: deterministic kernels are slower",
                  evidence={f"env.{k}": v for k, v in on.items()},
                  fixes=(EnvFix("Turn determinism off", tuple(unset_env(k) for k in on), Applicability.UNSAFE),))
