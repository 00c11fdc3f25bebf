"""Settings whose cost only a run can tell get an info finding that says what they risk, how to tell
(`tfdoctor profile`, `fix --validate`, `explain --log`) and the fix if they do hurt (issue 12 item 5):
CPU101 oneDNN on one thread, DIST109 a multi-worker start-up, XLA104 auto-clustering (tested with the other
XLA checks in test_checks_gpu_runtime.py). Each has a healthy twin in tests/healthy/ that stays
silent at warning level; the tests below also show each twin carries its note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import check_facts
from healthy import MACHINES, examine
from support.fake_site_packages import FakeSitePackages
from support.framework_facts import make_facts

from tfdoctor.facts.probes.pyenv_snapshot import snapshot
from tfdoctor.model import AdminFix, Applicability, Severity, set_env


@pytest.fixture
def site(tmp_path: Path) -> FakeSitePackages:
    return FakeSitePackages(tmp_path / "site-packages")


def cpu_facts(site: FakeSitePackages, env: dict[str, str], allowed: list[int] | None = None):
    facts = make_facts(env=env)
    facts.sections["python"] = snapshot(paths=[str(site)], environ={}, prefix=str(site.path.parent / "prefix"))
    facts.sections["cpu"]["online"] = list(range(8))
    facts.sections["cpu"]["allowed_cpus"] = allowed if allowed is not None else list(range(8))
    return facts


# -- CPU101: oneDNN on one intra-op thread -------------------------------------------------------------------

def test_onednn_default_with_one_intra_op_thread_is_noted(site):
    site.tensorflow(name="tensorflow-cpu", version="2.21.0").healthy_dependencies()
    report = check_facts(cpu_facts(site, {"TF_NUM_INTRAOP_THREADS": "1", "OMP_NUM_THREADS": "1"}), select=["CPU1"])
    (finding,) = report.findings()
    assert (finding.code, finding.severity) == ("CPU101", Severity.INFO)
    assert finding.message == (
        "oneDNN's CPU kernels are on (the default of tensorflow-cpu 2.21.0) with one intra-op thread "
        "(TF_NUM_INTRAOP_THREADS=1): with small ops its per-op set-up can cost more than the work, with large ones "
        "it still wins. To tell: `tfdoctor profile --compare` with and without TF_ENABLE_ONEDNN_OPTS=0, or "
        "`tfdoctor fix --validate --unsafe-fixes`. If oneDNN is measured slower: set TF_ENABLE_ONEDNN_OPTS=0")
    assert finding.evidence == {"env.TF_NUM_INTRAOP_THREADS": "1", "env.TF_ENABLE_ONEDNN_OPTS": "unset",
                                "python.watched.tensorflow-cpu.version": "2.21.0"}
    (fix,) = finding.fixes
    assert (fix.applicability, fix.changes) == (Applicability.UNSAFE, (set_env("TF_ENABLE_ONEDNN_OPTS", "0"),))


def test_a_process_bound_to_one_cpu_runs_one_intra_op_thread(site):
    site.tensorflow(name="tensorflow-cpu", version="2.21.0").healthy_dependencies()
    (finding,) = check_facts(cpu_facts(site, {}, allowed=[5]), select=["CPU101"]).findings()
    assert "(the process may run on one CPU only)" in finding.message
    assert finding.evidence["cpu.allowed_cpus"] == [5]


@pytest.mark.parametrize(("version", "env", "allowed"), [
    ("2.21.0", {"TF_NUM_INTRAOP_THREADS": "4"}, None),  # several threads: oneDNN's set-up is shared
    ("2.21.0", {}, None),  # TensorFlow sizes the pool to the 8 allowed CPUs
    ("2.21.0", {"TF_NUM_INTRAOP_THREADS": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}, None),  # off (CPU002's case)
    ("2.8.0", {"TF_NUM_INTRAOP_THREADS": "1"}, None),  # before 2.9 oneDNN was off by default on Linux
    ("2.21.0", {"TF_NUM_INTRAOP_THREADS": "8"}, [3]),  # an explicit pool size wins over the affinity
])
def test_onednn_note_is_silent_where_nothing_runs_on_one_thread_or_onednn_is_off(site, version, env, allowed):
    site.tensorflow(name="tensorflow-cpu", version=version).healthy_dependencies()
    assert check_facts(cpu_facts(site, env, allowed), select=["CPU101"]).codes() == []


def test_onednn_switched_on_explicitly_before_2_9_is_noted(site):
    site.tensorflow(name="tensorflow-cpu", version="2.8.0").healthy_dependencies()
    env = {"TF_NUM_INTRAOP_THREADS": "1", "TF_ENABLE_ONEDNN_OPTS": "1"}
    (finding,) = check_facts(cpu_facts(site, env), select=["CPU101"]).findings()
    assert finding.message.startswith("oneDNN's CPU kernels are on (TF_ENABLE_ONEDNN_OPTS=1) with one intra-op")


# -- DIST109: the start-up waits for every task ---------------------------------------------------------------

CLUSTER = {"chief": ["node1:2222"], "worker": ["node2:2222", "node3:2222"], "evaluator": ["node9:2222"]}


def dist109(tf_config: object) -> list:
    raw = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
    return check_facts(make_facts(env={"TF_CONFIG": raw}), select=["DIST109"]).findings()


def test_a_multi_task_cluster_is_noted_with_how_to_tell_and_the_fix():
    (finding,) = dist109({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    assert finding.severity is Severity.INFO
    assert finding.message == (
        "TF_CONFIG lists 3 tasks that must join (1 chief, 2 worker): the strategy waits at start-up until every one "
        "has connected, with no time limit, so one late or missing task holds them all. To tell: the time to the "
        "first step, and `tfdoctor explain --log` on a waiting task's log. If it hurts: start every task in one "
        "allocation and give collectives a timeout")
    assert finding.evidence == {"TF_CONFIG.cluster": {"chief": ["node1:2222"], "worker": ["node2:2222", "node3:2222"]},
                                "TF_CONFIG.task": "chief[0]"}
    (fix,) = finding.fixes
    assert isinstance(fix, AdminFix) and fix.applicability is Applicability.MANUAL
    assert fix.steps == ()
    assert fix.text.endswith("set a timeout: tf.distribute.experimental.CommunicationOptions(timeout_seconds=600)")


@pytest.mark.parametrize("tf_config", [
    {"cluster": {"worker": ["node1:2222"]}, "task": {"type": "worker", "index": 0}},  # one task: nothing to wait for
    {"cluster": {"worker": ["node1:2222"], "evaluator": ["node2:2222"]}, "task": {"type": "worker", "index": 0}},
    '{"cluster": {"worker": "node1:2222"}',  # not JSON: DIST001 reports it
    {"cluster": {"worker": ["node1:2222", "node2:2222"]}, "task": {"type": "worker", "index": 5}},  # DIST002's
])
def test_no_note_without_a_usable_multi_task_cluster(tf_config):
    assert dist109(tf_config) == []


# -- the healthy twins carry their note, and nothing louder -------------------------------------------------------

@pytest.mark.parametrize(("machine", "code"), [
    ("laptop-single-thread-sweep-trial", "CPU101"),
    ("multi-worker-cpu-node", "DIST109"),
    ("gpu-workstation-auto-jit", "XLA104"),
])
def test_each_twin_shows_its_note_at_info_level(tmp_path, machine, code):
    twin = next(m for m in MACHINES if m.name == machine)
    report = examine(twin, tmp_path)
    notes = [f for f in report.findings() if f.code == code]
    assert len(notes) == 1 and notes[0].severity is Severity.INFO
    loud = [f.code for f in report.findings() if f.severity is not None and f.severity >= Severity.WARNING]
    assert [c for c in loud if c not in twin.false_alarms] == []  # false alarms owned by other branches aside
