"""The Jetson and macOS probes (tfdoctor/facts/probes/tegra.py, darwin.py): their parsers on the real text
(L4T release lines, device-tree models, sysctl answers of real Macs, SystemVersion.plist), the probes over
fake boards and Macs, what is unknown and why, and that sysctl is run only on Darwin, by absolute path."""

from __future__ import annotations

import subprocess

import pytest
from conftest import probe_root
from healthy import platform_parts as hosts

from tfdoctor.facts import Unknown
from tfdoctor.facts.bounded import Bounded
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes import darwin
from tfdoctor.facts.probes.tegra import parse_tegra_release


@pytest.mark.parametrize(("line", "release", "board"), [
    (hosts.L4T_32_7_1, "32.7.1", "t210ref"),
    (hosts.L4T_35_4_1, "35.4.1", "t186ref"),
    (hosts.L4T_36_3_0, "36.3.0", "generic"),
    (hosts.L4T_35_5_0, "35.5.0", "t186ref"),
])
def test_the_l4t_release_line_gives_release_and_board(line, release, board):
    parsed = parse_tegra_release(line + hosts.KNOWN_FILES)
    assert (parsed["release"], parsed["board"]) == (release, board)
    assert parsed["line"] == line.strip()


@pytest.mark.parametrize(("text", "release"), [(hosts.L4T_36_4_3, "36.4.3"), (hosts.L4T_36_4_4, "36.4.4")])
def test_a_whole_r36_release_file_gives_its_first_line(text, release):
    # R36 files (JetPack 6.2, 6.2.1) go on with "# KERNEL_VARIANT: oot" and TARGET_USERSPACE_LIB_DIR lines.
    parsed = parse_tegra_release(text)
    assert (parsed["release"], parsed["board"]) == (release, "generic")
    assert parsed["line"] == text.splitlines()[0]


def test_a_jetpack_6_2_1_board_is_judged_with_the_6_1_wheels(make_root):
    # An Orin Nano on JetPack 6.2.1 (the real R36.4.4 file) with PyPI's CPU-only wheel: NVIDIA built no
    # TensorFlow for 6.2.1; the fix is the JetPack 6.1 wheel (same CUDA 12.6, cuDNN 9.3, TensorRT 10.3).
    from conftest import check_facts

    root = hosts.jetson(make_root(), "NVIDIA Jetson Orin Nano Developer Kit", hosts.L4T_36_4_4, cores=6,
                        kernel="5.15.148-tegra", mem_gib=8)
    env = hosts.PythonEnv("/home/nvidia/venv", version="3.10.12", arch="aarch64")
    hosts.pypi_aarch64_tensorflow(root, env, "2.16.1")
    facts = probe_root(root)
    assert facts.sections["tegra"]["l4t"]["release"] == "36.4.4"
    facts.sections["python"] = {"version": "3.10.12", "watched": {"tensorflow": {"version": "2.16.1"}},
                                "tensorflow": {"build_info": {"is_cuda_build": False}}}
    (finding,) = check_facts(facts, select=["PLAT001"]).findings()
    assert "NVIDIA published no TensorFlow wheel for JetPack 6.2.1; those of JetPack 6.1" in finding.message
    assert finding.fixes[0].steps[-1] == ("pip install --extra-index-url "
                                          "https://developer.download.nvidia.com/compute/redist/jp/v61 "
                                          "'tensorflow==2.16.1+nv24.08'")


@pytest.mark.parametrize("text", ["", "R35.4.1\n", "# R35 (release)\n", "#" + "R" * 10_000])
def test_text_that_is_not_an_l4t_line_is_refused(text):
    with pytest.raises(ValueError, match="not an L4T release line"):
        parse_tegra_release(text)


def test_a_jetson_shows_its_release_model_libcuda_and_gpu_nodes(make_root):
    root = hosts.jetson(make_root(), hosts.ORIN_AGX, hosts.L4T_35_4_1)
    tegra = probe_root(root).sections["tegra"]
    assert tegra["detected"] is True
    assert tegra["l4t"]["release"] == "35.4.1"
    assert tegra["model"] == "NVIDIA Jetson AGX Orin Developer Kit"  # the NUL terminator dropped
    assert tegra["libcuda"] == ["/usr/lib/aarch64-linux-gnu/tegra/libcuda.so",
                                "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1.1"]
    assert "/dev/nvhost-gpu" in tegra["gpu_nodes"] and "/dev/nvhost-ctrl-gpu" in tegra["gpu_nodes"]


def test_a_jetson_whose_release_file_is_damaged_is_still_a_jetson_with_the_release_unknown(make_root):
    root = hosts.jetson(make_root()).write("/etc/nv_tegra_release", "garbage\n")
    tegra = probe_root(root).sections["tegra"]
    assert tegra["detected"] is True
    assert tegra["l4t"] == Unknown("/etc/nv_tegra_release is not an L4T release line")


def test_a_server_is_no_jetson_and_says_the_files_are_absent(make_root):
    root = make_root()
    root.cpus(1, 4, 2)
    tegra = probe_root(root).sections["tegra"]
    assert tegra == {"detected": False, "l4t": None, "model": None, "libcuda": [], "gpu_nodes": []}


def test_an_arm_server_with_a_device_tree_that_is_no_jetson_is_not_detected(make_root):
    root = make_root().write("/proc/device-tree/model", "Raspberry Pi 4 Model B Rev 1.4\0")
    tegra = probe_root(root).sections["tegra"]
    assert (tegra["detected"], tegra["model"]) == (False, "Raspberry Pi 4 Model B Rev 1.4")


def test_sysctl_output_keeps_the_names_asked_for_with_spaces_in_values():
    answers = darwin.parse_sysctl(hosts.M1_ROSETTA + "kern.hostname: ada-mbp\n")
    assert answers["machdep.cpu.brand_string"] == "Apple M1"  # Rosetta shows the host's brand string
    assert answers["sysctl.proc_translated"] == "1"
    assert "machdep.cpu.vendor" not in answers  # an unknown oid under Rosetta (spack/spack#30077)
    assert "kern.hostname" not in answers  # not asked for: not recorded


def test_x86_flags_are_spelt_as_proc_cpuinfo_spells_them():
    flags = darwin.x86_flags(darwin.parse_sysctl(hosts.I9_9880H))
    assert {"avx", "avx2", "fma", "sse4_1", "sse4_2", "f16c"} <= set(flags)
    assert "avx1_0" not in flags
    rosetta = darwin.x86_flags(darwin.parse_sysctl(hosts.M1_ROSETTA))
    assert "sse4_2" in rosetta and not {"avx", "avx2", "fma"} & set(rosetta)
    assert darwin.x86_flags(darwin.parse_sysctl(hosts.M3_MAX_NATIVE)) is None


def test_system_version_plist_gives_name_version_and_build():
    assert darwin.parse_system_version(hosts.SONOMA) == {"ProductName": "macOS", "ProductVersion": "14.4.1",
                                                         "ProductBuildVersion": "23E224"}
    with pytest.raises(ValueError):
        darwin.parse_system_version("<plist><dict><key>x</key>")


def test_a_mac_under_rosetta_is_apple_silicon_and_translated_with_cpu_facts_from_sysctl(make_root):
    facts = probe_root(hosts.mac(make_root(), hosts.M1_ROSETTA, hosts.MONTEREY))
    mac = facts.sections["darwin"]
    assert (mac["detected"], mac["apple_silicon"], mac["translated"]) == (True, True, True)
    assert mac["system_version"]["ProductVersion"] == "12.6"
    cpu = facts.sections["cpu"]
    assert cpu["online"] == list(range(8)) and cpu["allowed_cpus"] == list(range(8))
    assert cpu["physical_cores"] == 8
    assert (cpu["cpuinfo"]["vendor"], cpu["cpuinfo"]["model_name"]) == ("Apple", "Apple M1")
    flags = cpu["cpuinfo"]["flags"]
    assert cpu["cpuinfo"]["processors"] == 8 and {"sse4_2", "aes", "dtse64"} <= set(flags) and "avx" not in flags
    host = facts.sections["host"]  # the recording holds neither hw.machine nor kern.osrelease
    assert (host["system"], host["arch"], host["kernel"]) == ("Darwin", Unknown("sysctl gave no hw.machine"),
                                                              Unknown("sysctl gave no kern.osrelease"))


def test_a_native_process_on_apple_silicon_has_cpu_facts_and_no_x86_flags(make_root):
    facts = probe_root(hosts.mac(make_root(), hosts.M3_MAX_NATIVE))
    assert facts.sections["darwin"]["translated"] is False
    cpu = facts.sections["cpu"]["cpuinfo"]
    assert (cpu["vendor"], cpu["model_name"], cpu["processors"]) == ("Apple", "Apple M3 Max", 14)
    assert cpu["flags"] == Unknown("sysctl lists no x86 instruction-set flags (a native arm64 process)")
    assert facts.sections["darwin"]["apple_silicon"] is True


def test_an_intel_mac_is_not_apple_silicon_and_not_translated(make_root):
    mac = probe_root(hosts.mac(make_root(), hosts.I9_9880H, hosts.MONTEREY)).sections["darwin"]
    assert (mac["apple_silicon"], mac["translated"]) == (False, False)


def test_a_fake_mac_without_recorded_answers_says_so_everywhere(make_root):
    root = make_root().write(darwin.SYSTEM_VERSION, hosts.SONOMA)
    facts = probe_root(root)
    missing = Unknown(f"{darwin.RECORDED_SYSCTL} does not exist")
    assert facts.sections["darwin"]["sysctl"] == missing and facts.sections["darwin"]["translated"] == missing
    assert facts.sections["cpu"]["cpuinfo"] == missing
    assert facts.sections["host"]["system"] == "Darwin"


def test_a_linux_tree_is_no_mac(make_root):
    assert probe_root(make_root()).sections["darwin"] == {"detected": False}


def _live(monkeypatch, platform: str, answer):
    calls = []

    def fake_run(argv, timeout, limit, env=None, cwd=None):
        calls.append((list(argv), env, timeout))
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr("sys.platform", platform)
    monkeypatch.setattr("tfdoctor.facts.bounded.run_bounded", fake_run)
    return calls


def test_live_sysctl_runs_only_on_darwin_by_its_absolute_path(monkeypatch):
    calls = _live(monkeypatch, "linux", Bounded(0, b"", b"", False))
    assert darwin.probe_darwin(Machine(root="/", environ={})) == {"detected": False}
    assert calls == []
    calls = _live(monkeypatch, "darwin", Bounded(1, hosts.M3_MAX_NATIVE.encode(), b"unknown oid", False))
    found = darwin.probe_darwin(Machine(root="/", environ={"PATH": "/tmp/evil"}, timeout=2.0))
    assert calls[0][0] == ["/usr/sbin/sysctl", *darwin.NAMES]
    assert calls[0][1] == {"LC_ALL": "C"} and calls[0][2] <= 1.0  # not the user's PATH; bounded
    assert found["sysctl"]["machdep.cpu.brand_string"] == "Apple M3 Max"  # exit 1 for one unknown name is fine


@pytest.mark.parametrize(("answer", "reason"), [
    (subprocess.TimeoutExpired("sysctl", 1.0), "/usr/sbin/sysctl did not answer in 1 s"),
    (FileNotFoundError(2, "No such file or directory"), "/usr/sbin/sysctl could not run: No such file or directory"),
    (Bounded(0, b"x" * 10, b"", True), "/usr/sbin/sysctl wrote more than 64 KB"),
])
def test_live_sysctl_that_fails_is_unknown_with_the_reason(monkeypatch, answer, reason):
    _live(monkeypatch, "darwin", answer)
    assert darwin.sysctl_answers(Machine(root="/", environ={}, timeout=2.0)) == Unknown(reason)


@pytest.mark.parametrize("count", ["\u00b2", "99999999999", "0", "-4", "12abc"])
def test_a_damaged_or_hostile_cpu_count_from_sysctl_is_unknown_not_a_traceback_or_a_huge_list(count):
    answers = {"hw.logicalcpu": count, "hw.physicalcpu": count, "hw.optional.arm64": "1"}
    cpu = darwin.cpu_from_sysctl(answers)
    assert cpu["online"] == Unknown("sysctl gave no usable hw.logicalcpu")
    assert cpu["physical_cores"] == Unknown("sysctl gave no usable hw.physicalcpu")
    assert cpu["cpuinfo"]["processors"] == 0


def test_a_real_cpu_count_from_sysctl_gives_the_online_cpus():
    cpu = darwin.cpu_from_sysctl({"hw.logicalcpu": "10", "hw.physicalcpu": "8"})
    assert cpu["online"] == list(range(10)) and cpu["physical_cores"] == 8 and cpu["cpuinfo"]["processors"] == 10


def test_a_tegra_folder_that_cannot_be_listed_is_unknown_not_empty(make_root):
    root = hosts.jetson(make_root(), hosts.ORIN_AGX, hosts.L4T_35_4_1)
    (root.path / "usr/lib/aarch64-linux-gnu/tegra").rename(root.path / "usr/lib/aarch64-linux-gnu/tegra.moved")
    root.write("/usr/lib/aarch64-linux-gnu/tegra", "not a folder\n")
    tegra = probe_root(root).sections["tegra"]
    assert isinstance(tegra["libcuda"], Unknown)
    assert tegra["libcuda"].reason.startswith("/usr/lib/aarch64-linux-gnu/tegra could not be listed")
    assert tegra["detected"] is True  # the release file still says Jetson


def test_a_sysctl_that_answers_nothing_leaves_apple_silicon_and_rosetta_unknown_not_false(monkeypatch, make_root):
    _live(monkeypatch, "darwin", Bounded(1, b"", b"sysctl: operation not permitted\n", False))
    found = darwin.probe_darwin(Machine(root="/", environ={}, timeout=2.0))
    reason = Unknown("/usr/sbin/sysctl answered none of the names asked (exit status 1)")
    assert found["sysctl"] == reason and found["apple_silicon"] == reason and found["translated"] == reason
    root = make_root().write(darwin.SYSTEM_VERSION, hosts.SONOMA).write(darwin.RECORDED_SYSCTL, "kern.hostname: x\n")
    recorded = probe_root(root).sections["darwin"]
    assert recorded["translated"] == Unknown(f"{darwin.RECORDED_SYSCTL} is not sysctl output")
