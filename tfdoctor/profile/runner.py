"""Run one workload in a fresh process, under a timeout, with a given environment.

This is the only place the micro-profile starts TensorFlow, and it never does so in tfdoctor's own
process: `workload_main.py` runs as a script in a child interpreter (the current one, or --python).
The child gets KERAS_HOME pointed at a temporary copy of the user's Keras directory, so importing
TensorFlow cannot create ~/.keras/keras.json (a copy, so the user's keras.json settings still apply).

Public API (the tune helper uses it as its built-in objective):

    run_workload(workload, env=None, steps=20, warmup=3, timeout=120.0, *, device="auto",
                 logdir=None, snippet=None, script=None, script_args=(), python=None,
                 batch=None) -> RunResult
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tfdoctor.facts.bounded import read_tail, track
from tfdoctor.profile.stats import quantile

WORKLOADS = ("cnn", "matmul", "pyfunc", "script")
WORKLOAD_SCRIPT = Path(__file__).with_name("workload_main.py")


class WorkloadError(Exception):
    """The workload process failed, timed out or wrote no result: one line saying which."""


@dataclass(frozen=True)
class RunResult:
    """What one workload process measured. Times in seconds; per-step lists in step order."""

    ok: bool
    step_seconds: tuple[float, ...] = ()
    input_seconds: tuple[float, ...] = ()  # wait for the next batch, inside each step
    import_seconds: float | None = None  # `import tensorflow` in the child
    wall_seconds: float = 0.0  # the whole child process, start to exit, seen from the parent
    cpu_steal: float | None = None  # share of CPU time stolen by the hypervisor during the run
    devices: tuple[dict[str, str], ...] = ()
    tf_version: str | None = None
    policy: str | None = None  # Keras global dtype policy in force
    jit_compile: bool = False
    logdir: str | None = None
    error: str | None = None
    stderr_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median_step(self) -> float | None:
        return statistics.median(self.step_seconds) if self.step_seconds else None

    @property
    def low_step(self) -> float | None:
        """The 10th percentile of the step times: what comparisons use. Interference from other
        processes on the machine only ever adds time to a step, so a low quantile estimates what
        the environment itself allows, while still summarizing many steps (unlike the minimum)."""
        return quantile(self.step_seconds, 0.1)

    @property
    def input_share(self) -> float | None:
        """Share of the timed steps spent waiting for input."""
        total = sum(self.step_seconds)
        if not self.input_seconds or total <= 0:
            return None
        return min(1.0, sum(self.input_seconds) / total)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "step_seconds": list(self.step_seconds), "input_seconds": list(self.input_seconds),
            "import_seconds": self.import_seconds, "wall_seconds": self.wall_seconds, "cpu_steal": self.cpu_steal,
            "devices": [dict(d) for d in self.devices], "tf_version": self.tf_version, "policy": self.policy,
            "median_step_seconds": self.median_step, "low_step_seconds": self.low_step,
            "input_share": self.input_share, "jit_compile": self.jit_compile, "logdir": self.logdir,
            "error": self.error,
        }


class CpuTimes(NamedTuple):
    """The aggregate `cpu` line of /proc/stat, in jiffies since boot: what the run measurements compare."""

    steal: int  # taken by the hypervisor for other guests
    busy: int  # every state but idle and iowait (steal included: the CPU was not ours to use)
    total: int


def read_cpu_times(stat_path: str = "/proc/stat") -> CpuTimes | None:
    """The aggregate `cpu` line, read once for every figure taken from it; None off Linux."""
    try:
        with open(stat_path, encoding="ascii") as handle:
            first = handle.readline(4096).split()  # the cpu line is ~100 bytes; never more than a bound
    except (OSError, ValueError):  # ValueError: not ASCII
        return None
    return parse_cpu_line(first)


def parse_cpu_line(fields: Sequence[str]) -> CpuTimes | None:
    if not fields or fields[0] != "cpu":
        return None
    try:
        values = [int(v) for v in fields[1:]]
    except ValueError:
        return None
    if len(values) < 4:
        return None  # not even user nice system idle: not a line this kernel writes
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already counted
    # in user/nice, so the total stops at steal.
    counted = values[:8]
    total = sum(counted)
    steal = counted[7] if len(counted) > 7 else 0
    waiting = counted[3] + (counted[4] if len(counted) > 4 else 0)
    return CpuTimes(steal, total - waiting, total)


def foreign_cpu_share(before: CpuTimes | None, after: CpuTimes | None, own_cpu_seconds: float) -> float | None:
    """Share of the machine's CPU time used by processes other than ours (our children's CPU time
    subtracted), over an interval: how much the neighbours competed with a measurement."""
    if before is None or after is None or after.total <= before.total:
        return None
    ticks_per_second = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    foreign = (after.busy - before.busy) - own_cpu_seconds * ticks_per_second
    return min(1.0, max(0.0, foreign / (after.total - before.total)))


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    if before is None or after is None:
        return None
    total = after.total - before.total
    if total <= 0:
        return None
    return max(0.0, (after.steal - before.steal) / total)


def private_keras_home(environ: Mapping[str, str], scratch: Path) -> Path:
    """A temporary KERAS_HOME holding a copy of the keras.json the user's runs would read."""
    target = scratch / "keras"
    target.mkdir(parents=True, exist_ok=True)
    source_home = environ.get("KERAS_HOME") or (
        os.path.join(environ["HOME"], ".keras") if environ.get("HOME") else None)
    if source_home:
        config = Path(source_home) / "keras.json"
        if config.is_file():
            with contextlib.suppress(OSError):  # unreadable: the child runs with Keras defaults
                shutil.copyfile(config, target / "keras.json")
    return target


def child_environment(environ: Mapping[str, str], scratch: Path) -> dict[str, str]:
    env = dict(environ)
    env["KERAS_HOME"] = str(private_keras_home(environ, scratch))
    # Python's own caches must not land in the user's home either.
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    from tfdoctor.facts.bounded import end_group

    end_group(process)  # the whole group: SIGTERM, SIGKILL after a short grace, the leader reaped


def run_workload(
    workload: str,
    env: Mapping[str, str] | None = None,
    steps: int = 20,
    warmup: int = 3,
    timeout: float = 120.0,
    *,
    device: str = "auto",
    logdir: str | None = None,
    snippet: str | None = None,
    script: str | None = None,
    script_args: Sequence[str] = (),
    python: str | None = None,
    batch: int | None = None,
    step_budget: float | None = None,
) -> RunResult:
    """Run `workload` once in a fresh process; never raises for a failing workload (ok=False, error).

    env: the complete environment of the child (None: this process's). snippet: Python run in the
    child right after `import tensorflow as tf` (an in-process fix). logdir: profile into this
    directory (TensorBoard layout); None: no profiler, timing only (what comparisons use).
    step_budget: stop the timed steps after this many seconds once 10 steps are done.
    """
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r} (expected one of {', '.join(WORKLOADS)})")
    if workload == "script" and not script:
        raise ValueError("the script workload needs script=PATH")
    environ = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="tfdoctor-profile-") as scratch_name:
        scratch = Path(scratch_name)
        spec = {
            "workload": workload, "steps": steps, "warmup": warmup, "device": device,
            "logdir": logdir, "snippet": snippet, "script": script, "script_args": list(script_args),
            "batch": batch, "step_budget": step_budget, "result": str(scratch / "result.json"),
        }
        (scratch / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        stderr_path = scratch / "stderr.txt"
        command = [python or sys.executable, str(WORKLOAD_SCRIPT), str(scratch / "spec.json")]
        ticks_before = read_cpu_times()
        started = time.perf_counter()
        with open(stderr_path, "wb") as stderr:
            try:
                process = track(subprocess.Popen(command, env=child_environment(environ, scratch),
                                                 stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                                 cwd=os.path.dirname(script) if script else scratch,
                                                 start_new_session=True))
            except OSError as exc:
                return RunResult(False, error=f"cannot start {command[0]}: {exc.strerror or exc}")
            try:
                process.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill_group(process)
                timed_out = True
            except BaseException:
                _kill_group(process)
                raise
        wall = time.perf_counter() - started
        steal = steal_share(ticks_before, read_cpu_times())
        tail = _tail(stderr_path)
        try:
            data = _read_result(scratch)
        except (OSError, ValueError):
            data = None
    if timed_out:
        phase = f" (in {data['phase']})" if data and data.get("phase") else ""
        return RunResult(False, wall_seconds=wall, cpu_steal=steal, logdir=logdir, stderr_tail=tail,
                         error=f"timed out: the {workload} workload did not finish within {timeout:g} s{phase}")
    if data is None:
        return RunResult(False, wall_seconds=wall, cpu_steal=steal, logdir=logdir, stderr_tail=tail,
                         error=f"the workload process exited with {process.returncode} and wrote no result"
                               f"{': ' + _last_line(tail) if tail else ''}")
    return RunResult(
        ok=bool(data.get("ok")),
        step_seconds=tuple(float(v) for v in data.get("step_seconds") or ()),
        input_seconds=tuple(float(v) for v in data.get("input_seconds") or ()),
        import_seconds=data.get("import_seconds"),
        wall_seconds=wall,
        cpu_steal=steal,
        devices=tuple(data.get("devices") or ()),
        tf_version=data.get("tf_version"),
        policy=data.get("policy"),
        jit_compile=bool(data.get("jit_compile")),
        logdir=logdir,
        error=data.get("error"),
        stderr_tail=tail,
        extra={k: data[k] for k in ("profiler_stop_seconds", "intra_op_threads", "total_seconds", "script_steps")
               if k in data},
    )


def _read_result(scratch: Path) -> Any:
    """The workload's result.json (kilobytes): bounded like every read; OSError or ValueError otherwise."""
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        return json.loads(read_input_file(scratch / "result.json", RESULT_LIMIT, "workload result").decode("utf-8"))
    except InputFileError as exc:
        raise OSError(str(exc)) from None


RESULT_LIMIT = 16 * 1024 * 1024


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as handle:
            data = read_tail(handle, limit)  # never the whole of a long stderr
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


PROTOCOL = "TFDOCTOR "
REPLY_LIMIT = 4 * 1024 * 1024  # a chunk's reply is kilobytes; anything longer is not the protocol


@dataclass(frozen=True)
class Chunk:
    """One timed chunk of a live session: per step, its wall time and its process CPU time."""

    wall: tuple[float, ...]
    cpu: tuple[float, ...]


class WorkloadSession:
    """A live workload process for comparisons: started (import, build, warmup) in the background,
    then asked for timed chunks of steps one at a time, so two sessions can be interleaved A B B A.

    Every wait takes a timeout (the caller passes what is left of its budget): a child that hangs
    in its import or in a step costs at most that. Use as a context manager; the process and its
    scratch directory go at exit.
    """

    def __init__(self, workload: str, env: Mapping[str, str], *, warmup: int = 3, device: str = "auto",
                 snippet: str | None = None, python: str | None = None, batch: int | None = None) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="tfdoctor-compare-")
        scratch = Path(self._scratch.name)
        spec = {"workload": workload, "warmup": warmup, "device": device, "snippet": snippet, "batch": batch,
                "serve": True, "result": str(scratch / "result.json")}
        (scratch / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        self._stderr = open(scratch / "stderr.txt", "wb")  # noqa: SIM115 - lives as long as the process
        self.step_seconds: list[float] = []
        self.input_seconds: list[float] = []
        self.cpu_seconds: list[float] = []
        self.chunks: list[Chunk] = []
        self.ready: dict[str, Any] | None = None
        self.error: str | None = None
        self.timed_out = False  # it did not answer within the timeout it was given (still running)
        self._pending = b""
        self._ticks = read_cpu_times()
        self.process: subprocess.Popen[bytes] | None = track(subprocess.Popen(
            [python or sys.executable, str(WORKLOAD_SCRIPT), str(scratch / "spec.json")],
            env=child_environment(dict(env), scratch), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, cwd=scratch, start_new_session=True))

    def __enter__(self) -> WorkloadSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cpu_steal(self) -> float | None:
        return steal_share(self._ticks, read_cpu_times())

    @property
    def devices(self) -> list[str]:
        """The device types the child saw (from its ready message): ["CPU"], ["CPU", "GPU"] …"""
        return sorted({str(d.get("type")) for d in (self.ready or {}).get("devices") or () if isinstance(d, dict)})

    def _reply(self, deadline: float, waiting_for: str) -> dict[str, Any] | None:
        """The next protocol line, read in pieces as they come (never a blocking readline: a child that
        stops in the middle of a line must not hold the parent past `deadline`)."""
        import selectors

        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                line, newline, rest = self._pending.partition(b"\n")
                if newline:
                    self._pending = rest
                    text = line.decode("utf-8", "replace")
                    if not text.startswith(PROTOCOL):
                        continue  # whatever else the child printed on stdout
                    try:
                        return dict(json.loads(text[len(PROTOCOL):]))
                    except ValueError:
                        self.error = f"the workload process sent a malformed reply: {text[:80]!r}"
                        return None
                if len(self._pending) > REPLY_LIMIT:
                    self.error = "the workload process sent an overlong line"
                    return None
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(timeout=left):
                    break
                data = os.read(fd, 65536)
                if not data:
                    self.error = self._failure()
                    return None
                self._pending += data
        self.error = f"the workload process did not {waiting_for} in time"
        self.timed_out = True
        return None

    def _failure(self) -> str:
        scratch = Path(self._scratch.name)
        try:
            data = _read_result(scratch)
            if data.get("error"):
                return str(data["error"])
        except (OSError, ValueError):
            pass
        tail = _last_line(_tail(scratch / "stderr.txt"))
        return f"the workload process ended unexpectedly{': ' + tail if tail else ''}"

    def wait_ready(self, timeout: float) -> bool:
        if self.ready is None and self.error is None:
            self.ready = self._reply(time.monotonic() + timeout, "start (import TensorFlow, build, warm up)")
        return self.ready is not None

    def run_steps(self, count: int, timeout: float, max_seconds: float = 0.0) -> bool:
        """Run `count` timed steps now (fewer, but at least two, once `max_seconds` have passed);
        False (and `error`) when the process failed or did not answer within `timeout`."""
        if not self.wait_ready(timeout) or self.process is None or self.process.stdin is None:
            return False
        try:
            self.process.stdin.write(f"{count} {max_seconds}\n".encode())
            self.process.stdin.flush()
        except OSError:
            self.error = self._failure()
            return False
        reply = self._reply(time.monotonic() + timeout, "finish its steps")
        if reply is None:
            return False
        wall = tuple(float(v) for v in reply.get("step_seconds", ()))
        cpu = tuple(float(v) for v in reply.get("cpu_seconds", ()))
        self.step_seconds.extend(wall)
        self.input_seconds.extend(float(v) for v in reply.get("input_seconds", ()))
        self.cpu_seconds.extend(cpu)
        if wall:
            self.chunks.append(Chunk(wall, cpu))
        return True

    def close(self, grace: float = 2.0) -> None:
        """End the process: EOF on its stdin, then, after `grace` seconds (0: at once), its process group
        is killed."""
        if self.process is not None:
            if self.process.stdin is not None:
                with contextlib.suppress(OSError):
                    self.process.stdin.close()
            try:
                if grace <= 0:
                    raise subprocess.TimeoutExpired(self.process.args, 0)
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                _kill_group(self.process)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None
        self._stderr.close()
        self._scratch.cleanup()
