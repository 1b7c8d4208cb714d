"""The migration plan without a database (`solvi._db.migrations`): the statements it asks
for on a fresh, a current, an older and a damaged database, driven with canned rows."""

from __future__ import annotations

from typing import Any

import pytest

from solvi._db import migrations
from solvi._db.store_plans import POSTGRES, SQLITE, Dialect, Plan, drive
from solvi.errors import StoreError

Row = tuple[Any, ...]


def _steps(name: str) -> Any:
    def step(d: Dialect) -> Plan[None]:
        return migrations.statements((f"CREATE TABLE {name} ({d.integer})", ()))

    return step


THING = migrations.Component(
    name="thing",
    steps=(_steps("thing_v1"), _steps("thing_v2")),
    legacy_table="thing_version",
    error=StoreError,
    too_new=lambda where, found, supported: f"{where}: {found} > {supported}",
)


class Canned:
    """Answers the table list and version reads; notes every statement."""

    def __init__(self, tables: tuple[str, ...], version: int | None, legacy: Any = None):
        self.tables, self.version, self.legacy = tables, version, legacy
        self.asked: list[str] = []

    def __call__(self, sql: str, params: tuple[Any, ...]) -> list[Row]:
        self.asked.append(sql)
        if sql in (SQLITE.tables_sql, POSTGRES.tables_sql):
            return [(t,) for t in self.tables]
        if sql.startswith("SELECT version FROM solvi_migrations"):
            return [] if self.version is None else [(self.version,)]
        if sql.startswith("SELECT version FROM thing_version"):
            return [(self.legacy,)]
        return []


def test_a_fresh_database_gets_the_table_every_step_and_its_version() -> None:
    """No tables: the version table is created, both steps run, version 2 is written."""
    db = Canned((), None)
    assert drive(db, migrations.migrate_plan(THING, SQLITE, "x.db")) == 2
    assert db.asked[1:] == [
        migrations._CREATE,
        "CREATE TABLE thing_v1 (INTEGER)",
        "CREATE TABLE thing_v2 (INTEGER)",
        migrations._WRITE,
    ]


def test_a_current_database_is_only_read() -> None:
    """At the current version nothing is created, stepped or written."""
    db = Canned(("solvi_migrations",), 2)
    assert drive(db, migrations.migrate_plan(THING, SQLITE, "x.db")) == 2
    assert all(sql.startswith("SELECT") for sql in db.asked)


def test_an_older_layout_is_carried_over_and_its_table_dropped() -> None:
    """A version in the old one-row table: the steps above it run, then it is dropped."""
    db = Canned(("thing_version",), None, legacy=1)
    drive(db, migrations.migrate_plan(THING, SQLITE, "x.db"))
    assert db.asked[-3:] == [
        "CREATE TABLE thing_v2 (INTEGER)",
        migrations._WRITE,
        "DROP TABLE thing_version",
    ]


def test_postgres_takes_the_migration_lock_first() -> None:
    """On PostgreSQL two processes never migrate at once: the advisory lock comes first."""
    db = Canned(("solvi_migrations",), 2)
    drive(db, migrations.migrate_plan(THING, POSTGRES, "db"))
    assert db.asked[0] == "SELECT pg_advisory_xact_lock(%s)"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (3, "x.db: 3 > 2"),
        (
            "two",
            "thing x.db records its version as 'two', which is not a version number; the table "
            "was changed outside solvi: restore it from a backup",
        ),
        (
            True,
            "thing x.db records its version as True, which is not a version number; the table "
            "was changed outside solvi: restore it from a backup",
        ),
    ],
)
def test_a_newer_or_damaged_version_is_refused_before_any_write(version: Any, message: str) -> None:
    """The component's own error, with its message; nothing is written."""
    db = Canned(("solvi_migrations",), version)
    with pytest.raises(StoreError) as caught:
        drive(db, migrations.migrate_plan(THING, SQLITE, "x.db"))
    assert str(caught.value) == message
    assert all(sql.startswith("SELECT") for sql in db.asked)


def test_stored_version_reads_without_writing() -> None:
    """The read-only plan: the version, None for a damaged one, an error for a newer one."""
    assert (
        drive(Canned((), 1), migrations.stored_version_plan(THING, {"solvi_migrations"}, "x")) == 1
    )
    assert (
        drive(Canned((), "x"), migrations.stored_version_plan(THING, {"solvi_migrations"}, "x"))
        is None
    )
    assert drive(Canned((), None), migrations.stored_version_plan(THING, set(), "x")) is None
    with pytest.raises(StoreError, match=r"^x: 5 > 2$"):
        drive(Canned((), 5), migrations.stored_version_plan(THING, {"solvi_migrations"}, "x"))


def test_script_splits_statements_on_semicolons() -> None:
    """Blank pieces are dropped; each statement has no parameters."""
    assert migrations.script("CREATE TABLE a (x);\n ;CREATE TABLE b (y);") == (
        ("CREATE TABLE a (x)", ()),
        ("CREATE TABLE b (y)", ()),
    )
