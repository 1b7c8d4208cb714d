"""Shared store machinery: SQL dialects, the schema and its steps, and plans.

Every operation is written once, as a *plan*: a generator that yields SQL
statements and receives their rows. Each backend only drives plans inside its
own transactions, so the two backends cannot drift apart. `PlanStore` turns
plans into the public operations of a store; `SQLiteStore` and `PostgresStore`
add only the connections and transactions. The store's version is its row in
the one migration table (`solvi._db.migrations`), which the journal shares.
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from solvi._db import migrations
from solvi.audit import (
    GENESIS,
    AuditEntry,
    AuditMark,
    StoredResponse,
    _chain,
    _record_text,
    _response_items,
)
from solvi.errors import DuplicateRequestError, MissingRecordError, StoreError
from solvi.inputs import check_request_id
from solvi.record import read_stored_json

__all__ = [
    "POSTGRES",
    "SCHEMA_VERSION",
    "SQLITE",
    "STORE",
    "STORE_TABLES",
    "Dialect",
    "Plan",
    "PlanStore",
    "Row",
    "Statement",
    "T",
    "drive",
    "inspect_plan",
]

T = TypeVar("T")
Row = tuple[Any, ...]
Statement = tuple[str, tuple[Any, ...]]
#: Yields statements, receives each one's rows, returns the operation's result.
Plan = Generator[Statement, list[Row], T]

_BATCH = 200


# -- SQL dialects and the schema --------------------------------------------------------


@attrs.frozen
class Dialect:
    """How the two databases spell what the schema and the plans need."""

    name: str
    #: how messages name a database of this kind
    label: str
    #: the names of the tables in the store's schema, one per row
    tables_sql: str
    id_column: str
    time: str
    blob: str
    real: str
    integer: str
    lock_head: str
    #: taken first by a migration, so two processes never migrate at once (None:
    #: the transaction's own write lock is enough)
    migrate_lock: Statement | None

    def stamp(self, when: dt.datetime) -> Any:
        """A UTC time as the database stores it (SQLite: ISO text, sortable)."""
        when = when.astimezone(dt.UTC)
        if self.name == "sqlite":
            return when.isoformat(timespec="microseconds")
        return when


SQLITE = Dialect(
    name="sqlite",
    label="SQLite",
    tables_sql=(
        "SELECT name FROM sqlite_master WHERE type = 'table' "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
    ),
    id_column="INTEGER PRIMARY KEY AUTOINCREMENT",
    time="TEXT",
    blob="BLOB",
    real="REAL",
    integer="INTEGER",
    lock_head="",
    migrate_lock=None,
)
POSTGRES = Dialect(
    name="postgresql",
    label="PostgreSQL",
    tables_sql=(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = current_schema() ORDER BY table_name"
    ),
    id_column="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    time="TIMESTAMPTZ",
    blob="BYTEA",
    real="DOUBLE PRECISION",
    integer="BIGINT",
    lock_head=" FOR UPDATE",
    # pg_advisory_xact_lock key "solvi" in ASCII, held to the end of the transaction
    migrate_lock=("SELECT pg_advisory_xact_lock(%s)", (0x736F6C7669,)),
)


def _schema_v1(d: Dialect) -> list[Statement]:
    """Responses, the audit log and its head, costs and blobs."""
    return [
        (
            f"CREATE TABLE solvi_responses (id {d.id_column}, request_id TEXT NOT NULL UNIQUE, "
            f"catalog TEXT NOT NULL, catalog_version TEXT NOT NULL, hash TEXT NOT NULL, "
            f"created {d.time} NOT NULL, record TEXT NOT NULL)",
            (),
        ),
        ("CREATE INDEX solvi_responses_catalog ON solvi_responses (catalog, id)", ()),
        ("CREATE INDEX solvi_responses_created ON solvi_responses (created)", ()),
        (
            f"CREATE TABLE solvi_audit (seq {d.integer} PRIMARY KEY, kind TEXT NOT NULL, "
            f"request_id TEXT NOT NULL, payload TEXT NOT NULL, prev_hash TEXT NOT NULL, "
            f"hash TEXT NOT NULL)",
            (),
        ),
        # One row: the last entry appended. Appenders lock it, so the chain never forks.
        (
            f"CREATE TABLE solvi_audit_head (id INTEGER PRIMARY KEY CHECK (id = 1), "
            f"seq {d.integer} NOT NULL, hash TEXT NOT NULL)",
            (),
        ),
        ("INSERT INTO solvi_audit_head (id, seq, hash) VALUES (1, 0, %s)", (GENESIS,)),
        (
            f"CREATE TABLE solvi_costs (catalog TEXT NOT NULL, part TEXT NOT NULL, "
            f"samples {d.integer} NOT NULL, mean_ms {d.real} NOT NULL, "
            f"PRIMARY KEY (catalog, part))",
            (),
        ),
        (
            f"CREATE TABLE solvi_blobs (catalog TEXT NOT NULL, name TEXT NOT NULL, "
            f"data {d.blob} NOT NULL, updated {d.time} NOT NULL, PRIMARY KEY (catalog, name))",
            (),
        ),
    ]


def _store_too_new(where: str, found: int, supported: int) -> str:
    return (
        f"store {where} has schema version {found}, but this solvi knows versions up to "
        f"{supported}; upgrade solvi to open it"
    )


#: The store's row in ``solvi_migrations``: step n takes a store from version n - 1
#: to n. A new version is one more step appended here; stores migrate when opened.
STORE = migrations.Component(
    name="store",
    steps=(lambda d: migrations.statements(*_schema_v1(d)),),
    legacy_table="solvi_schema_version",
    error=StoreError,
    too_new=_store_too_new,
)
SCHEMA_VERSION = STORE.version

#: The tables that hold decisions and their audit log: a store lacking one is damaged.
STORE_TABLES = ("solvi_responses", "solvi_audit", "solvi_audit_head")
#: Every table a store has had: a database with none of them is not a solvi store
#: (with only the migration table, it is one when that table has the store's row).
_SCHEMA_TABLES = frozenset(
    {*STORE_TABLES, migrations.TABLE, STORE.legacy_table, "solvi_costs", "solvi_blobs"}
)


def _not_a_store(d: Dialect, where: str, tables: list[str]) -> str:
    """Why a database without solvi's tables is refused, naming what it holds instead."""
    if not tables:
        holds = "it has no tables"
    elif "journal_requests" in tables:
        holds = "it holds a solvi journal, which keeps no decisions"
    else:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        holds = f"its tables are {shown}"
    return (
        f"{where} is a {d.label} database without solvi's tables ({holds}), so it is not a "
        f"solvi store; give the store a System wrote (System(store=...))"
    )


def inspect_plan(d: Dialect, where: str) -> Plan[int | None]:
    """Check, without writing, that a database is a solvi store; its schema version
    (None when no version is kept: the store is damaged, `verify` says how).

    A store made before ``solvi_migrations`` (its version in ``solvi_schema_version``)
    is read as it is: the upgrade waits for a writable open.

    Raises:
        StoreError: the database has none of solvi's tables, or a newer schema.
    """
    rows = yield (d.tables_sql, ())
    tables = [str(r[0]) for r in rows]
    ours = _SCHEMA_TABLES.intersection(tables)
    if not ours:
        raise StoreError(_not_a_store(d, where, tables))
    version = yield from migrations.stored_version_plan(STORE, set(tables), where)
    if version is None and ours == {migrations.TABLE}:
        rows = yield (
            f"SELECT 1 FROM {migrations.TABLE} WHERE component = %s",
            (STORE.name,),
        )
        if not rows:  # only another component's row: a journal's file, say
            raise StoreError(_not_a_store(d, where, tables))
    return version


def _missing_tables_plan(d: Dialect) -> Plan[tuple[str, ...]]:
    rows = yield (d.tables_sql, ())
    present = {str(r[0]) for r in rows}
    return tuple(t for t in STORE_TABLES if t not in present)


# -- plans: every operation, once for both backends -------------------------------------


def _dump_record(record: Mapping[str, Any], request_id: str) -> str:
    missing = [k for k in ("catalog", "catalog_version", "hash", "answers") if k not in record]
    if not isinstance(record, Mapping) or missing:
        msg = (
            f"the record for request {request_id!r} lacks {', '.join(missing) or 'everything'}; "
            f"pass a Response's .record"
        )
        raise ValueError(msg)
    try:
        # Not sorted: the answers keep the order of the System's questions.
        return _record_text(record)
    except (TypeError, ValueError) as exc:
        msg = f"the record for request {request_id!r} is not JSON data ({exc}); pass .record"
        raise ValueError(msg) from exc


def duplicate_request(request_id: str) -> DuplicateRequestError:
    """The error of a request id that a stored response holds already."""
    msg = (
        f"a response is already stored under request id {request_id!r}; request ids are "
        f"unique, so pass a new one"
    )
    return DuplicateRequestError(msg, request_id=request_id)


def _save_plan(
    d: Dialect, record: Mapping[str, Any], request_id: str, text: str, now: dt.datetime
) -> Plan[None]:
    head = yield (f"SELECT seq, hash FROM solvi_audit_head WHERE id = 1{d.lock_head}", ())
    taken = yield ("SELECT 1 FROM solvi_responses WHERE request_id = %s", (request_id,))
    if taken:
        raise duplicate_request(request_id)
    seq, prev = int(head[0][0]), str(head[0][1])
    entries = _chain(seq, prev, _response_items(record, request_id, now, text))
    for e in entries:
        yield (
            "INSERT INTO solvi_audit (seq, kind, request_id, payload, prev_hash, hash) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (e.seq, e.kind, e.request_id, e.payload, e.prev_hash, e.hash),
        )
    last = entries[-1]
    yield ("UPDATE solvi_audit_head SET seq = %s, hash = %s WHERE id = 1", (last.seq, last.hash))
    yield (
        "INSERT INTO solvi_responses (request_id, catalog, catalog_version, hash, created, "
        "record) VALUES (%s, %s, %s, %s, %s, %s)",
        (
            request_id,
            str(record["catalog"]),
            str(record["catalog_version"]),
            str(record["hash"]),
            d.stamp(now),
            text,
        ),
    )


def _get_plan(request_id: str) -> Plan[dict[str, Any]]:
    check_request_id(request_id)
    rows = yield ("SELECT record FROM solvi_responses WHERE request_id = %s", (request_id,))
    if not rows:
        msg = (
            f"no response is stored under request id {request_id!r}; list the stored ones "
            f"with iter_records()"
        )
        raise MissingRecordError(msg, request_id=request_id)
    return _load_record(request_id, rows[0][0])


def _load_record(request_id: object, text: object) -> dict[str, Any]:
    """A stored record's text as data; a StoreError when it is not a JSON object."""
    if isinstance(text, str | bytes):
        record, problem = read_stored_json(text)
    else:
        record, problem = None, f"is not text (it is {type(text).__name__})"
    if problem is None:
        if isinstance(record, dict):
            return record
        problem = f"is not a JSON object (it is {type(record).__name__})"
    msg = (
        f"the stored record of request {request_id!r} {problem}; it was written outside "
        f"solvi: run `solvi audit verify` on the store"
    )
    raise StoreError(msg)


def _loaded(
    rows: Sequence[tuple[Any, ...]], on_damaged: Callable[[str, StoreError], None] | None
) -> Iterator[tuple[str, dict[str, Any]]]:
    for _, request_id, text in rows:
        try:
            record = _load_record(request_id, text)
        except StoreError as exc:
            if on_damaged is None:
                raise
            on_damaged(str(request_id), exc)
            continue
        yield str(request_id), record


def _last_row_plan() -> Plan[int]:
    rows = yield ("SELECT COALESCE(MAX(id), 0) FROM solvi_responses", ())
    return int(rows[0][0])


def _records_plan(
    d: Dialect, after: int, upto: int, since: dt.datetime | None, catalog: str | None
) -> Plan[list[Row]]:
    sql = "SELECT id, request_id, record FROM solvi_responses WHERE id > %s AND id <= %s"
    params: list[Any] = [after, upto]
    if since is not None:
        sql += " AND created >= %s"
        params.append(d.stamp(since))
    if catalog is not None:
        sql += " AND catalog = %s"
        params.append(catalog)
    rows = yield (f"{sql} ORDER BY id LIMIT %s", (*params, _BATCH))
    return rows


def _save_costs_plan(
    d: Dialect, catalog: str, snapshot: Mapping[str, tuple[int, float]]
) -> Plan[None]:
    # The audit head's lock (SQLite's write lock already) makes saves of one catalog
    # take turns: two PostgreSQL transactions could each delete, then both insert.
    yield (f"SELECT seq FROM solvi_audit_head WHERE id = 1{d.lock_head}", ())
    yield ("DELETE FROM solvi_costs WHERE catalog = %s", (catalog,))
    for part, (n, mean) in snapshot.items():
        yield (
            "INSERT INTO solvi_costs (catalog, part, samples, mean_ms) VALUES (%s, %s, %s, %s)",
            (catalog, str(part), int(n), float(mean)),
        )


def _load_costs_plan(catalog: str) -> Plan[dict[str, tuple[int, float]]]:
    rows = yield (
        "SELECT part, samples, mean_ms FROM solvi_costs WHERE catalog = %s ORDER BY part",
        (catalog,),
    )
    return {str(p): (int(n), float(m)) for p, n, m in rows}


def _save_blob_plan(
    d: Dialect, catalog: str, name: str, data: bytes, now: dt.datetime
) -> Plan[None]:
    yield (
        "INSERT INTO solvi_blobs (catalog, name, data, updated) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (catalog, name) DO UPDATE SET data = excluded.data, "
        "updated = excluded.updated",
        (catalog, name, bytes(data), d.stamp(now)),
    )


def _load_blob_plan(catalog: str, name: str) -> Plan[bytes | None]:
    rows = yield (
        "SELECT data FROM solvi_blobs WHERE catalog = %s AND name = %s",
        (catalog, name),
    )
    return bytes(rows[0][0]) if rows else None


def _stored_plan(after: int, upto: int) -> Plan[list[Row]]:
    rows = yield (
        "SELECT id, request_id, catalog, catalog_version, hash, created, record "
        "FROM solvi_responses WHERE id > %s AND id <= %s ORDER BY id LIMIT %s",
        (after, upto, _BATCH),
    )
    return rows


def _mark_plan() -> Plan[AuditMark]:
    # One statement, so one snapshot on PostgreSQL too: every response up to
    # `last_row` has its entries up to the head read with it.
    rows = yield (
        "SELECT (SELECT seq FROM solvi_audit_head WHERE id = 1), "
        "(SELECT hash FROM solvi_audit_head WHERE id = 1), "
        "(SELECT COALESCE(MAX(id), 0) FROM solvi_responses)",
        (),
    )
    head_seq, head_hash, last_row = rows[0]
    return AuditMark(head_seq, head_hash, int(last_row))


def _audit_plan(after: int) -> Plan[list[Row]]:
    rows = yield (
        "SELECT seq, kind, request_id, payload, prev_hash, hash FROM solvi_audit "
        "WHERE seq > %s ORDER BY seq LIMIT %s",
        (after, _BATCH),
    )
    return rows


def _head_plan() -> Plan[tuple[int, str]]:
    rows = yield ("SELECT seq, hash FROM solvi_audit_head WHERE id = 1", ())
    return int(rows[0][0]), str(rows[0][1])


def drive(execute: Callable[[str, tuple[Any, ...]], list[Row]], plan: Plan[T]) -> T:
    """Run a plan to its end with `execute` (one statement in, its rows out)."""
    try:
        statement = next(plan)
        while True:
            statement = plan.send(execute(*statement))
    except StopIteration as done:
        result: T = done.value
        return result


def _check_blob(catalog: str, name: str, data: object) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):
        msg = f"blob {name!r} of catalog {catalog!r} must be bytes, got {type(data).__name__}"
        raise TypeError(msg)
    return bytes(data)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class PlanStore(abc.ABC):
    """The public operations of a store, on top of a backend that runs plans."""

    _dialect: Dialect
    #: opened read only (`open_store(..., read_only=True)`): every write is refused
    read_only: bool = False

    def _check_writable(self) -> None:
        """Refuse a write on a store opened read only (a backend calls it before one)."""
        if self.read_only:
            msg = (
                f"{self!r} was opened read only (for auditing), so it writes nothing; "
                f"open it with open_store(...) to save"
            )
            raise StoreError(msg)

    @abc.abstractmethod
    def _run(self, plan: Plan[T], *, write: bool) -> T:
        """Run `plan` in one transaction (`write`: one that appends) and return its result."""

    @abc.abstractmethod
    async def _arun(self, plan: Plan[T], *, write: bool) -> T:
        """`_run` without blocking the event loop."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connections."""

    # -- responses ---------------------------------------------------------------

    def save_plan(self, record: Mapping[str, Any], request_id: str) -> Plan[None]:
        """The plan `save_response` runs: for a journal sharing this store's database,
        which runs it in the transaction that closes the request."""
        self._check_writable()
        check_request_id(request_id)
        text = _dump_record(record, request_id)
        return _save_plan(self._dialect, record, request_id, text, _now())

    def save_response(self, record: Mapping[str, Any], *, request_id: str) -> None:
        """Keep a response's record and append its audit entries, in one transaction.

        Appends one ``decision`` entry, then one ``safeguard`` entry per item of
        ``record["safeguards"]``.

        Args:
            record: a `Response.record`.
            request_id: the request's id, unique in the store.

        Raises:
            DuplicateRequestError: a response is already stored under `request_id`.
            ValueError: `record` is not a response record, or `request_id` is empty.
        """
        self._run(self.save_plan(record, request_id), write=True)

    async def asave_response(self, record: Mapping[str, Any], *, request_id: str) -> None:
        """`save_response` for async code: the event loop never waits on the database."""
        await self._arun(self.save_plan(record, request_id), write=True)

    def get_record(self, request_id: str) -> dict[str, Any]:
        """The record stored under `request_id`, as it was saved.

        Raises:
            MissingRecordError: nothing is stored under that id (also a `LookupError`).
        """
        return self._run(_get_plan(request_id), write=False)

    async def aget_record(self, request_id: str) -> dict[str, Any]:
        """`get_record` for async code."""
        return await self._arun(_get_plan(request_id), write=False)

    def iter_records(
        self,
        *,
        since: dt.datetime | None = None,
        catalog: str | None = None,
        on_damaged: Callable[[str, StoreError], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(request_id, record) pairs in the order they were stored, read in batches.

        Only records stored before the iteration began come back: records saved
        meanwhile (by this process or another) are left for the next iteration,
        so a pass over a store that is being written to ends.

        Args:
            since: only records stored at or after this time (a naive time is UTC).
            catalog: only records of the catalog with this name.
            on_damaged: called with the request id and the error for each stored
                record that is not a JSON object, which is then passed over; without
                it the first such record raises.

        Raises:
            StoreError: a stored record is not JSON (it was written outside solvi).
        """
        since = _aware(since)
        upto = self._run(_last_row_plan(), write=False)
        after = 0
        while True:
            plan = _records_plan(self._dialect, after, upto, since, catalog)
            rows = self._run(plan, write=False)
            yield from _loaded(rows, on_damaged)
            if len(rows) < _BATCH:
                return
            after = int(rows[-1][0])

    async def aiter_records(
        self,
        *,
        since: dt.datetime | None = None,
        catalog: str | None = None,
        on_damaged: Callable[[str, StoreError], None] | None = None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """`iter_records` for async code."""
        since = _aware(since)
        upto = await self._arun(_last_row_plan(), write=False)
        after = 0
        while True:
            plan = _records_plan(self._dialect, after, upto, since, catalog)
            rows = await self._arun(plan, write=False)
            for pair in _loaded(rows, on_damaged):
                yield pair
            if len(rows) < _BATCH:
                return
            after = int(rows[-1][0])

    # -- costs and blobs -----------------------------------------------------------

    def save_costs(self, catalog: str, snapshot: Mapping[str, tuple[int, float]]) -> None:
        """Replace the saved cost book of `catalog` with a `CostBook.snapshot()`."""
        self._run(_save_costs_plan(self._dialect, catalog, snapshot), write=True)

    async def asave_costs(self, catalog: str, snapshot: Mapping[str, tuple[int, float]]) -> None:
        """`save_costs` for async code."""
        await self._arun(_save_costs_plan(self._dialect, catalog, snapshot), write=True)

    def load_costs(self, catalog: str) -> dict[str, tuple[int, float]]:
        """The saved cost book of `catalog`, for `CostBook.restore` (empty when none)."""
        return self._run(_load_costs_plan(catalog), write=False)

    async def aload_costs(self, catalog: str) -> dict[str, tuple[int, float]]:
        """`load_costs` for async code."""
        return await self._arun(_load_costs_plan(catalog), write=False)

    def save_blob(self, catalog: str, name: str, data: bytes) -> None:
        """Keep `data` under (catalog, name), replacing what was there.

        Raises:
            TypeError: `data` is not bytes.
        """
        blob = _check_blob(catalog, name, data)
        self._run(_save_blob_plan(self._dialect, catalog, name, blob, _now()), write=True)

    async def asave_blob(self, catalog: str, name: str, data: bytes) -> None:
        """`save_blob` for async code."""
        blob = _check_blob(catalog, name, data)
        await self._arun(_save_blob_plan(self._dialect, catalog, name, blob, _now()), write=True)

    def load_blob(self, catalog: str, name: str) -> bytes | None:
        """The blob saved under (catalog, name), or None when there is none."""
        return self._run(_load_blob_plan(catalog, name), write=False)

    async def aload_blob(self, catalog: str, name: str) -> bytes | None:
        """`load_blob` for async code."""
        return await self._arun(_load_blob_plan(catalog, name), write=False)

    # -- audit log -------------------------------------------------------------------

    def audit_entries(self, *, after: int = 0) -> Iterator[AuditEntry]:
        """Every audit entry after sequence number `after`, in order, read in batches.

        The fields are as the database holds them: `verify` checks their types.
        """
        while True:
            rows = self._run(_audit_plan(after), write=False)
            for seq, kind, request_id, payload, prev_hash, digest in rows:
                yield AuditEntry(int(seq), kind, request_id, payload, prev_hash, digest)
                after = int(seq)
            if len(rows) < _BATCH:
                return

    def audit_head(self) -> tuple[int, str]:
        """The sequence number and hash of the last entry appended (0 and `GENESIS` at first)."""
        return self._run(_head_plan(), write=False)

    def audit_mark(self) -> AuditMark:
        """The chain head and the newest response's row, read in one snapshot (for `verify`)."""
        return self._run(_mark_plan(), write=False)

    def stored_responses(self, *, upto: int) -> Iterator[StoredResponse]:
        """Every row of the responses table up to row `upto`, in row order, as stored."""
        after = 0
        while True:
            rows = self._run(_stored_plan(after, upto), write=False)
            for row in rows:
                yield StoredResponse(*row)
                after = int(row[0])
            if len(rows) < _BATCH:
                return

    def missing_tables(self) -> tuple[str, ...]:
        """The tables of decisions and of the audit log that the database lacks."""
        return self._run(_missing_tables_plan(self._dialect), write=False)


def _aware(when: dt.datetime | None) -> dt.datetime | None:
    if when is None:
        return None
    if not isinstance(when, dt.datetime):
        msg = f"since must be a datetime, got {type(when).__name__}"
        raise TypeError(msg)
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when
