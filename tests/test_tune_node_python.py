"""The Python environment a shared tune's trials run in (tfdoctor.tune.node_python), recorded by each worker in
the study: a node with another TensorFlow among alike ones is named and its trials left out; with two nodes
that differ no majority can be formed, and the writer says so instead of mixing them silently."""

from __future__ import annotations

import json
import os
import sys

import pytest
from support.tune_fakes import FakeJob
from support.tune_setup import INTRA, TWO_CPUS, thread_space

from tfdoctor.facts import Facts
from tfdoctor.tune.node_python import compared, python_environment, trial_interpreter
from tfdoctor.tune.space import rule_based_settings

optuna = pytest.importorskip("optuna")


def _facts() -> dict:
    return json.loads(Facts({"cpu": {"cpuinfo": {"processors": 64, "model_name": "Test CPU"}}},
                            {"hostname": "x"}).dumps())


def _env(tensorflow: str = "2.21.0", **more) -> dict:
    return {"interpreter": "/opt/venv/bin/python", "python": "3.11.7", "tensorflow-cpu": tensorflow,
            "numpy": "2.4.6", "keras": "3.15.1", "TF_ENABLE_ONEDNN_OPTS": "unset", **more}


@pytest.mark.parametrize(("command", "expected"), [
    (("python", "train.py"), True), (("python3.11", "-m", "train"), True), ((sys.executable, "x.py"), True),
    (("./train.sh",), False), (("srun", "python", "train.py"), False), ((), False), (("pythonista",), False),
])
def test_the_trial_interpreter_is_the_commands_python_when_it_is_one(command, expected):
    found = trial_interpreter(command, os.environ)
    assert (found is not None) == expected
    if command and command[0] == sys.executable:
        assert found == sys.executable


def test_the_environment_of_the_commands_python_is_read_from_that_interpreter():
    """This venv's interpreter as the command: its TensorFlow build, numpy and keras, as `check --python`
    reads them (importlib.metadata in that interpreter, no TensorFlow import)."""
    from importlib.metadata import PackageNotFoundError, version

    facts = python_environment((sys.executable, "train.py"), {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"})
    assert facts["interpreter"] == sys.executable
    assert facts["python"] == ".".join(map(str, sys.version_info[:3]))
    assert facts["TF_ENABLE_ONEDNN_OPTS"] == "0"
    for name in ("numpy", "tensorflow-cpu", "keras"):
        try:
            assert facts[name] == version(name)
        except PackageNotFoundError:
            assert name not in facts
    assert "unreadable" not in facts


def test_a_command_that_is_not_python_records_tfdoctors_own_interpreter():
    facts = python_environment(("./train.sh",), {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"})
    assert facts["interpreter"] == sys.executable and facts["TF_ENABLE_ONEDNN_OPTS"] == "unset"


def test_an_interpreter_that_cannot_run_is_a_fact_of_its_own():
    facts = python_environment(("/nonexistent/bin/python3", "train.py"), dict(os.environ))
    assert facts == {"interpreter": "/nonexistent/bin/python3",
                     "unreadable": "interpreter /nonexistent/bin/python3 does not exist"}
    assert compared(facts) == {"python.unreadable": "interpreter /nonexistent/bin/python3 does not exist"}


def test_where_the_interpreter_is_is_not_compared():
    assert "python.interpreter" not in compared(_env())
    assert compared(_env())["python.tensorflow-cpu"] == "2.21.0"


def _study(tmp_path, nodes: dict[str, dict]):
    from tfdoctor.tune.shared import open_storage, open_study, record_node

    space = thread_space()
    study = open_study(open_storage(str(tmp_path / "s.journal")), "py", True, 1, rule_based_settings(TWO_CPUS, space))
    for name, env in nodes.items():
        record_node(study, name, _facts(), env)
    return study, space


def test_a_node_with_another_tensorflow_is_named_and_its_trials_left_out(tmp_path):
    """The issue's planted node: tensorflow-cpu 2.20.0 among 2.21.0 nodes, its machine facts alike."""
    from tfdoctor.tune.shared import run_worker

    study, space = _study(tmp_path, {"n1": _env(), "n2": _env(), "odd": _env("2.20.0")})
    left = run_worker(study, space, FakeJob(INTRA, seed=1), 8, "odd", "odd:1", seed=3, limit=3)
    assert len(left.measured) == 3
    final = run_worker(study, space, FakeJob(INTRA, seed=2), 8, "n1", "n1:1", seed=3)
    assert final.writer and final.excluded == {"odd": {"python.tensorflow-cpu": "2.20.0"}}
    assert final.undecided == {}
    assert len(final.records) == 5  # the odd node's 3 trials left out


def test_two_nodes_that_differ_are_said_to_have_no_majority(tmp_path, capsys):
    from tfdoctor.tune.results import ResultsLog
    from tfdoctor.tune.search import TuneSettings
    from tfdoctor.tune.shared import run_worker
    from tfdoctor.tune.shared_cli import shared_tune

    study, space = _study(tmp_path, {"n1": _env("2.20.0")})
    run_worker(study, space, FakeJob(INTRA, seed=1), 6, "n1", "n1:1", seed=3, limit=3)
    facts = Facts.from_json({**_facts(), "meta": {"hostname": "n2"}})
    log = ResultsLog.create(tmp_path / "r.jsonl", {"space": space.to_json()})
    shared = shared_tune(str(tmp_path / "s.journal"), "py", space, FakeJob(INTRA, seed=2),
                         {"rule": rule_based_settings(TWO_CPUS, space)}, TuneSettings(budget=6, seed=1), facts, log,
                         python_env=_env("2.21.0"))
    err = capsys.readouterr().err
    assert shared is not None and len(shared.records) == 6  # nothing left out: neither is the odd one
    assert ("tfdoctor: the nodes differ in python.tensorflow-cpu ('2.20.0' on n1; '2.21.0' on n2) and no majority "
            "can be formed: no node is left out, and the winner mixes their trials. Tune on nodes alike, or on three "
            "or more so the odd one is named\n") in err


def test_nodes_alike_are_silent(tmp_path, capsys):
    from tfdoctor.tune.shared import run_worker

    study, space = _study(tmp_path, {"n1": _env(), "n2": _env()})
    final = run_worker(study, space, FakeJob(INTRA, seed=2), 4, "n1", "n1:1", seed=3)
    assert final.writer and final.excluded == {} and final.undecided == {}
