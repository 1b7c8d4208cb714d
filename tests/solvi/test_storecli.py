"""The store commands on their own (`solvi.storecli`): the parser they register, the exit
statuses of `audit verify` and `replay`, and what each prints."""

from __future__ import annotations

import argparse
import re
import sqlite3
import textwrap
from pathlib import Path

import pytest
from flows.echo import HOSTILE, HOSTILE_SHOWN, echo_system

from solvi.storage import open_store
from solvi.storecli import (
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_USAGE,
    add_store_commands,
    cmd_audit_verify,
    cmd_replay,
)

TARGET = """
from solvi import Catalog, System

cat = Catalog("sc")

@cat.fn
def doubled(n: int) -> int:
    return n * 2

@cat.rule
def big(doubled: int) -> bool:
    return doubled > 10

system = System(cat, ["big"])
"""


SUMMARY = (
    r"replayed 2 records of catalog sc \(version [0-9a-f]{{16}}\): {same} same, "
    r"{different} different, 0 refused"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="solvi")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    return parser


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, Path]:
    """A target file and a store holding two of its responses (n=3, n=9)."""
    target = tmp_path / "sc_target.py"
    target.write_text(textwrap.dedent(TARGET), encoding="utf-8")
    path = tmp_path / "sc.db"
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(TARGET), namespace)
    system = namespace["system"]
    store = open_store(path)
    for i, n in enumerate((3, 9)):
        store.save_response(system.ask({"n": n}).record, request_id=f"r{i}")  # type: ignore[attr-defined]
    store.close()
    return target, path


def test_the_parser_routes_each_command_to_its_handler() -> None:
    """audit verify STORE and replay TARGET [--store] [--since] set their handler."""
    args = _parser().parse_args(["audit", "verify", "x.db"])
    assert (args.store, args.run) == ("x.db", cmd_audit_verify)
    args = _parser().parse_args(["replay", "m:system", "--store", "x.db", "--since", "2024-05-01"])
    assert (args.target, args.store, args.since, args.run) == (
        "m:system",
        "x.db",
        "2024-05-01",
        cmd_replay,
    )


def test_verify_of_an_intact_store_exits_0(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """An untouched store: status 0, one line naming the store."""
    _, path = stored
    assert cmd_audit_verify(argparse.Namespace(store=str(path))) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: ")
    assert out.count("\n") == 1


def test_verify_of_an_edited_record_exits_1_naming_the_first_bad_entry(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A record edited behind solvi's back: status 1, TAMPERED and the entry."""
    _, path = stored
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE solvi_responses SET record = replace(record, 'true', 'false') "
            "WHERE request_id = 'r1'"
        )
    conn.close()
    assert cmd_audit_verify(argparse.Namespace(store=str(path))) == EXIT_BROKEN
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: audit log TAMPERED: first bad entry 2: ")
    assert out.endswith(" (2 entries read)\n")


def test_verify_of_a_file_that_is_not_a_store_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a store: status 2, the reason on stderr, and the file is left as it was."""
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    assert cmd_audit_verify(argparse.Namespace(store=str(path))) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        f"solvi audit verify: {str(path)!r} is an empty file (0 bytes), not a solvi store; give "
        f"the path of a store a System wrote (System(store=...))\n"
    )
    assert path.stat().st_size == 0


def test_replay_of_unchanged_records_exits_0_with_a_summary(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The System that wrote them replays both records the same: status 0."""
    target, path = stored
    args = argparse.Namespace(target=f"{target}:system", store=str(path), since=None, strict=False)
    assert cmd_replay(args) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert re.fullmatch(SUMMARY.format(same=2, different=0), lines[0])


def test_replay_against_a_changed_rule_exits_1(
    stored: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A rule that now answers otherwise for n=9 (its signature, hence the catalog
    version, unchanged): that record differs, status 1, a line for it before the summary."""
    target, path = stored
    target.write_text(
        textwrap.dedent(TARGET).replace("doubled > 10", "doubled > 100"), encoding="utf-8"
    )
    args = argparse.Namespace(target=f"{target}:system", store=str(path), since=None, strict=False)
    assert cmd_replay(args) == EXIT_BROKEN
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1
    assert any("r1" in line for line in lines[:-1])
    assert re.fullmatch(SUMMARY.format(same=1, different=1), lines[-1])


@pytest.mark.parametrize(
    ("since", "store", "message"),
    [
        (
            "last tuesday",
            "x.db",
            "solvi replay: --since 'last tuesday' is not an ISO 8601 time; write e.g. 2024-05-01 "
            "or 2024-05-01T12:00:00+00:00 (a time without offset is UTC)\n",
        ),
        (
            None,
            None,
            "solvi replay: '{target}:system' has no store; pass --store STORE (a SQLite file, "
            "sqlite:///path/to/file.db or postgresql://user@host:port/database) or build the "
            "System with store=\n",
        ),
    ],
)
def test_replay_refuses_bad_options_with_status_2(
    stored: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    since: str | None,
    store: str | None,
    message: str,
) -> None:
    """A bad --since, or a System without a store and no --store, before reading anything."""
    target, _ = stored
    args = argparse.Namespace(target=f"{target}:system", store=store, since=since, strict=False)
    assert cmd_replay(args) == EXIT_USAGE
    assert capsys.readouterr().err == message.format(target=target)


# -- what a stranger wrote -------------------------------------------------------------

#: `solvi._terminal.visible` of a request id and a store path holding escape sequences
RID, RID_SHOWN = "r\x1b]0;pwned\x07\r", "r\\x1b]0;pwned\\x07\\r"


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A target answering with flows.echo after a prefix "x", and a store whose path and
    one request hold escape sequences, written by echo with no prefix."""
    target = tmp_path / "echo_target.py"
    target.write_text("from flows.echo import echo_system\n\nsystem = echo_system('x')\n")
    path = tmp_path / "s\x1b[2J.db"
    store = open_store(path)
    store.save_response(echo_system().ask({"text": HOSTILE}).record, request_id=RID)
    store.close()
    return target, path


def test_replay_prints_a_strangers_text_escaped_and_its_summary_last(
    hostile: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line names the request and shows its error escaped; no line holds a
    control character, so none can overwrite or hide the summary."""
    target, path = hostile
    args = argparse.Namespace(target=f"{target}:system", store=str(path), since=None, strict=False)
    assert cmd_replay(args) == EXIT_BROKEN
    lines = capsys.readouterr().out.splitlines()
    s = HOSTILE_SHOWN
    assert (
        f"  {RID_SHOWN}: step checked: stored ran (error: ValueError: {s}), replayed ran "
        + (f"(error: ValueError: x{s})")
        in lines
    )
    assert len(lines) == 8
    assert all(line.startswith(f"  {RID_SHOWN}: ") for line in lines[:-1])
    assert re.fullmatch(
        r"replayed 1 records of catalog echo \(version [0-9a-f]{16}\): 0 same, 1 different, "
        r"0 refused",
        lines[-1],
    )
    assert all(line.isprintable() for line in lines)


def test_verify_prints_a_strangers_request_id_and_an_edited_hash_escaped(
    hostile: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The store's path, a request id and a chain head edited to hold escape sequences
    come out escaped in the TAMPERED line."""
    _, path = hostile
    shown = str(path).replace("\x1b", "\\x1b")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE solvi_responses SET record = replace(record, 'echo', 'ohce')")
    conn.close()
    assert cmd_audit_verify(argparse.Namespace(store=str(path))) == EXIT_BROKEN
    assert capsys.readouterr().out.startswith(
        f"{shown}: audit log TAMPERED: first bad entry 1: the stored record of request "
        f"'{RID_SHOWN}' does not match decision entry 1 (the record was edited); "
    )
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE solvi_audit_head SET hash = ?", ("\x1b]0;pwned\x07" + "0" * 60,))
    conn.close()
    assert cmd_audit_verify(argparse.Namespace(store=str(path))) == EXIT_BROKEN
    out = capsys.readouterr().out
    assert out.startswith(
        f"{shown}: audit log TAMPERED: first bad entry 2: the chain head records entry 2 with "
        "hash \\x1b]0;pwned\\x07000000, but the log ends at entry 2 with hash "
    )
    assert out.endswith("\n")
    assert out[:-1].isprintable()
