"""PKG — the requirement graph below TensorFlow: what TensorFlow's dependencies themselves require.

TensorFlow's METADATA is one layer of the graph. The packages it imports declare ranges of their own, and
those can be narrower than TensorFlow's: TensorFlow 2.21 accepts numpy>=1.26.0 and ml_dtypes>=0.5.1, and
ml-dtypes 0.7.0 requires numpy>=2.0.0, so numpy 1.26 with ml-dtypes 0.7 is inside every range TensorFlow
declares and still fails at import. The graph and the verdicts are tfdoctor/derive/requirement_graph.py and
the `requirement` rows of tfdoctor/knowledge/package_graph.toml.
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.checks.packages import install_fixes
from tfdoctor.derive.requirement_graph import (
    disjoint,
    requirement_coupling,
    requirements_of,
    requires_path,
    unmet_requirements,
)
from tfdoctor.derive.tensorflow_distribution import installed_tensorflow
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import AdminFix, Finding, Fix, Severity
from tfdoctor.registry import check


def _tensorflow_range(facts: Facts, dist_name: str, package: str) -> str | None:
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
