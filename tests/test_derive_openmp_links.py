"""The threading model from what TensorFlow's libraries link (openmp probe: `tensorflow_links`, the OpenMP
runtimes in the DT_NEEDED of TensorFlow's shared objects; tfdoctor/derive/openmp_runtimes.py) and only
loadable copies counted as runtimes (a copy in TensorFlow's include/ header tree is not one) — issue 36."""

from __future__ import annotations

from conftest import check_root, probe_root
from support.fake_site_packages import FakeSitePackages

from tfdoctor.derive.openmp_runtimes import loadable, threading_model
from tfdoctor.facts import Unknown
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.elf import shared_object

SITE = "/venv/lib/python3.11/site-packages"
VENV = {"VIRTUAL_ENV": "/venv"}
FRAMEWORK = f"{SITE}/tensorflow/libtensorflow_framework.so.2"
LIBRARIES = ("libtensorflow_framework.so.2", "libtensorflow_cc.so.2", "python/_pywrap_tensorflow_internal.so")
BASE_NEEDS = ("libdl.so.2", "libpthread.so.0", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6")


def _built(root: FakeRoot, name: str = "tensorflow", openmp: str | None = "libgomp.so.1") -> FakeSitePackages:
    """TensorFlow 2.15 built from source (`bazel build --config=mkl`, tagged linux_x86_64): its framework
    NEEDs `openmp` beside the C and C++ runtimes; the system's libgomp in /usr/lib/x86_64-linux-gnu."""
    site = FakeSitePackages(root.path / SITE.lstrip("/"))
    site.tensorflow(name=name, version="2.15.0", tags=("cp311-cp311-linux_x86_64",))
    site.healthy_dependencies()
    for library in LIBRARIES:
        needs = BASE_NEEDS + ((openmp,) if openmp and library == LIBRARIES[0] else ())
        if library != LIBRARIES[0]:
            needs = ("libtensorflow_framework.so.2", *BASE_NEEDS)
        root.write(f"{SITE}/tensorflow/{library}", shared_object(library.rsplit("/", 1)[-1], needed=needs))
    root.write("/usr/lib/x86_64-linux-gnu/libgomp.so.1", shared_object("libgomp.so.1"))
    return site


def test_the_probe_records_the_openmp_runtimes_tensorflows_libraries_need(make_root):
    root = make_root().cpus(cores_per_socket=8)
    _built(root)
    links = probe_root(root, env=VENV).get("openmp.tensorflow_links")
    assert links == {FRAMEWORK: ["libgomp.so.1"], f"{SITE}/tensorflow/libtensorflow_cc.so.2": [],
                     f"{SITE}/tensorflow/python/_pywrap_tensorflow_internal.so": []}


def test_a_source_build_linking_gnu_openmp_is_openmp_threaded_whatever_its_name(make_root):
    root = make_root().cpus(cores_per_socket=8)
    _built(root)
    env = {**VENV, "TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8", "TF_NUM_INTEROP_THREADS": "4"}
    report = check_root(root, env=env, select=["THR102"])
    (finding,) = report.result("THR102").findings
    assert finding.evidence["threading_model"] == "openmp"
    assert "the TensorFlow build links libgomp.so.1" in finding.message
    # The same build with the published advice (one inter-op thread) is silent: its healthy twin.
    env["TF_NUM_INTEROP_THREADS"] = "1"
    assert check_root(root, env=env, select=["THR102"]).codes() == []


def test_libraries_read_that_link_no_openmp_make_an_eigen_build_even_under_an_intel_name(make_root):
    root = make_root().cpus(cores_per_socket=8)
    _built(root, name="intel-tensorflow", openmp=None)
    model = threading_model(probe_root(root, env=VENV))
    assert model.kind == "eigen"
    assert model.why.startswith("the TensorFlow build links no OpenMP runtime (libtensorflow_cc.so.2, "
                                "libtensorflow_framework.so.2, _pywrap_tensorflow_internal.so)")


def test_libraries_not_readable_as_elf_leave_the_model_to_the_distribution():
    from tfdoctor.testing import facts_from

    facts = facts_from({"python": {"distributions": {"intel-tensorflow": {"version": "2.15.0", "location": "/s"}}},
                        "openmp": {"runtimes": [], "tensorflow_links": {FRAMEWORK: {"$unknown": "not an ELF"}}}})
    assert threading_model(facts).why.startswith("intel-tensorflow 2.15.0 is an OpenMP-threaded build")


def test_a_libiomp5_in_tensorflows_header_tree_is_not_a_runtime(make_root):
    """A wheel whose RECORD lists a libiomp5.so under tensorflow/include/ (files of its build's external/ tree,
    shipped as headers): no library path and no RUNPATH reaches it, so it is neither a second runtime
    beside intel-openmp's nor a sign that the build is OpenMP-threaded."""
    root = make_root().cpus(cores_per_socket=8)
    header_copy = "tensorflow/include/external/llvm_openmp/libiomp5.so"
    site = FakeSitePackages(root.path / SITE.lstrip("/"))
    site.tensorflow(record=(header_copy,)).healthy_dependencies()
    site.file(header_copy, "\x7fELF")
    site.dist("intel-openmp", "2024.2.1", tags=("py2.py3-none-manylinux1_x86_64",),
              record=("../../../lib/libiomp5.so", "intel_openmp-2024.2.1.dist-info/RECORD"))
    root.write("/venv/lib/libiomp5.so", "\x7fELF")
    facts = probe_root(root, env=VENV)
    assert f"{SITE}/{header_copy}" in [r["path"] for r in facts.get("openmp.runtimes")]  # recorded as found
    assert check_root(root, env=VENV, select=["THR108"]).codes() == []
    assert threading_model(facts).kind == "eigen"
    assert not loadable(f"{SITE}/{header_copy}") and loadable("/venv/lib/libiomp5.so")


def test_a_framework_that_is_no_elf_is_unknown_with_the_reason(make_root):
    root = make_root().cpus(cores_per_socket=8)
    FakeSitePackages(root.path / SITE.lstrip("/")).tensorflow()  # the fakes' placeholder "\x7fELF" files
    links = probe_root(root, env=VENV).get("openmp.tensorflow_links")
    assert isinstance(links[FRAMEWORK], Unknown) and FRAMEWORK in links[FRAMEWORK].reason
