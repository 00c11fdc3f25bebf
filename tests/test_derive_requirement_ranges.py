"""The cheap requirement evaluation agrees with packaging, which it falls back to for anything unusual."""

from __future__ import annotations

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tfdoctor.derive.requirement_ranges import marker_applies, parse_requirement, version_satisfies

SPECIFIERS = ["", ">=1.26.0", "<8.0.0,>=6.31.1", "!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1", "==2.21", "==2.21.0.0",
              "<2.0", ">2.0", "<=2.0.0", "~=2.21.0", "==2.*", ">=1.0rc1", "!=1.5"]
VERSIONS = ["2.0", "2.0.0", "1.26.0", "1.24.4", "8.0.0", "7.36.2", "0.5.1", "0.5.2.0", "2.21.0", "2.21.1", "2.1",
            "8.0.0rc1", "2.0.post1", "2.21.0+local", "1.5.0", "0.2"]


@pytest.mark.parametrize("specifier", SPECIFIERS)
def test_version_satisfies_agrees_with_packaging(specifier):
    for version in VERSIONS:
        expected = SpecifierSet(specifier).contains(version, prereleases=True)
        assert version_satisfies(version, specifier) is expected, (version, specifier)


def test_invalid_version_or_specifier_is_none():
    assert version_satisfies("not a version", ">=1") is None
    assert version_satisfies("1.0", ">=>1") is None


@pytest.mark.parametrize("line", [
    "numpy>=1.26.0", "gast!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1", "packaging", "google_pasta>=0.1.1",
    "numpy (>=1.2,<2)", 'nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',
    'tensorflow-io-gcs-filesystem>=0.23.1; (sys_platform != "win32" and python_version < "3.13") and '
    'extra == "gcs-filesystem"', "requests[socks]~=2.21", "pkg @ https://example.org/pkg.whl",
    "tensorflow-intel==2.15.0; platform_system == 'Windows'",
])
def test_parse_requirement_agrees_with_packaging(line):
    full = Requirement(line)
    parsed = parse_requirement(line)
    assert parsed is not None
    assert parsed.name == full.name.lower().replace("_", "-")
    assert SpecifierSet(parsed.specifier) == full.specifier
    assert (parsed.marker is None) == (full.marker is None)


def test_parse_invalid_requirement():
    assert parse_requirement("=== nonsense ;;") is None


ENV = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
       "implementation_name": "cpython", "platform_python_implementation": "CPython"}


@pytest.mark.parametrize("marker", [
    'extra == "and-cuda"', '(sys_platform != "win32" and python_version < "3.13") and extra == "gcs"',
    'python_version < "3.12"', 'python_version >= "3.12"', 'platform_system == "Windows"',
    'python_version < "3.12" or extra == "x"', "extra=='x'or python_version>='3'",
])
def test_marker_applies_agrees_with_packaging(marker):
    assert marker_applies(marker, ENV) is Marker(marker).evaluate({**ENV, "extra": ""})
