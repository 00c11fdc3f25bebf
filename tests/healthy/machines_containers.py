"""Healthy container machines (issue 35): the container that got the driver the way its runtime gives it —
Docker with the NVIDIA Container Toolkit's compute and utility capabilities, Apptainer started with --nv, an
arm64 image on Apple silicon — the twins of CTR001, CTR002 and CTR003. The builders are shared with the
containers' triggering fixtures (tests/snapshots/containers/) and real reports (tests/reports/reports_containers.py).

What a container shows, as the real one does: /proc and /sys are the host kernel's (the driver's version file
and the GPU on the PCI bus are visible whatever the container was given); the toolkit adds /dev/nvidia* and
mounts the driver's libraries of each asked-for capability into the image's library folder under their
versioned names, with the soname links its ldconfig writes (libnvidia-container, nvc_info.c). Apptainer binds
the host's /dev and, with --nv, the driver's libraries into /.singularity.d/libs, which the image's
environment puts on LD_LIBRARY_PATH."""

from __future__ import annotations

from support import gpu_scenarios as gpu

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .machines import HOME, USER_ENV, VENV
from .parts import PythonEnv

DRIVER = "550.54.15"
LIB = "/usr/lib/x86_64-linux-gnu"
ROOT_ENV = {"HOME": "/root", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
# The files of each capability the toolkit mounts (tfdoctor/knowledge/nvidia_container_toolkit.toml), as a
# 550 driver has them: (library, its soname) and binaries.
UTILITY_LIBS = (("libnvidia-ml.so", "libnvidia-ml.so.1"), ("libnvidia-cfg.so", "libnvidia-cfg.so.1"))
COMPUTE_LIBS = (("libcuda.so", "libcuda.so.1"), ("libnvidia-ptxjitcompiler.so", "libnvidia-ptxjitcompiler.so.1"),
                ("libnvidia-nvvm.so", "libnvidia-nvvm.so.4"), ("libcudadebugger.so", "libcudadebugger.so.1"))
UTILITY_BINS = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced")
COMPUTE_BINS = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server")


def _driver_files(root: FakeRoot, folder: str, libs: tuple[tuple[str, str], ...]) -> None:
    for name, soname in libs:
        gpu.lib(root, f"{folder}/{name}.{DRIVER}", soname)
        gpu.link(root, f"{folder}/{soname}", f"{name}.{DRIVER}")


def toolkit_container(root: FakeRoot, capabilities: tuple[str, ...] = ("compute", "utility"),
                      model: parts.GpuModel = parts.A100_SXM4, engine: str = "docker") -> tuple[FakeGpu, ...] | None:
    """`docker run --gpus all` of a CUDA image with tensorflow[and-cuda] 2.15 as root: the host's driver and
    A100 seen through /proc and /sys, the toolkit's files of `capabilities` mounted, Docker's default
    capability set, a namespaced cgroup v2."""
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, cores_per_socket=16)
    parts.operating_system(root, "3f2a9c1d7e44", os_release=parts.UBUNTU_2204, mem_gib=256)
    gpus = parts.nvidia_driver(root, model, [("0000:3b:00.0", 0)], version=DRIVER)
    gpu.bind(root, ["0000:3b:00.0"])  # the host's nvidia module has claimed it (sysfs is the host's)
    (root.path / LIB.lstrip("/") / "libcuda.so.1").unlink()  # the driver's own files come only from the toolkit
    (root.path / LIB.lstrip("/") / f"libcuda.so.{DRIVER}").unlink()
    if "utility" in capabilities:
        _driver_files(root, LIB, UTILITY_LIBS)
        for binary in UTILITY_BINS:
            root.write(f"/usr/bin/{binary}", "\x7fELF")
    if "compute" in capabilities:
        _driver_files(root, LIB, COMPUTE_LIBS)
        for binary in COMPUTE_BINS:
            root.write(f"/usr/bin/{binary}", "\x7fELF")
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    if engine == "kubernetes":  # containerd under the kubelet: no marker file, the pod's cgroup path
        root.write("/proc/self/cgroup", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
                                        "7f9c2a31_4b0e_4c6a_9d7e_2f1b8c3d4e5f.slice/cri-containerd-3c1e0f6a9b8d.scope\n")
    else:
        root.write("/proc/self/cgroup", "0::/\n").write("/.dockerenv", "")
    parts.tensorflow_2_15(root, VENV)
    gpu.ld_cache(root, [])
    # NVML answers where its library was mounted (utility); without it nothing lists the GPU.
    return gpus if "utility" in capabilities else None


def toolkit_env(capabilities: str | None) -> dict[str, str]:
    env = {**ROOT_ENV, "VIRTUAL_ENV": VENV.prefix, "NVIDIA_VISIBLE_DEVICES": "all"}
    return env if capabilities is None else {**env, "NVIDIA_DRIVER_CAPABILITIES": capabilities}


SIF = f"{HOME}/containers/tensorflow_2.15.0-gpu.sif"
APPTAINER_ENV = {**USER_ENV, "APPTAINER_CONTAINER": SIF, "APPTAINER_NAME": "tensorflow_2.15.0-gpu.sif",
                 "SINGULARITY_CONTAINER": SIF, "SINGULARITY_NAME": "tensorflow_2.15.0-gpu.sif",
                 "LD_LIBRARY_PATH": "/.singularity.d/libs"}


def apptainer_container(root: FakeRoot, nv: bool = True, nvccli: bool = False) -> tuple[FakeGpu, ...] | None:
    """`apptainer exec [--nv] tensorflow_2.15.0-gpu.sif python train.py` on a Slurm GPU node: the host's /dev,
    /proc and /sys, the job's cgroup (no engine marker), the image's /.singularity.d; with --nv the host
    driver's libraries bound into /.singularity.d/libs under their sonames."""
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=2, cores_per_socket=16)
    parts.operating_system(root, "gpu017", os_release=parts.ROCKY_9, mem_gib=512)
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, [("0000:3b:00.0", 0)], version=DRIVER)
    gpu.bind(root, ["0000:3b:00.0"])
    # The image is Ubuntu: the host's (Rocky) libcuda is not in its /usr/lib/x86_64-linux-gnu.
    (root.path / LIB.lstrip("/") / "libcuda.so.1").unlink()
    (root.path / LIB.lstrip("/") / f"libcuda.so.{DRIVER}").unlink()
    parts.process(root, cpus_allowed="0-7")
    root.write("/proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n")
    for script in ("01-base.sh", "10-docker2singularity.sh", "90-environment.sh", "95-apps.sh", "99-base.sh",
                   "99-runtimevars.sh"):
        root.write(f"/.singularity.d/env/{script}", "#!/bin/sh\n")
    root.write("/.singularity.d/runscript", "#!/bin/sh\nexec /bin/bash \"$@\"\n")
    root.write("/.singularity.d/labels.json", "{}\n")
    (root.path / ".singularity.d/libs").mkdir(parents=True, exist_ok=True)
    if nvccli:  # nvidia-container-cli mounts the driver's files into the image's own folders, as the toolkit does
        _driver_files(root, LIB, UTILITY_LIBS + COMPUTE_LIBS)
        for binary in UTILITY_BINS:
            root.write(f"/usr/bin/{binary}", "\x7fELF")
    elif nv:
        for _name, soname in UTILITY_LIBS + COMPUTE_LIBS:
            gpu.lib(root, f"/.singularity.d/libs/{soname}", soname)
        for binary in UTILITY_BINS:
            root.write(f"/usr/bin/{binary}", "\x7fELF")
    parts.tensorflow_2_15(root, VENV)
    gpu.ld_cache(root, [])
    return gpus if nv or nvccli else None


# Apple M2 cores as Docker Desktop's LinuxKit VM shows them (CPU implementer 0x61: Apple).
APPLE_FEATURES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc "
                  "dcpop sha3 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp flagm2 frint")
LINUXKIT = "6.10.14-linuxkit"
ARM_VENV = PythonEnv(f"{HOME}/venv", arch="aarch64")
X86_VENV = PythonEnv(f"{HOME}/venv", arch="x86_64")


def docker_desktop_mac(root: FakeRoot, image_arch: str = "aarch64", version: str = "2.21.0",
                       env: PythonEnv | None = None) -> None:
    """A container of Docker Desktop on an M2 Mac: 8 Apple cores in the LinuxKit VM, /.dockerenv, root with
    Docker's default capabilities; tensorflow `version` from pip for the image's architecture (an amd64
    image runs under Rosetta or qemu: its interpreter is x86_64, /proc/cpuinfo still the VM's arm64)."""
    root.cpus(sockets=1, cores_per_socket=8, threads_per_core=1)
    root.write("/proc/cpuinfo", "\n".join(
        f"processor\t: {cpu}\nBogoMIPS\t: 48.00\nFeatures\t: {APPLE_FEATURES}\nCPU implementer\t: 0x61\n"
        "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0x000\nCPU revision\t: 0\n" for cpu in range(8)) + "\n")
    root.write("/proc/sys/kernel/osrelease", f"{LINUXKIT}\n")
    root.numa(["0-7"])
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "5d0c2b7e91aa", os_release=parts.DEBIAN_12, mem_gib=8, address="172.17.0.2",
                           nic="eth0", nic_mbps=10000, pci_others=False)
    root.write("/proc/self/cgroup", "0::/\n").write("/.dockerenv", "")
    env = env or (ARM_VENV if image_arch == "aarch64" else X86_VENV)
    cp = "cp" + "".join(env.version.split(".")[:2])
    tag = f"{cp}-{cp}-manylinux_2_17_{image_arch}.manylinux2014_{image_arch}"
    site = parts.FakeSitePackages(root.path / env.site.lstrip("/"))
    release = tuple(int(p) for p in version.split(".")[:2])
    if release < (2, 16):
        # Keras 2 and numpy 1, as pip resolved them for a TensorFlow before 2.16 (2.15's pins stand in), and
        # protobuf 3 before 2.12 (its generated code predates protoc 3.19).
        site.tensorflow(name="tensorflow", version=version, requires=parts.TF_2_15_REQUIRES,
                        requires_python=">=3.8", tags=(tag,))
        old_protobuf = {"protobuf": "3.20.3"} if release < (2, 12) else {}
        site.healthy_dependencies(**{**parts.TF_2_15_DEPENDENCIES, **old_protobuf})
    else:
        site.tensorflow(name="tensorflow", version=version, tags=(tag,))
        site.healthy_dependencies()


def docker_desktop_intel_mac(root: FakeRoot) -> None:
    """Docker Desktop on an Intel Mac: the same LinuxKit VM kernel, but x86-64 cores with AVX2 and an amd64
    image, native (no emulation); tensorflow 2.21's x86-64 wheel."""
    root.cpus(sockets=1, cores_per_socket=4, threads_per_core=1, flags=parts.TIGER_LAKE.flags.split(),
              model=parts.TIGER_LAKE.model, vendor=parts.TIGER_LAKE.vendor, governor=None)
    root.write("/proc/sys/kernel/osrelease", f"{LINUXKIT}\n")
    root.numa(["0-3"])
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "9e8d7c6b5a41", os_release=parts.DEBIAN_12, mem_gib=8, address="172.17.0.2",
                           nic="eth0", nic_mbps=10000, pci_others=False)
    root.write("/proc/self/cgroup", "0::/\n").write("/.dockerenv", "")
    site = parts.FakeSitePackages(root.path / X86_VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", tags=("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",))
    site.healthy_dependencies()


CONTAINER_FAMILIES = ("CTR", "CUDA", "DRV")
NVML = {"driver": DRIVER, "cuda": 12040}  # a 550 driver: CUDA 12.4
# The device plugin names the allocated GPU by its UUID (the one parts.nvidia_driver gives minor 0 of an A100).
POD_ENV = {"NVIDIA_VISIBLE_DEVICES": "GPU-00b2a1-7c2e-4b9d-8e31-5d1c0f9e0000", "KUBERNETES_SERVICE_HOST": "10.96.0.1"}

register(
    HealthyMachine("docker-gpus-compute-utility", CONTAINER_FAMILIES,
                   "docker run --gpus all of a CUDA image (NVIDIA_DRIVER_CAPABILITIES=compute,utility): the "
                   "toolkit's utility and compute files mounted, tensorflow[and-cuda] 2.15",
                   toolkit_container, env=toolkit_env("compute,utility"), python=VENV, nvml=NVML),
    HealthyMachine("docker-gpus-capabilities-all", CONTAINER_FAMILIES,
                   "docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=all, tensorflow[and-cuda] 2.15",
                   toolkit_container, env=toolkit_env("all"), python=VENV, nvml=NVML),
    HealthyMachine("kubernetes-pod-nvidia-gpu-limit", CONTAINER_FAMILIES,
                   "a pod with an nvidia.com/gpu limit (NVIDIA device plugin: NVIDIA_VISIBLE_DEVICES is the GPU's "
                   "UUID) of a CUDA image with compute,utility, tensorflow[and-cuda] 2.15",
                   lambda root: toolkit_container(root, engine="kubernetes"),
                   env=toolkit_env("compute,utility") | POD_ENV,
                   python=VENV, nvml=NVML),
    HealthyMachine("apptainer-with-nv", CONTAINER_FAMILIES,
                   "apptainer exec --nv of a TensorFlow 2.15 GPU image on a Slurm node: the driver's libraries in "
                   "/.singularity.d/libs", apptainer_container, env=APPTAINER_ENV, python=VENV,
                   nvml=NVML),
    HealthyMachine("apptainer-with-nvccli", CONTAINER_FAMILIES,
                   "apptainer exec --nvccli: nvidia-container-cli mounted the driver's files into "
                   "/usr/lib/x86_64-linux-gnu, /.singularity.d/libs left empty",
                   lambda root: apptainer_container(root, nv=False, nvccli=True),
                   env=APPTAINER_ENV | {"NVIDIA_VISIBLE_DEVICES": "all"}, python=VENV, nvml=NVML),
    HealthyMachine("docker-desktop-intel-mac-amd64-image", ("CTR", "CPU", "PKG"),
                   "Docker Desktop on an Intel Mac (LinuxKit kernel, x86-64 cores with AVX2) running an amd64 image "
                   "with tensorflow 2.21: native, not emulated", docker_desktop_intel_mac, env=toolkit_env(None),
                   python=X86_VENV),
    HealthyMachine("apple-silicon-arm64-image", ("CTR", "CPU", "PKG"),
                   "Docker Desktop on an M2 Mac running an arm64 image with tensorflow 2.21's aarch64 wheel",
                   docker_desktop_mac, env=toolkit_env(None) | {"NVIDIA_VISIBLE_DEVICES": ""}, python=ARM_VENV),
)
