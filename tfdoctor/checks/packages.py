"""PKG — packages: the TensorFlow distribution and what it was built and declared to run with.

Everything is read from the installed files (METADATA's Requires-Dist and Requires-Python, WHEEL,
RECORD, build_info.py) and the import path's origins, never by importing TensorFlow. How bad a
dependency outside TensorFlow's range is comes from the coupling table
(tfdoctor/knowledge/python_compatibility.toml, via tfdoctor/derive/python_compatibility.py). Every pip
command suggested here keeps the TensorFlow that is installed: it pins it, or uses --no-deps where a
dependency would pull another TensorFlow distribution (tests/test_checks_packages_coupling.py applies
each fix to a fake environment and runs the checks again).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping

from tfdoctor.derive import python_compatibility as compat
from tfdoctor.derive.requirement_ranges import (
    Requirement,
    canonical_name,
    marker_applies,
    parse_requirement,
    version_satisfies,
)
from tfdoctor.derive.tensorflow_distribution import (
    IMPORT_NAMES,
    TENSORFLOW_DISTS,
    TensorflowDistribution,
    build_info,
    installed_tensorflow,
    installed_version,
    marker_environment,
    release_tuple,
    sharing_providers,
    tensorflow_distributions,
    top_level_import_name,
)
from tfdoctor.derive.wheel_tags import interpreter_cpython, wheel_fits_interpreter
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Fix, Severity, set_env, unset_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# TensorFlow's own test of the variable (tensorflow/python/util/lazy_loader.py): these three only.
LEGACY_KERAS_TRUE = ("true", "True", "1")
# TensorFlow's lazy Keras loader routes tf.keras to tf_keras when TF_USE_LEGACY_KERAS is set from 2.15 on
# (2.16 then made Keras 3 the default tf.keras); earlier releases ignore the variable.
LEGACY_KERAS_VARIABLE_SINCE = (2, 15)
TF_KERAS_DISTS = ("tf-keras", "tf-keras-nightly")
# Where a path entry comes from (python.path_origins) when it is not the environment's own site-packages.
FOREIGN_ORIGINS = ("pythonpath", "user-site", "pth:")


def _executable(facts: Facts) -> str:
    return str(facts.peek("python.executable") or "this interpreter")


def _command_word(path: object) -> str | None:
    """A path of the facts as a word of a command shown to the user (fixes.quoting.sh_word); None when no
    file can have it (not a string, empty, a NUL: a hand-made --facts file), which the quoting refuses."""
    from tfdoctor.fixes.quoting import sh_word

    return sh_word(path) if isinstance(path, str) and path and "\0" not in path else None


def _pip(facts: Facts) -> str:
    """pip of the inspected interpreter (with --python, the job's, not tfdoctor's own)."""
    word = _command_word(facts.peek("python.executable"))
    return f"{word} -m pip" if word else "pip"


def _origin(facts: Facts, location: str) -> str:
    """Why `location` is on the inspected interpreter's path (python.path_origins), "" when unknown."""
    paths, origins = facts.peek("python.path"), facts.peek("python.path_origins")
    if not isinstance(paths, list) or not isinstance(origins, list) or len(paths) != len(origins) \
            or location not in paths:
        return ""  # not recorded, or a hand-edited path: nothing said about where it comes from
    found = origins[paths.index(location)]
    return found if isinstance(found, str) else ""


def _is_foreign(origin: str) -> bool:
    return origin.startswith(FOREIGN_ORIGINS)


def _describe_origin(origin: str, location: str) -> str:
    if origin == "pythonpath":
        return f"the PYTHONPATH entry {location}"
    if origin == "user-site":
        return f"the user site-packages {location}"
    if origin.startswith("pth:"):
        return f"{location}, added to the path by {origin[4:]}"
    return location


def _origin_fix(facts: Facts, name: str, location: str) -> Fix | None:
    """The fix that stops `location` from supplying `name`, when a variable or a .pth put it on the path:
    a pip command in the environment would not change what is imported."""
    origin = _origin(facts, location)
    if origin == "pythonpath":
        current = facts.env("PYTHONPATH") or ""
        keep = [e for e in current.split(os.pathsep)
                if e and os.path.normpath(e) != os.path.normpath(location)]
        change = set_env("PYTHONPATH", os.pathsep.join(keep)) if keep else unset_env("PYTHONPATH")
        return EnvFix(f"Take {location} out of PYTHONPATH (it supplies {name})", (change,), Applicability.UNSAFE)
    if origin == "user-site":
        return EnvFix(f"Ignore the user site-packages {location} (it supplies {name})",
                      (set_env("PYTHONNOUSERSITE", "1"),), Applicability.UNSAFE)
    if origin.startswith("pth:"):
        pth = origin[4:]
        return AdminFix(f"Remove {location} from {pth} (it supplies {name})", (),
                        text=f"edit {_command_word(pth) or 'that .pth file'}: delete the line naming {location}")
    return None


def _tf_keras_install(facts: Facts, dist: TensorflowDistribution) -> str:
    """tf-keras without its dependencies: tf-keras requires the distribution named `tensorflow`, so a
    plain install next to tensorflow-cpu (or intel-tensorflow…) adds a second TensorFlow."""
    return f"{_pip(facts)} install --no-deps '{_tf_keras_range(dist)}'"


@check("PKG001", "tensorflow-not-installed", Severity.WARNING)
def tensorflow_not_installed(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds no TensorFlow in the inspected Python environment: no TensorFlow distribution (tensorflow,
    tensorflow-cpu, tf-nightly…) and no `tensorflow` package on the interpreter's path.

    Why is this bad?
    The job will fail at `import tensorflow`. More often tfdoctor itself was installed apart from the
    job (pipx, another virtual environment) and inspected its own interpreter instead of the job's:
    then every package check below says nothing about the environment that matters.

    Example:
    `pipx install .` (in tfdoctor's clone), then `tfdoctor check` while the job runs ~/venvs/train/bin/python.

    Fix:
    Point tfdoctor at the job's interpreter with `--python PATH`, or install TensorFlow there.

    Fix safety:
    Manual: tfdoctor cannot know which interpreter the job uses.
    """
    if tensorflow_distributions(facts) or facts.get("python.tensorflow.package_dir"):
        return
    executable = _executable(facts)
    install = f"{_pip(facts)} install tensorflow"
    evidence = {"python.executable": executable, "python.tensorflow.package_dir": None}
    version = str(facts.peek("python.version") or "")
    if version and compat.newer_than_every_release(version):
        release, oldest, newest = compat.newest_release()
        evidence["python.version"] = version
        yield Finding(
            f"TensorFlow is not installed for {executable}, and no TensorFlow release has wheels for Python "
            f"{version}: TensorFlow {release} supports CPython {oldest} to {newest}",
            evidence=evidence,
            fixes=(AdminFix(f"Use a Python from {oldest} to {newest} for TensorFlow {release}",
                            (f"python{newest} -m venv NEW_ENV   # any CPython from {oldest} to {newest}",
                             f"NEW_ENV/bin/python -m pip install 'tensorflow=={release}.*'")),),
        )
        return
    if facts.peek("python.other_interpreter") is True:
        yield Finding(f"TensorFlow is not installed for {executable}", evidence=evidence,
                      fixes=(AdminFix("Install TensorFlow in this environment", (install,)),))
        return
    yield Finding(
        f"TensorFlow is not installed for {executable}; if the job runs another interpreter, "
        "inspect that one with --python PATH",
        evidence=evidence,
        fixes=(AdminFix("Inspect the job's interpreter, or install TensorFlow in this one",
                        ("tfdoctor check --python /path/to/the/job/venv/bin/python", install)),),
    )


@check("PKG002", "several-tensorflow-distributions", Severity.ERROR)
def several_tensorflow_distributions(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds more than one installed distribution that ships the `tensorflow` import package
    (tensorflow, tensorflow-cpu, tensorflow-gpu, tensorflow-intel, intel-tensorflow, tf-nightly…). Shims
    that only depend on another TensorFlow distribution and ship no files (tensorflow on Windows, which
    pulled tensorflow-intel for several 2.x releases) are not counted. An error when their versions
    differ, a warning when they are the same version.

    Why is this bad?
    Each distribution writes its files into the same `tensorflow/` folder. Of different versions, the
    last one installed overwrote part of the others' files: a mix of two builds that fails at import with
    missing symbols or ops. Of the same version (what `pip install tf-keras` next to tensorflow-cpu
    produces: tf-keras requires `tensorflow`) the files are identical and TensorFlow works, but
    uninstalling either one deletes files the other needs, and `import tensorflow` then fails.

    Example:
    `pip install tensorflow-cpu==2.21.0 tf-keras` (pulls tensorflow 2.21.0 as well).

    Fix:
    Uninstall the others, then reinstall the one kept with `--force-reinstall --no-deps`, which puts back
    the files the uninstall removed without touching any other package. Different versions: the one
    installed last is kept (it wrote most files); same version: the one installed first (the user's
    choice; the other came in as a dependency).

    Fix safety:
    Manual: which build to keep is the user's decision.
    """
    providers = sharing_providers(facts)
    if len(providers) < 2:
        return
    same_version = len({d.version for d in providers}) == 1
    keep = providers[-1] if same_version else providers[0]  # providers are sorted installed-last first
    by_name = sorted(providers, key=lambda d: d.name)
    others = [d.name for d in by_name if d.name != keep.name]
    pip = _pip(facts)
    listed = ", ".join(f"{d.name} {d.version}" for d in by_name)
    if same_version:
        message = (f"{len(providers)} TensorFlow distributions of the same version share the tensorflow package: "
                   f"{listed}; it works, but uninstalling one removes files the other needs")
        why = f"{keep.name} {keep.version} was installed first"
    else:
        message = f"{len(providers)} TensorFlow distributions share the tensorflow package: {listed}"
        why = f"{keep.name} {keep.version} was installed last"
    yield Finding(
        message,
        evidence={f"python.watched.{d.name}.version": d.version for d in by_name},
        fixes=(AdminFix(f"Keep one TensorFlow distribution ({why})",
                        (f"{pip} uninstall -y {' '.join(others)}",
                         f"{pip} install --force-reinstall --no-deps '{keep.pin()}'")),),
        severity=Severity.WARNING if same_version else Severity.ERROR,
    )


def _cuda_install_steps(pip: str, dist: TensorflowDistribution) -> tuple[str, ...]:
    """The CUDA build of the same version: nightlies come from tf-nightly, releases from tensorflow."""
    target = "tf-nightly" if dist.name.startswith("tf-nightly") else "tensorflow"
    steps = []
    if dist.name != target:
        steps.append(f"{pip} uninstall -y {dist.name}")
    steps.append(f"{pip} install '{target}[and-cuda]=={dist.version}'")
    return tuple(steps)


@check("PKG003", "cpu-only-tensorflow-on-gpu-host", Severity.WARNING)
def cpu_only_tensorflow_on_gpu_host(facts: Facts) -> Iterator[Finding]:
    """What it does:
    On a host with an NVIDIA driver loaded (/proc/driver/nvidia/version present), finds a CPU-only
    TensorFlow: a distribution that is CPU-only by name (tensorflow-cpu, tf-nightly-cpu…), or a build
    whose build_info.py says `is_cuda_build: False`.

    Why is this bad?
    A CPU-only build never uses the GPUs: training runs on the CPU, tens of times slower, and
    TensorFlow prints nothing alarming (tf.config.list_physical_devices('GPU') is simply empty).

    Example:
    `pip install tensorflow-cpu==2.21.0` on a machine with an A100.

    Fix:
    Install the CUDA build of the same version: `pip install 'tensorflow[and-cuda]==<version>'` (after
    uninstalling the CPU-only distribution when its name differs).

    Fix safety:
    Manual: it changes the installed packages (and pulls the CUDA libraries, several GB).
    """
    driver = facts.get("host.nvidia_driver")
    if not driver:
        return
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    info = build_info(facts) or {}
    cuda_build = info.get("is_cuda_build")
    if not dist.is_cpu_only_name and cuda_build is not False:
        return
    why = f"the {dist.name} distribution is CPU-only" if dist.is_cpu_only_name else \
        "its build_info.py says is_cuda_build: False"
    evidence = {"host.nvidia_driver": driver, f"python.watched.{dist.name}.version": dist.version}
    if cuda_build is not None:
        evidence["python.tensorflow.build_info.is_cuda_build"] = cuda_build
    yield Finding(
        f"TensorFlow {dist.version} ({dist.name}) cannot use the GPUs of this host: {why}",
        evidence=evidence,
        fixes=(AdminFix(f"Install the CUDA build of TensorFlow {dist.version}",
                        _cuda_install_steps(_pip(facts), dist)),),
    )


@check("PKG004", "python-outside-tensorflow-requires-python", Severity.ERROR)
def python_outside_tensorflow_requires_python(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the inspected interpreter's version with the Requires-Python of the installed TensorFlow
    wheel (its METADATA).

    Why is this bad?
    The wheel was built and tested for other Python versions: its compiled extension may not load
    (ImportError on the C API), or loads and misbehaves. pip normally refuses such an install, so it
    comes from `--ignore-requires-python`, a copied site-packages, or an interpreter upgraded under an
    existing environment.

    Example:
    TensorFlow 2.21 (Requires-Python >=3.10) in an environment whose python is now 3.9.

    Fix:
    Recreate the environment with a Python inside the range, and install the same TensorFlow there.

    Fix safety:
    Manual: it means a new environment.
    """
    dist = installed_tensorflow(facts)
    if dist is None or not dist.requires_python:
        return
    version = str(facts.get("python.version"))
    if version_satisfies(version, dist.requires_python) is not False:
        return
    wheels = compat.python_range_for(dist.version)
    if wheels is not None:
        oldest, newest = wheels
        title = f"Use a Python from {oldest} to {newest} for TensorFlow {dist.version}"
        create = (f"python{newest} -m venv NEW_ENV   # TensorFlow {dist.version} has wheels for CPython "
                  f"{oldest}-{newest}")
    else:
        title = f"Use a Python matching {dist.requires_python} for TensorFlow {dist.version}"
        create = f"python3.X -m venv NEW_ENV   # a Python version matching {dist.requires_python}"
    yield Finding(
        f"Python {version} is outside TensorFlow {dist.version}'s Requires-Python {dist.requires_python}",
        evidence={"python.version": version, f"python.watched.{dist.name}.requires_python": dist.requires_python},
        fixes=(AdminFix(title, (create, f"NEW_ENV/bin/python -m pip install '{dist.pin()}'")),),
    )


def _applicable_requirements(facts: Facts, dist: TensorflowDistribution) -> Iterator[tuple[Requirement, str]]:
    """TensorFlow's Requires-Dist that apply to the inspected interpreter with no extra requested
    (markers evaluated with that interpreter's values), each with its METADATA line."""
    environment = marker_environment(facts)
    for line in dist.requires_dist:
        requirement = parse_requirement(line)
        if requirement is not None and marker_applies(requirement.marker, environment):
            yield requirement, line


def _dependency_problems(facts: Facts, dist: TensorflowDistribution) -> Iterator[tuple[str, str, str, str]]:
    """(name, specifier, installed version, requirement line) for each installed dependency outside
    the range TensorFlow's METADATA asks for."""
    for requirement, line in _applicable_requirements(facts, dist):
        if not requirement.specifier:
            continue
        installed = installed_version(facts, requirement.name)
        if installed is None or version_satisfies(installed, requirement.specifier) is not False:
            continue
        yield requirement.name, requirement.specifier, installed, line


def _winning_location(facts: Facts, name: str) -> str:
    info = facts.peek(f"python.distributions.{name}")
    return str(info.get("location", "")) if isinstance(info, Mapping) else ""


def _dependency_fixes(facts: Facts, dist: TensorflowDistribution, name: str, wanted: str) -> tuple[Fix, ...]:
    """Install the wanted range next to the pinned TensorFlow (install_fixes: only when it can work)."""
    return install_fixes(facts, dist, f"Install {wanted} next to TensorFlow {dist.version}", (wanted,))


def _shadowing_fixes(facts: Facts, dist: TensorflowDistribution, names: tuple[str, ...]) -> list[Fix]:
    """The fixes that stop PYTHONPATH, a .pth file or the user site from supplying TensorFlow or one of
    `names`: while they do, pip in the environment changes nothing that is imported (and under PYTHONPATH
    pip itself sees the foreign copy as installed)."""
    fixes: list[Fix] = []
    for name, location in ((dist.name, dist.location), *((n, _winning_location(facts, n)) for n in names)):
        fix = _origin_fix(facts, name, location) if location else None
        if fix is not None and fix not in fixes:
            fixes.append(fix)
    return fixes


def _location_of(facts: Facts, dist: TensorflowDistribution, name: str) -> str:
    return dist.location if name == dist.name else _winning_location(facts, name)


def _has_own_copy(facts: Facts, name: str) -> bool:
    """Whether a copy of `name` later on the path (the environment's own) takes over once the foreign one goes;
    for TensorFlow, any TensorFlow distribution installed in the environment's own folders."""
    if name in TENSORFLOW_DISTS and any(d.location and not _is_foreign(_origin(facts, d.location))
                                        for d in tensorflow_distributions(facts)):
        return True
    # The same distribution behind the foreign copy: a tensorflow-cpu 2.15.1 on PYTHONPATH in front of the
    # environment's own tensorflow-cpu 2.21.0 (a pip command pinning 2.15.1 would replace the environment's own).
    for section in ("watched", "distributions"):
        shadowed = facts.peek(f"python.{section}.{canonical_name(name)}.shadowed")
        if isinstance(shadowed, list) and any(isinstance(e, str) and not _is_foreign(_origin(facts, e))
                                               for e in shadowed):
            return True
    return False


def _without_foreign(facts: Facts, fixes: list[Fix]) -> str:
    """The variable settings that make one command run without the foreign folders (`NAME=value ` words
    before it), "" when a fix is not a variable (a .pth line to delete by hand)."""
    from tfdoctor.fixes.quoting import env_name, sh_word

    words = []
    for fix in fixes:
        if not isinstance(fix, EnvFix):
            return ""
        for change in fix.changes:
            words.append(f"{env_name(change.name)}={sh_word(change.value or '')} ")
    return "".join(words)


def install_fixes(facts: Facts, dist: TensorflowDistribution, title: str, wanted: tuple[str, ...],
                  no_deps: bool = False) -> tuple[Fix, ...]:
    """`pip install <wanted…>` with the installed TensorFlow pinned (or with --no-deps), offered only when it
    can work. When TensorFlow or a package named is imported from PYTHONPATH, a .pth file or the user site,
    the fixes are those that stop that (the pip command comes from the check run again afterwards). When
    the command would make pip move a package below or above what another installed distribution requires
    (pinning numpy for TensorFlow 2.15 moves ml-dtypes under ~=0.3.1, below jax's floor), it is not offered:
    the fix says which requirement it would break and leaves the choice to the user."""
    from tfdoctor.derive.requirement_graph import fix_conflicts

    requirements = [r for w in wanted if (r := parse_requirement(w)) is not None]
    names = tuple(r.name for r in requirements)
    shadowing = _shadowing_fixes(facts, dist, names)
    if shadowing and all(_has_own_copy(facts, n) for n in (dist.name, *names)
                         if _is_foreign(_origin(facts, _location_of(facts, dist, n)))):
        return tuple(shadowing)  # the environment's own copies take over: the check run again says the rest
    words = " ".join(f"'{w}'" for w in wanted)
    command = f"{_pip(facts)} install --no-deps {words}" if no_deps else f"{_pip(facts)} install {words} '{dist.pin()}'"
    conflicts = fix_conflicts(facts, None if no_deps else dist, requirements)
    if not conflicts:
        if shadowing:  # the foreign copy is the only one: pip installs one, in the environment that no longer sees it
            prefix = _without_foreign(facts, shadowing)
            return (*shadowing, AdminFix(title, (f"{prefix}{command}",), text=(
                "run it after the change above: while the foreign folder supplies the package, pip leaves what "
                "is imported as it is") if not prefix else ""))
        return (AdminFix(title, (command,)),)
    broken = "; ".join(f"{c.dependent} {c.dependent_version} requires {c.package}{c.specifier}" for c in conflicts)
    moved = ", ".join(sorted({f"{c.package} into {c.forced}" for c in conflicts}))
    return (AdminFix(
        f"{title}: no pip command does it without breaking {', '.join(sorted({c.dependent for c in conflicts}))}",
        (), text=f"`{command}` would move {moved}, and {broken}: decide first which of them this environment "
                 "keeps (uninstall the other, or move TensorFlow to a release whose ranges both accept), "
                 "then run tfdoctor check again"),)


def _coupling_text(coupling: compat.Coupling) -> str:
    return coupling.symptom or coupling.why


@check("PKG005", "dependency-outside-tensorflow-range", Severity.ERROR)
def dependency_outside_tensorflow_range(facts: Facts) -> Iterator[Finding]:
    """What it does:
    For every dependency in the installed TensorFlow's Requires-Dist (numpy, protobuf, ml_dtypes, keras,
    h5py, …) that applies to this interpreter and is installed, compares its version with the range
    TensorFlow declares. One finding per dependency, whose severity comes from how the dependency is
    really coupled to TensorFlow (tfdoctor/knowledge/python_compatibility.toml, with sources): error when
    the version breaks at import or on use (the message names the symptom), warning when it is only
    outside the range TensorFlow tests (below a floor, a protobuf major above the cap), info for an
    upper cap only (h5py, tensorboard, wrapt, a numpy 2.x above a numpy-2 build's cap).

    Why is this bad?
    Binary- and protocol-coupled dependencies fail at import: numpy across its 2.0 ABI boundary ("A
    module that was compiled using NumPy 1.x cannot be run in NumPy 2.x"), a protobuf runtime older
    than TensorFlow's generated code (VersionError), ml_dtypes, Keras 2 under a Keras-3 release. The
    others usually work: pip's resolver and TensorFlow's tests just did not cover them.

    Example:
    TensorFlow 2.15 (numpy<2.0.0) with numpy 2.1 installed by another package (error); TensorFlow 2.21
    (h5py<3.15.0) with h5py 3.15.1 (info).

    Fix:
    `pip install '<name><range>' '<tensorflow>==<installed version>'`: pins the installed TensorFlow so
    pip moves the dependency, not TensorFlow; checked against every installed distribution's requirements
    before it is offered. When the imported copy comes from PYTHONPATH, a .pth file or the user
    site-packages, the fix takes that away, with no pip command while the environment has its own copy
    behind it (pip would not change what is imported).

    Fix safety:
    Manual: other packages of the environment may need the version that is there now.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    for name, specifier, installed, line in _dependency_problems(facts, dist):
        bound = compat.violated_bound(installed, specifier) or compat.BELOW_FLOOR
        coupling = compat.bound_coupling(name, installed, dist.version, bound)
        location = _winning_location(facts, name)
        origin = _origin(facts, location)
        where = f" (imported from {_describe_origin(origin, location)})" if _is_foreign(origin) else ""
        yield Finding(
            f"{name} {installed}{where} is outside TensorFlow {dist.version}'s range {name}{specifier}: "
            + _coupling_text(coupling),
            evidence={f"python.distributions.{name}.version": installed,
                      f"python.watched.{dist.name}.requires_dist": line},
            fixes=_dependency_fixes(facts, dist, name, f"{name}{specifier}"),
            severity=Severity.parse(coupling.severity),
        )


@check("PKG010", "dependency-known-to-break-tensorflow", Severity.ERROR)
def dependency_known_to_break_tensorflow(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds an installed dependency whose version is known to break the installed TensorFlow although
    TensorFlow's metadata allows it (or does not name it): the `when = <version range>` rows of
    tfdoctor/knowledge/python_compatibility.toml, e.g. numpy 2 with a release built for numpy 1.
    Dependencies outside the declared range are PKG005's.

    Why is this bad?
    Some releases declared open ranges that later releases of their dependencies broke: TensorFlow
    2.14.0 asks for numpy>=1.23.5 without a cap, and numpy 2.0 changed the C ABI, so `pip install` happily
    puts numpy 2 next to it and `import tensorflow` fails with "_ARRAY_API not found".

    Example:
    tensorflow 2.14.0 with numpy 2.1.3.

    Fix:
    Install a version outside the broken range next to the pinned TensorFlow, e.g. `pip install
    'numpy<2' 'tensorflow==2.14.0'`. For an add-on release that is broken as published (tensorflow-text 2.21.0),
    the table's replacement (`pip install --no-deps 'tensorflow-text>=2.21.1,<2.22'`: --no-deps because the
    add-on requires the `tensorflow` distribution, which pip would install on top of tensorflow-cpu).

    Fix safety:
    Manual: other packages may need the version that is there now.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    declared = {r.name: r.specifier for r, _ in _applicable_requirements(facts, dist)}
    for name in compat.break_packages():
        installed = installed_version(facts, name)
        if installed is None:
            continue
        if name in declared and version_satisfies(installed, declared[name]) is False:
            continue  # PKG005 reports it
        row = compat.known_break_row(name, installed, dist.version)
        if row is None:
            continue
        coupling = compat.coupling_of(row)
        instead = row.get("instead")
        avoid = f"{name}{instead}" if instead else f"{name}{_negate(str(row['when']))}"
        addon = name in {a.package for a in compat.addons()}
        yield Finding(
            f"{name} {installed} breaks TensorFlow {dist.version} although its metadata allows it: "
            + _coupling_text(coupling),
            evidence={f"python.distributions.{name}.version": installed,
                      f"python.watched.{dist.name}.version": dist.version},
            fixes=install_fixes(facts, dist, f"Install {avoid} next to TensorFlow {dist.version}", (avoid,),
                                no_deps=_names_other_tensorflow(facts, dist, name)) if addon
            else _dependency_fixes(facts, dist, name, avoid),
            severity=Severity.parse(coupling.severity),
        )


def _names_other_tensorflow(facts: Facts, dist: TensorflowDistribution, package: str) -> bool:
    """Whether an add-on's requirement on TensorFlow names another distribution than the one installed
    (tensorflow-text requires `tensorflow`): installed with its dependencies next to tensorflow-cpu, pip would put
    that TensorFlow on top. Unknown requirements count as another: --no-deps is then the safe command."""
    info = facts.peek(f"python.watched.{canonical_name(package)}")
    found = _addon_tensorflow_requirement(facts, info.get("requires_dist")) if isinstance(info, Mapping) else None
    return found is None or (parse_requirement(found[0]) or Requirement(dist.name, "", None)).name != dist.name


def _negate(specifier: str) -> str:
    """The complement of a one-clause range (">=2" -> "<2"), as a requirement to install instead."""
    flipped = {">=": "<", "<": ">=", ">": "<=", "<=": ">"}
    for op in (">=", "<=", ">", "<"):
        if specifier.startswith(op):
            return flipped[op] + specifier[len(op):]
    return f"!={specifier.lstrip('=')}"


@check("PKG009", "tensorflow-dependency-missing", Severity.ERROR)
def tensorflow_dependency_missing(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Lists the dependencies in the installed TensorFlow's Requires-Dist that apply to this interpreter
    (extras such as `and-cuda` left out) that are not installed: no metadata and no importable package
    of that name on the path. One finding per dependency; an error, except for the few TensorFlow never
    imports (libclang: a warning), as the coupling table says.

    Why is this bad?
    TensorFlow imports its dependencies at `import tensorflow` (numpy, protobuf, ml_dtypes, absl-py,
    wrapt, gast, …) or on first use (keras for tf.keras, h5py for saving): the job fails with
    ModuleNotFoundError. It comes from `pip install --no-deps`, a partial copy of site-packages, or an
    uninstall of a package that something else still needed.

    Example:
    `pip install --no-deps tensorflow-cpu==2.21.0` into a fresh environment: no ml_dtypes, no keras.

    Fix:
    `pip install '<name><range>' '<tensorflow>==<installed version>'`, or `pip check` to see all.

    Fix safety:
    Manual: it installs packages.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    modules = facts.peek("python.modules")
    modules = modules if isinstance(modules, Mapping) else {}
    for requirement, line in _applicable_requirements(facts, dist):
        if installed_version(facts, requirement.name) is not None:
            continue
        if top_level_import_name(requirement.name) in modules:
            continue  # importable without metadata (copied in, vendored)
        coupling = compat.bound_coupling(requirement.name, None, dist.version, compat.MISSING)
        wanted = f"{requirement.name}{requirement.specifier}"
        yield Finding(
            f"{requirement.name} is not installed, and TensorFlow {dist.version} requires {wanted}: "
            + _coupling_text(coupling),
            evidence={f"python.distributions.{requirement.name}": None,
                      f"python.watched.{dist.name}.requires_dist": line},
            fixes=install_fixes(facts, dist, f"Install {wanted} next to TensorFlow {dist.version}", (wanted,)),
            severity=Severity.parse(coupling.severity),
        )


def _legacy_keras_requested(facts: Facts) -> str | None:
    value = facts.env("TF_USE_LEGACY_KERAS")
    return value if value in LEGACY_KERAS_TRUE else None


def _tf_keras_range(dist: TensorflowDistribution) -> str:
    major, minor = (*dist.release, 0, 0)[:2]
    return f"tf-keras>={major}.{minor},<{major}.{minor + 1}"


def _installed_tf_keras(facts: Facts) -> tuple[str, str] | None:
    for name in TF_KERAS_DISTS:
        version = installed_version(facts, name)
        if version:
            return name, version
    return None


@check("PKG006", "legacy-keras-requested-but-missing", Severity.ERROR)
def legacy_keras_requested_but_missing(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_USE_LEGACY_KERAS set to a value TensorFlow takes as true ("1", "true", "True") with
    TensorFlow 2.15 or later installed (earlier releases ignore it), and no tf-keras distribution.

    Why is this bad?
    From TensorFlow 2.16 tf.keras is Keras 3; TF_USE_LEGACY_KERAS makes TensorFlow's lazy loader take
    Keras 2 from the tf_keras package instead. Without it, the first use of tf.keras logs a warning and
    fails with "ImportError: Keras cannot be imported", usually deep in a training script after the
    data pipeline has been built.

    Example:
    TF_USE_LEGACY_KERAS=1 in a job template, TensorFlow 2.21 installed, tf-keras never installed.

    Fix:
    `pip install --no-deps 'tf-keras>=<major.minor>,<next minor>'`, or drop TF_USE_LEGACY_KERAS if the
    code runs on Keras 3. `--no-deps` because tf-keras requires the distribution named `tensorflow`:
    next to tensorflow-cpu a plain install would add a second TensorFlow (PKG002).

    Fix safety:
    Manual: it installs a package (or changes which Keras the code runs on).
    """
    requested = _legacy_keras_requested(facts)
    if requested is None:
        return
    dist = installed_tensorflow(facts)
    if dist is None or dist.release[:2] < LEGACY_KERAS_VARIABLE_SINCE:
        return
    if _installed_tf_keras(facts) is not None:
        return
    yield Finding(
        f"TF_USE_LEGACY_KERAS={requested} asks TensorFlow {dist.version} for tf-keras, which is not installed",
        evidence={"env.TF_USE_LEGACY_KERAS": requested, f"python.watched.{dist.name}.version": dist.version,
                  "python.distributions.tf-keras": None},
        fixes=(AdminFix(f"Install tf-keras matching TensorFlow {dist.version}", (_tf_keras_install(facts, dist),)),),
    )


@check("PKG007", "tf-keras-version-mismatch", Severity.ERROR)
def tf_keras_version_mismatch(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds an installed tf-keras (or tf-keras-nightly) of another major.minor than the installed TensorFlow
    and says what that pair really does, from the `tf-keras` rows of
    tfdoctor/knowledge/python_compatibility.toml: pairs measured in real environments
    (benchmarks/python_env_truth.py with TF_USE_LEGACY_KERAS=1: import, a one-step fit, a fit with the
    callbacks that track a best value, save and load as .h5, .keras and SavedModel) keep their measured
    verdict; other pairs are a warning. Severity per finding.

    Why is this bad?
    tf-keras is released with each TensorFlow minor and reaches into TensorFlow's internal modules. Some
    pairs break: tf-keras 2.17 under TensorFlow 2.21 imports and trains, but ModelCheckpoint, EarlyStopping
    and ReduceLROnPlateau fail as they start on numpy 2 ("`np.Inf` was removed in the NumPy 2.0 release").
    Others work: tf-keras 2.20.1 under TensorFlow 2.21 imports, trains and saves (an info: TensorFlow tests
    only its own minor).

    Example:
    TensorFlow 2.21.0 with tf-keras 2.17.0 left over from an older environment.

    Fix:
    `pip install --no-deps 'tf-keras>=<major.minor>,<next minor>'` (see PKG006 for why --no-deps).

    Fix safety:
    Manual: it changes an installed package.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    found = _installed_tf_keras(facts)
    if found is None:
        return
    name, version = found
    if not dist.release or release_tuple(version)[:2] == dist.release[:2]:
        return
    coupling = compat.tf_keras_coupling(version, dist.version)
    yield Finding(
        f"{name} {version} is of another minor than TensorFlow {dist.version}: " + _coupling_text(coupling),
        evidence={f"python.distributions.{name}.version": version,
                  f"python.watched.{dist.name}.version": dist.version, "sources": list(coupling.sources)},
        fixes=(AdminFix(f"Install the tf-keras of TensorFlow {dist.version}", (_tf_keras_install(facts, dist),)),),
        severity=Severity.parse(coupling.severity),
    )


@check("PKG008", "pure-python-protobuf", Severity.WARNING)
def pure_python_protobuf(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python.

    Why is this bad?
    It makes protobuf parse and build every message in pure Python instead of its C (upb) extension,
    many times slower. TensorFlow goes through protobuf for every graph, function trace, SavedModel,
    checkpoint index, tf.train.Example and TensorBoard event: tracing and loading slow down visibly.
    The variable is usually a workaround for an old protobuf version clash, left in place.

    Example:
    export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python in ~/.bashrc.

    Fix:
    Unset PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION (and fix the version clash it hid; see PKG005).

    Fix safety:
    Safe: both implementations read and write the same messages.
    """
    value = facts.env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION")
    if value != "python":  # protobuf honours exactly "python", "cpp" and "upb"
        return
    yield Finding(
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python forces the pure-Python protobuf, many times slower",
        evidence={"env.PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": value},
        fixes=(EnvFix("Unset PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
                      (unset_env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"),), Applicability.SAFE),),
    )


@check("PKG011", "tensorflow-install-damaged", Severity.ERROR)
def tensorflow_install_damaged(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Verifies the installed TensorFlow distribution against its RECORD (the list of files pip
    installed, with each one's size and sha256): every shared object (`.so`, `.pyd`, `.dylib`, `.dll`)
    and every `__init__.py` it lists must still exist with the size the RECORD gives (a stat each), and
    the smallest shared objects are hashed too, up to a budget of bytes read (1 MiB: TensorFlow 2.21's
    shared objects weigh ~1 GB, and this runs on every `tfdoctor check`). What this learns (the RECORD's
    lines, each hashed file's sum) is kept between runs in the user's cache folder (`$TFDOCTOR_CACHE_DIR`,
    else `$XDG_CACHE_HOME/tfdoctor`, else `~/.cache/tfdoctor`; set empty, nowhere) with the inode, size,
    mtime and ctime of the file it came from: while none of these changed, the file is not read again.
    Every listed file is still looked at on every run. The finding says what was done: sizes compared,
    how many files hashed, how many of their sums were kept.

    Why is this bad?
    A missing shared object or package file breaks `import tensorflow` ("ImportError: libtensorflow_
    framework.so.2: cannot open shared object file", "No module named tensorflow.python…") or a later
    import of one of its modules. A truncated one is worse: the loader maps it and the process dies
    with a bus error (SIGBUS, exit 135) at import, with no Python traceback. The usual causes are
    uninstalling a second TensorFlow distribution that shared the files (PKG002), a clean-up that
    deleted large files, a full disk or an interrupted copy of the environment.

    Example:
    `pip install tensorflow-cpu tf-keras` (pulls tensorflow too), then `pip uninstall tensorflow`; or
    a venv copied with rsync that ran out of space, leaving `_pywrap_tfe.so` at 4096 bytes.

    Fix:
    `pip install --force-reinstall --no-deps '<tensorflow>==<version>'`: puts its files back, changes
    nothing else.

    Fix safety:
    Manual: it reinstalls TensorFlow (a download of several hundred MB unless cached).
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    record = facts.peek(f"python.watched.{dist.name}.record")
    if isinstance(record, Unknown):
        raise NotChecked(f"python.watched.{dist.name}.record unknown: {record.reason}")
    if not isinstance(record, Mapping):
        return
    lists = [record.get(k, []) for k in ("missing", "size_mismatch", "hash_mismatch")]
    if not all(isinstance(items, list) for items in lists):  # a hand-made --facts file: never a crash
        raise NotChecked(f"python.watched.{dist.name}.record: malformed lists of files")
    missing = [str(m) for m in lists[0]]
    resized = [m for m in lists[1] if isinstance(m, Mapping)]
    rehashed = [str(m) for m in lists[2]]
    counts = [record.get(k) or 0 for k in ("missing_count", "size_mismatch_count", "hash_mismatch_count")]
    if not all(type(c) is int for c in counts):  # a hand-made --facts file: never a crash
        raise NotChecked(f"python.watched.{dist.name}.record: malformed counts")
    missing_count, resized_count, rehashed_count = counts
    if not (missing_count or resized_count or rehashed_count):
        return
    key = f"python.watched.{dist.name}.record"
    problems: list[str] = []
    evidence: dict[str, Any] = {}
    if missing_count:
        problems.append(f"{missing_count} missing (first: {', '.join(missing[:3])})")
        evidence.update({f"{key}.missing_count": missing_count, f"{key}.missing": missing})
    if resized_count:
        shown = ", ".join(f"{m.get('path')} is {m.get('actual')} bytes, RECORD says {m.get('recorded')}"
                          for m in resized[:3])
        problems.append(f"{resized_count} of another size than installed ({shown})")
        evidence.update({f"{key}.size_mismatch_count": resized_count, f"{key}.size_mismatch": list(resized)})
    if rehashed_count:
        problems.append(f"{rehashed_count} with another sha256 than installed (first: {', '.join(rehashed[:3])})")
        evidence.update({f"{key}.hash_mismatch_count": rehashed_count, f"{key}.hash_mismatch": rehashed})
    symptom = ""
    if resized_count or rehashed_count:
        symptom = ("; import tensorflow dies with a bus error (SIGBUS, exit 135) or fails to load a truncated "
                   "or altered shared object")
    done = _verification_done(record)
    evidence[f"{key}.verified"] = done
    yield Finding(
        f"{dist.name} {dist.version} is damaged: of the {record.get('checked')} shared objects and __init__.py "
        f"files its RECORD lists, {'; '.join(problems)}{symptom} ({done})",
        evidence=evidence,
        fixes=(AdminFix(f"Reinstall {dist.name} {dist.version}'s files",
                        (f"{_pip(facts)} install --force-reinstall --no-deps '{dist.pin()}'",)),),
    )


def _verification_done(record: Mapping[str, Any]) -> str:
    """What the RECORD verification did: existence and size of every file, sha256 of how many."""
    if "size_checked" not in record:  # a facts file recorded before sizes were compared
        return "existence checked, sizes and hashes not compared"
    def count(key: str) -> int:  # a hand-made --facts file may hold anything here: never a crash
        value = record.get(key)
        return value if type(value) is int and value > 0 else 0

    cached = count("hash_cached")
    kept = f"; {cached} of the sums kept from an earlier run, the files unchanged since" if cached else ""
    return (f"existence and size checked for every file, sha256 for {count('hashed')} shared objects "
            f"({count('hashed_bytes') // 1024} KiB, budget {count('hash_budget') // (1024 * 1024)} MiB{kept})")


@check("PKG012", "wheel-built-for-another-python", Severity.ERROR)
def wheel_built_for_another_python(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the WHEEL tags of TensorFlow and the packages it is coupled to (numpy, ml_dtypes,
    protobuf, h5py, grpcio, wrapt…) with the inspected interpreter: a wheel whose ABI tag is cp311 can
    only load in CPython 3.11; abi3 wheels load in their version and later; pure-Python ones anywhere.

    Why is this bad?
    An extension module built for another CPython is not even found (its file is named
    `….cpython-311-x86_64-linux-gnu.so`) or fails to load: `import tensorflow` fails with "No module
    named 'tensorflow.python._pywrap…'" or numpy's "Error importing numpy: you should not try to import
    numpy from its source directory". Requires-Python (PKG004) can allow it; the tag cannot. It comes from
    copied environments, site-packages reused by a newer Python, or PYTHONPATH into another venv.

    Example:
    A virtual environment made with Python 3.11 whose python is now 3.12 (same folder, upgraded in place).

    Fix:
    Reinstall the package for this interpreter (`--force-reinstall --no-deps`); for TensorFlow itself,
    a new environment with a Python its wheels support. When the package comes from PYTHONPATH or a
    .pth file, take that away instead.

    Fix safety:
    Manual: it reinstalls packages.
    """
    watched = facts.get("python.watched")
    if not isinstance(watched, Mapping):
        raise NotChecked("python.watched is not a mapping (a hand-edited facts file?)")
    python = interpreter_cpython(facts)
    if python is None:
        return  # not CPython, or no version recorded: no ABI tag to compare with
    dist = installed_tensorflow(facts)
    pip = _pip(facts)
    for name, info in sorted(watched.items()):
        if not isinstance(info, Mapping) or not isinstance(info.get("wheel_tags"), list):
            continue
        fits, tag = wheel_fits_interpreter(tuple(str(t) for t in info["wheel_tags"]), python)
        if fits:
            continue
        version = str(info.get("version", ""))
        location = str(info.get("location", ""))
        fixes: list[Fix] = []
        origin_fix = _origin_fix(facts, name, location)
        if origin_fix is not None:
            fixes.append(origin_fix)
        elif dist is not None and name == dist.name and (wheels := compat.python_range_for(version)) is not None \
                and not compat.python_in_range(python, wheels):
            fixes.append(AdminFix(f"Use a Python from {wheels[0]} to {wheels[1]} for TensorFlow {version}", (
                f"python{wheels[1]} -m venv NEW_ENV   # TensorFlow {version} has wheels for CPython "
                f"{wheels[0]}-{wheels[1]}", f"NEW_ENV/bin/python -m pip install '{name}=={version}'")))
        else:
            fixes.append(AdminFix(f"Reinstall {name} {version} for Python {python[0]}.{python[1]}",
                                  (f"{pip} install --force-reinstall --no-deps '{name}=={version}'",)))
        yield Finding(
            f"{name} {version} in {location} is a wheel for another Python ({tag}); this interpreter is "
            f"CPython {python[0]}.{python[1]}: its compiled modules will not load",
            evidence={f"python.watched.{name}.wheel_tags": list(info["wheel_tags"]),
                      "python.version": facts.peek("python.version")},
            fixes=tuple(fixes),
        )


def _tensorflow_at(facts: Facts, location: str) -> TensorflowDistribution | None:
    """The TensorFlow distribution installed in `location`, of whatever name."""
    for dist in tensorflow_distributions(facts):
        if dist.provides_tensorflow and os.path.normpath(dist.location) == os.path.normpath(location):
            return dist
    return None


def _shadowing(facts: Facts, name: str, info: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(where the imported copy is, what it shadows, what gets imported) when a foreign path entry wins for
    `name`; the last is "" when the imported copy's version is not known (no metadata)."""
    location = str(info.get("location", ""))
    imported = info.get("import_location")
    version = str(info.get("version", ""))
    if isinstance(imported, str) and imported and os.path.normpath(imported) != os.path.normpath(location) \
            and _is_foreign(_origin(facts, imported)):
        if name in TENSORFLOW_DISTS and (other := _tensorflow_at(facts, imported)) is not None:
            return imported, f"the {name} {version} installed in {location}", _consequence(
                "TensorFlow", f"{other.version} ({other.name})", version, "tensorflow")
        return imported, f"the {name} {version} installed in {location} (the imported copy has no metadata)", ""
    shadowed = info.get("shadowed")
    if isinstance(shadowed, list) and shadowed and _is_foreign(_origin(facts, location)):
        versions = info.get("shadowed_versions")
        other = versions[0] if isinstance(versions, list) and versions else "another version"
        if name in TENSORFLOW_DISTS:  # every TensorFlow distribution provides the one module `tensorflow`
            label, module = "TensorFlow", "tensorflow"
        else:
            label, module = name, IMPORT_NAMES.get(name, name.replace("-", "_")).replace("/", ".")
        return location, f"the {name} {other} installed in {shadowed[0]}", _consequence(
            label, version, str(other), module)
    return None


def _consequence(label: str, imported: str, installed: str, module: str) -> str:
    """What the job really gets: the release `import <module>` loads, not the one installed."""
    return f"{label} {imported} is what `import {module}` loads, not the {installed} installed in the environment"


@check("PKG013", "package-shadowed-from-outside-the-environment", Severity.WARNING)
def package_shadowed_from_outside_the_environment(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TensorFlow or a package it is coupled to (numpy, protobuf, keras, ml_dtypes, h5py…) imported
    from a folder that PYTHONPATH, a .pth file or the user site-packages put on the path, ahead of the
    copy installed in the environment: either a second installed copy (another dist-info later on the
    path), or a bare copy without metadata.

    Why is this bad?
    The job imports a copy that `pip list`, `pip install` and `pip check` in the environment do not
    manage: upgrading or repairing the environment changes nothing, and the version that really runs
    may not be the one TensorFlow was installed with. The version and coupling checks (PKG005, PKG010,
    PKG012) judge the copy that is imported, and their fixes start by removing its source.

    Example:
    PYTHONPATH=/shared/pylibs (holding numpy 2.1) exported in ~/.bashrc, a venv with TensorFlow 2.15.

    Fix:
    Take the folder out of PYTHONPATH, delete the .pth line, or set PYTHONNOUSERSITE=1 for the user site.

    Fix safety:
    Unsafe: other code may rely on the packages in that folder.
    """
    watched = facts.get("python.watched")
    if not isinstance(watched, Mapping):
        raise NotChecked("python.watched is not a mapping (a hand-edited facts file?)")
    for name, info in sorted(watched.items()):
        if not isinstance(info, Mapping):
            continue
        found = _shadowing(facts, name, info)
        if found is None:
            continue
        imported, shadowed, consequence = found
        origin = _origin(facts, imported)
        fix = _origin_fix(facts, name, imported)
        yield Finding(
            f"{name} is imported from {_describe_origin(origin, imported)}, ahead of {shadowed}"
            + (f": {consequence}" if consequence else ""),
            evidence={f"python.watched.{name}.location": info.get("location"),
                      f"python.watched.{name}.import_location": info.get("import_location"),
                      "python.path_origins": origin},
            fixes=(fix,) if fix is not None else (),
        )


@check("PKG014", "keras-3-package-needs-tf-keras", Severity.ERROR)
def keras_3_package_needs_tf_keras(facts: Facts) -> Iterator[Finding]:
    """What it does:
    With TensorFlow 2.16 or later (where tf.keras is Keras 3), finds installed packages whose TensorFlow
    code needs Keras 2, i.e. tf-keras, and no tf-keras: the `needs-tf-keras` rows of
    tfdoctor/knowledge/python_compatibility.toml (transformers before 5 and its TF* models).

    Why is this bad?
    The package works until its TensorFlow part is imported, then stops: transformers raises "Your
    currently installed version of Keras is Keras 3, but this is not yet supported in Transformers".
    Nothing in pip's metadata says so (transformers does not require tf-keras).

    Example:
    tensorflow-cpu 2.21.0 and transformers 4.57.6, `from transformers import TFBertModel`.

    Fix:
    `pip install --no-deps 'tf-keras>=<major.minor>,<next minor>'` (tf-keras of the same minor as
    TensorFlow; --no-deps because tf-keras requires the `tensorflow` distribution, which would add a
    second TensorFlow next to tensorflow-cpu).

    Fix safety:
    Manual: it installs a package.
    """
    dist = installed_tensorflow(facts)
    if dist is None or _installed_tf_keras(facts) is not None:
        return
    distributions = facts.get("python.distributions")
    if not isinstance(distributions, Mapping):
        raise NotChecked("python.distributions is not a mapping (a hand-edited facts file?)")
    installed = {name: v for name in distributions if (v := installed_version(facts, name)) is not None}
    for name, version, need in compat.tf_keras_needs(installed, dist.version):
        yield Finding(
            f"{name} {version} needs tf-keras with TensorFlow {dist.version} (Keras 3 is its tf.keras), "
            f"and tf-keras is not installed: {need.symptom}",
            evidence={f"python.distributions.{name}.version": version,
                      f"python.watched.{dist.name}.version": dist.version, "python.distributions.tf-keras": None},
            fixes=(AdminFix(f"Install tf-keras matching TensorFlow {dist.version}",
                            (_tf_keras_install(facts, dist),)),),
            severity=Severity.parse(need.severity),
        )


@check("PKG015", "tensorflow-build-needs-missing-cpu-instructions", Severity.ERROR)
def tensorflow_build_needs_missing_cpu_instructions(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a TensorFlow distribution compiled for CPU instructions beyond AVX (intel-tensorflow-avx512:
    AVX-512) on a CPU whose /proc/cpuinfo flags lack them. The distributions and the flags they need are
    the `distribution` rows of tfdoctor/knowledge/python_compatibility.toml; plain AVX is CPU001's.

    Why is this bad?
    The first instruction the CPU does not have kills the process: `import tensorflow` dies with
    "Illegal instruction (core dumped)", no traceback, nothing naming the cause. AVX-512 builds are made
    for Xeon servers; desktops, AMD before Zen 4, and many cloud VM types lack AVX-512.

    Example:
    intel-tensorflow-avx512 2.10.0 on a CPU with avx2 but no avx512f.

    Fix:
    Install the same version of a build without that requirement: `pip uninstall -y
    intel-tensorflow-avx512 && pip install --no-deps 'intel-tensorflow==<version>'` (oneDNN inside still
    uses AVX-512 where the CPU has it), or run on a CPU that has the instructions.

    Fix safety:
    Manual: it replaces TensorFlow's build.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    needed, why, _ = compat.distribution_cpu_flags(dist.name)
    if not needed:
        return
    flags = facts.get("cpu.cpuinfo.flags")
    if not isinstance(flags, list):
        raise NotChecked(f"cpu.cpuinfo.flags holds a JSON {type(flags).__name__}, not a list")
    lacking = [f for f in needed if f not in flags]
    if not lacking:
        return
    model = facts.peek("cpu.cpuinfo.model_name") or "this CPU"
    pip = _pip(facts)
    yield Finding(
        f"{dist.name} {dist.version} needs {', '.join(lacking)}, which {model} lacks: import tensorflow will "
        f"die with 'Illegal instruction' ({why})",
        evidence={"cpu.cpuinfo.flags": flags, f"python.watched.{dist.name}.version": dist.version},
        fixes=(AdminFix(f"Install intel-tensorflow {dist.version} (no AVX-512 requirement) instead",
                        (f"{pip} uninstall -y {dist.name}",
                         f"{pip} install --no-deps 'intel-tensorflow=={dist.version}'")),),
    )


def _protobuf_requirement(facts: Facts, dist: TensorflowDistribution) -> str | None:
    """TensorFlow's protobuf specifier ("" when it names protobuf without a range), None when it does not."""
    for requirement, _ in _applicable_requirements(facts, dist):
        if requirement.name == "protobuf":
            return requirement.specifier
    return None


_RELATION_TEXT = {compat.RUNTIME_OLDER: "older than", compat.ONE_MAJOR_NEWER: "one major newer than",
                  compat.MAJORS_NEWER: "two or more majors newer than"}


@check("PKG016", "protobuf-runtime-against-tensorflow-gencode", Severity.ERROR)
def protobuf_runtime_against_tensorflow_gencode(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the installed protobuf runtime with the protobuf version TensorFlow's generated code was made
    with, read from the installed wheel (the `# Protobuf Python Version:` line of
    tensorflow/core/framework/attr_value_pb2.py, written from protobuf 5.26 on), when the protobuf version is
    inside the range TensorFlow declares (outside it, PKG005 reports it). The verdicts are the
    `protobuf-gencode` rows of tfdoctor/knowledge/python_compatibility.toml: a runtime older than the
    generated code is an error; a runtime one major newer, allowed by a requirement without a cap, is an
    info; two or more majors newer, an info where measured to work, an error for the runtimes known to
    refuse it, a warning otherwise.

    Why is this bad?
    Generated code from protobuf 5.26 on checks the runtime at import
    (google.protobuf.runtime_version): an older runtime is refused ("VersionError: … Runtime version cannot
    be older than the linked gencode version"). A newer major is supported one major back only. TensorFlow
    2.20 requires protobuf>=5.28.0 without a cap while its code was generated by protobuf 5.28.3: protobuf
    5.28.0 is refused although pip accepts it, protobuf 6 works (outside what TensorFlow tested), and
    protobuf 7, which pip installs with it, is outside protobuf's guarantee (it was measured to work).

    Example:
    tensorflow-cpu 2.20.0 (gencode 5.28.3, protobuf>=5.28.0) with protobuf 6.33.6 (info) or 5.28.0 (error).

    Fix:
    `pip install 'protobuf>=<gencode>,<next major>' '<tensorflow>==<version>'`: the major of the generated
    code, at least its version.

    Fix safety:
    Manual: other packages may need the protobuf that is there now.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    gencode = facts.peek("python.tensorflow.protobuf_gencode")
    if not isinstance(gencode, Mapping) or isinstance(gencode, Unknown) or not gencode.get("checks_runtime"):
        return  # generated code before protobuf 5.26 does not check the runtime: PKG005's table decides
    runtime = installed_version(facts, "protobuf")
    specifier = _protobuf_requirement(facts, dist)
    if runtime is None or specifier is None or version_satisfies(runtime, specifier) is False:
        return
    generated = str(gencode.get("version", ""))
    runtime_release, generated_release = release_tuple(runtime), release_tuple(generated)
    if not runtime_release or not generated_release:
        return
    relation = compat.gencode_relation(runtime_release, generated_release)
    capped = any(c.strip().startswith("<") for c in specifier.split(","))
    if relation is None or (relation != compat.RUNTIME_OLDER and capped):
        return  # the same major, or a newer major TensorFlow names in its own cap
    coupling = compat.gencode_coupling(relation, runtime, generated)
    if coupling is None:
        return
    major = generated_release[0]
    wanted = f"protobuf>={generated},<{major + 1}"
    range_text = f"protobuf{specifier}" if specifier else "protobuf without a range"
    yield Finding(
        f"protobuf {runtime} is {_RELATION_TEXT[relation]} the protobuf {generated} TensorFlow {dist.version}'s "
        f"generated code was made with, and TensorFlow asks for {range_text}: " + _coupling_text(coupling),
        evidence={"python.distributions.protobuf.version": runtime,
                  "python.tensorflow.protobuf_gencode.version": generated,
                  "python.tensorflow.protobuf_gencode.file": gencode.get("file"),
                  f"python.watched.{dist.name}.requires_dist": f"protobuf{specifier}",
                  "sources": list(coupling.sources)},
        fixes=_dependency_fixes(facts, dist, "protobuf", wanted),
        severity=Severity.parse(coupling.severity),
    )


_EXTRA_CLAUSE = re.compile(r"""extra\s*==\s*['"]([A-Za-z0-9._-]{1,80})['"]""")


def _addon_tensorflow_requirement(facts: Facts, requires: Any) -> tuple[str, str] | None:
    """(line, specifier) of an add-on's requirement on a TensorFlow distribution: unconditional, for this
    platform, or under an extra named after TensorFlow (tensorflow-addons, tensorflow-io: `extra ==
    'tensorflow'`), since that extra names the release its compiled ops were built against."""
    if not isinstance(requires, (list, tuple)):
        return None
    environment = marker_environment(facts)
    for line in requires:
        requirement = parse_requirement(str(line))
        if requirement is None or requirement.name not in TENSORFLOW_DISTS or not requirement.specifier:
            continue
        marker = requirement.marker
        if marker is not None:
            extra = _EXTRA_CLAUSE.search(marker)
            if extra is not None and canonical_name(extra.group(1)) not in TENSORFLOW_DISTS:
                continue  # an extra of its own (tests, docs)
            if extra is None and not marker_applies(marker, environment):
                continue
        return str(line), requirement.specifier
    return None


@check("PKG017", "addon-built-for-another-tensorflow", Severity.ERROR)
def addon_built_for_another_tensorflow(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the TensorFlow release each installed add-on names in its METADATA (tensorflow-text,
    tensorflow-io, tensorflow-addons, tensorflow-decision-forests, tensorflow-recommenders,
    tensorflow-serving-api: the `addon` rows of tfdoctor/knowledge/python_compatibility.toml) and compares
    it with the installed TensorFlow. An error for add-ons that ship compiled ops, a warning for pure-Python
    ones. The message names the symptom.

    Why is this bad?
    Custom ops are shared objects compiled against one TensorFlow's C++ ABI, which changes with every
    release: loaded into another, they fail with "undefined symbol: _ZN10tensorflow…", or the graph that
    uses them fails with "Op type not registered". pip installs them side by side when the add-on was
    installed with --no-deps, before a TensorFlow upgrade, or from a cached requirements file.

    Example:
    tensorflow-text 2.20.0 (tensorflow<2.21,>=2.20.0) next to tensorflow-cpu 2.21.0.

    Fix:
    The add-on release built for the installed TensorFlow, from the release tables of
    tfdoctor/knowledge/package_graph.toml: `pip install --no-deps '<add-on>==<release>'` when the add-on
    names another TensorFlow distribution than the one installed (tensorflow-text requires `tensorflow`:
    without --no-deps pip installs it on top of tensorflow-cpu), else with TensorFlow pinned. For an add-on
    that has no such release (tensorflow-addons ended with 0.23 for TensorFlow 2.13-2.15, tensorflow-io's
    newest is for 2.16) the fix says so: uninstall it, or use a TensorFlow it was built for.

    Fix safety:
    Manual: it changes installed packages.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    watched = facts.get("python.watched")
    if not isinstance(watched, Mapping):
        raise NotChecked("python.watched is not a mapping (a hand-edited facts file?)")
    for addon in compat.addons():
        info = watched.get(addon.package)
        if not isinstance(info, Mapping):
            continue
        found = _addon_tensorflow_requirement(facts, info.get("requires_dist"))
        if found is None:
            continue
        line, specifier = found
        if version_satisfies(dist.version, specifier) is not False:
            continue
        version = str(info.get("version", ""))
        yield Finding(
            f"{addon.package} {version} was built for TensorFlow {specifier} (its METADATA), and TensorFlow "
            f"{dist.version} is installed: {addon.symptom}",
            evidence={f"python.watched.{addon.package}.requires_dist": line,
                      f"python.watched.{dist.name}.version": dist.version, "sources": list(addon.sources)},
            fixes=_addon_fixes(facts, dist, addon.package, line),
            severity=Severity.ERROR if addon.compiled else Severity.WARNING,
        )


def _addon_fixes(facts: Facts, dist: TensorflowDistribution, package: str, line: str) -> tuple[Fix, ...]:
    """The add-on release built for the installed TensorFlow, when one exists (the release tables of
    tfdoctor/knowledge/package_graph.toml), installed so that it cannot pull another TensorFlow: with
    --no-deps when the add-on names another TensorFlow distribution than the one installed (tensorflow-text
    requires `tensorflow`: next to tensorflow-cpu, pip would install it on top and break the import). When no
    release exists for it, the fix says so instead of naming one."""
    from tfdoctor.derive.requirement_graph import addon_release_for, addon_status

    names_other = (parse_requirement(line) or Requirement(dist.name, "", None)).name != dist.name
    release = addon_release_for(package, dist.version)
    status = addon_status(package)
    major_minor = ".".join(dist.version.split(".")[:2])
    newer = status is not None and release_tuple(major_minor) > release_tuple(status.newest_tensorflow)
    if release is None and status is not None and status.follows_tensorflow and not newer:
        release = f"{major_minor}.*"
    if release is not None:
        return install_fixes(facts, dist, f"Install {package} {release}, the release built for TensorFlow "
                             f"{dist.version}", (f"{package}=={release}",), no_deps=names_other)
    if status is not None and newer and status.ended:
        return (AdminFix(f"No {package} release exists for TensorFlow {dist.version}: remove it, or use an older "
                         f"TensorFlow (its newest release is for {status.newest_tensorflow})",
                         (f"{_pip(facts)} uninstall -y {package}",), text=status.note),)
    if status is not None and newer:
        return (AdminFix(f"Wait for the {package} release for TensorFlow {major_minor}, or use the TensorFlow its "
                         f"installed release is built for", (), text=(
                             f"tfdoctor knows no {package} release built for TensorFlow {dist.version} (the newest "
                             f"known to tfdoctor is for TensorFlow {status.newest_tensorflow}); once one is "
                             "published, install it with --no-deps and the exact version")),)
    return (AdminFix(f"Install the {package} release built for TensorFlow {major_minor}", (), text=(
        f"its Requires-Dist names the TensorFlow release it was built for; tfdoctor's table names none for "
        f"{dist.version}: install that release with --no-deps and the exact version")),)


def _and_cuda_requirements(dist: TensorflowDistribution) -> dict[str, tuple[str, str]]:
    """The nvidia-* wheels TensorFlow's `and-cuda` extra asks for: name -> (specifier, METADATA line)."""
    found: dict[str, tuple[str, str]] = {}
    for line in dist.requires_dist:
        requirement = parse_requirement(line)
        if requirement is None or not requirement.name.startswith("nvidia-") or requirement.marker is None:
            continue
        extra = _EXTRA_CLAUSE.search(requirement.marker)
        if extra is not None and canonical_name(extra.group(1)) == "and-cuda":
            found[requirement.name] = (requirement.specifier, line)
    return found


_CUDNN_WHEEL = re.compile(r"nvidia-cudnn-cu[0-9]+")


def _nvidia_wheel_problem(wheel: str, installed: str, specifier: str, cudnn_major: int | None
                          ) -> tuple[Severity, str] | None:
    """(severity, what will happen on a GPU node) for one nvidia-* wheel against the build; None when it fits."""
    if _CUDNN_WHEEL.fullmatch(wheel) and cudnn_major is not None:
        have = release_tuple(installed)
        if have and have[0] != cudnn_major:
            return Severity.ERROR, (
                f"TensorFlow asks the loader for libcudnn.so.{cudnn_major}, which this wheel does not have: on a GPU "
                "node TensorFlow logs 'Cannot dlopen some GPU libraries', skips every GPU and runs on the CPU")
        if _below_floor(installed, specifier):
            return Severity.ERROR, (
                "on a GPU node TensorFlow loads it, then fails at the first convolution: 'Loaded runtime CuDNN "
                "library: … but source was compiled with: … CuDNN library needs to have matching major version and "
                "equal or higher minor version', then 'DNN library initialization failed'")
        return None
    if _below_floor(installed, specifier):
        return Severity.WARNING, ("older than the build was tested with: on a GPU node an older minor may "
                                  "lack functions TensorFlow calls (a failed cuBLAS/cuFFT handle at first use)")
    return None


def _below_floor(installed: str, specifier: str) -> bool:
    """Older than the and-cuda extra asks for. A newer release of the same major is not judged: the libraries
    are backward compatible within a major (and 2.15's `==` pins would otherwise refuse every later patch)."""
    return bool(specifier) and compat.violated_bound(installed, specifier) == compat.BELOW_FLOOR


@check("PKG018", "nvidia-wheels-do-not-fit-tensorflow-build", Severity.ERROR)
def nvidia_wheels_do_not_fit_tensorflow_build(facts: Facts) -> Iterator[Finding]:
    """What it does:
    For a CUDA build of TensorFlow installed with its nvidia-* wheels (`tensorflow[and-cuda]`), compares each
    installed wheel with what the build needs: the cuDNN major of build_info.py and the ranges of the
    `and-cuda` extra in its METADATA. It does so whether or not this host has a GPU: the pre-job check often
    runs on a login node while the job runs on GPU nodes, where the same environment is used. Severity by
    what will happen there: a cuDNN of another major, or older than the build's, is an error; another
    library older than the extra asks for a warning (a newer release of the same major is fine).

    Why is this bad?
    TensorFlow dlopens libcudnn.so.<the build's major>: with cuDNN 8 wheels under a cuDNN 9 build, every GPU is
    skipped ("Cannot dlopen some GPU libraries") and the job trains on the CPU, tens of times slower, without
    failing. A cuDNN older than the build fails at the first convolution. On a CPU-only host nothing shows:
    the CUDA checks (CUDA001, CUDA002) only run where a GPU is.

    Example:
    `pip install 'tensorflow[and-cuda]==2.21.0'`, then `pip install nvidia-cudnn-cu12==8.9.7.29` for another
    framework; checked on the login node.

    Fix:
    `pip install '<wheel><range of the and-cuda extra>'`.

    Fix safety:
    Manual: it changes installed packages (other frameworks in the environment may want the other version).
    """
    dist = installed_tensorflow(facts)
    info = build_info(facts)
    if dist is None or info is None or info.get("is_cuda_build") is not True:
        return
    watched = facts.get("python.watched")
    if not isinstance(watched, Mapping):
        raise NotChecked("python.watched is not a mapping (a hand-edited facts file?)")
    wheels = {name: str(v.get("version", "")) for name, v in watched.items()
              if name.startswith("nvidia-") and isinstance(v, Mapping)}
    if not wheels:
        return  # CUDA from the system: resolved where the GPUs are (CUDA001, CUDA002)
    cudnn = release_tuple(str(info.get("cudnn_version") or ""))
    wanted = _and_cuda_requirements(dist)
    from tfdoctor.derive.tf_build import gpu_host

    here = "" if gpu_host(facts) else " (this host has no NVIDIA GPU: the job will meet it on a GPU node)"
    pip = _pip(facts)
    for wheel, installed in sorted(wheels.items()):
        specifier, line = wanted.get(wheel, ("", ""))
        problem = _nvidia_wheel_problem(wheel, installed, specifier, cudnn[0] if cudnn else None)
        if problem is None:
            continue
        severity, consequence = problem
        needs = [f"cuDNN {info.get('cudnn_version')}"] if _CUDNN_WHEEL.fullmatch(wheel) and cudnn else []
        if specifier:
            needs.append(f"tensorflow[and-cuda] asks for {wheel}{specifier}")
        evidence: dict[str, Any] = {f"python.watched.{wheel}.version": installed,
                                    "python.tensorflow.build_info.cudnn_version": info.get("cudnn_version"),
                                    "gpu_on_this_host": not here}
        if line:
            evidence[f"python.watched.{dist.name}.requires_dist"] = line
        target = f"{wheel}{specifier}" if specifier else f"{wheel}>={cudnn[0]},<{cudnn[0] + 1}"
        yield Finding(
            f"{wheel} {installed} does not fit TensorFlow {dist.version}'s CUDA build ({'; '.join(needs)}): "
            f"{consequence}{here}",
            evidence=evidence,
            fixes=(AdminFix(f"Install the {wheel} TensorFlow {dist.version} was built for",
                            (f"{pip} install '{target}'",)),),
            severity=severity,
        )


# -- the requirement graph below TensorFlow (issue 36): what TensorFlow's dependencies themselves require.
# TensorFlow 2.21 accepts numpy>=1.26.0 and ml_dtypes>=0.5.1, and ml-dtypes 0.7.0 requires numpy>=2.0.0: numpy
# 1.26 with ml-dtypes 0.7 is inside every range TensorFlow declares and still fails at import. The graph and the
# verdicts are tfdoctor/derive/requirement_graph.py and the `requirement` rows of knowledge/package_graph.toml.

def _tensorflow_range(facts: Facts, dist_name: str, package: str) -> str | None:
    from tfdoctor.derive.requirement_graph import requirements_of

    for requirement, _line in requirements_of(facts, dist_name) or ():
        if requirement.name == package and requirement.specifier:
            return requirement.specifier
    return None


@check("PKG021", "tensorflow-dependency-requirement-unmet", Severity.ERROR)
def tensorflow_dependency_requirement_unmet(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Follows the requirement graph below the installed TensorFlow: for every installed package TensorFlow
    needs, directly or through another (keras, ml-dtypes, h5py, tensorboard, …), reads that package's own
    Requires-Dist (markers evaluated for the inspected interpreter, extras left out) and compares each
    requirement with what is installed. One finding per unmet requirement. Its severity comes from
    tfdoctor/knowledge/package_graph.toml: an error where the break at import is established (a compiled
    package below its numpy floor, a package below its ml-dtypes floor), else a warning for a floor or a
    missing package and an info for a cap. TensorFlow's own requirements are PKG005's and PKG009's.

    Why is this bad?
    `import tensorflow` imports those packages, and each fails at import when its own requirement is not
    met, whatever TensorFlow's ranges say: TensorFlow 2.21 accepts numpy>=1.26.0, but the ml-dtypes it
    requires (>=0.5.1) was 0.7.0 by then, which requires numpy>=2.0.0 and does not load on numpy 1.26.
    `pip install numpy==1.26.4` warns about it once, then leaves the environment that way.

    Example:
    tensorflow-cpu 2.21.0, ml-dtypes 0.7.0, numpy 1.26.4.

    Fix:
    `pip install '<package><range the dependency requires>' '<tensorflow>==<installed version>'`, checked
    against every other installed distribution's requirements before it is offered. When TensorFlow's own
    range excludes what the dependency needs, no pip command fixes it: move the dependency to a release that
    accepts TensorFlow's range.

    Fix safety:
    Manual: it changes installed packages.
    """
    from tfdoctor.derive.requirement_graph import (
        disjoint,
        requirement_coupling,
        requirements_of,
        requires_path,
        unmet_requirements,
    )

    dist = installed_tensorflow(facts)
    if dist is None:
        return
    if requirements_of(facts, dist.name) is None:
        raise NotChecked("TensorFlow's Requires-Dist is not recorded")
    for unmet in unmet_requirements(facts, dist):
        coupling = requirement_coupling(unmet)
        wanted = f"{unmet.requirement.name}{unmet.requirement.specifier}"
        have = f"{unmet.requirement.name} {unmet.installed} is installed" if unmet.installed is not None \
            else f"{unmet.requirement.name} is not installed"
        ours = _tensorflow_range(facts, dist.name, unmet.requirement.name)
        fixes: tuple[Fix, ...]
        if ours is not None and unmet.requirement.specifier and disjoint(ours, unmet.requirement.specifier):
            fixes = (AdminFix(f"Install a {unmet.requirer} release that accepts TensorFlow {dist.version}'s "
                              f"{unmet.requirement.name}{ours}", (), text=(
                                  f"TensorFlow {dist.version} requires {unmet.requirement.name}{ours} and "
                                  f"{unmet.requirer} {unmet.requirer_version} requires {wanted}: no "
                                  f"{unmet.requirement.name} satisfies both")),)
        else:
            fixes = install_fixes(facts, dist, f"Install {wanted}, which {unmet.requirer} {unmet.requirer_version} "
                                  f"requires, next to TensorFlow {dist.version}", (wanted,))
        yield Finding(
            f"{unmet.requirer} {unmet.requirer_version}, which TensorFlow {dist.version} needs, requires {wanted} "
            f"and {have}: " + (coupling.symptom or coupling.why),
            evidence={str(requires_path(facts, unmet.requirer)): unmet.line,
                      f"python.distributions.{unmet.requirement.name}.version": unmet.installed,
                      f"python.watched.{dist.name}.version": dist.version, "sources": list(coupling.sources)},
            fixes=fixes,
            severity=Severity.parse(coupling.severity),
        )
