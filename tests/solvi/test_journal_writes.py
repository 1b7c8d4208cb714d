"""How the journal writes: rows and checksums, exact values, what each commit carries,
cancelled requests, older schemas, and PostgreSQL's one statement per commit.

A theme file, kept here because it crosses modules: recovery's value forms,
`solvi._db.journal_base`, and both journal backends."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import CatalogSpec, Log, build, catalogs, states, system_of

from solvi import Catalog, ResumeRefused, System
from solvi._db.exact import decode, encode
from solvi._db.journal_base import NO_EXACT, Unit
from solvi.journal import (
    INSERT_ENTRY,
    EntryRows,
    Journal,
    JournalError,
    PostgresJournal,
    SQLiteJournal,
    entry_row,
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
def test_value_forms_match_the_record_and_the_exact_form(value: Any) -> None:
    """A settled value is kept as its record JSON and, where that loses information,
    its exact form, which gives the value back."""
    data, exact = value_forms(value, "p")
    assert data == canonical_json(to_record_value(value, "p"))
    again = decode(data if exact is None else exact)
    assert again == value or (value != value and again != again)  # NaN
    assert type(again) is type(value)


def test_a_value_with_no_exact_form_is_marked_so() -> None:
    """A value JSON can show but not rebuild (an enum, a dataclass) is marked: its step
    cannot be resumed from the journal."""
    import enum

    class Colour(enum.Enum):
        RED = "red"

    assert value_forms(Colour.RED, "p") == ('"red"', NO_EXACT)


@pytest.mark.parametrize(
    "state",
    [{}, {"x": 1}, {"b": "é ☃", "a": None, "c": True, "d": 1.5, "e": 10**30, "f": -0.0},
     {"nan": float("nan")}, {"inf": float("-inf")}, {"t": (1, 2)}, {"d": dt.date(2026, 1, 3)},
     {"nested": {"b": [1, {"a": 2}]}}, {"x": 1, "later": [1]}],
)  # fmt: skip
def test_state_json_is_the_exact_form(state: dict[str, Any]) -> None:
    """The input the journal keeps gives the input back exactly (tuples and dates too)."""
    again = decode(state_json(state))
    assert again.keys() == state.keys()
    for key, value in state.items():
        assert again[key] == value or value != value  # NaN
        assert type(again[key]) is type(value)


def test_request_ids_are_hex_and_sort_by_time() -> None:
    ids = [_new_request_id() for _ in range(1000)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)
    assert sorted(ids) == sorted(ids, key=lambda i: int(i[:16], 16))
    later = _new_request_id()
    assert later[:16] >= max(ids)[:16]


def test_finite_floats_need_no_tag() -> None:
    """JSON gives a finite float back exactly; NaN and infinities are tagged."""
    assert encode(0.1) == "0.1"
    assert decode(encode(float("inf"))) == float("inf")


class Recording(Journal):
    """A journal that only records the units of each commit (and may fail)."""

    def __init__(self) -> None:
        self.owner = "test"
        self.active: set[str] = set()
        self.damaged: set[str] = set()
        self.commits: list[list[Unit]] = []
        #: commits holding the started entry of this part fail
        self.fail_start_of: str | None = None

    def _write(self, units: list[Unit]) -> None:
        for unit in units:
            for item in unit:
                if item[0] == INSERT_ENTRY and item[1][1:4:2] == ("started", self.fail_start_of):
                    msg = "disk full"
                    raise OSError(msg)
        self.commits.append(list(units))

    def _writer_exit(self) -> None:
        """Nothing to close."""

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return []

    def owner_alive(self, owner: str) -> bool:
        return True

    def claim(self, request_id: str) -> bool:
        return False

    def _release(self) -> None:
        """Nothing to release: this journal holds no connection and no lock."""

    def same_database(self, store: object) -> bool:
        return False

    def statements(self) -> Statements:
        """Every statement committed, in commit order."""
        return [item for commit in self.commits for unit in commit for item in unit]


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


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_each_start_is_committed_after_what_it_reads(backend: str) -> None:
    """Under aask, the open entry is committed first, each started entry after the
    settled entries of the steps it reads (in the same commit or an earlier one), and
    the close last. Steps that start together share a commit: the three steps ready
    at the start are started in one, and no request commits more than once per
    started step, once to open and once to close."""
    journal = Recording()
    cat = _layers()
    system = System(cat, journal=journal)
    reads = {p.name: p.inputs for p in cat.parts}
    for _ in range(3):
        journal.commits.clear()
        response = anyio.run(lambda: system.aask({"x": 1}), backend=backend)
        assert response["answer"].value == 12
        seen: list[tuple[str, str]] = []
        for sql, params in journal.statements():
            if sql == INSERT_ENTRY:
                kind, part = params[1], params[3]
                if kind == "started":
                    settled = {p for k, p in seen if k == "settled"}
                    assert {i for i in reads[part] if i != "x"} <= settled
                seen.append((kind, part))
            else:
                seen.append((sql.split()[0], ""))
        assert seen[0] == ("INSERT", "")
        assert seen[-1] == ("UPDATE", "")
        assert sorted(p for k, p in seen if k == "settled") == sorted(reads)
        units = [unit for commit in journal.commits for unit in commit]
        assert len(units) <= len(reads) + 2
        starts = [
            [params[3] for sql, params in unit if sql == INSERT_ENTRY and params[1] == "started"]
            for unit in units
        ]
        assert sorted(p for unit in starts for p in unit) == sorted(reads)
        assert ["a0", "a1", "a2"] in starts
    system.close()


def _add_io_part(cat: Catalog, name: str, note: Callable[[str], object]) -> None:
    """An async part `name` reading ``x`` that notes its call, then waits 1 ms."""

    async def call(x: int) -> int:
        note(name)
        await anyio.sleep(0.001)
        return x

    call.__name__ = name
    cat.fn(call)


class _StartsAndCalls(SQLiteJournal):
    """A NORMAL journal noting, in one list with the parts' calls, each start it makes
    durable (a log append is durable when `log` returns)."""

    def __init__(self, path: Path, events: list[str]) -> None:
        super().__init__(path)
        self.events = events

    def log(self, request_id: str, items: list[Any]) -> Any:
        ticket = super().log(request_id, items)
        self.events.extend(f"start {item[3]}" for item in items if item[0] == "s")
        return ticket


class _Calls(Log):
    """The parts' calls, in the journal's list of events."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def add(self, name: str) -> None:
        self.events.append(f"call {name}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=catalogs(), state=states(), speculate=st.booleans())
def test_every_call_follows_its_own_durable_start(
    tmp_path_factory: pytest.TempPathFactory,
    spec: CatalogSpec,
    state: dict[str, int],
    speculate: bool,
) -> None:
    """On random catalogs under aask, shared start commits or not: each call of a part
    comes after a durable start of that part not used by an earlier call, and every
    start is used by exactly one call (no start is written for a call never made)."""
    events: list[str] = []
    journal = _StartsAndCalls(tmp_path_factory.mktemp("starts") / "j.db", events)
    cat, questions = build(spec, _Calls(events), async_parts=True, yields=True)
    system = system_of(cat, questions, journal=journal)
    try:
        anyio.run(lambda: system.aask(state, speculate=speculate))
    finally:
        system.close()
    unused: dict[str, int] = {}
    for event in events:
        kind, part = event.split(" ", 1)
        if kind == "start":
            unused[part] = unused.get(part, 0) + 1
        else:
            assert unused.get(part, 0) > 0, f"{part} was called before its start was durable"
            unused[part] -= 1
    assert not any(unused.values()), f"starts with no call: {unused}"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_no_start_is_shared_in_a_speculative_drive(tmp_path: Path, backend: str) -> None:
    """Under speculation a ready step is dropped unstarted once a hard check has failed:
    its start was not written with another's, so the journal shows no start for it."""
    events: list[str] = []
    cat = Catalog("speculative_starts")

    @cat.check(hard=True)
    def gate(x: int) -> bool:
        events.append("call gate")
        return False

    for name in ("slow_a", "slow_b"):
        _add_io_part(cat, name, lambda called: events.append(f"call {called}"))

    @cat.rule
    def approve(gate: bool, slow_a: int, slow_b: int) -> bool:
        return True

    system = System(cat, journal=_StartsAndCalls(tmp_path / "j.db", events))
    try:
        response = anyio.run(lambda: system.aask({"x": 1}, speculate=True), backend=backend)
    finally:
        system.close()
    assert response["approve"].status == "abstained"
    assert response["approve"].guard == "gate"
    assert events == ["start gate", "call gate"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_failed_shared_start_refuses_only_the_step_it_was_for(backend: str) -> None:
    """When the commit that carried several steps' starts fails, the step whose start
    it was is refused; the others commit their starts again, alone, and run."""
    calls: list[str] = []
    cat = Catalog("shared_start")

    for name in ("a0", "a1", "a2"):
        _add_io_part(cat, name, calls.append)

    @cat.rule
    def answer(a1: int, a2: int) -> int:
        return a1 + a2

    @cat.rule
    def uses_a0(a0: int) -> int:
        return a0

    journal = Recording()
    journal.fail_start_of = "a0"
    system = System(cat, journal=journal)
    response = anyio.run(lambda: system.aask({"x": 1}), backend=backend)
    system.close()
    (guard,) = response.safeguards
    assert guard.part == "a0"
    assert "journal could not record the start: OSError: disk full" in guard.message
    assert sorted(calls) == ["a1", "a2"]
    assert response["answer"].value == 2
    assert response["uses_a0"].status == "abstained"
    started = [
        params[3]
        for commit in journal.commits
        for unit in commit
        for sql, params in unit
        if sql == INSERT_ENTRY and params[1] == "started"
    ]
    assert sorted(started) == ["a1", "a2", "answer"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_failed_commit_refuses_the_step_and_keeps_what_it_carried(backend: str) -> None:
    """Under aask, a start that cannot be committed does not run; the open entry it
    carried goes out with the next commit, so the request is still journaled whole."""
    journal = Recording()
    journal.fail_start_of = "a"
    system = System(_catalog(), journal=journal)
    response = anyio.run(lambda: system.aask({"x": 1}), backend=backend)
    system.close()
    (guard,) = response.safeguards
    assert guard.part == "a"
    assert "journal could not record the start: OSError: disk full" in guard.message
    first = journal.statements()[0]
    assert first[0].startswith("INSERT INTO journal_requests")


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
def test_a_cancelled_request_is_closed_as_cancelled(backend: str, tmp_path: Path) -> None:
    """A request cancelled at any moment is closed before the cancellation goes on:
    nothing is listed as unfinished, and resume refuses it, naming the cancellation."""
    system = System(_layers(), journal=tmp_path / "j.db")
    cancelled: list[str] = []

    async def main() -> None:
        await system.aask({"x": 1})
        for n, delay in enumerate((0, 0.0002, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004)):
            request_id = f"r{n}"
            with anyio.move_on_after(delay) as scope:
                await system.aask({"x": 1}, request_id=request_id)
            if scope.cancelled_caught:
                cancelled.append(request_id)
            assert system.journal_status() == []

    anyio.run(main, backend=backend)
    assert cancelled
    for request_id in cancelled:
        with pytest.raises(ResumeRefused, match="was cancelled by its caller"):
            system.resume(request_id)
    assert system.recover() == []
    system.close()


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


def test_commits_never_open_the_database_on_the_committing_thread(tmp_path: Path) -> None:
    """A thread that commits hands its statements to the journal's writer thread: it
    opens no connection of its own, and readers see every commit once it returns."""
    journal = SQLiteJournal(tmp_path / "j.db")
    rows = EntryRows("r")
    journal.commit((_open(journal, "r"),))
    used_sqlite: list[bool] = []

    def commit_from_a_thread() -> None:
        for i in range(40):
            journal.commit(((INSERT_ENTRY, rows.started(i, f"p{i}")),))
        used_sqlite.append(getattr(journal._local, "conn", None) is not None)

    writer = threading.Thread(target=commit_from_a_thread)
    writer.start()
    writer.join()
    assert used_sqlite == [False]
    assert len(journal.load("r").entries) == 40
    journal.close()
    with sqlite3.connect(tmp_path / "j.db") as conn:
        assert conn.execute("SELECT count(*) FROM journal_entries").fetchone()[0] == 40


def test_a_journal_with_commit_logs_of_an_earlier_version_is_refused(tmp_path: Path) -> None:
    """Commit logs left by an earlier solvi are never silently ignored."""
    owners = tmp_path / "j.db.owners"
    owners.mkdir()
    (owners / "host_1_abc.0.log").write_bytes(b"x")
    with pytest.raises(JournalError, match="commit logs of an earlier solvi"):
        SQLiteJournal(tmp_path / "j.db")


def test_a_file_that_is_not_a_journal_is_refused_clearly(tmp_path: Path) -> None:
    """Random bytes where a journal should be raise JournalError naming the file."""
    path = tmp_path / "j.db"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(JournalError, match="is not a usable solvi journal") as info:
        SQLiteJournal(path)
    assert str(path) in str(info.value)


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
    journal.commit(
        (_open(journal, "one"), (INSERT_ENTRY, one.started(0, "a")), _open(journal, "two"))
    )
    journal.commit(
        (
            (INSERT_ENTRY, one.settled(0, "a", "ok", '{"k":"é ☃"}', None, None)),
            (INSERT_ENTRY, one.started(1, "b")),
            (INSERT_ENTRY, two.started(0, "a")),
        )
    )
    journal.commit(
        (
            (INSERT_ENTRY, one.settled(1, "b", "error", None, 'boom "é" ☃\n\t\\', None)),
            journal.close_statement("one", "h1"),
            journal.close_statement("two", "h2"),
        )
    )
    journal.commit((_open(journal, "three"), journal.close_statement("three", "h3")))
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
