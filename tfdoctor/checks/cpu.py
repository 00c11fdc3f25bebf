"""CPU — the processor against the TensorFlow build: instruction sets, oneDNN, frequency governors; CPU1xx:
settings whose cost only a run can tell (oneDNN on one thread).

Sources: TensorFlow's install guide ("Starting with TensorFlow 1.6, binaries use AVX instructions
which may not run on older CPUs", repeated by the maintainers in tensorflow/tensorflow#17411, #29788,
#47146); the TensorFlow 2.9 and 2.15 release notes (oneDNN on by default on Linux x86, then Windows
x86; for 2.9 also tensorflow/tensorflow#56697).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tfdoctor.derive.tensorflow_distribution import TensorflowDistribution, installed_tensorflow
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check

# The first release whose x86-64 wheels are compiled with AVX.
AVX_WHEELS_SINCE = (1, 6)
# oneDNN optimizations became the default of the x86 wheels: Linux with 2.9, Windows with 2.15.
ONEDNN_DEFAULT_SINCE = {"linux": (2, 9), "win32": (2, 15)}
X86_ARCHES = ("x86_64", "amd64", "x64")
PERFORMANCE = "performance"


def _x86_wheel_tag(dist: TensorflowDistribution) -> str | None:
    """The wheel tag naming an x86-64 platform; None for other platforms."""
    return next((t for t in dist.wheel_tags if t.lower().endswith(("x86_64", "amd64"))), None)


def _release_wheel_tag(dist: TensorflowDistribution) -> str | None:
    """The x86-64 tag of a wheel as published on PyPI. Builds from source are tagged plain
    `linux_x86_64`, conda installs name conda as installer: their instruction-set baseline is whatever
    they were compiled for, which tfdoctor cannot know."""
    tag = _x86_wheel_tag(dist)
    if tag is None or dist.installer == "conda" or tag.split("-")[-1].lower() == "linux_x86_64":
        return None
    return tag


@check("CPU001", "cpu-lacks-wheel-instruction-set", Severity.ERROR)
def cpu_lacks_wheel_instruction_set(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds an x86-64 TensorFlow wheel of version 1.6 or later installed on a CPU whose /proc/cpuinfo
    flags lack `avx`. Only wheels as published on PyPI (manylinux, Windows, macOS tags) are judged: conda
    installs and wheels built from source (tagged plain linux_x86_64) have whatever baseline they were
    compiled for.

    Why is this bad?
    TensorFlow's release wheels have been compiled with AVX since 1.6 (TensorFlow's install guide;
    tensorflow/tensorflow#17411). On a CPU without it `import tensorflow` dies at once with "Illegal
    instruction (core dumped)" — no Python traceback, nothing that names the cause. Old Atom, Celeron
    and Pentium parts, and virtual machines whose CPU model hides AVX, are the usual cases. (TensorFlow
    2.4.0's wheels were also reported to need AVX2, tensorflow/tensorflow#45866; not checked here.)

    Example:
    tensorflow-cpu 2.21.0 (cp311-cp311-manylinux_2_27_x86_64) on an Intel Celeron J1900.

    Fix:
    Run on a CPU with AVX (for a virtual machine: expose the host CPU model, e.g. `-cpu host` in
    QEMU/KVM), or use a TensorFlow built without AVX (built from source, or a conda build).

    Fix safety:
    Manual: it needs other hardware, a VM setting or another build.
    """
    dist = installed_tensorflow(facts)
    if dist is None or dist.release[:2] < AVX_WHEELS_SINCE:
        return
    tag = _release_wheel_tag(dist)
    if tag is None:
        return
    from tfdoctor.derive.container import emulation

    if emulation(facts) is not None:
        return  # an x86 process emulated on arm64 cores: no CPU with AVX to pick there (CTR003)
    flags = facts.get("cpu.cpuinfo.flags")
    if not isinstance(flags, list):
        raise NotChecked(f"cpu.cpuinfo.flags holds a JSON {type(flags).__name__}, not a list")
    if "avx" in flags:
        return
    model = facts.peek("cpu.cpuinfo.model_name") or "this CPU"
    yield Finding(
        f"{dist.name} {dist.version} ({tag}) is compiled with AVX, which {model} lacks: "
        "import tensorflow will die with 'Illegal instruction'",
        evidence={"cpu.cpuinfo.flags": flags, "cpu.cpuinfo.model_name": facts.peek("cpu.cpuinfo.model_name"),
                  f"python.watched.{dist.name}.wheel_tags": list(dist.wheel_tags),
                  f"python.watched.{dist.name}.version": dist.version},
        fixes=(AdminFix("Run on a CPU with AVX, or install a TensorFlow built without AVX", (),
                        text="use a machine (or VM CPU model, e.g. QEMU/KVM `-cpu host`) that reports the avx flag, "
                             "or build TensorFlow from source for this CPU, or install a conda build of it"),),
    )


def _is_x86(facts: Facts, dist: TensorflowDistribution) -> bool:
    if dist.wheel_tags:
        return _x86_wheel_tag(dist) is not None
    machine = facts.peek("python.marker_environment.platform_machine") or facts.get("host.arch")
    return str(machine).lower() in X86_ARCHES


@check("CPU002", "onednn-optimizations-disabled", Severity.WARNING)
def onednn_optimizations_disabled(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_ENABLE_ONEDNN_OPTS set to 0 or false with an x86 TensorFlow whose default is oneDNN on
    (Linux from 2.9, Windows from 2.15).

    Why is this bad?
    oneDNN supplies TensorFlow's fast CPU kernels for convolutions, matrix multiplications and their
    fused forms, with AVX-512, VNNI, bfloat16 and AMX paths. Turned off, the same model runs on the
    generic Eigen kernels: measured on this project's 2-core test machine (issue 2),
    float32 convolutions ran 1.9× slower and bfloat16 ones 45× slower. The variable is usually set to
    silence TensorFlow's start-up notice about oneDNN and then forgotten.

    Example:
    export TF_ENABLE_ONEDNN_OPTS=0 in a job template.

    Fix:
    Unset TF_ENABLE_ONEDNN_OPTS.

    Fix safety:
    Unsafe: oneDNN orders floating-point operations differently, so results may differ in the last bits
    (TensorFlow prints this warning itself); tests that compare outputs bit for bit may need new references.
    """
    raw = facts.env("TF_ENABLE_ONEDNN_OPTS")
    if raw is None or raw.strip().lower() not in ("0", "false"):
        return
    dist = installed_tensorflow(facts)
    if dist is None or not _is_x86(facts, dist):
        return
    platform = str(facts.peek("python.platform") or "linux")
    since = ONEDNN_DEFAULT_SINCE.get(platform)
    if since is None or dist.release[:2] < since:
        return
    yield Finding(
        f"TF_ENABLE_ONEDNN_OPTS={raw} turns off oneDNN's CPU kernels in {dist.name} {dist.version}",
        evidence={"env.TF_ENABLE_ONEDNN_OPTS": raw, f"python.watched.{dist.name}.version": dist.version},
        fixes=(EnvFix("Unset TF_ENABLE_ONEDNN_OPTS", (unset_env("TF_ENABLE_ONEDNN_OPTS"),),
                      Applicability.UNSAFE),),
    )


@check("CPU003", "cpu-governor-not-performance", Severity.INFO)
def cpu_governor_not_performance(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the frequency governor of every online CPU (/sys/devices/system/cpu/cpu*/cpufreq/
    scaling_governor) and reports those not set to `performance`. Machines without cpufreq (most
    virtual machines and containers) are reported as not checked.

    Why is this bad?
    Governors such as powersave, ondemand or schedutil lower the clock when a core looks idle. A
    training step alternates short bursts of work with waits (input pipeline, collectives, GPU
    launches), so cores keep ramping up and down; latency-sensitive CPU work and benchmarks become slower
    and noisier.

    Example:
    A workstation left on the distribution's default `powersave` governor.

    Fix:
    `sudo cpupower frequency-set -g performance` (as root; on a shared cluster, ask the administrators).

    Fix safety:
    Manual: needs root, and raises the machine's power use.
    """
    governors = facts.get("cpu.governors")
    if not isinstance(governors, Mapping) or not all(isinstance(n, int) for n in governors.values()):
        raise NotChecked("cpu.governors is not a count per governor (a hand-edited facts file?)")
    others = {name: count for name, count in sorted(governors.items()) if name != PERFORMANCE}
    if not others:
        return
    total = sum(governors.values())
    listed = ", ".join(f"{count} on {name}" for name, count in others.items())
    yield Finding(
        f"{sum(others.values())} of {total} CPUs are not on the performance governor ({listed})",
        evidence={"cpu.governors": dict(governors)},
        fixes=(AdminFix("Set the performance frequency governor (root)",
                        ("sudo cpupower frequency-set -g performance",)),),
    )


def _onednn_on(facts: Facts) -> tuple[TensorflowDistribution, str] | None:
    """(the TensorFlow, why oneDNN is on) when its oneDNN kernels are on, else None."""
    raw = facts.env("TF_ENABLE_ONEDNN_OPTS")
    setting = raw.strip().lower() if raw is not None else None
    if setting in ("0", "false"):
        return None
    dist = installed_tensorflow(facts)
    if dist is None or not _is_x86(facts, dist):
        return None
    if setting in ("1", "true"):
        return dist, f"TF_ENABLE_ONEDNN_OPTS={raw}"
    since = ONEDNN_DEFAULT_SINCE.get(str(facts.peek("python.platform") or "linux"))
    if since is None or dist.release[:2] < since:
        return None
    return dist, f"the default of {dist.name} {dist.version}"


def _one_intra_op_thread(facts: Facts) -> tuple[str, object] | None:
    """(fact, value) when TensorFlow runs ops on one intra-op thread: set so, or one CPU to run on (TensorFlow
    sizes its pool from the affinity mask)."""
    raw = facts.env("TF_NUM_INTRAOP_THREADS")
    if raw is not None and raw.strip() == "1":
        return "env.TF_NUM_INTRAOP_THREADS", raw
    if raw is None or not raw.strip() or raw.strip() == "0":  # 0 or unset: TensorFlow picks
        allowed = facts.peek("cpu.allowed_cpus")
        if isinstance(allowed, list) and len(allowed) == 1:
            return "cpu.allowed_cpus", allowed
    return None


@check("CPU101", "onednn-with-one-thread", Severity.INFO)
def onednn_with_one_thread(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds oneDNN's CPU kernels on (the default of x86 TensorFlow since 2.9 on Linux, or
    TF_ENABLE_ONEDNN_OPTS=1) while TensorFlow runs ops on one intra-op thread
    (TF_NUM_INTRAOP_THREADS=1, or a process allowed on a single CPU).

    Why is this bad?
    It may not be. oneDNN pays per op for primitive creation and layout reorders, which its threads
    normally hide; on one thread, and with small ops (small batches, narrow layers), that overhead can
    cost more than the work and the generic Eigen kernels win. With large convolutions oneDNN still
    wins clearly. Only a run of the job can tell which case it is.

    Example:
    A hyper-parameter sweep on a laptop running eight single-threaded trials
    (TF_NUM_INTRAOP_THREADS=1 OMP_NUM_THREADS=1) of a small MLP.

    Fix:
    Measure: `tfdoctor profile --compare current.sh onednn-off.sh` (the second with
    TF_ENABLE_ONEDNN_OPTS=0), or `tfdoctor fix --validate --unsafe-fixes`, which keeps the fix only if
    it does not measurably slow the workload. If oneDNN is measured slower, set TF_ENABLE_ONEDNN_OPTS=0
    (and ignore CPU002 for this job).

    Fix safety:
    Unsafe: oneDNN and Eigen order floating-point operations differently (results differ in the last
    bits), and turning oneDNN off slows most workloads.
    """
    threads = _one_intra_op_thread(facts)
    if threads is None:
        return
    onednn = _onednn_on(facts)
    if onednn is None:
        return
    dist, why = onednn
    fact, value = threads
    where = "TF_NUM_INTRAOP_THREADS=1" if fact.startswith("env.") else "the process may run on one CPU only"
    yield Finding(
        f"oneDNN's CPU kernels are on ({why}) with one intra-op thread ({where}): with small ops its per-op "
        "set-up can cost more than the work, with large ones it still wins. To tell: `tfdoctor profile "
        "--compare` with and without TF_ENABLE_ONEDNN_OPTS=0, or `tfdoctor fix --validate --unsafe-fixes`. If "
        "oneDNN is measured slower: set TF_ENABLE_ONEDNN_OPTS=0",
        evidence={fact: value, "env.TF_ENABLE_ONEDNN_OPTS": facts.env("TF_ENABLE_ONEDNN_OPTS") or "unset",
                  f"python.watched.{dist.name}.version": dist.version},
        fixes=(EnvFix("If oneDNN is measured slower: turn it off", (set_env("TF_ENABLE_ONEDNN_OPTS", "0"),),
                      Applicability.UNSAFE),),
    )
