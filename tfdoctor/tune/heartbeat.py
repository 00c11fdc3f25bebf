"""Liveness of a shared tune's running trials (tfdoctor.tune.shared).

optuna's JournalStorage (5.0) has no heartbeat, and RDBStorage's grace period is fixed when the storage is
opened, while ours follows the measured trial lengths; so one mechanism serves both storages: while a
worker measures a trial, a daemon thread writes the time into the trial's user attribute "heartbeat".
Another worker judges a RUNNING trial stale when that attribute has not CHANGED for the grace period by
its own clock (never by comparing two nodes' clocks, which may disagree by more than the grace period).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

HEARTBEAT_ATTR = "heartbeat"  # trial user attribute: the worker's time.time() at its last beat
STALE_ATTR = "stale"  # trial user attribute: why the trial was failed as stale
REPLACES_ATTR = "replaces"  # trial user attribute: the number of the stale trial this one measures again
GRACE_FLOOR = 60.0  # seconds; the grace is max(floor, 3 × the longest finished trial)
MAX_INTERVAL = 10.0  # seconds between two beats
JOIN_GRACE = 5.0  # seconds a block's end waits, beyond one interval, for a beat being written


def grace_seconds(durations: Iterable[float], floor: float = GRACE_FLOOR) -> float:
    """How long a heartbeat may stay unchanged: a node stalled by its own trial (swapping, a file system
    hung for a while) must not lose its trial, so three times the longest trial measured, at least `floor`."""
    return max(floor, 3.0 * max(durations, default=0.0))


def beat_interval(floor: float = GRACE_FLOOR) -> float:
    """Four beats at least within the smallest grace: one lost write does not make a live trial stale."""
    return min(MAX_INTERVAL, floor / 4.0)


class Heartbeat:
    """`with Heartbeat(trial, interval):` beats while the block runs. It stops by itself once the trial is
    finished (failed as stale by another worker). A write the storage refuses otherwise (a shared file
    system's passing error) is one lost beat: the next is tried at the next interval, as beat_interval
    counts on. A beat must never stop the measurement."""

    def __init__(self, trial: Any, interval: float) -> None:
        self._trial, self._interval = trial, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tfdoctor-heartbeat", daemon=True)

    def _run(self) -> None:
        from optuna.exceptions import UpdateFinishedTrialError

        while True:
            try:
                self._trial.set_user_attr(HEARTBEAT_ATTR, time.time())
            except UpdateFinishedTrialError:  # failed as stale meanwhile: nothing more to beat
                return
            except Exception:  # a lost beat: giving up would make a live trial look dead
                pass
            if self._stop.wait(self._interval):
                return

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        # A beat stuck in its write (a hung NFS mount, a locked database) must not hold the worker: the
        # thread is a daemon, and a beat that lands after the trial is told fails as UpdateFinishedTrialError.
        self._thread.join(self._interval + JOIN_GRACE)


@dataclass
class Watch:
    """What one worker has seen of the others' heartbeats: trial number -> (last value, when first seen)."""

    seen: dict[int, tuple[Any, float]] = field(default_factory=dict)

    def silent_for(self, trial: Any, now: float) -> float:
        """Seconds (this worker's clock) since the trial's heartbeat last changed, as far as seen."""
        value = trial.user_attrs.get(HEARTBEAT_ATTR)
        last = self.seen.get(trial.number)
        if last is None or last[0] != value:
            self.seen[trial.number] = (value, now)
            return 0.0
        return now - last[1]


def fail_stale(study: Any, trial: Any, reason: str) -> bool:
    """Mark a RUNNING trial FAIL with its reason; False when it finished meanwhile (its worker came back,
    or another worker failed it first): then it is not ours to measure again (tfdoctor.tune.shared._stale:
    a trial its worker finished between the two writes keeps its result)."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    storage = study._storage  # optuna has no public call to update another process's trial
    try:
        storage.set_trial_user_attr(trial._trial_id, STALE_ATTR, reason)
        return bool(storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL))
    except UpdateFinishedTrialError:
        return False
