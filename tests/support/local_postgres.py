"""A throw-away PostgreSQL server on loopback, for the shared tune's database tests.

Uses the server binaries of Debian's postgresql package (/usr/lib/postgresql/N/bin), installing the package
with apt when they are missing (bounded by timeouts, as tests/support/local_slurm.py does for Slurm). The
server runs in the foreground as our own child process, its data folder, socket and log under one fresh
temporary folder, on a free TCP port of 127.0.0.1, trusting local connections: nothing of the machine's own
configuration (nor any cluster the package may have started) is used or changed. PostgreSQL refuses to run
as root, so under root the server runs as the `postgres` user the package creates (else `nobody`), in a
folder given to that user. `PostgresUnavailable` says why it could not start; the fixture turns it into a
skip with that reason. `restart()` stops the server (a fast shutdown: every connection is cut) and starts it
again on the same port and data: a database lost for a moment.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "postgresql"
APT_TIMEOUT = 300.0
START_TIMEOUT = 30.0
USER = "tfdoctor"  # the database's superuser (initdb -U)


class PostgresUnavailable(Exception):
    pass


def _run(argv: list[str], timeout: float, **options) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **options)
    except subprocess.TimeoutExpired:
        raise PostgresUnavailable(f"{' '.join(argv[:3])} did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise PostgresUnavailable(f"cannot run {argv[0]}: {exc}") from None


def server_bin() -> Path | None:
    """The newest installed server's bin folder (the one with postgres and initdb)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    return Path(found[-1]).parent if found else None


def install() -> Path:
    """The server's bin folder, apt-get installing the package first when there is none."""
    found = server_bin()
    if found is not None:
        return found
    if os.geteuid() != 0:
        raise PostgresUnavailable("the PostgreSQL server is not installed and installing it needs root")
    if not shutil.which("apt-get"):
        raise PostgresUnavailable("the PostgreSQL server is not installed and there is no apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    deadline = time.monotonic() + APT_TIMEOUT
    update = _run(["apt-get", "update", "-q"], APT_TIMEOUT, env=env)
    if update.returncode != 0:
        raise PostgresUnavailable(f"apt-get update failed: {update.stderr.strip()[-300:]}")
    result = _run(["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=60", "--no-install-recommends",
                   PACKAGE], max(10.0, deadline - time.monotonic()), env=env)
    if result.returncode != 0:
        raise PostgresUnavailable(f"apt-get install {PACKAGE} failed: {result.stderr.strip()[-300:]}")
    found = server_bin()
    if found is None:
        raise PostgresUnavailable(f"apt-get installed {PACKAGE} but no /usr/lib/postgresql/*/bin/postgres")
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None (ourselves) unless we are root, which PostgreSQL refuses."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and there is neither a postgres nor a nobody user to run the server")


@dataclass
class LocalPostgres:
    bin: Path
    base: Path
    port: int
    user: pwd.struct_passwd | None
    process: subprocess.Popen | None = None
    databases: list[str] = field(default_factory=list)

    @property
    def data(self) -> Path:
        return self.base / "data"

    def url(self, database: str, driver: str = "") -> str:
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        return f"{scheme}://{USER}@127.0.0.1:{self.port}/{database}"

    def _as_server_user(self) -> dict:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def start(self) -> None:
        log = (self.base / "server.log").open("a")
        argv = [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.base),
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"]
        try:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            **self._as_server_user())
        except OSError as exc:
            raise PostgresUnavailable(f"cannot start postgres: {exc}") from None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PostgresUnavailable(f"postgres exited with {self.process.returncode}\n{self.logs()}")
            ready = _run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER], 10)
            if ready.returncode == 0:
                return
            time.sleep(0.2)
        raise PostgresUnavailable(f"postgres did not accept connections within {START_TIMEOUT:g} s\n{self.logs()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: every session is cut, nothing waited for
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def restart(self, down_seconds: float = 0.0) -> None:
        """Cut every connection and come back on the same port with the same data after `down_seconds`."""
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def create_database(self, name: str) -> str:
        """A fresh, empty database (no optuna tables yet); its URL without a driver."""
        made = _run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, name], 30)
        if made.returncode != 0:
            raise AssertionError(f"createdb {name} failed: {made.stderr.strip()}")
        self.databases.append(name)
        return self.url(name)

    def logs(self) -> str:
        path = self.base / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def start() -> LocalPostgres:
    """initdb in a fresh folder the server's user owns, then the server on a free loopback port."""
    bin_dir = install()
    user = _server_user()
    # Not under pytest's tmp folder: that one is private to its owner (0700), which the server's user is not.
    base = Path(tempfile.mkdtemp(prefix="tfdoctor-pg-"))
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
    cluster = LocalPostgres(bin_dir, base, _free_port(), user)
    try:
        made = _run([str(bin_dir / "initdb"), "-D", str(cluster.data), "-U", USER, "-A", "trust", "-E", "UTF8",
                     "--no-sync"], 120, **cluster._as_server_user())
        if made.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {(made.stderr or made.stdout).strip()[-300:]}")
        cluster.start()
    except BaseException:
        cluster.cleanup()
        raise
    return cluster
