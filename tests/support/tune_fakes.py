"""Fake jobs for the tuner's tests: a metric with controlled, seeded noise and a controlled dependence on
one environment variable — so a test of the verdict cannot be flipped by the machine's load (the noise
is in the printed number, not in real timings).

In-process: `FakeJob(depends=..., seed=...)` is a tune objective. As a command (one process per trial):

    FAKE_JOB_STATE=counter-file FAKE_JOB_SEED=3 FAKE_JOB_DEPENDS=TF_NUM_INTRAOP_THREADS \
        python tests/support/tune_fakes.py

prints `throughput: N images/sec`; the counter file numbers the runs, so run k of a seed always draws the
same noise. FAKE_JOB_BARRIER=DIR:N makes the first run of each counter file wait until N of them have
started (two workers of one study both measure, however the machine schedules them); FAKE_JOB_HANG_AT=K
makes run K write COUNTER-FILE.hung and hang (a worker to kill mid-tune); FAKE_JOB_SECONDS=S makes every run
last S seconds (a command whose run time is fixed, benchmarks/tune_shared_confirm.py).
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

NOISE = 0.02  # log-normal, per run, like a quiet real machine
METRIC = r"throughput: ([0-9.]+)"


def true_value(env: Mapping[str, str | None], depends: str | None, best: int = 4,
               current_best: str | None = None) -> float:
    """100 × the variable's value (1 when unset) up to `best`, then flat: 4× between unset and best. With
    `current_best`, the value the environment has now (e.g. "3") is the best of all (30 % above `best`)."""
    if not depends:
        return 100.0
    raw = env.get(depends)
    if current_best is not None and raw == current_best:
        return 100.0 * best * 1.3
    try:
        value = int(raw) if raw else 1
    except ValueError:
        value = 1
    return 100.0 * max(1, min(value, best))


def noisy(value: float, rng: random.Random, noise: float = NOISE) -> float:
    return value * math.exp(rng.gauss(0.0, noise))


class FakeJob:
    """A tune objective: `measure` applies the trial's changes to `base_env` and draws seeded noise."""

    def __init__(self, depends: str | None = None, seed: int = 0, noise: float = NOISE,
                 base_env: Mapping[str, str] | None = None, current_best: str | None = None) -> None:
        self.depends, self.noise, self.current_best = depends, noise, current_best
        self.rng = random.Random(seed)
        self.base_env = dict(base_env or {})
        self.runs = 0

    def describe(self) -> dict[str, object]:
        return {"fake": self.depends or "noise"}

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> object:
        from tfdoctor.tune.objective import Measurement, trial_environment

        self.runs += 1
        env = trial_environment(self.base_env, env_changes)
        return Measurement("ok", noisy(true_value(env, self.depends, current_best=self.current_best), self.rng,
                                       self.noise), 0.0)


def main() -> int:
    state = Path(os.environ["FAKE_JOB_STATE"])
    count = int(state.read_text() or "0") if state.exists() else 0
    state.write_text(str(count + 1))
    if count == 0 and os.environ.get("FAKE_JOB_BARRIER"):
        folder, _, wanted = os.environ["FAKE_JOB_BARRIER"].rpartition(":")
        Path(folder, state.name).touch()
        deadline = time.monotonic() + 120
        while len(list(Path(folder).iterdir())) < int(wanted) and time.monotonic() < deadline:
            time.sleep(0.05)
    if os.environ.get("FAKE_JOB_HANG_AT") == str(count):
        # Hangs as long as the tune worker that started it lives (at most 600 s), and ends when the test
        # kills that worker: the trial runs in a session of its own, which the test's killpg of the
        # worker's group does not reach, and a plain sleep(600) outlived every run by ten minutes.
        parent = os.getppid()
        Path(f"{state}.hung").write_text(str(os.getpid()))
        deadline = time.monotonic() + 600
        while os.getppid() == parent and time.monotonic() < deadline:
            time.sleep(0.2)
        return 1
    if os.environ.get("FAKE_JOB_SECONDS"):
        time.sleep(float(os.environ["FAKE_JOB_SECONDS"]))
    rng = random.Random(int(os.environ.get("FAKE_JOB_SEED", "0")) * 100_003 + count)
    depends = os.environ.get("FAKE_JOB_DEPENDS") or None
    value = noisy(true_value(os.environ, depends), rng, float(os.environ.get("FAKE_JOB_NOISE", NOISE)))
    print(f"throughput: {value:.3f} images/sec")
    return 0


if __name__ == "__main__":
    sys.exit(main())
