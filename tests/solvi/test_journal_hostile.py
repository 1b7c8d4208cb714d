"""A journal is data, never code: a pickle payload planted in any column of the
journal's tables, or anywhere in a commit log, executes nothing, and the request it
damages is counted as damaged or refused with a clear error, never dropped; a
corrupt journal file raises `JournalError` naming the file.

A theme file, kept here because it crosses modules: exact values, journal_base, the
commit logs and both journal backends."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import pickle
import random
import shutil
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from solvi import Catalog, Question, SolviError, System
from solvi.journal import JournalError, SQLiteJournal

HERE = Path(__file__).resolve().parent
STATE = {"claim": {"documents": ["photo", "form"], "filed": "2024-05-17"}}
#: parts that crash the process (here: raise), by name
CRASH: set[str] = set()


class Crash(BaseException):
    """Stands for the process dying mid-call: not an Exception, so nothing catches it."""


def build(journal: Any) -> System:
    """A System whose parts return a tuple and a date (values JSON alone loses)."""
    cat = Catalog("hostile")

    @cat.fn(idempotent=True)
    def documents(claim: dict[str, Any]) -> tuple[str, ...]:
        return tuple(sorted(claim["documents"]))

    @cat.fn(idempotent=True)
    def filed(claim: dict[str, Any]) -> dt.date:
        return dt.date.fromisoformat(claim["filed"])

    @cat.check(hard=True)
    def in_time(filed: dt.date) -> bool:
        return filed.year >= 2020

    @cat.fn
    def points(documents: tuple[str, ...], filed: dt.date) -> int:
        if "points" in CRASH:
            raise Crash("points")
        return len(documents) + filed.month

    @cat.rule
    def approve(in_time: bool, points: int) -> bool:
        return points >= 3

    return System(cat, [Question("approve", forced=False)], journal=journal)


class Plant:
    """Unpickling this creates the marker file (`Path.touch`): code run from the journal."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def _payload(marker: Path) -> bytes:
    """The pickle, checked to be live: unpickling it does create the marker."""
    data = pickle.dumps(Plant(marker), protocol=4)
    pickle.loads(data)  # proving the payload would run
    assert marker.exists()
    marker.unlink()
    return data


def _crash(journal: Path, request_id: str) -> None:
    """A request that dies inside `points`, after `documents`, `filed` and `in_time`."""
    system = build(journal)
    CRASH.add("points")
    try:
        with pytest.raises(Crash):
            system.ask(STATE, request_id=request_id)
    finally:
        CRASH.clear()
        system.close()  # the owner is gone


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal with one finished request and two left by a dead owner."""
    where = tmp_path_factory.mktemp("template")
    journal = where / "j.db"
    system = build(journal)
    system.ask(STATE, request_id="done")
    system.close()
    _crash(journal, "victim")
    _crash(journal, "bystander")
    return journal


def _copy(template: Path, to: Path) -> Path:
    shutil.copytree(template.parent, to)
    return to / template.name


def _text_columns(journal: Path) -> list[tuple[str, str, bool]]:
    """(table, column, table has request_id) for every text column of a journal table."""
    with sqlite3.connect(journal) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'journal%'"
            )
        ]
        out = []
        for table in tables:
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()
            names = {row[1] for row in info}
            out.extend(
                (table, row[1], "request_id" in names)
                for row in info
                if row[2].upper() in ("TEXT", "", "BLOB") or "CHAR" in row[2].upper()
            )
    conn.close()
    return out


def _forge_checksums(conn: sqlite3.Connection) -> None:
    """Recompute the victim's entry checksums as the journal computes them at this
    commit (CRC-32 of the fields joined by 0x1f): what anyone who can write the file
    can do. A journal that checks something else just sees a damaged entry."""
    columns = [row[1] for row in conn.execute("PRAGMA table_info(journal_entries)")]
    fields = ["request_id", "kind", "step", "part", "outcome", "value", "message", "exact"]
    if not set([*fields, "checksum", "seq"]) <= set(columns):
        return
    rows = conn.execute(
        f"SELECT seq, {', '.join(fields)} FROM journal_entries WHERE request_id = 'victim'"
    ).fetchall()
    for seq, *values in rows:
        text = "\x1f".join(
            "" if v is None else v.decode("latin-1") if isinstance(v, bytes) else str(v)
            for v in values
        )
        crc = format(zlib.crc32(text.encode()), "08x")
        conn.execute("UPDATE journal_entries SET checksum = ? WHERE seq = ?", (crc, seq))


class Verdicts:
    """What each case broke, and what each API call did in it."""

    def __init__(self) -> None:
        self.broken: list[str] = []
        self.seen: list[str] = []

    def report(self) -> str:
        return f"{len(self.broken)} broken promises:\n  " + "\n  ".join(self.broken)


def _attempt(case: str, what: str, call: Callable[[], Any], v: Verdicts) -> tuple[bool, Any]:
    """Run one API call; a SolviError is a clear refusal, anything else is not."""
    try:
        return True, call()
    except SolviError as exc:
        v.seen.append(f"{case}: {what} refused: {exc}")
        return False, exc
    except Exception as exc:
        kind = f"{type(exc).__module__}.{type(exc).__name__}"
        v.broken.append(f"{case}: {what} raised a raw {kind}: {str(exc)[:120]}")
        return False, exc


def _exercise(
    case: str, journal: Path, marker: Path, victim: str | None, bystander: bool, v: Verdicts
) -> None:
    """A fresh System, journal_status, recover, resume, and a second fresh System: the
    marker never appears; the victim is listed, counted as damaged or refused."""
    opened, system = _attempt(case, "System(journal=...)", lambda: build(journal), v)
    if not opened:
        if victim is not None and victim not in str(system) and str(journal) not in str(system):
            v.broken.append(f"{case}: System() refused without naming the request or file")
        return
    try:
        accounted = False
        ok, status = _attempt(case, "journal_status()", system.journal_status, v)
        listed = {r.request_id for r in status} if ok else set()
        if not ok and victim is not None and victim in str(status):
            accounted = True
        if bystander and ok and "bystander" not in listed:
            v.broken.append(f"{case}: the untouched request vanished from journal_status()")
        damaged = set(getattr(system.journal, "damaged", set()) or set())
        if victim is not None and (victim in listed or victim in damaged):
            accounted = True
        _attempt(case, "recover()", system.recover, v)
        if victim is not None:
            ok, result = _attempt(case, "resume()", lambda: system.resume(victim), v)
            if not ok and isinstance(result, SolviError):
                accounted = True
        if victim is not None and not accounted:
            v.broken.append(
                f"{case}: the damaged request is neither listed, nor counted as damaged, "
                f"nor refused (silently dropped)"
            )
    finally:
        system.close()
    opened, again = _attempt(case, "a second System(journal=...)", lambda: build(journal), v)
    if opened:
        try:
            _attempt(case, "journal_status() again", again.journal_status, v)
        finally:
            again.close()
    if marker.exists():
        v.broken.append(f"{case}: the planted pickle RAN (marker file created)")
        marker.unlink()


def test_a_pickle_in_any_journal_column_runs_nothing(template: Path, tmp_path: Path) -> None:
    """A pickle in any journal column runs nothing; its request is damaged or refused, not lost."""
    marker = tmp_path / "ran.marker"
    payload = _payload(marker)
    encodings = {"base64": base64.b64encode(payload).decode(), "bytes": payload}
    columns = _text_columns(template)
    assert {(t, c) for t, c, _ in columns} >= {
        ("journal_requests", "input"),
        ("journal_entries", "value"),
    }, f"the journal's tables are not where this test looks: {columns}"
    v = Verdicts()
    n = 0
    for table, column, per_request in columns:
        for encoding, value in encodings.items():
            for forge in (False, True) if table == "journal_entries" else (False,):
                n += 1
                case = f"{table}.{column} = pickle as {encoding}" + (", forged" * forge)
                journal = _copy(template, tmp_path / f"case{n}")
                with sqlite3.connect(journal) as conn:
                    where = (
                        " WHERE request_id = 'victim'"
                        if per_request  # one row only: the column may be a key
                        else f" WHERE {column} = (SELECT {column} FROM {table} LIMIT 1)"
                    )
                    conn.execute(f"UPDATE {table} SET {column} = ?{where}", (value,))
                    if forge:
                        _forge_checksums(conn)
                conn.close()
                victim: str | None = "victim" if per_request else None
                if (table, column) == ("journal_requests", "request_id") and isinstance(value, str):
                    victim = value  # the request now goes by the planted id
                elif (table, column) == ("journal_requests", "request_id"):
                    victim = None  # a bytes id names no request a caller could resume
                elif (table, column) == ("journal_requests", "catalog"):
                    victim = None  # now another catalog's request: not this System's to list
                _exercise(case, journal, marker, victim, per_request, v)
    print("\n".join(v.seen))
    assert not v.broken, v.report()


def _random_bytes(path: Path, size: int) -> None:
    path.write_bytes(random.Random(size).randbytes(size))


@pytest.mark.parametrize(
    "damage",
    ["random bytes", "a SQLite header then random bytes", "a journal cut in half"],
)
def test_a_corrupt_journal_file_raises_journal_error(
    template: Path, tmp_path: Path, damage: str
) -> None:
    """A corrupt journal file raises JournalError naming the file, never a raw sqlite3 error."""
    journal = tmp_path / "corrupt.journal"
    if damage == "random bytes":
        _random_bytes(journal, 3 * 4096)
    elif damage == "a SQLite header then random bytes":
        _random_bytes(journal, 3 * 4096)
        with journal.open("r+b") as f:
            f.write(b"SQLite format 3\x00")
    else:
        data = template.read_bytes()
        journal.write_bytes(data[: len(data) // 2])

    def use() -> None:
        system = build(journal)
        try:
            system.journal_status()
            system.recover()
        finally:
            system.close()

    if damage == "a journal cut in half":
        error: JournalError | None = None
        try:
            use()
        except JournalError as exc:
            error = exc
        # a torn file may still read (its lost pages unused); it must not fail raw
        assert error is None or str(journal) in str(error), f"not naming the file: {error}"
        return
    with pytest.raises(JournalError) as info:
        use()
    assert str(journal) in str(info.value), f"the error does not name the file: {info.value}"


@pytest.fixture(scope="module")
def log_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal whose owner is gone with its commit log never applied: one finished
    request and two left mid-request, all only in the log (a copy of the files taken
    while the owner lived holds no lock, as after its death)."""
    where = tmp_path_factory.mktemp("live")
    journal = SQLiteJournal(where / "j.db")
    journal.writer.delay = 3600.0
    system = build(journal)
    system.ask(STATE, request_id="done")
    for request_id in ("victim", "bystander"):
        CRASH.add("points")
        try:
            with pytest.raises(Crash):
                system.ask(STATE, request_id=request_id)
        finally:
            CRASH.clear()
    copy = tmp_path_factory.mktemp("log_template") / "files"
    shutil.copytree(where, copy)
    system.close()
    return copy / "j.db"


def _victim_log(journal: Path) -> tuple[Path, list[bytes]]:
    (log,) = Path(f"{journal}.owners").glob("*.jlog")
    return log, log.read_bytes().rstrip(b"\0").splitlines(keepends=True)


def _forged(head: bytes) -> bytes:
    """A record with a digest that fits: what anyone who can write the file can make."""
    return head + b"\t" + hashlib.blake2b(head, digest_size=16).hexdigest().encode() + b"\n"


def _plant_in_log(journal: Path, placement: str, payload: bytes) -> str | None:
    """Put the pickle into the victim's part of the log; the request the journal must
    still account for (None when the planted bytes leave nothing to name it by)."""
    log, records = _victim_log(journal)
    text = base64.b64encode(payload).decode()
    (k,) = [i for i, r in enumerate(records) if b'"victim"' in r and b'"v"' in r][-1:]
    head = records[k].rsplit(b"\t", 1)[0]
    if placement == "the whole file":
        log.write_bytes(payload)
        return None
    if placement == "a line of its own":
        records.insert(k, payload.replace(b"\n", b"") + b"\n")
    elif placement == "a value, digest forged":
        ids, items = json.loads(head)
        items[0][5] = text
        records[k] = _forged(json.dumps([ids, items]).encode())
    elif placement == "a value as raw bytes, digest forged":
        records[k] = _forged(head.replace(b'"v",0,', b'"v",0,' + payload.hex().encode() + b","))
    elif placement == "the ids, digest forged":
        records[k] = _forged(head.replace(b'["victim"]', json.dumps([text]).encode(), 1))
    log.write_bytes(b"".join(records))
    return "victim"


@pytest.mark.parametrize(
    "placement",
    [
        "the whole file",
        "a line of its own",
        "a value, digest forged",
        "a value as raw bytes, digest forged",
        "the ids, digest forged",
    ],
)
def test_a_pickle_in_a_commit_log_runs_nothing(
    log_template: Path, tmp_path: Path, placement: str
) -> None:
    """A pickle planted in a dead owner's commit log runs nothing, whether or not its
    digest was forged; the request it damages is listed, counted as damaged or
    refused, never dropped, and the untouched one is listed."""
    marker = tmp_path / "ran.marker"
    payload = _payload(marker)
    journal = _copy(log_template, tmp_path / "case")
    victim = _plant_in_log(journal, placement, payload)
    v = Verdicts()
    _exercise(placement, journal, marker, victim, victim is not None, v)
    print("\n".join(v.seen))
    assert not v.broken, v.report()
