"""The results file: one JSON line per finished trial, appended and fsynced as each trial completes.

The first line is a header with the space, the objective and the search settings, so `--resume FILE`
can continue the very same tune. A tune killed mid-write leaves at most one torn last line, which
loading drops (and truncates away before appending), so nothing finished is ever lost or repeated.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "tfdoctor-tune-results/1"
RESULTS_FILE_LIMIT = 64 * 1024 * 1024  # ~100,000 trials


class ResultsError(Exception):
    pass


def default_results_name(when: time.struct_time, worker: tuple[str, int] | None = None) -> str:
    """tfdoctor-tune-TIME.jsonl; a worker of a shared tune adds its host and process id (one file each in a
    shared folder). The host name is data, not part of the time pattern (a % in it is kept as it is), and
    only letters, digits, '.', '_' and '-' of it are kept: it cannot name another folder."""
    name = time.strftime("tfdoctor-tune-%Y%m%d-%H%M%S", when)
    if worker is not None:
        host = re.sub(r"[^A-Za-z0-9._-]", "_", worker[0])[:64].lstrip(".") or "host"
        name += f"-{host}-{worker[1]}"
    return name + ".jsonl"


@dataclass(frozen=True)
class TrialRecord:
    """One tune trial as written to the results file."""

    number: int
    phase: str  # "current"/"rule" (the seeds), "screen", "search", "confirm" (re-measuring a candidate) or
    # "verify" (the change the env script would make, paired with the current settings)
    params: dict[str, Any]
    status: str  # "ok", "failed", "timeout"
    value: float | None
    seconds: float
    env: dict[str, str | None] = field(default_factory=dict)  # what the trial changed (None: unset)
    error: str = ""
    role: str = ""  # for "confirm": "leader", "current" or "rule"; for "verify": "current" or "change"
    round: int | None = None  # "verify" only: the round of the paired comparison (tfdoctor.tune.verify)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.value is not None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["round"] is None:
            del data["round"]  # trial lines of every phase but "verify" keep their earlier shape
        return {"type": "trial", **data}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrialRecord:
        """ValueError for a record a tune never writes: a NaN or infinite value, an env name that is not a
        variable name (the winner's env.sh is written from these)."""
        from tfdoctor.fixes.quoting import env_name

        value = None if data.get("value") is None else float(data["value"])
        if value is not None and not math.isfinite(value):
            raise ValueError(f"the value {value} is not a finite number")
        env = dict(data.get("env") or {})
        for name, setting in env.items():
            env_name(name, "a trial's environment")
            if setting is not None and not isinstance(setting, str):
                raise ValueError(f"the value of {name} is not a string")
        return cls(
            number=int(data["number"]), phase=str(data["phase"]), params=dict(data["params"]),
            status=str(data["status"]), value=value,
            seconds=float(data.get("seconds", 0.0)), env=env,
            error=str(data.get("error", "")), role=str(data.get("role", "")),
            round=None if data.get("round") is None else int(data["round"]),
        )


class ResultsLog:
    """Append-only; every append is on disk (flush + fsync) before the next trial starts.

    One writer at a time: `create` and `open` take an exclusive flock on the file (kept until `close` or
    the process ends) and name the holder (host, pid) in a lock note beside it (`FILE.lock`), so a second
    `--resume` of the same file is refused with the holder named instead of recording the same trials
    twice. An append that fails (a full disk) is cut back off the file, so it stays resumable."""

    def __init__(self, path: str | os.PathLike[str], fd: int | None = None) -> None:
        self.path = Path(path)
        self._fd = fd

    @classmethod
    def create(cls, path: str | os.PathLike[str], header: Mapping[str, Any]) -> ResultsLog:
        line = (json.dumps({"type": "header", "format": FORMAT, **header}, sort_keys=True) + "\n").encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            from tfdoctor.fixes.quoting import sh_word

            raise ResultsError(f"{path} exists: continue it with --resume {sh_word(os.fspath(path))}, or choose "
                               "another --results file") from None
        except OSError as exc:
            raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None
        log = cls(path, fd)
        try:
            log._lock()
            _write_all(fd, line)
            os.fsync(fd)
        except BaseException as exc:
            # Nothing half-created: a full disk (or a signal) leaves no empty or headless results file.
            log.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            if isinstance(exc, OSError):
                raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None
            raise
        return log

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ResultsLog:
        """The existing results file `path`, locked for this process (ResultsError naming the holder if
        another tfdoctor has it); open it before loading it, so what is loaded is what is continued."""
        from tfdoctor.facts.bounded import InputFileError, open_regular

        try:  # a FIFO, a device, a folder: named as such, as every file a user names
            os.close(open_regular(path, "results file"))
        except InputFileError as exc:
            raise ResultsError(str(exc)) from None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise ResultsError(f"cannot open {path}: {exc.strerror or exc}") from None
        log = cls(path, fd)
        try:
            log._lock()
        except BaseException:
            log.close()
            raise
        return log

    @property
    def _note(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def _lock(self) -> None:
        import fcntl

        assert self._fd is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ResultsError(f"{self.path} is being written by {_holder(self._note)}: one tfdoctor at a time "
                               "continues a results file (wait for it to finish, or end it)") from None
        except OSError:
            return  # a file system without locks: as before, the user keeps to one writer
        with contextlib.suppress(OSError):  # the note only names the holder; the flock is the lock
            _replace_note(self._note, _note_text())

    def close(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if self._note.read_bytes() == _note_text().encode():  # ours: not a later holder's
                os.unlink(self._note)
        os.close(self._fd)  # releases the flock
        self._fd = None

    def __del__(self) -> None:  # a log dropped without close() (a usage error after open) frees its lock
        with contextlib.suppress(Exception):
            self.close()

    def append(self, record: TrialRecord) -> None:
        self.append_line(record.to_json())

    def append_summary(self, summary: Mapping[str, Any]) -> None:
        """The closing line of a finished tune (type "summary"): winner, effects, what mattered. Loading
        skips it; a resumed tune appends its trials and a new summary after it."""
        self.append_line({"type": "summary", **summary})

    def append_interrupted(self, signal_name: str) -> None:
        """The line a tune ended by a signal leaves (type "interrupted"): loading skips it, so `--resume`
        continues after the last finished trial; `report` and a reader see why the file stops there."""
        self.append_line({"type": "interrupted", "signal": signal_name, "time": round(time.time(), 3)})

    def append_line(self, data: Mapping[str, Any]) -> None:
        """ResultsError (not an internal error) when the line cannot be written: a full disk, a quota. A
        line written in part is cut off again, so the file keeps only whole lines."""
        from tfdoctor.facts.redact import redact_text

        if isinstance(data.get("error"), str):  # a trial's error quotes its stderr: it goes through the redactor
            data = {**data, "error": redact_text(data["error"])}
        line = (json.dumps(data, sort_keys=True) + "\n").encode()
        if self._fd is None:  # a log made by hand (tests, tools): opened and locked on its first append
            opened = ResultsLog.open(self.path)
            self._fd, opened._fd = opened._fd, None
        fd = self._fd
        try:
            size = os.fstat(fd).st_size
        except OSError as exc:
            raise ResultsError(f"cannot append to {self.path}: {exc.strerror or exc}") from None
        try:
            _write_all(fd, line)
            os.fsync(fd)
        except OSError as exc:
            from tfdoctor.fixes.quoting import sh_word

            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise ResultsError(f"cannot append to {self.path}: {exc.strerror or exc}; the trials before "
                               "this one are kept: free some space and continue with "
                               f"--resume {sh_word(str(self.path))}") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _note_text() -> str:
    import socket

    return f"{socket.gethostname()} {os.getpid()}\n"


def _holder(note: Path) -> str:
    """'HOST pid PID' from the lock note, or a plain description when it cannot be read."""
    from tfdoctor.facts.bounded import read_probe_file

    try:
        words = read_probe_file(note, 4096).data.decode("utf-8", "replace").split()
    except OSError:
        words = []
    if len(words) == 2 and words[1].isdigit():
        host = re.sub(r"[^A-Za-z0-9._-]", "_", words[0])[:64]
        return f"{host} pid {words[1]}"
    return "another tfdoctor process"


def _replace_note(note: Path, text: str) -> None:
    tmp = note.with_name(f".{note.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        _write_all(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, note)


def check_owner(path: str | os.PathLike[str],
                why: str = "--resume runs the command recorded in it, so it only resumes results files of your own",
                ) -> None:
    """`--resume` runs the command recorded in the file: only a file of this user's own may say which.
    ResultsError for a file owned by anyone else (root included: a results file is never a system file);
    `why` says what the file would have made this process do."""
    if not hasattr(os, "getuid"):
        return
    try:
        owner = os.stat(path).st_uid
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    if owner != os.getuid():
        raise ResultsError(f"{path} is owned by another user (uid {owner}): {why}")


def recorded_budget(header: Mapping[str, Any]) -> int | None:
    """The trials a results file's header allows: None for a tune without a budget (a --time tune);
    ResultsError for anything but a whole number of at least one (a hand-edited or damaged header)."""
    budget = header.get("budget")
    if budget is None:
        return None
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ResultsError("the header's budget is not a whole number of trials (at least 1)")
    return budget


def recorded_time_limit(header: Mapping[str, Any]) -> float | None:
    """The seconds a results file's header gave the tune (--time): None for a tune without one; ResultsError
    for anything but a finite number of at least 1 s, which --time itself accepts (a hand-edited header)."""
    return _recorded_seconds(header, "time_limit", 1.0)


def _recorded_seconds(table: Mapping[str, Any], key: str, least: float) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not least <= value < float("inf"):
        raise ResultsError(f"the header's {key} is not a number of seconds (at least {least:g})")
    return float(value)


SEED_MAX = 2**32 - 1  # the sampler's seed goes to numpy's RandomState, which takes 0 … 2**32 - 1 (as --seed)


def recorded_seed(header: Mapping[str, Any]) -> int | None:
    """The seed a results file's header gave the sampler: None for none recorded; ResultsError for anything
    but a whole number that --seed accepts (a hand-edited header), before a trial runs."""
    seed = header.get("seed")
    if seed is None:
        return None
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise ResultsError(f"the header's seed is not a whole number from 0 to {SEED_MAX}")
    return seed


def check_recorded_objective(objective: Mapping[str, Any]) -> None:
    """The header's objective holds what the options that wrote it accept: the command's words as strings,
    --trial-timeout (at least 1 s), --bench-seconds (at least 0.2), --workload a name. ResultsError otherwise
    (a hand-edited header), before a trial runs, not an internal error when the first one starts."""
    words = objective.get("command_args", ())
    if not isinstance(words, (list, tuple)) or not all(isinstance(word, str) for word in words):
        raise ResultsError("the header's command_args is not a list of strings (the command's words)")
    _recorded_seconds(objective, "timeout", 1.0)
    _recorded_seconds(objective, "bench_seconds", 0.2)
    if objective.get("workload") is not None and not isinstance(objective.get("workload"), str):
        raise ResultsError("the header's workload is not the name of a workload")


def load_results(path: str | os.PathLike[str], repair: bool = False) -> tuple[dict[str, Any], list[TrialRecord]]:
    """The header and the finished trials. With `repair`, a torn last line is cut off the file, and a whole
    last line without its newline is ended, so the next append starts on a line of its own."""
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    file = Path(path)
    try:
        raw = read_input_file(file, RESULTS_FILE_LIMIT, "results file")
    except InputFileError as exc:
        raise ResultsError(str(exc)) from None
    lines = raw.split(b"\n")
    header: dict[str, Any] | None = None
    records: list[TrialRecord] = []
    offset = 0
    torn = False
    for index, line in enumerate(lines):
        end = offset + len(line) + 1
        if not line.strip():
            offset = end
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser follows
            # Only the last line may be torn (a kill during the write); anything else is corruption. A file
            # whose header was never read is not a results file at all: cutting it would destroy it.
            if header is not None and index >= len(lines) - 2 and not raw[offset:].rstrip(b"\n").count(b"\n"):
                if repair:
                    with open(file, "r+b") as handle:
                        handle.truncate(offset)
                torn = True
                break
            if header is None:
                raise ResultsError(
                    f"{path} is not a tfdoctor tune results file (line {index + 1} is not JSON)") from None
            raise ResultsError(f"{path}: line {index + 1} is not JSON") from None
        if header is None:
            if not isinstance(data, dict) or data.get("type") != "header" or data.get("format") != FORMAT:
                raise ResultsError(f"{path} is not a tfdoctor tune results file")
            header = data
        elif isinstance(data, dict) and data.get("type") == "trial":
            try:
                records.append(TrialRecord.from_json(data))
            except (KeyError, TypeError, ValueError, OverflowError):
                raise ResultsError(f"{path}: line {index + 1} is not a trial record") from None
        offset = end
    if header is None:
        raise ResultsError(f"{path} is empty: not a tfdoctor tune results file")
    if repair and not torn and not raw.endswith(b"\n"):
        # The last record is whole but its newline never reached the disk (a node that died between the
        # two): end the line, or the next append would be glued onto it and the file refused next time.
        with open(file, "ab") as handle:
            handle.write(b"\n")
    return header, records


def load_summary(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last summary line of a finished tune (its verdict: winner, what mattered, each effect), or
    None for a tune that never finished. Read with the same bound as the trials."""
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        raw = read_input_file(Path(path), RESULTS_FILE_LIMIT, "results file")
    except InputFileError as exc:
        raise ResultsError(str(exc)) from None
    for line in reversed(raw.split(b"\n")):
        if b'"summary"' not in line:
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and data.get("type") == "summary":
            return data
    return None
