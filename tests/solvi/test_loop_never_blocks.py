"""Nothing touches a database, and nothing is synced to disk, on the event loop's
thread while `aask` runs with a journal and a store.

A theme file, kept here because it crosses modules: the async driver, the writer
thread, the journal backends and the store."""

from __future__ import annotations

import os
import random
import re
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from stores import DSN_VARIABLE, POSTGRES_DSN

from solvi import Catalog, Question, System
from solvi.system import SAVE_LEARNING_EVERY

#: more requests than it takes for the System to save what it learned
REQUESTS = SAVE_LEARNING_EVERY + 30
#: requests in flight at once
CONCURRENT = 8
QUESTIONS = [Question("approve", forced=False), "limit"]


_LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b")


def _shape(statement: str) -> str:
    """A statement with its literal values replaced by ?, so that runs of one group."""
    return _LITERALS.sub("?", " ".join(statement.split()))


class Recorder:
    """Every statement and sync run on the event loop's thread while `active`."""

    def __init__(self) -> None:
        self.loop_thread: int | None = None
        self.active = False
        self.on_loop: list[str] = []
        self.elsewhere = 0

    def note(self, what: str) -> None:
        if not self.active:
            return
        if threading.get_ident() == self.loop_thread:
            self.on_loop.append(what)
        else:
            self.elsewhere += 1

    def report(self) -> str:
        counts = Counter(_shape(what)[:200] for what in self.on_loop)
        lines = [f"{n:6d} x {what}" for what, n in counts.most_common(40)]
        return (
            f"{len(self.on_loop)} statements or syncs ran on the event loop's thread "
            f"({len(counts)} shapes):\n" + "\n".join(lines)
        )


def _wrap(recorder: Recorder, label: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        recorder.note(label)
        return func(*args, **kwargs)

    return wrapped


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Traces every SQLite statement of every connection opened from now on, and
    every `os.fsync` and `os.fdatasync`, with the thread that ran it."""
    rec = Recorder()
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        rec.note(f"sqlite3.connect({args[0] if args else kwargs.get('database')!s})")
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: rec.note(f"sqlite: {sql}"))
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(os, "fsync", _wrap(rec, "os.fsync", os.fsync))
    monkeypatch.setattr(os, "fdatasync", _wrap(rec, "os.fdatasync", os.fdatasync))
    return rec


def _trace_postgres(rec: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Record every statement, commit and connect of psycopg's blocking connections."""
    import psycopg

    for name in ("execute", "executemany", "copy", "stream"):
        real = getattr(psycopg.Cursor, name)

        def traced(self: Any, query: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            text = query.decode() if isinstance(query, bytes) else str(query)
            rec.note(f"psycopg: {text}")
            return _real(self, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, name, traced)
    real_commit = psycopg.Connection.commit
    monkeypatch.setattr(psycopg.Connection, "commit", _wrap(rec, "psycopg: COMMIT", real_commit))
    real_connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def connect(cls: Any, *args: Any, **kwargs: Any) -> Any:
        rec.note("psycopg.Connection.connect")
        return real_connect(cls, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "connect", classmethod(connect))
    monkeypatch.setattr(psycopg, "connect", psycopg.Connection.connect)


@pytest.fixture(params=["sqlite, one file", "sqlite, two files", "postgresql"])
def where(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[str, str]]:
    """(journal, store) locations: one SQLite file for both, two SQLite files, or one
    PostgreSQL schema (skipped unless SOLVI_TEST_POSTGRES_DSN is set)."""
    if request.param == "sqlite, one file":
        yield str(tmp_path / "db.sqlite"), str(tmp_path / "db.sqlite")
        return
    if request.param == "sqlite, two files":
        yield str(tmp_path / "journal.sqlite"), str(tmp_path / "store.sqlite")
        return
    if POSTGRES_DSN is None:
        pytest.skip(f"set {DSN_VARIABLE} to a PostgreSQL URL")
    import psycopg

    schema = f"loop_never_blocks_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}".encode())
    joiner = "&" if "?" in POSTGRES_DSN else "?"
    dsn = f"{POSTGRES_DSN}{joiner}options=-csearch_path%3D{schema}"
    _trace_postgres(recorder, monkeypatch)
    try:
        yield dsn, dsn
    finally:
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def _catalog() -> Catalog:
    """Async lookups, a hard check that fails for minors, a `blocking=True` part, and
    a part that raises when the income is 0."""
    cat = Catalog("loop_never_blocks")

    @cat.fn
    async def credit_score(customer: str) -> int:
        await anyio.sleep(0.001)
        return 300 + sum(map(ord, customer)) % 550

    @cat.check(hard=True)
    async def adult(age: int) -> bool:
        await anyio.lowlevel.checkpoint()
        return age >= 18

    @cat.fn(blocking=True)
    def sanctions_hit(customer: str) -> bool:
        time.sleep(0.0005)
        return customer.endswith("7")

    @cat.fn
    def debt_ratio(income: float, debts: float) -> float:
        return round(debts / income, 4)

    @cat.check
    async def affordable(debt_ratio: float) -> bool:
        await anyio.sleep(0.0005)
        return debt_ratio < 0.4

    @cat.rule
    def approve(adult: bool, credit_score: int, affordable: bool, sanctions_hit: bool) -> bool:
        return affordable and credit_score >= 600 and not sanctions_hit

    @cat.rule
    def limit(credit_score: int) -> int:
        return max(0, credit_score - 500) * 100

    return cat


def _state(i: int) -> dict[str, Any]:
    """Hard check passing and failing; every fifth request has a part that raises."""
    return {
        "customer": f"c-{i}",
        "age": 16 if i % 4 == 0 else 40,
        "income": 0 if i % 5 == 0 else 1000 + i,
        "debts": 100 + i,
    }


async def _requests(system: System, rec: Recorder, cancel_some: bool) -> dict[str, int]:
    rec.loop_thread = threading.get_ident()
    rec.active = True
    seen = {"answered": 0, "cancelled": 0, "abstained": 0, "forced": 0}
    limiter = anyio.Semaphore(CONCURRENT)
    rng = random.Random(f"loop-never-blocks-{cancel_some}")

    async def one(i: int) -> None:
        async with limiter:
            delay = rng.uniform(0, 0.004) if cancel_some and i % 3 == 0 else None
            response = None
            with anyio.move_on_after(delay):
                response = await system.aask(_state(i), request_id=f"req-{i}")
            if response is None:
                seen["cancelled"] += 1
                return
            seen["answered"] += 1
            status = response["approve"].status
            if status in seen:
                seen[status] += 1

    try:
        async with anyio.create_task_group() as tg:
            for i in range(REQUESTS):
                tg.start_soon(one, i)
    finally:
        rec.active = False
    return seen


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_aask_never_touches_a_database_on_the_loop(
    where: tuple[str, str], recorder: Recorder, loop: str
) -> None:
    """No SQL statement, connect or fsync runs on the loop's thread during journaled `aask`."""
    journal, store = where
    system = System(_catalog(), QUESTIONS, journal=journal, store=store)
    try:
        seen = anyio.run(_requests, system, recorder, False, backend=loop)
    finally:
        system.close()
    assert seen["answered"] == REQUESTS
    assert seen["forced"] > 0, "no hard check failed"
    assert seen["abstained"] > 0, "no part raised"
    assert recorder.elsewhere or recorder.on_loop, "nothing was traced: the hooks missed"
    print(f"{recorder.elsewhere} statements, connects or syncs traced off the loop's thread")
    if recorder.on_loop:
        print(recorder.report())
    assert recorder.on_loop == [], recorder.report()


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_cancelled_aask_never_touches_a_database_on_the_loop(
    where: tuple[str, str], recorder: Recorder, loop: str
) -> None:
    """Cancelled journaled `aask` calls run no SQL statement, connect or fsync on the loop."""
    journal, store = where
    system = System(_catalog(), QUESTIONS, journal=journal, store=store)
    try:
        seen = anyio.run(_requests, system, recorder, True, backend=loop)
    finally:
        system.close()
    assert seen["cancelled"] > 0, "no call was cancelled"
    assert seen["answered"] > 0
    assert recorder.elsewhere or recorder.on_loop, "nothing was traced: the hooks missed"
    print(f"{recorder.elsewhere} statements, connects or syncs traced off the loop's thread")
    if recorder.on_loop:
        print(recorder.report())
    assert recorder.on_loop == [], recorder.report()
