"""The TensorFlow releases a project pins, read from its requirement files (issue 39, items 1 and 6).

What tf.data does by itself depends on the release (tfdoctor/lint/target.py), and a project that pins
TensorFlow says which release its code runs on. `tfdoctor lint DIR`, without --target-tensorflow or the
`target-tensorflow` setting, reads the pins of the project each linted file is in: the nearest folder, from
the file's folder upward to the first one holding `.git`, that has one of PIN_FILES (ProjectPins; the
summary names those of the paths linted: project_target). A pin decides only what all the
releases it allows agree on: `tensorflow==2.11.1` is 2.11; `>=2.7,<=2.11` is 2.7 to 2.11, which tf.data
parallelizes a stateless map on (2.5+) but prefetches by itself only on some of (2.11+); `>=1.14` decides
nothing. Several pins (files, markers, `tensorflow-gpu` beside `tensorflow`) give the range that covers them
all, so that lint never claims more than every one of them allows.

Only the requirement strings are read, each through `packaging`'s parser (a file's other text is never
shown): requirements.txt, the `[project]` and poetry dependencies of pyproject.toml, the string literals of
setup.py (never run), setup.cfg's install_requires, environment.yml's conda and pip lines, and Pipfile. Each
file is read bounded (PIN_FILE_LIMIT); one that cannot be read, parsed, or trusted (a folder anyone may write
to, as for configuration files: tfdoctor/config.py) is passed over. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from packaging.specifiers import SpecifierSet

from tfdoctor.derive.requirement_ranges import Requirement
from tfdoctor.lint.runner import display_path
from tfdoctor.lint.target import CONDA_SPEC, Target, conda_requirement, pinned, tensorflow_requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PIN_FILES = ("requirements.txt", "pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "environment.yaml",
             "Pipfile")
PIN_FILE_LIMIT = 512 * 1024
# environment.yml: `- tensorflow=2.4` (conda: 2.4.*), `- tensorflow==2.4.1`, `- tensorflow 2.4.*`, a build
# string after a second `=`; bounded classes, anchored: linear on any line.
_CONDA_LINE = re.compile(r"\s{0,40}-\s{0,8}" + CONDA_SPEC + r"(?:[=,\s].{0,200})?")


def project_target(paths: Iterable[str | os.PathLike[str]]) -> Target | None:
    """The releases the project of the linted `paths` pins, or None: no pin found, the pins allow no release
    lint knows, or the paths lie in projects with different pins (each file is then linted for its own:
    ProjectPins)."""
    found: dict[str | None, Target | None] = {}
    for path in paths:
        folder = _pin_folder(os.path.abspath(os.fspath(path)))
        if folder not in found:
            found[folder] = folder_target(folder) if folder is not None else None  # None: a path pins nothing
    targets = list(found.values())
    spans = {None if t is None else (t.release, t.newest) for t in targets}
    return targets[0] if len(spans) == 1 else None  # the same releases, however each project spells its pins


class ProjectPins:
    """The releases pinned for each linted file: those of the nearest folder with pin files from the file's
    folder up to the project's top (a monorepo's sub-projects pin their own; tfdoctor/lint/target.py,
    TargetsByFile). `run` is the release of the paths linted (project_target), which the summary names. Each
    folder is looked at once."""

    def __init__(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        self.run = project_target(paths)
        self._folder_of: dict[str, str | None] = {}  # each folder looked in → its pin folder (_pin_folder)
        self._by_pin_folder: dict[str, Target | None] = {}

    def for_file(self, path: str | os.PathLike[str]) -> Target | None:
        folder = _pin_folder(os.path.dirname(os.path.abspath(os.fspath(path))), self._folder_of)
        if folder is None:
            return None
        if folder not in self._by_pin_folder:
            self._by_pin_folder[folder] = folder_target(folder)
        return self._by_pin_folder[folder]


def folder_target(folder: str) -> Target | None:
    """The range the pins in `folder`'s files allow, or None when they pin no release."""
    pins = [(requirement.specifier,
             f"{requirement.name}{SpecifierSet(requirement.specifier)} in {display_path(Path(folder, name))}")
            for name, requirement in _requirements(folder)]
    return pinned(pins, "pinned", from_project=True)


def _pin_folder(path: str, seen: dict[str, str | None] | None = None) -> str | None:
    """The nearest folder from `path` (a file's folder, or the folder itself) upward that holds a pin file,
    stopping at the first one holding `.git` (the project's top). `seen`: what earlier walks found for each
    folder they passed, filled in here, so that a tree of N folders costs N looks."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    seen = {} if seen is None else seen
    passed: list[str] = []
    found: str | None = None
    while True:
        if folder in seen:
            found = seen[folder]
            break
        passed.append(folder)
        if any(os.path.isfile(os.path.join(folder, name)) for name in PIN_FILES):
            found = folder
            break
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            break
        folder = parent
    for each in passed:
        seen[each] = found
    return found


def _requirements(folder: str) -> Iterator[tuple[str, Requirement]]:
    """(file name, requirement) for each TensorFlow requirement of the pin files in `folder`."""
    from tfdoctor.config import untrusted_because
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    for name in PIN_FILES:
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or untrusted_because(path):
            continue
        try:
            text = read_input_file(path, PIN_FILE_LIMIT, "requirement file").decode("utf-8", "replace")
        except InputFileError:
            continue
        for line in _READERS[name](text):
            requirement = tensorflow_requirement(line)
            if requirement is not None:
                yield name, requirement


def _requirements_txt(text: str) -> Iterator[str]:
    for line in text.splitlines():
        # a comment, pip's per-line options (--hash), a continuation backslash
        yield line.split("#", 1)[0].split(" --", 1)[0].rstrip("\\ \t")


def _pyproject(text: str) -> Iterator[str]:
    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return
    project = document.get("project")
    if isinstance(project, dict):
        yield from _strings(project.get("dependencies"))
        extras = project.get("optional-dependencies")
        for value in extras.values() if isinstance(extras, dict) else ():
            yield from _strings(value)
    poetry = document.get("tool", {}).get("poetry", {}) if isinstance(document.get("tool"), dict) else {}
    for section in ("dependencies", "dev-dependencies"):
        table = poetry.get(section) if isinstance(poetry, dict) else None
        for name, value in table.items() if isinstance(table, dict) else ():
            yield from _keyed(name, value, poetry=True)


def _pipfile(text: str) -> Iterator[str]:
    try:
        document = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return
    for section in ("packages", "dev-packages"):
        table = document.get(section)
        for name, value in table.items() if isinstance(table, dict) else ():
            yield from _keyed(name, value, poetry=False)


def _keyed(name: str, value: object, poetry: bool) -> Iterator[str]:
    """A `name = "spec"` or `name = {version = "spec"}` entry (poetry, Pipfile) as a requirement string."""
    if isinstance(value, dict):
        value = value.get("version")
    if not isinstance(value, str) or value.strip() in ("", "*"):
        return
    spec = value.strip()
    if poetry:
        spec = _poetry(spec)
    elif spec[:1].isdigit():
        spec = f"=={spec}"
    if spec:
        yield f"{name}{spec}"


def _poetry(spec: str) -> str:
    """Poetry's `^2.18.0`, `~2.4`, `2.4.*` or `2.4.1` as a PEP 440 specifier ("" when it is none of those)."""
    match = re.fullmatch(r"([\^~])?\s{0,4}(\d{1,3})(?:\.(\d{1,3}))?(?:\.(\d{1,5}))?", spec)
    if match is None:
        return spec if spec[:1] in "<>=!~" else ("==" + spec if spec[:1].isdigit() else "")
    kind, major, minor, patch = match.group(1), int(match.group(2)), match.group(3), match.group(4)
    floor = ".".join(p for p in (str(major), minor, patch) if p is not None)
    if kind == "^":
        return f">={floor},<{major + 1}" if major or minor is None else f">={floor},<0.{int(minor) + 1}"
    if kind == "~":
        return f">={floor},<{major}.{int(minor) + 1}" if minor is not None else f">={floor},<{major + 1}"
    return f"=={floor}.*" if patch is None else f"=={floor}"


def _setup_py(text: str) -> Iterator[str]:
    """The string literals of setup.py that read as requirements (install_requires, extras): never run."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= 300:
            yield node.value


def _setup_cfg(text: str) -> Iterator[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    for section in parser.sections():
        if section == "options" or section == "options.extras_require":
            for key, value in parser.items(section):
                if key == "install_requires" or section == "options.extras_require":
                    yield from value.splitlines()


def _environment_yml(text: str) -> Iterator[str]:
    for line in text.splitlines():
        match = _CONDA_LINE.fullmatch(line[:400])
        if match is None:
            continue
        yield conda_requirement(*match.groups())


_READERS = {"requirements.txt": _requirements_txt, "pyproject.toml": _pyproject, "setup.py": _setup_py,
            "setup.cfg": _setup_cfg, "environment.yml": _environment_yml, "environment.yaml": _environment_yml,
            "Pipfile": _pipfile}


def _strings(value: object) -> Iterator[str]:
    for item in value if isinstance(value, list) else ():
        if isinstance(item, str):
            yield item

