"""The `solvi` command: check a catalog, print a flow, show a stored record.

``solvi check TARGET`` reports cycles among facts, the request keys each
question needs and the parts no question reaches. ``solvi plan TARGET --keys
a,b`` prints the flow for requests with those keys. ``solvi show FILE`` prints a
record written by ``Response.to_json()``; ``solvi serve TARGET`` serves a System
over HTTP (see `solvi.serve`). A TARGET is ``module:attribute`` or
``path/to/file.py:attribute``, naming a `Catalog`, a `System` or a function
without arguments that returns one; every command loads it with
`solvi._targets.load_system`, so they all accept the same targets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import warnings as warnings_module
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from solvi._targets import TARGET_HELP, TargetError, load_system
from solvi._terminal import visible
from solvi.catalog import Part
from solvi.errors import RequestError, _closest
from solvi.flow import Flow
from solvi.journalcli import add_journal_commands
from solvi.mistakes import SolviWarning, key_typos, ungoverning_checks
from solvi.response import record_hashes, render
from solvi.serve import add_serve_command
from solvi.storecli import add_store_commands
from solvi.strategy import cycle_text, each_reachable_facts, fact_cycles
from solvi.system import System

__all__ = ["main"]


class _Failure(Exception):
    """A command cannot go on; the message is printed on one line, without a traceback."""


#: The exit status when the reader of standard output went away (``| head``), as a
#: shell reports a process ended by SIGPIPE; grounded-decision uses the same.
BROKEN_PIPE = 141


# -- solvi check -------------------------------------------------------------------


def _producers(parts: Iterable[Part]) -> dict[str, list[Part]]:
    producers: dict[str, list[Part]] = {}
    for p in parts:
        producers.setdefault(p.provides, []).append(p)
    return producers


def _distinct_cycles(producers: Mapping[str, list[Part]]) -> list[list[str]]:
    """The planner's cycle for each fact on one, each cycle once, from its least fact."""
    distinct: set[tuple[str, ...]] = set()
    for path in fact_cycles(producers).values():
        ring = path[:-1]
        first = ring.index(min(ring))
        rotated = ring[first:] + ring[:first]
        distinct.add((*rotated, rotated[0]))
    return [list(path) for path in sorted(distinct)]


def _check_report(target: str, system: System) -> dict[str, Any]:
    parts = [p for p in system.catalog.parts if p.kind != "extract"]
    producers = _producers(parts)
    reached = dict(
        zip(
            (q.name for q in system.questions),
            each_reachable_facts(system.questions, parts),
            strict=True,
        )
    )
    keys: dict[str, list[str]] = {}
    for q in system.questions:
        for fact in sorted(reached[q.name]):
            for p in producers[fact]:
                for i in p.inputs:
                    if i not in producers and q.name not in keys.setdefault(i, []):
                        keys[i].append(q.name)
    request_keys = {k: keys[k] for k in sorted(keys)}
    # The real planner, given every request key, says which questions can never
    # be answered and why (in its own words).
    widest = system.plan(request_keys)
    cycles = []
    errors: list[str] = []
    warnings: list[str] = []
    for path in _distinct_cycles(producers):
        on_cycle = set(path)
        affected = {}
        for q in system.questions:
            if reached[q.name] & on_cycle:
                plan = widest.question(q.name)
                affected[q.name] = plan.blocked or f"needs {', '.join(sorted(on_cycle))}"
        cycles.append({"path": path, "questions": affected})
        text = cycle_text(path)
        if affected:
            errors.append(
                f"cycle {text}: no request can compute these facts, so these questions "
                f"always abstain: {', '.join(affected)}; make one part on the cycle read "
                f"something else"
            )
        else:
            errors.append(
                f"cycle {text}: no request can compute these facts; make one part on the "
                f"cycle read something else"
            )
    by_name = {p.name: p for p in parts}
    for q in system.questions:
        rule = by_name.get(q.rule if q.rule is not None else q.name)
        if q.uses is None and (rule is None or rule.kind != "rule"):
            rules = [p.name for p in parts if p.kind == "rule"]
            warnings.append(
                f"question {q.name!r} has no rule of that name and no uses=, so it reports "
                f"every fact a request lets the flow compute{_closest(q.name, rules)}; "
                f"name its rule, or list the facts it reports with uses="
            )
    errors.extend(ungoverning_checks(parts, system.questions))
    warnings.extend(key_typos(parts))
    needed = set().union(*reached.values()) if reached else set()
    unreachable = [p.name for p in parts if p.provides not in needed and not p.is_hard_check]
    warnings.extend(
        f"part {name!r} is reached by no question; read its fact in a rule, list it in a "
        f"Question's requires=, or remove it"
        for name in unreachable
    )
    return {
        "target": target,
        "catalog": system.catalog.name,
        "parts": [p.name for p in system.catalog.parts],
        "questions": [q.name for q in system.questions],
        "request_keys": request_keys,
        "cycles": cycles,
        "unreachable": unreachable,
        "errors": errors,
        "warnings": warnings,
        "ok": not errors,
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _print_check(report: Mapping[str, Any]) -> None:
    print(
        f"checked catalog {report['catalog']} ({report['target']}): "
        f"{_count(len(report['parts']), 'part')}, "
        f"{_count(len(report['questions']), 'question')}"
    )
    keys: Mapping[str, list[str]] = report["request_keys"]
    if keys:
        print("request keys (no part produces them, so requests bring them):")
        width = max(len(k) for k in keys)
        for key, questions in keys.items():
            print(f"  {key:<{width}}  needed by {', '.join(questions)}")
    for line in report["errors"]:
        print(f"error: {line}")
    for line in report["warnings"]:
        print(f"warning: {line}")
    n_err, n_warn = len(report["errors"]), len(report["warnings"])
    if not n_err and not n_warn:
        print("ok: no cycles, every part is reached by a question")
    else:
        print(f"{_count(n_err, 'error')}, {_count(n_warn, 'warning')}")


def _cmd_check(args: argparse.Namespace) -> int:
    # The report lists what the System warns of when it is built; print it once.
    with warnings_module.catch_warnings():
        warnings_module.simplefilter("ignore", SolviWarning)
        try:
            system = load_system(args.target)
        except TargetError as exc:
            if args.json and exc.catalog_mistake:
                # A program reading the report gets one, saying why there is no other.
                failed = {"target": args.target, "ok": False, "errors": [str(exc)]}
                print(json.dumps(failed, indent=2))
            raise
    report = _check_report(args.target, system)
    if args.strict:
        report["ok"] = report["ok"] and not report["warnings"]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_check(report)
    return 0 if report["ok"] else 1


# -- solvi plan ----------------------------------------------------------------------


def _kind(part: Part) -> str:
    if part.is_hard_check:
        return "hard check"
    return part.kind


def _print_plan(system: System, flow: Flow) -> None:
    keys = ", ".join(sorted(flow.keys)) or "(none)"
    print(f"flow of {system.name} for keys {keys} ({flow.strategist} strategist)")
    read = {i for p in system.catalog.parts for i in p.inputs}
    unused = sorted(k for k in flow.keys if k not in read)
    if unused:
        print(f"note: no part reads {', '.join(unused)}")
    rows: list[tuple[str, str, str]] = []
    for node in flow.nodes:
        for n, p in enumerate(node.parts, start=1):
            what = _kind(p)
            if p.provides != p.name:
                what += f" -> {p.provides}"
            if len(node.parts) > 1:
                what += f" (producer {n} of {len(node.parts)})"
            rows.append((p.name, f"phase {node.phase}", what))
    print("steps")
    if not rows:
        print("  (none)")
    width = max((len(r[0]) for r in rows), default=0)
    for n, (name, phase, what) in enumerate(rows, start=1):
        print(f"  {n:>2}. {name:<{width}}  {phase}  {what}")
    print("questions")
    for q in flow.questions:
        print(f"  {q.name}")
        if q.blocked is not None:
            print(f"    blocked: {q.blocked} (it abstains without running anything)")
            continue
        print(f"    targets: {', '.join(q.targets) or '(none)'}")
        print(f"    narrowed: {'yes' if q.narrowed else 'no (reports everything computable)'}")
        print(f"    hard checks: {', '.join(q.governing) or '(none)'}")
    print("skipped")
    if not flow.skipped:
        print("  (none)")
    width = max((len(name) for name in flow.skipped), default=0)
    for name, reason in flow.skipped.items():
        print(f"  {name:<{width}}  {reason}")


def _cmd_plan(args: argparse.Namespace) -> int:
    system = load_system(args.target)
    # Repeated --keys add up: `--keys claim --keys documents` is `--keys claim,documents`.
    given = ",".join(args.keys)
    keys = list(dict.fromkeys(k.strip() for k in given.split(",") if k.strip()))
    try:
        flow = system.plan(keys)
    except RequestError as exc:  # a key no request may bring, such as a hard check
        msg = f"--keys {given}: {exc}"
        raise _Failure(msg) from exc
    if args.mermaid:
        print(flow.to_mermaid())
    else:
        _print_plan(system, flow)
    return 0


# -- solvi show ----------------------------------------------------------------------

_RECORD_FIELDS = ("catalog", "hash", "early_exit", "answers", "steps", "skipped")


_FIX_SHOW = "pass a file written from a Response's to_json()"


#: the largest record `solvi show` reads: far above any record, far below a device
#: such as /dev/zero that never ends
MAX_SHOW_BYTES = 64 * 2**20


def _read_show(file: str, name: str) -> str:
    """The text of the file (or standard input) `solvi show` was given."""
    try:
        if file == "-":
            raw = getattr(sys.stdin, "buffer", None)  # None when replaced by a text stream
            data = (
                raw.read(MAX_SHOW_BYTES + 1)
                if raw is not None
                else sys.stdin.read(MAX_SHOW_BYTES + 1).encode("utf-8", "surrogatepass")
            )
        else:
            # without waiting: a named pipe opens at once, and is refused below
            fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    msg = f"cannot read {name}: not a regular file; {_FIX_SHOW}"
                    raise _Failure(msg)
                data = handle.read(MAX_SHOW_BYTES + 1)
    except OSError as exc:
        msg = f"cannot read {name}: {exc.strerror or exc}"
        raise _Failure(msg) from exc
    if len(data) > MAX_SHOW_BYTES:
        msg = f"cannot read {name}: larger than {MAX_SHOW_BYTES:,} bytes; {_FIX_SHOW}"
        raise _Failure(msg)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
        msg = f"{name} is not UTF-8 text ({where}: {exc.reason}); {_FIX_SHOW}"
        raise _Failure(msg) from exc


def _parse_show(text: str, name: str) -> Any:
    """The JSON document of a record, refused in one line when Python cannot read it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{name} is not JSON ({exc}); {_FIX_SHOW}"
        raise _Failure(msg) from exc
    except RecursionError as exc:
        msg = f"{name} nests arrays or objects too deeply to be read; {_FIX_SHOW}"
        raise _Failure(msg) from exc
    except ValueError as exc:  # an integer longer than int() converts
        limit = sys.get_int_max_str_digits()
        msg = f"{name} holds an integer of more than {limit} digits, which is refused; {_FIX_SHOW}"
        raise _Failure(msg) from exc


def _cmd_show(args: argparse.Namespace) -> int:
    name = "standard input" if args.file == "-" else repr(args.file)
    record = _parse_show(_read_show(args.file, name), name)
    missing = [f for f in _RECORD_FIELDS if not isinstance(record, dict) or f not in record]
    if missing:
        msg = f"{name} is not a solvi decision record (no {', '.join(missing)}); {_FIX_SHOW}"
        raise _Failure(msg)
    try:  # all of it before any of it is printed: a damaged record prints nothing
        shown = render(record)
        own, _ = record_hashes(record)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        said = visible(f"{type(exc).__name__}: {exc}")
        msg = f"{name} is a damaged decision record ({said}); {_FIX_SHOW}"
        raise _Failure(msg) from exc
    print(shown)
    if own != record["hash"]:
        print(
            f"solvi show: {name} was edited after it was made: it carries hash "
            f"{visible(str(record['hash'])[:12])}, its content gives {own[:12]}",
            file=sys.stderr,
        )
        return 1
    return 0


# -- entry point -----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solvi",
        description=(
            "Check catalogs, print flows, show decision records, serve Systems, verify "
            "and replay stores, and prune journals."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="report cycles, hard checks that gate nothing, request keys and unreachable parts",
        description=(
            "Report every cycle among facts and every hard check that governs no question "
            "(errors), the request keys each question needs (information), and the parts "
            "no question reaches and request keys that look misspelt (warnings). Exit "
            "status: 0 clean, 1 catalog errors (or warnings, with --strict), 2 usage or "
            "target errors."
        ),
    )
    check.add_argument("target", help=TARGET_HELP)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--strict", action="store_true", help="fail (exit status 1) on warnings as well"
    )
    check.set_defaults(run=_cmd_check)

    plan = commands.add_parser(
        "plan",
        help="print the flow for a set of request keys",
        description="Print the flow a System plans for requests that bring exactly these keys.",
    )
    plan.add_argument("target", help=TARGET_HELP)
    plan.add_argument(
        "--keys",
        required=True,
        action="append",
        help="the request's keys, comma-separated (e.g. claim,documents); repeated, they add up",
    )
    plan.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart instead")
    plan.set_defaults(run=_cmd_plan)

    show = commands.add_parser(
        "show",
        help="print a stored decision record",
        description="Print a record written by Response.to_json() ('-' reads standard input).",
    )
    show.add_argument("file", help="a JSON file written from res.to_json(), or -")
    show.set_defaults(run=_cmd_show)

    add_serve_command(commands)
    add_store_commands(commands)
    add_journal_commands(commands)
    return parser


def _quiet_broken_pipe() -> int:
    """Point standard output at the null device, so the flush at exit cannot fail again."""
    # OSError or ValueError: standard output has no file descriptor (a test's capture).
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `solvi` command line.

    Args:
        argv: the arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 when all is well; 1 when the catalog has errors (`check`
        found some, or building its System failed on a catalog mistake); 2 for a
        usage error or a target or file that cannot be loaded; 141 when the reader of
        standard output went away (``solvi show FILE | head``), without a traceback.
    """
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
        sys.stdout.flush()  # here, so that a broken pipe is caught below, not at exit
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except TargetError as exc:
        print(f"solvi {args.command}: {exc}", file=sys.stderr)
        return 1 if exc.catalog_mistake else 2
    except _Failure as exc:
        print(f"solvi {args.command}: {exc}", file=sys.stderr)
        return 2
    return status
