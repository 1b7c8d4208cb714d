"""The audit log: one hash chain per store, tampering found and named, `solvi audit verify`."""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from stores import Backend
from threads import errors_in_threads

from solvi import System
from solvi.audit import GENESIS, entry_hash, verify
from solvi.storage import Store
from solvi.storecli import add_store_commands

ROOT = Path(__file__).resolve().parents[2]
#: What every problem ends with: the next step.
NEXT = (
    "next: restore the store from a backup, then check that its entry at the sequence number "
    "you kept still has the last_hash you kept"
)


def _fill(store: Store, system: System) -> None:
    """Four responses, the third with an error safeguard: five audit entries."""
    states = [
        {"policy_id": "P-1", "claim": {"amount": 900}},
        {"policy_id": "X-2", "claim": {"amount": 900}},
        {"policy_id": "P-3", "claim": {"amount": 900, "model_down": True}},
        {"policy_id": "P-4", "claim": {"amount": 20_000}},
    ]
    for i, state in enumerate(states):
        store.save_response(system.ask(state).record, request_id=f"r{i + 1}")


def test_each_response_appends_a_decision_and_its_safeguards(store: Store, system: System) -> None:
    """Decisions and safeguards are entries, chained from GENESIS, and the chain verifies."""
    _fill(store, system)
    entries = list(store.audit_entries())
    assert [(e.seq, e.kind, e.request_id) for e in entries] == [
        (1, "decision", "r1"),
        (2, "decision", "r2"),
        (3, "decision", "r3"),
        (4, "safeguard", "r3"),
        (5, "decision", "r4"),
    ]
    assert entries[0].prev_hash == GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(entries))
    guard = json.loads(entries[3].payload)
    assert guard == {
        "catalog": "claims",
        "fact": "fraud_score",
        "kind": "error",
        "message": "ConnectionError: model server unreachable",
        "part": "fraud_model",
    }
    decision = json.loads(entries[1].payload)
    assert decision["answers"]["approve"] == {"status": "forced", "value": False}
    assert decision["hash"] == store.get_record("r2")["hash"]
    report = verify(store)
    assert (report.ok, report.entries, report.first_bad, report.problem) == (True, 5, None, None)
    assert report.last_hash == entries[-1].hash == store.audit_head()[1]


def test_an_empty_log_verifies(store: Store) -> None:
    """A store with no responses has an intact, empty chain."""
    report = verify(store)
    assert (report.ok, report.entries, report.last_hash) == (True, 0, GENESIS)


def test_entry_hash_covers_every_field() -> None:
    """Changing any field of an entry changes its hash."""
    base = ("a" * 64, 3, "decision", "r1", '{"x":1}')
    digest = entry_hash(*base)
    for i, changed in enumerate(("b" * 64, 4, "safeguard", "r2", '{"x":2}')):
        fields = list(base)
        fields[i] = changed
        assert entry_hash(*fields) != digest  # type: ignore[arg-type]


def test_an_edited_payload_is_named(db: Backend, store: Store, system: System) -> None:
    """Editing an entry's payload breaks its hash; verify names that entry."""
    _fill(store, system)
    db.sql("UPDATE solvi_audit SET payload = replace(payload, 'forced', 'decided') WHERE seq = 2")
    report = verify(store)
    assert (report.ok, report.first_bad, report.entries) == (False, 2, 2)
    assert report.problem == (
        f"entry 2 (decision) was edited: its contents do not match its hash; {NEXT}"
    )


def test_a_rehashed_edit_breaks_the_next_link(db: Backend, store: Store, system: System) -> None:
    """An edit that also recomputes the entry's own hash is caught at the next entry."""
    _fill(store, system)
    seq, kind, rid, payload, prev = db.sql(
        "SELECT seq, kind, request_id, payload, prev_hash FROM solvi_audit WHERE seq = 2"
    )[0]
    forged = payload.replace("forced", "decided")
    db.sql(
        "UPDATE solvi_audit SET payload = %s, hash = %s WHERE seq = 2",
        (forged, entry_hash(prev, seq, kind, rid, forged)),
    )
    report = verify(store)
    assert report.first_bad == 3
    assert report.problem is not None
    assert report.problem.startswith("entry 3 does not chain to entry 2")


def test_a_deleted_entry_is_named(db: Backend, store: Store, system: System) -> None:
    """Deleting an entry leaves a gap; verify names the missing sequence number."""
    _fill(store, system)
    db.sql("DELETE FROM solvi_audit WHERE seq = 3")
    report = verify(store)
    assert (report.ok, report.first_bad) == (False, 3)
    assert report.problem == f"entry 3 missing: entry 2 is followed by entry 4 (deleted); {NEXT}"


def test_a_deleted_last_entry_is_named(db: Backend, store: Store, system: System) -> None:
    """Deleting the newest entry is caught by the chain head."""
    _fill(store, system)
    db.sql("DELETE FROM solvi_audit WHERE seq = 5")
    report = verify(store)
    assert report.first_bad == 5
    assert report.problem is not None
    assert "the log ends at entry 4 but its head records entry 5" in report.problem


def test_swapped_entries_are_named(db: Backend, store: Store, system: System) -> None:
    """Swapping two entries' contents is reported as reordering at the first of them."""
    _fill(store, system)
    rows = db.sql(
        "SELECT seq, kind, request_id, payload, prev_hash, hash FROM solvi_audit "
        "WHERE seq IN (2, 3) ORDER BY seq"
    )
    for (seq, *_), (_, *fields) in zip(rows, reversed(rows), strict=True):
        db.sql(
            "UPDATE solvi_audit SET kind = %s, request_id = %s, payload = %s, prev_hash = %s, "
            "hash = %s WHERE seq = %s",
            (*fields, seq),
        )
    report = verify(store)
    assert (report.ok, report.first_bad) == (False, 2)
    assert report.problem == (
        f"entry 2 chains to the entry now at 3, not to entry 1: entries were reordered; {NEXT}"
    )


def test_an_edited_record_is_named(db: Backend, store: Store, system: System) -> None:
    """Editing a stored record breaks its match with its decision entry."""
    _fill(store, system)
    db.sql(
        "UPDATE solvi_responses SET record = replace(record, '\"forced\"', '\"decided\"') "
        "WHERE request_id = 'r2'"
    )
    report = verify(store)
    assert (report.ok, report.first_bad) == (False, 2)
    assert report.problem == (
        "the stored record of request 'r2' does not match decision entry 2 (the record was "
        f"edited); {NEXT}"
    )


def test_a_deleted_record_is_named(db: Backend, store: Store, system: System) -> None:
    """Deleting a stored record leaves its decision entry pointing at nothing."""
    _fill(store, system)
    db.sql("DELETE FROM solvi_responses WHERE request_id = 'r4'")
    report = verify(store)
    assert (report.ok, report.first_bad) == (False, 5)
    assert report.problem == f"decision entry 5 names request 'r4', whose record is gone; {NEXT}"


def test_a_problem_shows_what_it_read_escaped_and_cut(
    db: Backend, store: Store, system: System
) -> None:
    """A prev_hash edited to hold escape sequences shows them escaped; a request id of
    100,000 characters (as long as PostgreSQL's index of ids takes, compressed), stored
    without a decision entry, shows cut with a count of the rest."""
    _fill(store, system)
    seq, kind, rid, payload = db.sql(
        "SELECT seq, kind, request_id, payload FROM solvi_audit WHERE seq = 2"
    )[0]
    bad = "\x1b[2J\x1b]0;x\x07"
    db.sql(
        "UPDATE solvi_audit SET prev_hash = %s, hash = %s WHERE seq = 2",
        (bad, entry_hash(bad, seq, kind, rid, payload)),
    )
    report = verify(store)
    assert report.problem == (
        "entry 2 does not chain to entry 1: its prev_hash is \\x1b[2J\\x1b]0;x\\x07, entry 1 "
        f"hashes to {report.last_hash[:16]} (an entry was replaced or entries were "
        f"reordered); {NEXT}"
    )
    db.sql(
        "UPDATE solvi_audit SET prev_hash = %s, hash = %s WHERE seq = 2",
        (report.last_hash, entry_hash(report.last_hash, seq, kind, rid, payload)),
    )
    assert verify(store).ok
    row = db.sql(
        "SELECT catalog, catalog_version, hash, created, record FROM solvi_responses "
        "WHERE request_id = 'r1'"
    )[0]
    db.sql(
        "INSERT INTO solvi_responses (request_id, catalog, catalog_version, hash, created, "
        "record) VALUES (%s, %s, %s, %s, %s, %s)",
        ("Z" * 100_000, *row),
    )
    report = verify(store)
    assert report.problem == (
        f"request '{'Z' * 999}... (99,002 more characters) has a stored record but no "
        f"decision entry (written outside solvi); {NEXT}"
    )


def test_eight_threads_with_own_connections_extend_one_chain(db: Backend, system: System) -> None:
    """Concurrent appends from 8 threads, each with its own store, never fork the chain."""
    record = system.ask({"policy_id": "P-3", "claim": {"model_down": True}}).record
    stores = [db.open() for _ in range(8)]
    start = threading.Barrier(8)

    def work(n: int) -> None:
        start.wait()
        for i in range(10):
            stores[n].save_response(record, request_id=f"t{n}-{i}")

    errors = errors_in_threads(work, 8)
    try:
        assert errors == []
        report = verify(stores[0])
        assert (report.ok, report.entries) == (True, 160)
        assert stores[0].audit_head()[0] == 160
    finally:
        for s in stores:
            s.close()


def test_one_store_shared_by_threads_extends_one_chain(store: Store, system: System) -> None:
    """Threads sharing one store object also append without forking."""
    record = system.ask({"policy_id": "P-1", "claim": {}}).record

    def work(n: int) -> None:
        for i in range(5):
            store.save_response(record, request_id=f"s{n}-{i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = verify(store)
    assert (report.ok, report.entries) == (True, 40)


_WRITER = """
import json, sys
from solvi.storage import open_store
spec, name, record = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
store = open_store(spec)
for i in range(15):
    store.save_response(record, request_id=f"{name}-{i}")
store.close()
"""


def test_several_processes_extend_one_chain(db: Backend, system: System) -> None:
    """Three processes appending to one store at once leave one unbroken chain."""
    record = system.ask({"policy_id": "P-1", "claim": {}}).record
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, db.spec, f"p{n}"],
            stdin=subprocess.PIPE,
            cwd=ROOT,
            text=True,
        )
        for n in range(3)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(json.dumps(record))
        p.stdin.close()
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    store = db.open()
    try:
        report = verify(store)
        assert (report.ok, report.entries) == (True, 45)
    finally:
        store.close()


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="solvi")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    assert args.run is args.func
    return status


def test_audit_verify_command_exits_1_and_names_the_bad_entry(
    db: Backend, store: Store, system: System, capsys: pytest.CaptureFixture[str]
) -> None:
    """`solvi audit verify STORE` exits 0 on an intact log, 1 naming the entry after tampering."""
    _fill(store, system)
    assert _cli(["audit", "verify", db.spec]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{db.spec}: audit log intact: 5 entries, last hash ")
    db.sql("UPDATE solvi_audit SET request_id = 'someone-else' WHERE seq = 4")
    assert _cli(["audit", "verify", db.spec]) == 1
    assert capsys.readouterr().out == (
        f"{db.spec}: audit log TAMPERED: first bad entry 4: entry 4 (safeguard) was edited: "
        f"its contents do not match its hash; {NEXT} (4 entries read)\n"
    )


def test_audit_verify_command_refuses_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path with no store is a target error (exit 2), not a new empty store that verifies."""
    missing = tmp_path / "none.db"
    assert _cli(["audit", "verify", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"solvi audit verify: no SQLite store at {str(missing)!r}: no such file; give the "
        f"path of a store a System wrote (System(store=...))\n"
    )
    assert not missing.exists()
