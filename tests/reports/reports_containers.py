"""Real reports of the containers category (issue 35): a toolkit that mounted only the `utility` driver files,
and x86 images emulated on Apple silicon. Labels and splits were written before tfdoctor ran on any of them.
The machines are tests/healthy/machines_containers.py's, set up as each thread describes."""

from __future__ import annotations

from healthy import machines_containers as mc

from .corpus import RealReport, register


def _utility_only(root):
    return mc.toolkit_container(root, ("utility",))


def _amd64_on_mac(version: str):
    def build(root):
        mc.docker_desktop_mac(root, "x86_64", version=version)
    return build


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
        build=_amd64_on_mac("2.4.1"), env=mc.toolkit_env(None), python=mc.X86_VENV),
    RealReport(
        "tf-52972-tf27-docker-on-m1", "https://github.com/tensorflow/tensorflow/issues/52972", "containers", "heldout",
        "tensorflow/tensorflow (2.7, x86-64 only) on an M1 Mac: 'compiled to use AVX instructions', qemu aborts",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.7.0"), env=mc.toolkit_env(None), python=mc.X86_VENV),
    RealReport(
        "kubric-288-amd64-image-on-m2", "https://github.com/google-research/kubric/issues/288", "containers", "dev",
        "kubric's x86 image on an M2 Mac (also with --platform linux/amd64): TensorFlow's AVX abort under qemu",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.11.0"), env=mc.toolkit_env(None), python=mc.X86_VENV),
    RealReport(
        "pixeltilt-44-prebuilt-image-on-m1", "https://github.com/tilt-dev/pixeltilt/issues/44", "containers",
        "heldout", "a prebuilt object-detector image on an M1 MacBook: cpu_feature_guard's AVX abort",
        expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.6.0"), env=mc.toolkit_env(None), python=mc.X86_VENV),
    RealReport(
        "mtriage-185-amd64-emulation", "https://github.com/forensic-architecture/mtriage/issues/185", "containers",
        "dev", "Docker Desktop emulating Intel on Apple silicon for a TensorFlow task: 'compiled to use AVX "
        "instructions'", expect=("CTR003",), twin="apple-silicon-arm64-image",
        build=_amd64_on_mac("2.12.0"), env=mc.toolkit_env(None), python=mc.X86_VENV),
)
