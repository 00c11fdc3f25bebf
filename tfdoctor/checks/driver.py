"""DRV — the NVIDIA driver against the GPUs and the TensorFlow build: loaded at all, new enough for the
build's CUDA, and GPU architectures the build has kernels for."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.container import driver_library_fix, runtime
from tfdoctor.derive.gpu_inventory import all_gpus, driver_version, wsl2
from tfdoctor.derive.tf_build import (
    TfBuild,
    arch_support,
    architecture_targets,
    cuda_gpu_setup,
    tensorflow_build,
    version_tuple,
)
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import AdminFix, EnvFix, Finding, Severity, set_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

    from tfdoctor.derive.cuda_releases import ArchitectureGap

# The release tables (tfdoctor.derive.cuda_releases) are read past each check's `cuda_gpu_setup` gate: a
# CPU-only TensorFlow never loads them.


@check("DRV001", "nvidia-driver-not-loaded", Severity.ERROR)
def nvidia_driver_not_loaded(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds NVIDIA GPUs on the PCI bus (/sys/bus/pci/devices, vendor 0x10de, display or 3D class)
    while no NVIDIA driver is loaded (no /proc/driver/nvidia/version).

    Why is this bad?
    Without the driver CUDA sees no device: TensorFlow runs on the CPU. A container sees the host's
    kernel, so there the driver is missing on the host itself (or the container runs in a VM without
    the GPU, as Docker Desktop's).

    Example:
    A kernel update that left the DKMS module unbuilt, seen on the host or in any container on it.

    Fix:
    Install (or rebuild) the NVIDIA driver on the host and load it; in a container, then start it with
    its runtime's GPU flag: `docker run --gpus all` (NVIDIA Container Toolkit), `podman run --device
    nvidia.com/gpu=all`, `apptainer exec --nv`, or a Kubernetes `nvidia.com/gpu` limit.

    Fix safety:
    Manual: needs root or the container's launcher.
    """
    pci = facts.get("gpu_pci.devices")
    if not pci or facts.get("host.nvidia_driver") is not None:
        return
    if not isinstance(pci, list) or not all(isinstance(d, dict) and isinstance(d.get("address"), str) for d in pci):
        raise NotChecked(f"gpu_pci.devices holds {str(pci)[:40]!r}, not a list of PCI device records")
    build = tensorflow_build(facts)
    uses_gpu = build is not None and build.is_cuda_build
    in_container = runtime(facts) is not None
    fixes = [AdminFix("Load the NVIDIA driver", ("sudo modprobe nvidia", "nvidia-smi   # should now list the GPUs"),
                      text="first install the driver (e.g. apt install nvidia-driver-550, or NVIDIA's runfile), or "
                           "rebuild it for this kernel (dkms autoinstall)")]
    if in_container:
        # The container sees the host's kernel: no /proc/driver/nvidia here means none on the host either, so
        # the runtime's flag comes after loading the driver there.
        commands, about = driver_library_fix(facts)
        fixes = [AdminFix("Load the NVIDIA driver on the host, then give the container the GPU",
                          (*fixes[0].steps, *commands), text=f"{fixes[0].text}; then {about}")]
    yield Finding(
        f"{len(pci)} NVIDIA GPU(s) on the PCI bus ({', '.join(d['address'] for d in pci)}) but no NVIDIA driver "
        f"is loaded{' in this container' if in_container else ''}: CUDA sees no GPU",
        evidence={"gpu_pci.devices": [d["address"] for d in pci], "host.nvidia_driver": None},
        fixes=tuple(fixes),
        severity=Severity.ERROR if uses_gpu else Severity.WARNING)


@check("DRV002", "driver-cuda-older-than-build", Severity.ERROR)
def driver_cuda_older_than_build(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the driver with the CUDA version TensorFlow was built with: the CUDA version NVML says
    the driver supports (nvmlSystemGetCudaDriverVersion) or, when NVML cannot answer, the driver
    version from /proc/driver/nvidia/version against tfdoctor/knowledge/cuda_drivers.toml (the oldest
    driver of each CUDA release, Linux and Windows, and the floor of each major's minor-version
    compatibility; the finding's evidence carries the row used). Under WSL2 the driver is the Windows
    one: the Windows column applies.

    Why is this bad?
    A driver of an older CUDA major cannot run the build at all ("CUDA driver version is
    insufficient for CUDA runtime version"): TensorFlow falls back to the CPU. Within the same major
    CUDA's minor-version compatibility runs the precompiled kernels, but PTX the newer toolkit
    produced (XLA's, or PTX JIT for a new GPU) fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION.

    Example:
    Driver 470 (CUDA 11.4) with TensorFlow 2.15 (CUDA 12.2), whether NVML answers or not.

    Fix:
    Upgrade the driver (CUDA 12 needs ≥ 525.60.13, CUDA 12.2's own driver is 535.54.03). On
    data-center GPUs the cuda-compat-<major>-<minor> package provides a newer user-space driver
    without touching the kernel module.

    Fix safety:
    Manual: needs root and usually a reboot.
    """
    build = cuda_gpu_setup(facts)
    if build is None or not build.cuda_version:
        return
    from tfdoctor.derive.cuda_releases import driver_at_least, driver_cuda_ceiling, driver_need

    system = "Windows" if facts.peek("host.system") == "Windows" or wsl2(facts) else "Linux"
    need_row = driver_need(build.cuda_version, system)
    driver, driver_source = driver_version(facts)
    driver_cuda = facts.peek("nvml.cuda_driver_version")
    need = (*version_tuple(build.cuda_version), 0, 0)[:2]  # a one-component version ("12") is major.0
    if isinstance(driver_cuda, str) and version_tuple(driver_cuda):
        have = (*version_tuple(driver_cuda), 0)[:2]
        if have >= need:
            return
        same_major, observed = have[0] == need[0], f"supports CUDA {driver_cuda}"
    elif driver is not None and need_row is not None:
        if driver_at_least(driver, need_row.toolkit_driver):
            return
        same_major = driver_at_least(driver, need_row.compat_floor) and need[0] >= 11
        ceiling = driver_cuda_ceiling(driver, system)
        observed = f"from {driver_source}; its newest CUDA is {ceiling}" if ceiling else f"from {driver_source}"
        driver_cuda = ceiling
    else:
        why = driver_source if driver is None else f"the cuda_drivers table has no CUDA {build.cuda_version}"
        raise NotChecked(f"driver version unknown ({why})")
    names = sorted({g.name for g in _known_gpus(facts)})
    datacenter = any(k in n for n in names for k in ("Tesla", "A100", "H100", "H200", "A10", "A30", "A40",
                                                    "L4", "L40", "V100", "T4", "B200", "GH200"))
    minimum = need_row.toolkit_driver if need_row else None
    floor = need_row.compat_floor if need_row else None
    prose = [f"Install a driver for CUDA {build.cuda_version} or newer"
             + (f" (≥ {minimum} on {system}" + (f"; ≥ {floor} runs CUDA {need[0]}.x precompiled kernels"
                                               if floor and floor != minimum else "") + ")" if minimum else "")]
    steps: list[str] = []
    if datacenter and system == "Linux":
        prose.append(f"or, keeping the kernel module (data-center GPUs only): install cuda-compat-{need[0]}-{need[1]} "
                     f"and put /usr/local/cuda-{need[0]}.{need[1]}/compat on LD_LIBRARY_PATH")
        steps = [f"sudo apt install cuda-compat-{need[0]}-{need[1]}   # the compat route",
                 f"export LD_LIBRARY_PATH=/usr/local/cuda-{need[0]}.{need[1]}/compat"
                 "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"]
    if wsl2(facts):
        prose = [f"Update the NVIDIA driver on Windows (WSL2 uses it; ≥ {minimum})" if minimum else
                 "Update the NVIDIA driver on Windows (WSL2 uses it)"]
        steps = []
    evidence = {"nvml.cuda_driver_version": driver_cuda, "nvml.driver_version": driver, "driver_source": driver_source,
                "tensorflow.cuda_version": build.cuda_version, "cuda_compat_possible": datacenter}
    if need_row is not None:
        evidence.update(minimum_driver=need_row.toolkit_driver, compat_floor=need_row.compat_floor, system=system)
        if need_row.row is not None:
            evidence["knowledge"] = need_row.row.evidence()
    yield Finding(
        f"the driver ({driver or 'version unknown'}, {observed}) is older than the CUDA {build.cuda_version} "
        "TensorFlow "
        + ("was built with: precompiled kernels run, PTX from the newer toolkit (XLA, JIT) will not" if same_major
           else "was built with: TensorFlow cannot use the GPU"),
        evidence=evidence,
        fixes=(AdminFix("Upgrade the NVIDIA driver", tuple(steps), text="; ".join(prose)),),
        severity=Severity.WARNING if same_major else Severity.ERROR)


def _driver_can_jit(facts: Facts, build: TfBuild) -> tuple[bool | None, str]:
    """Whether the driver can compile PTX of the build's CUDA: it must support that CUDA version
    itself (minor-version compatibility covers precompiled kernels, not newer PTX)."""
    need = version_tuple(build.cuda_version)[:2]
    driver_cuda = facts.peek("nvml.cuda_driver_version")
    if isinstance(driver_cuda, str) and version_tuple(driver_cuda):
        ok = version_tuple(driver_cuda)[:2] >= need
        return ok, f"the driver supports CUDA {driver_cuda}"
    from tfdoctor.derive.cuda_releases import driver_at_least, driver_need

    driver, source = driver_version(facts)
    need_row = driver_need(build.cuda_version, "Windows" if wsl2(facts) else "Linux")
    if driver is None or need_row is None or need_row.toolkit_driver is None:
        return None, "driver's CUDA version unknown"
    ok = driver_at_least(driver, need_row.toolkit_driver)
    return ok, f"driver {driver} from {source}; CUDA {need_row.cuda} needs ≥ {need_row.toolkit_driver}"


def _known_gpus(facts: Facts) -> list:
    try:
        return all_gpus(facts)
    except NotChecked:
        return []  # the driver can be judged without knowing the GPUs


@check("DRV003", "gpu-architecture-not-in-build", Severity.WARNING)
def gpu_architecture_not_in_build(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares each GPU's compute capability with the architectures TensorFlow was compiled for
    (build_info's cuda_compute_capabilities: sm_XY binaries, compute_XY PTX). The list is the installed
    build's own: each distribution writes its own (the pip wheels of 2.17 on: sm_60, sm_70, sm_80,
    sm_89, compute_90; conda-forge's CUDA 12 builds: sm_60 … sm_90, compute_90, set in
    conda-forge/tensorflow-feedstock's recipe/build.sh; NVIDIA's containers: theirs), so none stands in
    for another; a CUDA build whose build_info.py names none is not checked.

    Why is this bad?
    A binary for sm_XY runs on X.Y and later minors of the same major. A GPU newer than every binary
    leaves only PTX JIT: the driver compiles TensorFlow's PTX at every start without a warm cache
    (minutes) — and cannot at all when the driver is older than the CUDA that produced the PTX
    (CUDA_ERROR_UNSUPPORTED_PTX_VERSION; the driver is judged as in DRV002, with
    tfdoctor/knowledge/cuda_drivers.toml when NVML does not say). A GPU older than every entry has
    no kernels at all ("no kernel image is available for execution"), as does a GPU whose only
    entries are architecture-specific ones of another GPU (sm_90a, compute_90a: Hopper only) or
    family-specific ones of another family (sm_100f: 10.x only).

    Example:
    A compute capability 12.0 GPU with a wheel built for sm_60 … sm_80 and compute_90 (JIT), or a
    3.5 GPU with a wheel whose oldest entry is sm_50 (no kernels).

    Fix:
    Use a TensorFlow release or container built for the GPU (or build from source with
    TF_CUDA_COMPUTE_CAPABILITIES); meanwhile keep the JIT cache large (CUDA_CACHE_MAXSIZE, see
    CUDA007), and for PTX too new for the driver, upgrade the driver.

    Fix safety:
    Manual: changes the installed TensorFlow.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    if not architecture_targets(build.compute_capabilities):
        # Each distribution writes its own list (pip wheels, conda-forge's recipe, NGC's source builds):
        # without it no list stands in, since theirs differ.
        raise NotChecked(f"the build_info.py of {build.dist or 'the installed TensorFlow'} {build.version or ''} "
                         "names no cuda_compute_capabilities".replace("  ", " "))
    gpus = all_gpus(facts)
    if any(not g.compute_capability for g in gpus):
        raise NotChecked(f"compute capability unknown ({facts.peek('nvml.nvml_error') or 'NVML was not queried'})")
    for gpu in gpus:
        support = arch_support(gpu.compute_capability, build.compute_capabilities)
        if support == "sass":
            continue
        arch = f"sm_{gpu.cc_text.replace('.', '')}"
        evidence = {"gpu": gpu.index, "gpu.name": gpu.name, "gpu.compute_capability": gpu.cc_text,
                    "tensorflow.cuda_compute_capabilities": list(build.compute_capabilities)}
        fix = AdminFix("Use a TensorFlow build that includes this GPU's architecture", (
            f"pip install -U 'tensorflow[and-cuda]'   # check the release's build_info for {arch}",),
            text=f"or a container image whose TensorFlow is built for {arch} (e.g. NVIDIA's NGC TensorFlow image), "
                 "or build from source with TF_CUDA_COMPUTE_CAPABILITIES including this GPU")
        architectures = ", ".join(build.compute_capabilities)
        if support == "ptx":
            from tfdoctor.derive.cuda_releases import architecture_gap

            gap = architecture_gap(gpu.compute_capability, build.cuda_version, build.compute_capabilities)
            if gap is not None:
                yield _architecture_gap_finding(gpu, build, gap, evidence)
                continue
            ptx_ok, why = _driver_can_jit(facts, build)
            evidence["driver_can_jit"] = why
            if ptx_ok is False:
                yield Finding(
                    f"GPU {gpu.index} ({gpu.name}, compute capability {gpu.cc_text}) has no binary kernels in this "
                    f"TensorFlow build ({architectures}), and the driver cannot JIT its CUDA {build.cuda_version} "
                    f"PTX ({why}): CUDA_ERROR_UNSUPPORTED_PTX_VERSION, no GPU kernels at all",
                    evidence=evidence, fixes=(fix, AdminFix("Or upgrade the NVIDIA driver", (),
                        text=f"Install a driver for CUDA {build.cuda_version} or newer (see DRV002)")),
                    severity=Severity.ERROR)
                continue
            yield Finding(
                f"GPU {gpu.index} ({gpu.name}, compute capability {gpu.cc_text}) has no binary kernels in this "
                f"TensorFlow build ({architectures}): the driver JIT-compiles its PTX at start-up (minutes "
                "without a warm cache)",
                evidence=evidence, fixes=(fix, EnvFix(
                    "Meanwhile keep the JIT-compiled kernels: CUDA_CACHE_MAXSIZE=4 GiB",
                    (set_env("CUDA_CACHE_MAXSIZE", str(4 * (1 << 30))),))))
        elif all(target > gpu.compute_capability for _, target, _ in architecture_targets(build.compute_capabilities)):
            yield Finding(
                f"GPU {gpu.index} ({gpu.name}, compute capability {gpu.cc_text}) is older than every architecture "
                f"this TensorFlow build has kernels for: it cannot run on this GPU",
                evidence=evidence, fixes=(fix,), severity=Severity.ERROR)
        else:  # newer, or between: binaries of other majors and no PTX its driver may compile for it
            yield Finding(
                f"GPU {gpu.index} ({gpu.name}, compute capability {gpu.cc_text}) has neither binary kernels in this "
                f"TensorFlow build ({architectures}) nor PTX that can be compiled for it (an \"a\" target runs on its "
                "own architecture only, an \"f\" target on its own family): it cannot run on this GPU",
                evidence=evidence, fixes=(fix,), severity=Severity.ERROR)


def _architecture_gap_finding(gpu: Any, build: TfBuild, gap: ArchitectureGap, evidence: dict[str, Any]) -> Finding:
    row = gap.row.values
    arch = f"sm_{gpu.cc_text.replace('.', '')}"
    runs = (f"TensorFlow releases built with CUDA ≥ {row['cuda']}: {', '.join(gap.releases)}" if gap.releases else
            f"no tensorflow release tfdoctor knows is built with CUDA ≥ {row['cuda']} (the newest: "
            f"{knowledge_newest_release()})")
    steps = [f"pip install 'tensorflow[and-cuda]=={gap.releases[-1]}.*'"] if gap.releases else []
    prose = [f"Run TensorFlow in {c}" for c in gap.containers]
    prose.append(f"or build TensorFlow from source with CUDA ≥ {row['cuda']} and TF_CUDA_COMPUTE_CAPABILITIES "
                 f"including {arch}")
    return Finding(
        f"GPU {gpu.index} ({gpu.name}, compute capability {gpu.cc_text}, {row['name']}) cannot run this "
        f"TensorFlow {build.version or ''} build: it has no sm_{gpu.compute_capability[0]}x kernels "
        f"and its CUDA {build.cuda_version} PTX is older than the PTX ISA {row['ptx_isa']} (CUDA {row['cuda']}) "
        f"this architecture needs — GPU ops fail with CUDA_ERROR_INVALID_PTX, XLA with \"PTX version … does not "
        f"support target '{arch}'\". It runs: {runs}",
        evidence={**evidence, "knowledge": gap.row.evidence(), "releases_that_run": list(gap.releases)},
        fixes=(AdminFix(f"Use a TensorFlow built with CUDA ≥ {row['cuda']} for {arch}", tuple(steps),
                        text="; ".join(prose)),),
        severity=Severity.ERROR)


def knowledge_newest_release() -> str:
    from tfdoctor import knowledge

    row = knowledge.table("tensorflow_builds").rows[-1]
    return f"{row['tensorflow']}, CUDA {row['cuda']}"


@check("DRV004", "tensorflow-gpu-on-native-windows", Severity.ERROR)
def tensorflow_gpu_on_native_windows(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TensorFlow 2.11 or later on native Windows on a host with an NVIDIA GPU.

    Why is this bad?
    TensorFlow 2.10 was the last release with GPU support on native Windows: later releases run on
    the CPU there, whatever CUDA is installed.

    Example:
    pip install tensorflow==2.15 on Windows 11 with an RTX 4090.

    Fix:
    Run TensorFlow in WSL2 (pip install 'tensorflow[and-cuda]' inside it), or pin tensorflow<2.11
    with CUDA 11.2 / cuDNN 8.1 on native Windows.

    Fix safety:
    Manual: changes the environment TensorFlow runs in.
    """
    if facts.get("host.system") != "Windows":
        return
    build = tensorflow_build(facts)
    if build is None or not build.version or version_tuple(build.version)[:2] < (2, 11):
        return
    gpus = all_gpus(facts)
    if not gpus:
        return
    yield Finding(
        f"TensorFlow {build.version} on native Windows has no GPU support (the last was 2.10): the "
        f"{len(gpus)} NVIDIA GPU(s) stay unused",
        evidence={"host.system": "Windows", "tensorflow.version": build.version,
                  "nvml.devices": [g.name for g in gpus]},
        fixes=(AdminFix("Use WSL2 for TensorFlow on the GPU", (
            "wsl --install   # then, inside WSL2: pip install 'tensorflow[and-cuda]'",),
            text="or, natively: pip install 'tensorflow<2.11' with CUDA 11.2 and cuDNN 8.1"),))
