"""The Python environment as TensorFlow really experiences it (issue 18, issue 12 item 3).

Fake environments mirroring each situation of benchmarks/python_env_truth.py (real dist-info, RECORD,
WHEEL tags, PYTHONPATH/.pth/user-site path origins), each with the code it must produce or none, and a
test that applies every printed fix to the fake environment (with a fake pip) and re-runs the checks:
the finding is gone and no new warning or error appears.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import check_facts
from support.fake_pip import FakePip
from support.fake_site_packages import (
    JAX_0_4_38_REQUIRES,
    ML_DTYPES_0_5_REQUIRES,
    ML_DTYPES_0_7_REQUIRES,
    TF_2_20_REQUIRES,
    FakeSitePackages,
    pb2_header,
)
from support.snapshot_facts import edited_facts

from tfdoctor.derive.tensorflow_distribution import installed_tensorflow, tensorflow_providers
from tfdoctor.engine import Report
from tfdoctor.facts import Facts
from tfdoctor.facts.probes.pyenv_snapshot import snapshot
from tfdoctor.model import AdminFix, EnvFix, EnvOp
from tfdoctor.testing import facts_from

PIP = f"{sys.executable} -m pip"
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
AVX2_FLAGS = ["fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma", "bmi2"]
AVX512_FLAGS = [*AVX2_FLAGS, "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"]


@dataclass
class Environment:
    """A fake environment: its site-packages, folders outside it, and the variables the job runs with."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    cpu_flags: list[str] = field(default_factory=lambda: list(AVX2_FLAGS))
    user_site: bool = False  # a venv made with --system-site-packages (or no venv): ~/.local is on the path

    @property
    def site(self) -> FakeSitePackages:
        return FakeSitePackages(self.root / "venv/lib/site-packages")

    def folder(self, name: str) -> FakeSitePackages:
        return FakeSitePackages(self.root / name)

    @property
    def user(self) -> FakeSitePackages:
        return FakeSitePackages(self.root / "home/.local/lib/site-packages")

    def user_site_enabled(self) -> bool:
        return self.user_site and self.env.get("PYTHONNOUSERSITE", "") == ""

    def paths(self) -> list[str]:
        """The import path the interpreter builds: PYTHONPATH, the user site (site.py adds it before the
        site-packages when it is enabled), then site-packages, then .pth folders."""
        found = [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if self.user_site_enabled():
            found.append(str(self.user))
        found.append(str(self.site))
        for pth in sorted(self.site.path.glob("*.pth")):
            found += [line.strip() for line in pth.read_text().splitlines() if line.strip()]
        return found

    def facts(self) -> Facts:
        python = snapshot(paths=self.paths(), environ=self.env, prefix=str(self.root / "venv"),
                          site_dirs=[str(self.site)], user_site=str(self.user) if self.user_site_enabled() else None)
        return facts_from({"python": python, "host": {"nvidia_driver": None},
                           "cpu": {"cpuinfo": {"flags": self.cpu_flags, "model_name": "Intel(R) Core(TM) i5-8500"}}},
                          env=self.env)

    def check(self) -> Report:
        return check_facts(self.facts(), select=["PKG", "CPU001"])


def new(e: Environment, **versions: str) -> None:
    e.site.tensorflow().healthy_dependencies(**versions)


def old(e: Environment, **versions: str) -> None:
    e.site.tensorflow_2_15(**versions)


def numpy_2_on_pythonpath(e: Environment) -> None:
    old(e)
    e.folder("shared").dist("numpy", "2.1.3", top_level=("numpy",)).file("numpy/__init__.py")
    e.env["PYTHONPATH"] = str(e.folder("shared"))


def numpy_2_in_pth_after_site(e: Environment) -> None:
    old(e)
    e.site.file("numpy/__init__.py")
    e.folder("shared").dist("numpy", "2.1.3", top_level=("numpy",)).file("numpy/__init__.py")
    e.site.file("shared-libs.pth", f"{e.folder('shared')}\n")


def numpy_2_in_the_user_site(e: Environment) -> None:
    old(e)
    e.user_site = True
    e.user.dist("numpy", "2.1.3", top_level=("numpy",)).file("numpy/__init__.py")  # pip install --user numpy


def protobuf_4_in_the_user_site(e: Environment) -> None:
    """`pip install --user protobuf==4.25.8`, and the environment's own protobuf gone (issue 27 item 5)."""
    new(e)
    e.site.file("tensorflow/core/framework/attr_value_pb2.py", pb2_header("6.31.1"))
    shutil.rmtree(next(e.site.path.glob("protobuf-*.dist-info")))
    e.user_site = True
    e.user.dist("protobuf", "4.25.8", top_level=("google",)).file("google/protobuf/__init__.py")


def bare_numpy_on_pythonpath(e: Environment) -> None:
    new(e)
    e.site.file("numpy/__init__.py")
    e.folder("vendored").file("numpy/__init__.py")
    e.env["PYTHONPATH"] = str(e.folder("vendored"))


def library_deleted(e: Environment) -> None:
    new(e)
    (e.site.path / "tensorflow/libtensorflow_framework.so.2").unlink()


def library_truncated(e: Environment) -> None:
    """A copy of the environment that ran out of space: the file is there, cut short (issue 27 item 1)."""
    new(e)
    (e.site.path / "tensorflow/python/_pywrap_tensorflow_internal.so").write_bytes(b"\x7f")


def library_altered(e: Environment) -> None:
    """Same size, other bytes: only a hash tells."""
    new(e)
    (e.site.path / "tensorflow/python/_pywrap_tensorflow_internal.so").write_bytes(b"\x00ELF")


def tensorflow_2_15_on_pythonpath(e: Environment) -> None:
    """PYTHONPATH into another venv's site-packages holding tensorflow 2.15.1 (issue 27 item 4)."""
    new(e)
    other = e.folder("old-venv/lib/site-packages")
    other.tensorflow(name="tensorflow", version="2.15.1", requires=("numpy<2.0.0,>=1.23.5",), requires_python=">=3.9")
    e.env["PYTHONPATH"] = str(other)


def second_tensorflow_uninstalled(e: Environment) -> None:
    new(e)
    pip = FakePip(e.site)
    pip.run(f"{PIP} install 'tf-keras==2.21.0'")  # pulls `tensorflow` next to tensorflow-cpu
    pip.run(f"{PIP} uninstall -y tensorflow")


def numpy_for_python_3_10(e: Environment) -> None:
    new(e)
    shutil.rmtree(next(e.site.path.glob("numpy-*.dist-info")))
    e.site.dist("numpy", "2.2.6", top_level=("numpy",), tags=("cp310-cp310-manylinux_2_17_x86_64",))


def transformers_without_tf_keras(e: Environment) -> None:
    new(e)
    e.site.dist("transformers", "4.57.6", requires=("numpy>=1.17",), top_level=("transformers",))


def avx512_build(e: Environment) -> None:
    e.site.tensorflow(name="intel-tensorflow-avx512", version="2.14.0", requires=("numpy>=1.23.5",),
                      requires_python=">=3.9")
    e.site.healthy_dependencies(numpy="1.26.4", keras="2.14.0")


def ml_dtypes_0_7_on_numpy_1(e: Environment) -> None:
    """`pip install numpy==1.26.4` into a TensorFlow 2.21 environment, ml-dtypes 0.7.0 left as it was."""
    new(e, numpy="1.26.4", ml_dtypes="0.7.0")
    e.site.dist("ml_dtypes", "0.7.0", requires=ML_DTYPES_0_7_REQUIRES, top_level=("ml_dtypes",))


def ml_dtypes_0_5_on_numpy_1(e: Environment) -> None:
    new(e, numpy="1.26.4", ml_dtypes="0.5.4")
    e.site.dist("ml_dtypes", "0.5.4", requires=ML_DTYPES_0_5_REQUIRES, top_level=("ml_dtypes",))


def ml_dtypes_0_6_on_numpy_1(e: Environment) -> None:
    """ml-dtypes 0.6.0 declares numpy>=2.0.0 (as 0.7.0 does) and runs on numpy 1.26.4 all the same (measured)."""
    new(e, numpy="1.26.4", ml_dtypes="0.6.0")
    e.site.dist("ml_dtypes", "0.6.0", requires=ML_DTYPES_0_7_REQUIRES, top_level=("ml_dtypes",))


def ml_dtypes_0_7_on_numpy_2(e: Environment) -> None:
    new(e, ml_dtypes="0.7.0")
    e.site.dist("ml_dtypes", "0.7.0", requires=ML_DTYPES_0_7_REQUIRES, top_level=("ml_dtypes",))


def numpy_1_on_pythonpath_under_ml_dtypes_0_7(e: Environment) -> None:
    """benchmarks/python_env_truth.py run 4: the venv's own numpy 2.4.6 shadowed by a PYTHONPATH folder's 1.26.4."""
    ml_dtypes_0_7_on_numpy_2(e)
    e.folder("shared").dist("numpy", "1.26.4", top_level=("numpy",)).file("numpy/__init__.py")
    e.env["PYTHONPATH"] = str(e.folder("shared"))


def old_tensorflow_next_to_jax(e: Environment) -> None:
    """TensorFlow 2.15 with numpy 2 and the ml-dtypes jax wants (>=0.4.0): pinning numpy<2 for TensorFlow would
    move ml-dtypes back under its ~=0.3.1, below jax's floor."""
    old(e, numpy="2.1.3", ml_dtypes="0.4.1")
    e.site.dist("jax", "0.4.38", requires=JAX_0_4_38_REQUIRES, top_level=("jax",))
    e.site.dist("jaxlib", "0.4.38", requires=("ml-dtypes>=0.2.0", "numpy>=1.24", "scipy>=1.10"), top_level=("jaxlib",))


def remove(name: str) -> Callable[[Environment], None]:
    def build(e: Environment) -> None:
        new(e)
        shutil.rmtree(next(e.site.path.glob(f"{name}-*.dist-info")))
    return build


def with_tf_keras(build: Callable[[Environment], None]) -> Callable[[Environment], None]:
    def both(e: Environment) -> None:
        build(e)
        e.site.dist("tf_keras", "2.21.0", requires=("tensorflow<2.22,>=2.21",), top_level=("tf_keras",))
    return both


@dataclass(frozen=True)
class Situation:
    name: str
    build: Callable[[Environment], None]
    codes: tuple[tuple[str, str], ...]  # (code, severity) expected; () for a healthy environment
    env: tuple[tuple[str, str], ...] = ()
    cpu_flags: tuple[str, ...] = tuple(AVX2_FLAGS)


# The benchmark's situations, one fake each (docs/python-environment.md has the real-venv table).
SITUATIONS = [
    # healthy: silent, or a finding below error level
    Situation("2.21 as installed", new, ()),
    Situation("2.15 as installed", old, ()),
    Situation("2.21 + numpy 1.26.4", lambda e: new(e, numpy="1.26.4"), ()),
    Situation("2.21 + numpy 1.25.2", lambda e: new(e, numpy="1.25.2"), (("PKG005", "warning"),)),
    Situation("2.21 + keras 3.11.3", lambda e: new(e, keras="3.11.3"), (("PKG005", "warning"),)),
    Situation("2.21 + h5py 3.15.1", lambda e: new(e, h5py="3.15.1"), (("PKG005", "info"),)),
    Situation("2.15 + tensorboard 2.16.2", lambda e: old(e, tensorboard="2.16.2"), (("PKG005", "info"),)),
    Situation("2.15 + protobuf 5.29.5", lambda e: old(e, protobuf="5.29.5"), (("PKG005", "warning"),)),
    Situation("2.15 + wrapt 1.16.0", lambda e: old(e, wrapt="1.16.0"), (("PKG005", "info"),)),
    Situation("2.15 + ml-dtypes 0.4.1", lambda e: old(e, ml_dtypes="0.4.1"), (("PKG005", "warning"),)),
    Situation("2.21 + tf-keras without --no-deps", lambda e: (new(e), FakePip(e.site).run(
        f"{PIP} install 'tf-keras==2.21.0'")), (("PKG002", "warning"),)),
    Situation("2.21 + tf-keras, TF_USE_LEGACY_KERAS=1", with_tf_keras(new), (), env=(("TF_USE_LEGACY_KERAS", "1"),)),
    Situation("2.21 + transformers 4 + tf-keras", with_tf_keras(transformers_without_tf_keras), ()),
    Situation("2.21 without libclang", remove("libclang"), (("PKG009", "warning"),)),
    Situation("2.15 + a .pth adding numpy 2 after site-packages", numpy_2_in_pth_after_site, ()),
    Situation("intel-tensorflow-avx512 on an AVX-512 CPU", avx512_build, (), cpu_flags=tuple(AVX512_FLAGS)),
    Situation("2.21 + tf-keras 2.20.1, TF_USE_LEGACY_KERAS=1", lambda e: (new(e), e.site.dist(
        "tf_keras", "2.20.1", requires=("tensorflow<2.21,>=2.20",), top_level=("tf_keras",))),
        (("PKG007", "info"),), env=(("TF_USE_LEGACY_KERAS", "1"),)),
    Situation("2.20 + protobuf 6.33.6 (gencode 5.28.3, no cap)", lambda e: (e.site.tensorflow(
        version="2.20.0", requires=TF_2_20_REQUIRES, gencode="5.28.3"), e.site.healthy_dependencies(
        protobuf="6.33.6")), (("PKG016", "info"),)),
    # broken: an error naming the cause
    Situation("2.15 + numpy 2.1.3", lambda e: old(e, numpy="2.1.3"), (("PKG005", "error"),)),
    Situation("2.21 + protobuf 5.29.5", lambda e: new(e, protobuf="5.29.5"), (("PKG005", "error"),)),
    Situation("2.21 + ml-dtypes 0.4.1", lambda e: new(e, ml_dtypes="0.4.1"), (("PKG005", "error"),)),
    Situation("2.21 + keras 2.15.0", lambda e: new(e, keras="2.15.0"), (("PKG005", "error"),)),
    Situation("2.15 + keras 3.11.3", lambda e: old(e, keras="3.11.3"), (("PKG005", "error"),)),
    Situation("2.21 with a shared object deleted", library_deleted, (("PKG011", "error"),)),
    Situation("2.21 with a shared object truncated", library_truncated, (("PKG011", "error"),)),
    Situation("2.21 with a shared object altered, same size", library_altered, (("PKG011", "error"),)),
    Situation("2.21 + tf-keras, then uninstall tensorflow", second_tensorflow_uninstalled, (("PKG011", "error"),)),
    Situation("2.21 + numpy of a cp310 wheel", numpy_for_python_3_10, (("PKG012", "error"),)),
    Situation("2.15 + PYTHONPATH holding numpy 2.1.3", numpy_2_on_pythonpath,
              (("PKG005", "error"), ("PKG013", "warning"))),
    Situation("2.21 + a bare numpy on PYTHONPATH", bare_numpy_on_pythonpath, (("PKG013", "warning"),)),
    Situation("2.21 installed, 2.15.1 on PYTHONPATH", tensorflow_2_15_on_pythonpath,
              (("PKG013", "warning"), ("PKG005", "error"), ("PKG010", "error"))),  # numpy 2, keras 3
    Situation("2.15 + numpy 2.1.3 in the user site", numpy_2_in_the_user_site,
              (("PKG005", "error"), ("PKG013", "warning"))),
    Situation("2.21 without ml_dtypes", remove("ml_dtypes"), (("PKG009", "error"),)),
    Situation("2.21 + protobuf 4.25.8 from the user site", protobuf_4_in_the_user_site, (("PKG005", "error"),)),
    Situation("2.21 without wrapt", remove("wrapt"), (("PKG009", "error"),)),
    Situation("2.21 + transformers 4 without tf-keras", transformers_without_tf_keras, (("PKG014", "error"),)),
    Situation("intel-tensorflow-avx512 on an AVX2 CPU", avx512_build, (("PKG015", "error"),)),
    # issue 36: the requirement graph below TensorFlow
    Situation("2.21 + numpy 1.26.4 + ml-dtypes 0.7.0", ml_dtypes_0_7_on_numpy_1, (("PKG021", "error"),)),
    Situation("2.21 + numpy 1.26.4 + ml-dtypes 0.5.4", ml_dtypes_0_5_on_numpy_1, ()),
    Situation("2.21 + numpy 1.26.4 + ml-dtypes 0.6.0", ml_dtypes_0_6_on_numpy_1, (("PKG021", "info"),)),
    Situation("2.21 + numpy 2.4.6 + ml-dtypes 0.7.0", ml_dtypes_0_7_on_numpy_2, ()),
    Situation("2.21 + PYTHONPATH holding numpy 1.26.4 + ml-dtypes 0.7.0", numpy_1_on_pythonpath_under_ml_dtypes_0_7,
              (("PKG021", "error"), ("PKG013", "warning"))),
    Situation("2.15 + numpy 2.1.3 next to jax 0.4.38", old_tensorflow_next_to_jax,
              (("PKG005", "error"), ("PKG005", "warning"))),
]


def make(tmp_path: Path, situation: Situation) -> Environment:
    environment = Environment(tmp_path, env=dict(situation.env), cpu_flags=list(situation.cpu_flags))
    situation.build(environment)
    return environment


def found(report: Report) -> set[tuple[str, str]]:
    return {(f.code, f.severity.label) for f in report.findings()}


@pytest.mark.parametrize("situation", SITUATIONS, ids=[s.name for s in SITUATIONS])
def test_situation_codes_and_severities(tmp_path, situation):
    report = make(tmp_path, situation).check()
    assert found(report) == set(situation.codes)
    assert report.crashed() == []


def test_healthy_situations_are_at_least_half():
    healthy = [s for s in SITUATIONS if all(severity != "error" for _, severity in s.codes)]
    assert len(SITUATIONS) >= 20 and len(healthy) * 2 >= len(SITUATIONS)


# -- fixes: applied to the fake environment, then the checks again ----------------------------------

def apply_fix(environment: Environment, fix: AdminFix | EnvFix) -> None:
    if isinstance(fix, EnvFix):
        for change in fix.changes:
            if change.op is EnvOp.UNSET:
                environment.env.pop(change.name, None)
            else:
                environment.env[change.name] = str(change.value)
        return
    pip = FakePip(environment.site)
    if fix.text.startswith("edit "):  # what a person does by hand: "edit <file>: delete the line naming <folder>"
        pth, folder = fix.text[5:].split(": delete the line naming ")
        path = Path(pth.strip("'"))
        path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                if line.strip() != folder))
    for step in fix.steps:
        if " -m pip " in step:
            pip.run(step)
        else:
            raise AssertionError(f"a step the test cannot apply: {step}")


def unmet_requirements_of_all(facts: Facts) -> set[tuple[str, str]]:
    """(distribution, Requires-Dist line) of every installed distribution whose requirement the installed
    versions do not meet: what `pip check` lists."""
    from tfdoctor.derive.requirement_graph import requirements_of
    from tfdoctor.derive.requirement_ranges import version_satisfies
    from tfdoctor.derive.tensorflow_distribution import installed_version

    found = set()
    for name in facts.get("python.distributions"):
        for requirement, line in requirements_of(facts, name) or ():
            have = installed_version(facts, requirement.name)
            if have is not None and requirement.specifier and version_satisfies(have, requirement.specifier) is False:
                found.add((name, line))
    return found


def test_the_refused_numpy_pin_would_have_broken_jax(tmp_path):
    """What the graph check prevents, seen by the same measure as the test above: running the command anyway
    adds jax's ml_dtypes requirement to the unmet ones."""
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.15 + numpy 2.1.3 next to jax 0.4.38"))
    before = unmet_requirements_of_all(environment.facts())
    FakePip(environment.site).run(f"{PIP} install 'numpy<2.0.0,>=1.23.5' 'tensorflow-cpu==2.15.1'")
    assert unmet_requirements_of_all(environment.facts()) - before == {("jax", "ml_dtypes>=0.4.0")}


# The shadowing TensorFlow's first fix (PYTHONPATH unset) is checked by its own test below.
# Next to jax no pip command fixes TensorFlow 2.15's numpy without breaking jax: its test is in
# tests/test_checks_package_graph.py.
FIXABLE = [s for s in SITUATIONS if s.codes and s.name not in ("intel-tensorflow-avx512 on an AVX2 CPU",
                                                               "2.21 installed, 2.15.1 on PYTHONPATH",
                                                               "2.15 + numpy 2.1.3 next to jax 0.4.38")]


@pytest.mark.parametrize("situation", FIXABLE, ids=[s.name for s in FIXABLE])
def test_every_fix_removes_its_finding_and_adds_none(tmp_path, situation):
    environment = make(tmp_path, situation)
    before = environment.check()
    unmet = unmet_requirements_of_all(environment.facts())
    providers = {(d.name, d.version) for d in tensorflow_providers(environment.facts())}
    for finding in before.findings():
        for fix in finding.fixes:
            apply_fix(environment, fix)
    after = environment.check()
    fixed = {code for code, _ in situation.codes}
    assert not {code for code, _ in found(after)} & fixed, [f.message for f in after.findings()]
    assert unmet_requirements_of_all(environment.facts()) <= unmet  # no installed distribution broken by a fix
    new_problems = {(c, s) for c, s in found(after) - found(before) if s in ("error", "warning")}
    assert new_problems == set()
    kept = installed_tensorflow(environment.facts())
    assert (kept.name, kept.version) in providers  # one of the user's TensorFlow distributions, same version


def test_avx512_fix_installs_the_same_version_of_intel_tensorflow(tmp_path):
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "intel-tensorflow-avx512 on an AVX2 CPU"))
    (finding,) = environment.check().findings()
    assert finding.message.startswith("intel-tensorflow-avx512 2.14.0 needs avx512f, which Intel(R) Core(TM) i5-8500 "
                                      "lacks: import tensorflow will die with 'Illegal instruction'")
    apply_fix(environment, finding.fixes[0])
    assert environment.check().codes() == []
    kept = installed_tensorflow(environment.facts())
    assert (kept.name, kept.version) == ("intel-tensorflow", "2.14.0")


# -- what the findings say ---------------------------------------------------------------------------

def test_numpy_2_under_a_numpy_1_build_names_the_symptom(tmp_path):
    report = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.15 + numpy 2.1.3")).check()
    (finding,) = report.findings()
    assert finding.message == (
        "numpy 2.1.3 is outside TensorFlow 2.15.1's range numpy<2.0.0,>=1.23.5: import tensorflow fails: "
        "'A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x', then 'ImportError: "
        "numpy.core.umath failed to import' or 'AttributeError: _ARRAY_API not found'")
    assert finding.fixes == (AdminFix("Install numpy<2.0.0,>=1.23.5 next to TensorFlow 2.15.1", (
        f"{PIP} install 'numpy<2.0.0,>=1.23.5' 'tensorflow-cpu==2.15.1'",)),)


def test_protobuf_4_from_the_user_site_quotes_the_import_error_it_causes(tmp_path):
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.21 + protobuf 4.25.8 from the user site"))
    (finding,) = environment.check().findings()
    assert finding.message == (
        f"protobuf 4.25.8 (imported from the user site-packages {environment.user}) is outside TensorFlow 2.21.0's "
        "range protobuf<8.0.0,>=6.31.1: import tensorflow fails: ImportError: cannot import name 'runtime_version' "
        "from 'google.protobuf' (the generated _pb2 modules import it; protobuf has it from 5.26)")


def test_shadowing_from_pythonpath_is_named_and_the_fix_addresses_it(tmp_path):
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.15 + PYTHONPATH holding numpy 2.1.3"))
    report = environment.check()
    shared = str(environment.folder("shared"))
    pkg005 = next(f for f in report.findings() if f.code == "PKG005")
    assert pkg005.message.startswith(f"numpy 2.1.3 (imported from the PYTHONPATH entry {shared}) is outside "
                                     "TensorFlow 2.15.1's range")
    assert pkg005.fixes[0] == EnvFix(f"Take {shared} out of PYTHONPATH (it supplies numpy)",
                                     (pkg005.fixes[0].changes[0],), pkg005.fixes[0].applicability)
    assert pkg005.fixes[0].changes[0].op is EnvOp.UNSET
    pkg013 = next(f for f in report.findings() if f.code == "PKG013")
    assert pkg013.message == (f"numpy is imported from the PYTHONPATH entry {shared}, ahead of the numpy 1.26.4 "
                              f"installed in {environment.site}: numpy 2.1.3 is what `import numpy` loads, not the "
                              "1.26.4 installed in the environment")


def test_shadowing_tensorflow_names_the_release_really_imported(tmp_path):
    """Issue 27 item 4: the PYTHONPATH entry supplies TensorFlow 2.15.1; the checks judge that one, and PKG002
    does not count a distribution in another folder as sharing the package."""
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.21 installed, 2.15.1 on PYTHONPATH"))
    report = environment.check()
    other = environment.folder("old-venv/lib/site-packages")
    pkg013 = next(f for f in report.findings() if f.code == "PKG013")
    assert pkg013.message == (
        f"tensorflow-cpu is imported from the PYTHONPATH entry {other}, ahead of the tensorflow-cpu 2.21.0 installed "
        f"in {environment.site}: TensorFlow 2.15.1 (tensorflow) is what `import tensorflow` loads, not the 2.21.0 "
        "installed in the environment")
    assert pkg013.fixes[0].changes[0].op is EnvOp.UNSET
    kept = installed_tensorflow(environment.facts())
    assert (kept.name, kept.version) == ("tensorflow", "2.15.1")
    pkg005 = next(f for f in report.findings() if f.code == "PKG005")  # numpy 2 under the 2.15 really imported
    assert pkg005.message.startswith("numpy 2.4.6 is outside TensorFlow 2.15.1's range numpy<2.0.0,>=1.23.5")
    environment.env.pop("PYTHONPATH")  # the healthy twin: the venv's own 2.21
    assert environment.check().codes() == []


def test_user_site_winning_over_the_venv_is_named_and_ignored_by_the_fix(tmp_path):
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.15 + numpy 2.1.3 in the user site"))
    report = environment.check()
    pkg013 = next(f for f in report.findings() if f.code == "PKG013")
    assert pkg013.message == (f"numpy is imported from the user site-packages {environment.user}, ahead of the "
                              f"numpy 1.26.4 installed in {environment.site}: numpy 2.1.3 is what `import numpy` "
                              "loads, not the 1.26.4 installed in the environment")
    (change,) = pkg013.fixes[0].changes
    assert (change.op, change.name, change.value) == (EnvOp.SET, "PYTHONNOUSERSITE", "1")


def test_pythonpath_fix_keeps_the_other_entries(tmp_path):
    environment = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.15 + PYTHONPATH holding numpy 2.1.3"))
    environment.env["PYTHONPATH"] = f"/opt/tools{os.pathsep}{environment.folder('shared')}"
    finding = next(f for f in environment.check().findings() if f.code == "PKG013")
    (change,) = finding.fixes[0].changes
    assert (change.op, change.name, change.value) == (EnvOp.SET, "PYTHONPATH", "/opt/tools")


def test_a_pth_folder_ahead_of_nothing_is_named_with_its_file(tmp_path):
    environment = Environment(tmp_path)
    old(environment)
    shutil.rmtree(next(environment.site.path.glob("numpy-*.dist-info")))  # only the .pth's copy is installed
    shared = environment.folder("shared").dist("numpy", "2.1.3", top_level=("numpy",)).file("numpy/__init__.py")
    environment.site.file("shared-libs.pth", f"{shared}\n")
    finding = next(f for f in environment.check().findings() if f.code == "PKG005")
    pth = environment.site.path / "shared-libs.pth"
    assert f"(imported from {shared}, added to the path by {pth})" in finding.message
    assert finding.fixes[0] == AdminFix(f"Remove {shared} from {pth} (it supplies numpy)", (),
                                        text=f"edit {pth}: delete the line naming {shared}")


def test_damaged_install_lists_what_is_missing(tmp_path):
    report = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.21 with a shared object deleted")).check()
    (finding,) = report.findings()
    assert finding.message == ("tensorflow-cpu 2.21.0 is damaged: of the 7 shared objects and __init__.py files "
                               "its RECORD lists, 1 missing (first: tensorflow/libtensorflow_framework.so.2) "
                               "(existence and size checked for every file, sha256 for 3 shared objects "
                               "(0 KiB, budget 1 MiB))")
    assert finding.fixes[0].steps == (f"{PIP} install --force-reinstall --no-deps 'tensorflow-cpu==2.21.0'",)


def test_truncated_shared_object_is_found_by_its_size(tmp_path):
    """Issue 27 item 1: _pywrap_tfe.so cut to 4096 bytes passed the existence check; import dies with SIGBUS."""
    report = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.21 with a shared object truncated")).check()
    (finding,) = report.findings()
    assert finding.message == (
        "tensorflow-cpu 2.21.0 is damaged: of the 7 shared objects and __init__.py files its RECORD lists, 1 of "
        "another size than installed (tensorflow/python/_pywrap_tensorflow_internal.so is 1 bytes, RECORD says 4); "
        "import tensorflow dies with a bus error (SIGBUS, exit 135) or fails to load a truncated or altered shared "
        "object (existence and size checked for every file, sha256 for 3 shared objects (0 KiB, budget 1 MiB))")
    assert finding.evidence["python.watched.tensorflow-cpu.record.size_mismatch"] == [
        {"path": "tensorflow/python/_pywrap_tensorflow_internal.so", "recorded": 4, "actual": 1}]
    assert finding.fixes[0].steps == (f"{PIP} install --force-reinstall --no-deps 'tensorflow-cpu==2.21.0'",)


def test_altered_shared_object_is_found_by_its_hash_within_the_budget(tmp_path):
    altered = next(s for s in SITUATIONS if s.name == "2.21 with a shared object altered, same size")
    environment = make(tmp_path, altered)
    (finding,) = environment.check().findings()
    assert "1 with another sha256 than installed (first: tensorflow/python/_pywrap_tensorflow_internal.so)" \
        in finding.message
    from tfdoctor.facts.probes.pyenv_snapshot import verify_record

    dist_dir = str(environment.site.path / "tensorflow_cpu-2.21.0.dist-info")
    outside_budget = verify_record(dist_dir, str(environment.site), hash_budget=3)  # no file fits: sizes only
    assert (outside_budget["hashed"], outside_budget["hash_mismatch_count"]) == (0, 0)
    assert outside_budget["size_checked"] == 7
    within = verify_record(dist_dir, str(environment.site))
    assert (within["hashed"], within["hashed_bytes"], within["hash_mismatch"]) == (
        4, 16, ["tensorflow/python/_pywrap_tensorflow_internal.so"])


def test_wheel_for_another_python(tmp_path):
    report = make(tmp_path, next(s for s in SITUATIONS if s.name == "2.21 + numpy of a cp310 wheel")).check()
    (finding,) = report.findings()
    assert finding.message == (f"numpy 2.2.6 in {tmp_path}/venv/lib/site-packages is a wheel for another Python "
                               f"(cp310-cp310-manylinux_2_17_x86_64); this interpreter is CPython {PYTHON}: its "
                               "compiled modules will not load") or PYTHON == "3.10"
    assert finding.fixes[0].steps == (f"{PIP} install --force-reinstall --no-deps 'numpy==2.2.6'",)


def test_tensorflow_wheel_in_a_python_it_has_no_wheels_for_names_the_range(tmp_path):
    """A venv of 3.11 whose python became 3.14 (upgraded in place): reinstalling cannot help, a new one can."""
    environment = Environment(tmp_path)
    new(environment)
    facts = environment.facts()
    facts.sections["python"]["version"] = "3.14.0"
    report = check_facts(facts, select=["PKG012"])
    finding = next(f for f in report.findings() if "tensorflow-cpu" in f.message)
    assert finding.fixes == (AdminFix("Use a Python from 3.10 to 3.13 for TensorFlow 2.21.0", (
        "python3.13 -m venv NEW_ENV   # TensorFlow 2.21.0 has wheels for CPython 3.10-3.13",
        "NEW_ENV/bin/python -m pip install 'tensorflow-cpu==2.21.0'")),)


@pytest.mark.parametrize(("tags", "python", "fits"), [
    (("cp311-cp311-manylinux_2_17_x86_64",), (3, 11), True),
    (("cp311-cp311-manylinux_2_17_x86_64",), (3, 12), False),
    (("cp310-abi3-manylinux2014_x86_64",), (3, 12), True),   # protobuf's abi3 wheel
    (("cp312-abi3-manylinux2014_x86_64",), (3, 11), False),
    (("py3-none-any",), (3, 14), True),
    (("cp313-cp313t-manylinux_2_17_x86_64",), (3, 13), True),  # free-threaded: not judged here
    ((), (3, 11), True),  # no WHEEL file: nothing to judge
])
def test_wheel_tags_against_the_interpreter(tags, python, fits):
    from tfdoctor.derive.wheel_tags import wheel_fits_interpreter

    assert wheel_fits_interpreter(tags, python)[0] is fits


def test_python_newer_than_every_tensorflow_names_the_supported_range(tmp_path):
    environment = Environment(tmp_path)
    environment.site.healthy_dependencies()
    facts = environment.facts()
    facts.sections["python"]["version"] = "3.14.0"
    (finding,) = check_facts(facts, select=["PKG"]).findings()
    assert finding.code == "PKG001"
    assert finding.message.endswith("no TensorFlow release has wheels for Python 3.14.0: TensorFlow 2.21 supports "
                                    "CPython 3.10 to 3.13")
    assert finding.fixes == (AdminFix("Use a Python from 3.10 to 3.13 for TensorFlow 2.21", (
        "python3.13 -m venv NEW_ENV   # any CPython from 3.10 to 3.13",
        "NEW_ENV/bin/python -m pip install 'tensorflow==2.21.*'")),)
    facts.sections["python"]["version"] = "3.13.1"  # a supported Python: plain advice
    (finding,) = check_facts(facts, select=["PKG"]).findings()
    assert finding.fixes[0].steps[-1] == f"{PIP} install tensorflow"


def test_a_dependency_importable_without_metadata_is_not_missing(tmp_path):
    environment = Environment(tmp_path)
    remove("wrapt")(environment)
    environment.site.file("wrapt/__init__.py")  # copied in by hand, no dist-info
    assert environment.check().codes() == []


def test_open_range_release_with_numpy_2_is_a_known_break(tmp_path):
    """TensorFlow 2.14.0 declared numpy>=1.23.5 without a cap: pip installs numpy 2 next to it."""
    environment = Environment(tmp_path)
    environment.site.tensorflow(version="2.14.0", requires=("numpy>=1.23.5", "keras<2.15,>=2.14.0"),
                                requires_python=">=3.9")
    environment.site.healthy_dependencies(numpy="2.1.3", keras="2.14.0")
    (finding,) = environment.check().findings()
    assert (finding.code, finding.severity.label) == ("PKG010", "error")
    assert finding.message.startswith("numpy 2.1.3 breaks TensorFlow 2.14.0 although its metadata allows it: "
                                      "import tensorflow fails")
    assert finding.fixes[0].steps == (f"{PIP} install 'numpy<2' 'tensorflow-cpu==2.14.0'",)
    environment.site.healthy_dependencies(numpy="1.26.4")  # its healthy twin
    shutil.rmtree(environment.site.path / "numpy-2.1.3.dist-info")
    assert environment.check().codes() == []


PKG011_FIXTURE = "checks/pkg011-damaged-install-lists-what-is-missing.json"


@pytest.mark.parametrize("field", ["missing", "size_mismatch", "hash_mismatch"])
@pytest.mark.parametrize("value", [None, "libtensorflow_framework.so.2", {"path": "x"}])
def test_a_damaged_record_with_a_malformed_list_is_not_checked_never_a_crash(field, value):
    """A hand-made --facts file whose list of damaged files is null or not a list (found by the property
    test on the PKG011 fixture): PKG011 says it could not check, it does not crash."""
    from tfdoctor.model import Status

    facts = edited_facts(PKG011_FIXTURE, {f"python.watched.tensorflow-cpu.record.{field}": value})
    result = check_facts(facts, select=["PKG011"]).result("PKG011")
    assert result.status is Status.NOT_CHECKED
    assert result.reason == "python.watched.tensorflow-cpu.record: malformed lists of files"


@pytest.mark.parametrize("field", ["hash_budget", "hashed", "hashed_bytes", "hash_cached"])
def test_a_damaged_record_with_malformed_figures_still_reports_the_damage(field):
    """The figures that only describe how far the verification went (found by the property test: a
    hash_budget of ":") are shown as 0 when malformed; the damage itself is still reported."""
    from tfdoctor.model import Status

    facts = edited_facts(PKG011_FIXTURE, {f"python.watched.tensorflow-cpu.record.{field}": ":"})
    result = check_facts(facts, select=["PKG011"]).result("PKG011")
    assert result.status is Status.FAILED
    assert [f.code for f in result.findings] == ["PKG011"]
