"""The micro-profile's workload runner (tfdoctor.profile.runner.run_workload) as a tune objective.

`tfdoctor tune --workload cnn` measures one of the micro-profile's workloads instead of the built-in
micro-benchmark: the same fresh process per trial, plus the micro-profile's care for the user's home
(a private KERAS_HOME). Throughput is steps per second from the median timed step.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfdoctor.tune.objective import Measurement, trial_environment


class ProfileUnavailable(Exception):
    pass


def _runner() -> Any:
    try:
        from tfdoctor.profile import runner  # type: ignore[import-not-found]
    except ImportError:
        raise ProfileUnavailable("--workload needs the micro-profile (tfdoctor.profile), which this "
                                 "tfdoctor does not have") from None
    return runner


@dataclass
class ProfileObjective:
    """The objective `tune` measures: a workload's step time over some steps."""

    workload: str
    steps: int = 30
    timeout: float = 120.0
    base_env: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        runner = _runner()
        if self.workload not in runner.WORKLOADS or self.workload == "script":
            choices = ", ".join(w for w in runner.WORKLOADS if w != "script")
            raise ProfileUnavailable(f"--workload {self.workload}: expected one of {choices}")

    def describe(self) -> dict[str, object]:
        return {"workload": self.workload, "steps": self.steps, "timeout": self.timeout}

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> Measurement:
        if launcher:
            return Measurement("failed", None, 0.0, "the micro-profile runner cannot run under a launcher")
        env = trial_environment(self.base_env if self.base_env is not None else os.environ, env_changes)
        result = _runner().run_workload(self.workload, env=env, steps=self.steps, timeout=self.timeout)
        seconds = float(getattr(result, "wall_seconds", 0.0) or 0.0)
        if not result.ok or not result.step_seconds:
            error = result.error or "no timed step"
            status = "timeout" if "timed out" in error or "timeout" in error else "failed"
            return Measurement(status, None, seconds, error)
        median = statistics.median(result.step_seconds)
        if median <= 0:
            return Measurement("failed", None, seconds, "a step took no time")
        return Measurement("ok", 1.0 / median, seconds)
