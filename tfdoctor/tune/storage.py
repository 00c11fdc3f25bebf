"""The shared study's storage as a worker uses it: opened safely whatever the order the workers start in,
its database URL given the driver that is installed, and every call riding out a transient loss of the
database (a connection reset, a server restart) for a bounded time (`--storage-retry`).

- **Schema creation.** optuna's RDBStorage creates its tables (and, on PostgreSQL, its enum types) on
  opening; two workers opening a fresh database at once race there (`UniqueViolation … CREATE TYPE
  studydirection`, `table trial_user_attributes already exists`, SQLite's `database is locked`). The one that
  loses the race opens again after a short random wait: the winner's tables are then there.
- **Drivers.** `postgresql://` means psycopg (3) to SQLAlchemy 2.1, psycopg2 to 1.4 and 2.0; the URL is given
  the driver that can be imported (`postgresql+psycopg2://` where only psycopg2 is), and with none a usage
  error names the package to install. `mysql://` likewise (mysqlclient, else PyMySQL). A URL that names its
  driver (`postgresql+psycopg2://`) is used as it is.
- **A transient loss.** Every storage call (ask, tell, attributes, the heartbeat, reads) that fails on a lost
  connection is tried again with a bounded, growing wait until `retry_seconds` have passed since the first
  failure; then StorageLost, which the command turns into exit 2 with the command that resumes the worker.
  A `tell` whose first attempt reached the database before the connection dropped finds its trial already
  finished on the second: that counts as done.
- **A journal on a network file system.** optuna's journal file backend opens the file anew for every read
  and append, so an NFS or Lustre blip (a stale handle after a server failover, the lock daemon away, a
  soft mount's timeout) is an OSError that the next attempt need not meet: those errnos are tried again the
  same way. A refusal for good (no space, no permission, a read-only or deleted file) is not.
"""

from __future__ import annotations

import errno
import importlib.util
import random
import time
from collections.abc import Callable
from typing import Any

DEFAULT_RETRY_SECONDS = 60.0
FIRST_WAIT, LONGEST_WAIT = 0.2, 5.0

# Which driver module a scheme without one needs, in the order tried: the first is SQLAlchemy 2.1's default.
DRIVERS: dict[str, tuple[tuple[str, str, str], ...]] = {
    # scheme: ((module, dialect+driver, the package to install), ...)
    "postgresql": (("psycopg", "postgresql+psycopg", "psycopg[binary]"),
                   ("psycopg2", "postgresql+psycopg2", "psycopg2-binary")),
    "mysql": (("MySQLdb", "mysql+mysqldb", "mysqlclient"), ("pymysql", "mysql+pymysql", "PyMySQL")),
}
SCHEME_ALIASES = {"postgres": "postgresql"}  # SQLAlchemy reads postgres:// no more; libpq does

# Words of a driver's message that say the database refused for good: waiting would not change it.
_FINAL = ("authentication failed", "password", "does not exist", "permission denied", "no such table",
          "unable to open database", "role ")


# OSErrors of a shared file system that a later attempt may not meet: NFS's stale handle after a server
# failover (ESTALE), the lock manager unreachable (ENOLCK), a soft mount's timeout (EIO, ETIMEDOUT), a busy
# or interrupted call. ENOSPC, EACCES, EROFS and ENOENT are answers, not blips.
_TRANSIENT_ERRNOS = frozenset({errno.ESTALE, errno.ENOLCK, errno.EIO, errno.ETIMEDOUT, errno.EAGAIN, errno.EINTR,
                               errno.EBUSY})


class StorageError(ValueError):
    """A storage that cannot be opened (shown to the user as a usage error)."""


class StorageLost(Exception):
    """The storage stayed unreachable for the whole retry time (exit 2; the worker can be resumed)."""


def database_url(url: str, installed: Callable[[str], bool] | None = None) -> str:
    """`url` with the driver that can be imported here, for a scheme that names none; StorageError naming
    the package to install when none can. `installed(module)` is for the tests (default: importable)."""
    found = installed or (lambda module: importlib.util.find_spec(module) is not None)
    scheme, sep, rest = url.partition("://")
    base = SCHEME_ALIASES.get(scheme.lower(), scheme.lower())
    if "+" in scheme or base not in DRIVERS:
        return url
    for module, dialect, _package in DRIVERS[base]:
        if found(module):
            return dialect + sep + rest
    packages = " or ".join(f"pip install '{package}'" for _module, _dialect, package in DRIVERS[base])
    raise StorageError(f"--storage {scheme}://…: no {base} driver is installed here: {packages} "
                       "(into the Python that runs tfdoctor)")


def transient(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) is a lost or busy connection that a later attempt may not meet:
    SQLAlchemy's OperationalError/InterfaceError or a DBAPI error it marked as a dropped connection, and
    not a refusal for good (a wrong password, a database that does not exist); or, for a journal file, an
    OSError of a shared file system's blip (_TRANSIENT_ERRNOS)."""
    try:
        from sqlalchemy import exc as sa_exc
    except ImportError:  # pragma: no cover - optuna's RDBStorage needs SQLAlchemy
        sa_exc = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):  # TimeoutError and ConnectionError (a reset) whatever their errno
            return current.errno in _TRANSIENT_ERRNOS or isinstance(current, (TimeoutError, ConnectionError))
        if sa_exc is not None and isinstance(current, sa_exc.DBAPIError) and (
                current.connection_invalidated
                or isinstance(current, (sa_exc.OperationalError, sa_exc.InterfaceError))):
            text = str(current).lower()
            return not any(word in text for word in _FINAL) or "database is locked" in text
        current = current.__cause__ or current.__context__
    return False


def describe(exc: BaseException) -> str:
    """The database's own words for a failure, on one line: the driver's error under SQLAlchemy's and optuna's
    wrappers (optuna says "invalid data in the commit" of any failed commit, a lost connection too)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    found = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = current
        orig = getattr(current, "orig", None)
        if isinstance(orig, BaseException):
            found = orig
            break
        current = current.__cause__ or current.__context__
    lines = [line.strip() for line in str(found).splitlines() if line.strip()]
    return f"{type(found).__name__}: {lines[0]}" if lines else type(found).__name__


def schema_race(exc: BaseException) -> bool:
    """Two workers creating optuna's tables at once: the loser's error (whatever the database)."""
    text = f"{type(exc).__name__} {exc} {exc.__cause__ or ''}".lower()
    return any(word in text for word in ("already exists", "uniqueviolation", "duplicate key",
                                         "database is locked", "integrityerror"))


class Retry:
    """Bounded, growing waits with jitter, until `seconds` after the first failure."""

    def __init__(self, seconds: float, what: str, on_wait: Callable[[str, float], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.what, self.on_wait, self.sleep, self.clock = seconds, what, on_wait, sleep, clock

    def call(self, function: Callable[[], Any], retry_if: Callable[[BaseException], bool]) -> Any:
        """`function()`, tried again while it raises what `retry_if` accepts (a call whose first attempt may
        have reached the database checks that itself: RetryingStorage.set_trial_state_values)."""
        deadline: float | None = None
        wait = FIRST_WAIT
        told = False
        while True:
            try:
                return function()
            except Exception as exc:
                if not retry_if(exc):
                    raise
                now = self.clock()
                deadline = now + self.seconds if deadline is None else deadline
                if now >= deadline:
                    from tfdoctor.facts.redact import excerpt

                    raise StorageLost(f"{self.what}: still failing after {self.seconds:g} s "
                                      f"({excerpt(describe(exc), 200)})") from None
                if not told and self.on_wait is not None:
                    self.on_wait(describe(exc), self.seconds)
                    told = True
                self.sleep(min(wait * random.uniform(0.5, 1.5), max(0.0, deadline - now)))
                wait = min(wait * 2, LONGEST_WAIT)


def _storage_class() -> type:
    """RetryingStorage: optuna's BaseStorage, every method of it passed on to the real storage through Retry.
    Built on first use: optuna is imported only by a tune."""
    global _RETRYING
    if _RETRYING is not None:
        return _RETRYING
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.storages import BaseStorage

    class RetryingStorage(BaseStorage):
        def __init__(self, inner: Any, retry: Retry) -> None:
            self._inner = inner
            self._retry = retry

        def __getattr__(self, name: str) -> Any:  # what BaseStorage does not declare (e.g. _CachedStorage's own)
            return getattr(self.__dict__["_inner"], name)

        def set_trial_state_values(self, trial_id: int, state: Any, values: Any = None) -> bool:
            attempts = []

            def tell() -> bool:
                attempts.append(1)
                try:
                    return self._inner.set_trial_state_values(trial_id, state, values)
                except UpdateFinishedTrialError:
                    # A retry of a tell that had reached the database: the trial holds what was told.
                    if len(attempts) > 1 and self._inner.get_trial(trial_id).state == state:
                        return True
                    raise

            return self._retry.call(tell, transient)

    def delegate(name: str) -> Callable[..., Any]:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._retry.call(lambda: getattr(self._inner, name)(*args, **kwargs), transient)

        method.__name__ = name
        return method

    for name in dir(BaseStorage):
        if name.startswith("_") or name == "set_trial_state_values" or not callable(getattr(BaseStorage, name)):
            continue
        setattr(RetryingStorage, name, delegate(name))
    RetryingStorage.__abstractmethods__ = frozenset()
    _RETRYING = RetryingStorage
    return RetryingStorage


_RETRYING: type | None = None


def retrying(storage: Any, retry: Retry) -> Any:
    """`storage` (optuna's) with every call tried again through `retry` on a transient failure."""
    from optuna.storages import RDBStorage
    from optuna.storages._cached_storage import _CachedStorage

    if isinstance(storage, RDBStorage):
        storage = _CachedStorage(storage)  # what optuna itself wraps an RDBStorage in
    return _storage_class()(storage, retry)


def backend(storage: Any) -> Any:
    """The optuna storage under the retrying and caching layers (RDBStorage, JournalStorage)."""
    inner = storage.__dict__.get("_inner", storage)
    return getattr(inner, "_backend", inner)


def open_database(url: str, read_only: bool, retry: Retry) -> Any:
    """optuna's RDBStorage of `url` (its driver chosen here), its tables created by whichever worker gets there
    first: a worker that loses that race, or finds the server restarting, opens again within the retry time.
    Connections are checked before use (pool_pre_ping), so one left over from before a restart is replaced."""
    import optuna

    target = database_url(url)

    def open_once() -> Any:
        return optuna.storages.RDBStorage(target, skip_table_creation=read_only,
                                          engine_kwargs={"pool_pre_ping": True})

    return retry.call(open_once, lambda exc: schema_race(exc) or transient(exc))
