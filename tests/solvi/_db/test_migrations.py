"""The one migration table: a row per component (store, journal) in ``solvi_migrations``,
on SQLite and PostgreSQL; old databases upgraded on open; newer ones refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from flows.claims_small import Calls, claims_catalog
from hypothesis import given
from hypothesis import strategies as st
from stores import Backend

from solvi import Question, System
from solvi._db import migrations, postgres_store, sqlite_store
from solvi._db.postgres_journal import JOURNAL as POSTGRES_JOURNAL
from solvi._db.postgres_journal import PG_VERSION
from solvi._db.postgres_store import describe_dsn
from solvi._db.sqlite_journal import JOURNAL as SQLITE_JOURNAL
from solvi._db.sqlite_journal import SQLITE_VERSION
from solvi._db.store_plans import (
    POSTGRES,
    SCHEMA_VERSION,
    SQLITE,
    STORE,
    Dialect,
    Plan,
    Statement,
    drive,
)
from solvi.audit import verify
from solvi.journal import Journal, JournalError, open_journal
from solvi.storage import Store, StoreError, open_store

ROOT = Path(__file__).resolve().parents[3]
LEGACY = {"store": "solvi_schema_version", "journal": "journal_version"}
#: what the two journals are at: each backend has its own steps
JOURNAL_VERSION = {"sqlite": SQLITE_VERSION, "postgresql": PG_VERSION}


def _tables(db: Backend) -> set[str]:
    if db.kind == "sqlite":
        rows = db.sql("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = db.sql("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    return {str(r[0]) for r in rows} - {"sqlite_sequence"}


def _versions(db: Backend) -> dict[str, int]:
    return dict(db.sql("SELECT component, version FROM solvi_migrations ORDER BY component"))


def _where(db: Backend) -> str:
    """How messages name the database."""
    return repr(db.spec) if db.kind == "sqlite" else describe_dsn(db.spec)


def _journal(db: Backend) -> Journal:
    journal = open_journal(db.spec)
    assert journal is not None
    return journal


def _system(db: Backend) -> System:
    """A System whose journal is in its store (journal=True): one database."""
    questions = [Question("approve", forced=False), "fast_track"]
    return System(claims_catalog(Calls()), questions, store=db.spec, journal=True)


def _to_old_layout(db: Backend, versions: dict[str, int]) -> None:
    """Make the database as the release before ``solvi_migrations`` left it: each
    component's version in a table of its own."""
    db.sql("DROP TABLE solvi_migrations")
    for component, version in versions.items():
        db.sql(f"CREATE TABLE {LEGACY[component]} (version INTEGER NOT NULL)")
        db.sql(f"INSERT INTO {LEGACY[component]} (version) VALUES (%s)", (version,))


def _fill(store: Store, system: System) -> None:
    for i, amount in enumerate((900, 20_000)):
        res = system.ask({"policy_id": f"P-{i}", "claim": {"amount": amount}})
        store.save_response(res.record, request_id=f"r{i}")
    store.save_blob("claims", "notes", b"\x00kept")


def _contents(store: Store) -> tuple[Any, ...]:
    return (dict(store.iter_records()), store.audit_head(), store.load_blob("claims", "notes"))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _open_in_store_and_journal(db: Backend) -> None:
    open_store(db.spec).close()
    _journal(db).close()


# -- a fresh database ----------------------------------------------------------------------


def test_a_new_store_keeps_its_version_in_the_one_table(db: Backend) -> None:
    """A new store writes one row, ("store", 1), and no table of versions of its own."""
    open_store(db.spec).close()
    assert _versions(db) == {"store": SCHEMA_VERSION}
    assert SCHEMA_VERSION == 1
    assert not _tables(db) & set(LEGACY.values())


def test_a_new_journal_keeps_its_version_in_the_one_table(db: Backend) -> None:
    """A new journal writes one row, ("journal", its version), and no journal_version."""
    _journal(db).close()
    assert _versions(db) == {"journal": JOURNAL_VERSION[db.kind]}
    assert (SQLITE_VERSION, PG_VERSION) == (5, 2)
    assert "journal_version" not in _tables(db)


def test_a_shared_database_has_one_table_with_two_rows(db: Backend) -> None:
    """A System whose journal is in its store leaves one table of versions, two rows."""
    system = _system(db)
    try:
        res = system.ask({"policy_id": "P-1", "claim": {"amount": 900}})
        assert system.store is not None
        assert system.store.get_record(res.request_id or "") == res.record
    finally:
        system.close()
    assert _versions(db) == {"journal": JOURNAL_VERSION[db.kind], "store": SCHEMA_VERSION}
    tables = _tables(db)
    assert "solvi_migrations" in tables
    assert not tables & set(LEGACY.values())


def test_reopening_changes_nothing(db: Backend) -> None:
    """Opening an up-to-date database again leaves the same tables and the same rows."""
    _open_in_store_and_journal(db)
    tables, versions = _tables(db), _versions(db)
    _open_in_store_and_journal(db)
    assert (_tables(db), _versions(db)) == (tables, versions)


def test_an_up_to_date_database_is_only_read(db: Backend) -> None:
    """Migrating a database already up to date runs nothing but reads (and PostgreSQL's
    migration lock), for the store and for the journal."""
    _open_in_store_and_journal(db)
    d: Dialect = SQLITE if db.kind == "sqlite" else POSTGRES
    journal = SQLITE_JOURNAL if db.kind == "sqlite" else POSTGRES_JOURNAL
    for component in (STORE, journal):
        ran = _statements_of(db, migrations.migrate_plan(component, d, "here"))
        assert len(ran) == (2 if db.kind == "sqlite" else 3), ran
        assert all(sql.startswith("SELECT ") for sql, _ in ran), ran


def _statements_of(db: Backend, plan: Plan[Any]) -> list[Statement]:
    """Run `plan` on the database in a transaction that is rolled back; what it ran."""
    ran: list[Statement] = []

    def recording(run: Any) -> Any:
        def execute(sql: str, params: tuple[Any, ...]) -> Any:
            ran.append((sql, params))
            return run(sql, params)

        return execute

    if db.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(db.spec, isolation_level=None)
        conn.execute("BEGIN")
        try:
            drive(recording(sqlite_store.sqlite_execute(conn)), plan)
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return ran
    import psycopg

    with psycopg.connect(db.spec) as pg:
        drive(recording(postgres_store.pg_execute(pg)), plan)
        pg.rollback()
    return ran


# -- a database made before the table ------------------------------------------------------


def test_an_old_store_is_upgraded_on_open_and_keeps_its_data(db: Backend, system: System) -> None:
    """A store with solvi_schema_version, opened, has only solvi_migrations, the same
    version and the same records, audit chain and blobs."""
    with open_store(db.spec) as store:
        _fill(store, system)
        before = _contents(store)
    _to_old_layout(db, {"store": 1})
    assert "solvi_migrations" not in _tables(db)
    with open_store(db.spec) as store:
        assert store.schema_version == 1
        assert _contents(store) == before
        assert verify(store).ok
    assert _versions(db) == {"store": 1}
    assert "solvi_schema_version" not in _tables(db)


def test_an_old_shared_database_is_upgraded_by_its_store_and_its_journal(
    db: Backend, system: System
) -> None:
    """A database holding a store and a journal with their own version tables ends
    with one table and two rows; the stored responses and the open request remain."""
    with open_store(db.spec) as store:
        _fill(store, system)
        before = _contents(store)
    journal = _journal(db)
    details = {"catalog": "c", "catalog_version": "v", "state_json": "{}", "plan": ("a",)}
    journal.open("left-open", early_exit=True, **details)
    journal.close()
    _to_old_layout(db, {"store": 1, "journal": JOURNAL_VERSION[db.kind]})
    with open_store(db.spec) as store:
        assert _contents(store) == before
    assert _versions(db) == {"store": 1}
    assert "journal_version" in _tables(db)  # the journal upgrades its own row
    journal = _journal(db)
    try:
        assert [rj.request_id for rj in journal.unfinished()] == ["left-open"]
    finally:
        journal.close()
    assert _versions(db) == {"journal": JOURNAL_VERSION[db.kind], "store": 1}
    assert not _tables(db) & set(LEGACY.values())


def test_an_old_journal_at_an_earlier_version_runs_only_the_steps_above_it(
    db: Backend,
) -> None:
    """A journal left at an earlier version gets what the later steps add, and its rows."""
    _journal(db).close()
    if db.kind == "sqlite":
        # version 3: no logs' tables yet
        db.sql("DROP TABLE journal_logs")
        db.sql("DROP TABLE journal_damaged")
        earlier, added = 3, {"journal_logs", "journal_damaged"}
    else:
        # version 1: requests did not record how they closed
        db.sql("ALTER TABLE journal_requests DROP COLUMN closed_as")
        earlier, added = 1, set()
    _to_old_layout(db, {"journal": earlier})
    journal = _journal(db)
    journal.open(
        "r1", catalog="c", catalog_version="v", state_json="{}", plan=("a",), early_exit=True
    )
    journal.close_request("r1", None, closed_as="cancelled")
    assert journal.load("r1").cancelled
    journal.close()
    assert _versions(db) == {"journal": JOURNAL_VERSION[db.kind]}
    assert added <= _tables(db)
    assert "journal_version" not in _tables(db)


def test_an_old_store_opened_read_only_is_read_and_left_as_it_was(
    db: Backend, system: System, tmp_path: Path
) -> None:
    """open_store(..., read_only=True) on a store with solvi_schema_version reads its
    version and records, and writes nothing: no new table, no byte changed."""
    with open_store(db.spec) as store:
        _fill(store, system)
        before = _contents(store)
    _to_old_layout(db, {"store": 1})
    files = _snapshot(tmp_path) if db.kind == "sqlite" else {}
    with open_store(db.spec, read_only=True) as store:
        assert store.schema_version == 1
        assert _contents(store) == before
        assert verify(store).ok
    assert "solvi_migrations" not in _tables(db)
    assert db.sql("SELECT version FROM solvi_schema_version") == [(1,)]
    if db.kind == "sqlite":
        assert _snapshot(tmp_path) == files


def test_a_failed_upgrade_leaves_the_old_layout(
    db: Backend, system: System, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that fails at the last statement (dropping the old table) rolls back
    whole: the old table and its version stay, solvi_migrations is not there."""

    def failing(*args: Any) -> Plan[int]:
        plan = migrations.migrate_plan(*args)
        rows: Any = None
        while True:
            try:
                statement = plan.send(rows)
            except StopIteration as done:
                return int(done.value)
            if statement[0].startswith("DROP TABLE"):
                raise OSError("the disk went away")
            rows = yield statement

    with open_store(db.spec) as store:
        _fill(store, system)
        before = _contents(store)
    _to_old_layout(db, {"store": 1})
    backend = sqlite_store if db.kind == "sqlite" else postgres_store
    monkeypatch.setattr(backend, "migrate_plan", failing)
    with pytest.raises(OSError, match="the disk went away"):
        open_store(db.spec)
    monkeypatch.undo()
    assert "solvi_migrations" not in _tables(db)
    assert db.sql("SELECT version FROM solvi_schema_version") == [(1,)]
    with open_store(db.spec) as store:
        assert _contents(store) == before
    assert _versions(db) == {"store": 1}


def test_a_process_killed_in_the_upgrade_leaves_the_old_layout(
    tmp_path: Path, system: System
) -> None:
    """A process that dies just before the old table is dropped (after the new row was
    written) leaves the store as it was; the next open upgrades it."""
    path = tmp_path / "old.db"
    with open_store(path) as store:
        _fill(store, system)
        before = _contents(store)
    db = Backend("sqlite", str(path))
    _to_old_layout(db, {"store": 1})
    child = textwrap.dedent(
        """
        import os, sqlite3, sys
        connect = sqlite3.connect
        def dying(*args, **kwargs):
            conn = connect(*args, **kwargs)
            conn.set_trace_callback(
                lambda sql: os._exit(9) if sql.startswith("DROP TABLE") else None
            )
            return conn
        sqlite3.connect = dying
        from solvi.storage import open_store
        open_store(sys.argv[1])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(path)], cwd=ROOT, timeout=60, check=False
    )
    assert done.returncode == 9
    assert "solvi_migrations" not in _tables(db)
    assert db.sql("SELECT version FROM solvi_schema_version") == [(1,)]
    with open_store(path) as store:
        assert _contents(store) == before
    assert _versions(db) == {"store": 1}
    assert "solvi_schema_version" not in _tables(db)


# -- a database from a newer solvi ---------------------------------------------------------


def test_a_newer_store_is_refused_naming_both_versions(db: Backend) -> None:
    """A store row above what this solvi knows is refused, writable or read only, and
    nothing is written."""
    open_store(db.spec).close()
    db.sql("UPDATE solvi_migrations SET version = 99 WHERE component = 'store'")
    message = (
        f"store {_where(db)} has schema version 99, but this solvi knows versions up to 1; "
        f"upgrade solvi to open it"
    )
    for read_only in (False, True):
        with pytest.raises(StoreError) as raised:
            open_store(db.spec, read_only=read_only)
        assert str(raised.value) == message
    assert _versions(db) == {"store": 99}


def test_an_old_store_from_a_newer_solvi_is_refused_and_not_upgraded(db: Backend) -> None:
    """A too-new version in solvi_schema_version is refused with the same message, and
    the old table stays: the refusal writes nothing."""
    open_store(db.spec).close()
    _to_old_layout(db, {"store": 7})
    with pytest.raises(StoreError) as raised:
        open_store(db.spec)
    assert str(raised.value) == (
        f"store {_where(db)} has schema version 7, but this solvi knows versions up to 1; "
        f"upgrade solvi to open it"
    )
    assert "solvi_migrations" not in _tables(db)
    assert db.sql("SELECT version FROM solvi_schema_version") == [(7,)]


def test_a_newer_journal_is_refused_naming_both_versions(db: Backend) -> None:
    """A journal row above what this solvi knows raises JournalError naming the file or
    database, both versions and the fix, and is left as it was."""
    _journal(db).close()
    db.sql("UPDATE solvi_migrations SET version = 99 WHERE component = 'journal'")
    with pytest.raises(JournalError) as raised:
        _journal(db)
    assert str(raised.value) == (
        f"journal {_where(db)} has schema version 99, newer than this solvi understands "
        f"({JOURNAL_VERSION[db.kind]}); upgrade solvi"
    )
    assert _versions(db) == {"journal": 99}


def test_a_journal_only_database_is_still_not_a_store(db: Backend) -> None:
    """A database holding only a journal (and its row of solvi_migrations) is refused as
    no store, saying it holds a journal."""
    _journal(db).close()
    with pytest.raises(StoreError) as raised:
        open_store(db.spec, read_only=True)
    assert str(raised.value).endswith(
        " database without solvi's tables (it holds a solvi journal, which keeps no "
        "decisions), so it is not a solvi store; give the store a System wrote "
        "(System(store=...))"
    )


# -- the plan itself, without a database ---------------------------------------------------


def _component(steps: int) -> migrations.Component:
    def step(n: int) -> Any:
        return lambda d: migrations.statements((f"STEP {n}", ()))

    return migrations.Component(
        name="thing",
        steps=tuple(step(n) for n in range(1, steps + 1)),
        legacy_table="thing_version",
        error=ValueError,
        too_new=lambda where, found, supported: f"{where}: {found} > {supported}",
    )


class _FakeDatabase:
    """Answers a migration plan's reads from a table list and the stored versions."""

    def __init__(self, *, row: int | None, legacy: int | None) -> None:
        self.tables = set()
        if row is not None:
            self.tables.add(migrations.TABLE)
        if legacy is not None:
            self.tables.add("thing_version")
        self.row, self.legacy = row, legacy
        self.ran: list[str] = []

    def execute(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        self.ran.append(sql)
        if sql == SQLITE.tables_sql:
            return [(t,) for t in sorted(self.tables)]
        if sql.startswith(f"SELECT version FROM {migrations.TABLE}"):
            assert params == ("thing",)
            return [] if self.row is None else [(self.row,)]
        if sql == "SELECT version FROM thing_version":
            return [] if self.legacy is None else [(self.legacy,)]
        return []


versions = st.none() | st.integers(min_value=0, max_value=6)


@given(steps=st.integers(min_value=0, max_value=5), row=versions, legacy=versions)
def test_the_plan_runs_exactly_the_steps_above_the_stored_version(
    steps: int, row: int | None, legacy: int | None
) -> None:
    """For any stored version (in the table, in the old table, both or none), the plan
    runs the steps above it in order, writes the version only when it changed, drops
    the old table when there is one, and refuses a version above its steps having
    written nothing."""
    fake = _FakeDatabase(row=row, legacy=legacy)
    plan = migrations.migrate_plan(_component(steps), SQLITE, "db")
    found = row if row is not None else (legacy if legacy is not None else 0)
    if found > steps:
        with pytest.raises(ValueError, match=rf"^db: {found} > {steps}$"):
            drive(fake.execute, plan)
        assert all(sql.startswith("SELECT") for sql in fake.ran)
        return
    assert drive(fake.execute, plan) == steps
    writes = [" ".join(sql.split()[:3]) for sql in fake.ran if not sql.startswith("SELECT")]
    expected = [] if row is not None else ["CREATE TABLE IF"]
    expected += [f"STEP {n}" for n in range(found + 1, steps + 1)]
    if row != steps:
        expected.append("INSERT INTO solvi_migrations")
    if legacy is not None:
        expected.append("DROP TABLE thing_version")
    assert writes == expected
