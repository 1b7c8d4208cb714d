"""The audit log: append-only entries, each chained to the one before it by hash.

Every stored response appends one ``decision`` entry and one ``safeguard``
entry per timeout or error it holds. An entry's hash covers its sequence
number, kind, request id, payload and the previous entry's hash, so editing,
deleting or reordering entries breaks the chain at the first entry touched.
A decision entry also holds what the responses table keeps beside the record
(catalog, catalog version, hash, time) and the sha256 of the record's text, so
`verify` checks every stored column of a decision against its entry, and
names the first entry where anything differs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from solvi._terminal import visible
from solvi.errors import StoreError
from solvi.record import canonical_json, read_stored_json

if TYPE_CHECKING:
    from solvi.storage import Store

__all__ = [
    "GENESIS",
    "AuditEntry",
    "AuditMark",
    "AuditReport",
    "StoredResponse",
    "entry_hash",
    "verify",
]

#: The `prev_hash` of the first entry.
GENESIS = "0" * 64


def entry_hash(prev_hash: str, seq: int, kind: str, request_id: str, payload: str) -> str:
    """sha256 of `prev_hash` followed by the canonical JSON of the entry without its hash."""
    body = canonical_json(
        {
            "kind": kind,
            "payload": payload,
            "prev_hash": prev_hash,
            "request_id": request_id,
            "seq": seq,
        }
    )
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


@attrs.frozen
class AuditEntry:
    """One entry of the audit log.

    `payload` is canonical JSON text: for a ``decision`` the catalog, its
    version, the record's hash, each answer's status and value, the time and
    the sha256 of the record's stored text;
    for a ``safeguard`` the catalog and the safeguard (kind, part, fact,
    message).
    """

    seq: int
    kind: str
    request_id: str
    payload: str
    prev_hash: str
    hash: str

    @property
    def intact(self) -> bool:
        """Whether `hash` matches the entry's contents."""
        return self.hash == entry_hash(
            self.prev_hash, self.seq, self.kind, self.request_id, self.payload
        )


@attrs.frozen
class AuditMark:
    """The chain head and the newest response's row, as one snapshot of a store holds them.

    The head's fields are as stored (`verify` checks their types); None when
    the head row is gone.
    """

    head_seq: Any
    head_hash: Any
    last_row: int


@attrs.frozen
class StoredResponse:
    """One row of a store's responses table, as stored: nothing parsed, for `verify`."""

    row: int
    request_id: Any
    catalog: Any
    catalog_version: Any
    hash: Any
    created: Any
    record: Any


def _chain(
    head_seq: int, head_hash: str, items: Iterable[tuple[str, str, str]]
) -> list[AuditEntry]:
    """Entries for (kind, request_id, payload) items, appended after the chain head."""
    out: list[AuditEntry] = []
    seq, prev = head_seq, head_hash
    for kind, request_id, payload in items:
        seq += 1
        digest = entry_hash(prev, seq, kind, request_id, payload)
        out.append(AuditEntry(seq, kind, request_id, payload, prev, digest))
        prev = digest
    return out


def _response_items(
    record: Mapping[str, Any], request_id: str, created: dt.datetime, text: str
) -> list[tuple[str, str, str]]:
    """The audit items of a response stored as `text`: its decision, then each safeguard."""
    catalog = record["catalog"]
    decision = {
        "answers": {
            name: {"status": a["status"], "value": a["value"]}
            for name, a in record["answers"].items()
        },
        "catalog": catalog,
        "catalog_version": record["catalog_version"],
        "created": created.isoformat(),
        "hash": record["hash"],
        "stored": hashlib.sha256(text.encode()).hexdigest(),
    }
    items = [("decision", request_id, canonical_json(decision))]
    for guard in record.get("safeguards", ()):
        items.append(("safeguard", request_id, canonical_json({"catalog": catalog, **guard})))
    return items


def _record_text(record: Mapping[str, Any]) -> str:
    """The text a store keeps for a record: compact JSON, keys in the record's own order."""
    return json.dumps(record, allow_nan=False, separators=(",", ":"))


@attrs.frozen
class AuditReport:
    """What `verify` found.

    `ok` is True when the chain is unbroken, its head matches its last entry
    and every stored response matches its decision entry. Otherwise `problem`
    says what is wrong, then what to do next, and `first_bad` is the sequence
    number of the first bad (or missing) entry: None when the problem is in no
    entry (a dropped table, a missing chain head). `last_hash` is the hash of
    the last entry read (`GENESIS` for an empty log): keep it somewhere else to
    detect a log cut short together with its head. `problem` quotes what it read
    from the store as `repr` does, each value cut when very long, so that a request
    id or a column edited to hold escape sequences cannot act on a terminal.
    """

    ok: bool
    entries: int
    first_bad: int | None = None
    problem: str | None = None
    last_hash: str = GENESIS

    def __str__(self) -> str:
        if self.ok:
            return f"audit log intact: {self.entries} entries, last hash {self.last_hash[:16]}"
        if self.first_bad is None:
            return f"audit log broken: {self.problem}"
        return f"audit log broken at entry {self.first_bad}: {self.problem}"


#: What a decision entry's payload must hold, each as text, to be checked against its row.
_DECISION_TEXT = ("catalog", "catalog_version", "created", "hash", "stored")
#: The entry fields solvi writes as text (the sequence number is an integer).
_ENTRY_TEXT = ("kind", "request_id", "payload", "prev_hash", "hash")
_OUTSIDE = "(written outside solvi)"
#: Ends every problem: a broken log cannot be repaired, only replaced by a copy proven whole.
_NEXT_STEP = (
    "next: restore the store from a backup, then check that its entry at the sequence number "
    "you kept still has the last_hash you kept"
)


@attrs.frozen
class _Decision:
    """What a decision entry says about the row of its response."""

    seq: int
    catalog: str
    catalog_version: str
    created: str
    hash: str
    stored: str


def _quoted(value: object) -> str:
    """A value read from the store, for a problem: its repr, which escapes what a
    terminal would act on, cut when very long (`solvi._terminal.visible`)."""
    return visible(repr(value))


def _type_name(value: object) -> str:
    return "NULL" if value is None else type(value).__name__


def verify(store: Store) -> AuditReport:
    """Walk the audit log of `store` and report the first thing that is not as written.

    Detects an edited entry (its contents no longer match its hash), a deleted
    one (a gap in the sequence, or a log shorter than its head says), entries
    moved out of order, a payload or a field solvi could not have written, a
    dropped table, and a stored response whose record, catalog, catalog
    version, hash or time differs from its decision entry, or that was
    deleted, added or moved after its decision entry was written. Responses
    saved while it runs are left for the next run, so it can check a live store.

    Args:
        store: an open store (``open_store(path, read_only=True)`` opens one
            without writing anything).

    Returns:
        An `AuditReport`; it never raises for a broken log or a damaged store.
    """
    walk = _Walk(store)
    try:
        return walk.run()
    except StoreError as exc:
        return walk.broken(
            None, f"the store could not be read after entry {walk.last}: {visible(exc)}"
        )


class _Walk:
    """One pass of `verify`: the chain, its head, then the stored responses."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.count = 0
        #: the sequence number and hash of the last entry read
        self.last = 0
        self.prev = GENESIS
        self.decisions: dict[str, _Decision] = {}

    def broken(self, seq: int | None, problem: str) -> AuditReport:
        return AuditReport(False, self.count, seq, f"{problem}; {_NEXT_STEP}", self.prev)

    def run(self) -> AuditReport:
        missing = self.store.missing_tables()
        if missing:
            tables = ", ".join(missing)
            return self.broken(
                None,
                f"the store has no table {tables} (dropped outside solvi), so its decisions "
                f"cannot be checked",
            )
        report = self.entries()
        if report is not None:
            return report
        while True:
            mark = self.store.audit_mark()
            report = self.head_problem(mark.head_seq, mark.head_hash)
            if report is not None:
                return report
            if mark.head_seq <= self.last:
                return self.responses(mark.last_row)
            before = self.last
            report = self.entries()
            if report is not None:
                return report
            if self.last == before:
                return self.cut_short(mark.head_seq)
            # Entries were appended while the log was read: read the head again.

    # -- the chain -------------------------------------------------------------------

    def entries(self) -> AuditReport | None:
        """Read the entries after the last one read; a report at the first bad one."""
        for entry in self.store.audit_entries(after=self.last):
            self.count += 1
            report = self.entry_problem(entry)
            if report is not None:
                return report
            self.prev = entry.hash
            self.last = entry.seq
        return None

    def entry_problem(self, entry: AuditEntry) -> AuditReport | None:
        seq, expected = entry.seq, self.last + 1
        if seq != expected:
            gap = f"entry {expected}" if seq == expected + 1 else f"entries {expected}-{seq - 1}"
            return self.broken(
                expected,
                f"{gap} missing: entry {expected - 1} is followed by entry {seq} (deleted)",
            )
        for field in _ENTRY_TEXT:
            value = getattr(entry, field)
            if not isinstance(value, str):
                return self.broken(
                    seq,
                    f"entry {seq} has a {field} of type {_type_name(value)}, where solvi "
                    f"writes text {_OUTSIDE}",
                )
        if not entry.intact:
            moved_from = None if entry.prev_hash == self.prev else self.seq_holding(entry)
            if moved_from is not None:
                return self.broken(
                    seq,
                    f"entry {seq} chains to the entry now at {moved_from}, not to entry "
                    f"{seq - 1}: entries were reordered",
                )
            return self.broken(
                seq, f"entry {seq} ({entry.kind}) was edited: its contents do not match its hash"
            )
        if entry.prev_hash != self.prev:
            return self.broken(
                seq,
                f"entry {seq} does not chain to entry {seq - 1}: its prev_hash is "
                f"{visible(entry.prev_hash[:16])}, entry {seq - 1} hashes to {self.prev[:16]} "
                f"(an entry was replaced or entries were reordered)",
            )
        return self.payload_problem(entry)

    def seq_holding(self, moved: AuditEntry) -> int | None:
        """The sequence number of the entry whose hash `moved` chains to, if any."""
        for entry in self.store.audit_entries():
            if entry.hash == moved.prev_hash:
                return entry.seq
        return None

    def payload_problem(self, entry: AuditEntry) -> AuditReport | None:
        """An intact entry whose payload solvi could not have written (its hash recomputed)."""
        seq = entry.seq
        if entry.kind not in ("decision", "safeguard"):
            return self.broken(
                seq,
                f"entry {seq} is of kind {_quoted(entry.kind)}; solvi writes only decision and "
                f"safeguard entries {_OUTSIDE}",
            )
        payload, unreadable = read_stored_json(entry.payload)
        if unreadable is not None:
            return self.broken(
                seq,
                f"entry {seq} ({entry.kind} of request {_quoted(entry.request_id)}) has a "
                f"payload that {unreadable} {_OUTSIDE}",
            )
        if not isinstance(payload, dict):
            return self.broken(
                seq,
                f"entry {seq} ({entry.kind} of request {_quoted(entry.request_id)}) has a "
                f"payload that is a JSON {_type_name(payload)}, not an object {_OUTSIDE}",
            )
        if entry.kind == "safeguard":
            return None
        lacking = [k for k in _DECISION_TEXT if not isinstance(payload.get(k), str)]
        if lacking:
            return self.broken(
                seq,
                f"decision entry {seq} has no {', '.join(lacking)} as text in its payload "
                f"{_OUTSIDE}",
            )
        earlier = self.decisions.get(entry.request_id)
        if earlier is not None:
            return self.broken(
                seq,
                f"entry {seq} is a second decision for request {_quoted(entry.request_id)} "
                f"(the first is entry {earlier.seq}); request ids are unique {_OUTSIDE}",
            )
        self.decisions[entry.request_id] = _Decision(seq, *(payload[k] for k in _DECISION_TEXT))
        return None

    def head_problem(self, head_seq: Any, head_hash: Any) -> AuditReport | None:
        """What is wrong with the chain head, unless it names the last entry read or a
        later one (entries appended since, or deleted from the end: see `cut_short`)."""
        if head_seq is None and head_hash is None:
            return self.broken(
                None,
                "the chain head (the one row of solvi_audit_head) is missing (deleted outside "
                "solvi), so a log cut short cannot be told from a whole one",
            )
        if not isinstance(head_seq, int) or isinstance(head_seq, bool):
            return self.broken(
                None,
                f"the chain head records entry {_quoted(head_seq)} of type {_type_name(head_seq)}, "
                f"where solvi writes a sequence number {_OUTSIDE}",
            )
        if not isinstance(head_hash, str):
            return self.broken(
                None,
                f"the chain head records a hash of type {_type_name(head_hash)}, where solvi "
                f"writes text {_OUTSIDE}",
            )
        last = self.last
        if head_seq < last or (head_seq == last and head_hash != self.prev):
            return self.broken(
                head_seq + 1 if head_seq < last else last,
                f"the chain head records entry {head_seq} with hash {visible(head_hash[:16])}, "
                f"but the log ends at entry {last} with hash {self.prev[:16]} {_OUTSIDE}",
            )
        return None

    def cut_short(self, head_seq: int) -> AuditReport:
        """The head records entries the log no longer has."""
        last, expected = self.last, self.last + 1
        gap = f"entry {expected}" if head_seq == expected else f"entries {expected}-{head_seq}"
        return self.broken(
            expected,
            f"{gap} missing: the log ends at entry {last} but its head records entry "
            f"{head_seq} (deleted from the end)",
        )

    # -- the stored responses ------------------------------------------------------

    def responses(self, upto: int) -> AuditReport:
        """Check each stored response up to row `upto` against its decision entry."""
        # (sort key, seq named, problem): a row with no entry sorts last and names none
        bad: list[tuple[int, int | None, str]] = []
        after: tuple[int, str] | None = None  # the latest decision met, in row order
        for row in self.store.stored_responses(upto=upto):
            rid = row.request_id
            found = self.decisions.pop(rid, None) if isinstance(rid, str) else None
            if found is None:
                bad.append(
                    (
                        self.count + 1,
                        None,
                        f"request {_quoted(rid)} has a stored record but no decision entry "
                        f"{_OUTSIDE}",
                    )
                )
                continue
            problem = _row_problem(row, found)
            if problem is not None:
                bad.append((found.seq, found.seq, problem))
            if after is not None and found.seq < after[0]:
                bad.append(
                    (
                        found.seq,
                        found.seq,
                        f"request {_quoted(rid)} is stored after request {_quoted(after[1])}, "
                        f"but its decision entry {found.seq} comes before entry {after[0]} (the "
                        f"rows were renumbered)",
                    )
                )
            else:
                after = (found.seq, rid)
        for rid, decision in self.decisions.items():
            seq = decision.seq
            bad.append(
                (
                    seq,
                    seq,
                    f"decision entry {seq} names request {_quoted(rid)}, whose record is gone",
                )
            )
        if bad:
            _, first, problem = min(bad, key=lambda b: (b[0], b[2]))
            return self.broken(first, problem)
        return AuditReport(True, self.count, None, None, self.prev)


def _row_problem(row: StoredResponse, decision: _Decision) -> str | None:
    """What in a stored response differs from its decision entry, if anything."""
    rid, seq = row.request_id, decision.seq
    text = row.record
    if not isinstance(text, str):
        return (
            f"the record of request {_quoted(rid)} is of type {_type_name(text)}, where solvi "
            f"writes JSON text {_OUTSIDE}"
        )
    if hashlib.sha256(text.encode()).hexdigest() != decision.stored:
        return (
            f"the stored record of request {_quoted(rid)} does not match decision entry {seq} (the "
            f"record was edited)"
        )
    record, unreadable = read_stored_json(text)
    if unreadable is None and not isinstance(record, dict):
        unreadable = f"is a JSON {_type_name(record)}, not an object"
    if unreadable is not None:
        return f"the stored record of request {_quoted(rid)} {unreadable} {_OUTSIDE}"
    for column in ("catalog", "catalog_version", "hash"):
        value, recorded = getattr(row, column), getattr(decision, column)
        if value != recorded:
            return (
                f"the {column} column of request {_quoted(rid)} is {_quoted(value)}, but "
                f"decision entry {seq} records {_quoted(recorded)} (the row was edited)"
            )
    if not _same_time(row.created, decision.created):
        when = row.created
        shown = when.astimezone(dt.UTC).isoformat() if isinstance(when, dt.datetime) else when
        return (
            f"the created column of request {_quoted(rid)} is {_quoted(shown)}, but decision "
            f"entry {seq} records {_quoted(decision.created)} (the row was edited)"
        )
    return None


def _same_time(stored: object, recorded: str) -> bool:
    """Whether a stored time (a datetime, or ISO text on SQLite) is the recorded instant."""
    try:
        expected = dt.datetime.fromisoformat(recorded)
        when = dt.datetime.fromisoformat(stored) if isinstance(stored, str) else stored
    except ValueError:
        return False
    if not isinstance(when, dt.datetime) or when.tzinfo is None:
        return False
    # An aware time never equals a naive one: a recorded time without offset differs.
    return when == expected
