"""solvi._db.sqlite_owners: a journal owner's lock file, held while it lives, seen from
another open file, released once, and its refusals in words that say what to do."""

from __future__ import annotations

import errno
import fcntl
from pathlib import Path

import pytest

from solvi._db.journal_base import JournalError
from solvi._db.sqlite_owners import OwnerLock, holds


def test_a_lock_is_held_until_released_and_then_reads_as_a_dead_owner(tmp_path: Path) -> None:
    folder = tmp_path / "j.db.owners"
    lock = OwnerLock(folder, "me")
    assert lock.held
    assert holds(folder, "me") is True
    assert holds(folder, "somebody") is False  # no such file
    lock.release()
    lock.release()  # a second call does nothing
    assert not lock.held
    assert holds(folder, "me") is False
    assert list(folder.iterdir()) == []


def test_a_lock_file_deleted_or_replaced_is_said(tmp_path: Path) -> None:
    lock = OwnerLock(tmp_path, "me")
    assert lock.moved() is None
    lock.path.unlink()
    assert lock.moved() == "was deleted"
    lock.path.write_text("")
    assert lock.moved() == "was replaced by another file"
    lock.release()


def test_a_folder_that_cannot_be_made_names_its_parent(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(JournalError) as refused:
        OwnerLock(blocker / "j.db.owners", "me")
    assert str(refused.value).startswith(f"cannot make the journal's owner folder {blocker}")
    assert f"let this process's user write {blocker}, or point journal= at" in str(refused.value)


def test_a_released_lock_whose_file_cannot_be_deleted_still_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner folder made read-only while the process ran: the file stays, unlocked."""
    lock = OwnerLock(tmp_path, "me")

    def refuse(*_: object, **__: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refuse)
    lock.release()
    monkeypatch.undo()
    assert lock.path.exists()
    assert holds(tmp_path, "me") is False
    with lock.path.open() as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_sweep_deletes_only_old_lock_files_nobody_holds(tmp_path: Path) -> None:
    """A killed process leaves its file: once it is older than STALE_AFTER and unlocked
    it goes. A held one stays, and so does a new unlocked one (a process between making
    its file and locking it)."""
    import os
    import time

    from solvi._db.sqlite_owners import STALE_AFTER, sweep

    live = OwnerLock(tmp_path, "live")
    dead, starting = tmp_path / "dead.lock", tmp_path / "starting.lock"
    dead.write_text("")
    starting.write_text("")
    old = time.time() - STALE_AFTER - 1
    for path in (dead, live.path):
        os.utime(path, (old, old))
    (tmp_path / "other.jlog").write_text("")
    assert sweep(tmp_path) == 1
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["live.lock", "other.jlog", "starting.lock"]
    live.release()


def test_opening_a_journal_sweeps_dead_owners(tmp_path: Path) -> None:
    import os
    import time

    from solvi._db.sqlite_journal import SQLiteJournal
    from solvi._db.sqlite_owners import STALE_AFTER

    first = SQLiteJournal(tmp_path / "j.db")
    first.close()
    owners = tmp_path / "j.db.owners"
    dead = owners / "killed.lock"
    dead.write_text("")
    old = time.time() - STALE_AFTER - 1
    os.utime(dead, (old, old))
    second = SQLiteJournal(tmp_path / "j.db")
    try:
        assert not dead.exists()
    finally:
        second.close()
