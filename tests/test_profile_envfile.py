from __future__ import annotations

import pytest

from tfdoctor.model import prepend_path, set_env, unset_env
from tfdoctor.profile.envfile import EnvFileError, apply_changes, environment_diff, environment_from_file
from tfdoctor.profile.runner import child_environment

BASE = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "OMP_NUM_THREADS": "64", "LD_LIBRARY_PATH": "/opt/a"}


def test_sourcing_sets_changes_and_unsets(tmp_path):
    script = tmp_path / "env.sh"
    script.write_text(
        "echo this output must not confuse the parser\n"
        "TF_NUM_INTRAOP_THREADS=2; export TF_NUM_INTRAOP_THREADS\n"
        "export OMP_NUM_THREADS=$((1 + 1))\n"
        "unset LD_LIBRARY_PATH\n"
        "export WEIRD='a b\nc=d'\n"
        "NOT_EXPORTED=1\n"
    )
    env = environment_from_file(script, BASE)
    assert environment_diff(BASE, env) == {
        "LD_LIBRARY_PATH": None, "OMP_NUM_THREADS": "2", "TF_NUM_INTRAOP_THREADS": "2", "WEIRD": "a b\nc=d",
    }
    assert "PWD" not in env and "SHLVL" not in env


def test_a_failing_or_missing_file_is_one_line(tmp_path):
    script = tmp_path / "bad.sh"
    script.write_text("echo nope >&2\nexit 3\n")
    with pytest.raises(EnvFileError, match=r"failed \(exit 3\): nope"):
        environment_from_file(script, BASE)
    with pytest.raises(EnvFileError, match="no such file"):
        environment_from_file(tmp_path / "missing.sh", BASE)


def test_a_hanging_file_times_out(tmp_path):
    script = tmp_path / "slow.sh"
    script.write_text("sleep 5\n")
    with pytest.raises(EnvFileError, match="did not finish"):
        environment_from_file(script, BASE, timeout=0.5)


def test_apply_changes_matches_the_rendered_script_semantics():
    env = apply_changes(BASE, [set_env("OMP_NUM_THREADS", "2"), unset_env("HOME"),
                               prepend_path("LD_LIBRARY_PATH", "/cuda/lib"), prepend_path("LD_LIBRARY_PATH", "/opt/a"),
                               prepend_path("NEW_PATH", "/x")])
    assert env["OMP_NUM_THREADS"] == "2"
    assert "HOME" not in env
    assert env["LD_LIBRARY_PATH"] == "/cuda/lib:/opt/a"
    assert env["NEW_PATH"] == "/x"


def test_child_gets_a_private_keras_home_with_a_copy_of_the_users_config(tmp_path):
    home = tmp_path / "home"
    (home / ".keras").mkdir(parents=True)
    (home / ".keras" / "keras.json").write_text('{"floatx": "float16"}')
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    env = child_environment({"HOME": str(home)}, tmp_path / "scratch")
    assert env["KERAS_HOME"] == str(tmp_path / "scratch" / "keras")
    assert (tmp_path / "scratch" / "keras" / "keras.json").read_text() == '{"floatx": "float16"}'
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before
