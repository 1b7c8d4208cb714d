"""The ``grounded-decision`` command: run the examples, check a policy, solve a parity game.

A path given to the command and what a policy or game file holds (a vertex's name, a
misspelt policy name) are shown through `solvi._terminal.visible`: a file named
``pol\x1b]0;pwned\x07.txt`` does not retitle the terminal, and a name of ten megabytes
does not flood it. ``--json`` output keeps them exact.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from grounded_decision.checks import QUESTIONS, Channel
from grounded_decision.errors import (
    GroundedDecisionError,
    ParityUnsolved,
    PgsolverFormatError,
    PolicySyntaxError,
)
from grounded_decision.examples import EXAMPLES, TITLES
from grounded_decision.module import Decision, Module
from grounded_decision.policy.parse import LINE_BREAK as POLICY_LINE_BREAK
from grounded_decision.policy.parse import MAX_POLICY_STATES, MAX_POLICY_TRANSITIONS, parse
from grounded_decision.statechart.certificate import check_certificate
from grounded_decision.statechart.game import NO_LIMITS, GameGraph, Limits
from grounded_decision.statechart.parity import ALGORITHMS, solve_parity
from grounded_decision.statechart.pgsolver import LINE_END as PGSOLVER_LINE_END
from grounded_decision.statechart.pgsolver import (
    read_pgsolver_with_ids,
    read_solution,
    write_solution,
)

__all__ = [
    "BROKEN_PIPE",
    "INTERRUPTED",
    "MAX_INPUT_BYTES",
    "format_channel",
    "format_decision",
    "main",
]

PROG = "grounded-decision"

BROKEN_PIPE = 141
"""Exit code when the reader of standard output went away (``| head``): 128 + SIGPIPE,
what a shell reports for a tool that the signal ended."""

INTERRUPTED = 130
"""Exit code after Ctrl-C: 128 + SIGINT, what a shell reports for a tool the signal ended."""

MAX_INPUT_BYTES = 16 * 2**20
"""Largest policy or game file the command reads (16 MiB) unless ``solve --max-bytes``
says otherwise; a bigger one is refused rather than read into memory."""

_BOM = b"\xef\xbb\xbf"


class _Failure(Exception):
    """A one-line error for the user: a file that cannot be read or written."""


def _out(text: str) -> None:
    """Print to standard output; a full disk or closed terminal is a ``_Failure``."""
    _on_stdout(lambda: print(text))


def _flush() -> None:
    """Flush standard output inside ``main``, so its errors are reported, not left to exit."""
    _on_stdout(sys.stdout.flush)


def _on_stdout(write: Callable[[], None]) -> None:
    """Run a write to standard output; a broken pipe passes through for ``main`` to end."""
    try:
        write()
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write standard output: {exc.strerror or exc}"
        raise _Failure(msg) from exc


def _visible(text: object) -> str:
    """``text`` as `solvi._terminal.visible` shows it on a terminal: escaped, and cut
    when very long."""
    # imported on first use: loading solvi costs about 0.17 s, which ``examples``,
    # ``--json`` and ``--mermaid`` (they show no path) need not pay
    from solvi._terminal import visible

    return visible(text)


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"


def _read_text(
    path: str,
    max_bytes: int | None = None,
    option: str | None = None,
    *,
    breaks: re.Pattern[str] = POLICY_LINE_BREAK,
) -> str:
    """The file's text as UTF-8 (a leading byte order mark is skipped).

    At most ``max_bytes`` (``MAX_INPUT_BYTES`` when ``None``) are read; a refusal names
    ``option``, the command's way to raise the cap, when there is one. ``breaks`` are the
    line ends of the parser that reads the text, so a byte that is not UTF-8 is reported
    on the line that parser would name.
    """
    limit = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    data = _read_bytes(path, limit)
    if len(data) > limit:
        msg = f"cannot read {_visible(path)}: larger than {_size(limit)}, the most read"
        if option is not None:
            msg += f"; pass {option} N to read up to N bytes"
        raise _Failure(msg)
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        before = data[skip:offset].decode("utf-8")  # valid up to the bad byte
        line = len(breaks.findall(before)) + 1
        msg = (
            f"{_visible(path)}:{line}: not UTF-8 text: byte 0x{data[offset]:02x}"
            f" at offset {offset}; save the file as UTF-8"
        )
        raise _Failure(msg) from exc


#: how much of a file one read asks for: a cap of a terabyte allocates no terabyte
_CHUNK = 2**20

#: open for reading without waiting: a named pipe opens at once (and is then refused)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _read_bytes(path: str, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of a regular file (symlinks followed), read in chunks.

    A named pipe, device or directory is refused after opening without blocking and
    before any read, so a pipe with no writer cannot hang the command.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        msg = f"cannot read {_visible(path)}: {exc.strerror or _visible(exc)}"
        raise _Failure(msg) from exc
    kind = _file_kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        msg = f"cannot read {_visible(path)}: it is {kind}, not a regular file; give a file's path"
        raise _Failure(msg)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        chunks: list[bytes] = []
        got = 0
        try:
            while got <= limit:
                chunk = handle.read(min(_CHUNK, limit + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
        except OSError as exc:
            msg = f"cannot read {_visible(path)}: {exc.strerror or _visible(exc)}"
            raise _Failure(msg) from exc
    return b"".join(chunks)


def _file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, for the refusal; ``None`` for a file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _check_writable(path: str) -> None:
    """Refuse an output path that cannot be written, before any work is spent on it."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        reason = "it is a directory"
    elif not folder.is_dir():
        reason = f"there is no directory {_visible(folder)}"
    elif not os.access(target if target.exists() else folder, os.W_OK):
        reason = "permission denied"
    else:
        return
    msg = f"cannot write {_visible(path)}: {reason}; choose another --solution path"
    raise _Failure(msg)


def _write_text(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        msg = f"cannot write {_visible(path)}: {exc.strerror or _visible(exc)}"
        raise _Failure(msg) from exc


def format_channel(channel: Channel) -> str:
    """Return a check's two lines: name, PASS/FAIL and question; then its summary."""
    status = "PASS" if channel.passed else "FAIL"
    question = QUESTIONS.get(channel.name, "")
    return f"         {channel.name:16} {status}  {question}\n{'':32}{channel.summary}"


def format_decision(number: int, decision: Decision) -> str:
    """Return a readable view of one decision with its six checks."""
    proposal = decision.proposed_action or "nothing"
    lines = [
        f"request {number}: {decision.event!r} for {decision.entity!r},"
        f" {decision.from_state} -> {decision.extras['state']}",
        f"  verdict   {decision.verdict.value} (proposed: {proposal})",
        f"  reason    {decision.reason}",
        *(format_channel(channel) for channel in decision.channels),
    ]
    return "\n".join(lines)


def _run_examples(names: Sequence[str], as_json: bool) -> int:
    results = {name: EXAMPLES[name]() for name in names}
    if as_json:
        payload = {name: [d.to_dict() for d in decisions] for name, decisions in results.items()}
        _out(json.dumps(payload, indent=2, sort_keys=True))
        return 0
    for name, decisions in results.items():
        _out(f"== {name}: {TITLES[name]}")
        for number, decision in enumerate(decisions, start=1):
            _out(format_decision(number, decision))
        _out("")
    return 0


#: the exit code of a check whose game a cap of `Limits` refused (not a failed check)
REFUSED = 4


def _check_policy(path: str, *, as_json: bool, mermaid: bool, no_limits: bool = False) -> int:
    text = _read_text(path)
    try:
        # the caps Module.from_expr compiles with: a policy sure to pass one stops here
        expr = parse(text, max_states=MAX_POLICY_STATES, max_transitions=MAX_POLICY_TRANSITIONS)
    except PolicySyntaxError as exc:
        where = f"policy line {exc.line}, column {exc.column}: "
        # the message quotes the policy's text: a name of ten megabytes is cut
        text = _visible(str(exc).removeprefix(where))
        print(f"{PROG}: {_visible(path)}:{exc.line}:{exc.column}: {text}", file=sys.stderr)
        return 1
    module = Module.from_expr(Path(path).stem, expr, NO_LIMITS if no_limits else None)
    if mermaid:
        _out(module.chart.to_mermaid())
        return 0
    channels = module.policy_channels
    if as_json:
        _out(json.dumps([c.to_dict() for c in channels], indent=2, sort_keys=True))
    else:
        _out(f"policy {_visible(path)}: {_visible(expr)}")
        for channel in channels:
            _out(format_channel(channel))
    limit = next((c.metrics.get("limit") for c in channels if c.metrics.get("limit")), None)
    if limit is not None:
        print(
            f"{PROG}: {_visible(path)}: the game check was refused by Limits.{limit},"
            " not failed; run with --no-limits to solve it whatever its size",
            file=sys.stderr,
        )
        return REFUSED
    return 0 if all(c.passed for c in channels) else 3


def _located(path: str, exc: PgsolverFormatError) -> _Failure:
    """``path:line: message``, the line named once (the reader's ``line N:`` dropped);
    the message may quote the file (a long list of successors), so it is cut too."""
    message = str(exc).removeprefix(f"line {exc.line}: ")
    return _Failure(f"{_visible(path)}:{exc.line}: {_visible(message)}")


def _read_game(path: str, max_bytes: int | None = None) -> tuple[GameGraph, tuple[int, ...]]:
    """The game in the file and each vertex's id there; format errors name file and line."""
    try:
        text = _read_text(path, max_bytes, "--max-bytes", breaks=PGSOLVER_LINE_END)
        return read_pgsolver_with_ids(text)
    except PgsolverFormatError as exc:
        raise _located(path, exc) from exc


def _gave_up(exc: ParityUnsolved) -> str:
    """A budget refusal in the command's terms: the option to raise, not the Limits field."""
    if exc.setting == "parity_steps":
        spent, option = f"more than {exc.limit:g} steps of work", "--steps"
    elif exc.setting == "parity_seconds":
        spent, option = f"{exc.limit:g} s", "--seconds"
    else:
        return f"not solved: {exc}"
    return f"not solved: gave up after {spent}; raise {option}, or leave it out for no budget"


def _check_solution(path: str, solution: str, *, max_bytes: int | None, as_json: bool) -> int:
    """Check a solution file someone wrote for the game, in the game file's ids."""
    game, ids = _read_game(path, max_bytes)
    try:
        winner, strategy = read_solution(
            _read_text(solution, max_bytes, "--max-bytes", breaks=PGSOLVER_LINE_END),
            len(game),
            ids=ids,
        )
    except PgsolverFormatError as exc:
        raise _located(solution, exc) from exc
    verdict = check_certificate(game, winner, strategy, ids=ids)
    if as_json:
        report = {
            "game": path,
            "solution": solution,
            "vertices": len(game),
            "verified": verdict.valid,
            "problem": verdict.problem,
            "vertex": None if verdict.vertex is None else ids[verdict.vertex],
        }
        _out(json.dumps(report, indent=2, sort_keys=True))
    elif verdict.valid:
        _out(
            f"{_visible(solution)}: certificate: verified for {_visible(path)}"
            f" ({len(game)} vertices)"
        )
    else:
        _out(f"{_visible(solution)}: certificate: {verdict.problem}")
    return 0 if verdict.valid else 3


def _solve_game(
    path: str,
    *,
    algorithm: str,
    solution: str | None,
    verify: bool,
    as_json: bool,
    max_bytes: int | None = None,
    limits: Limits = NO_LIMITS,
) -> int:
    if solution is not None:
        _check_writable(solution)
    game, ids = _read_game(path, max_bytes)
    started = time.perf_counter()
    try:
        solved = solve_parity(game, limits, algorithm=algorithm)
    except ParityUnsolved as exc:
        print(f"{PROG}: {_visible(path)}: {_gave_up(exc)}", file=sys.stderr)
        return REFUSED
    seconds = time.perf_counter() - started
    if solution is not None:
        _write_text(solution, write_solution(solved.winner, solved.strategy, ids=ids))
    verdict = check_certificate(game, solved.winner, solved.strategy, ids=ids) if verify else None
    even = sum(1 for side in solved.winner if side == 0)
    start_winner = solved.winner[game.start]
    report = {
        "game": path,
        "vertices": len(game),
        "algorithm": solved.algorithm,
        "seconds": round(seconds, 6),
        "steps": solved.steps,
        "even_wins": even,
        "odd_wins": len(game) - even,
        "start": ids[game.start],
        "start_winner": start_winner,
        "verified": None if verdict is None else verdict.valid,
        "problem": None if verdict is None else verdict.problem,
    }
    if as_json:
        _out(json.dumps(report, indent=2, sort_keys=True))
    else:
        _out(
            f"{_visible(path)}: {len(game)} vertices, {solved.algorithm} in {seconds:.3f} s;"
            f" Even wins {even}, Odd wins {len(game) - even};"
            f" vertex {ids[game.start]} is won by {'Even' if start_winner == 0 else 'Odd'}"
        )
        if verdict is not None:
            _out("certificate: verified" if verdict.valid else f"certificate: {verdict.problem}")
    return 0 if verdict is None or verdict.valid else 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Workflow policies whose decisions carry their own checks."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    examples = commands.add_parser("examples", help="run a shipped example and print decisions")
    examples.add_argument("name", nargs="?", help=f"one of: {', '.join(EXAMPLES)}")
    which = examples.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="run every example")
    which.add_argument("--list", action="store_true", help="list the examples")
    examples.add_argument("--json", action="store_true", help="print the records as JSON")
    check = commands.add_parser("check", help="parse a text policy and run its policy checks")
    check.add_argument("path", help="a file holding the policy text")
    output = check.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the reports as JSON")
    output.add_argument("--mermaid", action="store_true", help="print the chart as Mermaid")
    check.add_argument(
        "--no-limits",
        action="store_true",
        help="solve the game whatever its size (every cap of Limits off)",
    )
    solve = commands.add_parser("solve", help="solve a parity game in PGSolver format")
    solve.add_argument("path", help="a PGSolver game file (parity N; then one line per vertex)")
    solve.add_argument("--algorithm", choices=ALGORITHMS, help="the solver (default: auto)")
    solve.add_argument("--solution", metavar="OUT", help="write the solution (paritysol) here")
    solve.add_argument(
        "--verify", action="store_true", help="check the strategies with the independent checker"
    )
    solve.add_argument("--json", action="store_true", help="print the report as JSON")
    solve.add_argument(
        "--check",
        metavar="SOLUTION",
        help="check this solution file (paritysol, in the game file's ids) instead of solving",
    )
    solve.add_argument(
        "--max-bytes",
        type=_positive(int),
        metavar="N",
        help=f"read files of up to N bytes (default: {MAX_INPUT_BYTES})",
    )
    solve.add_argument(
        "--seconds",
        type=_positive(float),
        metavar="S",
        help="give up after S seconds of solving (default: no budget)",
    )
    solve.add_argument(
        "--steps",
        type=_positive(int),
        metavar="N",
        help="give up after N units of solver work (default: no budget)",
    )
    return parser


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type: a number above 0 of ``kind`` (finite, for seconds)."""

    def read(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = -1
        if not 0 < value < float("inf"):
            msg = f"expected a number above 0, got {text!r}"
            raise argparse.ArgumentTypeError(msg)
        return value

    read.__name__ = kind.__name__
    return read


def _solve_command(args: argparse.Namespace) -> int:
    """``solve``: check a given solution, or solve within the budgets given."""
    if args.check is not None:
        clashes = [
            option
            for option, given in (
                ("--algorithm", args.algorithm is not None),
                ("--solution", args.solution is not None),
                ("--verify", args.verify),
                ("--seconds", args.seconds is not None),
                ("--steps", args.steps is not None),
            )
            if given
        ]
        if clashes:
            print(
                f"{PROG}: solve --check checks a solution and solves nothing; drop {clashes[0]}",
                file=sys.stderr,
            )
            return 2
        return _check_solution(args.path, args.check, max_bytes=args.max_bytes, as_json=args.json)
    return _solve_game(
        args.path,
        algorithm=args.algorithm or "auto",
        solution=args.solution,
        verify=args.verify,
        as_json=args.json,
        max_bytes=args.max_bytes,
        limits=Limits(None, None, None, parity_steps=args.steps, parity_seconds=args.seconds),
    )


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run the parsed command; return its exit code."""
    if args.command == "examples":
        if args.name is not None and (args.all or args.list):
            option = "--all" if args.all else "--list"
            print(f"{PROG}: give an example's name or {option}, not both", file=sys.stderr)
            return 2
        if args.list:
            for name in EXAMPLES:
                _out(f"{name:22} {TITLES[name]}")
            return 0
        if args.all:
            return _run_examples(list(EXAMPLES), args.json)
        if args.name is None:
            parser.error("examples needs a NAME or --all (see --list)")
        if args.name not in EXAMPLES:
            known = ", ".join(EXAMPLES)
            print(
                f"{PROG}: no example named {args.name!r}; choose one of: {known}", file=sys.stderr
            )
            return 2
        return _run_examples([args.name], args.json)
    if args.command == "solve":
        return _solve_command(args)
    return _check_policy(
        args.path, as_json=args.json, mermaid=args.mermaid, no_limits=args.no_limits
    )


def _quiet_broken_pipe() -> int:
    """Point standard output at the null device, so the exit's final flush cannot fail."""
    # ValueError or OSError: standard output has no file descriptor (a test's capture).
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 bad input, 2 usage, 3 check
    failed, 4 a check's game refused by a cap of ``Limits``: `REFUSED`).

    ``solve`` exits 3 when ``--verify`` or ``--check`` rejects the solution and 4 when
    ``--seconds`` or ``--steps`` ran out. A file that cannot be read or written is 1, with
    one line naming it; when the reader of standard output goes away (``| head``) the
    command stops quietly with ``BROKEN_PIPE`` (141), and Ctrl-C stops it with one line
    and ``INTERRUPTED`` (130).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code = _run(parser, args)
        _flush()
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except _Failure as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except GroundedDecisionError as exc:
        # a policy's names are in its compile errors: a long one is cut
        print(f"{PROG}: {_visible(exc)}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
