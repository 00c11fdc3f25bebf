"""A fake pip over a FakeSitePackages tree, to apply the pip commands tfdoctor prints and re-run the checks.

It does what pip does to the files that matter here: `install` picks the highest version of the index
that satisfies each requirement, removes the installed one first (its RECORD's files, then its
dist-info), writes the new one, and unless --no-deps installs each unsatisfied requirement the same way
(of a requested package already installed too: `pip install 'numpy<2' 'tensorflow-cpu==2.15.1'` moves
ml-dtypes into 2.15.1's ~=0.3.1)
(markers and extras ignored, as TensorFlow's only carry extras and platforms). `uninstall` removes the
files the RECORD lists: two TensorFlow distributions list the same tensorflow/ files, so uninstalling
one damages the other, as with the real pip.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from support.fake_site_packages import CP, TF_2_15_REQUIRES, TF_2_21_REQUIRES, FakeSitePackages
from tfdoctor.derive.requirement_ranges import canonical_name, parse_requirement, version_satisfies
from tfdoctor.derive.tensorflow_distribution import release_tuple

TENSORFLOW_NAMES = ("tensorflow", "tensorflow-cpu", "intel-tensorflow", "intel-tensorflow-avx512")


@dataclass(frozen=True)
class Release:
    requires: tuple[str, ...] = ()


def _tf(requires: tuple[str, ...]) -> Release:
    return Release(tuple(r for r in requires if "extra ==" not in r and "platform_system" not in r))


# What the index offers: enough versions for every fix to have something to resolve to.
INDEX: Mapping[str, Mapping[str, Release]] = {
    "tensorflow-cpu": {"2.15.1": _tf(TF_2_15_REQUIRES), "2.21.0": _tf(TF_2_21_REQUIRES)},
    "tensorflow": {"2.15.1": _tf(TF_2_15_REQUIRES), "2.21.0": _tf(TF_2_21_REQUIRES)},
    "intel-tensorflow": {"2.14.0": Release(("numpy>=1.23.5",))},
    "intel-tensorflow-avx512": {"2.14.0": Release(("numpy>=1.23.5",))},
    "tf-keras": {"2.15.1": Release(("tensorflow<2.16,>=2.15",)), "2.21.0": Release(("tensorflow<2.22,>=2.21",))},
    "numpy": {v: Release() for v in ("1.25.2", "1.26.4", "2.1.3", "2.2.6", "2.4.6")},
    "libclang": {"18.1.1": Release()},
    "keras": {v: Release() for v in ("2.15.0", "3.11.3", "3.15.1")},
    "protobuf": {v: Release() for v in ("4.25.9", "5.29.5", "6.33.1", "7.36.2")},
    "ml-dtypes": {v: Release() for v in ("0.3.2", "0.4.1", "0.6.0")},
    "h5py": {v: Release() for v in ("3.14.0", "3.15.1")},
    "tensorboard": {v: Release() for v in ("2.15.2", "2.16.2")},
    "wrapt": {v: Release() for v in ("1.14.2", "2.5.2")},
    "transformers": {"4.57.6": Release(("numpy>=1.17",))},
    # tensorflow-text names the distribution `tensorflow`: with its dependencies it pulls that one in
    "tensorflow-text": {"2.20.0": Release(("tensorflow<2.21,>=2.20.0",)),
                        "2.21.0": Release(("tensorflow<2.22,>=2.21.0",)),
                        "2.21.1": Release(("tensorflow<2.22,>=2.21.0",))},
}


class FakePip:
    def __init__(self, site: FakeSitePackages) -> None:
        self.site = site
        self.log: list[str] = []

    # -- what is installed -----------------------------------------------------------------------
    def _dist_dirs(self, name: str) -> list:
        key = canonical_name(name)
        return [d for d in self.site.path.glob("*.dist-info")
                if canonical_name(d.name.removesuffix(".dist-info").rsplit("-", 1)[0]) == key]

    def installed(self, name: str) -> str | None:
        dirs = self._dist_dirs(name)
        return dirs[0].name.removesuffix(".dist-info").rsplit("-", 1)[1] if dirs else None

    # -- commands --------------------------------------------------------------------------------
    def run(self, command: str) -> None:
        """One printed step: `<python> -m pip install|uninstall …`."""
        words = shlex.split(command)
        at = words.index("pip")
        action, args = words[at + 1], words[at + 2:]
        self.log.append(command)
        if action == "uninstall":
            for name in (a for a in args if not a.startswith("-")):
                self.uninstall(name)
        elif action == "install":
            flags = {a for a in args if a.startswith("-")}
            for requirement in (a for a in args if not a.startswith("-")):
                self.install(requirement, deps="--no-deps" not in flags, force="--force-reinstall" in flags)
        else:
            raise AssertionError(f"the fake pip does not know {action!r}: {command}")

    def uninstall(self, name: str) -> None:
        for folder in self._dist_dirs(name):
            record = folder / "RECORD"
            if record.exists():
                for line in record.read_text().splitlines():
                    path = self.site.path / line.split(",", 1)[0]
                    if path.is_file() and path.parent != folder:
                        path.unlink()
            shutil.rmtree(folder)

    def install(self, line: str, deps: bool = True, force: bool = False) -> None:
        requirement = parse_requirement(line)
        assert requirement is not None, line
        name = requirement.name
        current = self.installed(name)
        if current is not None and not force and version_satisfies(current, requirement.specifier):
            if deps and current in INDEX.get(name, {}):  # pip's resolver keeps a requested package's requirements met
                for dependency in INDEX[name][current].requires:
                    self.install(dependency, deps=True)
            return
        choices = [v for v in INDEX[name] if version_satisfies(v, requirement.specifier)]
        assert choices, f"no release of {name} satisfies {line}"
        version = max(choices, key=release_tuple)
        release = INDEX[name][version]
        self.uninstall(name)
        if name in TENSORFLOW_NAMES:
            self.site.tensorflow(name=name, version=version, requires=release.requires)
        else:
            self.site.dist(name, version, requires=release.requires, top_level=(name.replace("-", "_"),),
                           tags=(f"{CP}-{CP}-manylinux_2_17_x86_64",))
        if deps:
            for dependency in release.requires:
                self.install(dependency, deps=True)
