"""Store backends for the storage, audit and replay tests: SQLite always, PostgreSQL when
SOLVI_TEST_POSTGRES_DSN names a server (each test then gets a schema of its own)."""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from solvi.storage import Store, open_store

DSN_VARIABLE = "SOLVI_TEST_POSTGRES_DSN"
POSTGRES_DSN = os.environ.get(DSN_VARIABLE) or None

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=pytest.mark.skipif(
            POSTGRES_DSN is None,
            reason=f"set {DSN_VARIABLE} to a PostgreSQL URL (.ci/postgres.sh start prints one)",
        ),
    ),
]


class Backend:
    """Where a test's store lives, with direct SQL access for tampering with it."""

    def __init__(self, kind: str, spec: str) -> None:
        self.kind = kind
        self.spec = spec

    def open(self) -> Store:
        """A new store on this backend's database."""
        return open_store(self.spec)

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement directly on the database (``%s`` placeholders), committed."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.spec) as conn:
                rows = conn.execute(statement.replace("%s", "?"), params).fetchall()
            conn.close()
            return rows
        import psycopg

        with psycopg.connect(self.spec, autocommit=True) as pg:
            cur = pg.execute(statement.encode(), params)
            return cur.fetchall() if cur.description is not None else []


@contextmanager
def backend(kind: str, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty database of `kind`, removed afterwards."""
    if kind == "sqlite":
        yield Backend(kind, str(tmp_path / "solvi.db"))
        return
    import psycopg

    assert POSTGRES_DSN is not None
    schema = f"solvi_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}".encode())
    joiner = "&" if "?" in POSTGRES_DSN else "?"
    try:
        yield Backend(kind, f"{POSTGRES_DSN}{joiner}options=-csearch_path%3D{schema}")
    finally:
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())


#: the smallest record a store keeps
SAMPLE_RECORD = {
    "catalog": "c",
    "catalog_version": "v",
    "hash": "h",
    "answers": {"q": {"status": "decided", "value": 1}},
    "safeguards": [],
}

needs_postgres = pytest.mark.skipif(
    POSTGRES_DSN is None, reason=f"set {DSN_VARIABLE} to test PostgreSQL"
)


def end_sessions(dsn: str, application_name: str) -> None:
    """End every session of `application_name` on the server, as a restart would, and
    wait until they are gone (a restarted server has ended them all before it takes
    new ones)."""
    _end_sessions(dsn, "application_name", application_name)


def _end_sessions(dsn: str, column: str, value: str) -> None:
    """End the sessions whose `column` is `value`, again until none is left: a pool may
    be opening one as the others end."""
    import psycopg

    ended = (
        f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE {column} = %s AND pid <> pg_backend_pid()"
    ).encode()
    deadline = time.monotonic() + 30
    with psycopg.connect(dsn, autocommit=True) as admin:
        while admin.execute(ended, (value,)).fetchone() != (0,):
            assert time.monotonic() < deadline, f"sessions of {value!r} outlived 30 s"
            time.sleep(0.01)


class LoginRole:
    """A role of one test's own on its database, whose logins can be refused: its
    sessions then end and new ones are refused, as by a server that is down."""

    def __init__(self, db: Backend, name: str) -> None:
        self.admin = db.spec
        self.name = name
        password = uuid.uuid4().hex
        parts = urlsplit(db.spec)
        host = parts.netloc.rpartition("@")[2]
        #: a DSN of the test's database that logs in as this role
        self.spec = urlunsplit(parts._replace(netloc=f"{name}:{password}@{host}"))
        (schema,) = db.sql("SELECT current_schema()")[0]
        db.sql(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        db.sql(f"GRANT ALL ON SCHEMA {schema} TO {name}")

    def go_away(self) -> None:
        """Refuse the role's logins, then end its sessions and wait until they are gone."""
        self._sql(f"ALTER ROLE {self.name} NOLOGIN")
        _end_sessions(self.admin, "usename", self.name)

    def come_back(self) -> None:
        """Take the role's logins again."""
        self._sql(f"ALTER ROLE {self.name} LOGIN")

    def drop(self) -> None:
        """End the role's sessions, drop what it owns and the role itself."""
        _end_sessions(self.admin, "usename", self.name)
        self._sql(f"DROP OWNED BY {self.name}")
        self._sql(f"DROP ROLE {self.name}")

    def _sql(self, statement: str) -> None:
        Backend("postgresql", self.admin).sql(statement)


@contextmanager
def login_role(db: Backend) -> Iterator[LoginRole]:
    """A `LoginRole` on `db`'s database, dropped afterwards."""
    role = LoginRole(db, f"solvi_role_{uuid.uuid4().hex[:12]}")
    try:
        yield role
    finally:
        role.drop()
