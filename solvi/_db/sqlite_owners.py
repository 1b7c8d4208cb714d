"""Owners of a SQLite journal: each process proves it is alive by an exclusive `flock` on
a file of its own in the journal's owner folder, held while its journal is open.

The kernel lets go of the lock however the process dies, so another process that can
take it knows the owner is dead, and may claim its requests. A lock file deleted or
replaced while held would let others take a live process for dead: `OwnerLock.moved`
says when that happened, and the journal then writes nothing more.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from solvi._db.journal_base import JournalError
from solvi._db.sqlite_lock import Placed

__all__ = ["STALE_AFTER", "OwnerLock", "holds", "sweep"]

#: seconds an unlocked lock file is left alone: a starting process makes its file, then
#: locks it, and one swept in between would take that process for dead
STALE_AFTER = 60.0


class OwnerLock:
    """This process's lock file `name`.lock in `folder` (made if missing), locked.

    Raises:
        JournalError: the folder or the lock cannot be had (the message says what to do).
    """

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.path = folder / f"{name}.lock"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = (
                f"cannot make the journal's owner folder {folder} ({exc}); let this "
                f"process's user write {folder.parent}, or point journal= at a file in a "
                f"folder it can write"
            )
            raise JournalError(msg) from exc
        try:
            self._file = open(self.path, "w")
        except OSError as exc:
            raise self._refused(exc) from exc
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX)
        except OSError as exc:
            self._file.close()
            self.path.unlink(missing_ok=True)
            raise self._refused(exc) from exc
        self._placed = Placed.of(self.path, self._file.fileno())

    def _refused(self, exc: OSError) -> JournalError:
        msg = (
            f"cannot keep this process's lock in the journal's owner folder {self.folder} "
            f"({exc}); let this process's user write there (on a file system that has "
            f"locks), or point journal= at a file in a folder it can write"
        )
        return JournalError(msg)

    @property
    def held(self) -> bool:
        """Whether the lock is still held (`release` not called)."""
        return not self._file.closed

    def moved(self) -> str | None:
        """None while the lock file is where it was; else what became of it."""
        return self._placed.moved()

    def release(self) -> None:
        """Let go of the lock and delete the file (a second call does nothing)."""
        if self._file.closed:
            return
        fcntl.flock(self._file, fcntl.LOCK_UN)
        self._file.close()
        with contextlib.suppress(OSError):  # left unlocked, it reads as a dead owner
            self.path.unlink(missing_ok=True)


def holds(folder: Path, name: str) -> bool:
    """Whether the owner whose lock file in `folder` is called `name` still holds it."""
    try:
        handle = open(folder / f"{name}.lock")
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        handle.close()
    return False


def sweep(folder: Path) -> int:
    """Delete the lock files of dead owners (a process killed leaves its file), and say
    how many: a file nobody holds, made more than `STALE_AFTER` seconds ago. A dead
    owner reads the same with its file gone, so nothing but the clutter goes."""
    swept = 0
    cutoff = time.time() - STALE_AFTER
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not name.endswith(".lock"):
            continue
        path = folder / name
        try:
            if path.stat().st_mtime > cutoff or holds(folder, name[: -len(".lock")]):
                continue
            path.unlink()
        except OSError:
            continue
        swept += 1
    return swept
