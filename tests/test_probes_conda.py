"""The conda probe (tfdoctor/facts/probes/conda.py) over conda environments written as conda writes them
(tests/healthy/platform_parts.py: conda-meta records with sorted keys, large files lists in the middle),
and PKG030 (tfdoctor/checks/conda.py) on its recorded fixture edited fact by fact."""

from __future__ import annotations

import pytest
from conftest import check_facts, probe_root
from healthy import platform_parts as hosts
from support.snapshot_facts import edited_facts

from tfdoctor.facts import Unknown
from tfdoctor.facts.probes.conda import channel_of
from tfdoctor.model import Status

PREFIX = "/home/ada/miniconda3/envs/tf"
ENV = {"HOME": "/home/ada", "CONDA_PREFIX": PREFIX}
FIXTURE = "checks/pkg030-keras-and-tensorboard-from-defaults-beside-conda-forge.json"


@pytest.mark.parametrize(("value", "channel"), [
    ("https://conda.anaconda.org/conda-forge/linux-64", "conda-forge"),
    ("https://repo.anaconda.com/pkgs/main/linux-64/numpy-1.26.4-py311h08b1b3b_0.conda", "pkgs/main"),
    ("https://conda.anaconda.org/t/tk-123/private/noarch", "private"),
    ("conda-forge", "conda-forge"),
    ("defaults", "defaults"),
])
def test_a_channel_url_is_named_as_conda_lists_it(value, channel):
    assert channel_of(value) == channel


def test_the_stack_records_give_their_channels_and_other_packages_are_not_read(make_root):
    root = make_root()
    many_files = tuple(f"lib/python3.11/site-packages/tensorflow/f{i}.py" for i in range(3000))  # ~300 KB
    hosts.conda_record(root, PREFIX, "tensorflow-base", "2.15.0", "cpu_py311h21fe4a4_2", hosts.CONDA_FORGE_URL,
                       files=many_files)
    hosts.conda_record(root, PREFIX, "numpy", "1.26.4", "py311h08b1b3b_0", hosts.DEFAULTS_URL)
    hosts.conda_record(root, PREFIX, "zlib", "1.2.13", "h5eee18b_1", hosts.DEFAULTS_URL)
    root.write("/home/ada/.condarc", "channels:\n  - conda-forge\nchannel_priority: flexible  # the default\n")
    conda = probe_root(root, ENV).sections["conda"]
    assert conda["is_conda"] is True and conda["prefix"] == PREFIX
    assert conda["packages"] == [
        {"name": "numpy", "version": "1.26.4", "build": "py311h08b1b3b_0", "channel": "pkgs/main"},
        {"name": "tensorflow-base", "version": "2.15.0", "build": "cpu_py311h21fe4a4_2", "channel": "conda-forge"},
    ]
    assert conda["channel_priority"] == {"value": "flexible", "source": "/home/ada/.condarc"}


def test_the_environments_own_condarc_overrides_the_users(make_root):
    root = make_root()
    hosts.conda_record(root, PREFIX, "python", "3.11.9", "hb806964_0_cpython", hosts.CONDA_FORGE_URL)
    root.write("/home/ada/.condarc", "channel_priority: flexible\n")
    root.write(f"{PREFIX}/.condarc", "channel_priority: strict\n")
    assert probe_root(root, ENV).sections["conda"]["channel_priority"] == {"value": "strict",
                                                                           "source": f"{PREFIX}/.condarc"}


def test_a_record_without_channel_or_url_is_unknown_and_says_which(make_root):
    root = make_root().write(f"{PREFIX}/conda-meta/numpy-1.26.4-py311h08b1b3b_0.json", '{"name": "numpy"}')
    package = probe_root(root, ENV).sections["conda"]["packages"][0]
    assert package["channel"] == Unknown(f"{PREFIX}/conda-meta/numpy-1.26.4-py311h08b1b3b_0.json names no "
                                         "channel or url")


def test_a_venv_is_not_conda(make_root):
    root = make_root()
    assert probe_root(root, {"VIRTUAL_ENV": "/home/ada/venv"}).sections["conda"] == {"prefix": "/home/ada/venv",
                                                                                    "is_conda": False}


def test_mixed_channels_are_named_with_the_priority_and_the_fix_takes_the_stack_from_tensorflows_channel():
    report = check_facts(edited_facts(FIXTURE, {}), select=["PKG030"])
    (finding,) = report.findings()
    assert finding.message.startswith("The TensorFlow stack of this conda environment mixes builds of conda-forge")
    assert "and defaults (keras 2.10.0, tensorboard 2.10.0); channel_priority is flexible" in finding.message
    assert finding.fixes[0].steps == (
        "conda config --env --set channel_priority strict",
        "conda install --override-channels -c conda-forge keras libprotobuf numpy python tensorboard tensorflow "
        "tensorflow-base tensorflow-gpu")


@pytest.mark.parametrize("edits", [
    {"conda.packages.0.channel": "conda-forge", "conda.packages.4.channel": "conda-forge"},  # one channel
    {"conda.is_conda": False},  # not a conda environment
])
def test_one_channel_or_no_conda_is_silent(edits):
    result = check_facts(edited_facts(FIXTURE, edits), select=["PKG030"]).results[0]
    assert result.status is Status.PASSED


def test_a_private_or_nvidia_channel_beside_conda_forge_is_not_mixing():
    facts = edited_facts(FIXTURE, {"conda.packages.0.channel": "nvidia", "conda.packages.4.channel": "nvidia"})
    names = [p["name"] for p in facts.sections["conda"]["packages"]]
    assert names[0] == "keras" and names[4] == "tensorboard"
    assert check_facts(facts, select=["PKG030"]).findings() == []


@pytest.mark.parametrize("edits", [
    {"conda.is_conda": {"$unknown": "conda-meta could not be listed"}},
    # keras and tensorboard (pkgs/main in the fixture) with unreadable records: the stack may be mixed
    {"conda.packages.0.channel": {"$unknown": "keras's record could not be read"},
     "conda.packages.4.channel": {"$unknown": "tensorboard's record could not be read"}},
])
def test_unknown_conda_facts_are_not_checked_rather_than_passed(edits):
    result = check_facts(edited_facts(FIXTURE, edits), select=["PKG030"]).results[0]
    assert result.status is Status.NOT_CHECKED
    assert "could not be" in result.reason


def test_a_hostile_package_name_in_a_hand_made_facts_file_is_quoted_in_the_fix():
    """Names come from conda-meta records through the probe's pattern; a hand-made --facts file may hold any
    name, and the conda command shown must quote it as every command tfdoctor shows is quoted."""
    from tfdoctor.facts import from_jsonable

    facts = edited_facts(FIXTURE, {})
    packages = facts.sections["conda"]["packages"]
    keras = next(p for p in packages if p["name"] == "keras")
    packages[packages.index(keras)] = from_jsonable({**keras, "name": "keras; rm -rf ~"})
    (finding,) = check_facts(facts, select=["PKG030"]).findings()
    assert "'keras; rm -rf ~'" in finding.fixes[0].steps[1] and "keras; rm" not in finding.fixes[0].steps[1].replace(
        "'keras; rm -rf ~'", "")
def test_conda_channel_priority_in_the_environment_overrides_every_condarc(make_root):
    root = make_root()
    hosts.conda_record(root, PREFIX, "python", "3.11.9", "hb806964_0_cpython", hosts.CONDA_FORGE_URL)
    root.write(f"{PREFIX}/.condarc", "channel_priority: flexible\n")
    env = {**ENV, "CONDA_CHANNEL_PRIORITY": "Strict"}
    assert probe_root(root, env).sections["conda"]["channel_priority"] == {"value": "strict",
                                                                           "source": "CONDA_CHANNEL_PRIORITY"}
