"""Stores on SQLite and PostgreSQL: schema and migrations, responses, costs and blobs."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from stores import Backend

from solvi import CostBook, Response, System
from solvi._db.store_plans import SCHEMA_VERSION
from solvi.storage import (
    DuplicateRequestError,
    MissingRecordError,
    PostgresStore,
    SQLiteStore,
    Store,
    StoreError,
    open_store,
)

TABLES = {
    "solvi_migrations",
    "solvi_responses",
    "solvi_audit",
    "solvi_audit_head",
    "solvi_costs",
    "solvi_blobs",
}


def _responses(system: System) -> list[Response]:
    return [
        system.ask({"policy_id": "P-1", "claim": {"amount": 900}}),
        system.ask({"policy_id": "X-2", "claim": {"amount": 900}}),
        system.ask({"policy_id": "P-3", "claim": {"amount": 20_000, "model_down": True}}),
    ]


def _tables(db: Backend) -> set[str]:
    if db.kind == "sqlite":
        rows = db.sql("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = db.sql("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    return {str(r[0]) for r in rows}


def test_opening_creates_the_schema_and_records_its_version(db: Backend) -> None:
    """A new store creates every table and writes its version in the migration table."""
    store = db.open()
    store.close()
    assert _tables(db) - {"sqlite_sequence"} == TABLES
    assert db.sql("SELECT component, version FROM solvi_migrations") == [("store", SCHEMA_VERSION)]
    assert SCHEMA_VERSION == 1


def test_reopening_keeps_data_and_migrates_nothing(db: Backend, system: System) -> None:
    """A second open finds the schema current and the saved data intact."""
    first = db.open()
    res = system.ask({"policy_id": "P-1", "claim": {"amount": 900}})
    first.save_response(res.record, request_id="r1")
    first.close()
    again = db.open()
    try:
        assert again.get_record("r1") == res.record
        assert again.audit_head()[0] == 1
    finally:
        again.close()
    assert db.sql("SELECT component, version FROM solvi_migrations") == [("store", SCHEMA_VERSION)]


def test_a_store_from_a_newer_solvi_is_refused(db: Backend) -> None:
    """A schema version above what this solvi knows raises StoreError naming both versions."""
    db.open().close()
    db.sql("UPDATE solvi_migrations SET version = 99 WHERE component = 'store'")
    with pytest.raises(StoreError, match=r"schema version 99.*up to 1; upgrade solvi"):
        db.open()


def test_saved_responses_read_back_as_stored(store: Store, system: System) -> None:
    """get_record returns each record exactly, answers in question order."""
    responses = _responses(system)
    for i, res in enumerate(responses):
        store.save_response(res.record, request_id=f"r{i}")
    for i, res in enumerate(responses):
        got = store.get_record(f"r{i}")
        assert got == res.record
        assert list(got["answers"]) == ["approve", "fast_track"]
    assert got["safeguards"][0]["kind"] == "error"


def test_iter_records_in_storage_order_filtered_by_catalog_and_time(
    store: Store, system: System
) -> None:
    """iter_records yields (id, record) in save order; catalog= and since= narrow it."""
    first, second, third = _responses(system)
    store.save_response(first.record, request_id="a")
    other = dict(second.record, catalog="other")
    store.save_response(other, request_id="b")
    middle = dt.datetime.now(dt.UTC)
    store.save_response(third.record, request_id="c")
    assert [rid for rid, _ in store.iter_records()] == ["a", "b", "c"]
    assert [rid for rid, _ in store.iter_records(catalog="claims")] == ["a", "c"]
    assert [rid for rid, _ in store.iter_records(since=middle)] == ["c"]
    naive = middle.replace(tzinfo=None)
    assert [rid for rid, _ in store.iter_records(since=naive, catalog="claims")] == ["c"]
    assert dict(store.iter_records())["c"] == third.record


def test_iter_records_reads_past_one_batch(store: Store, system: System) -> None:
    """More records than one read batch all come back, in order."""
    record = system.ask({"policy_id": "X-9", "claim": {}}).record
    for i in range(205):
        store.save_response(record, request_id=f"r{i:03d}")
    ids = [rid for rid, _ in store.iter_records()]
    assert ids == [f"r{i:03d}" for i in range(205)]


def test_a_damaged_record_raises_or_goes_to_on_damaged(
    db: Backend, store: Store, system: System
) -> None:
    """A stored record that is no JSON object stops iter_records with a StoreError
    naming it, or with on_damaged= is handed to it and passed over, sync and async."""
    record = system.ask({"policy_id": "X-9", "claim": {}}).record
    for request_id in ("a", "b", "c"):
        store.save_response(record, request_id=request_id)
    db.sql("UPDATE solvi_responses SET record = %s WHERE request_id = %s", ("[1, 2]", "b"))
    with pytest.raises(StoreError, match="the stored record of request 'b' is not a JSON object"):
        list(store.iter_records())
    seen: list[str] = []

    def damaged(request_id: str, error: StoreError) -> None:
        assert "run `solvi audit verify` on the store" in str(error)
        seen.append(request_id)

    assert [rid for rid, _ in store.iter_records(on_damaged=damaged)] == ["a", "c"]

    async def both() -> list[str]:
        return [rid async for rid, _ in store.aiter_records(on_damaged=damaged)]

    assert anyio.run(both) == ["a", "c"]
    assert seen == ["b", "b"]


def test_unknown_request_id_raises_lookup_error(store: Store) -> None:
    """get_record of an id never stored raises MissingRecordError, a LookupError."""
    with pytest.raises(LookupError, match="no response is stored under request id 'nope'"):
        store.get_record("nope")
    with pytest.raises(MissingRecordError):
        store.get_record("nope")


def test_a_request_id_is_stored_once(store: Store, system: System) -> None:
    """A second save under one id raises and appends no audit entry."""
    record = system.ask({"policy_id": "P-1", "claim": {}}).record
    store.save_response(record, request_id="same")
    head = store.audit_head()
    with pytest.raises(DuplicateRequestError, match="already stored under request id 'same'"):
        store.save_response(record, request_id="same")
    assert store.audit_head() == head


def test_save_response_rejects_what_is_not_a_record(store: Store) -> None:
    """A dict without the record's keys, or an empty id, raises ValueError naming the fix."""
    with pytest.raises(ValueError, match=r"lacks catalog_version, hash, answers; pass"):
        store.save_response({"catalog": "x"}, request_id="r")
    with pytest.raises(ValueError, match=r"request_id .* has 0 characters"):
        store.save_response({"catalog": "x"}, request_id="")


def test_costs_round_trip_through_a_cost_book(store: Store) -> None:
    """A CostBook snapshot saved and loaded restores the same book; saving replaces."""
    book = CostBook()
    book.observe([("policy", 0.002), ("policy", 0.004), ("fraud_model", 0.1)])
    store.save_costs("claims", book.snapshot())
    restored = CostBook()
    restored.restore(store.load_costs("claims"))
    assert restored.snapshot() == book.snapshot()
    store.save_costs("claims", {"policy": (1, 2.5)})
    assert store.load_costs("claims") == {"policy": (1, 2.5)}
    assert store.load_costs("other") == {}


def test_cost_books_saved_by_several_processes_at_once_take_turns(db: Backend) -> None:
    """Six stores on one database save one catalog's book together: each save replaces
    the book whole, none fails (on PostgreSQL two could both delete, then both insert)."""
    import threading

    stores = [db.open() for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def save(i: int, store: Store) -> None:
        barrier.wait(timeout=10)
        try:
            for _ in range(5):
                store.save_costs("cat", {"a": (i + 1, 1.0), "b": (i + 1, 2.0), f"p{i}": (1, 3.0)})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(i, s)) for i, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    book = stores[0].load_costs("cat")
    (last,) = (i for i in range(6) if f"p{i}" in book)  # one writer's book, whole
    assert book == {"a": (last + 1, 1.0), "b": (last + 1, 2.0), f"p{last}": (1, 3.0)}
    for store in stores:
        store.close()


def test_blobs_round_trip_and_replace(store: Store) -> None:
    """save_blob keeps bytes per (catalog, name); a second save replaces; missing is None."""
    store.save_blob("claims", "order", b"\x00\x01model")
    store.save_blob("claims", "order", b"v2")
    store.save_blob("other", "order", b"theirs")
    assert store.load_blob("claims", "order") == b"v2"
    assert store.load_blob("other", "order") == b"theirs"
    assert store.load_blob("claims", "missing") is None
    with pytest.raises(TypeError, match="must be bytes, got str"):
        store.save_blob("claims", "order", "text")  # type: ignore[arg-type]


async def _async_round_trip(store: Any, record: dict[str, Any]) -> None:
    await store.asave_response(record, request_id="async-1")
    assert await store.aget_record("async-1") == record
    assert [rid async for rid, _ in store.aiter_records(catalog="claims")] == ["async-1"]
    await store.asave_costs("claims", {"policy": (3, 1.25)})
    assert await store.aload_costs("claims") == {"policy": (3, 1.25)}
    await store.asave_blob("claims", "order", b"abc")
    assert await store.aload_blob("claims", "order") == b"abc"


@pytest.mark.asyncio
async def test_async_methods_on_asyncio(db: Backend, system: System) -> None:
    """The a-prefixed methods store and read back on an asyncio loop."""
    store: Any = db.open()
    try:
        await _async_round_trip(store, system.ask({"policy_id": "P-1", "claim": {}}).record)
    finally:
        await store.aclose()
    reopened = db.open()
    assert reopened.get_record("async-1")["catalog"] == "claims"
    reopened.close()


def test_async_methods_on_trio(db: Backend, system: System) -> None:
    """The a-prefixed methods also work under trio (through a worker thread)."""
    store: Any = db.open()
    record = system.ask({"policy_id": "P-1", "claim": {}}).record
    try:
        anyio.run(_async_round_trip, store, record, backend="trio")
    finally:
        store.close()


def test_open_store_accepts_paths_and_urls(tmp_path: Path) -> None:
    """A str path, a Path, sqlite:/// and a Store instance all open a SQLite store."""
    by_str = open_store(str(tmp_path / "a.db"))
    by_path = open_store(tmp_path / "b.db")
    by_url = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        assert isinstance(by_str, SQLiteStore)
        assert isinstance(by_path, SQLiteStore)
        assert isinstance(by_url, SQLiteStore)
        assert by_url.path == tmp_path / "c.db"
        assert open_store(by_str) is by_str
    finally:
        for s in (by_str, by_path, by_url):
            s.close()


@pytest.mark.parametrize("spec", ["mysql://db/solvi", "", "sqlite:", 42])
def test_open_store_rejects_other_forms(spec: Any) -> None:
    """Anything else raises ValueError listing the accepted forms."""
    with pytest.raises(ValueError, match=r"a file path, 'sqlite:///path/to/file.db', or"):
        open_store(spec)


def test_sqlite_store_runs_in_wal_mode(tmp_path: Path) -> None:
    """The SQLite file uses the WAL journal, so readers do not block the writer."""
    open_store(tmp_path / "w.db").close()
    assert Backend("sqlite", str(tmp_path / "w.db")).sql("PRAGMA journal_mode") == [("wal",)]


def test_sqlite_store_in_a_missing_folder_says_so(tmp_path: Path) -> None:
    """A path whose folder does not exist raises StoreError naming the path and the fix."""
    with pytest.raises(StoreError, match=r"cannot open SQLite store .*nowhere.*folder exists"):
        SQLiteStore(tmp_path / "nowhere" / "x.db")


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    """Using a closed store raises StoreError; closing twice is harmless."""
    store = SQLiteStore(tmp_path / "x.db")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="is closed; open a new one"):
        store.load_blob("c", "n")


def test_unreachable_postgres_raises_store_error() -> None:
    """A server that does not answer raises StoreError naming host, port and what to check."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreError, match=rf"127\.0\.0\.1:{port}/nobody.*server runs"):
        PostgresStore(f"postgresql://nobody@127.0.0.1:{port}/nobody", connect_timeout=2)


_POOL_AT_EXIT = """
import asyncio, sys

import anyio
import psycopg
from psycopg_pool.pool_async import AddConnection

from solvi.storage import open_store

connect = psycopg.AsyncConnection.connect.__func__


async def slow_connect(cls, *args, **kwargs):
    await asyncio.sleep(0.3)  # the server is slow to accept, as under load
    return await connect(cls, *args, **kwargs)


psycopg.AsyncConnection.connect = classmethod(slow_connect)
store = open_store(sys.argv[1])


async def growing_as_the_script_ends():
    records = [rid async for rid, _ in store.aiter_records()]
    store._apool.run_task(AddConnection(store._apool))  # the pool grows now
    await asyncio.sleep(0.05)
    return records


async def closed_by_aclose():
    [rid async for rid, _ in store.aiter_records()]
    await store.aclose()
    await asyncio.sleep(0)
    return sorted(t.get_name() for t in asyncio.all_tasks() if "solvi" in t.get_name())


print(anyio.run(growing_as_the_script_ends))
store = open_store(sys.argv[1])
print(anyio.run(closed_by_aclose))
"""


def test_a_script_ends_while_the_async_pool_opens_a_connection(db: Backend) -> None:
    """asyncio.run ends by cancelling the tasks left; psycopg_pool's workers swallow a
    cancellation that lands while they open a connection, and the script hung at exit.
    The pool now closes with its loop; aclose leaves no task of the store behind."""
    if db.kind != "postgresql":
        pytest.skip("only a PostgreSQL store keeps an async pool")
    done = subprocess.run(
        [sys.executable, "-c", _POOL_AT_EXIT, db.spec],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]
