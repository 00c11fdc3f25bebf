"""The TensorFlow release linted code runs on, and what tf.data does on its own there.

A `Dataset.map` without `num_parallel_calls`, or a pipeline without `.prefetch()`, costs nothing on the releases
where tf.data rewrites it by default (tfdoctor/knowledge/tfdata_automatic.toml: map_parallelization since 2.5,
inject_prefetch since 2.11). Whether a finding is true therefore depends on the release, which the file rarely
says. Lint learns it from `--target-tensorflow` (a release, or `installed`: the TensorFlow installed beside
tfdoctor), the `target-tensorflow` setting (tfdoctor.lint.cli), or else the releases the project's requirement
files pin (tfdoctor/lint/pins.py: part of the code, so the same project gives the same findings everywhere),
unless a notebook names its own (what it installs, Colab's `%tensorflow_version`; one saved by Colab runs Colab's
release: for_notebook); a file of the TensorFlow 1 era says it for itself. Unknown, a rule says so at info
severity rather than guess.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tfdoctor.lint.source import SourceModule

if TYPE_CHECKING:
    from tfdoctor.derive.requirement_ranges import Requirement
    from tfdoctor.lint.notebook import Environment

_VERSION = re.compile(r"(\d{1,3})\.(\d{1,3})(?:\.\d{1,5})?(?:[a-z]{1,5}\d{0,5})?(?:\.dev\d{0,12})?")


@dataclass(frozen=True)
class Target:
    """The TensorFlow release the code runs on, and where lint learnt it (printed with the findings it decides);
    for a project's pins (tfdoctor/lint/pins.py) a range: `release` the oldest it allows, `newest` the newest
    (OPEN: no newest)."""

    release: tuple[int, int]
    origin: str  # "--target-tensorflow", "the target-tensorflow setting", "installed: tensorflow-cpu 2.21.0"
    newest: tuple[int, int] | None = None  # None: `release` only
    # Learnt from the project's requirement files, not named by the user: a notebook that says what it runs
    # on (what it installs, Colab) is judged by that instead (for_notebook).
    from_project: bool = False

    @property
    def name(self) -> str:
        first = f"{self.release[0]}.{self.release[1]}"
        if self.newest is None or self.newest == self.release:
            return first
        return f"{first} or later" if self.newest == OPEN else f"{first} to {self.newest[0]}.{self.newest[1]}"

    def describe(self) -> str:
        return f"TensorFlow {self.name} ({self.origin})"

    def before(self, since: tuple[int, int]) -> bool | None:
        """True when every release the code may run on is older than `since`, False when none is, None when
        the range holds both (then what tf.data does there is not known)."""
        if (self.newest or self.release) < since:
            return True
        return False if self.release >= since else None


class TargetsByFile(Protocol):
    """The release each file runs on, where it differs by folder (tfdoctor/lint/pins.py, ProjectPins: each
    file's nearest pins); `run`, that of the paths linted, is what the summary names."""

    run: Target | None

    def for_file(self, path: os.PathLike[str] | str) -> Target | None: ...


def run_target(target: Target | TargetsByFile | None) -> Target | None:
    """The release a run is linted for, as its summary names it."""
    return target if target is None or isinstance(target, Target) else target.run


def file_target(target: Target | TargetsByFile | None, path: os.PathLike[str] | str) -> Target | None:
    """The release one file is linted for, before what a notebook's own cells say (for_notebook)."""
    return target if target is None or isinstance(target, Target) else target.for_file(path)


OPEN = (999, 0)  # Target.newest of a range without an upper bound (`tensorflow>=2.12`)
# The releases tried: 1.0 to 1.15 (the last of TensorFlow 1), 2.0 to 2.40 (2.21 is the newest today: a pin
# allowing 2.40 has no upper bound).
RELEASES = tuple([(1, minor) for minor in range(16)] + [(2, minor) for minor in range(41)])


def pinned(pins: Iterable[tuple[str, str]], origin: str, from_project: bool) -> Target | None:
    """The range of releases that (specifier, where it is written) pins allow, together: None when they allow
    none lint knows (no pin). `origin` is followed by the first two places."""
    allowed: set[tuple[int, int]] = set()
    shown: list[str] = []
    for specifier, where in pins:
        minors = allowed_releases(specifier)
        if not minors:
            continue
        allowed |= minors
        if len(shown) < 2 and where not in shown:
            shown.append(where)
    if not allowed:
        return None
    newest = max(allowed)
    return Target(min(allowed), f"{origin}: " + "; ".join(shown), OPEN if newest >= RELEASES[-1] else newest,
                  from_project)


def allowed_releases(text: str) -> set[tuple[int, int]]:
    """The (major, minor) releases of which some version satisfies the specifier `text` (an empty set when it
    allows every release: no pin)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    specifier = SpecifierSet(text)
    if not str(specifier):
        return set()
    # The versions worth trying: the first, a late one and the first candidate of each release, and every
    # version the specifier names (`==2.4.1`, `==2.1.0rc1`, `!=2.4.0`, `<2.11.3`) with its patch in each release.
    from packaging.version import InvalidVersion

    named = []
    for clause in specifier:
        text = clause.version.rstrip(".*")
        if text[:1].isdigit():
            try:
                named.append(Version(text))
            except InvalidVersion:  # `===2.4abc` (arbitrary equality): no release is that string
                return set()
    patches = {"0", "99", "0rc0"} | {str(v.micro) for v in named}
    allowed = {(major, minor) for major, minor in RELEASES
               if any(specifier.contains(Version(f"{major}.{minor}.{patch}"), prereleases=True) for patch in patches)}
    return allowed | {(v.major, v.minor) for v in named if specifier.contains(v, prereleases=True)}


@functools.cache
def _release_distributions() -> frozenset[str]:
    from tfdoctor.facts.probes.pyenv_snapshot import TENSORFLOW_DISTS

    return frozenset(name for name in TENSORFLOW_DISTS if not name.startswith("tf-nightly"))


def tensorflow_requirement(text: str) -> Requirement | None:
    """A requirement of a TensorFlow release distribution (`tensorflow-gpu==1.15`; parsed by the project's one
    requirement parser, names canonical), or None for anything else: another package, a nightly (which pins no
    release), not a requirement at all."""
    from tfdoctor.derive.requirement_ranges import parse_requirement

    text = text.strip()
    if not text or len(text) > 300 or not text[:1].isalpha():
        return None
    requirement = parse_requirement(text)
    return requirement if requirement is not None and requirement.name in _release_distributions() else None


# conda's `name=2.4`, `name==2.4.1`, `name 2.4.*`, `name>=2.4`: name, operator (None for a space), version;
# bounded classes, linear on any text (environment.yml lines, tfdoctor/lint/pins.py; notebook installs).
CONDA_SPEC = (r"([A-Za-z0-9_.-]{1,60})\s{0,8}(?:(==|>=|<=|!=|~=|=|<|>)\s{0,8}|\s)"
              r"([0-9][0-9A-Za-z.*]{0,30})")


def conda_requirement(name: str, operator: str | None, version: str) -> str:
    """conda's `name=2.4` and `name 2.4` (both 2.4.*) as a PEP 440 requirement; other operators as they are."""
    if operator in (None, "="):
        return f"{name}=={version if version.endswith('*') else version + '.*'}"
    return f"{name}{operator}{version}"


def parse_release(text: str) -> tuple[int, int]:
    """`2.15`, `2.15.1`, `2.16.0rc0`, `2.17.0.dev20240101` → (major, minor); ValueError for anything else."""
    match = _VERSION.fullmatch(text.strip()) if len(text) <= 64 else None
    if match is None:
        shown = text if len(text) <= 32 else text[:32] + "…"  # a value pasted by mistake is not echoed whole
        raise ValueError(f"not a TensorFlow release: {shown!r} (e.g. 2.15)")
    return int(match.group(1)), int(match.group(2))


@functools.cache
def rewrite(name: str) -> dict[str, Any]:
    """The row of tfdata_automatic.toml for one default rewrite, with `since` as (major, minor)."""
    from tfdoctor.knowledge import table

    [row] = [r for r in table("tfdata_automatic").rows if r["name"] == name]
    return {**row, "since": parse_release(row["since"])}


@functools.cache
def autotune_since(spelling: str) -> tuple[int, int]:
    """The first release that has AUTOTUNE under `spelling` ("data.AUTOTUNE"), from tfdata_automatic.toml."""
    from tfdoctor.knowledge import table

    [row] = [r for r in table("tfdata_automatic").data["autotune"] if r["spelling"] == spelling]
    return parse_release(row["since"])


@functools.cache
def _stateful() -> tuple[tuple[str, tuple[str, ...]], ...]:
    from tfdoctor.knowledge import table

    return tuple((row["prefix"], tuple(row["except"])) for row in table("tfdata_automatic").data["stateful"])


def stateful_call(name: str) -> bool:
    """Whether a call (its canonical name) makes stateful ops: tf.data leaves a map of it sequential."""
    return any(name.startswith(prefix) and not name.startswith(excepted)
               for prefix, excepted in _stateful())


# TensorFlow 1 APIs that TensorFlow 2 removed from its top level (tf.compat.v1 keeps them: a file that spells
# them so runs on TensorFlow 2, and says nothing of the release).
_TF1_ONLY = re.compile(r"tf\.(?:Session|InteractiveSession|placeholder|global_variables_initializer|"
                       r"get_variable|variable_scope|contrib\.[\w.]{1,80}|app\.run|train\.\w{1,40}Optimizer|"
                       r"layers\.\w{1,40}|estimator\.inputs\.\w{1,40}|python_io\.\w{1,40})")
_TF1_METHODS = frozenset({"make_one_shot_iterator", "make_initializable_iterator"})


def tensorflow_1_api(module: SourceModule) -> str | None:
    """A TensorFlow 1 API the file calls (`tf.Session`), which TensorFlow 2 removed: the file runs on a
    release before 2.0, where tf.data rewrites nothing by default. None when it calls none. Once per file."""
    return module.derived(_tensorflow_1_api)


def _tensorflow_1_api(module: SourceModule) -> str | None:
    for call in module.calls:
        name = module.call_name(call)
        func = call.func
        if name is not None and _TF1_ONLY.fullmatch(name) and not _spelled_compat(module, func):
            return name
        if isinstance(func, ast.Attribute) and func.attr in _TF1_METHODS and name is None:
            return f"Dataset.{func.attr}()"  # a method of a TensorFlow 1 dataset (tf.compat.v1.data's is a function)
    return None


def _spelled_compat(module: SourceModule, func: ast.AST) -> bool:
    """`tf.compat.v1.Session()`, or `import tensorflow.compat.v1 as tf`: TensorFlow 1's API as TensorFlow 2
    keeps it (lint's canonical names drop the compat prefix, so it is read off the spelling)."""
    root = func
    while isinstance(root, ast.Attribute):
        if root.attr == "compat":
            return True
        root = root.value
    return isinstance(root, ast.Name) and "compat" in module.imports.bindings.get(root.id, "")


def switched_off(module: SourceModule, name: str) -> str | None:
    """What in the file switches a default rewrite off (`options.experimental_optimization.map_parallelization
    = False`), as written; None when nothing does. Read once per file and rewrite: each map asks, and reading
    the text per map was quadratic in a file of many."""
    answers = module.derived(_switches_read)
    if name not in answers:
        answers[name] = _switched_off(module, name)
    return answers[name]


def _switches_read(_module: SourceModule) -> dict[str, str | None]:
    return {}


def _switched_off(module: SourceModule, name: str) -> str | None:
    text = module.text
    for setting in rewrite(name)["off"]:
        field, _, value = setting.partition(" = ")
        if field.rsplit(".", 1)[-1] not in text:
            continue  # the common case: a substring test, before any pattern
        pattern = re.compile(re.escape(field) + r"\s{0,4}=\s{0,4}" + re.escape(value))
        if pattern.search(text):
            return setting
    return None


@functools.cache
def _stateless_keras() -> tuple[tuple[str, str], ...]:
    from tfdoctor.knowledge import table

    return tuple((row["prefix"], row.get("suffix", "")) for row in table("tfdata_automatic").data["stateless"])


def stateless_keras_call(name: str) -> bool:
    """A Keras call known to make only stateless ops in a map (Resizing, Rescaling, preprocess_input)."""
    return any(name.startswith(prefix) and name.endswith(suffix) for prefix, suffix in _stateless_keras())


def for_notebook(environment: Environment, target: Target | None) -> Target | None:
    """The release a notebook runs on: `target`, unless the project's pins chose it (or nothing did) and the
    notebook says otherwise in its own cells. The TensorFlow it installs decides (None when that is the newest
    of the day: an install without a release, a nightly); then Colab's `%tensorflow_version 1.x` (1.15; "2.x"
    and a notebook saved by Colab run Colab's release of the day, which the project's pins say nothing of:
    None), unless it installs the project's own requirement file. A release named by the user (the flag, the
    setting) decides every file."""
    if target is not None and not target.from_project:
        return target
    pins: list[tuple[str, str]] = []
    newest = False  # it installs a TensorFlow without naming a release: the newest of the day it ran
    for cell, word in environment.installs:
        requirement = _install_requirement(word)
        if requirement is None:
            # `tensorflow==$TF_VERSION`, `tensorflow=={version}`, a wheel's URL: TensorFlow, of a release not
            # written here (not known: the project's pins say nothing of it either)
            newest = newest or _names_tensorflow(word)
            continue
        if requirement.name.startswith("tf-nightly") or not allowed_releases(requirement.specifier):
            newest = True
        else:
            # shown as parsed (name canonical, specifier normalized), never as the cell wrote it
            shown = f"{requirement.name}{_normalized(requirement.specifier)} in cell {cell}"
            pins.append((requirement.specifier, shown))
    if pins and not newest:
        return pinned(pins, "installed by the notebook", from_project=False)
    if pins or newest:
        return None
    if environment.magic is not None:
        cell, value = environment.magic
        release = _colab_magic().get(value[:1])
        return Target(parse_release(release), f"%tensorflow_version {value} in cell {cell}") if release else None
    if environment.colab and not environment.requirement_files:
        return None
    return target


def _install_requirement(word: str) -> Requirement | None:
    """An install command's word as a requirement of TensorFlow (conda's `tensorflow=2.4` too), nightlies
    included; None for another package."""
    from tfdoctor.derive.requirement_ranges import parse_requirement
    from tfdoctor.facts.probes.pyenv_snapshot import TENSORFLOW_DISTS

    requirement = parse_requirement(word)
    if requirement is None and (conda := _CONDA_WORD.fullmatch(word)) is not None:
        requirement = parse_requirement(conda_requirement(*conda.groups()))  # `tensorflow=2.4`: conda's 2.4.*
    return requirement if requirement is not None and requirement.name in TENSORFLOW_DISTS else None


def _names_tensorflow(word: str) -> bool:
    """Whether an install word names a TensorFlow distribution, however its version is written."""
    from tfdoctor.derive.requirement_ranges import canonical_name
    from tfdoctor.facts.probes.pyenv_snapshot import TENSORFLOW_DISTS

    return canonical_name(re.split(r"[=<>!~\[;@ ]", word, maxsplit=1)[0]) in TENSORFLOW_DISTS


def _normalized(specifier: str) -> str:
    from packaging.specifiers import SpecifierSet

    return str(SpecifierSet(specifier))


_CONDA_WORD = re.compile(CONDA_SPEC + r"(?:=[0-9A-Za-z_.*]{0,60})?")  # a build string after a second `=`


@functools.cache
def _colab_magic() -> dict[str, str]:
    """`%tensorflow_version`'s first character → the release it ran (tfdata_automatic.toml, [[colab_magic]])."""
    from tfdoctor.knowledge import table

    return {row["major"]: row["release"] for row in table("tfdata_automatic").data["colab_magic"]}


INSTALLED = "installed"  # `--target-tensorflow installed`: the release installed beside tfdoctor


def installed(paths: list[str] | None = None) -> Target | None:
    """The TensorFlow installed for this interpreter (`paths`: sys.path), from the names of its dist-info
    folders as the environment snapshot reads them (never imported: that costs seconds; no file opened); None
    when no TensorFlow distribution is installed, or its version is not a release."""
    import sys

    from tfdoctor.facts.probes.pyenv_snapshot import TENSORFLOW_DISTS, installed_distribution

    found = installed_distribution(sys.path if paths is None else paths, TENSORFLOW_DISTS)
    if found is None:
        return None
    name, version = found
    try:
        return Target(parse_release(version), f"installed: {name} {version}")
    except ValueError:
        return None


def resolve(text: str | None, origin: str) -> Target | None:
    """A target named by the flag or the setting: a release, or `installed`; ValueError when it is neither,
    or when `installed` finds no TensorFlow."""
    if text is None:
        return None
    if text.strip() == INSTALLED:
        found = installed()
        if found is None:
            raise ValueError("--target-tensorflow installed: no TensorFlow distribution on this Python's path "
                             "(name a release instead, e.g. 2.15)")
        return found
    return Target(parse_release(text), origin)
