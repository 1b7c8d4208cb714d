"""The PostgreSQL store's own code: how a DSN is named in messages (never its
password), and a server that restarts or goes away under it. Most stores on a real
server are in test_storage.py."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import anyio
import pytest
from stores import SAMPLE_RECORD as RECORD
from stores import backend, end_sessions, login_role, needs_postgres

from solvi._db.postgres_store import PostgresStore, describe_dsn
from solvi.audit import verify
from solvi.errors import StoreError

MAX_SIZE = 3


@pytest.mark.parametrize(
    ("dsn", "described"),
    [
        ("postgresql://alice:secret@db.example:6543/claims", "db.example:6543/claims"),
        ("postgresql://alice@db.example/claims", "db.example:5432/claims"),
        ("postgresql:///claims", "localhost:5432/claims"),
        ("postgresql://bob@/", "localhost:5432/bob"),
        ("host=h port=1 dbname=d password=pw", "h:1/d"),
        ("postgresql://[::1", "(unparsable DSN)"),
    ],
)
def test_a_dsn_is_named_by_host_port_and_database(dsn: str, described: str) -> None:
    """host:port/database, defaults filled in, the password left out."""
    assert describe_dsn(dsn) == described
    assert "secret" not in describe_dsn(dsn)


def _fill(store: PostgresStore) -> None:
    """Leave MAX_SIZE idle sessions in the store's sync pool, as a busy moment does."""
    pool = store._pool
    assert pool is not None
    with contextlib.ExitStack() as held:
        for _ in range(MAX_SIZE):
            held.enter_context(pool.connection())
    assert pool.get_stats()["pool_available"] == MAX_SIZE


@needs_postgres
def test_a_restart_while_idle_fails_no_call(tmp_path: Path) -> None:
    """Every session of a full pool ended while idle (a server restart, sessions ended
    by an administrator): the next calls all work, each on a fresh connection, and
    nothing is written twice."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        store = PostgresStore(f"{db.spec}&application_name={name}", max_size=MAX_SIZE)
        try:
            store.save_response(RECORD, request_id="r1")
            _fill(store)
            end_sessions(db.spec, name)
            store.save_response(RECORD, request_id="r2")
            assert store.get_record("r1") == RECORD
            assert sorted(rid for rid, _ in store.iter_records()) == ["r1", "r2"]
            assert verify(store).ok
            end_sessions(db.spec, name)  # the replacements end too: again no call fails
            assert store.get_record("r2") == RECORD
        finally:
            store.close()


@needs_postgres
def test_a_restart_while_idle_fails_no_async_call(tmp_path: Path) -> None:
    """The same through the async pool, on one event loop that closes the store."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        store = PostgresStore(f"{db.spec}&application_name={name}", max_size=MAX_SIZE)

        async def scenario() -> None:
            try:
                await store.asave_response(RECORD, request_id="r1")
                pool = store._apool
                assert pool is not None
                async with contextlib.AsyncExitStack() as held:
                    for _ in range(MAX_SIZE):
                        await held.enter_async_context(pool.connection())
                assert pool.get_stats()["pool_available"] == MAX_SIZE
                end_sessions(db.spec, name)
                assert await store.aget_record("r1") == RECORD
                await store.asave_response(RECORD, request_id="r2")
                assert await store.aget_record("r2") == RECORD
            finally:
                await store.aclose()

        anyio.run(scenario)


@needs_postgres
def test_a_server_that_stays_away_is_a_store_error(tmp_path: Path) -> None:
    """Sessions ended and new ones refused (a server that is down): sync and async
    calls raise a StoreError naming the database and what to do, not a raw psycopg
    error, once the pool has waited its timeout for a connection."""
    cut = r"could not be reached or written: .*try again"
    with backend("postgresql", tmp_path) as db, login_role(db) as role:
        store = PostgresStore(role.spec, max_size=MAX_SIZE, connect_timeout=1)
        try:
            store.save_response(RECORD, request_id="r1")
            role.go_away()
            with pytest.raises(StoreError, match=cut):
                store.get_record("r1")
        finally:
            store.close()
        role.come_back()
        astore = PostgresStore(role.spec, max_size=MAX_SIZE, connect_timeout=1)

        async def scenario() -> None:
            try:
                assert await astore.aget_record("r1") == RECORD
                role.go_away()
                with pytest.raises(StoreError, match=cut):
                    await astore.aget_record("r1")
            finally:
                await astore.aclose()

        anyio.run(scenario)
