"""Write transactions on SQLite that other processes and threads writing all the time
cannot starve.

SQLite's own busy handler waits for the write lock with sleeps that grow to 100 ms.
Beside a process whose writer thread commits continually, the lock is free only
between two of its transactions, for well under a millisecond, so a waiter looking
again every 100 ms can miss every gap for seconds: a `resume` beside such a process
once waited 8 s. A waiter here looks again within a millisecond, at random moments so
that processes do not wake in step. Only one thread of a process looks at a time: the
others wait their turn on a lock of the process, asleep, because many threads waking
every millisecond would take the interpreter lock from the thread that holds the
database's lock and must run to release it.

Looking often is not enough beside a process whose transactions last long and follow
each other at once (a journal's writer behind on its log: gaps of microseconds between
transactions of 20 ms): a waiter then still missed the gaps for seconds, and a prune
failed after 30. So a waiter also says it waits, by a shared `flock` on a file beside
the database (``<file>-waiting``, made by the first process that ever waits), and a
process about to begin a transaction first gives way, for up to `GIVE_WAY` seconds,
while another holds that lock. Processes writing back to back thus take turns. The
file holds nothing; a process that cannot make or open it waits as before.
"""

from __future__ import annotations

import fcntl
import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

__all__ = ["FileMoved", "Placed", "busy", "unwritable", "use_wal", "write_transaction"]

#: the longest pause between two tries for the database's lock (seconds)
MAX_PAUSE = 0.001
#: the longest a process about to write waits for another that says it waits (seconds)
GIVE_WAY = 0.02


class _Turn:
    """One database file's turns: the lock this process's threads take in turn before
    they write it, and the file by which its processes say they wait for it."""

    __slots__ = ("_fd", "lock", "waiting")

    def __init__(self, path: str) -> None:
        self.lock = threading.RLock()
        #: the waiting file beside the database
        self.waiting = f"{path}-waiting"
        #: its descriptor, or None while it was not opened
        self._fd: int | None = None

    def _open(self, *, make: bool) -> int | None:
        if self._fd is None:
            flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if make else 0)
            try:
                self._fd = os.open(self.waiting, flags, 0o666)
            except OSError:
                return None
        return self._fd

    def _try_lock(self, how: int, *, make: bool) -> bool | None:
        """Take the waiting file's lock `how` without waiting: True when taken, False
        when another process holds it the other way, None when there is no file to
        lock (or the file system refuses)."""
        fd = self._open(make=make)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError:
            return None
        return True

    def others_wait(self) -> bool:
        """Whether another process says it waits for the write lock (its shared lock
        on the waiting file keeps this exclusive probe out)."""
        taken = self._try_lock(fcntl.LOCK_EX, make=False)
        if taken:
            self.stop_waiting()
        return taken is False

    def give_way(self, deadline: float) -> None:
        """Wait while another process says it waits, for at most `GIVE_WAY` seconds."""
        until = min(deadline, time.monotonic() + GIVE_WAY)
        while self.others_wait() and time.monotonic() < until:
            time.sleep(random.uniform(0.0, MAX_PAUSE / 2))

    def say_waiting(self) -> bool:
        """Take a shared lock on the waiting file (until `stop_waiting`); False when it
        cannot be had now (another process is probing: try again at the next look)."""
        return self._try_lock(fcntl.LOCK_SH, make=True) is True

    def stop_waiting(self) -> None:
        """Let go of the waiting file's lock, shared or exclusive."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def forget(self) -> None:
        """In a forked child: the waiting file's descriptor is the parent's too (and so
        are its locks), so the child lets it go without unlocking and opens its own."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


#: by the file's real path, and by each spelling of it seen (so it is resolved once)
_turns: dict[str, _Turn] = {}
_turns_lock = threading.Lock()


def _forget_turns() -> None:
    """In a forked child: a turn held by a thread of the parent would never be let go."""
    global _turns_lock
    for turn in set(_turns.values()):
        turn.forget()
    _turns.clear()
    _turns_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_turns)


def _turn(path: str) -> _Turn:
    """This process's turns at writing `path`."""
    turn = _turns.get(path)
    if turn is not None:
        return turn
    key = os.path.realpath(path)
    with _turns_lock:
        turn = _turns.get(key)
        if turn is None:
            turn = _turns[key] = _Turn(key)
        _turns[path] = turn
        return turn


class FileMoved(Exception):
    """The file a path named when it was opened is no longer there (`how` says why)."""

    def __init__(self, path: str, how: str) -> None:
        super().__init__(f"{path!r} {how}")
        self.path = path
        self.how = how


@attrs.frozen
class Placed:
    """The file a path named when it was opened (its device and inode), to notice it
    deleted or replaced while in use: SQLite, and a lock held on a file, go on with the
    unlinked file without a word, where no other process will ever see what they do."""

    path: str
    device: int
    inode: int

    @classmethod
    def of(cls, path: str | os.PathLike[str], fileno: int | None = None) -> Placed:
        """Where `path` is now (or the open file `fileno` is, which `path` names)."""
        found = os.stat(path) if fileno is None else os.fstat(fileno)
        return cls(os.fspath(path), found.st_dev, found.st_ino)

    def moved(self) -> str | None:
        """None while the path names the same file; else what became of it."""
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return "was deleted"
        except OSError as exc:
            return f"cannot be looked at ({exc.strerror})"
        if (found.st_dev, found.st_ino) != (self.device, self.inode):
            return "was replaced by another file"
        return None


def busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED, extended codes included (their low byte)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


#: what to do about a write SQLite refused for a reason outside the file's contents,
#: by the error's name (its extended codes share the prefix)
_UNWRITABLE = (
    (
        "SQLITE_READONLY",
        "this process may not write it: let its user write the file, its folder and "
        "the -wal and -shm files beside it",
    ),
    ("SQLITE_FULL", "the disk is full: free space on it"),
    (
        "SQLITE_IOERR",
        "the disk refused a write or a read (it may be full, or past a file size limit): "
        "free space, or look at the file system",
    ),
    (
        "SQLITE_CANTOPEN",
        "the file or the -wal and -shm files beside it cannot be opened: check that its "
        "folder exists and that this process's user may write there",
    ),
    ("SQLITE_PERM", "this process may not write it: let its user write the file"),
)


def unwritable(exc: sqlite3.Error) -> str | None:
    """What to do when SQLite could not write a file for want of room or rights, not
    because of what the file holds; None for any other error."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    for prefix, advice in _UNWRITABLE:
        if name.startswith(prefix):
            return advice
    return None


def _locked(path: str, timeout: float, by: str) -> sqlite3.OperationalError:
    """SQLite's "database is locked" error, saying who held the lock and for how long."""
    exc = sqlite3.OperationalError(
        f"database is locked: {by} held the write lock of {path!r} for more than {timeout:g} s"
    )
    exc.sqlite_errorcode = sqlite3.SQLITE_BUSY
    exc.sqlite_errorname = "SQLITE_BUSY"
    return exc


def use_wal(conn: sqlite3.Connection, path: str, timeout: float) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection holds the file.

    On a new file the first connection to ask for WAL mode switches it, and SQLite
    answers the others "database is locked" at once, without its busy handler: several
    processes opening one new store together would fail for no fault of the file.
    """
    _while_busy(conn, "PRAGMA journal_mode=WAL", path, timeout, time.monotonic() + timeout)


def _begin(
    conn: sqlite3.Connection, path: str, timeout: float, deadline: float, turn: _Turn
) -> None:
    """``BEGIN IMMEDIATE`` once other processes waiting have had their turn, tried again
    while another connection holds the lock, saying meanwhile that this process waits
    (`conn` must not wait in SQLite's own busy handler: its busy timeout is 0)."""
    turn.give_way(deadline)
    _while_busy(conn, "BEGIN IMMEDIATE", path, timeout, deadline, turn)


def _while_busy(
    conn: sqlite3.Connection,
    sql: str,
    path: str,
    timeout: float,
    deadline: float,
    turn: _Turn | None = None,
) -> None:
    """Run `sql`, again at short random pauses while the file is busy, until `deadline`;
    with `turn`, saying that this process waits while it does."""
    waiting = False
    try:
        while True:
            try:
                conn.execute(sql)
            except sqlite3.OperationalError as exc:
                if not busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise _locked(path, timeout, "another connection") from exc
            else:
                return
            if turn is not None and not waiting:
                waiting = turn.say_waiting()
            time.sleep(random.uniform(0.0, MAX_PAUSE))
    finally:
        if waiting:
            assert turn is not None
            turn.stop_waiting()


@contextmanager
def write_transaction(
    conn: sqlite3.Connection,
    path: str,
    timeout: float,
    *,
    commit: bool = True,
    polling: bool = False,
    placed: Placed | None = None,
) -> Iterator[None]:
    """A transaction on `conn` that holds the database's write lock from its start:
    committed when the body returns (rolled back with `commit` False), rolled back when
    it raises.

    `placed`: the file `conn` opened; a transaction is refused (`FileMoved`) once the
    path names no file or another one, since nothing written then would be seen.

    `polling`: `conn`'s busy timeout is 0 for good (it runs nothing else that waits for
    a lock: its statements run in such transactions, or need no lock). Otherwise its
    busy timeout is turned off while this waits for the lock, and set back to `timeout`.

    Raises:
        sqlite3.OperationalError: "database is locked", when the lock could not be had
            in `timeout` seconds (by this process's turn and SQLite's lock together).
    """
    deadline = time.monotonic() + timeout
    turn = _turn(path)
    if not turn.lock.acquire(timeout=timeout):
        raise _locked(path, timeout, "another thread of this process")
    try:
        if polling:
            _begin(conn, path, timeout, deadline, turn)
        else:
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                _begin(conn, path, timeout, deadline, turn)
            finally:
                conn.execute(f"PRAGMA busy_timeout = {round(timeout * 1000)}")
        how = None if placed is None else placed.moved()
        if how is not None:
            conn.execute("ROLLBACK")
            raise FileMoved(path, how)
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT" if commit else "ROLLBACK")
    finally:
        turn.lock.release()
