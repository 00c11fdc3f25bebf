"""Real terminals and locales for the output tests: the command on a pseudo-terminal of a given width, a
legacy locale (ISO-8859-1) made with localedef, and what a terminal would obey in a stream of text.

The locale is compiled into a folder of the test's own (LOCPATH), so no root is needed; when localedef or
its sources are missing, the `locales` package is installed from Debian's packages (as local_slurm does for
Slurm) where apt-get and root are available, else the test is skipped with the reason.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# What rich writes on a terminal and a terminal obeys harmlessly: colours and styles (SGR).
SGR = re.compile(r"\x1b\[[0-9;]*m")
# Any escape sequence, C1 control or other C0 control a terminal would act on (CR and LF aside: a pty
# turns each LF into CRLF).
OBEYED = re.compile(r"\x1b[\[\]PX^_][^\x07\x1b]{0,200}(?:\x07|\x1b\\|[@-~])?|\x1b."
                    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|[\u202a-\u202e\u2066-\u2069]")


def without_styles(text: str) -> str:
    return SGR.sub("", text)


def obeyed(text: str) -> list[str]:
    """The control sequences in `text` a terminal would act on, colours and styles aside."""
    return OBEYED.findall(without_styles(text).replace("\r\n", "\n"))


def long_lines(text: str, width: int) -> list[str]:
    return [line for line in without_styles(text).replace("\r\n", "\n").split("\n") if len(line) > width]


def run_in_pty(args: list[str], columns: int = 80, env: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: float = 120) -> tuple[int, str]:
    """`python -m tfdoctor ARGS` with stdin, stdout and stderr on a pseudo-terminal `columns` wide (COLUMNS
    and LINES unset, as in an interactive shell that does not export them); (exit code, what it showed).
    The process is ended (its group killed) if it outlives `timeout`."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    full_env.update({"TERM": "xterm-256color", **(env or {})})
    process = subprocess.Popen([sys.executable, "-m", "tfdoctor", *args], stdin=slave, stdout=slave, stderr=slave,
                               cwd=cwd or REPO, env=full_env, start_new_session=True, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer of the pty has closed it
                    break
                if not data:
                    break
                chunks.append(data)
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(1.0, end - time.monotonic()))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


class LocaleUnavailable(Exception):
    pass


def _install_locales() -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise LocaleUnavailable("localedef or its sources are missing, and apt-get as root is not available "
                                "to install Debian's locales package")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", "locales"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, check=False)
        if done.returncode:
            raise LocaleUnavailable(f"{' '.join(command)} failed: {done.stderr.strip()[-300:]}")


def iso_8859_1_locale(folder: Path) -> dict[str, str]:
    """The environment of a real ISO-8859-1 locale (en_US.ISO-8859-1, compiled into `folder`)."""
    sources = Path("/usr/share/i18n/locales/en_US")
    if not shutil.which("localedef") or not sources.exists():
        _install_locales()
    name = "en_US.ISO-8859-1"
    done = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(folder / name)],
                          capture_output=True, text=True, timeout=120, check=False)
    if not (folder / name).is_dir():
        raise LocaleUnavailable(f"localedef failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    env = {"LOCPATH": str(folder), "LC_ALL": name, "LANG": name}
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdout.encoding)"], env={**os.environ, **env},
                           capture_output=True, text=True, timeout=60, check=False)
    if probe.stdout.strip().lower().replace("-", "").replace("_", "") != "iso88591":
        raise LocaleUnavailable(f"Python did not take the locale: stdout encoding {probe.stdout.strip()!r}")
    return env
