"""Verify against an attacker: every stored column edited, damaged stores, files that are
not stores, and a store written to while it is verified."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from stores import BACKENDS, Backend

from solvi import System
from solvi.audit import StoredResponse, entry_hash, verify
from solvi.journal import open_journal
from solvi.record import canonical_json
from solvi.storage import Store, StoreError, open_store
from solvi.storecli import add_store_commands

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = "(written outside solvi)"
FIX = "give the path of a store a System wrote (System(store=...))"
#: What every problem ends with: the next step.
NEXT = (
    "next: restore the store from a backup, then check that its entry at the sequence number "
    "you kept still has the last_hash you kept"
)


def _fill(store: Store, system: System) -> None:
    """Four responses, the third with an error safeguard: five audit entries (r3 has 3, 4)."""
    states = [
        {"policy_id": "P-1", "claim": {"amount": 900}},
        {"policy_id": "X-2", "claim": {"amount": 900}},
        {"policy_id": "P-3", "claim": {"amount": 900, "model_down": True}},
        {"policy_id": "P-4", "claim": {"amount": 20_000}},
    ]
    for i, state in enumerate(states):
        store.save_response(system.ask(state).record, request_id=f"r{i + 1}")


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="solvi")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


def _context(store: Store, system: System) -> dict[str, Any]:
    """What the expected messages quote from the untouched store."""
    entries = {e.seq: e for e in store.audit_entries()}
    return {
        "version": system.version,
        "hash2": store.get_record("r2")["hash"],
        "created2": json.loads(entries[2].payload)["created"],
        "last": entries[5].hash[:16],
    }


Edit = Callable[[str], list[str]]


def _same(*statements: str) -> Edit:
    return lambda kind: list(statements)


def _renumber(kind: str) -> list[str]:
    # PostgreSQL's identity column refuses an UPDATE until it is a plain column.
    first = (
        ["ALTER TABLE solvi_responses ALTER COLUMN id DROP IDENTITY"] if kind != "sqlite" else []
    )
    return [*first, "UPDATE solvi_responses SET id = 100 WHERE request_id = 'r1'"]


# (table.column, the edit, first bad entry, the problem given the context)
COLUMNS: list[tuple[str, Edit, int | None, Callable[[dict[str, Any]], str]]] = [
    (
        "solvi_responses.id",
        _renumber,
        1,
        lambda c: (
            "request 'r1' is stored after request 'r4', but its decision entry 1 comes before "
            "entry 5 (the rows were renumbered)"
        ),
    ),
    (
        "solvi_responses.request_id",
        _same("UPDATE solvi_responses SET request_id = 'r2-forged' WHERE request_id = 'r2'"),
        2,
        lambda c: "decision entry 2 names request 'r2', whose record is gone",
    ),
    (
        "solvi_responses.catalog",
        _same("UPDATE solvi_responses SET catalog = 'other' WHERE request_id = 'r2'"),
        2,
        lambda c: (
            "the catalog column of request 'r2' is 'other', but decision entry 2 records "
            "'claims' (the row was edited)"
        ),
    ),
    (
        "solvi_responses.catalog_version",
        _same("UPDATE solvi_responses SET catalog_version = 'v0' WHERE request_id = 'r2'"),
        2,
        lambda c: (
            f"the catalog_version column of request 'r2' is 'v0', but decision entry 2 "
            f"records {c['version']!r} (the row was edited)"
        ),
    ),
    (
        "solvi_responses.hash",
        _same(f"UPDATE solvi_responses SET hash = '{'f' * 64}' WHERE request_id = 'r2'"),
        2,
        lambda c: (
            f"the hash column of request 'r2' is {'f' * 64!r}, but decision entry 2 records "
            f"{c['hash2']!r} (the row was edited)"
        ),
    ),
    (
        "solvi_responses.created",
        _same(
            "UPDATE solvi_responses SET created = '2020-01-01T00:00:00+00:00' "
            "WHERE request_id = 'r2'"
        ),
        2,
        lambda c: (
            f"the created column of request 'r2' is '2020-01-01T00:00:00+00:00', but decision "
            f"entry 2 records {c['created2']!r} (the row was edited)"
        ),
    ),
    (
        "solvi_responses.record",
        _same(
            "UPDATE solvi_responses SET record = replace(record, '\"forced\"', '\"decided\"') "
            "WHERE request_id = 'r2'"
        ),
        2,
        lambda c: (
            "the stored record of request 'r2' does not match decision entry 2 (the record "
            "was edited)"
        ),
    ),
    (
        "solvi_audit.seq",
        _same("UPDATE solvi_audit SET seq = 10 WHERE seq = 3"),
        3,
        lambda c: "entry 3 missing: entry 2 is followed by entry 4 (deleted)",
    ),
    (
        "solvi_audit.kind",
        _same("UPDATE solvi_audit SET kind = 'safeguard' WHERE seq = 2"),
        2,
        lambda c: "entry 2 (safeguard) was edited: its contents do not match its hash",
    ),
    (
        "solvi_audit.request_id",
        _same("UPDATE solvi_audit SET request_id = 'someone-else' WHERE seq = 2"),
        2,
        lambda c: "entry 2 (decision) was edited: its contents do not match its hash",
    ),
    (
        "solvi_audit.payload",
        _same(
            "UPDATE solvi_audit SET payload = replace(payload, 'forced', 'decided') WHERE seq = 2"
        ),
        2,
        lambda c: "entry 2 (decision) was edited: its contents do not match its hash",
    ),
    (
        "solvi_audit.prev_hash",
        _same(f"UPDATE solvi_audit SET prev_hash = '{'0' * 64}' WHERE seq = 2"),
        2,
        lambda c: "entry 2 (decision) was edited: its contents do not match its hash",
    ),
    (
        "solvi_audit.hash",
        _same(f"UPDATE solvi_audit SET hash = '{'a' * 64}' WHERE seq = 2"),
        2,
        lambda c: "entry 2 (decision) was edited: its contents do not match its hash",
    ),
    (
        "solvi_audit_head.seq",
        _same("UPDATE solvi_audit_head SET seq = 4"),
        5,
        lambda c: (
            f"the chain head records entry 4 with hash {c['last']}, but the log ends at entry "
            f"5 with hash {c['last']} {OUTSIDE}"
        ),
    ),
    (
        "solvi_audit_head.hash",
        _same(f"UPDATE solvi_audit_head SET hash = '{'b' * 64}'"),
        5,
        lambda c: (
            f"the chain head records entry 5 with hash {'b' * 16}, but the log ends at entry "
            f"5 with hash {c['last']} {OUTSIDE}"
        ),
    ),
    (
        "solvi_audit_head.id",
        _same("DELETE FROM solvi_audit_head"),
        None,
        lambda c: (
            "the chain head (the one row of solvi_audit_head) is missing (deleted outside "
            "solvi), so a log cut short cannot be told from a whole one"
        ),
    ),
]


@pytest.mark.parametrize(
    ("column", "edit", "first_bad", "problem"), COLUMNS, ids=[c[0] for c in COLUMNS]
)
def test_editing_any_stored_column_is_reported(
    db: Backend,
    store: Store,
    system: System,
    capsys: pytest.CaptureFixture[str],
    column: str,
    edit: Edit,
    first_bad: int | None,
    problem: Callable[[dict[str, Any]], str],
) -> None:
    """Each column of the responses, audit and head tables, edited, breaks verify exactly."""
    _fill(store, system)
    context = _context(store, system)
    assert verify(store).ok
    for statement in edit(db.kind):
        db.sql(statement)
    report = verify(store)
    expected = f"{problem(context)}; {NEXT}"
    assert (report.ok, report.first_bad, report.problem) == (False, first_bad, expected)
    assert _cli(["audit", "verify", db.spec]) == 1
    where = "" if first_bad is None else f"first bad entry {first_bad}: "
    out = capsys.readouterr()
    assert out.out == (
        f"{db.spec}: audit log TAMPERED: {where}{expected} ({report.entries} entries read)\n"
    )
    assert out.err == ""


def _forge(db: Backend, seq: int, **fields: Any) -> None:
    """Rewrite entry `seq` with `fields` and a hash recomputed to match: only its
    successor's link (and what solvi could not have written) gives it away."""
    row = db.sql(
        "SELECT kind, request_id, payload, prev_hash FROM solvi_audit WHERE seq = %s", (seq,)
    )[0]
    entry = dict(zip(("kind", "request_id", "payload", "prev_hash"), row, strict=True))
    entry.update(fields)
    digest = entry_hash(
        entry["prev_hash"], seq, entry["kind"], entry["request_id"], entry["payload"]
    )
    db.sql(
        "UPDATE solvi_audit SET kind = %s, request_id = %s, payload = %s, hash = %s WHERE seq = %s",
        (entry["kind"], entry["request_id"], entry["payload"], digest, seq),
    )


FORGED: list[tuple[str, int, dict[str, Any], str]] = [
    (
        "not-json",
        2,
        {"payload": "not json"},
        "entry 2 (decision of request 'r2') has a payload that is not JSON (Expecting value: "
        f"line 1 column 1 (char 0)) {OUTSIDE}",
    ),
    (
        "a-list",
        2,
        {"payload": "[1, 2]"},
        f"entry 2 (decision of request 'r2') has a payload that is a JSON list, not an object "
        f"{OUTSIDE}",
    ),
    (
        "lacking-keys",
        2,
        {"payload": '{"catalog": "claims"}'},
        "decision entry 2 has no catalog_version, created, hash, stored as text in its "
        f"payload {OUTSIDE}",
    ),
    (
        "unknown-kind",
        2,
        {"kind": "note"},
        f"entry 2 is of kind 'note'; solvi writes only decision and safeguard entries {OUTSIDE}",
    ),
    (
        "second-decision",
        4,
        {"kind": "decision", "request_id": "r1"},
        "entry 4 is a second decision for request 'r1' (the first is entry 1); request ids "
        f"are unique {OUTSIDE}",
    ),
    (
        "nested-too-deeply",
        4,
        {"payload": "[" * 100_000 + "]" * 100_000},
        f"entry 4 (safeguard of request 'r3') has a payload that nests too deeply to be read "
        f"{OUTSIDE}",
    ),
    (
        "a-bare-nan",
        2,
        {"payload": '{"catalog": NaN}'},
        "entry 2 (decision of request 'r2') has a payload that holds a bare NaN, which solvi "
        f"never writes {OUTSIDE}",
    ),
    (
        "a-bare-infinity",
        4,
        {"payload": '{"catalog": "claims", "fact": -Infinity}'},
        "entry 4 (safeguard of request 'r3') has a payload that holds a bare -Infinity, which "
        f"solvi never writes {OUTSIDE}",
    ),
]


@pytest.mark.parametrize(
    ("seq", "fields", "problem"), [f[1:] for f in FORGED], ids=[f[0] for f in FORGED]
)
def test_a_forged_entry_with_a_recomputed_hash_is_named(
    db: Backend, store: Store, system: System, seq: int, fields: dict[str, Any], problem: str
) -> None:
    """A payload or kind solvi could not have written is named at its own entry, not raised."""
    _fill(store, system)
    if fields.get("kind") == "decision":
        fields["payload"] = db.sql("SELECT payload FROM solvi_audit WHERE seq = 1")[0][0]
    _forge(db, seq, **fields)
    report = verify(store)
    assert (report.ok, report.first_bad, report.problem) == (False, seq, f"{problem}; {NEXT}")


def _cli_process(*argv: str) -> subprocess.CompletedProcess[str]:
    """`solvi` run as a real process, so a traceback would show on its stderr."""
    return subprocess.run(
        [sys.executable, "-c", "import sys; from solvi.cli import main; sys.exit(main())", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_the_command_on_a_payload_nested_too_deeply_exits_1_without_a_traceback(
    tmp_path: Path, system: System
) -> None:
    """Python's parser cannot read a hand-made deep nesting: a finding, not a RecursionError."""
    path = tmp_path / "deep.db"
    with open_store(path) as store:
        _fill(store, system)
    _forge(Backend("sqlite", str(path)), 4, payload="[" * 100_000 + "]" * 100_000)
    done = _cli_process("audit", "verify", str(path))
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == (
        f"{path}: audit log TAMPERED: first bad entry 4: entry 4 (safeguard of request 'r3') "
        f"has a payload that nests too deeply to be read {OUTSIDE}; {NEXT} (4 entries read)\n"
    )


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("NaN", "holds a bare NaN, which solvi never writes"),
        ("Infinity", "holds a bare Infinity, which solvi never writes"),
        ("[" * 100_000 + "]" * 100_000, "nests too deeply to be read"),
        ("nope", "is not JSON (Expecting value: line 1 column {column} (char {char}))"),
    ],
    ids=["nan", "infinity", "nested-too-deeply", "not-json"],
)
def test_a_record_solvi_could_not_have_written_is_named_though_its_entry_matches(
    db: Backend, store: Store, system: System, value: str, what: str
) -> None:
    """A record edited to hold what solvi never writes, its entry and head rehashed to
    match, is named in solvi's words, not Python's."""
    _fill(store, system)
    (text,) = db.sql("SELECT record FROM solvi_responses WHERE request_id = 'r4'")[0]
    forged = f'{text[:-1]},"x":{value}}}'
    (payload,) = db.sql("SELECT payload FROM solvi_audit WHERE seq = 5")[0]
    decision = {**json.loads(payload), "stored": hashlib.sha256(forged.encode()).hexdigest()}
    db.sql("UPDATE solvi_responses SET record = %s WHERE request_id = 'r4'", (forged,))
    _forge(db, 5, payload=canonical_json(decision))
    db.sql("UPDATE solvi_audit_head SET hash = (SELECT hash FROM solvi_audit WHERE seq = 5)")
    report = verify(store)
    char = len(forged) - len(value) - 1  # where the value starts
    problem = what.format(column=char + 1, char=char)
    assert (report.ok, report.first_bad, report.problem) == (
        False,
        5,
        f"the stored record of request 'r4' {problem} {OUTSIDE}; {NEXT}",
    )


def test_the_command_says_what_to_do_next_once(
    tmp_path: Path, system: System, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken log's report ends with one next step: restore, then check the kept hash."""
    path = tmp_path / "cut.db"
    with open_store(path) as store:
        _fill(store, system)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM solvi_audit WHERE seq = 3")
    conn.close()
    assert _cli(["audit", "verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("next: ") == 1
    assert out.endswith(f"(deleted); {NEXT} (3 entries read)\n")


def test_a_dropped_audit_table_is_reported_not_raised(
    db: Backend, store: Store, system: System, capsys: pytest.CaptureFixture[str]
) -> None:
    """With solvi_audit gone, verify says so (exit 1), naming the table."""
    _fill(store, system)
    db.sql("DROP TABLE solvi_audit")
    problem = (
        "the store has no table solvi_audit (dropped outside solvi), so its decisions cannot "
        "be checked"
    )
    report = verify(store)
    assert (report.ok, report.first_bad, report.problem) == (False, None, f"{problem}; {NEXT}")
    assert str(report) == f"audit log broken: {problem}; {NEXT}"
    assert _cli(["audit", "verify", db.spec]) == 1
    assert capsys.readouterr().out == (
        f"{db.spec}: audit log TAMPERED: {problem}; {NEXT} (0 entries read)\n"
    )


WRONG_TYPES: list[tuple[str, str, int | None, str]] = [
    (
        "kind-as-bytes",
        "UPDATE solvi_audit SET kind = X'00ff' WHERE seq = 2",
        2,
        f"entry 2 has a kind of type bytes, where solvi writes text {OUTSIDE}",
    ),
    (
        "record-as-bytes",
        "UPDATE solvi_responses SET record = CAST(record AS BLOB) WHERE request_id = 'r2'",
        2,
        f"the record of request 'r2' is of type bytes, where solvi writes JSON text {OUTSIDE}",
    ),
    (
        "head-seq-as-text",
        "UPDATE solvi_audit_head SET seq = 'five'",
        None,
        "the chain head records entry 'five' of type str, where solvi writes a sequence "
        f"number {OUTSIDE}",
    ),
]


@pytest.mark.parametrize(
    ("statement", "first_bad", "problem"),
    [w[1:] for w in WRONG_TYPES],
    ids=[w[0] for w in WRONG_TYPES],
)
def test_a_value_of_the_wrong_type_is_named(
    tmp_path: Path,
    system: System,
    capsys: pytest.CaptureFixture[str],
    statement: str,
    first_bad: int | None,
    problem: str,
) -> None:
    """SQLite keeps any type in any column: a blob or text where solvi writes otherwise."""
    path = tmp_path / "typed.db"
    with open_store(path) as store:
        _fill(store, system)
    with sqlite3.connect(path) as conn:
        conn.execute(statement)
    conn.close()
    with open_store(path, read_only=True) as store:
        report = verify(store)
    assert (report.ok, report.first_bad, report.problem) == (False, first_bad, f"{problem}; {NEXT}")
    assert _cli(["audit", "verify", str(path)]) == 1
    assert problem in capsys.readouterr().out


def test_a_dropped_column_is_reported_not_raised(tmp_path: Path, system: System) -> None:
    """A table that lost a column cannot be read; verify says where it stopped."""
    path = tmp_path / "cut.db"
    with open_store(path) as store:
        _fill(store, system)
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE solvi_audit DROP COLUMN payload")
    conn.close()
    with open_store(path, read_only=True) as store:
        report = verify(store)
    assert (report.ok, report.first_bad) == (False, None)
    assert report.problem == (
        f"the store could not be read after entry 0: SQLite store {str(path)!r} cannot be "
        f"read: no such column: payload; {NEXT}"
    )


# -- files that are not stores ------------------------------------------------------------


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _text(path: Path) -> None:
    path.write_bytes(b"not a database, just some text\n" * 20)


def _tables(*statements: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            for statement in statements:
                conn.execute(statement)
        conn.close()

    return make


def _journal(path: Path) -> None:
    journal = open_journal(str(path))
    assert journal is not None
    journal.close()


def _folder(path: Path) -> None:
    path.mkdir()


NOT_STORES: list[tuple[str, Callable[[Path], None], Callable[[str], str]]] = [
    ("zero-bytes", _empty, lambda p: f"{p!r} is an empty file (0 bytes), not a solvi store; {FIX}"),
    (
        "not-sqlite",
        _text,
        lambda p: (
            f"{p!r} is not a SQLite database (file is not a database), so not a solvi store; {FIX}"
        ),
    ),
    (
        "other-tables",
        _tables("CREATE TABLE notes (body TEXT)", "CREATE TABLE tags (name TEXT)"),
        lambda p: (
            f"{p!r} is a SQLite database without solvi's tables (its tables are notes, tags), "
            f"so it is not a solvi store; give the store a System wrote (System(store=...))"
        ),
    ),
    (
        "no-tables",
        _tables("PRAGMA user_version = 7"),
        lambda p: (
            f"{p!r} is a SQLite database without solvi's tables (it has no tables), so it is "
            f"not a solvi store; give the store a System wrote (System(store=...))"
        ),
    ),
    (
        "a-journal",
        _journal,
        lambda p: (
            f"{p!r} is a SQLite database without solvi's tables (it holds a solvi journal, "
            f"which keeps no decisions), so it is not a solvi store; give the store a System "
            f"wrote (System(store=...))"
        ),
    ),
    ("a-folder", _folder, lambda p: f"no SQLite store at {p!r}: a folder; {FIX}"),
    (
        "a-link-to-dev-zero",
        lambda p: p.symlink_to("/dev/zero"),
        lambda p: f"no SQLite store at {p!r}: a character device, not a regular file; {FIX}",
    ),
    (
        "a-named-pipe",
        lambda p: os.mkfifo(p),
        lambda p: f"no SQLite store at {p!r}: a named pipe, not a regular file; {FIX}",
    ),
]


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {p.name: (p.read_bytes() if p.is_file() else None) for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(
    ("make", "message"), [n[1:] for n in NOT_STORES], ids=[n[0] for n in NOT_STORES]
)
def test_a_file_that_is_not_a_store_is_refused_and_left_as_it_was(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], None],
    message: Callable[[str], str],
) -> None:
    """verify exits 2 with one line naming the file and what it is, and writes nothing."""
    folder = tmp_path / "here"
    folder.mkdir()
    path = folder / "target.db"
    make(path)
    before = _snapshot(folder)
    assert _cli(["audit", "verify", str(path)]) == 2
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", f"solvi audit verify: {message(str(path))}\n")
    with pytest.raises(StoreError) as raised:
        open_store(path, read_only=True)
    assert str(raised.value) == message(str(path))
    assert _snapshot(folder) == before


def test_the_command_on_dev_null_says_it_is_no_regular_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """/dev/null exists, so "no such file" would mislead: it is named a device."""
    assert _cli(["audit", "verify", os.devnull]) == 2
    assert capsys.readouterr().err == (
        f"solvi audit verify: no SQLite store at {os.devnull!r}: a character device, not a "
        f"regular file; {FIX}\n"
    )


def test_the_command_on_an_empty_file_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    """As a real process: exit status 2, one line on stderr, no traceback, file still empty."""
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from solvi.cli import main; sys.exit(main())",
            "audit",
            "verify",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"solvi audit verify: {str(path)!r} is an empty file (0 bytes), not a solvi store; {FIX}\n"
    )
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.parametrize("db", [p for p in BACKENDS if p.id == "postgresql"], indirect=True)
def test_a_postgres_database_without_solvi_tables_is_refused(
    db: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    """On PostgreSQL too: exit 2 naming the database, and no table is created."""
    assert _cli(["audit", "verify", db.spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("solvi audit verify: 127.0.0.1:")
    assert err.endswith(
        " is a PostgreSQL database without solvi's tables (it has no tables), so it is not a "
        "solvi store; give the store a System wrote (System(store=...))\n"
    )
    assert db.sql("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [(0,)]


def test_verify_from_the_shell_leaves_a_store_unchanged(tmp_path: Path, system: System) -> None:
    """Reading a store for verify changes no byte of its database file."""
    path = tmp_path / "kept.db"
    with open_store(path) as store:
        _fill(store, system)
    before = path.read_bytes()
    assert _cli(["audit", "verify", str(path)]) == 0
    assert path.read_bytes() == before


def test_a_read_only_store_refuses_every_write(db: Backend, store: Store, system: System) -> None:
    """open_store(read_only=True) reads like any store and raises on each write."""
    _fill(store, system)
    with open_store(db.spec, read_only=True) as readonly:
        assert readonly.get_record("r1") == store.get_record("r1")
        assert verify(readonly).ok
        record = store.get_record("r1")
        writes: list[Callable[[], None]] = [
            lambda: readonly.save_response(record, request_id="new"),
            lambda: readonly.save_costs("claims", {"policy": (1, 2.0)}),
            lambda: readonly.save_blob("claims", "x", b"1"),
        ]
        for write in writes:
            with pytest.raises(StoreError, match=r"was opened read only \(for auditing\)"):
                write()
    assert db.sql("SELECT count(*) FROM solvi_responses") == [(4,)]
    assert db.sql("SELECT count(*) FROM solvi_blobs") == [(0,)]


# -- a store written to while it is verified -------------------------------------------------


@pytest.fixture
def writer(db: Backend) -> Iterator[Store]:
    """A second store object on the same database: another process's writes."""
    other = db.open()
    yield other
    other.close()


def test_entries_appended_while_verifying_are_read_not_reported(
    store: Store, writer: Store, system: System, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A response saved between reading the log and its head is read too: still intact."""
    _fill(store, system)
    record = system.ask({"policy_id": "P-5", "claim": {}}).record
    real_mark = store.audit_mark
    saved: list[str] = []

    def mark_after_a_write() -> Any:
        if not saved:
            writer.save_response(record, request_id="late")
            saved.append("late")
        return real_mark()

    monkeypatch.setattr(store, "audit_mark", mark_after_a_write)
    report = verify(store)
    assert (report.ok, report.entries, report.problem) == (True, 6, None)


def test_responses_saved_while_verifying_are_left_for_the_next_run(
    store: Store, writer: Store, system: System, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A response saved after the head was read is not checked (its entry was not read)."""
    _fill(store, system)
    record = system.ask({"policy_id": "P-5", "claim": {}}).record
    real_rows = store.stored_responses

    def rows_after_a_write(*, upto: int) -> Iterator[StoredResponse]:
        writer.save_response(record, request_id="late")
        return real_rows(upto=upto)

    monkeypatch.setattr(store, "stored_responses", rows_after_a_write)
    report = verify(store)
    assert (report.ok, report.entries) == (True, 5)
    monkeypatch.undo()
    assert (verify(store).ok, verify(store).entries) == (True, 6)


def test_a_store_held_open_by_a_writer_is_verified_beside_it(
    tmp_path: Path, system: System
) -> None:
    """A store another connection holds open (its -wal file there) is verified read only."""
    path = tmp_path / "open.db"
    with open_store(path) as live:
        _fill(live, system)
        assert os.path.exists(f"{path}-wal")
        assert _cli(["audit", "verify", str(path)]) == 0
        live.save_response(system.ask({"policy_id": "P-9", "claim": {}}).record, request_id="r9")
        with open_store(path, read_only=True) as readonly:
            assert (verify(readonly).ok, verify(readonly).entries) == (True, 6)
