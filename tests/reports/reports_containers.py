"""Real reports of the containers category (issue 35): a toolkit that mounted only the `utility` driver files,
and x86 images emulated on Apple silicon. Labels and splits were written before tfdoctor ran on any of them.
The machines are tests/healthy/machines_containers.py's, set up as each thread describes."""

from __future__ import annotations

from healthy import machines_containers as mc
from healthy.parts import PythonEnv
from support import gpu_scenarios as gpu

from .corpus import RealReport, register

PY27 = PythonEnv("/usr/local", version="2.7.12")


def _utility_only(root):
    return mc.toolkit_container(root, ("utility",))


def _apptainer_without_nv(root):
    return mc.apptainer_container(root, nv=False)


def _docker_without_toolkit(root):
    """tensorflow-gpu 1.1.0 in an nvidia/cuda:8.0-cudnn5 image started with plain `docker run` on a GPU host: the
    host kernel's /proc/driver/nvidia and PCI bus, no /dev/nvidia*, no driver library (1.1 has no build_info.py)."""
    mc.parts.cpus(root, mc.parts.CASCADE_LAKE, cores_per_socket=8)
    mc.parts.operating_system(root, "0b6c1d2e3f4a", os_release=mc.parts.UBUNTU_2204, mem_gib=64)
    mc.parts.nvidia_driver(root, mc.parts.T4, [("0000:3b:00.0", 0)], version="375.66")
    gpu.bind(root, ["0000:3b:00.0"])
    for node in ("nvidia0", "nvidiactl", "nvidia-uvm"):
        (root.path / "dev" / node).unlink()
    for name in ("libcuda.so.1", "libcuda.so.375.66"):
        (root.path / mc.LIB.lstrip("/") / name).unlink()
    cuda = "/usr/local/cuda-8.0/lib64"
    for soname in ("libcudart.so.8.0", "libcublas.so.8.0", "libcufft.so.8.0", "libcurand.so.8.0", "libcudnn.so.5"):
        gpu.lib(root, f"{cuda}/{soname}", soname)
    mc.parts.process(root, uid=0, cap_eff=mc.parts.CAP_DOCKER_DEFAULT)
    root.write("/proc/self/cgroup", "4:devices:/docker/8f1e2d3c4b5a\n").write("/.dockerenv", "")
    site = mc.parts.FakeSitePackages(root.path / PY27.site.lstrip("/"))
    site.tensorflow(name="tensorflow-gpu", version="1.1.0", tags=("cp27-cp27mu-manylinux1_x86_64",),
                    requires=("numpy>=1.11.0", "six>=1.10.0", "protobuf>=3.2.0", "werkzeug>=0.11.10", "wheel>=0.26",
                              'mock>=2.0.0; python_version < "3"'), requires_python="")
    for name, version in (("numpy", "1.12.1"), ("six", "1.10.0"), ("protobuf", "3.3.0"), ("werkzeug", "0.12.2"),
                          ("wheel", "0.29.0"), ("mock", "2.0.0")):
        site.dist(name, version, top_level=(name,))
    (site.path / "tensorflow/python/platform/build_info.py").unlink(missing_ok=True)
    gpu.ld_cache(root, [cuda])


def _amd64_on_mac(version: str, env: PythonEnv):
    def build(root):
        mc.docker_desktop_mac(root, "x86_64", version=version, env=env)
    return build


def _x86_python(version: str) -> PythonEnv:
    """The image's interpreter: x86-64, the version the thread names (or one its TensorFlow supports)."""
    return PythonEnv(f"{mc.HOME}/venv", version=version, arch="x86_64")


register(
    RealReport(
        "tf-45011-gpus-without-compute", "https://github.com/tensorflow/tensorflow/issues/45011", "containers", "dev",
        "`docker run --gpus all` of a custom image with tensorflow-gpu: libcuda not found inside the container; "
        "solved by --gpus 'all,\"capabilities=compute,utility\"'",
        expect=("CTR001",), twin="docker-gpus-compute-utility",
        build=_utility_only, env=mc.toolkit_env(None), python=mc.VENV, nvml=mc.NVML),
    RealReport(
        "compose-8583-utility-capability", "https://github.com/docker/compose/issues/8583", "containers", "heldout",
        "TensorFlow or JAX in a Compose service saw no GPU; traced to the `utility` driver capability the "
        "compose file set", expect=("CTR001",), twin="docker-gpus-compute-utility",
        build=_utility_only, env=mc.toolkit_env("utility"), python=mc.VENV, nvml=mc.NVML),
    RealReport(
        "tf-49131-amd64-docker-on-m1", "https://github.com/tensorflow/tensorflow/issues/49131", "containers", "dev",
        "pip tensorflow 2.4.1 in an Ubuntu image run as linux/amd64 on an M1 Mac: import fails (AVX)",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.4.1", _x86_python("3.8.5")), env=mc.toolkit_env(None), python=_x86_python("3.8.5")),
    RealReport(
        "tf-52972-tf27-docker-on-m1", "https://github.com/tensorflow/tensorflow/issues/52972", "containers", "heldout",
        "tensorflow/tensorflow (2.7, x86-64 only) on an M1 Mac: 'compiled to use AVX instructions', qemu aborts",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.7.0", _x86_python("3.8.10")), env=mc.toolkit_env(None),
        python=_x86_python("3.8.10")),
    RealReport(
        "kubric-288-amd64-image-on-m2", "https://github.com/google-research/kubric/issues/288", "containers", "dev",
        "kubric's x86 image on an M2 Mac (also with --platform linux/amd64): TensorFlow's AVX abort under qemu",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.11.0", _x86_python("3.10.12")), env=mc.toolkit_env(None),
        python=_x86_python("3.10.12")),
    RealReport(
        "pixeltilt-44-prebuilt-image-on-m1", "https://github.com/tilt-dev/pixeltilt/issues/44", "containers",
        "heldout", "a prebuilt object-detector image on an M1 MacBook: cpu_feature_guard's AVX abort",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.6.0", _x86_python("3.8.12")), env=mc.toolkit_env(None), python=_x86_python("3.8.12")),
    RealReport(
        "mtriage-185-amd64-emulation", "https://github.com/forensic-architecture/mtriage/issues/185", "containers",
        "dev", "Docker Desktop emulating Intel on Apple silicon for a TensorFlow task: 'compiled to use AVX "
        "instructions'", expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.12.0", _x86_python("3.10.12")), env=mc.toolkit_env(None),
        python=_x86_python("3.10.12")),
    RealReport(
        "proteinfold-281-singularity-without-nv", "https://github.com/nf-core/proteinfold/issues/281", "containers",
        "dev", "the pipeline's Singularity/Apptainer processes ran without --nv (the maintainers' bug, fixed by "
        "#282): AlphaFold's TensorFlow/JAX found no libcuda.so.1 on the GPU node",
        expect=("CTR002",), twin="apptainer-with-nv",
        build=_apptainer_without_nv, env=mc.APPTAINER_ENV, python=mc.VENV),
    RealReport(
        "tf-10073-docker-without-nvidia-docker", "https://github.com/tensorflow/tensorflow/issues/10073", "containers",
        "heldout", "tensorflow-gpu 1.1.0 image started with plain docker: libcuda.so.1 missing; the maintainer's "
        "answer: start it with nvidia-docker", expect=("CUDA001", "DRV001"), twin="docker-gpus-compute-utility",
        build=_docker_without_toolkit, env={"HOME": "/root", "PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:"
                                            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                            "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64"},
        python=PY27),
)
