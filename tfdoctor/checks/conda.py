"""Conda environments: where the builds of the TensorFlow stack came from.

Sources: conda-forge's documentation ("Using multiple channels": mixing conda-forge and defaults is not
supported, set channel_priority strict); conda/conda#7556 (conda-forge's libprotobuf beside defaults'
protobuf: "missing symbols", the two built with different compilers); conda-forge/tensorflow-feedstock#288
(flexible priority took keras and tensorboard from pkgs/main beside conda-forge's tensorflow-gpu).
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import AdminFix, Finding, Severity
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

CONDA_FORGE = "conda-forge"
# Anaconda's channels (the "defaults" of a plain conda install).
DEFAULTS = ("defaults", "pkgs/main", "pkgs/r", "pkgs/free", "pkgs/msys2", "anaconda", "main")
TENSORFLOW_PACKAGES = ("tensorflow", "tensorflow-base", "tensorflow-cpu", "tensorflow-gpu")


def family(channel: Any) -> str | None:
    """"conda-forge" or "defaults" for the channels of those two families; None for any other (nvidia,
    a private channel, pypi) and for an unknown one: only these two are known not to mix."""
    if not isinstance(channel, str):
        return None
    if channel == CONDA_FORGE:
        return CONDA_FORGE
    return "defaults" if channel in DEFAULTS else None


@check("PKG030", "tensorflow-stack-from-mixed-conda-channels", Severity.WARNING)
def tensorflow_stack_from_mixed_conda_channels(facts: Facts) -> Iterator[Finding]:
    """What it does:
    In a conda environment with TensorFlow installed by conda, reads the channel of each package of the
    TensorFlow stack from `<prefix>/conda-meta` (TensorFlow, Keras, TensorBoard, NumPy, protobuf and
    libprotobuf, abseil, gRPC, HDF5 and h5py, Python, the C++ runtime) and the channel_priority conda merges
    from its configuration files (/etc/conda, its own root, ~/.condarc and the others of its search path,
    the environment's, CONDARC) and CONDA_CHANNEL_PRIORITY, and finds builds from both conda-forge and
    Anaconda's defaults (pkgs/main).

    Why is this bad?
    conda-forge and defaults build the same libraries with other compilers, pins and ABIs; conda-forge does
    not support mixing them. Under `channel_priority: flexible` (conda's default) the solver takes each
    package from whichever channel offers the newest build, and the stack ends up mixed: "undefined
    symbol" or "missing symbols" from libprotobuf (conda/conda#7556), a protobuf TensorFlow cannot use
    (conda-forge/tensorflow-feedstock#288).

    Example:
    tensorflow-gpu 2.10.0 from conda-forge with keras and tensorboard 2.10.0 from pkgs/main, priority flexible.

    Fix:
    Set strict priority for the environment and take the stack from conda-forge only.

    Fix safety:
    Manual: it changes the environment's packages.
    """
    is_conda = facts.peek("conda.is_conda")
    if isinstance(is_conda, Unknown):
        raise NotChecked(f"conda.is_conda: {is_conda.reason}")
    if is_conda is not True:
        return
    packages = facts.get("conda.packages")
    if not isinstance(packages, list):
        return
    stack = [p for p in packages if isinstance(p, dict)]
    if not any(p.get("name") in TENSORFLOW_PACKAGES for p in stack):
        return  # TensorFlow from pip (or absent): its wheel bundles what it links
    families: dict[str, list[str]] = {}
    for package in stack:
        kind = family(package.get("channel"))
        if kind is not None:
            families.setdefault(kind, []).append(f"{package['name']} {package.get('version')}")
    if len(families) < 2:
        unread = next((p.get("channel") for p in stack if isinstance(p.get("channel"), Unknown)), None)
        if unread is not None:  # the unread record may be from the other channel family
            raise NotChecked(f"the channel of a package of the TensorFlow stack: {unread.reason}")
        return
    priority = facts.peek("conda.channel_priority.value")
    if isinstance(priority, str):
        said = f"channel_priority is {priority}"
    elif isinstance(priority, Unknown):
        said = f"channel_priority is not known ({priority.reason})"
    else:
        said = "channel_priority is not set (conda's default, flexible)"
    tensorflow = next(p for p in stack if p.get("name") in TENSORFLOW_PACKAGES)
    main = family(tensorflow.get("channel")) or CONDA_FORGE
    other = "defaults" if main == CONDA_FORGE else CONDA_FORGE
    prefix = facts.peek("conda.prefix")
    from tfdoctor.fixes.quoting import sh_word

    # Names from conda-meta records (a hand-made --facts file may hold anything): quoted as every command is.
    mixed = sorted({str(p["name"]) for p in stack if family(p.get("channel")) is not None})
    names = " ".join(sh_word(n) for n in mixed)
    target = "conda-forge" if main == CONDA_FORGE else "defaults"
    yield Finding(
        f"The TensorFlow stack of this conda environment mixes builds of {main} "
        f"({', '.join(families[main][:6])}) and {other} ({', '.join(families[other][:6])}); {said}: builds of "
        "the two channels do not mix (other compilers and pins: undefined symbols, protobuf errors at import)",
        evidence={"conda.prefix": prefix, "conda.channel_priority": priority,
                  "by_channel": {k: v for k, v in sorted(families.items())}},
        fixes=(AdminFix(f"Take the TensorFlow stack from {target} only, with strict priority", (
            "conda config --env --set channel_priority strict",
            f"conda install --override-channels -c {target} {names}",
        )),))
