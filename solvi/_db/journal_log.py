"""The SQLite journal's commit logs: one append-only file per process, applied to the
database behind the committing thread's back.

A commit of a journal with ``synchronous="NORMAL"`` is one append of one record to
the log of the process that makes it. Once `os.write` returns, the record outlives
the process, as a NORMAL SQLite commit does (neither survives a power loss), and
the committing thread (an event loop's, under `aask`) has made no SQL statement,
no fsync and no hand-off to another thread. The journal's writer thread applies
the records to the database a little later, and the table ``journal_logs`` says
how far each log has been applied: a record is applied once, because whoever
applies takes SQLite's write lock, starts where ``journal_logs`` says and moves it
on in the same transaction. Readers apply what lies beyond in a transaction they
roll back, so they see every commit and write nothing.

A record is one line of ASCII: the JSON list ``[ids, items]`` (the request ids it
touches, and its items: opens, entries and closes, see `journal_rows.statements_of`),
a tab, a BLAKE2b digest of that JSON, a newline. JSON written with ``ensure_ascii``
holds no raw tab or newline, so a newline ends a record and nothing else does: a
record cut short has none. The ids come first so that even a damaged record names
its requests. Reading a record builds lists, strings and numbers, never anything
a record names, and a record that holds anything else is damaged, never applied.

Logs rotate: past `ROTATE_BYTES` a log goes on in a new file (its next
generation), and a generation wholly applied is deleted.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import mmap
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from solvi._db.journal_rows import (
    CLOSE_REQUEST,
    INSERT_ENTRY,
    OPEN_REQUEST,
    Item,
    Statement,
    statements_of,
)

__all__ = [
    "CUT",
    "DAMAGED",
    "LOGS_SCHEMA",
    "ROTATE_BYTES",
    "Applied",
    "LogRecord",
    "LogWriter",
    "apply_logs",
    "apply_records",
    "apply_statements",
    "count_damage",
    "encode",
    "log_files",
    "parse",
    "register",
]

LOGS_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal_logs (
    name TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    applied INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal_damaged (
    request_id TEXT NOT NULL,
    log TEXT NOT NULL,
    kind TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_damaged_request ON journal_damaged (request_id);
"""

#: a log goes on in a new file once it is this long
ROTATE_BYTES = 8 * 1024 * 1024
SUFFIX = ".jlog"

#: An open in a log never replaces a request: an id made by the System is new, and a
#: caller's id is opened in the database directly (see `SQLiteJournal.submit`).
_OPEN_OR_IGNORE = OPEN_REQUEST.replace("INSERT INTO", "INSERT OR IGNORE INTO", 1)


def _refuse(value: Any) -> Any:
    msg = f"a journal record holds a {type(value).__name__}, which is not JSON"
    raise TypeError(msg)


_fallback = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
# The C encoder made once, not per call as `json.dumps` does: most of what it costs
# for records this small.
_encoder = (
    None
    if _make_encoder is None
    else _make_encoder(
        None, _refuse, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False
    )
)


def _dumps(value: Any) -> str:
    """`value` as compact ASCII JSON (NaN and infinities refused)."""
    if _encoder is None:
        return _fallback(value)
    return "".join(_encoder(value, 0))


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).hexdigest().encode("ascii")


def encode(ids: Sequence[str], items: Sequence[Item]) -> bytes:
    """One record: the JSON of the request ids and the items, the digest, a newline."""
    head = _dumps([ids, items]).encode("ascii")
    return head + b"\t" + _digest(head) + b"\n"


@attrs.frozen
class LogRecord:
    """One whole line of a log: where it lies, the requests it names and its statements
    (None when it is damaged: it is then never applied)."""

    start: int
    end: int
    ids: tuple[str, ...]
    statements: tuple[Statement, ...] | None


def _ids(text: bytes) -> tuple[str, ...]:
    """The request ids at the head of a record (``[["id", ...], ...``), as far as they
    can be read: a record damaged further on still names its requests."""
    try:
        ids, _ = json.JSONDecoder().raw_decode(text.decode("ascii"), 1)
    except (ValueError, RecursionError):
        return ()
    if type(ids) is not list:
        return ()
    return tuple(i for i in ids if type(i) is str)


def _statements(head: bytes) -> tuple[Statement, ...] | None:
    """A record's statements, or None when it is not what a journal writes."""
    try:
        found = json.loads(head)
    except (ValueError, RecursionError):
        return None
    if type(found) is not list or len(found) != 2:
        return None
    statements = statements_of(found[0], found[1])
    return None if statements is None else tuple(statements)


def _read_line(line: bytes) -> tuple[bytes, tuple[Statement, ...] | None]:
    """A line's head (its JSON, or as much of it as there is) and its statements,
    None unless its digest fits."""
    head, tab, digest = line.rpartition(b"\t")
    if not tab:  # cut before its digest: its head may still name its requests
        return line, None
    return head, (_statements(head) if digest == _digest(head) else None)


def _sound_tail(line: bytes) -> tuple[int, tuple[Statement, ...]] | None:
    """Where a whole record starts inside a damaged line, and its statements: a
    record cut short, its newline lost, runs into the next one, which must not be
    lost with it. Every record starts ``[["``; the digest says which start is real
    (the first `_TAIL_TRIES` starts are tried, so a hostile line costs a bounded time)."""
    tab = line.rfind(b"\t")
    at = line.find(b'[["', 1, max(tab, 0))
    for _ in range(_TAIL_TRIES):
        if at < 0:
            break
        _, statements = _read_line(line[at:])
        if statements is not None:
            return at, statements
        at = line.find(b'[["', at + 1, tab)
    return None


#: how many starts `_sound_tail` tries in one damaged line
_TAIL_TRIES = 256


def parse(data: bytes, offset: int = 0) -> tuple[list[LogRecord], bytes]:
    """The whole lines of `data` (read from `offset` of a log) as records, and what
    follows the last newline (a record still being written, or cut short).

    A damaged line that ends in a whole record is two records: the damaged one
    before, and that one."""
    records = []
    pos = 0
    size = len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        line = data[pos:end]
        head, statements = _read_line(line)
        tail = None if statements is not None else _sound_tail(line)
        if tail is not None:
            at, found = tail
            records.append(LogRecord(offset + pos, offset + pos + at, _ids(line[:at]), None))
            records.append(LogRecord(offset + pos + at, offset + end + 1, _ids(line[at:]), found))
        else:
            records.append(LogRecord(offset + pos, offset + end + 1, _ids(head), statements))
        pos = end + 1
    return records, data[pos:]


def apply_statements(conn: sqlite3.Connection, statements: Sequence[Statement]) -> None:
    """Run a batch of opens, entries and closes: the opens, then the entries in their
    order, then the closes, each kind in one `executemany`. An entry needs nothing
    before it and a close needs only its request's open, so this is what running
    them one by one in order would leave (ids are never reused)."""
    opens: list[tuple[Any, ...]] = []
    entries: list[tuple[Any, ...]] = []
    closes: list[tuple[Any, ...]] = []
    by_sql = {OPEN_REQUEST: opens, INSERT_ENTRY: entries, CLOSE_REQUEST: closes}
    for sql, params in statements:
        by_sql[sql].append(params)
    if opens:
        conn.executemany(_OPEN_OR_IGNORE, opens)
    if entries:
        conn.executemany(INSERT_ENTRY, entries)
    if closes:
        conn.executemany(CLOSE_REQUEST, closes)


#: a record its dead owner was writing when it died: as if the owner had died just
#: before it (what it guards had not begun), so it is counted, nothing more
CUT = "cut"
#: a record damaged anywhere else: any step of its requests not settled may have started
DAMAGED = "damaged"


def count_damage(
    conn: sqlite3.Connection, applied: Applied, name: str, ids: Sequence[str], kind: str
) -> None:
    """Count a record of log `name` that is not applied against the requests it names."""
    applied.damaged.extend(ids)
    now = time.time()
    conn.executemany(
        "INSERT INTO journal_damaged (request_id, log, kind, at) VALUES (?, ?, ?, ?)",
        [(request_id, name, kind, now) for request_id in ids],
    )


#: what the database refuses in a record that is not the database's fault: the
#: record is damaged (a string it cannot encode, a number too large), not the journal
_REFUSED = (
    UnicodeError,
    OverflowError,
    ValueError,
    TypeError,
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
    sqlite3.DataError,
)


def apply_records(
    conn: sqlite3.Connection,
    name: str,
    records: Sequence[tuple[Sequence[str], Sequence[Statement]]],
    applied: Applied,
) -> None:
    """Apply records, each its ids and statements, in order in the open transaction:
    all at once, and if the database refuses one, one by one, the refused skipped
    and counted `DAMAGED`, so that one bad record never holds up the rest."""
    if not records:
        return
    conn.execute("SAVEPOINT journal_log_batch")
    try:
        apply_statements(conn, [st for _, statements in records for st in statements])
    except _REFUSED:
        conn.execute("ROLLBACK TO journal_log_batch")
        for ids, statements in records:
            conn.execute("SAVEPOINT journal_log_record")
            try:
                apply_statements(conn, statements)
            except _REFUSED:
                conn.execute("ROLLBACK TO journal_log_record")
                count_damage(conn, applied, name, ids, DAMAGED)
            conn.execute("RELEASE journal_log_record")
    conn.execute("RELEASE journal_log_batch")


#: this process's id, renewed in a forked child (read on every append, so no system
#: call is made for it)
_process = [os.getpid()]


def _forked() -> None:
    _process[0] = os.getpid()


os.register_at_fork(after_in_child=_forked)


class LogWriter:
    """The log one journal appends its commits to. Callers serialize `append` (the
    journal holds a lock around it and the hand-over to its writer thread).

    Each generation is a file of `ROTATE_BYTES` allocated up front and mapped into
    memory: an append copies the record into the mapping, that is into the page
    cache, which outlives the process. It makes no system call and keeps the GIL,
    so a thread applying the log meanwhile cannot make the committing thread wait
    for it to come back. What follows the last record is zeros (JSON holds no NUL
    byte); a file is cut to its records when the log moves on or closes. Where a
    file cannot be allocated or mapped, each append is one `os.pwrite` instead.
    """

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name
        self.generation = 0
        self.size = 0
        #: the final size of each generation the log has moved on from
        self.final: dict[int, int] = {}
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._capacity = 0
        #: the process the log belongs to (a forked child shares its mapping)
        self._pid = _process[0]

    def path(self, generation: int) -> Path:
        """The file of one generation of this log."""
        return self.directory / f"{self.name}.{generation:06d}{SUFFIX}"

    @property
    def end(self) -> tuple[int, int]:
        """Where the next record goes: (generation, offset)."""
        return self.generation, self.size

    def append(self, record: bytes) -> tuple[int, int, int]:
        """Write one record; when this returns it is in the file. Returns its
        generation, start and end.

        Raises:
            OSError: it could not be written (nothing of it stays in the file).
        """
        if self._pid != _process[0]:
            msg = (
                f"commit log {self.name} belongs to process {self._pid}, not to this forked "
                f"one; open a journal in each process"
            )
            raise OSError(errno.EBADF, msg)
        count = len(record)
        if self._fd is None or self.size + count > self._capacity:
            self._next_file(count)
        start = self.size
        mapped = self._map
        if mapped is not None:
            mapped[start : start + count] = record
        else:
            self._write(record, start)
        self.size = start + count
        return self.generation, start, self.size

    def _write(self, record: bytes, start: int) -> None:
        fd = self._fd
        assert fd is not None
        try:
            view = memoryview(record)
            at = start
            while view:
                written = os.pwrite(fd, view, at)
                view, at = view[written:], at + written
        except BaseException:
            # Nothing may follow a partial record: cut it off, or go on in a new file.
            try:
                os.ftruncate(fd, start)
            except OSError:
                self._capacity = 0
            raise

    def _next_file(self, need: int) -> None:
        """Go on in the next generation's file, once it exists: a file that cannot be
        made leaves the log where it was (no generation is skipped, which a reader
        would take for a log changed behind the journal's back)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        fd = os.open(self.path(self.generation + 1), flags, 0o644)
        with contextlib.suppress(OSError):  # the zeros after its records stay
            self._close_file()
        self.generation += 1
        self._fd = fd
        self.size = 0
        capacity = max(ROTATE_BYTES, need)
        try:
            os.posix_fallocate(fd, 0, capacity)
            self._map = mmap.mmap(fd, capacity)
        except (OSError, ValueError):
            # No room to allocate ahead, or a file system that cannot: plain writes.
            os.ftruncate(fd, 0)
            self._map = None
        self._capacity = capacity

    def _close_file(self) -> None:
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        self.final[self.generation] = self.size
        try:
            if self._map is not None:
                self._map.close()
                self._map = None
            os.ftruncate(fd, self.size)  # the zeros after the last record go
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close the current file (the files stay until they are applied)."""
        self._close_file()


#: zeros this long end a mapped log's records (as does a run of zeros up to the end
#: of the file); a shorter run followed by more bytes is damage inside the log, read
#: past: the lines it touches are damaged records
_ZEROS_AT_END = 65536
_NOT_ZERO = re.compile(rb"[^\x00]")


def read_from(path: Path, offset: int) -> bytes:
    """A log file's bytes from `offset` up to where its records end: its end, or the
    zeros that follow the records of a mapped file.

    Raises:
        FileNotFoundError: the file is gone (applied and deleted meanwhile), or is no
            longer a regular file (see `log_files`).
    """
    data = bytearray()
    try:
        # Never follow a link, nor wait on a pipe that took the file's place.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path)) from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path))
    with open(fd, "rb") as handle:
        handle.seek(offset)
        scanned = 0  # no run of zeros in data[:scanned] ends the records
        while True:
            chunk = handle.read(_ZEROS_AT_END)
            data += chunk
            complete = len(chunk) < _ZEROS_AT_END
            while True:
                start = data.find(0, scanned)
                if start < 0:
                    scanned = len(data)
                    break
                found = _NOT_ZERO.search(data, start)
                stop = len(data) if found is None else found.start()
                if stop - start >= _ZEROS_AT_END or (stop == len(data) and complete):
                    return bytes(data[:start])
                if stop == len(data):
                    scanned = start  # the zeros may go on in the next chunk
                    break
                scanned = stop
            if complete:
                return bytes(data)


def log_files(directory: Path) -> dict[str, list[int]]:
    """Every log in `directory`: its generations, oldest first, by log name.

    Only regular files count: a journal makes nothing else there, so a directory, a
    pipe or a link of a log's name holds none of its commits, and is left alone."""
    out: dict[str, list[int]] = {}
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return out
    for entry in entries:
        if not entry.name.endswith(SUFFIX) or not entry.is_file(follow_symlinks=False):
            continue
        name, _, generation = entry.name[: -len(SUFFIX)].rpartition(".")
        if name and generation.isdigit():
            out.setdefault(name, []).append(int(generation))
    for generations in out.values():
        generations.sort()
    return out


@attrs.define
class Applied:
    """What `apply_logs` did: the damaged records it met (counted in
    ``journal_damaged`` by request), and the files wholly applied, to delete once its
    transaction has committed."""

    damaged: list[str] = attrs.field(factory=list)
    spent: list[Path] = attrs.field(factory=list)

    def remove_spent(self) -> None:
        """Delete the spent files (after the commit; a leftover goes next time)."""
        for path in self.spent:
            path.unlink(missing_ok=True)


def positions(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """How far each log has been applied, by name."""
    return {
        str(name): (int(generation), int(offset))
        for name, generation, offset in conn.execute(
            "SELECT name, generation, applied FROM journal_logs"
        )
        if type(generation) is int and type(offset) is int
    }


def register(conn: sqlite3.Connection, names: Sequence[str]) -> None:
    """Make the logs `names` this journal's (in the open transaction): an owner does so
    for its own as it opens the journal. `apply_logs` applies only registered logs, so
    a log copied in from another journal's folder is never taken for one of its own."""
    conn.executemany(
        "INSERT OR IGNORE INTO journal_logs (name, generation, applied) VALUES (?, 1, 0)",
        [(name,) for name in names],
    )


def set_position(conn: sqlite3.Connection, name: str, at: tuple[int, int]) -> None:
    """Record how far the log `name` has been applied (in the open transaction)."""
    conn.execute(
        "INSERT INTO journal_logs (name, generation, applied) VALUES (?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET generation = excluded.generation, "
        "applied = excluded.applied",
        (name, *at),
    )


def apply_logs(conn: sqlite3.Connection, directory: Path, alive: Callable[[str], bool]) -> Applied:
    """Apply every log's unapplied records in `conn`'s open write transaction.

    A live owner's log stops at a record still being written. A dead owner's last
    record, cut short or damaged, was being written as it died (`CUT`); any other
    damaged record is `DAMAGED`. Both are skipped and counted against the requests
    they name, in ``journal_damaged``. A log no owner registered (`register`) is
    another journal's: it is left as it is.
    """
    applied = Applied()
    done = positions(conn)
    for name, generations in log_files(directory).items():
        if name not in done:
            continue
        live = alive(name)
        at = done[name]
        for index, generation in enumerate(generations):
            path = directory / f"{name}.{generation:06d}{SUFFIX}"
            if generation < at[0]:
                applied.spent.append(path)  # applied before; its deletion was missed
                continue
            offset = at[1] if generation == at[0] else 0
            try:
                data = read_from(path, offset)
            except FileNotFoundError:
                continue  # wholly applied and deleted since the listing
            records, rest = parse(data, offset)
            last = index == len(generations) - 1
            ending = last and not live and not rest
            sound: list[tuple[Sequence[str], Sequence[Statement]]] = []
            for k, record in enumerate(records):
                if record.statements is not None:
                    sound.append((record.ids, record.statements))
                    continue
                kind = CUT if ending and k == len(records) - 1 else DAMAGED
                count_damage(conn, applied, name, record.ids, kind)
            apply_records(conn, name, sound, applied)
            if last and live:
                at = (generation, offset + len(data) - len(rest))  # the rest is being written
                break
            if rest:  # cut short, and nothing will finish it
                cut, _ = parse(rest + b"\n")
                count_damage(conn, applied, name, cut[0].ids if cut else (), CUT)
            if last:
                at = (generation, offset + len(data))
            else:
                applied.spent.append(path)  # its owner has moved on to a later file
                at = (generations[index + 1], 0)
        if at != done.get(name):
            set_position(conn, name, at)
        if not live:  # wholly applied, and nobody writes it again
            applied.spent.extend(directory / f"{name}.{g:06d}{SUFFIX}" for g in generations)
    return applied
