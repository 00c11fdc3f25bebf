"""OpenMP runtimes (openmp probe, THR108): fake environments built as pip and conda build them — dist-info
folders with RECORD and WHEEL, bundled copies deep inside packages, conda-meta — and their healthy twins."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_facts, check_root, probe_root
from support.fake_site_packages import FakeSitePackages

from tfdoctor.facts.probes import openmp as openmp_probe
from tfdoctor.fixes.plan import plan_fixes
from tfdoctor.model import AdminFix, Applicability, EnvFix, Severity
from tfdoctor.testing import FakeRoot, facts_from

SITE = "/venv/lib/python3.11/site-packages"
VENV = {"VIRTUAL_ENV": "/venv"}
MANYLINUX = ("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",)
ELF = "\x7fELF"


def _site(root: FakeRoot, prefix: str = "/venv") -> FakeSitePackages:
    return FakeSitePackages(root.path / prefix.lstrip("/") / "lib/python3.11/site-packages")


def _intel_openmp(site: FakeSitePackages, root: FakeRoot, prefix: str = "/venv") -> None:
    """pip's intel-openmp: a data-only wheel whose RECORD puts libiomp5.so in {prefix}/lib."""
    site.dist("intel-openmp", "2024.2.1", tags=("py2.py3-none-manylinux1_x86_64",),
              record=("../../../lib/libiomp5.so", "../../../lib/libiomp5_db.so", "../../../lib/libiompstubs5.so",
                      "intel_openmp-2024.2.1.dist-info/RECORD"))
    for name in ("libiomp5.so", "libiomp5_db.so", "libiompstubs5.so"):
        root.write(f"{prefix}/lib/{name}", ELF)


def _paddle(site: FakeSitePackages) -> None:
    """paddlepaddle bundles its own libiomp5 two levels down (paddle/libs/), where no one-level scan looks."""
    site.dist("paddlepaddle", "2.6.1", tags=MANYLINUX, top_level=("paddle",),
              record=("paddle/__init__.py", "paddle/libs/libiomp5.so", "paddle/libs/libmklml_intel.so",
                      "paddle/base/libpaddle.so", "paddlepaddle-2.6.1.dist-info/RECORD"))
    site.file("paddle/__init__.py").file("paddle/libs/libiomp5.so", ELF).file("paddle/libs/libmklml_intel.so", ELF)


def _scikit_learn(site: FakeSitePackages) -> None:
    site.dist("scikit-learn", "1.5.2", tags=MANYLINUX, top_level=("sklearn",),
              record=("sklearn/__init__.py", "sklearn/_loss/_loss.cpython-311-x86_64-linux-gnu.so",
                      "scikit_learn.libs/libgomp-a34b3233.so.1.0.0", "scikit_learn-1.5.2.dist-info/RECORD"))
    site.file("sklearn/__init__.py").file("scikit_learn.libs/libgomp-a34b3233.so.1.0.0", ELF)


def _torch(site: FakeSitePackages) -> None:
    site.dist("torch", "2.4.1", tags=MANYLINUX, top_level=("torch", "torchgen", "functorch"),
              record=("torch/__init__.py", "torch/lib/libtorch_cpu.so", "torch/lib/libgomp-a34b3233.so.1",
                      "torch-2.4.1.dist-info/RECORD"))
    site.file("torch/__init__.py").file("torch/lib/libtorch_cpu.so", ELF).file("torch/lib/libgomp-a34b3233.so.1", ELF)


def _healthy_tensorflow(site: FakeSitePackages) -> None:
    site.tensorflow().healthy_dependencies()


def test_two_copies_of_libiomp5_one_deep_in_a_package(make_root):
    """The classic OMP: Error #15: intel-openmp's copy and one paddlepaddle bundles in paddle/libs/."""
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _healthy_tensorflow(site)
    _intel_openmp(site, root)
    _paddle(site)
    facts = probe_root(root, env=VENV)
    runtimes = facts.get("openmp.runtimes")
    assert [(r["runtime"], r["path"], r["owner"], r["owner_version"], r["found_by"]) for r in runtimes] == [
        ("libiomp5", "/venv/lib/libiomp5.so", "intel-openmp", "2024.2.1", "record"),
        ("libiomp5", f"{SITE}/paddle/libs/libiomp5.so", "paddlepaddle", "2.6.1", "record"),
    ]
    assert facts.get("openmp.incomplete") == []
    report = check_facts(facts, select=["THR108"])
    assert report.codes() == ["THR108"]
    (finding,) = report.result("THR108").findings
    assert finding.message == (
        "2 copies of the Intel/LLVM OpenMP runtime (libiomp5 twice) can load into one process: the second to "
        'initialise aborts the process with "OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so '
        'already initialized"')
    assert finding.evidence["openmp.runtimes.libiomp5"] == [
        "/venv/lib/libiomp5.so (intel-openmp 2024.2.1)", f"{SITE}/paddle/libs/libiomp5.so (paddlepaddle 2.6.1)"]
    keep, stopgap = finding.fixes
    assert isinstance(keep, AdminFix)
    assert "; brought by: intel-openmp, paddlepaddle — keep the one" in keep.text and keep.steps == ()
    assert isinstance(stopgap, EnvFix) and stopgap.applicability is Applicability.UNSAFE
    assert "silently produce incorrect results" in stopgap.title
    # The stopgap is never written by a plain `tfdoctor fix`; only with --unsafe-fixes.
    assert plan_fixes(report.findings(), unsafe=False).env_values() == {}
    assert plan_fixes(report.findings(), unsafe=True).env_values() == {"KMP_DUPLICATE_LIB_OK": "TRUE"}


def test_duplicate_masked_by_kmp_duplicate_lib_ok_still_reported(make_root):
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _intel_openmp(site, root)
    _paddle(site)
    report = check_root(root, env={**VENV, "KMP_DUPLICATE_LIB_OK": "TRUE"}, select=["THR108"])
    (finding,) = report.result("THR108").findings
    assert finding.message.endswith("KMP_DUPLICATE_LIB_OK=TRUE lets the process start with both, at the risk of "
                                    "crashes or silently incorrect results")
    assert [type(f) for f in finding.fixes] == [AdminFix]  # no stopgap offered: it is the problem here
    assert finding.evidence["env.KMP_DUPLICATE_LIB_OK"] == "TRUE"


def test_libgomp_beside_libiomp5_is_a_mix(make_root):
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _intel_openmp(site, root)
    _scikit_learn(site)
    report = check_root(root, env=VENV, select=["THR108"])
    (finding,) = report.result("THR108").findings
    assert finding.severity is Severity.WARNING
    assert finding.message == ("OpenMP runtimes of two families in this environment (libgomp, libiomp5): each "
                               "starts its own thread pool sized for every CPU, and the two fight over the cores")
    assert finding.evidence["openmp.runtimes.libgomp"] == [
        f"{SITE}/scikit_learn.libs/libgomp-a34b3233.so.1.0.0 (scikit-learn 1.5.2)"]


def test_renamed_libgomp_copies_are_info(make_root):
    """scikit-learn and torch each bundle a hash-renamed libgomp: they coexist, each with its own pool."""
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _healthy_tensorflow(site)
    _scikit_learn(site)
    _torch(site)
    report = check_root(root, env=VENV, select=["THR108"])
    (finding,) = report.result("THR108").findings
    assert finding.severity is Severity.INFO
    assert finding.message.startswith("2 copies of libgomp (scikit-learn 1.5.2, torch 2.4.1): wheels rename")


def test_conda_llvm_openmp_with_pip_intel_openmp(make_root):
    """A conda-forge env (llvm-openmp's libomp in the prefix) where pip then installed intel-openmp."""
    prefix = "/opt/conda/envs/tf"
    root = make_root().cpus(cores_per_socket=4)
    root.write(f"{prefix}/conda-meta/llvm-openmp-18.1.8-hf5423f3_1.json", '{"name": "llvm-openmp"}')
    root.write(f"{prefix}/conda-meta/_openmp_mutex-4.5-2_kmp_llvm.tar.bz2.json", "{}")
    root.write(f"{prefix}/lib/libomp.so", ELF)
    site = _site(root, prefix)
    _intel_openmp(site, root, prefix)
    report = check_root(root, env={"CONDA_PREFIX": prefix}, select=["THR108"])
    (finding,) = report.result("THR108").findings
    assert finding.message.startswith("2 copies of the Intel/LLVM OpenMP runtime (libiomp5 and libomp)")
    assert finding.evidence["openmp.runtimes.libomp"] == [f"{prefix}/lib/libomp.so (llvm-openmp (conda) 18.1.8)"]
    assert any("_openmp_mutex=*=*_llvm" in step for step in finding.fixes[0].steps)


def test_unrecorded_folders_are_walked_at_any_depth_within_bounds(make_root, monkeypatch):
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _healthy_tensorflow(site)
    site.file("vendored_solver/ext/build/lib/libomp-5f1c2a9e.so", ELF)  # copied in, no metadata
    site.file("vendored_solver/a/b/c/d/e/f/g/h/libgomp.so.1", ELF)  # deeper than the walk goes
    runtimes = probe_root(root, env=VENV).get("openmp.runtimes")
    assert [(r["path"], r["owner"], r["found_by"]) for r in runtimes] == [
        (f"{SITE}/vendored_solver/ext/build/lib/libomp-5f1c2a9e.so", None, "walk")]
    monkeypatch.setattr(openmp_probe, "MAX_WALK_DIRS", 2)
    facts = probe_root(root, env=VENV)
    assert facts.get("openmp.incomplete") == [f"more than 2 unclaimed folders under {SITE}"]


def test_the_scan_stops_at_its_deadline(make_root, monkeypatch):
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _intel_openmp(site, root)
    monkeypatch.setattr(openmp_probe, "DEADLINE_S", 0.0)
    facts = probe_root(root, env=VENV)
    assert facts.get("openmp.incomplete") == ["stopped after 0 s (reading RECORD files)"]


def test_a_symlinked_runtime_on_ld_library_path_is_one_copy(make_root):
    root = make_root().cpus(cores_per_socket=4)
    root.write("/opt/gcc-13/lib64/libgomp.so.1.0.0", ELF).symlink("/opt/gcc-13/lib64/libgomp.so.1", "libgomp.so.1.0.0")
    runtimes = probe_root(root, env={"LD_LIBRARY_PATH": "/opt/gcc-13/lib64::relative"}).get("openmp.runtimes")
    assert [(r["path"], r["real_path"], r["found_by"]) for r in runtimes] == [
        ("/opt/gcc-13/lib64/libgomp.so.1", "/opt/gcc-13/lib64/libgomp.so.1.0.0", "LD_LIBRARY_PATH")]


def test_pure_wheels_records_are_not_read(make_root):
    """A py3-none-any wheel cannot bundle a runtime: its RECORD is skipped (the scan's main saving)."""
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    _healthy_tensorflow(site)
    site.dist("rich", "13.9.4", record=("rich/__init__.py", "rich-13.9.4.dist-info/RECORD"))
    facts = probe_root(root, env=VENV)
    record = root.path / SITE.lstrip("/") / "tensorflow_cpu-2.21.0.dist-info/RECORD"
    scanned = facts.get("openmp.scanned")
    assert (scanned["records"], scanned["record_bytes"]) == (1, record.stat().st_size)  # TensorFlow's only


@pytest.mark.parametrize("build", ["intel-tensorflow", "stock"])
def test_healthy_environments_with_one_runtime_are_silent(make_root, build):
    """Twins: an Intel-optimised TensorFlow with its one bundled libiomp5; a stock TensorFlow with none."""
    root = make_root().cpus(cores_per_socket=4)
    site = _site(root)
    if build == "stock":
        _healthy_tensorflow(site)
        site.dist("numpy", "2.1.3", tags=MANYLINUX, top_level=("numpy",),
                  record=("numpy/__init__.py", "numpy.libs/libscipy_openblas64_-ff651d7f.so"))
    else:
        bundled = ("tensorflow/python/_solib_k8/_U@mkl_Ulinux_S_S_Cmkl_Ulibs_Ulinux___Uexternal_Smkl_Ulinux_Slib/"
                   "libiomp5.so")
        site.tensorflow(name="intel-tensorflow", version="2.15.0", record=("tensorflow/__init__.py", bundled))
        site.file(bundled, ELF)
    facts = probe_root(root, env=VENV)
    assert len(facts.get("openmp.runtimes")) == (1 if build != "stock" else 0)
    assert check_facts(facts, select=["THR108"]).codes() == []


def test_unknown_or_wrong_shaped_runtimes_are_not_checked():
    facts = facts_from({"openmp": {"runtimes": [{"runtime": "libgomp"}]}})
    result = check_facts(facts, select=["THR108"]).result("THR108")
    assert result.reason.startswith("openmp.runtimes holds")


def test_runtime_file_names(tmp_path: Path):
    names = openmp_probe.runtime_names()
    accepted = ["libiomp5.so", "libiomp5md.dll", "libgomp.so.1", "libgomp-a34b3233.so.1.0.0", "libomp.dylib",
                "libomp.so.5", "libgomp.1.dylib"]
    rejected = ["libiompstubs5.so", "libomptarget.so", "libiomp5_db.so", "libgomp.a", "libgomp.spec"]
    assert [names.runtime_of(n) for n in accepted] == ["libiomp5", "libiomp5", "libgomp", "libgomp", "libomp",
                                                      "libomp", "libgomp"]
    assert [names.runtime_of(n) for n in rejected] == [None] * len(rejected)


@pytest.mark.parametrize("how", ["CONDA_PREFIX", "--python inside --root", "--python as the tree's path"])
def test_python_under_root_means_the_trees_interpreter_for_every_probe(make_root, how):
    """A conda env whose lib/ and TensorFlow's _solib_* both hold libiomp5.so: --python naming the env's
    interpreter inside --root finds both, as CONDA_PREFIX does (it used to join the root twice: none)."""
    from tfdoctor.facts.probes import cuda_libs
    from tfdoctor.facts.rooted_fs import RootedFs

    prefix = "/opt/conda/envs/tf"
    root = make_root().cpus(cores_per_socket=4)
    root.write(f"{prefix}/bin/python", "#!/bin/sh\n", mode=0o755)
    root.write(f"{prefix}/conda-meta/intel-openmp-2023.1.0-hdb19cb5_46306.json", "{}")
    root.write(f"{prefix}/lib/libiomp5.so", ELF)
    bundled = "tensorflow/python/_solib_k8/_U@mkl_Ulinux_S_S_Cmkl_Ulibs_Ulinux___Uexternal_Smkl_Ulinux_Slib/libiomp5.so"
    site = _site(root, prefix)
    site.tensorflow(name="intel-tensorflow", version="2.15.0", record=("tensorflow/__init__.py", bundled))
    site.file(bundled, ELF)
    if how == "CONDA_PREFIX":
        machine = root.machine({"CONDA_PREFIX": prefix})
    else:
        python = f"{root.path}{prefix}/bin/python" if how.endswith("inside --root") else f"{prefix}/bin/python"
        machine = root.machine({}, python=python)
    found = openmp_probe.probe_openmp(machine)["runtimes"]
    assert sorted(r["path"] for r in found) == [f"{prefix}/lib/libiomp5.so",
                                                f"{prefix}/lib/python3.11/site-packages/{bundled}"]
    assert cuda_libs.site_packages(machine, RootedFs(machine))[:1] == [f"{prefix}/lib/python3.11/site-packages"]


# -- THR109: OpenMP binding variables for a build whose pools are not OpenMP threads ---------------------

def _stock_tensorflow_with_intel_openmp(root: FakeRoot) -> None:
    site = _site(root)
    _healthy_tensorflow(site)
    _intel_openmp(site, root)


def test_binding_variables_for_a_stock_build_with_an_openmp_runtime_warn(make_root):
    root = make_root().cpus(cores_per_socket=8)
    _stock_tensorflow_with_intel_openmp(root)
    env = {**VENV, "KMP_AFFINITY": "granularity=fine,compact,1,0", "OMP_PROC_BIND": "false"}
    report = check_root(root, env=env, select=["THR109"])
    (finding,) = report.result("THR109").findings
    assert finding.message == (
        "KMP_AFFINITY=granularity=fine,compact,1,0 set, but tensorflow-cpu 2.21.0 is a stock build: ops share one "
        "Eigen intra-op pool (no OpenMP threads to place): when the OpenMP runtime of intel-openmp 2024.2.1 "
        "initialises on the main thread it binds that thread to one place, and every thread created afterwards, "
        "TensorFlow's pools included, inherits its mask — all of TensorFlow can end up on one core")
    assert finding.evidence["openmp.runtimes"] == ["/venv/lib/libiomp5.so"]
    (fix,) = finding.fixes
    assert fix.applicability is Applicability.UNSAFE
    assert [(c.op.value, c.name) for c in fix.changes] == [("unset", "KMP_AFFINITY")]
    env = {**VENV, "OMP_PROC_BIND": "close", "OMP_PLACES": "cores", "GOMP_CPU_AFFINITY": "0-7"}
    (finding,) = check_root(root, env=env, select=["THR109"]).result("THR109").findings
    assert finding.message.startswith("OMP_PROC_BIND=close, OMP_PLACES=cores, GOMP_CPU_AFFINITY=0-7 set, but")


@pytest.mark.parametrize("twin", ["no variable", "no OpenMP runtime", "OpenMP-threaded build", "binding off"])
def test_binding_variables_twins_are_silent(make_root, twin):
    root = make_root().cpus(cores_per_socket=8)
    env = {**VENV, "KMP_AFFINITY": "granularity=fine,compact,1,0"}
    if twin == "no variable":
        _stock_tensorflow_with_intel_openmp(root)
        env = VENV
    elif twin == "no OpenMP runtime":
        _healthy_tensorflow(_site(root))
    elif twin == "OpenMP-threaded build":  # intel-tensorflow: the variables place its own teams
        site = _site(root)
        bundled = "tensorflow/python/_solib_k8/libiomp5.so"
        site.tensorflow(name="intel-tensorflow", version="2.15.0", record=("tensorflow/__init__.py", bundled))
        site.file(bundled, ELF)
    else:
        _stock_tensorflow_with_intel_openmp(root)
        env = {**VENV, "KMP_AFFINITY": "granularity=fine,none", "OMP_PROC_BIND": "false", "OMP_PLACES": "cores"}
    assert check_root(root, env=env, select=["THR109"]).codes() == []


def _record_scan(tmp_path: Path, names: openmp_probe.RuntimeNames | None = None) -> openmp_probe._Scan:
    """A scan of the live machine (it reads nothing but the RECORD it is given here) keeping hits in tmp."""
    from tfdoctor.facts.machine import Machine

    scan = openmp_probe._Scan(Machine(environ={}))
    if names is not None:
        scan.names = names
    scan.kept = openmp_probe._kept_hits(scan.machine, scan.names)
    return scan


def test_a_records_hits_are_kept_while_it_is_unchanged(tmp_path, monkeypatch):
    """TensorFlow's 1.8 MB RECORD searched on every pre-job hook was most of this probe: its hits are kept
    with its stat (device, inode, size, mtime, ctime) and the RECORD is not searched again until it changes."""
    import time

    from tfdoctor.facts.probes import pyenv_snapshot

    monkeypatch.setattr(pyenv_snapshot, "RACY_NS", 0)  # the RECORD just written counts as settled
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    record = tmp_path / "torch-2.5.1.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text("torch/__init__.py,sha256=x,1\ntorch/lib/libgomp-a34b3233.so.1,sha256=y,2\n")
    scan = _record_scan(tmp_path)
    assert openmp_probe._record_hits(scan, str(record), "torch") == ["torch/lib/libgomp-a34b3233.so.1"]
    scan.kept.save()
    assert (tmp_path / "cache" / openmp_probe.KEPT_HITS_NAME).is_file()

    def no_search(*args, **kwargs):
        raise AssertionError("the RECORD was searched again")

    again = _record_scan(tmp_path)
    import mmap

    monkeypatch.setattr(mmap, "mmap", no_search)
    assert openmp_probe._record_hits(again, str(record), "torch") == ["torch/lib/libgomp-a34b3233.so.1"]
    assert (again.counts["records"], again.counts["records_kept"]) == (1, 1)
    monkeypatch.undo()
    monkeypatch.setattr(pyenv_snapshot, "RACY_NS", 0)
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    time.sleep(0.05)  # past the tick of the clock that stamps ctime
    with open(record, "a", encoding="utf-8") as handle:  # pip installs another runtime over it
        handle.write("torch/lib/libiomp5.so,sha256=z,3\n")
    changed = _record_scan(tmp_path)
    assert openmp_probe._record_hits(changed, str(record), "torch") == ["torch/lib/libgomp-a34b3233.so.1",
                                                                        "torch/lib/libiomp5.so"]
    assert changed.counts["records_kept"] == 0


def test_hits_kept_for_other_runtime_names_are_not_used(tmp_path, monkeypatch):
    """A knowledge table that names another runtime file changes the tag: the RECORD is searched anew."""
    import re

    from tfdoctor.facts.probes import pyenv_snapshot

    monkeypatch.setattr(pyenv_snapshot, "RACY_NS", 0)
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    record = tmp_path / "RECORD"
    record.write_text("x/libgomp.so.1,sha256=y,2\nx/libnewomp.so,sha256=z,3\n")
    scan = _record_scan(tmp_path)
    assert openmp_probe._record_hits(scan, str(record), "x") == ["x/libgomp.so.1"]
    scan.kept.save()
    names = scan.names._replace(needles=re.compile(scan.names.needles.pattern + b"|libnewomp"))
    wider = _record_scan(tmp_path, names)
    assert openmp_probe._record_hits(wider, str(record), "x") == ["x/libgomp.so.1", "x/libnewomp.so"]
    assert wider.counts["records_kept"] == 0


def test_nothing_is_kept_for_a_fake_root(make_root, tmp_path, monkeypatch):
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    root = make_root()
    _paddle(_site(root))
    facts = probe_root(root, VENV)
    assert [r["path"] for r in facts.get("openmp.runtimes")] == [f"{SITE}/paddle/libs/libiomp5.so"]
    assert not (tmp_path / "cache" / openmp_probe.KEPT_HITS_NAME).exists()
