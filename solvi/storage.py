"""Stores: where responses, the audit log, the cost book and saved blobs are kept.

`SQLiteStore` keeps everything in one file (stdlib `sqlite3`, WAL); it is the
default and suits one machine, even several processes on it. `PostgresStore`
(psycopg 3 and its pools) suits several processes or machines sharing
decisions. Both create and migrate their tables themselves, recording the
schema version in ``solvi_schema_version``. `open_store` turns a path or URL
into a store.

Every operation is written once, as a *plan* (see `solvi._db.store_plans`), and
each backend only drives plans inside its own transactions, so the two
backends cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from solvi._db.postgres_store import PostgresStore
from solvi._db.sqlite_store import SQLiteStore
from solvi._db.store_plans import PlanStore
from solvi._db.urls import locate
from solvi.audit import AuditEntry
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
        self, *, since: dt.datetime | None = None, catalog: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(request_id, record) pairs in the order they were stored."""

    def aiter_records(
        self, *, since: dt.datetime | None = None, catalog: str | None = None
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

    def audit_entries(self) -> Iterator[AuditEntry]:
        """Every audit entry, by sequence number."""

    def audit_head(self) -> tuple[int, str]:
        """The sequence number and hash of the last entry appended (0 and `GENESIS` at first)."""

    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""

    async def aclose(self) -> None:
        """`close` from async code (on PostgreSQL it also closes the async pool)."""


# -- opening a store by name ----------------------------------------------------------------


def open_store(spec: Store | str | os.PathLike[str]) -> Store:
    """A store from a Store, a file path, ``sqlite:///path`` or ``postgresql://...``.

    ``sqlite:///data/solvi.db`` is the relative path ``data/solvi.db``;
    ``sqlite:////var/solvi.db`` the absolute ``/var/solvi.db``.

    Raises:
        ValueError: `spec` is none of the accepted forms.
        StoreError: the store cannot be opened.
    """
    if isinstance(spec, PlanStore | Store):
        return spec
    where = locate(spec, "store=")
    if where.kind == "postgresql":
        return PostgresStore(where.target)
    return SQLiteStore(where.target)
