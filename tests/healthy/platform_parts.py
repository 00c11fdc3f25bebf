"""Building blocks of Jetson boards and Macs, as parts.py's are of servers, shaped as the real ones are
(issue 36): the L4T release line and device-tree model of real boards, the Tegra libraries and device
nodes; a Mac's SystemVersion.plist and the answers `sysctl` printed on real Macs (native Apple silicon, a
process under Rosetta 2, an Intel Mac). Used by tests/healthy/machines_platforms.py,
tests/reports/reports_platforms.py and the probe and check tests."""

from __future__ import annotations

from support.fake_site_packages import FakeSitePackages

from tfdoctor.facts.probes.darwin import RECORDED_SYSCTL, SYSTEM_VERSION
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.elf import shared_object

from . import parts
from .parts import PythonEnv

# -- Jetson ---------------------------------------------------------------------------------------------

# /etc/nv_tegra_release of each L4T release as NVIDIA's images write it (first line; the rest are sha1sums).
L4T_32_7_1 = ("# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t210ref, EABI: aarch64, "
              "DATE: Sat Feb 19 17:05:08 UTC 2022\n")
L4T_35_4_1 = ("# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, "
              "DATE: Tue Aug  1 19:57:35 UTC 2023\n")
L4T_36_3_0 = ("# R36 (release), REVISION: 3.0, GCID: 36191598, BOARD: generic, EABI: aarch64, "
              "DATE: Mon May  6 17:34:21 UTC 2024\n")
# JetPack 5.1.3: the line tier4/ota-client quotes in tests/test_otaclient/test_boot_control/test_jetson_common.py
# (test_parse_nv_tegra_release), next to the R35.4.1 line above, character for character.
L4T_35_5_0 = ("# R35 (release), REVISION: 5.0, GCID: 35550185, BOARD: t186ref, EABI: aarch64, "
              "DATE: Tue Feb 20 04:46:31 UTC 2024\n")
# JetPack 6.2 on a Jetson Orin NX 16GB (Super), the whole file as `cat /etc/nv_tegra_release` printed it in
# silenzio777/silenzio_robot_library README.md (jtop there: L4T 36.4.3, JetPack 6.2, CUDA 12.6.68, cuDNN
# 9.3.0.75, TensorRT 10.3.0.30, kernel 5.15.148-tegra, Python 3.10.12). R36 files end with these lines,
# not with the checksums of R32/R35.
L4T_36_4_3 = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
              "DATE: Wed Jan  8 01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n"
              "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
# JetPack 6.2.1 on a Jetson Orin Nano: viamrobotics/rdk config/platform_test.go ("verbatim from a JetPack 6
# Jetson Orin Nano").
L4T_36_4_4 = ("# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, "
              "DATE: Mon Jun 16 16:07:13 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n")
KNOWN_FILES = ("# KNOWN_CONFIGS\n"
               "fef8dbc03c3df8a2a6f3b3e5a1c4ed8f2df0e9a1 */usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1.1\n")
ORIN_AGX = "NVIDIA Jetson AGX Orin Developer Kit"
ORIN_NX = "NVIDIA Jetson Orin NX Engineering Reference Developer Kit"
ORIN_NX_SUPER = "NVIDIA Jetson Orin NX Engineering Reference Developer Kit Super"  # JetPack 6.2's name for it
NANO = "NVIDIA Jetson Nano Developer Kit"
# The Cortex-A78AE cores of Orin (CPU part 0xd42) and the Cortex-A57 of the Nano (0xd07), as /proc/cpuinfo lists them.
A78AE_FEATURES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop "
                  "asimddp uscat ilrcpc flagm paca pacg")
A57_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"
UBUNTU_2004 = ('NAME="Ubuntu"\nVERSION="20.04.6 LTS (Focal Fossa)"\nID=ubuntu\nID_LIKE=debian\n'
               'PRETTY_NAME="Ubuntu 20.04.6 LTS"\nVERSION_ID="20.04"\n')
UBUNTU_1804 = ('NAME="Ubuntu"\nVERSION="18.04.6 LTS (Bionic Beaver)"\nID=ubuntu\nID_LIKE=debian\n'
               'PRETTY_NAME="Ubuntu 18.04.6 LTS"\nVERSION_ID="18.04"\n')


def jetson(root: FakeRoot, model: str = ORIN_AGX, release: str = L4T_36_3_0, cores: int = 12,
           features: str = A78AE_FEATURES, part: str = "0xd42", kernel: str = "5.15.136-tegra",
           os_release: str = parts.UBUNTU_2204, mem_gib: int = 64) -> FakeRoot:
    """A Jetson board as L4T installs it: the release file, the NUL-terminated device-tree model (procfs and
    sysfs), libcuda and the driver libraries in the tegra folder (on the loader's path through
    nvidia-tegra.conf), the GPU's nvhost device nodes, aarch64 CPUs without a frequency governor file per
    CPU, and no NVIDIA function on any PCI bus."""
    root.cpus(1, cores, 1, flags=features.split(), model="ARMv8 Processor rev 1 (v8l)", vendor="0x41")
    root.write("/proc/cpuinfo", "\n".join(
        f"processor\t: {cpu}\nmodel name\t: ARMv8 Processor rev 1 (v8l)\nBogoMIPS\t: 62.50\nFeatures\t: {features}\n"
        f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: {part}\nCPU revision\t: 1\n"
        for cpu in range(cores)) + "\n")
    root.write("/proc/sys/kernel/arch", "aarch64\n").write("/proc/sys/kernel/osrelease", f"{kernel}\n")
    parts.process(root)
    parts.operating_system(root, "jetson", os_release=os_release, mem_gib=mem_gib, nic="eth0", nic_mbps=1000,
                           cmdline="root=/dev/mmcblk0p1 rw rootwait rootfstype=ext4 console=ttyTCU0,115200n8",
                           pci_others=False)
    # One line (R32, R35) is followed by the checksums of the driver files; a quoted R36 file is whole.
    root.write("/etc/nv_tegra_release", release + KNOWN_FILES if release.count("\n") == 1 else release)
    root.write("/proc/device-tree/model", model + "\0")
    root.write("/sys/firmware/devicetree/base/model", model + "\0")
    tegra = "/usr/lib/aarch64-linux-gnu/tegra"
    root.write(f"{tegra}/libcuda.so.1.1", shared_object("libcuda.so.1", machine="aarch64"))
    root.symlink(f"{tegra}/libcuda.so", "libcuda.so.1.1")
    root.write(f"{tegra}/libnvrm_gpu.so", shared_object("libnvrm_gpu.so", machine="aarch64"))
    root.write("/etc/ld.so.conf.d/nvidia-tegra.conf", f"{tegra}\n/usr/lib/aarch64-linux-gnu/tegra-egl\n")
    for node in ("nvhost-ctrl", "nvhost-ctrl-gpu", "nvhost-gpu", "nvhost-as-gpu", "nvhost-dbg-gpu", "nvhost-prof-gpu",
                 "nvmap"):
        root.write(f"/dev/{node}", "")
    # The SoC's PCIe root port (an NVMe behind it), none of it an NVIDIA GPU.
    root.pci_gpu("0004:00:00.0", -1, "", vendor="0x10de", pci_class="0x060400")
    return root


JETSON_ENV = PythonEnv("/home/nvidia/venv", version="3.10.12", arch="aarch64")
JETSON_USER = {"HOME": "/home/nvidia", "USER": "nvidia", "VIRTUAL_ENV": JETSON_ENV.prefix,
               "PATH": f"{JETSON_ENV.prefix}/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"}
# TensorFlow 2.15's Requires-Dist without the PyPI release's platform shims (tensorflow-cpu-aws on Linux
# aarch64, tensorflow-intel on Windows) and its and-cuda extra: what a build from the TensorFlow sources,
# as NVIDIA's, declares.
TF_2_15_SOURCE_REQUIRES = tuple(r for r in parts.TF_2_15_REQUIRES if "platform_system" not in r and "extra" not in r)


def build_info(cuda: str | None, cudnn: str | None = None, caps: tuple[str, ...] = ()) -> str:
    entries = [("is_cuda_build", cuda is not None), ("is_rocm_build", False), ("is_tensorrt_build", cuda is not None)]
    if cuda:
        entries += [("cuda_compute_capabilities", list(caps)), ("cuda_version", cuda), ("cudnn_version", cudnn)]
    return ("import collections\n\nbuild_info = collections.OrderedDict("
            f"{sorted(entries)!r})\n")


def nvidia_jetson_tensorflow(root: FakeRoot, env: PythonEnv, version: str = "2.15.0+nv24.05", cuda: str = "12.2",
                             cudnn: str = "8", requires_python: str = ">=3.9",
                             requires: tuple[str, ...] = TF_2_15_SOURCE_REQUIRES,
                             dependencies: dict[str, str] | None = None) -> FakeSitePackages:
    """`pip install --extra-index-url https://developer.download.nvidia.com/compute/redist/jp/v60
    tensorflow==2.15.0+nv24.05`: NVIDIA's build for the board's GPU (sm_87), tagged linux_aarch64."""
    cp = "cp" + "".join(env.version.split(".")[:2])
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version=version, build_info=build_info(cuda, cudnn, ("sm_72", "sm_87")),
                    requires=requires, requires_python=requires_python, tags=(f"{cp}-{cp}-linux_aarch64",))
    for dist, dist_version in (parts.TF_2_15_DEPENDENCIES if dependencies is None else dependencies).items():
        site.dist(dist, dist_version, top_level=(dist,))
    return site


def pypi_aarch64_tensorflow(root: FakeRoot, env: PythonEnv, version: str, name: str = "tensorflow",
                            requires: tuple[str, ...] = ()) -> FakeSitePackages:
    """A PyPI aarch64 wheel of TensorFlow: a CPU-only build (is_cuda_build False), manylinux2014_aarch64."""
    cp = "cp" + "".join(env.version.split(".")[:2])
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.tensorflow(name=name, version=version, build_info=build_info(None), requires=requires,
                    requires_python=">=3.8", tags=(f"{cp}-{cp}-manylinux_2_17_aarch64",
                                                   f"{cp}-{cp}-manylinux2014_aarch64"))
    return site


# -- Macs -----------------------------------------------------------------------------------------------

def system_version(version: str, build: str) -> str:
    """/System/Library/CoreServices/SystemVersion.plist as macOS writes it."""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
            '<plist version="1.0">\n<dict>\n'
            f'\t<key>BuildID</key>\n\t<string>{build}-0</string>\n'
            f'\t<key>ProductBuildVersion</key>\n\t<string>{build}</string>\n'
            '\t<key>ProductCopyright</key>\n\t<string>1983-2024 Apple Inc.</string>\n'
            '\t<key>ProductName</key>\n\t<string>macOS</string>\n'
            f'\t<key>ProductUserVisibleVersion</key>\n\t<string>{version}</string>\n'
            f'\t<key>ProductVersion</key>\n\t<string>{version}</string>\n'
            '\t<key>iOSSupportVersion</key>\n\t<string>17.4</string>\n'
            '</dict>\n</plist>\n')


SONOMA = system_version("14.4.1", "23E224")
MONTEREY = system_version("12.6", "21G115")
SEQUOIA = system_version("15.0", "24A335")
# The answers of real Macs to the names the darwin probe asks for, quoted line by line from public
# recordings (in the recording's order; sysctl leaves out, with a message on stderr, a name it does not
# know). A name the recording does not hold is left out, not made up: hw.machine and kern.* are not in
# these two (`sysctl -a` lists neither), so host.arch and host.kernel are unknown on these fake Macs.
#
# A native arm64 process on an M3 Max (10 performance + 4 efficiency cores, 36 GiB), macOS Sequoia:
# archspec/archspec-json tests/targets/darwin-sequoia-m3 (commit e66bda84155a2ac23672fafceccd752fdb2390a6):
# no machdep.cpu.features (no x86 flags), no hw.optional.avx*. sysctl.proc_translated of a native process:
# Homebrew/brew#9252 ("% arch -arm64 sysctl sysctl.proc_translated" / "sysctl.proc_translated: 0").
M3_MAX_NATIVE = ("hw.memsize: 38654705664\nhw.optional.arm64: 1\nhw.physicalcpu: 14\nhw.logicalcpu: 14\n"
                 "machdep.cpu.brand_string: Apple M3 Max\nsysctl.proc_translated: 0\n")
# An x86_64 process under Rosetta 2 on an M1 (Mac mini, hw.targettype J274; 4 + 4 cores, 16 GiB), macOS
# Monterey: archspec/archspec-json tests/targets/rossetta2-monterey-core2 (commit
# 4a906a1e056b6101e058efdd78b8c21785cfe294), the recording of archspec/archspec#133. Rosetta presents SSE up
# to 4.2 and AES, no AVX (hw.optional.avx1_0/avx2_0/avx512f: 0, no AVX1.0 in machdep.cpu.features), and the
# host's brand string; machdep.cpu.vendor and leaf7_features are unknown oids there (spack/spack#30077
# shows the same features line and "sysctl: unknown oid 'machdep.cpu.vendor'" on an M1 Pro under Rosetta).
# sysctl.proc_translated of a translated process: Homebrew/brew#9252 ("% arch -x86_64 sysctl
# sysctl.proc_translated" / "sysctl.proc_translated: 1").
M1_ROSETTA = ("hw.memsize: 17179869184\nhw.optional.avx1_0: 0\nhw.optional.avx2_0: 0\n"
              "hw.optional.avx512f: 0\nhw.optional.arm64: 1\nhw.physicalcpu: 8\nhw.logicalcpu: 8\n"
              "machdep.cpu.brand_string: Apple M1\n"
              "machdep.cpu.features: FPU VME DE PSE TSC MSR PAE MCE CX8 APIC SEP MTRR PGE MCA CMOV PAT PSE36 CLFSH "
              "DS ACPI MMX FXSR SSE SSE2 SS HTT TM PBE SSE3 PCLMULQDQ DTSE64 MON DSCPL VMX EST TM2 SSSE3 CX16 TPR "
              "PDCM SSE4.1 SSE4.2 AES SEGLIM64\n"
              "sysctl.proc_translated: 1\n")
# An Intel Mac (MacBook Pro 2019, Core i9-9880H): sysctl.proc_translated unknown there (no Rosetta).
I9_9880H = ("hw.machine: x86_64\nmachdep.cpu.brand_string: Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz\n"
            "machdep.cpu.vendor: GenuineIntel\n"
            "machdep.cpu.features: FPU VME DE PSE TSC MSR PAE MCE CX8 APIC SEP MTRR PGE MCA CMOV PAT PSE36 CLFSH "
            "DS ACPI MMX FXSR SSE SSE2 SS HTT TM PBE SSE3 PCLMULQDQ DTES64 MON DSCPL VMX EST TM2 SSSE3 FMA CX16 TPR "
            "PDCM SSE4.1 SSE4.2 x2APIC MOVBE POPCNT AES PCID XSAVE OSXSAVE SEGLIM64 TSCTMR AVX1.0 RDRAND F16C\n"
            "machdep.cpu.leaf7_features: RDWRFSGS TSC_THREAD_OFFSET SGX BMI1 AVX2 SMEP BMI2 ERMS INVPCID FPU_CSDS "
            "MPX RDSEED ADX SMAP CLFSOPT IPT SGXLC MDCLEAR IBRS STIBP L1DF ACAPMSR SSBD\n"
            "hw.optional.avx1_0: 1\nhw.optional.avx2_0: 1\nhw.optional.avx512f: 0\nhw.physicalcpu: 8\n"
            "hw.logicalcpu: 16\nhw.memsize: 17179869184\nkern.osrelease: 21.6.0\nkern.osproductversion: 12.6\n")


def mac(root: FakeRoot, sysctl: str = M3_MAX_NATIVE, version: str = SEQUOIA) -> FakeRoot:
    """A Mac: SystemVersion.plist and the recorded sysctl answers (docs/adding-a-fact.md); no /proc, no /sys."""
    root.write(SYSTEM_VERSION, version)
    return root.write(RECORDED_SYSCTL, sysctl)


MAC_HOME = "/Users/ada"
MAC_ARM_ENV = PythonEnv(f"{MAC_HOME}/venv-metal", version="3.11.9", arch="arm64", system="darwin",
                        base_prefix="/opt/homebrew/opt/python@3.11/Frameworks/Python.framework/Versions/3.11")
MAC_USER = {"HOME": MAC_HOME, "USER": "ada", "VIRTUAL_ENV": MAC_ARM_ENV.prefix,
            "PATH": f"{MAC_ARM_ENV.prefix}/bin:/opt/homebrew/bin:/usr/bin:/bin:/usr/sbin:/sbin"}


def mac_wheel_tag(env: PythonEnv, minimum: str = "12_0") -> str:
    cp = "cp" + "".join(env.version.split(".")[:2])
    return f"{cp}-{cp}-macosx_{minimum}_{env.arch}"


# What `pip install tensorflow==<release>` resolved beside each release these machines install (the
# versions current when the release was), so that the environment is complete as pip leaves it.
RESOLVED = {
    # Python 3.8 on aarch64, mid-2023 (TensorFlow 2.12 pins numpy<=1.24.3, typing-extensions<4.6, wrapt<1.15
    # and requires jax).
    "2.12": {"absl_py": "1.4.0", "astunparse": "1.6.3", "flatbuffers": "23.5.26", "gast": "0.4.0",
             "google_pasta": "0.2.0", "grpcio": "1.56.0", "h5py": "3.9.0", "jax": "0.4.13", "keras": "2.12.0",
             "libclang": "16.0.0", "ml_dtypes": "0.2.0", "numpy": "1.23.5", "opt_einsum": "3.3.0",
             "packaging": "23.1", "protobuf": "4.23.4", "scipy": "1.10.1", "setuptools": "68.0.0", "six": "1.16.0",
             "tensorboard": "2.12.3", "tensorflow_estimator": "2.12.0", "termcolor": "2.3.0",
             "typing_extensions": "4.5.0", "wrapt": "1.14.1", "tensorflow_io_gcs_filesystem": "0.32.0"},
    "2.10": {"absl_py": "1.3.0", "astunparse": "1.6.3", "flatbuffers": "22.11.23", "gast": "0.4.0",
             "google_pasta": "0.2.0", "grpcio": "1.51.1", "h5py": "3.7.0", "keras": "2.10.0",
             "keras_preprocessing": "1.1.2", "libclang": "14.0.6", "numpy": "1.23.5", "opt_einsum": "3.3.0",
             "packaging": "22.0", "protobuf": "3.19.6", "setuptools": "65.6.3", "six": "1.16.0",
             "tensorboard": "2.10.0", "tensorflow_io_gcs_filesystem": "0.28.0", "tensorflow_estimator": "2.10.0",
             "termcolor": "2.1.1", "typing_extensions": "4.4.0", "wrapt": "1.14.1"},
    "2.9": {"absl_py": "1.3.0", "astunparse": "1.6.3", "flatbuffers": "1.12", "gast": "0.4.0",
            "google_pasta": "0.2.0", "grpcio": "1.50.0", "h5py": "3.7.0", "keras": "2.9.0",
            "keras_preprocessing": "1.1.2", "libclang": "14.0.6", "numpy": "1.23.4", "opt_einsum": "3.3.0",
            "packaging": "21.3", "protobuf": "3.19.6", "setuptools": "65.5.0", "six": "1.16.0",
            "tensorboard": "2.9.1", "tensorflow_io_gcs_filesystem": "0.27.0", "tensorflow_estimator": "2.9.0",
            "termcolor": "2.1.0", "typing_extensions": "4.4.0", "wrapt": "1.14.1"},
    "2.13": {"absl_py": "2.0.0", "astunparse": "1.6.3", "flatbuffers": "23.5.26", "gast": "0.4.0",
             "google_pasta": "0.2.0", "grpcio": "1.60.0", "h5py": "3.10.0", "keras": "2.13.1", "libclang": "16.0.6",
             "numpy": "1.24.3", "opt_einsum": "3.3.0", "packaging": "23.2", "protobuf": "4.25.1",
             "setuptools": "69.0.3", "six": "1.16.0", "tensorboard": "2.13.0", "tensorflow_estimator": "2.13.0",
             "termcolor": "2.4.0", "typing_extensions": "4.5.0", "wrapt": "1.16.0",
             "tensorflow_io_gcs_filesystem": "0.34.0"},
    "2.16": {"absl_py": "2.1.0", "astunparse": "1.6.3", "flatbuffers": "24.3.25", "gast": "0.5.4",
             "google_pasta": "0.2.0", "h5py": "3.11.0", "libclang": "18.1.1", "ml_dtypes": "0.3.2",
             "opt_einsum": "3.3.0", "packaging": "24.0", "protobuf": "4.25.3", "requests": "2.31.0",
             "setuptools": "69.5.1", "six": "1.16.0", "termcolor": "2.4.0", "typing_extensions": "4.11.0",
             "wrapt": "1.16.0", "grpcio": "1.62.2", "tensorboard": "2.16.2", "keras": "3.3.3",
             "tensorflow_io_gcs_filesystem": "0.37.0", "numpy": "1.26.4"},
    "2.18": {"absl_py": "2.1.0", "astunparse": "1.6.3", "flatbuffers": "24.3.25", "gast": "0.6.0",
             "google_pasta": "0.2.0", "libclang": "18.1.1", "opt_einsum": "3.4.0", "packaging": "24.2",
             "protobuf": "5.29.0", "requests": "2.32.3", "setuptools": "75.6.0", "six": "1.16.0",
             "termcolor": "2.5.0", "typing_extensions": "4.12.2", "wrapt": "1.17.0", "grpcio": "1.68.0",
             "tensorboard": "2.18.0", "keras": "3.7.0", "numpy": "2.0.2", "h5py": "3.12.1", "ml_dtypes": "0.4.1",
             "tensorflow_io_gcs_filesystem": "0.37.1", "wheel": "0.45.1"},
}


def resolved(site: FakeSitePackages, release: str, installer: str = "pip") -> FakeSitePackages:
    """The dependencies pip (or conda) resolved beside TensorFlow `release` ("2.13"), as dist-info folders."""
    for name, version in RESOLVED[release].items():
        site.dist(name, version, top_level=(name,), installer=installer)
    return site


# -- conda environments -----------------------------------------------------------------------------------

CONDA_FORGE_URL = "https://conda.anaconda.org/conda-forge"
DEFAULTS_URL = "https://repo.anaconda.com/pkgs/main"


def conda_record(root: FakeRoot, prefix: str, name: str, version: str, build: str, channel: str,
                 subdir: str = "linux-64", files: tuple[str, ...] = ()) -> FakeRoot:
    """<prefix>/conda-meta/<name>-<version>-<build>.json as conda 23/24 writes it: keys sorted, "channel" a
    URL with the subdir, the package's files and paths_data in the middle, "url" the package fetched."""
    import json

    fn = f"{name}-{version}-{build}.conda"
    record = {
        "build": build, "build_number": int(build.rsplit("_", 1)[-1]) if build.rsplit("_", 1)[-1].isdigit() else 0,
        "channel": f"{channel}/{subdir}", "constrains": [], "depends": [],
        "extracted_package_dir": f"{prefix.rsplit('/envs/', 1)[0]}/pkgs/{fn[:-6]}",
        "features": "", "files": list(files),
        "fn": fn, "license": "Apache-2.0", "link": {"source": f"/opt/conda/pkgs/{fn[:-6]}", "type": 1},
        "md5": "0" * 32, "name": name,
        "package_tarball_full_path": f"/opt/conda/pkgs/{fn}",
        "paths_data": {"paths": [{"_path": f, "path_type": "hardlink", "sha256": "0" * 64, "size_in_bytes": 1}
                                 for f in files], "paths_version": 1},
        "requested_spec": "", "sha256": "0" * 64, "size": 1024, "subdir": subdir, "timestamp": 1700000000000,
        "track_features": "", "url": f"{channel}/{subdir}/{fn}", "version": version,
    }
    text = json.dumps(record, indent=2, sort_keys=True)
    return root.write(f"{prefix}/conda-meta/{name}-{version}-{build}.json", text)
