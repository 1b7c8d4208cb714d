"""The SQLite journal's commit logs: one append-only file per process, applied to
the database behind the writer's back.

A commit is one append of one record to the log of the process that writes it:
once `os.write` returns, the record outlives the process (and, when the log is
synced, a power loss too). The database holds what has been applied, and the
table ``journal_logs`` says how far each log has been. A reader first applies
what lies beyond, in a transaction of its own: an inspection rolls it back (it
writes nothing), a claim commits it, and the owner's own thread commits it a few
times a second. A record is applied once: whoever applies takes SQLite's write
lock and starts where ``journal_logs`` says, and moves it on in the same
transaction.

A log's records are applied in the order they were written; different logs in
no particular order. That is enough because a request has one owner at a time,
and a claim (the only way to take a request over) applies every log before the
new owner writes to its own.

Logs rotate: once a log passes `ROTATE_BYTES` its owner goes on in a new file
(the next generation), and a generation that has been applied is deleted.

A record is an 8-byte header (the payload's length and CRC-32, little-endian)
and the payload: the request ids it touches, length first (so that a torn record
can still name them), then the statements, pickled. Only plain values (tuples,
strings, numbers, None) are unpickled, never a class: every reader reads logs.
"""

from __future__ import annotations

import io
import os
import pickle
import sqlite3
import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "LOGS_SCHEMA",
    "ROTATE_BYTES",
    "Applied",
    "LogWriter",
    "apply_logs",
    "encode",
    "log_files",
]

LOGS_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal_logs (
    name TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    applied INTEGER NOT NULL
) WITHOUT ROWID;
"""

#: a log goes on in a new file once it is this long
ROTATE_BYTES = 16 * 1024 * 1024

_HEADER = struct.Struct("<II")
_IDS = struct.Struct("<I")
_SUFFIX = ".log"


class _PlainUnpickler(pickle.Unpickler):
    """Loads tuples, lists, strings, numbers and None; refuses every class."""

    def find_class(self, module: str, name: str) -> Any:
        msg = f"a journal log record names {module}.{name}; only plain values belong there"
        raise pickle.UnpicklingError(msg)


def _loads(data: bytes) -> Any:
    return _PlainUnpickler(io.BytesIO(data)).load()


def encode(statements: list[tuple[int, tuple[Any, ...]]], request_ids: Iterable[str]) -> bytes:
    """One record: header, the request ids (length first), the pickled statements."""
    ids = "\x1f".join(request_ids).encode()
    payload = _IDS.pack(len(ids)) + ids + pickle.dumps(statements, protocol=5)
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


class LogWriter:
    """The log one owner appends its commits to (from any of its threads)."""

    def __init__(self, directory: Path, name: str, *, sync: bool) -> None:
        self.directory = directory
        self.name = name
        self.sync = sync
        self.generation = 0
        self.size = 0
        self._fd: int | None = None
        self._lock = threading.Lock()

    def path(self, generation: int) -> Path:
        """The file of one generation of this log."""
        return self.directory / f"{self.name}.{generation:06d}{_SUFFIX}"

    def append(self, record: bytes) -> None:
        """Write one record; when this returns it is in the file (and synced, if asked)."""
        with self._lock:
            if self._fd is None or self.size >= ROTATE_BYTES:
                self._next_file()
            fd = self._fd
            assert fd is not None
            view = memoryview(record)
            try:
                while view:
                    view = view[os.write(fd, view) :]
                if self.sync:
                    os.fdatasync(fd)
            except BaseException:
                # Nothing may follow a partial record: cut it off, or go on in a new file.
                try:
                    os.ftruncate(fd, self.size)
                except OSError:
                    self.size = ROTATE_BYTES
                raise
            self.size += len(record)

    def _next_file(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self.generation += 1
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        self._fd = os.open(self.path(self.generation), flags, 0o644)
        self.size = os.fstat(self._fd).st_size
        if self.sync:  # the new file's name must outlive a power loss too
            directory = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def close(self) -> None:
        """Close the current file (the files stay until they are applied)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def log_files(directory: Path) -> dict[str, list[int]]:
    """Every log in `directory`: its generations, oldest first, by log name."""
    out: dict[str, list[int]] = {}
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return out
    for entry in entries:
        if not entry.name.endswith(_SUFFIX):
            continue
        name, _, generation = entry.name[: -len(_SUFFIX)].rpartition(".")
        if name and generation.isdigit():
            out.setdefault(name, []).append(int(generation))
    for generations in out.values():
        generations.sort()
    return out


@attrs.define
class Applied:
    """What `apply_logs` did: records torn at a dead owner's log's end, and the
    files that are wholly applied once its transaction commits.

    Positions in ``journal_logs`` are never deleted: a log without one is read
    from its first file, so a position must outlive the files it covers.
    """

    #: request id -> how many torn records name it
    torn: dict[str, int] = attrs.field(factory=dict)
    #: files to delete after the commit
    spent: list[Path] = attrs.field(factory=list)

    def remove_spent(self) -> None:
        """Delete the spent files (after the commit; a leftover is deleted next time)."""
        for path in self.spent:
            path.unlink(missing_ok=True)


def apply_logs(
    conn: sqlite3.Connection,
    directory: Path,
    sql_of: dict[int, str],
    alive: Callable[[str], bool],
    only: str | None = None,
) -> Applied:
    """Apply every log's unapplied records in `conn`'s open write transaction.

    A record cut short or damaged stops its log there: a live owner may still be
    writing it; a dead owner's is torn, and counted against the requests it names.
    """
    applied = Applied()
    positions = {
        name: (generation, offset)
        for name, generation, offset in conn.execute(
            "SELECT name, generation, applied FROM journal_logs"
        )
    }
    for name, generations in log_files(directory).items():
        if only is not None and name != only:
            continue
        start = positions.get(name, (generations[0], 0))
        at = start
        stopped = False
        for generation in generations:
            path = directory / f"{name}.{generation:06d}{_SUFFIX}"
            if generation < start[0]:
                applied.spent.append(path)  # applied before; its deletion was missed
                continue
            offset = start[1] if generation == start[0] else 0
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    data = handle.read()
            except FileNotFoundError:
                continue  # deleted by another reader after its commit
            used, rest = _apply_records(conn, data, sql_of)
            at = (generation, offset + used)
            last = generation == generations[-1]
            if rest is not None:
                # A live owner may still be writing its last file's last record;
                # anywhere else a record cut short is torn, and what follows is lost.
                if last and alive(name):
                    stopped = True
                    break
                for request_id in _named(rest):
                    applied.torn[request_id] = applied.torn.get(request_id, 0) + 1
                if last:
                    stopped = True  # kept: the torn record is counted on every read
                    break
                at = (generation + 1, 0)  # its owner went on in the next file
            if not last:
                applied.spent.append(path)  # its owner has moved on to a later file
        if at != positions.get(name):
            conn.execute(
                "INSERT INTO journal_logs (name, generation, applied) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET generation = excluded.generation, "
                "applied = excluded.applied",
                (name, *at),
            )
        if not stopped and not alive(name):  # wholly applied, and nobody writes it again
            applied.spent.append(directory / f"{name}.{at[0]:06d}{_SUFFIX}")
    return applied


def _apply_records(
    conn: sqlite3.Connection, data: bytes, sql_of: dict[int, str]
) -> tuple[int, bytes | None]:
    """Apply the whole records at the start of `data`: the bytes used, and what is
    left when a record is cut short or damaged (None when `data` ends cleanly)."""
    pos = 0
    end_of_data = len(data)
    while pos < end_of_data:
        if pos + _HEADER.size > end_of_data:
            return pos, b""
        length, crc = _HEADER.unpack_from(data, pos)
        end = pos + _HEADER.size + length
        payload = data[pos + _HEADER.size : end]
        if end > end_of_data or zlib.crc32(payload) != crc:
            return pos, payload
        try:
            statements = _loads(payload[_IDS.size + _IDS.unpack_from(payload)[0] :])
        except (pickle.UnpicklingError, ValueError, EOFError, TypeError, struct.error):
            return pos, payload  # whole, yet not a record this journal writes: damaged
        if not _well_formed(statements, sql_of):
            return pos, payload
        _execute_runs(conn, statements, sql_of)
        pos = end
    return pos, None


def _well_formed(statements: Any, sql_of: dict[int, str]) -> bool:
    """Whether a record holds what this journal writes: (known statement, params) pairs."""
    return type(statements) is list and all(
        type(st) is tuple and len(st) == 2 and st[0] in sql_of and type(st[1]) is tuple
        for st in statements
    )


def _execute_runs(
    conn: sqlite3.Connection, statements: list[tuple[int, tuple[Any, ...]]], sql_of: dict[int, str]
) -> None:
    """Run statements in order, runs of one statement in one call."""
    count = len(statements)
    start = 0
    while start < count:
        tag = statements[start][0]
        end = start + 1
        while end < count and statements[end][0] == tag:
            end += 1
        if end == start + 1:
            conn.execute(sql_of[tag], statements[start][1])
        else:
            conn.executemany(sql_of[tag], [params for _, params in statements[start:end]])
        start = end


def _named(partial: bytes) -> list[str]:
    """The request ids a torn record names, if they survived."""
    if len(partial) < _IDS.size:
        return []
    (length,) = _IDS.unpack_from(partial)
    ids = partial[_IDS.size : _IDS.size + length]
    if len(ids) < length:
        return []
    try:
        return [i for i in ids.decode().split("\x1f") if i]
    except UnicodeDecodeError:
        return []
