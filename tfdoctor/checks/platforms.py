"""PLAT — the platforms other than an x86/aarch64 Linux server: Jetson (Tegra) boards and macOS.

Sources: NVIDIA's "Installing TensorFlow for Jetson Platform" and its release notes (the per-JetPack wheel
index; tfdoctor/knowledge/jetson_tensorflow.toml); Apple's tensorflow-metal page and its PyPI table
(tfdoctor/knowledge/tensorflow_metal.toml); Apple's "About the Rosetta translation environment" (Rosetta
does not translate AVX, AVX2 or AVX-512 instructions); tensorflow/tensorflow#58339, #62711, #81987.
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.platforms import (
    JetPack,
    is_jetson,
    jetpack_of,
    jetpack_with_wheel,
    l4t_release,
    metal_for,
    metal_release,
    nvidia_jetson_build,
    rosetta_translated,
    stack_text,
    wheels_for,
)
from tfdoctor.derive.tensorflow_distribution import build_info, installed_tensorflow, installed_version
from tfdoctor.derive.versions import version_tuple
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import AdminFix, Finding, Severity
from tfdoctor.registry import check

JETSON_GUIDE = "https://docs.nvidia.com/deeplearning/frameworks/install-tf-jetson-platform/index.html"
METAL = "tensorflow-metal"
# Apple's base TensorFlow package was tensorflow-macos through 2.12; from 2.13 `tensorflow` has macOS arm64 wheels.
MACOS_PACKAGE_UNTIL = (2, 12)
CLT_PYTHON = (3, 9)  # /usr/bin/python3 of Apple's Command Line Tools (macOS 12 to 15): a universal2 CPython 3.9


def _pip(facts: Facts) -> str:
    """pip of the inspected interpreter, quoted as a word of a command (fixes.quoting)."""
    from tfdoctor.fixes.quoting import sh_word

    executable = facts.peek("python.executable")
    if isinstance(executable, str) and executable and "\0" not in executable:
        return f"{sh_word(executable)} -m pip"
    return "pip"


def _jetson_install(facts: Facts, jetpack: JetPack, remove: str) -> AdminFix:
    """NVIDIA's wheel for this JetPack, in this environment when its Python is the one the wheels are built
    for; else in a new environment of that Python (the wheels exist for one CPython per JetPack)."""
    python = facts.peek("python.version")
    if not isinstance(python, str) or version_tuple(python)[:2] == version_tuple(jetpack.python)[:2]:
        pip = _pip(facts)
        return AdminFix(f"Install NVIDIA's TensorFlow for JetPack {jetpack.jetpack}",
                        (f"{pip} uninstall -y {remove}", jetpack.install(pip)))
    return AdminFix(f"Install NVIDIA's TensorFlow for JetPack {jetpack.jetpack} in a Python {jetpack.python} "
                    f"environment (its wheels are built for CPython {jetpack.python} only, this one is {python})",
                    (f"python{jetpack.python} -m venv NEW_ENV", jetpack.install("NEW_ENV/bin/python -m pip")))


def _board(facts: Facts) -> str:
    model = facts.peek("tegra.model")
    l4t = l4t_release(facts)
    name = model if isinstance(model, str) and model else "this Jetson"
    return f"{name} (L4T R{l4t})" if l4t else name


@check("PLAT001", "jetson-tensorflow-without-cuda", Severity.WARNING)
def jetson_tensorflow_without_cuda(facts: Facts) -> Iterator[Finding]:
    """What it does:
    On a Jetson (an L4T release in /etc/nv_tegra_release, libcuda in /usr/lib/aarch64-linux-gnu/tegra, or a
    Jetson device-tree model), finds a TensorFlow that is not built with CUDA: not NVIDIA's Jetson wheel
    (version +nvYY.MM) and not a build whose build_info.py says `is_cuda_build: True`.

    Why is this bad?
    `pip install tensorflow` on a Jetson installs PyPI's aarch64 wheel, a CPU-only build: the integrated
    GPU is never used and TensorFlow says only that it lists no GPU (tensorflow/tensorflow#62711). NVIDIA
    builds TensorFlow for each JetPack on its own index (tfdoctor/knowledge/jetson_tensorflow.toml).

    Example:
    tensorflow 2.13.1 from PyPI on a Jetson AGX Orin with JetPack 5.1.2 (L4T R35.4.1).

    Fix:
    Replace it with NVIDIA's wheel for the JetPack the board runs:
    `pip install --extra-index-url https://developer.download.nvidia.com/compute/redist/jp/v512
    'tensorflow==2.12.0+nv23.06'`.

    Fix safety:
    Manual: it replaces the installed TensorFlow (another version, with the dependencies NVIDIA's wheel pins).
    """
    if not is_jetson(facts):
        return
    dist = installed_tensorflow(facts)
    if dist is None or nvidia_jetson_build(dist.version):
        return
    info = build_info(facts) or {}
    if info.get("is_cuda_build") is True:
        return  # built from source with CUDA for this board
    jetpack = jetpack_of(l4t_release(facts))
    source = wheels_for(jetpack) if jetpack else None
    tags = ", ".join(dist.wheel_tags) or "no wheel tag"
    evidence = {"tegra.l4t.release": l4t_release(facts), "tegra.model": facts.peek("tegra.model"),
                f"python.watched.{dist.name}.version": dist.version, "wheel_tags": list(dist.wheel_tags),
                "python.tensorflow.build_info.is_cuda_build": info.get("is_cuda_build")}
    if jetpack is None or source is None:
        where = f"NVIDIA's wheel for this board's JetPack is listed in {JETSON_GUIDE}"
    elif source == jetpack:
        where = f"NVIDIA builds TensorFlow for JetPack {jetpack.jetpack} on {jetpack.index_url}"
    else:
        where = (f"NVIDIA published no TensorFlow wheel for JetPack {jetpack.jetpack}; those of JetPack "
                 f"{source.jetpack} ({source.index_url}) are built against the same {stack_text(jetpack)}")
    fixes = () if jetpack is None or source is None else (_jetson_install(facts, source, dist.name),)
    yield Finding(
        f"TensorFlow {dist.version} ({dist.name}, {tags}) is not built with CUDA: on {_board(facts)} it will "
        f"never use the GPU; {where}", evidence=evidence, fixes=fixes)


@check("PLAT002", "jetson-tensorflow-for-another-jetpack", Severity.WARNING)
def jetson_tensorflow_for_another_jetpack(facts: Facts) -> Iterator[Finding]:
    """What it does:
    On a Jetson with NVIDIA's TensorFlow wheel (version +nvYY.MM), finds the JetPack that wheel was built
    for in tfdoctor/knowledge/jetson_tensorflow.toml, and the JetPack of the board's L4T release
    (/etc/nv_tegra_release), and compares the CUDA, cuDNN and TensorRT releases the two install.

    Why is this bad?
    NVIDIA builds each Jetson wheel against one JetPack's CUDA, cuDNN and TensorRT. On a JetPack that
    installs other releases of them TensorFlow fails to load its CUDA libraries (another soname, an older
    cuDNN) or runs without the GPU. JetPack releases that install the same three (5.1 to 5.1.5; 6.1, 6.2
    and 6.2.1) share their wheels: a 5.1 wheel on 5.1.3 is not reported.

    Example:
    tensorflow 2.15.0+nv24.05 (the JetPack 6.0 wheel, CUDA 12.2 and cuDNN 8.9) on a board flashed with
    JetPack 6.2 (L4T R36.4.3: CUDA 12.6, cuDNN 9.3).

    Fix:
    Install the wheel of the board's JetPack from its index
    (https://developer.download.nvidia.com/compute/redist/jp/v<JetPack>), or, for a JetPack NVIDIA built no
    wheel for, that of the newest JetPack with the same stack (6.2: the 6.1 wheel).

    Fix safety:
    Manual: it replaces the installed TensorFlow.
    """
    if not is_jetson(facts):
        return
    dist = installed_tensorflow(facts)
    if dist is None or not nvidia_jetson_build(dist.version):
        return
    l4t = l4t_release(facts)
    if l4t is None:
        raise NotChecked("the L4T release is unknown (/etc/nv_tegra_release absent or unreadable)")
    here = jetpack_of(l4t)
    if here is None:
        raise NotChecked(f"L4T R{l4t} has no row in tfdoctor/knowledge/jetson_tensorflow.toml")
    built = jetpack_with_wheel(dist.version)
    if built is None:
        raise NotChecked(f"TensorFlow {dist.version} is not among the wheels of the jetson_tensorflow table")
    # NVIDIA's JetPack minor releases share one compute stack and one set of wheels (a 5.1 wheel on 5.1.3,
    # a 6.1 wheel on 6.2): only a wheel linked against other CUDA, cuDNN or TensorRT releases is wrong there.
    if built.stack == here.stack:
        return
    source = wheels_for(here)
    yield Finding(
        f"TensorFlow {dist.version} is NVIDIA's build for JetPack {built.jetpack} ({stack_text(built)}); "
        f"{_board(facts)} runs JetPack {here.jetpack}, which installs {stack_text(here)}: TensorFlow fails to "
        "load the libraries it was linked against or runs without the GPU",
        evidence={"tegra.l4t.release": l4t, f"python.watched.{dist.name}.version": dist.version,
                  "built_for_jetpack": built.jetpack, "board_jetpack": here.jetpack,
                  "built_stack": list(built.stack), "board_stack": list(here.stack)},
        fixes=() if source is None else (_jetson_install(facts, source, dist.name),))


@check("PLAT010", "python-under-rosetta", Severity.WARNING)
def python_under_rosetta(facts: Facts) -> Iterator[Finding]:
    """What it does:
    On a Mac with Apple silicon (sysctl hw.optional.arm64 = 1), finds a Python that runs as x86_64 under
    Rosetta 2 (its platform.machine() is x86_64; sysctl.proc_translated = 1) with an x86_64 TensorFlow
    wheel (a macosx_*_x86_64 tag).

    Why is this bad?
    TensorFlow's x86_64 wheels are compiled with AVX, which Rosetta 2 does not translate (Apple, "About the
    Rosetta translation environment"; machdep.cpu.features of a translated process lists no AVX1.0):
    `import tensorflow` dies with "Illegal instruction" (tensorflow/tensorflow#58339). Where it runs, it
    runs translated, without the Metal GPU plug-in, which ships arm64 only.

    Example:
    A Python installed with an Intel installer (or from a Terminal opened "using Rosetta") on an M1 Mac,
    with tensorflow-macos 2.10.0 (cp39-cp39-macosx_10_14_x86_64).

    Fix:
    Create the environment with a native arm64 Python and install TensorFlow there (the Command Line
    Tools' /usr/bin/python3, CPython 3.9, when the release has wheels for it; else a CPython it supports).

    Fix safety:
    Manual: a new environment; the packages of the old one must be installed again.
    """
    if facts.peek("darwin.detected") is not True or not rosetta_translated(facts):
        return
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    tag = next((t for t in dist.wheel_tags if t.lower().endswith("x86_64")), None)
    if tag is None:
        return
    flags = facts.peek("cpu.cpuinfo.flags")
    avx = "" if not isinstance(flags, list) or "avx" in flags else \
        " Rosetta does not translate AVX (sysctl's machdep.cpu.features lists none), so `import tensorflow` " \
        "dies with \"Illegal instruction\";"
    answers = facts.peek("darwin.sysctl")  # sysctl names hold dots: read the mapping, not a dotted path
    brand = answers.get("machdep.cpu.brand_string") if isinstance(answers, dict) else None
    seen = f" (the CPU it sees: {brand})" if brand else ""
    release = dist.release[:2]
    package = "tensorflow-macos" if release and release <= MACOS_PACKAGE_UNTIL else "tensorflow"
    yield Finding(
        f"Python runs as x86_64 under Rosetta 2 on Apple silicon{seen} with the x86_64 wheel of {dist.name} "
        f"{dist.version} ({tag}):{avx} run a native arm64 Python",
        evidence={"darwin.apple_silicon": True, "python.machine": facts.peek("python.machine"),
                  "darwin.translated": facts.peek("darwin.translated"), "wheel_tag": tag},
        fixes=(AdminFix("Create the environment with a native arm64 Python",
                        (_native_venv(dist.version),
                         f"NEW_ENV/bin/python -m pip install '{package}=={dist.version}'")),))


def _native_venv(version: str) -> str:
    """A venv command with a native arm64 Python this TensorFlow has wheels for: the Command Line Tools'
    /usr/bin/python3 (a universal2 CPython 3.9) when the release supports 3.9, else the newest CPython it
    supports (python_compatibility table), by its name."""
    from tfdoctor.derive.python_compatibility import python_range_for

    wheels = python_range_for(version)
    if wheels is None or version_tuple(wheels[0])[:2] <= CLT_PYTHON <= version_tuple(wheels[1])[:2]:
        return "arch -arm64 /usr/bin/python3 -m venv NEW_ENV"
    return (f"arch -arm64 python{wheels[1]} -m venv NEW_ENV   # a native arm64 CPython {wheels[1]} "
            "(python.org's universal2 installer, Homebrew in /opt/homebrew)")


@check("PLAT011", "tensorflow-metal-of-another-release", Severity.ERROR)
def tensorflow_metal_of_another_release(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds Apple's tensorflow-metal plug-in installed beside a TensorFlow release it is not built for, by
    the plug-in's release table (tfdoctor/knowledge/tensorflow_metal.toml).

    Why is this bad?
    TensorFlow loads every plug-in of tensorflow-plugins/ at import. libmetal_plugin.dylib links the C API
    of the release it was built for: with another one `import tensorflow` fails with "Symbol not found"
    (tensorflow/tensorflow#81987, #84167), or no GPU is listed.

    Example:
    tensorflow 2.18.0 with tensorflow-metal 1.1.0 (built for 2.14, loads up to 2.17).

    Fix:
    Install the tensorflow-metal release built for the installed TensorFlow; when none exists, the newest
    TensorFlow the installed plug-in loads with.

    Fix safety:
    Manual: it changes the installed packages.
    """
    metal_version = installed_version(facts, METAL)
    if metal_version is None:
        return
    dist = installed_tensorflow(facts)
    if dist is None:
        return
    metal = metal_release(metal_version)
    if metal is None:
        raise NotChecked(f"{METAL} {metal_version} is not in tfdoctor/knowledge/tensorflow_metal.toml")
    if not dist.release or metal.supports(dist.release):
        return
    pip = _pip(facts)
    fitting = metal_for(dist.release)
    if fitting is not None:
        fix = AdminFix(f"Install {METAL} {fitting.metal}, built for TensorFlow {fitting.tensorflow}",
                       (f"{pip} install '{METAL}=={fitting.metal}' '{dist.pin()}'",))
    else:
        through = tuple(int(p) for p in metal.through.split("."))
        package = "tensorflow-macos" if through <= MACOS_PACKAGE_UNTIL else "tensorflow"
        fix = AdminFix(f"Install TensorFlow {metal.through}, the newest release {METAL} {metal.metal} loads with",
                       (f"{pip} install '{package}=={metal.through}.*' '{METAL}=={metal.metal}'",))
    supported = metal.tensorflow if metal.through == metal.tensorflow else f"{metal.tensorflow} to {metal.through}"
    yield Finding(
        f"{METAL} {metal.metal} is built for TensorFlow {supported}, not {dist.version}: `import tensorflow` "
        "fails to load libmetal_plugin.dylib (Symbol not found) or lists no GPU",
        evidence={f"python.distributions.{METAL}.version": metal_version,
                  f"python.watched.{dist.name}.version": dist.version, "metal_supports": supported},
        fixes=(fix,))
