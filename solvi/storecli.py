"""The store commands of `solvi`: ``audit verify STORE`` and ``replay TARGET``.

Both only read. ``solvi audit verify STORE`` opens the store read only, walks
its audit log and exits 1, naming the first bad entry, when it was tampered
with. ``solvi replay module:system [--store STORE] [--since ISO]`` replays the
records of that System's catalog stored before it started, one at a time,
prints a line per difference and a summary, and exits 1 on any difference.
Both exit 2, with one line on standard error, when the target, the store or
an option is wrong. `add_store_commands` registers both on the `solvi` parser.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from solvi._targets import TARGET_HELP, TargetError, load_system
from solvi._terminal import visible
from solvi.audit import verify
from solvi.errors import SolviError
from solvi.replay import iter_replays, summary_line
from solvi.storage import Store, open_store
from solvi.system import System

__all__ = [
    "EXIT_BROKEN",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_store_commands",
    "cmd_audit_verify",
    "cmd_replay",
]

#: Exit statuses of both commands: all is well; something differs or is broken; the
#: target, the store or an option is wrong (argparse also exits 2 on bad usage).
EXIT_OK, EXIT_BROKEN, EXIT_USAGE = 0, 1, 2

_STORE_HELP = "a SQLite file, sqlite:///path/to/file.db or postgresql://user@host:port/database"


class _Failure(Exception):
    """A command cannot go on; its message is printed on one line."""


def _open_existing(spec: str) -> Store:
    """Open an existing store read only: nothing is created, migrated or written."""
    try:
        return open_store(spec, read_only=True)
    except (SolviError, ValueError) as exc:
        raise _Failure(str(exc)) from exc


def _fail(command: str, exc: BaseException) -> int:
    sys.stderr.write(f"solvi {command}: {exc}\n")
    return EXIT_USAGE


def cmd_audit_verify(args: argparse.Namespace) -> int:
    """Verify a store's audit log: exit status 0 when intact, 1 when broken, 2 when
    STORE is not a solvi store (nothing is written to it in any case)."""
    try:
        store = _open_existing(args.store)
    except _Failure as exc:
        return _fail("audit verify", exc)
    try:
        report = verify(store)
    finally:
        store.close()
    if report.ok:
        sys.stdout.write(f"{visible(args.store)}: {report}\n")
        return EXIT_OK
    where = "" if report.first_bad is None else f"first bad entry {report.first_bad}: "
    sys.stdout.write(
        f"{visible(args.store)}: audit log TAMPERED: {where}{report.problem} "
        f"({report.entries} entries read)\n"
    )
    return EXIT_BROKEN


def _since(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError as exc:
        msg = (
            f"--since {text!r} is not an ISO 8601 time; write e.g. 2024-05-01 or "
            f"2024-05-01T12:00:00+00:00 (a time without offset is UTC)"
        )
        raise _Failure(msg) from exc


def _replay_inputs(args: argparse.Namespace) -> tuple[System, Store, bool]:
    """The System, the store and whether the command opened that store (and must close it)."""
    target = args.target
    try:
        system = load_system(target)
    except TargetError as exc:
        raise _Failure(str(exc)) from exc
    if args.store is not None:
        return system, _open_existing(args.store), True
    own: Store | None = getattr(system, "store", None)
    if own is None:
        msg = (
            f"{target!r} has no store; pass --store STORE ({_STORE_HELP}) or build the "
            f"System with store="
        )
        raise _Failure(msg)
    return system, own, False


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a System's stored records: exit status 0 when none differs, 1 when one
    does, 2 when the target, the store or an option is wrong."""
    try:
        since = _since(args.since)
        system, store, opened = _replay_inputs(args)
    except _Failure as exc:
        return _fail("replay", exc)
    total = same = different = refused = 0
    try:
        for result in iter_replays(system, store, since=since):
            total += 1
            same += result.same
            different += bool(result.differences)
            refused += result.refused is not None
            for line in result.lines():
                sys.stdout.write(f"{line}\n")
    except SolviError as exc:
        return _fail("replay", exc)
    finally:
        if opened:
            store.close()
    line = summary_line(system.name, system.version, total, same, different, refused)
    sys.stdout.write(f"{line}\n")
    if different or (args.strict and (refused or not total)):
        return EXIT_BROKEN
    return EXIT_OK


def add_store_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``audit verify`` and ``replay`` on the `solvi` parser's subcommands.

    Each command's parser sets ``func`` (and ``run``, which `solvi.cli.main`
    calls) to a handler taking the parsed namespace and returning the exit
    status.
    """
    audit = subparsers.add_parser(
        "audit",
        help="check a store's audit log",
        description="Commands on the audit log of a store.",
    )
    actions = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "verify",
        help="verify the hash chain of a store's audit log",
        description=(
            "Open STORE read only, walk its audit log and check every entry's hash and its "
            "link to the previous entry, and every stored response (record, catalog, "
            "version, hash, time, order) against its decision entry. Exit status 0 when "
            "intact; 1, naming the first bad entry, when anything was edited, deleted or "
            "reordered; 2 when STORE is missing or is not a solvi store."
        ),
    )
    check.add_argument("store", help=_STORE_HELP)
    check.set_defaults(func=cmd_audit_verify, run=cmd_audit_verify)

    again = subparsers.add_parser(
        "replay",
        help="replay stored records and report differences",
        description=(
            "Replay the records of the System's catalog stored before the command started, "
            "one at a time, writing nothing; print a line per difference, then a summary. "
            "Exit status 0 when none differs; 1 when a record's answers, values, steps or "
            "hash differ (with --strict, also when a record was refused or none was "
            "replayed); 2 when the target, the store or an option is wrong. Records of "
            "another catalog version, and records damaged in the store, are refused, not "
            "compared; a step that timed out when recorded is not run again."
        ),
    )
    again.add_argument("target", help=TARGET_HELP)
    again.add_argument("--store", help=f"the store to read (default: the System's); {_STORE_HELP}")
    again.add_argument(
        "--since", help="only records stored at or after this ISO 8601 time (UTC if no offset)"
    )
    again.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 also when a record is refused or no record is replayed (nothing compared)",
    )
    again.set_defaults(func=cmd_replay, run=cmd_replay)
