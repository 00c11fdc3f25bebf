"""CTR — what the container runtime gave the job: the NVIDIA Container Toolkit's driver capabilities, Apptainer's
`--nv` bind of the host driver, and an x86 image emulated on an arm64 host.

Each finding names the runtime's own remedy (a capability variable for Docker, Podman and Kubernetes, `--nv` for
Apptainer, the host's architecture for emulation); all are manual: a container's own processes cannot change how
the container was started.

Sources: libnvidia-container's per-capability file lists (tfdoctor/knowledge/nvidia_container_toolkit.toml);
the toolkit's documentation of NVIDIA_DRIVER_CAPABILITIES; Apptainer's GPU guide (`--nv` binds the libraries of
nvliblist.conf into /.singularity.d/libs, which the image's environment puts on LD_LIBRARY_PATH); TensorFlow's
"compiled to use AVX instructions" abort under Docker Desktop on Apple silicon (tensorflow/tensorflow#52845,
#52972).
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.container import (
    CUDA_DRIVER,
    apptainer_without_nv,
    docker_desktop,
    emulation,
    libcuda_resolves,
    runtime,
    utility_only,
)
from tfdoctor.derive.tf_build import cuda_gpu_setup
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import AdminFix, Finding, Severity
from tfdoctor.registry import check


@check("CTR001", "container-toolkit-without-compute-capability", Severity.ERROR)
def container_toolkit_without_compute_capability(facts: Facts) -> Iterator[Finding]:
    """What it does:
    In a Docker, Podman or Kubernetes container of a CUDA build of TensorFlow, finds the NVIDIA Container
    Toolkit's `utility` files (libnvidia-ml, nvidia-smi) and the GPU device nodes, but none of its `compute`
    files (libcuda, libnvidia-ptxjitcompiler), with NVIDIA_DRIVER_CAPABILITIES not naming `compute` or
    `all`, and libcuda.so.1 not resolvable. The file lists per capability are libnvidia-container's
    (tfdoctor/knowledge/nvidia_container_toolkit.toml).

    Why is this bad?
    The toolkit mounts only the driver files of the capabilities the container asks for. With `utility`
    alone nvidia-smi lists the GPU, so the container looks right, but TensorFlow finds no libcuda.so.1 and
    runs on the CPU ("Could not find cuda drivers on your machine, GPU will not be used"). An image that
    sets NVIDIA_DRIVER_CAPABILITIES=utility, a Compose `capabilities: [gpu, utility]` list, or an older
    toolkit whose default for an unset variable was `utility` all lead here.

    Example:
    `docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=utility image python train.py`.

    Fix:
    Ask for compute: `-e NVIDIA_DRIVER_CAPABILITIES=compute,utility` (or `all`) on `docker run`,
    `ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility` in the image, `--gpus '"capabilities=compute,utility"'`,
    or `capabilities: [gpu, compute, utility]` in a Compose file.

    Fix safety:
    Manual: it changes how the container is started (printed, never written into a script).
    """
    if cuda_gpu_setup(facts) is None:
        return
    evidence = utility_only(facts)
    if evidence is None:
        return
    value = evidence["env.NVIDIA_DRIVER_CAPABILITIES"]
    asked = (f"NVIDIA_DRIVER_CAPABILITIES={value}" if value else
             "NVIDIA_DRIVER_CAPABILITIES unset (older toolkits then mount utility alone)")
    kind = str(evidence["container_kind"])
    steps: tuple[str, ...]
    if kind == "kubernetes":
        steps = ("env: [{name: NVIDIA_DRIVER_CAPABILITIES, value: \"compute,utility\"}]   # in the container's spec",)
    else:
        engine = kind if kind in ("docker", "podman") else "docker"
        steps = (f"{engine} run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility …   # or =all",
                 "ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility   # in the Dockerfile, for every run of the image",
                 "capabilities: [gpu, compute, utility]   # a Compose file's deploy.resources.reservations.devices")
    yield Finding(
        f"The NVIDIA Container Toolkit mounted the driver's utility files here (nvidia-smi works) but not "
        f"{CUDA_DRIVER}: {asked}, so TensorFlow will not use the GPU",
        evidence=evidence,
        fixes=(AdminFix("Start the container with the compute capability", steps),))


@check("CTR002", "apptainer-without-nv", Severity.ERROR)
def apptainer_started_without_nv(facts: Facts) -> Iterator[Finding]:
    """What it does:
    In an Apptainer or Singularity container (/.singularity.d, APPTAINER_CONTAINER or SINGULARITY_CONTAINER)
    on a host with an NVIDIA GPU, running a CUDA build of TensorFlow, finds no libcuda in /.singularity.d/libs
    and libcuda.so.1 not resolvable.

    Why is this bad?
    Apptainer shares the host's /dev and /proc, so the GPU and the driver's version file are visible, but
    the driver's user-space libraries reach the container only when it is started with `--nv` (or
    `--nvccli`), which binds them into /.singularity.d/libs. Without it TensorFlow logs "Could not load
    dynamic library 'libcuda.so.1'" and runs on the CPU. `docker run --gpus all` advice does not apply.

    Example:
    `apptainer exec tensorflow_latest-gpu.sif python train.py` on a GPU node.

    Fix:
    Start it with `apptainer exec --nv …` (`singularity exec --nv …`), or `--nvccli` where the host has
    nvidia-container-cli.

    Fix safety:
    Manual: it changes how the container is started.
    """
    if cuda_gpu_setup(facts) is None:
        return
    evidence = apptainer_without_nv(facts)
    if evidence is None:
        libs = facts.peek("container_runtime.apptainer.libs") if runtime(facts) == "apptainer" else None
        # whether --nv bound libcuda there is what the check asks (unless --nvccli put it on the loader's path)
        if isinstance(libs, Unknown) and not libcuda_resolves(facts):
            raise NotChecked(f"container_runtime.apptainer.libs: {libs.reason}")
        return
    yield Finding(
        f"This Apptainer/Singularity container was started without --nv: /.singularity.d/libs holds no "
        f"{CUDA_DRIVER}, so TensorFlow will not use the host's GPU",
        evidence=evidence,
        fixes=(AdminFix("Start the container with --nv", (
            "apptainer exec --nv image.sif python train.py   # singularity exec --nv alike",
            "apptainer exec --nvccli image.sif python train.py   # where nvidia-container-cli is installed")),))


@check("CTR003", "x86-image-emulated-on-arm64", Severity.ERROR)
def x86_image_emulated_on_arm64(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TensorFlow installed for an x86-64 interpreter (platform.machine() says x86_64) on a kernel whose
    /proc/cpuinfo lists arm64 cores: an amd64 image run by Docker Desktop on Apple silicon (its `linuxkit`
    kernel) or by qemu-user through binfmt_misc on an arm64 Linux host.

    Why is this bad?
    The emulator translates every instruction. Rosetta and the qemu builds Docker ships offer no AVX, and
    TensorFlow's x86 wheels need it since 1.6: `import tensorflow` aborts with "The TensorFlow library was
    compiled to use AVX instructions, but these aren't available on your machine" (qemu: "uncaught target
    signal 6"). Where it does run, it is many times slower than native. A CPU with AVX cannot be picked
    inside the emulator; CPU001's advice does not apply, so it stays silent here.

    Example:
    `docker run tensorflow/tensorflow python -c "import tensorflow"` on an M1 Mac.

    Fix:
    Run an image for the host's architecture (`--platform linux/arm64`; TensorFlow publishes aarch64
    wheels on PyPI since 2.16, tensorflow-aarch64/tensorflow-cpu-aws before), or run the amd64 image on an
    x86-64 host.

    Fix safety:
    Manual: another image or another machine.
    """
    from tfdoctor.derive.tensorflow_distribution import installed_tensorflow

    dist = installed_tensorflow(facts)
    if dist is None or (dist.wheel_tags and not any(t.lower().endswith(("x86_64", "amd64")) for t in dist.wheel_tags)):
        return
    evidence = emulation(facts)
    if evidence is None:
        return
    where = "Docker Desktop's arm64 VM (linuxkit kernel)" if docker_desktop(facts) else "an arm64 kernel"
    evidence[f"python.watched.{dist.name}.version"] = dist.version
    yield Finding(
        f"{dist.name} {dist.version} for x86-64 runs emulated on {where}: the emulator lacks AVX, so "
        "import tensorflow aborts (or, where it runs, runs many times slower)",
        evidence=evidence,
        fixes=(AdminFix("Run an image built for the host's architecture", (
            "docker run --platform linux/arm64 …   # an arm64 image; pip install tensorflow there (aarch64 wheels)",),
            text="or run the amd64 image on an x86-64 host with AVX"),))
