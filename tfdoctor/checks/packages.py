"""PKG — packages: the TensorFlow distribution and what it was built and declared to run with.

Everything is read from the installed files (METADATA's Requires-Dist and Requires-Python, WHEEL,
build_info.py), never by importing TensorFlow. Every pip command suggested here pins the TensorFlow
that is installed, so following it never changes the user's TensorFlow version.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from tfdoctor.derive.requirement_ranges import Requirement, marker_applies, parse_requirement, version_satisfies
from tfdoctor.derive.tensorflow_distribution import (
    TensorflowDistribution,
    build_info,
    installed_tensorflow,
    installed_version,
    marker_environment,
    tensorflow_distributions,
    tensorflow_providers,
)
from tfdoctor.facts import Facts
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, unset_env
from tfdoctor.registry import check

# TensorFlow's own test of the variable (tensorflow/python/util/lazy_loader.py): these three only.
LEGACY_KERAS_TRUE = ("true", "True", "1")
# TensorFlow's lazy Keras loader routes tf.keras to tf_keras when TF_USE_LEGACY_KERAS is set from 2.15 on
# (2.16 then made Keras 3 the default tf.keras); earlier releases ignore the variable.
LEGACY_KERAS_VARIABLE_SINCE = (2, 15)
TF_KERAS_DISTS = ("tf-keras", "tf-keras-nightly")


def _executable(facts: Facts) -> str:
    return str(facts.peek("python.executable") or "this interpreter")


def _pip(facts: Facts) -> str:
    """pip of the inspected interpreter (with --python, the job's, not tfdoctor's own)."""
    executable = facts.peek("python.executable")
    return f"{shlex.quote(executable)} -m pip" if isinstance(executable, str) and executable else "pip"


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
    `pipx install tfdoctor && tfdoctor check` while the job runs ~/venvs/train/bin/python.

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
    (tensorflow, tensorflow-cpu, tensorflow-gpu, tensorflow-intel, tf-nightly…). Shims that only depend
    on another TensorFlow distribution and ship no files (tensorflow on Windows, which pulled
    tensorflow-intel for several 2.x releases) are not counted.

    Why is this bad?
    Each distribution writes its files into the same `tensorflow/` folder; the last one installed
    overwrote the others' files, and uninstalling any of them deletes files the others need. The result
    is a mix of two builds (often two versions) that fails at import with missing symbols or ops, or
    silently runs the CPU-only build.

    Example:
    `pip install tensorflow-cpu` into an environment that already had `tensorflow`.

    Fix:
    Uninstall every one of them, then install the one wanted again (the one installed last is proposed).

    Fix safety:
    Manual: which build to keep is the user's decision.
    """
    providers = tensorflow_providers(facts)
    if len(providers) < 2:
        return
    keep = providers[0]  # installed last
    by_name = sorted(providers, key=lambda d: d.name)
    pip = _pip(facts)
    yield Finding(
        f"{len(providers)} TensorFlow distributions share the tensorflow package: "
        + ", ".join(f"{d.name} {d.version}" for d in by_name),
        evidence={f"python.watched.{d.name}.version": d.version for d in by_name},
        fixes=(AdminFix(f"Keep one TensorFlow distribution ({keep.name} {keep.version} was installed last)",
                        (f"{pip} uninstall -y {' '.join(d.name for d in by_name)}",
                         f"{pip} install '{keep.pin()}'")),),
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
    yield Finding(
        f"Python {version} is outside TensorFlow {dist.version}'s Requires-Python {dist.requires_python}",
        evidence={"python.version": version, f"python.watched.{dist.name}.requires_python": dist.requires_python},
        fixes=(AdminFix(f"Use a Python matching {dist.requires_python} for TensorFlow {dist.version}",
                        (f"python3.X -m venv NEW_ENV   # a Python version matching {dist.requires_python}",
                         f"NEW_ENV/bin/pip install '{dist.pin()}'")),),
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


@check("PKG005", "dependency-outside-tensorflow-range", Severity.ERROR)
def dependency_outside_tensorflow_range(facts: Facts) -> Iterator[Finding]:
    """What it does:
    For every dependency in the installed TensorFlow's Requires-Dist (numpy, protobuf, ml_dtypes, keras,
    h5py, …) that applies to this interpreter and is installed, compares its version with the range
    TensorFlow declares. One finding per dependency.

    Why is this bad?
    TensorFlow's compiled code is built against specific numpy and protobuf ABIs and registers its
    types with ml_dtypes: outside the range it fails at import ("module compiled against ABI version",
    "Descriptors cannot be created directly") or, worse, later with wrong dtypes. A later
    `pip install` of another package is the usual cause.

    Example:
    TensorFlow 2.15 (numpy<2.0.0) with numpy 2.1 installed by another package.

    Fix:
    `pip install '<name><range>' '<tensorflow>==<installed version>'`: pins the installed TensorFlow so
    pip moves the dependency, not TensorFlow.

    Fix safety:
    Manual: other packages of the environment may need the version that is there now.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    for name, specifier, installed, line in _dependency_problems(facts, dist):
        yield Finding(
            f"{name} {installed} is outside TensorFlow {dist.version}'s range {name}{specifier}",
            evidence={f"python.distributions.{name}.version": installed,
                      f"python.watched.{dist.name}.requires_dist": line},
            fixes=(AdminFix(f"Install {name}{specifier} next to TensorFlow {dist.version}",
                            (f"{_pip(facts)} install '{name}{specifier}' '{dist.pin()}'",)),),
        )


@check("PKG009", "tensorflow-dependency-missing", Severity.WARNING)
def tensorflow_dependency_missing(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Lists the dependencies in the installed TensorFlow's Requires-Dist that apply to this interpreter
    (extras such as `and-cuda` left out) and are not installed. One finding per dependency.

    Why is this bad?
    TensorFlow imports most of them at `import tensorflow` (numpy, protobuf, ml_dtypes, absl-py, wrapt,
    keras for tf.keras, …): the job fails with ModuleNotFoundError, or later when the first Keras or
    SavedModel call reaches the missing one. It comes from `pip install --no-deps`, a partial copy of
    site-packages, or an uninstall of a package that something else still needed.

    Example:
    `pip install --no-deps tensorflow-cpu==2.21.0` into a fresh environment: no ml_dtypes, no keras.

    Fix:
    `pip install '<name><range>' '<tensorflow>==<installed version>'`, or `pip check` to see all.

    Fix safety:
    Manual: it installs packages. A warning, not an error: a dependency installed without metadata
    (copied in, vendored) looks missing here while it imports fine.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    pip = _pip(facts)
    for requirement, line in _applicable_requirements(facts, dist):
        if installed_version(facts, requirement.name) is not None:
            continue
        wanted = f"{requirement.name}{requirement.specifier}"
        yield Finding(
            f"{requirement.name} is not installed, and TensorFlow {dist.version} requires {wanted}",
            evidence={f"python.distributions.{requirement.name}": None,
                      f"python.watched.{dist.name}.requires_dist": line},
            fixes=(AdminFix(f"Install {wanted} next to TensorFlow {dist.version}",
                            (f"{pip} install '{wanted}' '{dist.pin()}'",)),),
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
    `pip install 'tf-keras>=<major.minor>,<next minor>' '<tensorflow>==<version>'`, or drop
    TF_USE_LEGACY_KERAS if the code runs on Keras 3.

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
        fixes=(AdminFix(f"Install tf-keras matching TensorFlow {dist.version}",
                        (f"{_pip(facts)} install '{_tf_keras_range(dist)}' '{dist.pin()}'",)),),
    )


@check("PKG007", "tf-keras-version-mismatch", Severity.ERROR)
def tf_keras_version_mismatch(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the major.minor of an installed tf-keras (or tf-keras-nightly) with the installed TensorFlow's.

    Why is this bad?
    tf-keras is released in lockstep with TensorFlow and reaches into TensorFlow's internal modules; a
    tf-keras of another minor version fails at import or, with TF_USE_LEGACY_KERAS set, breaks tf.keras
    itself with missing attributes.

    Example:
    TensorFlow 2.21.0 with tf-keras 2.17.0 left over from an older environment.

    Fix:
    `pip install 'tf-keras>=<major.minor>,<next minor>' '<tensorflow>==<version>'`.

    Fix safety:
    Manual: it changes an installed package.
    """
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    found = _installed_tf_keras(facts)
    if found is None:
        return
    from tfdoctor.derive.tensorflow_distribution import release_tuple

    name, version = found
    if not dist.release or release_tuple(version)[:2] == dist.release[:2]:
        return
    yield Finding(
        f"{name} {version} does not match TensorFlow {dist.version} (major.minor must be equal)",
        evidence={f"python.distributions.{name}.version": version,
                  f"python.watched.{dist.name}.version": dist.version},
        fixes=(AdminFix(f"Install the tf-keras of TensorFlow {dist.version}",
                        (f"{_pip(facts)} install '{_tf_keras_range(dist)}' '{dist.pin()}'",)),),
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
