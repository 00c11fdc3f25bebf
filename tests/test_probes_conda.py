"""The conda probe (tfdoctor/facts/probes/conda.py) over conda environments written as conda writes them
(tests/healthy/platform_parts.py: conda-meta records with sorted keys, large files lists in the middle),
and PKG030 (tfdoctor/checks/conda.py) on its recorded fixture edited fact by fact."""

from __future__ import annotations

import os

import pytest
from conftest import check_facts, probe_root
from healthy import platform_parts as hosts
from support.snapshot_facts import edited_facts

from tfdoctor.facts import Unknown
from tfdoctor.facts.probes.conda import channel_of
from tfdoctor.model import Status

PREFIX = "/home/ada/miniconda3/envs/tf"
# As `conda activate tf` leaves it: conda's own installation in CONDA_EXE and CONDA_PYTHON_EXE.
CONDA = "/home/ada/miniconda3"
ENV = {"HOME": "/home/ada", "CONDA_PREFIX": PREFIX, "CONDA_EXE": f"{CONDA}/bin/conda",
       "CONDA_PYTHON_EXE": f"{CONDA}/bin/python", "CONDA_DEFAULT_ENV": "tf", "CONDA_SHLVL": "2"}
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
    assert conda["channel_priority"] == {"value": "flexible", "source": "/home/ada/.condarc",
                                         "files": ["/home/ada/.condarc"]}


def test_the_environments_own_condarc_overrides_the_users(make_root):
    root = make_root()
    hosts.conda_record(root, PREFIX, "python", "3.11.9", "hb806964_0_cpython", hosts.CONDA_FORGE_URL)
    root.write("/home/ada/.condarc", "channel_priority: flexible\n")
    root.write(f"{PREFIX}/.condarc", "channel_priority: strict\n")
    assert probe_root(root, ENV).sections["conda"]["channel_priority"] == {
        "value": "strict", "source": f"{PREFIX}/.condarc", "files": ["/home/ada/.condarc", f"{PREFIX}/.condarc"]}


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
    assert probe_root(root, env).sections["conda"]["channel_priority"] == {
        "value": "strict", "source": "CONDA_CHANNEL_PRIORITY", "files": [f"{PREFIX}/.condarc"]}


def _conda_env(make_root):
    root = make_root()
    hosts.conda_record(root, PREFIX, "python", "3.11.9", "hb806964_0_cpython", hosts.CONDA_FORGE_URL)
    hosts.conda_record(root, CONDA, "conda", "24.1.2", "py311h06a4308_0", hosts.DEFAULTS_URL)
    return root


def _priority(root, env=ENV):
    return probe_root(root, env).sections["conda"]["channel_priority"]


def test_every_file_of_condas_search_path_is_read_in_condas_order_and_the_last_one_decides(make_root):
    """conda/base/constants.py SEARCH_PATH: /etc/conda, /var/lib/conda, $CONDA_ROOT, $XDG_CONFIG_HOME/conda,
    ~/.config/conda, ~/.conda, ~/.condarc, $CONDA_PREFIX, $CONDARC; files named .condarc or condarc, and the
    *.yml / *.yaml files of each condarc.d folder in name order."""
    root = _conda_env(make_root)
    order = ["/etc/conda/.condarc", "/etc/conda/condarc", "/etc/conda/condarc.d/10-site.yml",
             "/etc/conda/condarc.d/20-mirror.yaml", "/var/lib/conda/condarc", f"{CONDA}/.condarc",
             f"{CONDA}/condarc.d/channels.yml", "/home/ada/xdg/conda/condarc", "/home/ada/.config/conda/.condarc",
             "/home/ada/.conda/condarc.d/a.yml", "/home/ada/.condarc", f"{PREFIX}/condarc", "/home/ada/tf.yml"]
    for path in order:
        root.write(path, "channels:\n  - conda-forge\n")
    root.write("/etc/conda/condarc.d/README", "channel_priority: disabled\n")  # not *.yml: conda skips it
    root.write("/etc/conda/condarc.d/old.yml.bak", "channel_priority: disabled\n")
    os.mkfifo(root.path / "etc/conda/condarc.d/fifo.yml")  # not a regular file: conda skips it, never waits on it
    env = {**ENV, "XDG_CONFIG_HOME": "/home/ada/xdg", "CONDARC": "/home/ada/tf.yml"}
    assert _priority(root, env) == {"value": None, "source": None, "files": order}
    for at, path in enumerate(order):
        root.write(path, f"channel_priority: {'strict' if at % 2 else 'flexible'}\n")
        assert _priority(root, env) == {"value": "strict" if at % 2 else "flexible", "source": path, "files": order}


def test_a_condarc_variable_naming_no_condarc_or_yaml_file_is_ignored_as_conda_ignores_it(make_root):
    root = _conda_env(make_root).write("/home/ada/.condarc", "channel_priority: strict\n")
    root.write("/home/ada/conda.cfg", "channel_priority: disabled\n")
    assert _priority(root, {**ENV, "CONDARC": "/home/ada/conda.cfg"}) == {
        "value": "strict", "source": "/home/ada/.condarc", "files": ["/home/ada/.condarc"]}


def test_a_value_marked_final_overrides_every_later_file_and_the_variable(make_root):
    root = _conda_env(make_root)
    root.write("/etc/conda/.condarc", "channel_priority: strict  #!final\n")
    root.write("/home/ada/.condarc", "channel_priority: flexible\n")
    env = {**ENV, "CONDA_CHANNEL_PRIORITY": "disabled"}
    assert _priority(root, env)["value"] == "strict" and _priority(root, env)["source"] == "/etc/conda/.condarc"
    root.write("/etc/conda/.condarc", "channel_priority: strict  # !final is not the flag\n")
    assert _priority(root, env)["source"] == "CONDA_CHANNEL_PRIORITY"
    assert _priority(root, {**ENV, "CONDA_CHANNEL_PRIORITY": "disabled!important"})["value"] == "disabled"


@pytest.mark.parametrize(("line", "value"), [
    ("channel_priority: 'strict'", "strict"), ('channel_priority: "Flexible"', "flexible"),
    ("channel_priority: true", "flexible"), ("channel_priority: False", "disabled"),
    ("  channel_priority: strict", None),  # nested under another key: not conda's setting
])
def test_a_channel_priority_is_read_as_conda_reads_it(make_root, line, value):
    root = _conda_env(make_root).write("/home/ada/.condarc", f"ssl_verify: true\n{line}\n")
    assert _priority(root)["value"] == value


def test_the_base_environment_is_read_once_at_the_place_of_condas_root(make_root):
    """In the base environment $CONDA_ROOT and $CONDA_PREFIX are one folder: conda reads its .condarc once, at
    its first place, so ~/.condarc overrides it."""
    root = make_root()
    hosts.conda_record(root, CONDA, "python", "3.11.9", "hb806964_0_cpython", hosts.CONDA_FORGE_URL)
    root.write(f"{CONDA}/.condarc", "channel_priority: strict\n")
    root.write("/home/ada/.condarc", "channel_priority: flexible\n")
    env = {**ENV, "CONDA_PREFIX": CONDA, "CONDA_DEFAULT_ENV": "base"}
    assert _priority(root, env) == {"value": "flexible", "source": "/home/ada/.condarc",
                                    "files": [f"{CONDA}/.condarc", "/home/ada/.condarc"]}


@pytest.mark.parametrize("env", [
    {"CONDA_ROOT": CONDA},
    {"CONDA_PYTHON_EXE": f"{CONDA}/bin/python"},
    {},  # not activated: the environment lies in <conda>/envs and <conda> is a conda environment
])
def test_condas_root_is_found_without_conda_exe(make_root, env):
    root = _conda_env(make_root).write(f"{CONDA}/.condarc", "channel_priority: strict\n")
    assert _priority(root, {"HOME": "/home/ada", "CONDA_PREFIX": PREFIX, **env})["source"] == f"{CONDA}/.condarc"


def test_an_unknown_conda_root_or_an_unreadable_file_makes_the_priority_unknown(make_root):
    root = make_root().write("/home/ada/.condarc", "channel_priority: strict\n")
    hosts.conda_record(root, PREFIX, "python", "3.11.9", "hb806964_0_cpython", hosts.CONDA_FORGE_URL)
    value = _priority(root, {"HOME": "/home/ada", "CONDA_PREFIX": PREFIX})["value"]
    assert isinstance(value, Unknown) and value.reason.startswith("conda's installation is not known")
    root.write(f"{CONDA}/conda-meta/conda-24.1.2-py311h06a4308_0.json", "{}")
    big = "# " + "x" * 300 * 1024 + "\nchannel_priority: strict\n"
    root.write("/etc/conda/condarc.d/site.yml", big)  # may hold `#!final`: the later ~/.condarc cannot decide
    assert _priority(root, {"HOME": "/home/ada", "CONDA_PREFIX": PREFIX}) == {
        "value": Unknown("/etc/conda/condarc.d/site.yml is larger than 256 KB: not read"),
        "source": "/etc/conda/condarc.d/site.yml", "files": ["/home/ada/.condarc"]}


def test_a_fifo_named_condarc_is_skipped_as_conda_skips_it(make_root):
    root = _conda_env(make_root).write("/home/ada/.condarc", "channel_priority: strict\n")
    os.mkfifo(root.path / f"{PREFIX.lstrip('/')}/.condarc")
    assert _priority(root) == {"value": "strict", "source": "/home/ada/.condarc", "files": ["/home/ada/.condarc"]}


def test_an_unknown_priority_is_said_so_in_the_finding_not_called_the_default():
    facts = edited_facts(FIXTURE, {"conda.channel_priority.value": {"$unknown": "/etc/conda/.condarc is a FIFO"}})
    (finding,) = check_facts(facts, select=["PKG030"]).findings()
    assert "channel_priority is not known (/etc/conda/.condarc is a FIFO)" in finding.message


def test_a_relative_condarc_is_unknown_since_it_depends_on_the_folder_conda_runs_in(make_root):
    root = _conda_env(make_root).write("/home/ada/.condarc", "channel_priority: strict\n")
    assert _priority(root, {**ENV, "CONDARC": "conda.yml"}) == {
        "value": Unknown("CONDARC=conda.yml is relative: which file conda reads depends on the folder it runs in"),
        "source": None, "files": ["/home/ada/.condarc"]}
