"""The GPU probes over fake machine trees: toolkits behind symlinks, pip wheels in a venv, a real
ld.so.cache, /proc/driver/nvidia, /sys/bus/pci, /proc/self/status."""

from __future__ import annotations

import pytest
from support import gpu_scenarios as g

from tfdoctor.facts import Unknown
from tfdoctor.facts.probes.cuda_libs import probe_cuda_libs, resolve_library
from tfdoctor.facts.probes.nvml import probe_gpu_pci, probe_nvml
from tfdoctor.facts.probes.privileges import probe_privileges
from tfdoctor.facts.probes.xla_toolchain import parse_data_dir, parse_ptxas_version, probe_xla_toolchain
from tfdoctor.facts.rooted_fs import RootedFs

ENV = {"HOME": g.HOME, "VIRTUAL_ENV": g.VENV, "PATH": "/usr/bin:/bin"}


def _file(facts, key, path):
    return next(f for f in facts["libraries"][key]["files"] if f"{f['dir']}/{f['name']}" == path)


def test_cuda_symlink_to_another_toolkit_is_followed_and_reported(make_root):
    root = make_root()
    g.toolkit(root, "12.2")
    g.link(root, "/usr/local/cuda", g.toolkit(root, "11.8"))
    facts = probe_cuda_libs(root.machine(ENV))
    kits = {k["path"]: k for k in facts["toolkits"]}
    assert kits["/usr/local/cuda"]["target"] == "/usr/local/cuda-11.8"
    assert kits["/usr/local/cuda"]["version"] == "11.8.89"
    assert kits["/usr/local/cuda-12.2"]["target"] is None and kits["/usr/local/cuda-12.2"]["version"] == "12.2.140"
    cudart = _file(facts, "cudart", "/usr/local/cuda/lib64/libcudart.so.11.0")
    assert cudart["target"] == "/usr/local/cuda-11.8/lib64/libcudart.so.11.8.89"
    assert cudart["file_version"] == "11.8.89"


def test_cupti_in_extras_is_found_but_not_resolvable_until_on_ld_library_path(make_root):
    root = make_root()
    g.toolkit(root, "12.2")
    facts = probe_cuda_libs(root.machine(ENV))
    cupti = facts["libraries"]["cupti"]
    assert "libcupti.so.12" not in cupti["resolved"]
    assert _file(facts, "cupti", "/usr/local/cuda-12.2/extras/CUPTI/lib64/libcupti.so.12")["origin"] == (
        "toolkit /usr/local/cuda-12.2")
    env = {**ENV, "LD_LIBRARY_PATH": "/usr/local/cuda-12.2/extras/CUPTI/lib64"}
    after = probe_cuda_libs(root.machine(env))
    assert after["libraries"]["cupti"]["resolved"]["libcupti.so.12"] == {
        "path": "/usr/local/cuda-12.2/extras/CUPTI/lib64/libcupti.so.12", "via": "LD_LIBRARY_PATH"}


def test_pip_wheels_next_to_tensorflow_resolve_through_its_runpath(make_root):
    root = make_root()
    g.tensorflow(root, pins=g.PINS_215)
    g.wheels(root)
    facts = probe_cuda_libs(root.machine(ENV))
    cudnn_dir = f"{g.SITE}/nvidia/cudnn/lib"
    assert cudnn_dir in facts["runpath"]
    assert facts["libraries"]["cudnn"]["resolved"]["libcudnn.so.8"] == {"path": f"{cudnn_dir}/libcudnn.so.8",
                                                                         "via": "RUNPATH"}
    assert _file(facts, "cudnn", f"{cudnn_dir}/libcudnn.so.8")["wheel_version"] == "8.9.4.25"
    assert facts["tensorflow"]["version"] == "2.15.0"
    assert facts["tensorflow"]["build_info"]["cuda_version"] == "12.2"
    assert 'nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"' in facts["tensorflow"]["requires_dist"]


def test_tensorflow_before_2_14_adds_no_runpath(make_root):
    root = make_root()
    g.tensorflow(root, version="2.13.1", pins={})
    g.wheels(root)
    facts = probe_cuda_libs(root.machine(ENV))
    assert facts["runpath"] == []
    assert "libcudnn.so.8" not in facts["libraries"]["cudnn"]["resolved"]


def test_real_ld_so_cache_built_by_ldconfig_resolves(make_root):
    root = make_root()
    base = g.toolkit(root, "12.2", cudnn="8.9.7")
    if not g.ld_cache(root, [f"{base}/lib64"]):
        pytest.skip("ldconfig is not installed")
    facts = probe_cuda_libs(root.machine(ENV))
    assert facts["ld_cache"]["format"] == "new"
    assert {"soname": "libcudnn.so.8", "path": f"{base}/lib64/libcudnn.so.8", "flags": "libc6,x86-64"} in (
        facts["ld_cache"]["entries"])
    resolved = facts["libraries"]["cudnn"]["resolved"]["libcudnn.so.8"]
    assert resolved == {"path": f"{base}/lib64/libcudnn.so.8", "via": "ld.so.cache"}
    assert _file(facts, "cudnn", f"{base}/lib64/libcudnn.so.8")["header_version"] == "8.9.7"


def test_ld_library_path_wins_over_runpath_and_both_copies_are_listed(make_root):
    root = make_root()
    g.tensorflow(root, pins=g.PINS_215)
    g.wheels(root)
    g.toolkit(root, "12.4")
    facts = probe_cuda_libs(root.machine({**ENV, "LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64"}))
    resolved = facts["libraries"]["cublas"]["resolved"]["libcublas.so.12"]
    assert resolved["path"] == "/usr/local/cuda-12.4/lib64/libcublas.so.12"
    assert resolved["via"] == "LD_LIBRARY_PATH"
    assert resolved["others"] == [f"{g.SITE}/nvidia/cublas/lib/libcublas.so.12"]


def test_broken_link_is_reported(make_root):
    root = make_root()
    root.symlink("/usr/local/cuda-12.2/lib64/libcudnn.so.8", "libcudnn.so.8.9.7")  # the target is gone
    facts = probe_cuda_libs(root.machine(ENV))
    record = _file(facts, "cudnn", "/usr/local/cuda-12.2/lib64/libcudnn.so.8")
    assert record["broken"] is True


def test_resolution_function_follows_the_loader_order(make_root):
    root = make_root()
    for folder in ("/a", "/b", "/c", "/usr/lib/x86_64-linux-gnu"):
        g.lib(root, f"{folder}/libx.so.1")
    fs = RootedFs(root.machine(ENV))
    args = (["/missing", "/b"], ["/a"], [("libx.so.1", "/c/libx.so.1")], ["/usr/lib/x86_64-linux-gnu"], fs.exists)
    assert resolve_library("libx.so.1", *args) == {"path": "/b/libx.so.1", "via": "LD_LIBRARY_PATH"}
    assert resolve_library("libx.so.1", [], *args[1:]) == {"path": "/a/libx.so.1", "via": "RUNPATH"}
    assert resolve_library("libx.so.1", [], [], *args[2:]) == {"path": "/c/libx.so.1", "via": "ld.so.cache"}
    assert resolve_library("libx.so.1", [], [], [], *args[3:])["via"] == "default folder"
    assert resolve_library("liby.so.1", *args) is None


def test_profiling_restriction_and_privileges(make_root):
    root = make_root()
    g.driver(root, profiling_admin_only=1)
    g.process(root, uid=1000, cap_eff="0000000000200000")  # CAP_SYS_ADMIN only
    root.write("/etc/modprobe.d/nvidia.conf", "# comment\noptions nvidia NVreg_RestrictProfilingToAdminUsers=0\n")
    root.write("/run/.containerenv", "")
    facts = probe_privileges(root.machine({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}))
    assert facts == {
        "euid": 1000, "cap_eff": "0000000000200000", "cap_sys_admin": True, "cap_perfmon": False,
        "rm_profiling_admin_only": 1,
        "modprobe_restrict_profiling": [{"file": "/etc/modprobe.d/nvidia.conf", "value": "0"}],
        "container": ["/run/.containerenv", "KUBERNETES_SERVICE_HOST"],
    }


def test_no_driver_means_no_profiling_restriction(make_root):
    root = make_root()
    g.process(root)
    facts = probe_privileges(root.machine({}))
    assert facts["rm_profiling_admin_only"] is None and facts["cap_sys_admin"] is False


def test_nvml_falls_back_to_proc_under_a_fake_root(make_root):
    root = make_root()
    g.driver(root, version="535.104.05", gpus=2)
    facts = probe_nvml(root.machine({}))
    assert facts["source"] == "procfs"
    assert facts["driver_version"] == "535.104.05"
    assert isinstance(facts["cuda_driver_version"], Unknown)
    assert [(d["index"], d["pci_bus_id"], d["name"]) for d in facts["devices"]] == [
        (0, "00000000:3B:00.0", "NVIDIA A100-SXM4-40GB"), (1, "00000000:3C:00.0", "NVIDIA A100-SXM4-40GB")]


def test_nvml_without_driver_is_unknown_with_reason(make_root):
    facts = probe_nvml(make_root().machine({}))
    assert isinstance(facts, Unknown) and "no NVIDIA driver" in facts.reason


def test_pci_lists_nvidia_display_controllers_only(make_root):
    root = make_root()
    g.pci(root, gpus=2)
    root.write("/sys/bus/pci/devices/0000:3b:00.1/vendor", "0x10de\n")  # the card's audio function
    root.write("/sys/bus/pci/devices/0000:3b:00.1/class", "0x040300\n")
    facts = probe_gpu_pci(root.machine({}))
    assert [d["address"] for d in facts["devices"]] == ["0000:3b:00.0", "0000:3c:00.0"]


def test_xla_toolchain_finds_libdevice_and_ptxas_in_order(make_root):
    root = make_root()
    g.tensorflow(root, pins=g.PINS_215)
    g.wheels(root, only=("cuda_nvcc",))
    base = g.toolkit(root, "12.2")
    facts = probe_xla_toolchain(root.machine({**ENV, "XLA_FLAGS": "--xla_gpu_cuda_data_dir=/nowhere"}))
    # Every root some release searches (xla_ptxas.toml [[roots]]): the data dir, /usr/local/cuda, the build
    # toolkits' folders, /opt/cuda, then next to TensorFlow the nvcc wheel, tensorflow/cuda and the prefix.
    assert [c["dir"] for c in facts["candidates"]] == [
        "/nowhere", "/usr/local/cuda", "/usr/local/cuda-11.0", "/usr/local/cuda-11.2", "/usr/local/cuda-11.8",
        base, "/usr/local/cuda-12.3", "/opt/cuda", f"{g.SITE}/nvidia/cuda_nvcc", f"{g.SITE}/tensorflow/cuda",
        g.VENV]
    assert [c["origin"] for c in facts["candidates"]][-3:] == ["pip nvidia-cuda-nvcc", "tensorflow/cuda",
                                                               "environment prefix"]
    assert [c["dir"] for c in facts["candidates"] if c["libdevice_dir"]] == [base, f"{g.SITE}/nvidia/cuda_nvcc"]
    assert facts["libdevice"] == f"{base}/nvvm/libdevice/libdevice.10.bc"  # the release-blind hint
    assert facts["ptxas"] == {"path": f"{base}/bin/ptxas", "version": "12.2.140", "via": base}
    assert facts["libdevice_elsewhere"] == []  # the 12.2 toolkit is a root of 2.15, not an elsewhere
    # TensorFlow 2.15's XLA takes the toolkit it was built against, before the wheel.
    from tfdoctor.derive import xla_libdevice
    from tfdoctor.facts import Facts

    found = xla_libdevice.resolve(Facts({"xla_toolchain": facts}, {}), "2.15.0")
    assert found.path == f"{base}/nvvm/libdevice/libdevice.10.bc"


@pytest.mark.parametrize("flags, expected", [
    (None, None), ("", None), ("--xla_gpu_cuda_data_dir=/opt/cuda", "/opt/cuda"),
    ("--a=1 --xla_gpu_cuda_data_dir /x --xla_gpu_cuda_data_dir=/y", "/y"),
])
def test_parse_data_dir(flags, expected):
    assert parse_data_dir(flags) == expected


def test_parse_ptxas_version():
    text = "ptxas: NVIDIA (R) Ptx optimizing assembler\nCuda compilation tools, release 12.2, V12.2.140\n"
    assert parse_ptxas_version(text) == "12.2.140"
    assert parse_ptxas_version("garbage") is None


def test_python_option_points_at_that_environments_wheels(make_root):
    root = make_root()
    g.tensorflow(root, pins=g.PINS_215, site="/opt/env/lib/python3.11/site-packages")
    g.wheels(root, site="/opt/env/lib/python3.11/site-packages")
    facts = probe_cuda_libs(root.machine({"PATH": "/usr/bin"}, python="/opt/env/bin/python"))
    assert facts["tensorflow"]["site_packages"] == "/opt/env/lib/python3.11/site-packages"
    assert "/opt/env/lib/python3.11/site-packages/nvidia/cudnn/lib" in facts["runpath"]


def test_ptxas_version_from_conda_package_metadata_or_unknown(make_root):
    from tfdoctor.facts import Unknown
    from tfdoctor.facts.probes.xla_toolchain import probe_xla_toolchain

    prefix = "/home/ada/miniconda3/envs/tf"
    root = make_root()
    g.driver(root)
    root.write(f"{prefix}/bin/ptxas", "\x7fELF", mode=0o755)
    root.write(f"{prefix}/conda-meta/cuda-nvcc-11.8.89-0.json", '{"name": "cuda-nvcc", "version": "11.8.89"}')
    root.write("/opt/other/bin/ptxas", "\x7fELF", mode=0o755)
    env = {"PATH": f"{prefix}/bin:/opt/other/bin:/usr/bin", "CONDA_PREFIX": prefix}
    facts = probe_xla_toolchain(root.machine(env))
    conda, other = facts["path_ptxas"]
    assert conda == {"path": f"{prefix}/bin/ptxas", "version": "11.8.89"}
    assert isinstance(other["version"], Unknown) and "not run under --root" in other["version"].reason



def test_a_fifo_in_place_of_build_info_is_unknown_not_waited_on(tmp_path):
    """build_info.py is read by the CUDA-library probe: a FIFO there (a hostile or broken tree) is an
    unknown with its reason, at once; the fallback parser used to open() it and block forever."""
    import os
    import time

    from tfdoctor.facts.probes.cuda_libs import read_tf_build_info

    fifo = tmp_path / "build_info.py"
    os.mkfifo(fifo)
    started = time.monotonic()
    found = read_tf_build_info(str(fifo))
    assert time.monotonic() - started < 5
    assert set(found) == {"$unknown"} and found["$unknown"].endswith("is not a regular file")
