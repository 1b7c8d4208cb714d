"""How the journal writes: rows and checksums, shared commits, one PostgreSQL statement
per commit, WAL checkpoints off the event loop."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from solvi import Catalog, System
from solvi.journal import (
    INSERT_ENTRY,
    EntryRows,
    GroupCommit,
    Journal,
    PostgresJournal,
    SQLiteJournal,
    entry_row,
    pack_exact,
    unpack_exact,
)
from solvi.record import canonical_json, to_record_value
from solvi.recovery import state_json, value_forms
from solvi.system import _new_request_id

POSTGRES = os.environ.get("SOLVI_TEST_POSTGRES_DSN")

Statements = list[tuple[str, tuple[Any, ...]]]


def test_entry_rows_match_entry_row() -> None:
    """A request's rows carry the same fields and checksum as `entry_row` makes."""
    for request_id in ("r", "req-é", uuid.uuid4().hex):
        rows = EntryRows(request_id)
        started = rows.started(3, "part_é")
        expected = entry_row(request_id, "started", 3, "part_é", None, None, None, None)
        assert started[:8] == expected[:8]
        assert started[9] == expected[9]
        for args in [
            (0, "p", "ok", "3", None, None),
            (7, "q", "error", None, "boom ☃", None),
            (1, "r", "ok", '"s"', None, "QUJD"),
        ]:
            settled = rows.settled(*args)
            expected = entry_row(request_id, "settled", *args)
            assert settled[:8] == expected[:8]
            assert settled[9] == expected[9]


@pytest.mark.parametrize(
    "value",
    [0, -7, 10**30, "", "é ☃ \" \\ \n", None, True, False, 1.5, -0.0, float("nan"),
     float("inf"), [1, "x"], {"b": 1, "a": [2]}, (1, 2), dt.date(2026, 1, 3)],
)  # fmt: skip
def test_value_forms_match_the_record_and_pickle(value: Any) -> None:
    """The direct forms of plain values equal the general ones."""
    expected = (canonical_json(to_record_value(value, "p")), pack_exact(value))
    assert value_forms(value, "p") == expected


@pytest.mark.parametrize(
    "state",
    [{}, {"x": 1}, {"b": "é ☃", "a": None, "c": True, "d": 1.5, "e": 10**30, "f": -0.0},
     {"nan": float("nan")}, {"inf": float("-inf")}, {"t": (1, 2)}, {"d": dt.date(2026, 1, 3)},
     {"nested": {"b": [1, {"a": 2}]}}, {"x": 1, "later": [1]}],
)  # fmt: skip
def test_state_json_matches_the_record_form(state: dict[str, Any]) -> None:
    """The input's JSON, taken directly for plain scalars, equals its record form."""
    expected = canonical_json({k: to_record_value(v, f"input {k}") for k, v in state.items()})
    assert state_json(state) == expected


def test_request_ids_are_hex_and_sort_by_time() -> None:
    ids = [_new_request_id() for _ in range(1000)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)
    assert sorted(ids) == sorted(ids, key=lambda i: int(i[:16], 16))
    later = _new_request_id()
    assert later[:16] >= max(ids)[:16]


def test_finite_floats_need_no_pickle() -> None:
    """JSON gives a finite float back exactly; NaN and infinities are pickled."""
    assert pack_exact(0.1) is None
    packed = pack_exact(float("inf"))
    assert packed is not None
    assert unpack_exact(packed) == float("inf")


class Recording(Journal):
    """A journal that only records the statements of each commit (and may fail)."""

    def __init__(self) -> None:
        self.owner = "test"
        self.active: set[str] = set()
        self.damaged: set[str] = set()
        self.commits: list[Statements] = []
        self.fail = 0

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._transaction([(sql, params)])

    def _transaction(self, statements: Statements) -> None:
        if self.fail:
            self.fail -= 1
            msg = "disk full"
            raise OSError(msg)
        self.commits.append(list(statements))

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return []

    def owner_alive(self, owner: str) -> bool:
        return True

    def claim(self, request_id: str) -> bool:
        return False

    def close(self) -> None:
        """Nothing to release: this journal holds no connection and no lock."""


def _row(name: str) -> tuple[Any, ...]:
    return EntryRows("r").started(0, name)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_steps_flushing_together_share_one_commit(backend: str) -> None:
    """Steps that flush in the same turn of the loop are committed together, and
    none returns before its entry is committed."""
    journal = Recording()
    group = GroupCommit(journal)
    seen: dict[str, int] = {}

    async def step(name: str) -> None:
        group.add_entry(_row(name))
        await group.flush()
        seen[name] = sum(len(c) for c in journal.commits)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(step, f"s{i}")

    anyio.run(main, backend=backend)
    assert len(journal.commits) == 1
    assert sorted(params[3] for _, params in journal.commits[0]) == [f"s{i}" for i in range(5)]
    assert seen == {f"s{i}": 5 for i in range(5)}
    assert group.pending == []
    assert group.durable == 5


def test_a_worker_announced_as_coming_joins_the_commit() -> None:
    """A worker the scheduler woke (announced with `expect`) runs a turn after the
    others; the leader waits for it, so its entry is in the same commit."""
    journal = Recording()
    group = GroupCommit(journal)

    async def step(name: str, turns_late: int) -> None:
        for _ in range(turns_late):
            await anyio.lowlevel.checkpoint()
        if turns_late:
            group.arrived()
        group.add_entry(_row(name))
        await group.flush()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(step, "first", 0)
            tg.start_soon(step, "second", 0)
            group.expect()
            tg.start_soon(step, "late", 1)

    anyio.run(main)
    assert [[params[3] for _, params in c] for c in journal.commits] == [
        ["first", "second", "late"]
    ]
    assert group.coming == 0


def test_a_leader_waits_one_turn_when_no_worker_is_coming() -> None:
    """With nobody announced, the leader commits after one turn: a step that turns
    up later leads a commit of its own, and an announced worker that never comes
    holds a commit back by `gather_turns` turns at most."""
    journal = Recording()
    group = GroupCommit(journal)

    async def step(name: str, turns_late: int) -> None:
        for _ in range(turns_late):
            await anyio.lowlevel.checkpoint()
        group.add_entry(_row(name))
        await group.flush()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(step, "first", 0)
            tg.start_soon(step, "late", 1)
        group.expect()  # a worker that is cancelled before it runs
        async with anyio.create_task_group() as tg:
            tg.start_soon(step, "alone", 0)
            tg.start_soon(step, "three turns late", 3)

    anyio.run(main)
    assert [[params[3] for _, params in c] for c in journal.commits] == [
        ["first"],
        ["late"],
        ["alone"],
        ["three turns late"],
    ]


def _layers() -> Catalog:
    """Three layers of async parts (3, 3, 1) and a rule."""
    cat = Catalog("layers")

    @cat.fn
    async def a0(x: int) -> int:
        await anyio.sleep(0.001)
        return x

    @cat.fn
    async def a1(x: int) -> int:
        await anyio.sleep(0.001)
        return x + 1

    @cat.fn
    async def a2(x: int) -> int:
        await anyio.sleep(0.001)
        return x + 2

    @cat.fn
    async def b0(a0: int, a1: int) -> int:
        await anyio.sleep(0.001)
        return a0 + a1

    @cat.fn
    async def b1(a1: int, a2: int) -> int:
        await anyio.sleep(0.001)
        return a1 + a2

    @cat.fn
    async def b2(a2: int, a0: int) -> int:
        await anyio.sleep(0.001)
        return a2 + a0

    @cat.fn
    async def c0(b0: int, b1: int, b2: int) -> int:
        await anyio.sleep(0.001)
        return b0 + b1 + b2

    @cat.rule
    def answer(c0: int) -> int:
        return c0

    return cat


def test_aask_commits_once_per_layer(tmp_path: Path) -> None:
    """On a flow of three layers of async parts and a rule, a request commits five
    times: the open entry with the first layer's starts, one per layer after it,
    and the close."""
    journal = Recording()
    cat = _layers()
    system = System(cat, journal=journal)
    for _ in range(3):
        journal.commits.clear()
        response = anyio.run(lambda: system.aask({"x": 1}))
        assert response["answer"].value == 12
        kinds = [[params[1] if sql == INSERT_ENTRY else sql.split()[0] for sql, params in c]
                 for c in journal.commits]  # fmt: skip
        assert [sorted(k) for k in kinds] == [
            ["INSERT", "started", "started", "started"],
            ["settled", "settled", "settled", "started", "started", "started"],
            ["settled", "settled", "settled", "started"],
            ["settled", "started"],
            ["UPDATE", "settled"],
        ]


def test_a_failed_commit_keeps_its_statements_and_raises() -> None:
    """When the commit fails the flusher gets the error and nothing is lost: the next
    flush commits the same statements, in order."""
    journal = Recording()
    journal.fail = 1
    group = GroupCommit(journal)

    async def main() -> None:
        group.add_entry(_row("a"))
        with pytest.raises(OSError, match="disk full"):
            await group.flush()
        assert [params[3] for _, params in group.pending] == ["a"]
        group.add_entry(_row("b"))
        await group.flush()

    anyio.run(main)
    assert [[params[3] for _, params in c] for c in journal.commits] == [["a", "b"]]
    assert group.durable == 2


def test_a_waiting_step_commits_itself_when_the_leader_is_cancelled() -> None:
    """If the step gathering a commit is cancelled, a step waiting on it commits."""
    journal = Recording()
    group = GroupCommit(journal)
    done: list[str] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def leader() -> None:
                with anyio.CancelScope() as scope:
                    group.add_entry(_row("leader"))
                    scope.cancel()
                    await group.flush()

            async def follower() -> None:
                group.add_entry(_row("follower"))
                await group.flush()
                done.append("follower")

            tg.start_soon(leader)
            tg.start_soon(follower)

    anyio.run(main)
    assert done == ["follower"]
    assert [[params[3] for _, params in c] for c in journal.commits] == [["leader", "follower"]]


def _catalog() -> Catalog:
    cat = Catalog("writes")

    @cat.fn
    async def a(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return x + 1

    @cat.fn
    async def b(x: int) -> float:
        await anyio.lowlevel.checkpoint()
        return x / 4

    @cat.rule
    def total(a: int, b: float) -> float:
        return a + b

    return cat


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_no_worker_stays_announced_after_a_request_ends_or_is_cancelled(backend: str) -> None:
    """Workers announced to the group (woken or started, not yet run) are all
    accounted for when a request ends, however it ends; otherwise every later
    commit would wait for workers that never come."""
    system = System(_layers(), journal=Recording())

    async def main() -> None:
        await system.aask({"x": 1})
        for delay in (0, 0.0002, 0.0005, 0.001, 0.0015, 0.002, 0.003):
            with anyio.move_on_after(delay):
                await system.aask({"x": 1})
        (group,) = system._groups.values()
        assert group.coming == 0
        assert group.pending == []  # nothing a cancelled request wrote is left uncommitted

    anyio.run(main, backend=backend)


def test_new_sqlite_journals_number_entries_without_autoincrement(tmp_path: Path) -> None:
    """A new journal's entries have a plain rowid, in the order they were written."""
    system = System(_catalog(), journal=tmp_path / "j.db")
    for x in range(3):
        anyio.run(system.aask, {"x": x})
    system.close()
    with sqlite3.connect(tmp_path / "j.db") as conn:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'journal_entries'"
        ).fetchone()
        seqs = [row[0] for row in conn.execute("SELECT seq FROM journal_entries ORDER BY at")]
    assert "AUTOINCREMENT" not in sql
    assert sorted(seqs) == list(range(1, 3 * 6 + 1))


def test_an_autoincrement_journal_still_works(tmp_path: Path) -> None:
    """A journal created with AUTOINCREMENT keeps it, and is written and resumed as before."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE journal_entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "request_id TEXT NOT NULL, kind TEXT NOT NULL, step INTEGER NOT NULL, "
            "part TEXT NOT NULL, outcome TEXT, value TEXT, message TEXT, exact TEXT, "
            "at REAL NOT NULL, checksum TEXT NOT NULL)"
        )
    system = System(_catalog(), journal=path)
    response = anyio.run(system.aask, {"x": 1})
    assert response["total"].value == 2.25
    assert system.journal is not None
    assert [e.kind for e in system.journal.load(response.request_id or "").entries].count(
        "settled"
    ) == 3
    system.close()


def test_new_sqlite_journals_key_requests_by_id(tmp_path: Path) -> None:
    """A new journal keeps requests in one B-tree keyed by id, and indexes only the
    open ones; `unfinished` lists exactly those, oldest first."""
    journal = SQLiteJournal(tmp_path / "j.db")
    details = {"catalog": "c", "catalog_version": "v", "state_json": "{}", "plan": ("a",)}
    for request_id in ("r1", "r2", "r3"):
        journal.open(request_id, early_exit=True, **details)
    journal.close_request("r2", None)
    assert [rj.request_id for rj in journal.unfinished()] == ["r1", "r3"]
    journal.close()
    with sqlite3.connect(tmp_path / "j.db") as conn:
        tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT request_id FROM journal_requests "
            "WHERE closed_at IS NULL ORDER BY opened_at"
        ).fetchall()
    assert tables["journal_requests"].endswith("WITHOUT ROWID")
    assert "sqlite_autoindex_journal_requests_1" not in tables
    assert "WHERE closed_at IS NULL" in tables["journal_requests_open"]
    assert "journal_requests_open" in str(plan)


def test_a_journal_with_the_earlier_request_table_still_works(tmp_path: Path) -> None:
    """A journal whose requests table has a rowid and a full index of closing times
    (as made before) keeps them, and is written, listed and resumed as before."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE journal_requests (request_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
            "catalog TEXT NOT NULL, catalog_version TEXT NOT NULL, input_hash TEXT NOT NULL, "
            "input TEXT NOT NULL, plan TEXT NOT NULL, early_exit INTEGER NOT NULL, "
            "opened_at REAL NOT NULL, claimed_at REAL, closed_at REAL, response_hash TEXT);"
            "CREATE INDEX journal_requests_open ON journal_requests (closed_at);"
        )
    system = System(_catalog(), journal=path)
    response = anyio.run(system.aask, {"x": 1})
    assert response["total"].value == 2.25
    assert system.journal is not None
    system.journal.open(
        "left-open", catalog="c", catalog_version="v", state_json="{}", plan=("a",),
        early_exit=True,
    )  # fmt: skip
    assert [rj.request_id for rj in system.journal.unfinished()] == ["left-open"]
    system.close()
    with sqlite3.connect(path) as conn:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'journal_requests_open'"
        ).fetchone()
    assert sql.endswith("(closed_at)")


def test_a_commit_is_an_append_and_the_database_fills_behind_it(tmp_path: Path) -> None:
    """Committing from a thread never opens the database on that thread: the entry
    goes to the process's log, and the journal's own thread applies it. Readers see
    it at once; the file has it once applied, and closing applies the rest."""
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.apply_every = 0.01
    rows = EntryRows("r")
    journal.write_statements([_open(journal, "r")])
    used_sqlite: list[bool] = []

    def commit_from_a_thread() -> None:
        for i in range(40):
            journal.write_statements([(INSERT_ENTRY, rows.started(i, f"p{i}"))])
        used_sqlite.append(getattr(journal._local, "conn", None) is not None)

    writer = threading.Thread(target=commit_from_a_thread)
    writer.start()
    writer.join()
    assert used_sqlite == [False]
    assert len(journal.load("r").entries) == 40  # a reader applies the log first

    def in_file() -> int:
        with sqlite3.connect(tmp_path / "j.db") as conn:
            return int(conn.execute("SELECT count(*) FROM journal_entries").fetchone()[0])

    deadline = time.monotonic() + 10
    while in_file() < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert in_file() == 40  # applied by the journal's thread
    journal.write_statements([(INSERT_ENTRY, rows.started(40, "last"))])
    applier = journal._applier
    journal.close()
    assert in_file() == 41
    assert applier is not None
    assert not applier.is_alive()
    assert list((tmp_path / "j.db.owners").glob("*.log")) == []  # applied, then deleted


@pytest.fixture
def postgres_journal() -> Iterator[PostgresJournal]:
    """A PostgreSQL journal in a schema of its own (dropped afterwards)."""
    if POSTGRES is None:
        pytest.skip("set SOLVI_TEST_POSTGRES_DSN to test PostgreSQL")
    import psycopg

    schema = f"journal_writes_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    joiner = "&" if "?" in POSTGRES else "?"
    journal = PostgresJournal(f"{POSTGRES}{joiner}options=-csearch_path%3D{schema}")
    try:
        yield journal
    finally:
        journal.close()
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def _open(journal: Journal, request_id: str) -> tuple[str, tuple[Any, ...]]:
    return journal.open_statement(
        request_id,
        catalog="c",
        catalog_version="v",
        state_json='{"x":1}',
        plan=("a", "b"),
        early_exit=True,
    )


def test_postgres_commits_of_every_shape(postgres_journal: PostgresJournal) -> None:
    """Opens, entries and closes in any mix commit atomically, entries in their order,
    a close of a request opened in the same commit included."""
    journal = postgres_journal
    one, two = EntryRows("one"), EntryRows("two")
    journal.write_statements(
        [_open(journal, "one"), (INSERT_ENTRY, one.started(0, "a")), _open(journal, "two")]
    )
    journal.write_statements(
        [
            (INSERT_ENTRY, one.settled(0, "a", "ok", '{"k":"é ☃"}', None, None)),
            (INSERT_ENTRY, one.started(1, "b")),
            (INSERT_ENTRY, two.started(0, "a")),
        ]
    )
    journal.write_statements(
        [
            (INSERT_ENTRY, one.settled(1, "b", "error", None, 'boom "é" ☃\n\t\\', None)),
            journal.close_statement("one", "h1"),
            journal.close_statement("two", "h2"),
        ]
    )
    journal.write_statements([_open(journal, "three"), journal.close_statement("three", "h3")])
    first = journal.load("one")
    assert first.closed
    assert first.skipped_torn == 0
    assert [(e.kind, e.part, e.value, e.message) for e in first.entries] == [
        ("started", "a", None, None),
        ("settled", "a", {"k": "é ☃"}, None),
        ("started", "b", None, None),
        ("settled", "b", None, 'boom "é" ☃\n\t\\'),
    ]
    assert journal.load("two").closed
    assert journal.load("three").closed
    assert [e.part for e in journal.load("two").entries] == ["a"]


def test_postgres_aask_commits_once_per_turn(postgres_journal: PostgresJournal) -> None:
    """Under aask the PostgreSQL journal gives the same answers and a closed request."""
    system = System(_catalog(), journal=postgres_journal)
    response = anyio.run(system.aask, {"x": 3})
    assert response["total"].value == 4.75
    assert system.journal_status() == []
    found = postgres_journal.load(response.request_id or "")
    assert found.closed
    assert [s.state for s in found.steps()] == ["settled"] * 3
    assert [e.kind for e in found.entries][-2:] == ["started", "settled"]  # the rule, last
