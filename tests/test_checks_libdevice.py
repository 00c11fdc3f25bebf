"""The libdevice XLA of the installed release takes (issue 36 item 2): its CUDA roots, in its order
(tfdoctor/knowledge/xla_ptxas.toml [[roots]], tfdoctor/derive/xla_libdevice.py), judged by XLA001 and XLA003
on machines laid out as real ones are: Arch Linux's /opt/cuda, a conda environment's cuda-nvcc, the pip
nvidia-cuda-nvcc wheel, Debian's nvidia-cuda-toolkit. Each has a healthy twin that must stay silent, and the
same layout under a release that does not search it is "not found"."""

from __future__ import annotations

import pytest
from conftest import check_facts
from support import gpu_scenarios as g
from support import libdevice_layouts as layouts

from tfdoctor.derive import xla_libdevice
from tfdoctor.facts import Facts, Unknown
from tfdoctor.model import EnvFix, Severity, set_env

XLA_ON = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}  # something seen turns XLA on: XLA001 is an error
LIBDEVICE_CODES = ["XLA001", "XLA003"]


def _collect(tmp_path, build, env: dict[str, str], version: str) -> Facts:
    scenario = g.Scenario("libdevice", build, python=g.release_python(version), env=env)
    return g.collect(scenario, g.build_root(scenario, tmp_path / "machine"))


def _data_dir_fix(folder: str) -> EnvFix:
    return EnvFix(f"Point XLA at {folder} (it holds nvvm/libdevice)",
                  (set_env("XLA_FLAGS", f"--xla_gpu_cuda_data_dir={folder}"),))


# -- the table: which roots each release searches --------------------------------------------------------------

@pytest.mark.parametrize("release, roots", [
    ("2.4.0", ["data_dir", "/usr/local/cuda-11.0", "/usr/local/cuda"]),
    ("2.11.1", ["data_dir", "/usr/local/cuda-11.2", "/usr/local/cuda"]),
    ("2.13.1", ["data_dir", "/usr/local/cuda-11.8", "/usr/local/cuda"]),
    ("2.14.0", ["data_dir", "/usr/local/cuda-11.8", "/usr/local/cuda", "nvcc_wheel"]),
    ("2.15.1", ["data_dir", "/usr/local/cuda-12.2", "/usr/local/cuda", "nvcc_wheel"]),
    ("2.17.1", ["data_dir", "/usr/local/cuda-12.3", "/usr/local/cuda", "nvcc_wheel"]),
    ("2.18.0", ["data_dir", "/usr/local/cuda", "nvcc_wheel", "tensorflow_cuda"]),
    ("2.19.0", ["data_dir", "/usr/local/cuda", "/opt/cuda", "nvcc_wheel", "tensorflow_cuda", "prefix"]),
    ("2.21.0", ["data_dir", "/usr/local/cuda", "/opt/cuda", "nvcc_wheel", "tensorflow_cuda", "prefix"]),
    # A release the table cannot place keeps the roots newer XLA keeps (no build toolkit path).
    (None, ["data_dir", "/usr/local/cuda", "/opt/cuda", "nvcc_wheel", "tensorflow_cuda", "prefix"]),
])
def test_each_release_searches_its_own_roots(release, roots):
    assert xla_libdevice.roots_for(release) == roots


# -- Arch Linux: CUDA in /opt/cuda, searched from 2.19 -------------------------------------------------------

def _arch(version: str):
    def build(root):
        layouts.pip_tensorflow(root, version, nvcc=False)
        layouts.arch_opt_cuda(root)
    return build


ARCH_ENV = {"PATH": f"{g.VENV}/bin:/usr/local/bin:/usr/bin:/bin:/opt/cuda/bin", "CUDA_PATH": "/opt/cuda", **XLA_ON}


def test_arch_opt_cuda_is_found_by_xla_219(tmp_path):
    facts = _collect(tmp_path, _arch("2.19.0"), ARCH_ENV, "2.19.0")
    found = xla_libdevice.resolve(facts, "2.19.0")
    assert found.path == "/opt/cuda/nvvm/libdevice/libdevice.10.bc"
    assert check_facts(facts, select=["XLA0"]).codes() == []


def test_arch_opt_cuda_is_not_searched_by_xla_218(tmp_path):
    facts = _collect(tmp_path, _arch("2.18.0"), ARCH_ENV, "2.18.0")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA001" and finding.severity is Severity.ERROR
    assert finding.message.startswith(
        f"XLA will not find libdevice (TensorFlow 2.18.0's XLA searches /usr/local/cuda, {g.SITE}/nvidia/cuda_nvcc, "
        f"{g.SITE}/tensorflow/cuda); /opt/cuda has it")
    assert finding.fixes == (_data_dir_fix("/opt/cuda"),)


# -- a conda environment: NVIDIA's cuda-nvcc under the prefix, searched from 2.19 ----------------------------

def _conda(version: str):
    def build(root):
        layouts.pip_tensorflow(root, version, nvcc=False, site=layouts.CONDA_SITE)
        layouts.conda_cuda_nvcc(root)
    return build


CONDA_ENV = {"CONDA_PREFIX": layouts.CONDA_ENV, "CONDA_DEFAULT_ENV": "tf",
             "PATH": f"{layouts.CONDA_ENV}/bin:{g.HOME}/miniconda3/condabin:/usr/local/bin:/usr/bin:/bin", **XLA_ON}


def test_a_conda_environments_nvvm_is_found_by_xla_219(tmp_path):
    facts = _collect(tmp_path, _conda("2.19.0"), CONDA_ENV, "2.19.0")
    found = xla_libdevice.resolve(facts, "2.19.0")
    assert found.root.name == "prefix" and found.root.dir == layouts.CONDA_ENV
    assert found.path == f"{layouts.CONDA_ENV}/nvvm/libdevice/libdevice.10.bc"
    assert check_facts(facts, select=LIBDEVICE_CODES).codes() == []


def test_a_conda_environments_nvvm_is_not_found_by_xla_215(tmp_path):
    # The release mismatch: the same environment under TensorFlow 2.15, whose XLA never looks at the prefix.
    facts = _collect(tmp_path, _conda("2.15.0"), CONDA_ENV, "2.15.0")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA001"
    assert finding.evidence["searched"] == ["/usr/local/cuda-12.2", "/usr/local/cuda",
                                            f"{layouts.CONDA_SITE}/nvidia/cuda_nvcc"]
    assert finding.evidence["found_at"] == [layouts.CONDA_ENV]
    assert finding.fixes == (_data_dir_fix(layouts.CONDA_ENV),)


# -- the pip nvidia-cuda-nvcc wheel: searched from 2.14 -------------------------------------------------------

def test_the_nvcc_wheel_is_found_by_xla_214(tmp_path):
    facts = _collect(tmp_path, lambda root: layouts.pip_tensorflow(root, "2.14.0"), XLA_ON, "2.14.0")
    assert xla_libdevice.resolve(facts, "2.14.0").path == f"{g.SITE}/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"
    assert check_facts(facts, select=LIBDEVICE_CODES).codes() == []


def test_the_nvcc_wheel_is_not_searched_by_xla_213(tmp_path):
    facts = _collect(tmp_path, lambda root: layouts.pip_tensorflow(root, "2.13.1"), XLA_ON, "2.13.1")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA001"
    assert finding.evidence["searched"] == ["/usr/local/cuda-11.8", "/usr/local/cuda"]
    assert finding.fixes == (_data_dir_fix(f"{g.SITE}/nvidia/cuda_nvcc"),)


def test_the_toolkit_a_wheel_was_built_against_is_searched(tmp_path):
    # TensorFlow 2.15's XLA looks in /usr/local/cuda-12.2 (TF_CUDA_TOOLKIT_PATH) before /usr/local/cuda.
    def build(root):
        layouts.pip_tensorflow(root, "2.15.0", nvcc=False)
        g.toolkit(root, "12.2")
    facts = _collect(tmp_path, build, XLA_ON, "2.15.0")
    found = xla_libdevice.resolve(facts, "2.15.0")
    assert found.root.dir == "/usr/local/cuda-12.2"
    assert check_facts(facts, select=LIBDEVICE_CODES).codes() == []
    # 2.18 is built hermetically: no toolkit path of its own, so the same folder is not searched.
    assert "/usr/local/cuda-12.2" not in [r.dir for r in xla_libdevice.searched(facts, "2.18.0")]


# -- Debian's and Ubuntu's nvidia-cuda-toolkit: /usr/lib/cuda, searched by no release --------------------------

def _debian(root):
    layouts.pip_tensorflow(root, "2.15.0", nvcc=False)
    layouts.debian_cuda_toolkit(root)


def test_debian_cuda_toolkit_is_not_searched(tmp_path):
    facts = _collect(tmp_path, _debian, XLA_ON, "2.15.0")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA001"
    assert finding.fixes == (_data_dir_fix("/usr/lib/cuda"),)
    # No release's table row names it: the data dir is the only way there.
    assert not any(r.dir == "/usr/lib/cuda" for r in xla_libdevice.searched(facts, None))


def test_debian_cuda_toolkit_named_by_the_data_dir_is_silent(tmp_path):
    facts = _collect(tmp_path, _debian, {**XLA_ON, "XLA_FLAGS": "--xla_gpu_cuda_data_dir=/usr/lib/cuda"}, "2.15.0")
    found = xla_libdevice.resolve(facts, "2.15.0")
    assert found.root.name == "data_dir" and found.path == "/usr/lib/cuda/nvvm/libdevice/libdevice.10.bc"
    assert check_facts(facts, select=LIBDEVICE_CODES).codes() == []


# -- an nvvm/libdevice folder without the file stops the search ------------------------------------------------

def _empty_nvvm_first(empty: bool):
    def build(root):
        layouts.pip_tensorflow(root, "2.15.0")
        (root.path / "usr/local/cuda/bin").mkdir(parents=True)
        if empty:  # a toolkit cut down by hand: the folder XLA tests is there, libdevice.10.bc is not
            (root.path / "usr/local/cuda/nvvm/libdevice").mkdir(parents=True)
    return build


def test_an_empty_nvvm_libdevice_folder_is_where_xla_stops(tmp_path):
    facts = _collect(tmp_path, _empty_nvvm_first(True), XLA_ON, "2.15.0")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA001"
    assert finding.message.startswith(
        "XLA will take /usr/local/cuda/nvvm/libdevice (the first nvvm/libdevice folder TensorFlow 2.15.0's XLA "
        "finds), which has no libdevice.10.bc")
    assert finding.fixes == (_data_dir_fix(f"{g.SITE}/nvidia/cuda_nvcc"),)
    # Its twin without the empty folder: XLA goes on to the wheel.
    twin = _collect(tmp_path / "twin", _empty_nvvm_first(False), XLA_ON, "2.15.0")
    assert check_facts(twin, select=LIBDEVICE_CODES).codes() == []


# -- XLA003 says which libdevice XLA takes instead ------------------------------------------------------------

def test_a_wrong_data_dir_says_what_xla_takes_instead(tmp_path):
    env = {"XLA_FLAGS": f"--xla_gpu_cuda_data_dir={g.SITE}/nvidia/cuda_nvcc/nvvm"}
    facts = _collect(tmp_path, lambda root: layouts.pip_tensorflow(root, "2.15.0"), env, "2.15.0")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA003"
    assert finding.message.endswith(f"; XLA takes {g.SITE}/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc instead")
    assert finding.fixes == (_data_dir_fix(f"{g.SITE}/nvidia/cuda_nvcc"),)


# -- facts of an older tfdoctor, which did not look in a root this release searches -----------------------------

def test_a_root_the_facts_do_not_cover_is_not_checked(tmp_path):
    facts = _collect(tmp_path, _arch("2.19.0"), ARCH_ENV, "2.19.0")
    section = facts.sections["xla_toolchain"]
    section["candidates"] = [c for c in section["candidates"] if c["dir"] != "/opt/cuda"]
    found = xla_libdevice.resolve(facts, "2.19.0")
    assert isinstance(found, Unknown) and "/opt/cuda" in found.reason
    result = check_facts(facts, select=["XLA001"]).result("XLA001")
    assert result.status.value == "not-checked" and "/opt/cuda" in result.reason


def test_conda_forges_targets_folder_is_offered_as_the_data_dir(tmp_path):
    # conda-forge's cuda-nvcc keeps the toolkit under $CONDA_PREFIX/targets/x86_64-linux; no release searches it.
    target = f"{layouts.CONDA_ENV}/targets/x86_64-linux"

    def build(root):
        layouts.pip_tensorflow(root, "2.18.0", nvcc=False, site=layouts.CONDA_SITE)
        root.write(f"{target}/nvvm/libdevice/libdevice.10.bc", layouts.BC)
    facts = _collect(tmp_path, build, CONDA_ENV, "2.18.0")
    (finding,) = check_facts(facts, select=LIBDEVICE_CODES).findings()
    assert finding.code == "XLA001" and finding.evidence["found_at"] == [target]
    assert finding.fixes == (_data_dir_fix(target),)


def test_every_root_row_names_its_releases_and_source():
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    rows = knowledge.table("xla_ptxas").data["roots"]
    assert [r["root"] for r in rows][:1] == ["data_dir"]  # the flag's folder comes first in every release
    for row in rows:
        assert row["source"] and version_satisfies("2.15.0", row["tensorflow"]) is not None
        assert row["root"].startswith("/") or row["root"] in xla_libdevice.ORIGINS
    # The build toolkit paths do not overlap: one TF_CUDA_TOOLKIT_PATH per wheel.
    builds = [r for r in rows if r["root"].startswith("/usr/local/cuda-")]
    for release in ("2.4.0", "2.10.1", "2.14.1", "2.15.1", "2.16.2", "2.17.1", "2.18.0"):
        held = [r["root"] for r in builds if version_satisfies(release, r["tensorflow"])]
        assert len(held) == (0 if release == "2.18.0" else 1), (release, held)


def test_a_data_dir_with_an_empty_nvvm_libdevice_folder_stops_xla(tmp_path):
    # The flag's folder comes first in every release: its empty nvvm/libdevice is where XLA fails, though the
    # nvcc wheel next to TensorFlow has libdevice.
    def build(root):
        layouts.pip_tensorflow(root, "2.15.0")
        (root.path / "opt/partial-cuda/nvvm/libdevice").mkdir(parents=True)
    facts = _collect(tmp_path, build, {**XLA_ON, "XLA_FLAGS": "--xla_gpu_cuda_data_dir=/opt/partial-cuda"}, "2.15.0")
    report = check_facts(facts, select=LIBDEVICE_CODES)
    assert report.codes() == ["XLA001", "XLA003"]
    (xla003,) = report.result("XLA003").findings
    assert xla003.message.endswith("; its empty nvvm/libdevice folder stops XLA's search there (XLA001)")
    assert xla003.fixes == (_data_dir_fix(f"{g.SITE}/nvidia/cuda_nvcc"),)
    (xla001,) = report.result("XLA001").findings
    assert xla001.evidence["libdevice_dir"] == "/opt/partial-cuda/nvvm/libdevice"
    assert xla001.fixes == (_data_dir_fix(f"{g.SITE}/nvidia/cuda_nvcc"),)
