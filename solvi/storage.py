"""Stores: where responses, the audit log, the cost book and saved blobs are kept.

`SQLiteStore` keeps everything in one file (stdlib `sqlite3`, WAL); it is the
default and suits one machine, even several processes on it. `PostgresStore`
(psycopg 3 and its pools) suits several processes or machines sharing
decisions. Both create and migrate their tables themselves, recording the
schema version as the ``store`` row of ``solvi_migrations`` (the table a journal in
the same database keeps its own row in; a store made before it, with
``solvi_schema_version``, is upgraded when opened). `open_store` turns a path or URL
into a store; ``read_only=True`` opens one for auditing, writing nothing.

Every operation is written once, as a *plan* (see `solvi._db.store_plans`), and
each backend only drives plans inside its own transactions, so the two
backends cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from solvi._db.postgres_store import PostgresStore
from solvi._db.sqlite_store import SQLiteStore
from solvi._db.store_plans import PlanStore
from solvi._db.urls import locate
from solvi.audit import AuditEntry, AuditMark, StoredResponse
from solvi.errors import DuplicateRequestError, MissingRecordError, StoreError

__all__ = [
    "DuplicateRequestError",
    "MissingRecordError",
    "PostgresStore",
    "SQLiteStore",
    "Store",
    "StoreError",
    "open_store",
]


@runtime_checkable
class Store(Protocol):
    """What a System needs from a store; `SQLiteStore` and `PostgresStore` provide it."""

    def save_response(self, record: Mapping[str, Any], *, request_id: str) -> None:
        """Keep a record and append its audit entries, in one transaction."""

    async def asave_response(self, record: Mapping[str, Any], *, request_id: str) -> None:
        """`save_response` without blocking the event loop."""

    def get_record(self, request_id: str) -> dict[str, Any]:
        """The record stored under `request_id`."""

    async def aget_record(self, request_id: str) -> dict[str, Any]:
        """`get_record` without blocking the event loop."""

    def iter_records(
        self,
        *,
        since: dt.datetime | None = None,
        catalog: str | None = None,
        on_damaged: Callable[[str, StoreError], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(request_id, record) pairs stored before the iteration began, in storage order.

        A record that is not JSON raises `StoreError`, or with `on_damaged` is
        handed to it (request id, error) and passed over.
        """

    def aiter_records(
        self,
        *,
        since: dt.datetime | None = None,
        catalog: str | None = None,
        on_damaged: Callable[[str, StoreError], None] | None = None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """`iter_records` without blocking the event loop."""

    def save_costs(self, catalog: str, snapshot: Mapping[str, tuple[int, float]]) -> None:
        """Replace the saved cost book of `catalog`."""

    async def asave_costs(self, catalog: str, snapshot: Mapping[str, tuple[int, float]]) -> None:
        """`save_costs` without blocking the event loop."""

    def load_costs(self, catalog: str) -> dict[str, tuple[int, float]]:
        """The saved cost book of `catalog` (empty when none was saved)."""

    async def aload_costs(self, catalog: str) -> dict[str, tuple[int, float]]:
        """`load_costs` without blocking the event loop."""

    def save_blob(self, catalog: str, name: str, data: bytes) -> None:
        """Keep `data` under (catalog, name), replacing what was there."""

    async def asave_blob(self, catalog: str, name: str, data: bytes) -> None:
        """`save_blob` without blocking the event loop."""

    def load_blob(self, catalog: str, name: str) -> bytes | None:
        """The blob saved under (catalog, name), or None."""

    async def aload_blob(self, catalog: str, name: str) -> bytes | None:
        """`load_blob` without blocking the event loop."""

    def audit_entries(self, *, after: int = 0) -> Iterator[AuditEntry]:
        """Every audit entry after sequence number `after`, in order."""

    def audit_head(self) -> tuple[int, str]:
        """The sequence number and hash of the last entry appended (0 and `GENESIS` at first)."""

    def audit_mark(self) -> AuditMark:
        """The chain head and the newest response's row, read in one snapshot."""

    def stored_responses(self, *, upto: int) -> Iterator[StoredResponse]:
        """The rows of the responses table up to row `upto`, as stored."""

    def missing_tables(self) -> tuple[str, ...]:
        """The tables of decisions and of the audit log that the database lacks."""

    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""

    async def aclose(self) -> None:
        """`close` from async code (on PostgreSQL it also closes the async pool)."""

    def __enter__(self) -> Store:
        """The store itself: ``with open_store(path) as store:`` closes it afterwards."""

    def __exit__(self, *exc: object) -> None:
        """`close`."""


# -- opening a store by name ----------------------------------------------------------------


def open_store(spec: Store | str | os.PathLike[str], *, read_only: bool = False) -> Store:
    """A store from a Store, a file path, ``sqlite:///path`` or ``postgresql://...``.

    ``sqlite:///data/solvi.db`` is the relative path ``data/solvi.db``;
    ``sqlite:////var/solvi.db`` the absolute ``/var/solvi.db``.

    Args:
        spec: where the store is.
        read_only: open an existing store without writing anything, not even
            its schema (for auditing): a missing file, or a database without
            solvi's tables, is refused, and every write raises `StoreError`.
            A Store passed in is returned as it is.

    Raises:
        ValueError: `spec` is none of the accepted forms.
        StoreError: the store cannot be opened; read only, also when it does
            not exist or is not a solvi store (the message says what it is).
    """
    if isinstance(spec, PlanStore | Store):
        return spec
    where = locate(spec, "store=")
    if where.kind == "postgresql":
        return PostgresStore(where.target, read_only=read_only)
    return SQLiteStore(where.target, read_only=read_only)
