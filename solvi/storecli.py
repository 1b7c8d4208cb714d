"""The store commands of `solvi`: ``audit verify STORE`` and ``replay TARGET``.

``solvi audit verify STORE`` walks the audit log of a store and exits 1,
naming the first bad entry, when it was tampered with. ``solvi replay
module:system [--store STORE] [--since ISO]`` replays the stored records of
that System's catalog, prints a summary and exits 1 on any difference.
`add_store_commands` registers both on the `solvi` parser.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from solvi._targets import TargetError, load_target
from solvi.audit import verify
from solvi.errors import PlanError, SolviError
from solvi.replay import replay_store
from solvi.storage import Store, open_store
from solvi.system import System

__all__ = ["add_store_commands", "cmd_audit_verify", "cmd_replay"]

_STORE_HELP = "a SQLite file, sqlite:///path/to/file.db or postgresql://user@host:port/database"


class _Failure(Exception):
    """A command cannot go on; its message is printed on one line."""


def _open_existing(spec: str) -> Store:
    """Open a store that must exist already (a missing SQLite file is an error, not created)."""
    if not spec.startswith(("postgresql://", "postgres://")):
        path = spec[len("sqlite:///") :] if spec.startswith("sqlite:///") else spec
        if "://" not in spec and not Path(path).is_file():
            msg = f"no store at {spec!r}; give the path of an existing store ({_STORE_HELP})"
            raise _Failure(msg)
    try:
        return open_store(spec)
    except (SolviError, ValueError) as exc:
        raise _Failure(str(exc)) from exc


def _fail(command: str, exc: BaseException) -> int:
    sys.stderr.write(f"solvi {command}: {exc}\n")
    return 1


def cmd_audit_verify(args: argparse.Namespace) -> int:
    """Verify a store's audit log: exit status 0 when intact, 1 when not (or unreadable)."""
    try:
        store = _open_existing(args.store)
    except _Failure as exc:
        return _fail("audit verify", exc)
    try:
        report = verify(store)
    finally:
        store.close()
    if report.ok:
        sys.stdout.write(f"{args.store}: {report}\n")
        return 0
    sys.stdout.write(
        f"{args.store}: audit log TAMPERED: first bad entry {report.first_bad}: "
        f"{report.problem} ({report.entries} entries read)\n"
    )
    return 1


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
        value = load_target(target)
        system = value if isinstance(value, System) else System(value)
    except (TargetError, PlanError) as exc:
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
    """Replay a System's stored records: exit status 0 when none differs, 1 otherwise."""
    try:
        since = _since(args.since)
        system, store, opened = _replay_inputs(args)
    except _Failure as exc:
        return _fail("replay", exc)
    try:
        summary = replay_store(system, store, since=since)
    finally:
        if opened:
            store.close()
    sys.stdout.write(f"{summary}\n")
    return 0 if summary.ok else 1


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
            "Walk the audit log of STORE and check every entry's hash and its link to the "
            "previous entry, and every stored record against its decision entry. Exit "
            "status 1, naming the first bad entry, when anything was edited, deleted or "
            "reordered."
        ),
    )
    check.add_argument("store", help=_STORE_HELP)
    check.set_defaults(func=cmd_audit_verify, run=cmd_audit_verify)

    again = subparsers.add_parser(
        "replay",
        help="replay stored records and report differences",
        description=(
            "Replay every stored record of the System's catalog through the System and "
            "print a summary. Exit status 1 when any record's answers, values or hash "
            "differ. Records of another catalog version are refused, not compared; "
            "answers that depended on a step that timed out are skipped."
        ),
    )
    again.add_argument("target", help="module:attribute or path/to/file.py:attribute (a System)")
    again.add_argument("--store", help=f"the store to read (default: the System's); {_STORE_HELP}")
    again.add_argument(
        "--since", help="only records stored at or after this ISO 8601 time (UTC if no offset)"
    )
    again.set_defaults(func=cmd_replay, run=cmd_replay)
