"""The PostgreSQL store's own code: how a DSN is named in messages (never its
password), and a server that goes away under it. Most stores on a real server are in
test_storage.py."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import anyio
import pytest
from stores import SAMPLE_RECORD as RECORD
from stores import backend, end_sessions, needs_postgres

from solvi._db.postgres_store import PostgresStore, describe_dsn
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


@needs_postgres
def test_a_server_that_went_away_is_a_store_error_and_the_store_recovers(
    tmp_path: Path,
) -> None:
    """Sessions ended under the store (a server restart, a cut network) give a
    StoreError naming the database and what to do, not a raw psycopg error; once the
    server is back the next call works."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        store = PostgresStore(f"{db.spec}&application_name={name}", max_size=MAX_SIZE)
        try:
            store.save_response(RECORD, request_id="r1")
            end_sessions(db.spec, name)
            with pytest.raises(StoreError, match=r"could not be reached or written: .*try again"):
                store.save_response(RECORD, request_id="r2")
            # Each call drops one dead session of the pool: within its size, one works.
            failed = 1
            while True:
                try:
                    store.save_response(RECORD, request_id="r3")
                    break
                except StoreError:
                    failed += 1
                    assert failed <= MAX_SIZE
            assert sorted(rid for rid, _ in store.iter_records()) == ["r1", "r3"]
        finally:
            store.close()


@needs_postgres
def test_a_server_that_went_away_is_a_store_error_under_async_calls(tmp_path: Path) -> None:
    """The same through the async pool, on one event loop that closes the store."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        store = PostgresStore(f"{db.spec}&application_name={name}", max_size=MAX_SIZE)

        async def scenario() -> None:
            try:
                await store.asave_response(RECORD, request_id="r1")
                end_sessions(db.spec, name)
                with pytest.raises(StoreError, match="could not be reached or written"):
                    await store.aget_record("r1")
                for _ in range(MAX_SIZE):  # each call drops one dead session of the pool
                    with contextlib.suppress(StoreError):
                        assert await store.aget_record("r1") == RECORD
                        return
                pytest.fail(f"no call worked in {MAX_SIZE} after the sessions ended")
            finally:
                await store.aclose()

        anyio.run(scenario)
