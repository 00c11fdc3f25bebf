"""A shared tune's confirmation and verification runs, shared out among the live workers as the search is:
the writer decides, the others measure.

A worker whose share of the search is done, and that is not the writer, stays as a **helper**: it opens a
trial of its own past the budget (user attribute `helper`: its name), beats its heartbeat there and waits
for work. The writer's Tuner hands batches of runs to SharedPool.measure: each job — one confirmation run,
or one paired round of the verdict's arms, run one after the other on one node so the pair stays a pair —
goes to an idle helper (written as the helper trial's user attribute `job`), or is measured by the writer
itself; each helper writes its measurements back (`result`) and waits for the next job. Only the writer
writes jobs, so no job is taken twice. A helper whose heartbeat stops for the grace period is given up and
its job measured by the writer; a helper given no job for the idle limit (the writer died, or needs nobody)
leaves. When the winner is written (the study's `winner-written`) every helper leaves.

What is measured and in which order is the writer's alone (tfdoctor.tune.search.Tuner.run_batch): the
verdict is the same function of the recorded runs, wherever they were measured.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from tfdoctor.tune.objective import Measurement

HELPER_ATTR = "helper"  # helper trial user attribute: the helper worker's name
JOB_ATTR = "job"  # helper trial: {"id": n, "runs": [{"env": {...}, "launcher": [...]}, ...]} (written by the writer)
RESULT_ATTR = "result"  # helper trial: {"id": n, "measurements": [{"status", "value", "seconds", "error"}]}
POLL_SECONDS = 0.2
MAX_RUNS_A_JOB = 64
Run = tuple[dict[str, "str | None"], tuple[str, ...]]  # a run's environment changes and launcher words


def _measurement_json(measurement: Measurement) -> dict[str, Any]:
    from tfdoctor.facts.redact import excerpt

    return {"status": measurement.status, "value": measurement.value, "seconds": round(measurement.seconds, 3),
            "error": excerpt(measurement.error, 500)}


def _measurement(data: Any) -> Measurement | None:
    """A helper's measurement as the writer reads it back; None for anything a helper never writes."""
    import math

    if not isinstance(data, dict) or data.get("status") not in ("ok", "failed", "timeout"):
        return None
    value, seconds = data.get("value"), data.get("seconds", 0.0)
    if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                              or not math.isfinite(value)):
        return None
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        seconds = 0.0
    return Measurement(data["status"], None if value is None else float(value), float(seconds),
                       str(data.get("error", "")))


def _runs_of(job: Any) -> list[tuple[dict[str, str | None], tuple[str, ...]]] | None:
    """A job as a helper reads it: each run's environment changes (names checked as env.sh's are) and
    launcher words; None for anything the writer never writes."""
    from tfdoctor.fixes.quoting import env_name

    if not isinstance(job, dict) or not isinstance(job.get("id"), int) or not isinstance(job.get("runs"), list):
        return None
    runs = []
    for run in job["runs"][:MAX_RUNS_A_JOB]:
        env, launcher = (run.get("env"), run.get("launcher")) if isinstance(run, dict) else (None, None)
        if not isinstance(env, dict) or not isinstance(launcher, list):
            return None
        try:
            for name, value in env.items():
                env_name(name, "a job's environment")
                if value is not None and not isinstance(value, str):
                    return None
        except ValueError:
            return None
        if not all(isinstance(word, str) for word in launcher):
            return None
        runs.append((dict(env), tuple(launcher)))
    return runs


# What a helper answers for a run that is not a configuration of its own space (Space.accepts): measured as
# failed, so the writer is not left waiting, and nothing read from the study is run.
REFUSED = Measurement("failed", None, 0.0, "refused by the helper: not a configuration of its own space (a job "
                      "read from the study may only set the space's variables to the space's values)")


def help_writer(study: Any, objective: Any, worker: str, node: str, interval: float, idle_limit: float, *,
                space: Any, on_job: Callable[[int], None] | None = None) -> int:
    """Measure the writer's jobs until the winner is written, or no job came for `idle_limit` seconds; the
    number of runs measured back. The helper trial is finished either way. Each run is checked against the
    helper's own `space` first: a job is read from the shared study, which others can write."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import Heartbeat
    from tfdoctor.tune.shared import WINNER_ATTR

    trial = study.ask()
    for name, value in ((HELPER_ATTR, worker), ("node", node)):
        trial.set_user_attr(name, value)
    done_id, measured = -1, 0
    last_work = time.monotonic()
    storage = study._storage
    try:
        with Heartbeat(trial, interval):
            while time.monotonic() - last_work < idle_limit:
                if WINNER_ATTR in study.user_attrs:
                    break
                frozen = storage.get_trial(trial._trial_id)
                if frozen.state.is_finished():  # given up by the writer (it thought this node lost)
                    return measured
                job = frozen.user_attrs.get(JOB_ATTR)
                runs = _runs_of(job)
                if runs is None or job["id"] == done_id:
                    time.sleep(POLL_SECONDS)
                    continue
                results = [_measurement_json(objective.measure(env, launcher)
                                             if space.accepts(env, launcher) else REFUSED)
                           for env, launcher in runs]
                trial.set_user_attr(RESULT_ATTR, {"id": job["id"], "measurements": results})
                done_id, measured, last_work = job["id"], measured + len(runs), time.monotonic()
                if on_job is not None:
                    on_job(len(runs))
        storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)  # a helper trial has no value
    except UpdateFinishedTrialError:
        pass
    return measured


class SharedPool:
    """The writer's side: Tuner.run_batch's `pool`. Jobs go to the idle live helpers, the rest are measured
    here; measure() returns when every job has its measurements."""

    def __init__(self, study: Any, objective: Any, grace: Callable[[], float],
                 excluded: frozenset[str] = frozenset()) -> None:
        """`excluded`: the odd nodes (tfdoctor.tune.shared.node_comparison), whose helpers get no job: what
        they measure is not the others' program or machine."""
        from tfdoctor.tune.heartbeat import Watch

        self.study, self.objective, self.grace, self.excluded = study, objective, grace, excluded
        self.watch = Watch()
        self.next_id = 0
        self.gone: set[int] = set()  # helper trials given up
        self.jobs_shared = 0

    def _helpers(self) -> list[Any]:
        """The helper trials alive: running, their heartbeat fresh."""
        from optuna.trial import TrialState

        now = time.monotonic()
        grace = self.grace()
        alive = []
        for trial in self.study.get_trials(deepcopy=False):
            if (HELPER_ATTR not in trial.user_attrs or trial.state != TrialState.RUNNING or trial.number in self.gone
                    or trial.user_attrs.get("node") in self.excluded):
                continue
            if self.watch.silent_for(trial, now) > grace:
                self._give_up(trial)
                continue
            alive.append(trial)
        return alive

    def _give_up(self, trial: Any) -> None:
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        self.gone.add(trial.number)
        with contextlib.suppress(UpdateFinishedTrialError):
            self.study._storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)

    def _busy(self, trial: Any) -> bool:
        job, result = trial.user_attrs.get(JOB_ATTR), trial.user_attrs.get(RESULT_ATTR)
        return isinstance(job, dict) and not (isinstance(result, dict) and result.get("id") == job.get("id"))

    def measure(self, jobs: Sequence[Sequence[Run]]) -> list[list[Measurement]]:
        results: dict[int, list[Measurement]] = {}
        waiting = list(range(len(jobs)))  # jobs not handed out yet
        handed: dict[int, tuple[int, int]] = {}  # helper trial number -> (job index, job id)
        storage = self.study._storage
        while waiting or handed:
            helpers = {t.number: t for t in self._helpers()}
            # Collect what came back; a helper gone: its job is handed out again.
            for number, (index, job_id) in list(handed.items()):
                trial = helpers.get(number)
                if trial is None:
                    del handed[number]
                    waiting.insert(0, index)
                    continue
                result = trial.user_attrs.get(RESULT_ATTR)
                if isinstance(result, dict) and result.get("id") == job_id:
                    got = [_measurement(m) for m in result.get("measurements") or []]
                    del handed[number]
                    if len(got) == len(jobs[index]) and all(m is not None for m in got):
                        results[index] = got  # type: ignore[assignment]
                    else:
                        waiting.insert(0, index)  # a result no helper writes: measured again
            # Hand the waiting jobs to the idle helpers.
            for number, trial in helpers.items():
                if not waiting:
                    break
                if number in handed or self._busy(trial):
                    continue
                index = waiting.pop(0)
                job_id = self.next_id
                self.next_id += 1
                runs = [{"env": dict(env), "launcher": list(launcher)} for env, launcher in jobs[index]]
                try:
                    storage.set_trial_user_attr(trial._trial_id, JOB_ATTR, {"id": job_id, "runs": runs})
                except Exception:  # it finished meanwhile (it left): the job waits for another
                    waiting.insert(0, index)
                    continue
                handed[number] = (index, job_id)
                self.jobs_shared += 1
            # The writer measures a job itself rather than wait idle.
            if waiting:
                index = waiting.pop()
                results[index] = [self.objective.measure(env, launcher) for env, launcher in jobs[index]]
            elif handed:
                time.sleep(POLL_SECONDS)
        return [results[i] for i in range(len(jobs))]
