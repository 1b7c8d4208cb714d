"""Store backends for the storage, audit and replay tests: SQLite always, PostgreSQL when
SOLVI_TEST_POSTGRES_DSN names a server (each test then gets a schema of its own)."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
    """End every session of `application_name` on the server, as a restart would."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        )
