"""A shared tune's confirmation and verification runs shared out among the live workers
(tfdoctor.tune.shared_pool): the writer decides, the helpers measure. The verdict is the same function of the
recorded runs wherever they were measured; a helper that dies has its job measured by the writer."""

from __future__ import annotations

import threading
import time

import pytest
from support.tune_fakes import FakeJob
from support.tune_setup import INTRA, TWO_CPUS, thread_space

from tfdoctor.tune.space import current_settings, rule_based_settings

optuna = pytest.importorskip("optuna")


class _HerePool:
    """A pool that measures every job here, one after the other: run_batch's bookkeeping without the study."""

    def __init__(self, objective) -> None:
        self.objective, self.batches = objective, []

    def measure(self, jobs):
        self.batches.append(len(jobs))
        return [[self.objective.measure(env, launcher) for env, launcher in job] for job in jobs]


def _tuner(pool=None, seed=4):
    from tfdoctor.tune.search import Tuner, TuneSettings

    space = thread_space()
    seeds = {"current": current_settings(space, {}, TWO_CPUS), "rule": rule_based_settings(TWO_CPUS, space)}
    objective = FakeJob(INTRA, seed=seed)
    return Tuner(space, objective, None, TuneSettings(budget=14, seed=3), seeds, current_env={},
                 pool=pool(objective) if pool else None)


def test_the_batched_confirmation_and_verdict_measure_what_the_sequential_ones_do():
    """Batched (every confirmation run at once, the verdict's rounds up to its next look at once) the tune
    measures the same configurations, gets the same values and reaches the same verdict."""
    alone = _tuner().run()
    pooled_tuner = _tuner(_HerePool)
    pooled = pooled_tuner.run()
    assert [(r.phase, r.params, r.role, r.round) for r in pooled.records] == \
        [(r.phase, r.params, r.role, r.round) for r in alone.records]
    assert [r.value for r in pooled.records] == [r.value for r in alone.records]
    assert pooled.verdict.apply == alone.verdict.apply and pooled.verdict.changes == alone.verdict.changes
    assert pooled.summary_json() == alone.summary_json()
    batches = pooled_tuner.pool.batches
    assert max(batches) >= 3  # confirmation runs, or a look's rounds, handed out together


def _study(tmp_path):
    from tfdoctor.tune.shared import open_storage, open_study

    return open_study(open_storage(str(tmp_path / "s.journal")), "p", True, 1, None)


def test_helpers_measure_the_writers_jobs_and_leave_when_the_winner_is_written(tmp_path):
    from tfdoctor.tune.shared import mark_written
    from tfdoctor.tune.shared_pool import SharedPool, help_writer

    study = _study(tmp_path)
    helped: dict[str, int] = {}

    def helper(name: str) -> None:
        slow = FakeJob(INTRA, seed=len(name))
        original = slow.measure

        def measure(env, launcher=()):
            time.sleep(0.3)  # a run that takes time: the writer hands out the rest meanwhile
            return original(env, launcher)

        slow.measure = measure
        helped[name] = help_writer(study, slow, name, name, 0.2, 60, space=thread_space())

    threads = [threading.Thread(target=helper, args=(f"h{i}",)) for i in (1, 2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while sum(1 for t in study.get_trials() if "helper" in t.user_attrs) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    writer = FakeJob(INTRA, seed=9)
    calls = []
    original = writer.measure
    writer.measure = lambda env, launcher=(): calls.append(env) or original(env, launcher)
    pool = SharedPool(study, writer, lambda: 60.0)
    jobs = [[({INTRA: str(v)}, ())] for v in (1, 2, 3, 4, 1, 2)] + [[({INTRA: "4"}, ()), ({}, ())]]
    results = pool.measure(jobs)
    assert [len(r) for r in results] == [1] * 6 + [2]
    assert all(m.status == "ok" for job in results for m in job)
    # the fake's value follows the thread count: each job's measurement is its own, wherever measured
    assert results[3][0].value > 3 * results[0][0].value
    assert pool.jobs_shared >= 2 and len(calls) < 8  # the helpers measured some; the writer the rest
    mark_written(study, "w:1", "apply")
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert sum(helped.values()) + len(calls) == 8
    assert all(t.state.name == "FAIL" for t in study.get_trials() if "helper" in t.user_attrs)


def test_a_helper_that_died_has_its_job_measured_by_the_writer(tmp_path):
    """A helper trial whose heartbeat stopped (its node lost) holding a job: given up after the grace period,
    the job measured by the writer; nothing is waited for past it."""
    from tfdoctor.tune.shared_pool import HELPER_ATTR, SharedPool

    study = _study(tmp_path)
    dead = study.ask()
    dead.set_user_attr(HELPER_ATTR, "gone:1")
    dead.set_user_attr("heartbeat", 1.0)  # never beats again
    pool = SharedPool(study, FakeJob(INTRA, seed=1), lambda: 0.5)
    started = time.monotonic()
    results = pool.measure([[({INTRA: "2"}, ())], [({INTRA: "3"}, ())]])
    assert [len(r) for r in results] == [1, 1] and time.monotonic() - started < 10
    assert study.get_trials()[dead.number].state.name == "FAIL"


@pytest.mark.parametrize("job", [
    {"id": 1, "runs": [{"env": {"BAD NAME": "1"}, "launcher": []}]},  # not a variable name
    {"id": 1, "runs": [{"env": {INTRA: 4}, "launcher": []}]},  # not a string
    {"id": "1", "runs": []},
    {"id": 1, "runs": [{"env": {}, "launcher": [3]}]},
    "job",
])
def test_a_job_no_writer_writes_is_not_run(job):
    from tfdoctor.tune.shared_pool import _runs_of

    assert _runs_of(job) is None


def test_a_result_no_helper_writes_is_not_taken():
    from tfdoctor.tune.shared_pool import _measurement

    assert _measurement({"status": "ok", "value": float("nan"), "seconds": 1}) is None
    assert _measurement({"status": "great", "value": 1.0}) is None
    assert _measurement({"status": "ok", "value": True}) is None
    assert _measurement({"status": "ok", "value": 2.5, "seconds": 1.0}).value == 2.5


def test_an_odd_nodes_helper_gets_no_job(tmp_path):
    """A helper on a node left out of the winner (another TensorFlow, another CPU) measures nothing for it."""
    from tfdoctor.tune.shared_pool import HELPER_ATTR, JOB_ATTR, SharedPool

    study = _study(tmp_path)
    odd = study.ask()
    for name, value in ((HELPER_ATTR, "odd:1"), ("node", "odd"), ("heartbeat", time.time())):
        odd.set_user_attr(name, value)
    pool = SharedPool(study, FakeJob(INTRA, seed=1), lambda: 60.0, frozenset({"odd"}))
    results = pool.measure([[({INTRA: "2"}, ())], [({INTRA: "3"}, ())]])
    assert [len(r) for r in results] == [1, 1] and pool.jobs_shared == 0
    assert JOB_ATTR not in study.get_trials()[odd.number].user_attrs


@pytest.mark.parametrize(("env", "launcher"), [
    ({"LD_PRELOAD": "/tmp/evil.so"}, ()),                # a variable outside the space
    ({INTRA: "64"}, ()),                                  # a value outside its range
    ({INTRA: "2; rm -rf ~"}, ()),                         # not a number
    ({"KMP_AFFINITY": "granularity=fine,balanced"}, ()),  # not one of the choices
    ({INTRA: "2"}, ("sh", "-c", "touch /tmp/owned")),     # a launcher no parameter has
])
def test_a_job_read_from_the_study_that_is_not_of_the_helpers_space_is_refused_not_run(tmp_path, env, launcher):
    """Anyone who can write the study's journal or database could hand helpers any command or variable
    (review of issue 37's shared confirmation): a helper runs only configurations of its own space, and
    answers the rest as failed so the writer does not wait."""
    from tfdoctor.tune.shared_pool import JOB_ATTR, RESULT_ATTR, help_writer

    space = thread_space()
    assert space.accepts({INTRA: "2", "KMP_AFFINITY": None}, ())  # what the writer does hand out
    assert not space.accepts(env, launcher)
    study = _study(tmp_path)
    ran = []
    job = FakeJob(INTRA, seed=1)
    job.measure = lambda env, launcher=(): ran.append((env, launcher))
    answered = {}

    def helper() -> None:
        help_writer(study, job, "h", "h", 0.2, 3, space=space)

    thread = threading.Thread(target=helper)
    thread.start()
    deadline = time.monotonic() + 30
    while not (trials := [t for t in study.get_trials() if "helper" in t.user_attrs]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    study._storage.set_trial_user_attr(trials[0]._trial_id, JOB_ATTR,
                                       {"id": 1, "runs": [{"env": env, "launcher": list(launcher)}]})
    while RESULT_ATTR not in (answered := study._storage.get_trial(trials[0]._trial_id).user_attrs):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    thread.join(30)
    assert ran == []
    [measurement] = answered[RESULT_ATTR]["measurements"]
    assert measurement["status"] == "failed" and measurement["error"].startswith("refused by the helper")
