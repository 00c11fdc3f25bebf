"""The container_runtime probe over fake containers: the NVIDIA Container Toolkit's files per capability, the
device nodes, Apptainer's folder and --nv libraries, and what it leaves unread (and why)."""

from __future__ import annotations

from conftest import probe_root
from healthy import machines_containers as mc

from tfdoctor.facts import Unknown


def _section(root, env=None):
    return probe_root(root, env or {}).get("container_runtime")


def test_toolkit_files_are_sorted_by_capability(make_root) -> None:
    root = make_root()
    mc.toolkit_container(root, ("utility",))
    section = _section(root, mc.toolkit_env("utility"))
    assert section["apptainer"] is None
    assert section["driver_files"]["compute"] == []
    assert section["driver_files"]["utility"] == [
        "/usr/bin/nvidia-debugdump", "/usr/bin/nvidia-persistenced", "/usr/bin/nvidia-smi",
        "/usr/lib/x86_64-linux-gnu/libnvidia-cfg.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-cfg.so.550.54.15",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15"]
    assert section["device_nodes"] == ["/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl"]


def test_compute_capability_brings_libcuda_and_the_jit_compiler(make_root) -> None:
    root = make_root()
    mc.toolkit_container(root)
    compute = _section(root, mc.toolkit_env("compute,utility"))["driver_files"]["compute"]
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in compute
    assert "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1" in compute
    assert "/usr/bin/nvidia-cuda-mps-control" in compute


def test_a_library_whose_name_only_starts_alike_is_not_the_toolkits(make_root) -> None:
    root = make_root()
    mc.toolkit_container(root, ("utility",))
    root.write("/usr/lib/x86_64-linux-gnu/libcudart.so.12", "")  # CUDA's runtime, from the image: not libcuda
    root.write("/usr/lib/x86_64-linux-gnu/libcuda_fake.so", "")
    assert _section(root, mc.toolkit_env("utility"))["driver_files"]["compute"] == []


def test_apptainer_signs_and_the_libraries_nv_bound(make_root) -> None:
    with_nv, without = make_root(), make_root()
    mc.apptainer_container(with_nv, nv=True)
    mc.apptainer_container(without, nv=False)
    found = _section(with_nv, mc.APPTAINER_ENV)["apptainer"]
    assert found["signs"] == ["/.singularity.d", "APPTAINER_CONTAINER", "APPTAINER_NAME", "SINGULARITY_CONTAINER",
                              "SINGULARITY_NAME"]
    assert "libcuda.so.1" in found["libs"] and "libnvidia-ml.so.1" in found["libs"]
    assert _section(without, mc.APPTAINER_ENV)["apptainer"]["libs"] == []


def test_apptainer_image_without_a_libs_folder_is_unknown_with_the_reason(make_root) -> None:
    root = make_root()
    root.write("/.singularity.d/env/01-base.sh", "#!/bin/sh\n")
    libs = _section(root)["apptainer"]["libs"]
    assert isinstance(libs, Unknown) and libs.reason == "/.singularity.d/libs does not exist"


def test_a_container_on_a_host_without_nvidia_reads_no_driver_files(make_root) -> None:
    root = make_root()
    root.write("/.dockerenv", "")
    root.write("/sys/bus/pci/devices/0000:00:1f.2/vendor", "0x8086\n")
    section = _section(root)
    assert isinstance(section["driver_files"], Unknown)
    assert section["driver_files"].reason.startswith("no NVIDIA GPU or driver on this host")


def test_a_wsl2_container_lists_dxg_as_its_gpu_device(make_root) -> None:
    """Docker Desktop's WSL2 backend: the toolkit gives /dev/dxg and libdxcore, no /dev/nvidia*."""
    root = make_root()
    root.write("/.dockerenv", "").write("/dev/dxg", "")
    root.write("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "")
    section = _section(root, mc.toolkit_env("utility"))
    assert section["device_nodes"] == ["/dev/dxg"]
    assert section["driver_files"] == {"utility": ["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"], "compute": []}
