"""Which container engine this process runs under, from the privileges probe's signs (pure): the kind
decides how a capability is granted (docker/podman run flags, a Kubernetes securityContext)."""

from __future__ import annotations

from tfdoctor.facts import Facts

# Docker's default effective set (CAP_CHOWN … CAP_SETFCAP, without CAP_SYS_ADMIN); containerd and
# CRI-O grant the same set to a Kubernetes container that does not ask for more.
DEFAULT_CONTAINER_CAPS = "00000000a80425fb"


def container_signs(facts: Facts) -> list[str]:
    signs = facts.peek("privileges.container")
    host = facts.peek("host.container.signs")
    found = [s for s in signs if isinstance(s, str)] if isinstance(signs, list) else []
    found += [s for s in host if isinstance(s, str) and s not in found] if isinstance(host, list) else []
    return found


def container_kind(facts: Facts) -> str | None:
    """"kubernetes", "podman", "docker", "container" (signs of one, engine unknown), or None (none seen)."""
    signs = container_signs(facts)
    if not signs:
        return None
    if "KUBERNETES_SERVICE_HOST" in signs or any(s.endswith(":kubepods") for s in signs):
        return "kubernetes"
    if "/run/.containerenv" in signs or any(s.endswith(":libpod") for s in signs):
        return "podman"
    if "/.dockerenv" in signs or any(s.endswith(":docker") for s in signs):
        return "docker"
    return "container"


def runtime(facts: Facts) -> str | None:
    """container_kind, with Apptainer/Singularity first: an Apptainer container shares the host's cgroup
    and shows no engine marker, so only its own folder and variables (container_runtime.apptainer) tell."""
    if isinstance(facts.peek("container_runtime.apptainer"), dict):
        return "apptainer"
    return container_kind(facts)


def apptainer_libs(facts: Facts) -> list[str] | None:
    """The names in /.singularity.d/libs (what --nv bound there); None when not read."""
    apptainer = facts.peek("container_runtime.apptainer")
    libs = apptainer.get("libs") if isinstance(apptainer, dict) else None
    return [n for n in libs if isinstance(n, str)] if isinstance(libs, list) else None


def toolkit_files(facts: Facts, capability: str) -> list[str] | None:
    """The NVIDIA Container Toolkit's files of `capability` present in this container; None when not read."""
    files = facts.peek("container_runtime.driver_files")
    found = files.get(capability) if isinstance(files, dict) else None
    return [p for p in found if isinstance(p, str)] if isinstance(found, list) else None


def capabilities_grant_compute(value: str | None) -> bool:
    """Whether NVIDIA_DRIVER_CAPABILITIES names `compute` (or `all`). Unset or empty is not counted: the
    toolkit's default was `utility` alone before nvidia-container-runtime 3.x, `utility,compute` since."""
    words = {w.strip().lower() for w in (value or "").split(",")}
    return bool(words & {"compute", "all"})


CUDA_DRIVER = "libcuda.so.1"


def libcuda_resolves(facts: Facts) -> bool:
    from tfdoctor.derive.resolvable_libraries import LibraryView

    return LibraryView(facts, "cuda").resolved(CUDA_DRIVER) is not None


def utility_only(facts: Facts) -> dict[str, object] | None:
    """Evidence that the NVIDIA Container Toolkit ran for this container with the `utility` capability and
    without `compute`: its NVML and nvidia-smi files and the GPU device nodes are here, none of its compute
    files (libcuda), and NVIDIA_DRIVER_CAPABILITIES does not name compute. None otherwise."""
    if runtime(facts) in (None, "apptainer"):
        return None
    utility, compute = toolkit_files(facts, "utility"), toolkit_files(facts, "compute")
    nodes = facts.peek("container_runtime.device_nodes")
    if not utility or compute is None or compute or not isinstance(nodes, list) or not nodes:
        return None
    value = facts.env("NVIDIA_DRIVER_CAPABILITIES")
    if capabilities_grant_compute(value):
        return None  # compute asked for and still absent: not the capability's doing (CUDA001 names the library)
    if libcuda_resolves(facts):
        return None  # the image brings a libcuda of its own (a CUDA compat package): not withheld
    return {"env.NVIDIA_DRIVER_CAPABILITIES": value, "env.NVIDIA_VISIBLE_DEVICES": facts.env("NVIDIA_VISIBLE_DEVICES"),
            "container_runtime.driver_files.utility": utility, "container_runtime.driver_files.compute": compute,
            "container_runtime.device_nodes": nodes, "container_kind": runtime(facts)}


def apptainer_without_nv(facts: Facts) -> dict[str, object] | None:
    """Evidence that this Apptainer/Singularity container was started without --nv (or --nvccli) on a host
    with an NVIDIA GPU: /.singularity.d/libs holds no libcuda. None otherwise."""
    if runtime(facts) != "apptainer":
        return None
    libs = apptainer_libs(facts)
    if libs is None or any(n.startswith("libcuda.so") for n in libs) or libcuda_resolves(facts):
        return None  # --nv bound it, or --nvccli mounted it into the image's library folder
    return {"container_runtime.apptainer.libs": libs,
            "container_runtime.apptainer.signs": facts.peek("container_runtime.apptainer.signs"),
            "host.nvidia_driver": facts.peek("host.nvidia_driver"),
            "container_runtime.device_nodes": facts.peek("container_runtime.device_nodes")}


def driver_library_withheld(facts: Facts) -> bool:
    """The container runtime, not the image, keeps libcuda.so.1 from this job (CTR001 or CTR002 names it)."""
    return utility_only(facts) is not None or apptainer_without_nv(facts) is not None


def driver_library_fix(facts: Facts) -> tuple[tuple[str, ...], str]:
    """How this runtime gives a process the host driver's libcuda.so.1: the command of its launcher (none
    where there is nothing to type) and what to know about it, in the one shape fixes have (commands in
    steps, prose in text)."""
    kind = runtime(facts)
    if kind == "apptainer":
        return (("apptainer exec --nv image.sif python train.py",),
                "--nv binds the host's libcuda.so.1 into /.singularity.d/libs (singularity exec --nv alike; "
                "--nvccli lets nvidia-container-cli do it)")
    if kind == "kubernetes":
        return ((), "request the GPU in the pod spec: resources: {limits: {nvidia.com/gpu: 1}} (the NVIDIA device "
                    "plugin or GPU Operator mounts the host's libcuda.so.1), with NVIDIA_DRIVER_CAPABILITIES "
                    "including compute")
    if kind == "podman":
        return (("podman run --device nvidia.com/gpu=all …",),
                "CDI devices from nvidia-ctk cdi generate; they mount the host's libcuda.so.1")
    if kind is not None:
        return (("docker run --gpus all …",),
                "the NVIDIA Container Toolkit on the host mounts its libcuda.so.1; the image must not set "
                "NVIDIA_DRIVER_CAPABILITIES without compute")
    return ((), "libcuda.so.1 comes with the NVIDIA driver: install the driver's user-space libraries on this host "
                "(the same version as the loaded kernel module)")


X86_ARCHES = ("x86_64", "amd64", "x64", "i686", "i386")


def cpuinfo_arch(facts: Facts) -> str | None:
    """The architecture of the cores /proc/cpuinfo describes: the kernel's own, which an emulator running
    this process (qemu-user, Rosetta) does not rewrite. arm64 names its implementer in hex and lists
    `Features` (asimd); x86 names its vendor and lists `flags` (sse2)."""
    vendor = facts.peek("cpu.cpuinfo.vendor")
    flags = facts.peek("cpu.cpuinfo.flags")
    # Only the strings: a hand-made or damaged facts file may hold anything in the list (a list is unhashable).
    flags = {f for f in flags if isinstance(f, str)} if isinstance(flags, list) else set()
    if (isinstance(vendor, str) and vendor.lower().startswith("0x")) or "asimd" in flags:
        return "aarch64"
    if vendor in ("GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls") or "sse2" in flags:
        return "x86_64"
    return None


def emulation(facts: Facts) -> dict[str, object] | None:
    """Evidence that this process is an x86 binary emulated on an arm64 kernel (an amd64 image under Docker
    Desktop on Apple silicon, qemu-user through binfmt_misc): the interpreter's platform.machine() says
    x86_64 while /proc/cpuinfo lists arm64 cores. None when not emulated or not known."""
    process = facts.peek("python.marker_environment.platform_machine")
    source = "python.marker_environment.platform_machine"
    if not isinstance(process, str) or not process:
        process, source = facts.peek("host.arch"), "host.arch"
    if not isinstance(process, str) or process.lower() not in X86_ARCHES:
        return None
    kernel = cpuinfo_arch(facts)
    if kernel != "aarch64":
        return None
    release = facts.peek("host.kernel")
    evidence: dict[str, object] = {source: process, "cpu.cpuinfo.vendor": facts.peek("cpu.cpuinfo.vendor"),
                                   "cpuinfo_arch": kernel}
    if isinstance(release, str):
        evidence["host.kernel"] = release
    return evidence


def docker_desktop(facts: Facts) -> bool:
    """Docker Desktop's VM kernel (LinuxKit) names itself in its release: 6.10.14-linuxkit."""
    release = facts.peek("host.kernel")
    return isinstance(release, str) and "linuxkit" in release
