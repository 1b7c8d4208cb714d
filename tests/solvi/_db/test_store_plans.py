"""The store's plans driven with canned rows: the statements each operation asks for, what
it makes of the rows it gets back, and each refusal's message (no database anywhere)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from solvi._db.store_plans import (
    POSTGRES,
    SQLITE,
    Dialect,
    Plan,
    PlanStore,
    Row,
    T,
    drive,
    inspect_plan,
)
from solvi.audit import GENESIS, entry_hash
from solvi.errors import DuplicateRequestError, MissingRecordError, StoreError

#: what the canned database answers a statement with
Answer = Callable[[str, tuple[Any, ...]], list[Row]]


class Canned:
    """An `execute` for `drive`: notes each statement, answers from `answer`."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, sql: str, params: tuple[Any, ...]) -> list[Row]:
        self.asked.append((sql, params))
        return self.answer(sql, params)

    @property
    def verbs(self) -> list[str]:
        """The first two words of each statement asked, in order."""
        return [" ".join(sql.split()[:2]) for sql, _ in self.asked]


def by_prefix(table: dict[str, list[Row]]) -> Answer:
    """Answer each statement with the rows of the first prefix it starts with, else none."""

    def answer(sql: str, _params: tuple[Any, ...]) -> list[Row]:
        return next((rows for prefix, rows in table.items() if sql.startswith(prefix)), [])

    return answer


class CannedStore(PlanStore):
    """A PlanStore whose every transaction is a canned `execute`."""

    def __init__(self, answer: Answer, *, dialect: Dialect = SQLITE, read_only: bool = False):
        self._dialect = dialect
        self.read_only = read_only
        self.db = Canned(answer)
        self.writes: list[bool] = []

    def __repr__(self) -> str:
        return "<CannedStore>"

    def _run(self, plan: Plan[T], *, write: bool) -> T:
        self.writes.append(write)
        return drive(self.db, plan)

    async def _arun(self, plan: Plan[T], *, write: bool) -> T:
        return self._run(plan, write=write)

    def close(self) -> None:
        """Nothing to release."""


def _tables(*names: str) -> list[Row]:
    return [(n,) for n in names]


NOT_A_STORE = (
    "x.db is a SQLite database without solvi's tables ({}), so it is not a solvi store; "
    "give the store a System wrote (System(store=...))"
)


@pytest.mark.parametrize(
    ("tables", "holds"),
    [
        ((), "it has no tables"),
        (
            ("journal_entries", "journal_requests"),
            "it holds a solvi journal, which keeps no decisions",
        ),
        (("a", "b", "c", "d", "e", "f"), "its tables are a, b, c, d, e, ..."),
        (("solvi_migrations",), "its tables are solvi_migrations"),
    ],
)
def test_inspect_refuses_a_database_that_is_not_a_store(
    tables: tuple[str, ...], holds: str
) -> None:
    """No table of a store (or only another component's version row): refused, saying what
    the database holds instead."""
    db = Canned(by_prefix({SQLITE.tables_sql: _tables(*tables)}))
    with pytest.raises(StoreError) as caught:
        drive(db, inspect_plan(SQLITE, "x.db"))
    assert str(caught.value) == NOT_A_STORE.format(holds)


def test_inspect_reads_the_version_and_writes_nothing() -> None:
    """A current store: the table list, then its row of solvi_migrations; version 1."""
    tables = _tables("solvi_audit", "solvi_audit_head", "solvi_migrations", "solvi_responses")
    db = Canned(by_prefix({SQLITE.tables_sql: tables, "SELECT version": [(1,)]}))
    assert drive(db, inspect_plan(SQLITE, "x.db")) == 1
    assert db.asked[1] == ("SELECT version FROM solvi_migrations WHERE component = %s", ("store",))
    assert db.verbs == ["SELECT name", "SELECT version"]


def test_inspect_refuses_a_newer_store_naming_both_versions() -> None:
    """A version above this solvi's is refused with the upgrade to make."""
    tables = _tables("solvi_migrations", "solvi_responses")
    db = Canned(by_prefix({SQLITE.tables_sql: tables, "SELECT version": [(2,)]}))
    with pytest.raises(
        StoreError,
        match=r"^store x\.db has schema version 2, but this solvi "
        r"knows versions up to 1; upgrade solvi to open it$",
    ):
        drive(db, inspect_plan(SQLITE, "x.db"))


RECORD: dict[str, Any] = {
    "catalog": "claims",
    "catalog_version": "v1",
    "hash": "h" * 8,
    "answers": {"approve": {"status": "decided", "value": True}},
    "safeguards": [{"kind": "error", "part": "p", "fact": "f", "message": "boom"}],
}


def test_saving_chains_audit_entries_after_the_head_then_the_response() -> None:
    """save_response reads the head, checks the id, appends a decision and a safeguard
    entry chained from the head, moves the head and inserts the response, in one write."""
    store = CannedStore(by_prefix({"SELECT seq, hash FROM solvi_audit_head": [(4, GENESIS)]}))
    store.save_response(RECORD, request_id="r1")
    assert store.writes == [True]
    assert store.db.verbs == [
        "SELECT seq,",
        "SELECT 1",
        "INSERT INTO",
        "INSERT INTO",
        "UPDATE solvi_audit_head",
        "INSERT INTO",
    ]
    first, second = store.db.asked[2][1], store.db.asked[3][1]
    assert (first[0], first[1], first[2], first[4]) == (5, "decision", "r1", GENESIS)
    assert first[5] == entry_hash(GENESIS, 5, "decision", "r1", first[3])
    assert (second[0], second[1], second[4]) == (6, "safeguard", first[5])
    assert store.db.asked[4][1] == (6, second[5])
    inserted = store.db.asked[5][1]
    assert inserted[:4] == ("r1", "claims", "v1", "h" * 8)
    assert json.loads(inserted[5]) == RECORD


def test_saving_under_a_taken_id_is_refused_before_any_write() -> None:
    """A row under the id: DuplicateRequestError naming it, and no INSERT is asked for."""
    store = CannedStore(
        by_prefix({"SELECT seq": [(0, GENESIS)], "SELECT 1 FROM solvi_responses": [(1,)]})
    )
    with pytest.raises(DuplicateRequestError) as caught:
        store.save_response(RECORD, request_id="r1")
    assert str(caught.value) == (
        "a response is already stored under request id 'r1'; request ids are unique, so pass "
        "a new one"
    )
    assert caught.value.request_id == "r1"
    assert all(not verb.startswith(("INSERT", "UPDATE")) for verb in store.db.verbs)


@pytest.mark.parametrize(
    ("record", "request_id", "message"),
    [
        (
            {"catalog": "c"},
            "r1",
            "the record for request 'r1' lacks catalog_version, hash, "
            "answers; pass a Response's .record",
        ),
        (
            {**RECORD, "x": float("nan")},
            "r1",
            "the record for request 'r1' is not JSON data "
            "(Out of range float values are not JSON compliant); pass .record",
        ),
        (RECORD, "", "request_id '' has 0 characters; pass text of 1 to 1000 characters"),
    ],
)
def test_a_save_that_is_not_a_response_is_refused_before_any_statement(
    record: dict[str, Any], request_id: str, message: str
) -> None:
    """The record and the id are checked before the plan asks the database anything."""
    store = CannedStore(by_prefix({}))
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        store.save_response(record, request_id=request_id)
    assert store.db.asked == []


def test_a_read_only_store_refuses_to_save() -> None:
    """Opened read only, save_response names the store and how to open it for writing."""
    store = CannedStore(by_prefix({}), read_only=True)
    with pytest.raises(
        StoreError,
        match=r"^<CannedStore> was opened read only \(for auditing\), "
        r"so it writes nothing; open it with open_store\(\.\.\.\) to save$",
    ):
        store.save_response(RECORD, request_id="r1")


@pytest.mark.parametrize(
    ("rows", "error", "message"),
    [
        (
            [],
            MissingRecordError,
            "no response is stored under request id 'r9'; list the stored ones with iter_records()",
        ),
        (
            [("[1, 2]",)],
            StoreError,
            "the stored record of request 'r9' is not a JSON object "
            "(it is list); it was written outside solvi: run `solvi audit verify` on the store",
        ),
        (
            [("{",)],
            StoreError,
            "the stored record of request 'r9' is not JSON (Expecting "
            "property name enclosed in double quotes: line 1 column 2 (char 1)); it was written "
            "outside solvi: run `solvi audit verify` on the store",
        ),
    ],
)
def test_reading_a_missing_or_damaged_record_says_what_to_do(
    rows: list[Row], error: type[Exception], message: str
) -> None:
    """get_record: nothing under the id, or a stored text that is not a JSON object."""
    store = CannedStore(by_prefix({"SELECT record": rows}))
    with pytest.raises(error) as caught:
        store.get_record("r9")
    assert str(caught.value) == message
    assert store.writes == [False]


def test_records_are_read_in_batches_up_to_the_last_row_at_the_start() -> None:
    """iter_records fixes the last row first, then pages by id, 200 at a time, so rows
    stored meanwhile are left out."""
    stored = [(i, f"r{i}", json.dumps({"n": i})) for i in range(1, 451)]

    def answer(sql: str, params: tuple[Any, ...]) -> list[Row]:
        if sql.startswith("SELECT COALESCE(MAX(id), 0)"):
            return [(420,)]
        after, upto, limit = params
        return [r for r in stored if after < r[0] <= upto][:limit]

    store = CannedStore(answer)
    got = list(store.iter_records())
    assert [rid for rid, _ in got] == [f"r{i}" for i in range(1, 421)]
    assert got[-1][1] == {"n": 420}
    assert [params for _, params in store.db.asked[1:]] == [
        (0, 420, 200),
        (200, 420, 200),
        (400, 420, 200),
    ]


def test_records_filtered_by_time_and_catalog_are_asked_for_in_sql() -> None:
    """since and catalog become conditions of the query (a naive since is UTC)."""
    store = CannedStore(by_prefix({"SELECT COALESCE": [(0,)]}))
    list(store.iter_records(since=dt.datetime(2024, 5, 1, 12), catalog="claims"))
    assert store.db.asked[1] == (
        "SELECT id, request_id, record FROM solvi_responses WHERE id > %s AND id <= %s "
        "AND created >= %s AND catalog = %s ORDER BY id LIMIT %s",
        (0, 0, "2024-05-01T12:00:00.000000+00:00", "claims", 200),
    )


def test_a_since_that_is_not_a_datetime_is_refused() -> None:
    """since must be a datetime; the message says what arrived."""
    store = CannedStore(by_prefix({}))
    with pytest.raises(TypeError, match=r"^since must be a datetime, got str$"):
        list(store.iter_records(since="yesterday"))  # type: ignore[arg-type]


def test_costs_are_replaced_whole_and_read_back_typed() -> None:
    """save_costs takes the audit head's lock (saves take turns), deletes the catalog's
    rows, then inserts each part; load_costs types them."""
    store = CannedStore(by_prefix({"SELECT part": [("p", 3, 1.5)], "SELECT seq": [(0,)]}))
    store.save_costs("claims", {"p": (3, 1.5), "q": (1, 2.0)})
    assert store.db.asked == [
        ("SELECT seq FROM solvi_audit_head WHERE id = 1", ()),
        ("DELETE FROM solvi_costs WHERE catalog = %s", ("claims",)),
        (
            "INSERT INTO solvi_costs (catalog, part, samples, mean_ms) VALUES (%s, %s, %s, %s)",
            ("claims", "p", 3, 1.5),
        ),
        (
            "INSERT INTO solvi_costs (catalog, part, samples, mean_ms) VALUES (%s, %s, %s, %s)",
            ("claims", "q", 1, 2.0),
        ),
    ]
    assert store.load_costs("claims") == {"p": (3, 1.5)}


def test_a_blob_must_be_bytes() -> None:
    """save_blob refuses text naming the blob and its catalog, before any statement."""
    store = CannedStore(by_prefix({}))
    with pytest.raises(
        TypeError, match=r"^blob 'head' of catalog 'claims' must be bytes, got str$"
    ):
        store.save_blob("claims", "head", "text")  # type: ignore[arg-type]
    assert store.db.asked == []
    assert (
        CannedStore(by_prefix({"SELECT data": [(memoryview(b"ab"),)]})).load_blob("c", "n") == b"ab"
    )


def test_each_dialect_stamps_times_its_own_way() -> None:
    """SQLite keeps sortable UTC ISO text; PostgreSQL an aware UTC datetime."""
    when = dt.datetime(2024, 5, 1, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert SQLITE.stamp(when) == "2024-05-01T12:00:00.000000+00:00"
    assert POSTGRES.stamp(when) == dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
    assert POSTGRES.migrate_lock == ("SELECT pg_advisory_xact_lock(%s)", (0x736F6C7669,))


def test_drive_returns_what_the_plan_returns() -> None:
    """drive sends each statement's rows back into the plan and returns its result."""

    def plan() -> Plan[int]:
        rows = yield ("SELECT 1", ())
        more = yield ("SELECT 2", (rows[0][0],))
        return int(more[0][0]) * 10

    db = Canned(lambda sql, params: [(int(sql[-1]) + sum(params),)])
    assert drive(db, plan()) == 30
    assert db.asked == [("SELECT 1", ()), ("SELECT 2", (1,))]
