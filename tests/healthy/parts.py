"""Building blocks of healthy machines, shaped as the real files are: /proc/cpuinfo flags of real CPU
models, /proc/self/status with real capability masks, /etc/os-release, /proc/mounts, the network files,
Python environments with real dist-info. GPU parts (driver, toolkits, pip wheels, ld.so.cache) are
those of tests/support/gpu_scenarios.py; topology parts those of FakeRoot (tfdoctor/testing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from support.fake_site_packages import TF_2_21_REQUIRES, FakeSitePackages, record_line

from tfdoctor.facts.parse import parse_cpulist
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

# -- CPUs: the flags line of /proc/cpuinfo as these models print it (kernel 6.x) ----------------------------

@dataclass(frozen=True)
class CpuModel:
    model: str
    vendor: str
    flags: str


_X86_BASE = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ")
_INTEL_SERVER = _X86_BASE + (
    "ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology "
    "nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr "
    "pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm "
    "3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp "
    "ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms "
    "invpcid cqm mpx rdt_a avx512f avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw "
    "avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat "
    "pln pts hwp hwp_act_window hwp_epp hwp_pkg_req pku ospke avx512_vnni md_clear flush_l1d arch_capabilities"
)
# Cascade Lake (Xeon Gold 6248R): AVX-512 with VNNI, no bf16.
CASCADE_LAKE = CpuModel("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", "GenuineIntel", _INTEL_SERVER)
# Sapphire Rapids (Xeon Platinum 8480+): AVX-512 bf16/fp16 and AMX.
SAPPHIRE_RAPIDS = CpuModel(
    "Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel",
    _INTEL_SERVER.replace(" hle", "").replace(" mpx", "")
    + " avx512vbmi umip waitpkg avx512_vbmi2 gfni vaes vpclmulqdq avx512_bitalg tme avx512_vpopcntdq la57 "
    "rdpid bus_lock_detect cldemote movdiri movdir64b enqcmd fsrm uintr avx512_vp2intersect serialize tsxldtrk "
    "pconfig arch_lbr ibt amx_bf16 avx512_fp16 amx_tile amx_int8 avx_vnni avx512_bf16 wbnoinvd",
)
# Tiger Lake laptop (Core i7-1185G7).
TIGER_LAKE = CpuModel(
    "11th Gen Intel(R) Core(TM) i7-1185G7 @ 3.00GHz", "GenuineIntel",
    _X86_BASE + "ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl "
    "xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 "
    "ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c "
    "rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l2 invpcid_single cdp_l2 ssbd ibrs ibpb stibp "
    "ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid "
    "rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb intel_pt avx512cd sha_ni avx512bw "
    "avx512vl xsaveopt xsavec xgetbv1 xsaves split_lock_detect dtherm ida arat pln pts hwp hwp_notify "
    "hwp_act_window hwp_epp hwp_pkg_req avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq "
    "avx512_vnni avx512_bitalg tme avx512_vpopcntdq rdpid movdiri movdir64b fsrm avx512_vp2intersect md_clear "
    "ibt flush_l1d arch_capabilities",
)
_AMD_ZEN = _X86_BASE + (
    "ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid "
    "aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx "
    "f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit "
    "wdt tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba ibrs "
    "ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a rdseed adx smap clflushopt clwb "
    "sha_ni xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf "
    "xsaveerptr rdpru wbnoinvd amd_ppin arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid "
    "decodeassists pausefilter pfthreshold v_vmsave_vmload vgif v_spec_ctrl umip rdpid overflow_recov succor smca"
)
# Rome (EPYC 7742, the DGX A100's CPU): AVX2, no AVX-512.
ROME = CpuModel("AMD EPYC 7742 64-Core Processor", "AuthenticAMD", _AMD_ZEN + " sme sev sev_es")
# Milan (EPYC 7763): as Rome, plus vaes/vpclmulqdq/pku.
MILAN = CpuModel("AMD EPYC 7763 64-Core Processor", "AuthenticAMD",
                 _AMD_ZEN + " pku ospke vaes vpclmulqdq fsrm sme sev sev_es")
# Genoa (EPYC 9654): AVX-512 with bf16.
GENOA = CpuModel(
    "AMD EPYC 9654 96-Core Processor", "AuthenticAMD",
    _AMD_ZEN + " avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi pku ospke "
    "avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq la57 fsrm flush_l1d sme sev",
)
# Zen 4 desktop (Ryzen 9 7950X) as Hyper-V shows it to a WSL2 guest: hypervisor flag, no svm.
RAPHAEL_WSL = CpuModel(
    "AMD Ryzen 9 7950X 16-Core Processor", "AuthenticAMD",
    _X86_BASE + "ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl tsc_reliable "
    "nonstop_tsc cpuid extd_apicid pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c "
    "rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext ssbd ibrs "
    "ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma "
    "clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512_bf16 clzero "
    "xsaveerptr arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg "
    "avx512_vpopcntdq rdpid fsrm",
)
# Neoverse N1 (AWS Graviton2) flags, for an aarch64 host.
NEOVERSE_N1 = CpuModel("Neoverse-N1", "ARM", "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp "
                                             "cpuid asimdrdm lrcpc dcpop asimddp ssbs")


def cpus(root: FakeRoot, model: CpuModel, sockets: int = 1, cores_per_socket: int = 4, threads_per_core: int = 2,
         governor: str | None = "performance") -> FakeRoot:
    """Topology and cpuinfo through FakeRoot.cpus (Linux numbering), with this model's flags."""
    root.cpus(sockets, cores_per_socket, threads_per_core, flags=model.flags.split(), model=model.model,
              vendor=model.vendor, governor=governor)
    # One NUMA node per socket (Linux numbering: a socket's first threads, then their siblings).
    per_socket = sockets * cores_per_socket
    first = [[t * per_socket + s * cores_per_socket for t in range(threads_per_core)] for s in range(sockets)]
    return root.numa([",".join(f"{c}-{c + cores_per_socket - 1}" for c in starts) for starts in first])


def gpu_placement(root: FakeRoot, bus_id: str, numa_node: int) -> FakeRoot:
    """numa_node and local_cpulist of a GPU's PCI function, as sysfs has them: the node's CPUs."""
    base = f"/sys/bus/pci/devices/{bus_id}"
    cpulist = (root.path / f"sys/devices/system/node/node{max(numa_node, 0)}/cpulist").read_text()
    return root.write(f"{base}/numa_node", f"{numa_node}\n").write(f"{base}/local_cpulist", cpulist)


# -- the process: /proc/self/status with its identity, capabilities and affinity --------------------------

CAP_NONE = "0000000000000000"  # an unprivileged user
CAP_HOST_ROOT = "000001ffffffffff"  # root on the host (CAP_LAST_CAP 40): also docker --privileged
CAP_DOCKER_DEFAULT = "00000000a80425fb"  # Docker's / containerd's default set for root in a container
CAP_DOCKER_SYS_ADMIN = "00000000a82425fb"  # the default set plus --cap-add SYS_ADMIN (bit 21)


def process(root: FakeRoot, uid: int = 1000, cap_eff: str = CAP_NONE, cap_bnd: str | None = None,
            cpus_allowed: str | None = None, mems_allowed: str | None = None) -> FakeRoot:
    """/proc/self/status as the kernel writes it. CPU and memory lists default to what the tree's
    /sys/devices/system/cpu/online and node/online say (an unbound process)."""
    def online(path: str, default: str) -> str:
        target = root.path / path.lstrip("/")
        return target.read_text().strip() if target.exists() else default

    cpu_list = cpus_allowed or online("/sys/devices/system/cpu/online", "0")
    mem_list = mems_allowed or online("/sys/devices/system/node/online", "0")
    cpu_mask = sum(1 << c for c in parse_cpulist(cpu_list))
    mem_mask = sum(1 << m for m in parse_cpulist(mem_list))
    bounding = cap_bnd or (CAP_HOST_ROOT if cap_eff in (CAP_NONE, CAP_HOST_ROOT) else cap_eff)
    return root.write("/proc/self/status", (
        "Name:\tpython3\nUmask:\t0022\nState:\tR (running)\nTgid:\t48213\nNgid:\t0\nPid:\t48213\nPPid:\t48190\n"
        f"TracerPid:\t0\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\nFDSize:\t64\n"
        "VmPeak:\t  315528 kB\nVmRSS:\t   98236 kB\nThreads:\t1\n"
        "SigQ:\t0/513445\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
        f"CapInh:\t0000000000000000\nCapPrm:\t{cap_eff}\nCapEff:\t{cap_eff}\nCapBnd:\t{bounding}\n"
        "CapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n"
        "Speculation_Store_Bypass:\tthread vulnerable\n"
        f"Cpus_allowed:\t{cpu_mask:x}\nCpus_allowed_list:\t{cpu_list}\n"
        f"Mems_allowed:\t{mem_mask:08x}\nMems_allowed_list:\t{mem_list}\n"
        "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t1\n"))


# -- the operating system and its files -----------------------------------------------------------------

UBUNTU_2204 = ('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
               'VERSION="22.04.4 LTS (Jammy Jellyfish)"\nID=ubuntu\nID_LIKE=debian\n')
DEBIAN_12 = ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
             'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n')
ROCKY_9 = ('NAME="Rocky Linux"\nVERSION="9.3 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
           'VERSION_ID="9.3"\nPRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"\n')


def operating_system(root: FakeRoot, hostname: str, os_release: str = UBUNTU_2204, mem_gib: int = 64,
                     shm: str | None = None, address: str = "10.0.0.12", nic: str = "eno1", nic_mbps: int = 25000,
                     cmdline: str = "BOOT_IMAGE=/boot/vmlinuz-6.5.0-35-generic root=UUID=3b1f ro quiet splash",
                     pci_others: bool = True) -> FakeRoot:
    """os-release, meminfo, mounts (/dev/shm tmpfs: `shm` is its size= option, None for the default half
    of RAM), kernel command line, host name and address, one NIC, and the chipset's PCI functions."""
    mem_kib = mem_gib * 1024 * 1024
    shm_options = f"rw,nosuid,nodev,inode64{',size=' + shm if shm else ''}"
    root.write("/etc/os-release", os_release)
    root.write("/proc/meminfo", f"MemTotal:       {mem_kib} kB\nMemFree:        {mem_kib // 2} kB\n"
                                f"MemAvailable:   {mem_kib * 3 // 4} kB\n")
    root.write("/proc/mounts", "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
                               "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
                               "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
                               f"tmpfs /dev/shm tmpfs {shm_options} 0 0\n"
                               "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n")
    root.write("/proc/cmdline", cmdline + "\n")
    root.write("/proc/sys/kernel/hostname", hostname + "\n")
    root.write("/etc/hosts", f"127.0.0.1\tlocalhost\n{address}\t{hostname}.cluster.local {hostname}\n"
                             "::1\tlocalhost ip6-localhost ip6-loopback\n")
    root.write("/proc/net/fib_trie", _fib_trie(address))
    root.write("/proc/net/if_inet6", "00000000000000000000000000000001 01 80 10 80       lo\n")
    root.write("/sys/class/net/lo/operstate", "unknown\n")
    root.write(f"/sys/class/net/{nic}/operstate", "up\n").write(f"/sys/class/net/{nic}/speed", f"{nic_mbps}\n")
    if pci_others:
        # The chipset: a SATA controller and a NIC, so that a host without GPUs shows a PCI bus without NVIDIA.
        root.pci_gpu("0000:00:17.0", -1, "", vendor="0x8086", pci_class="0x010601")
        root.pci_gpu("0000:00:1f.6", -1, "", vendor="0x8086", pci_class="0x020000")
    return root


def _fib_trie(address: str) -> str:
    net = ".".join(address.split(".")[:3]) + ".0"
    return ("Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n"
            f"     +-- {net}/24 2 0 2\n        |-- {net}\n           /24 link UNICAST\n"
            f"        |-- {address}\n           /32 host LOCAL\n"
            "  +-- 127.0.0.0/8 2 0 2\n     |-- 127.0.0.1\n        /32 host LOCAL\n")


def keras_json(root: FakeRoot, home: str, data_format: str = "channels_last", floatx: str = "float32") -> FakeRoot:
    """~/.keras/keras.json as Keras writes it on first import."""
    return root.write(f"{home}/.keras/keras.json", (
        f'{{\n    "floatx": "{floatx}",\n    "epsilon": 1e-07,\n    "backend": "tensorflow",\n'
        f'    "image_data_format": "{data_format}"\n}}'))


# -- Python environments -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PythonEnv:
    """A Python environment inside the tree: where its site-packages are and which interpreter runs it."""

    prefix: str  # the venv or conda env ("/home/ada/venv")
    version: str = "3.11.9"
    base_prefix: str = "/usr"
    arch: str = "x86_64"  # platform.machine() of the interpreter
    system: str = "linux"  # sys.platform of the interpreter ("darwin" on a Mac)

    @property
    def site(self) -> str:
        major_minor = ".".join(self.version.split(".")[:2])
        return f"{self.prefix}/lib/python{major_minor}/site-packages"

    @property
    def executable(self) -> str:
        return f"{self.prefix}/bin/python"


# TensorFlow 2.15.1 (the last Keras 2 release; built with CUDA 12.2 and cuDNN 8.9), as its METADATA writes them.
TF_2_15_REQUIRES = (
    "absl-py>=1.0.0", "astunparse>=1.6.0", "flatbuffers>=23.5.26", "gast!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1",
    "google-pasta>=0.1.1", "h5py>=2.9.0", "libclang>=13.0.0", "ml-dtypes~=0.2.0", "numpy<2.0.0,>=1.23.5",
    "opt-einsum>=2.3.2", "packaging", "protobuf!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,"
    ">=3.20.3", "setuptools", "six>=1.12.0", "termcolor>=1.1.0", "typing-extensions>=3.6.6",
    "wrapt<1.15,>=1.11.0", "tensorflow-io-gcs-filesystem>=0.23.1", "grpcio<2.0,>=1.24.3",
    "tensorboard<2.16,>=2.15", "tensorflow-estimator<2.16,>=2.15.0", "keras<2.16,>=2.15.0",
    'nvidia-cublas-cu12==12.2.5.6; extra == "and-cuda"', 'nvidia-cuda-cupti-cu12==12.2.142; extra == "and-cuda"',
    'nvidia-cuda-nvcc-cu12==12.2.140; extra == "and-cuda"', 'nvidia-cuda-nvrtc-cu12==12.2.140; extra == "and-cuda"',
    'nvidia-cuda-runtime-cu12==12.2.140; extra == "and-cuda"', 'nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"',
    'nvidia-cufft-cu12==11.0.8.103; extra == "and-cuda"', 'nvidia-curand-cu12==10.3.3.141; extra == "and-cuda"',
    'nvidia-cusolver-cu12==11.5.2.141; extra == "and-cuda"', 'nvidia-cusparse-cu12==12.1.2.141; extra == "and-cuda"',
    'nvidia-nccl-cu12==2.16.5; extra == "and-cuda"', 'nvidia-nvjitlink-cu12==12.2.140; extra == "and-cuda"',
    'tensorrt==8.6.1.post1; extra == "and-cuda"',
)
TF_2_15_WHEEL_TAG = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"
TF_2_15_DEPENDENCIES = {
    "absl_py": "2.1.0", "astunparse": "1.6.3", "flatbuffers": "24.3.25", "gast": "0.5.4", "google_pasta": "0.2.0",
    "h5py": "3.11.0", "libclang": "18.1.1", "ml_dtypes": "0.2.0", "numpy": "1.26.4", "opt_einsum": "3.3.0",
    "packaging": "24.0", "protobuf": "4.25.3", "setuptools": "69.5.1", "six": "1.16.0", "termcolor": "2.4.0",
    "typing_extensions": "4.11.0", "wrapt": "1.14.1", "tensorflow_io_gcs_filesystem": "0.37.0",
    "grpcio": "1.63.0", "tensorboard": "2.15.2", "tensorflow_estimator": "2.15.0", "keras": "2.15.0",
}
BUILD_INFO_2_15_CUDA = (
    "# Auto-generated module providing information about the build.\nimport collections\n\n"
    "build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), "
    "('cuda_compute_capabilities', ['sm_50', 'sm_60', 'sm_70', 'sm_80', 'compute_90']), "
    "('cuda_version', '12.2'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), "
    "('is_tensorrt_build', True)])\n"
)
TF_RECORD = ("tensorflow/__init__.py", "tensorflow/python/platform/build_info.py",
             "tensorflow/libtensorflow_framework.so.2")


def tensorflow_2_21(root: FakeRoot, env: PythonEnv, name: str = "tensorflow-cpu",
                    requires: tuple[str, ...] = TF_2_21_REQUIRES, **versions: str) -> FakeSitePackages:
    """`pip install tensorflow-cpu==2.21.0` (or tensorflow): the wheel and what pip resolved with it."""
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.tensorflow(name=name, requires=requires)
    _record(site, name, "2.21.0", TF_RECORD)
    return site.healthy_dependencies(**versions)


def tensorflow_2_15(root: FakeRoot, env: PythonEnv, cuda_wheels: bool = True, **versions: str) -> FakeSitePackages:
    """`pip install tensorflow[and-cuda]==2.15.1` (or without [and-cuda]: CUDA from the system): the wheel,
    its dependencies as pip resolved them, and the nvidia-* wheels it pins."""
    from support.gpu_scenarios import PINS_215, wheels

    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.15.1", build_info=BUILD_INFO_2_15_CUDA, requires=TF_2_15_REQUIRES,
                    requires_python=">=3.9", tags=(TF_2_15_WHEEL_TAG,))
    _record(site, "tensorflow", "2.15.1", TF_RECORD)
    for dist, version in {**TF_2_15_DEPENDENCIES, **versions}.items():
        site.dist(dist, version, top_level=(dist,))
    if cuda_wheels:
        wheels(root, PINS_215, site=env.site)
    return site


def tensorflow_profiler(root: FakeRoot, env: PythonEnv) -> FakeSitePackages:
    """`pip install tensorboard-plugin-profile` (the TensorBoard profiler plugin) beside TensorFlow 2.15."""
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    return site.dist("tensorboard_plugin_profile", "2.15.1", requires=("gviz-api>=1.9.0", "protobuf>=3.19.6",
                                                                       "setuptools>=41.0.0", "six>=1.10.0",
                                                                       "werkzeug>=0.11.15"),
                     top_level=("tensorboard_plugin_profile",), tags=("py3-none-any",))


def _record(site: FakeSitePackages, name: str, version: str, files: tuple[str, ...]) -> None:
    folder = f"{name.replace('-', '_')}-{version}.dist-info"
    (site.path / folder / "RECORD").write_text(
        "".join(record_line(site.path, f) for f in files)
        + "".join(f"{folder}/{m},,\n" if m == "RECORD" else f"{folder}/{m},sha256=AAAA,100\n"
                  for m in ("METADATA", "WHEEL", "INSTALLER", "top_level.txt", "RECORD")))



# -- NVIDIA GPUs: the driver's /proc and /dev files, the PCI functions, and NVML's answers ------------------

@dataclass(frozen=True)
class GpuModel:
    name: str  # as NVML and /proc/driver/nvidia/gpus/*/information print it
    pci_device: str
    compute_capability: tuple[int, int]
    memory_mib: int
    ecc: bool = True  # data-center parts; GeForce reports ECC "Not Supported"
    remapping: bool = True  # row remapping: Ampere and later data-center parts
    mig: bool = False  # MIG-capable (A100, H100)
    pcie: tuple[int, int] = (4, 16)  # generation, width


A100_SXM4 = GpuModel("NVIDIA A100-SXM4-80GB", "0x20b2", (8, 0), 81920, mig=True)
H100_SXM5 = GpuModel("NVIDIA H100 80GB HBM3", "0x2330", (9, 0), 81559, mig=True, pcie=(5, 16))
L40S = GpuModel("NVIDIA L40S", "0x26b9", (8, 9), 46068)
RTX_4090 = GpuModel("NVIDIA GeForce RTX 4090", "0x2684", (8, 9), 24564, ecc=False, remapping=False)
T4 = GpuModel("Tesla T4", "0x1eb8", (7, 5), 15360, remapping=False, pcie=(3, 16))


def nvidia_driver(root: FakeRoot, model: GpuModel, placement: Sequence[tuple[str, int]],
                  version: str = "550.54.15", profiling_admin_only: int = 1,
                  visible_in_container: Sequence[int] | None = None) -> tuple[FakeGpu, ...]:
    """A loaded driver and its GPUs at these (sysfs bus id, NUMA node): /proc/driver/nvidia (version,
    params with the driver's default RmProfilingAdminOnly=1, one information file per GPU), /dev/nvidia*,
    the PCI functions with numa_node and local_cpulist, libcuda; returns NVML's view of the same GPUs.
    `visible_in_container`: the GPUs a container runtime passed in (its /dev/nvidiaN; NVML sees those only)."""
    from support.gpu_scenarios import lib, link

    root.write("/proc/driver/nvidia/version",
               f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Thu Feb 22 01:44:30 UTC 2024\n"
               "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
    root.write("/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\nRmLogonRC: 1\nModifyDeviceFiles: 1\n"
                                             f"DeviceFileUID: 0\nRmProfilingAdminOnly: {profiling_admin_only}\n"
                                             "EnableMSI: 1\nEnableStreamMemOPs: 0\n")
    root.write("/dev/nvidiactl", "").write("/dev/nvidia-uvm", "")
    shown = range(len(placement)) if visible_in_container is None else visible_in_container
    gpus = []
    for minor, (bus_id, node) in enumerate(placement):
        uuid = f"GPU-{minor:02x}{model.pci_device[2:]}a1-7c2e-4b9d-{0x8e31 + minor:04x}-5d1c0f9e{minor:04x}"
        root.write(f"/proc/driver/nvidia/gpus/{bus_id}/information",
                   f"Model: \t\t {model.name}\nIRQ:   \t\t {150 + minor}\nGPU UUID: \t {uuid}\n"
                   f"Video BIOS: \t 92.00.45.00.03\nBus Type: \t PCIe\nDMA Size: \t 47 bits\n"
                   f"DMA Mask: \t 0x7fffffffffff\nBus Location: \t {bus_id}\nDevice Minor: \t {minor}\n")
        base = f"/sys/bus/pci/devices/{bus_id}"
        root.write(f"{base}/vendor", "0x10de\n").write(f"{base}/class", "0x030200\n")
        root.write(f"{base}/device", f"{model.pci_device}\n")
        gpu_placement(root, bus_id, node)
        if minor in shown:
            root.write(f"/dev/nvidia{minor}", "")
            gpus.append(fake_gpu(model, bus_id, uuid))
    lib(root, f"/usr/lib/x86_64-linux-gnu/libcuda.so.{version}", "libcuda.so.1")
    link(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", f"libcuda.so.{version}")
    return tuple(gpus)


def fake_gpu(model: GpuModel, bus_id: str, uuid: str, **changes: object) -> FakeGpu:
    """A healthy, idle GPU of this model as NVML reports it (persistence on, no errors, full link)."""
    domain, rest = bus_id.split(":", 1)
    gen, width = model.pcie
    gpu = FakeGpu(name=model.name, uuid=uuid, pci_bus_id=f"{int(domain, 16):08X}:{rest.upper()}",
                  compute_capability=model.compute_capability, memory_total_mib=model.memory_mib,
                  memory_used_mib=1 if model.ecc else 285, ecc=(True, 0, 0) if model.ecc else None,
                  remapped=(0, 0, False, False) if model.remapping else None,
                  mig=(False, False) if model.mig else None, pcie=(gen, gen, width, width))
    return replace(gpu, **changes)  # type: ignore[arg-type]
