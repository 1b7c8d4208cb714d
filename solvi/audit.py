"""The audit log: append-only entries, each chained to the one before it by hash.

Every stored response appends one ``decision`` entry and one ``safeguard``
entry per timeout or error it holds. An entry's hash covers its sequence
number, kind, request id, payload and the previous entry's hash, so editing,
deleting or reordering entries breaks the chain at the first entry touched;
`verify` walks the chain and names that entry.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from solvi.record import canonical_json

if TYPE_CHECKING:
    from solvi.storage import Store

__all__ = ["GENESIS", "AuditEntry", "AuditReport", "entry_hash", "verify"]

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


def _record_digest(record: Mapping[str, Any]) -> str:
    """sha256 of `_record_text`: the decision entry holds it, so an edited record shows."""
    return hashlib.sha256(_record_text(record).encode()).hexdigest()


@attrs.frozen
class AuditReport:
    """What `verify` found.

    `ok` is True when the chain is unbroken, its head matches its last entry
    and every stored record matches its decision entry. Otherwise
    `first_bad` is the sequence number of the first bad (or missing) entry and
    `problem` says what is wrong with it. `last_hash` is the hash of the last
    entry read (`GENESIS` for an empty log): keep it somewhere else to detect
    a log cut short together with its head.
    """

    ok: bool
    entries: int
    first_bad: int | None = None
    problem: str | None = None
    last_hash: str = GENESIS

    def __str__(self) -> str:
        if self.ok:
            return f"audit log intact: {self.entries} entries, last hash {self.last_hash[:16]}"
        return f"audit log broken at entry {self.first_bad}: {self.problem}"


def _seq_holding(store: Store, digest: str) -> int | None:
    for entry in store.audit_entries():
        if entry.hash == digest:
            return entry.seq
    return None


def verify(store: Store) -> AuditReport:
    """Walk the audit log of `store` and report the first entry that is not as written.

    Detects an edited entry (its contents no longer match its hash), a deleted
    one (a gap in the sequence, or a log shorter than its head says), entries
    moved out of order, and a stored record that was edited or deleted after
    its decision entry was written.

    Args:
        store: an open store (`open_store` turns a path or URL into one).

    Returns:
        An `AuditReport`; it never raises for a broken log.
    """
    count = 0
    expected = 1
    prev = GENESIS
    decisions: dict[str, tuple[int, str]] = {}

    def broken(seq: int, problem: str) -> AuditReport:
        return AuditReport(False, count, seq, problem, prev)

    for entry in store.audit_entries():
        count += 1
        seq = entry.seq
        if seq != expected:
            gap = f"entry {expected}" if seq == expected + 1 else f"entries {expected}-{seq - 1}"
            return broken(
                expected,
                f"{gap} missing: entry {expected - 1} is followed by entry {seq} (deleted)",
            )
        if not entry.intact:
            moved_from = None if entry.prev_hash == prev else _seq_holding(store, entry.prev_hash)
            if moved_from is not None:
                return broken(
                    seq,
                    f"entry {seq} chains to the entry now at {moved_from}, not to entry "
                    f"{seq - 1}: entries were reordered",
                )
            return broken(
                seq, f"entry {seq} ({entry.kind}) was edited: its contents do not match its hash"
            )
        if entry.prev_hash != prev:
            return broken(
                seq,
                f"entry {seq} does not chain to entry {seq - 1}: its prev_hash is "
                f"{entry.prev_hash[:16]}, entry {seq - 1} hashes to {prev[:16]} (an entry was "
                f"replaced or entries were reordered)",
            )
        if entry.kind == "decision":
            decisions[entry.request_id] = (seq, json.loads(entry.payload)["stored"])
        prev = entry.hash
        expected += 1
    last = expected - 1
    head_seq, head_hash = store.audit_head()
    if head_seq > last:
        gap = f"entry {expected}" if head_seq == expected else f"entries {expected}-{head_seq}"
        return broken(
            expected,
            f"{gap} missing: the log ends at entry {last} but its head records entry "
            f"{head_seq} (deleted from the end)",
        )
    if head_seq != last or head_hash != prev:
        return broken(
            head_seq + 1 if head_seq < last else last,
            f"the chain head records entry {head_seq} with hash {head_hash[:16]}, but the log "
            f"ends at entry {last} with hash {prev[:16]} (written outside solvi)",
        )
    return _check_records(store, decisions, count, prev)


def _check_records(
    store: Store, decisions: dict[str, tuple[int, str]], count: int, last_hash: str
) -> AuditReport:
    # (sort key, seq named, problem): a record with no entry sorts last and names none
    bad: list[tuple[int, int | None, str]] = []
    for request_id, record in store.iter_records():
        found = decisions.pop(request_id, None)
        if found is None:
            bad.append(
                (
                    count + 1,
                    None,
                    f"request {request_id!r} has a stored record but no decision entry "
                    f"(written outside solvi)",
                )
            )
            continue
        seq, digest = found
        if _record_digest(record) != digest:
            bad.append(
                (
                    seq,
                    seq,
                    f"the stored record of request {request_id!r} does not match decision "
                    f"entry {seq} (the record was edited)",
                )
            )
    for request_id, (seq, _) in decisions.items():
        bad.append(
            (seq, seq, f"decision entry {seq} names request {request_id!r}, whose record is gone")
        )
    if bad:
        _, first, problem = min(bad)
        return AuditReport(False, count, first, problem, last_hash)
    return AuditReport(True, count, None, None, last_hash)
