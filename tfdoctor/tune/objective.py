"""What a trial measures: a command run in a fresh process with the trial's environment.

A fresh process per trial is not a convenience: TensorFlow sizes its thread pools once, when it starts,
so settings can only be compared across processes. The metric is read from the command's output with a
regular expression whose first group is the number. A command that fails, times out or prints no
metric gives a failed trial, never a failed tune.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol

from tfdoctor.facts.bounded import read_tail, track

# What the built-in micro-benchmark prints; also the default --metric for it.
BUILTIN_METRIC = r"tfdoctor-tune throughput: ([0-9.eE+-]+)"
OUTPUT_TAIL = 4 * 1024 * 1024  # bytes of a trial's stdout and of its stderr read back (the end of each)


@dataclass(frozen=True)
class Measurement:
    """One measurement of the objective: its status, value, duration and error."""

    status: str  # "ok", "failed" or "timeout"
    value: float | None
    seconds: float
    error: str = ""


class Objective(Protocol):
    """Anything that measures one configuration. `describe()` names it in the results file."""

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> Measurement: ...

    def describe(self) -> dict[str, object]: ...


def trial_environment(base: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    env = dict(base)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _tail(text: str, limit: int = 200) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[-limit:]


@dataclass
class CommandObjective:
    """Run `argv` once per trial; the metric is the last match of `metric` in stdout (else stderr)."""

    argv: tuple[str, ...]
    metric: str
    timeout: float
    base_env: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        self._pattern = re.compile(self.metric)
        if self._pattern.groups < 1:
            raise ValueError(f"--metric {self.metric!r} has no group: put the number in ( )")

    def describe(self) -> dict[str, object]:
        return {"command": list(self.argv), "metric": self.metric, "timeout": self.timeout}

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> Measurement:
        # A training run may log gigabytes: its output goes to disk and only its tail is read (the metric is
        # the last match, an error the last lines), so a trial costs OUTPUT_TAIL bytes of memory at most.
        with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
            status = self._run(env_changes, launcher, out_file, err_file)
            if isinstance(status, Measurement):
                return status
            returncode, seconds = status
            out = read_tail(out_file, OUTPUT_TAIL).decode("utf-8", errors="replace")
            err = read_tail(err_file, OUTPUT_TAIL).decode("utf-8", errors="replace")
        return self._result(returncode, seconds, out, err)

    def _run(self, env_changes: Mapping[str, str | None], launcher: Sequence[str], out_file: IO[bytes],
             err_file: IO[bytes]) -> Measurement | tuple[int, float]:
        env = trial_environment(self.base_env if self.base_env is not None else os.environ, env_changes)
        start = time.monotonic()
        try:
            # A session of its own, so a timeout kills the command's children too.
            process = track(subprocess.Popen([*launcher, *self.argv], env=env, stdin=subprocess.DEVNULL,
                                             stdout=out_file, stderr=err_file, start_new_session=True))
        except OSError as exc:
            return Measurement("failed", None, 0.0, f"cannot run {self.argv[0]}: {exc.strerror or exc}")
        try:
            process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.wait()
            return Measurement("timeout", None, time.monotonic() - start, f"no result within {self.timeout:g} s")
        except BaseException:
            # Ctrl-C reaches tfdoctor, not the trial (it has a session of its own): take it down too.
            _kill_group(process)
            raise
        _kill_group(process)  # what the command left running in its group ends with it
        return process.returncode, time.monotonic() - start

    def _result(self, returncode: int, seconds: float, out: str, err: str) -> Measurement:
        if returncode != 0:
            return Measurement("failed", None, seconds, f"exit {returncode}: {_tail(err or out)}")
        matches = self._pattern.findall(out) or self._pattern.findall(err)
        if not matches:
            return Measurement("failed", None, seconds, f"no line matched --metric {self.metric!r}")
        last = matches[-1]
        text = last[0] if isinstance(last, tuple) else last
        try:
            value = float(text)
        except ValueError:
            return Measurement("failed", None, seconds, f"--metric matched {text!r}, not a number")
        return Measurement("ok", value, seconds)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    from tfdoctor.facts.bounded import end_group

    end_group(process)  # the whole group: SIGTERM, SIGKILL after a short grace, the leader reaped


def builtin_benchmark(seconds: float = 3.0, timeout: float = 120.0) -> CommandObjective:
    """The built-in micro-benchmark (tfdoctor.tune.microbench) as a command objective."""
    argv = (sys.executable, "-m", "tfdoctor.tune.microbench", "--seconds", f"{seconds:g}")
    return CommandObjective(argv, BUILTIN_METRIC, timeout)
