"""What the journal adds to `aask` on an I/O-bound flow: off, SQLite NORMAL and FULL, PostgreSQL.

The flow: 10 async parts in 3 layers, each awaiting ``anyio.sleep(0.002)``, and
a sync rule reading the last layer (11 steps, critical path 3 x 2 ms). Every
mode runs in one process on one event loop, rounds interleaved so that load
elsewhere on the machine spoils a round of every mode rather than every round
of one. The PostgreSQL journal is measured when SOLVI_TEST_POSTGRES_DSN names a
server (in a schema of its own, dropped afterwards).

Reported per mode: p50 and p99 latency of ``await system.aask(state)`` one
request at a time, and the overhead versus the journal off; the commits handed
over per request and the time in them on the event loop (a NORMAL journal's
whole commit, one append to its log; the others' hand-over to the writer
thread, which the loop then awaits); the milliseconds per request of
transactions on the writer thread and their number (NORMAL: applying its log
behind the requests; FULL: a transaction per commit; PostgreSQL: a round
trip); and the wall time per request when 32 requests run at once.
``NORMAL`` survives a killed process, not a power loss or an OS crash;
``FULL`` syncs every commit and survives both. PostgreSQL's
durability is the server's: its ``fsync`` and ``synchronous_commit`` settings
are printed with the table.

    python benchmarks/journal_overhead.py [--quick] [--json]

``--json`` prints the figures as one JSON document instead of the table
(``against.py`` reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from solvi import Catalog, System
from solvi._db.journal_base import Unit
from solvi._db.journal_rows import Item
from solvi._db.writer import Ticket
from solvi.journal import Journal, PostgresJournal, SQLiteJournal

DELAY = 0.002
POSTGRES = "PostgreSQL"
GOAL_P50_PERCENT = 10.0
#: untimed seconds after each mode's round, so that one mode's last commits do
#: not land in the next mode's round
QUIET = 0.2
DSN_VARIABLE = "SOLVI_TEST_POSTGRES_DSN"


class Timing(Journal):
    """Adds up what a journal's commits cost; mixed in ahead of a backend's class.

    `commits` and `caller_seconds`: the calls that hand a commit over (``log`` and
    ``submit``) and the time inside them, on the committing thread (the event
    loop's): for a journal that logs its commits, the whole commit; for the others,
    the hand-over to the writer thread, which the caller then awaits. `writes` and
    `seconds`: the transactions on the writer thread and their time.
    """

    seconds: float = 0.0
    writes: int = 0
    caller_seconds: float = 0.0
    commits: int = 0

    def reset(self) -> None:
        """Start counting again."""
        self.seconds, self.writes, self.caller_seconds, self.commits = 0.0, 0, 0.0, 0

    def _write(self, units: list[Any]) -> None:
        start = time.perf_counter()
        super()._write(units)  # type: ignore[safe-super]  # the backend after this mixin defines it
        self.seconds += time.perf_counter() - start
        self.writes += 1

    def log(self, request_id: str, items: list[Item]) -> Ticket:
        if not self.logs_commits:  # the items go through submit, which counts them
            return super().log(request_id, items)
        start = time.perf_counter()
        ticket = super().log(request_id, items)
        self.caller_seconds += time.perf_counter() - start
        self.commits += 1
        return ticket

    def submit(self, unit: Unit, *, direct: bool = False) -> Ticket:
        start = time.perf_counter()
        ticket = super().submit(unit, direct=direct)
        self.caller_seconds += time.perf_counter() - start
        self.commits += 1
        return ticket


class TimedJournal(Timing, SQLiteJournal):
    """The SQLite journal, timed."""

    def __init__(self, path: Path, synchronous: str) -> None:
        super().__init__(path, synchronous=synchronous)


class TimedPostgresJournal(Timing, PostgresJournal):
    """The PostgreSQL journal, timed."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)


def build_catalog(delay: float = DELAY) -> Catalog:
    """Three layers of I/O-bound async parts (4, 4, 2) and a rule."""
    cat = Catalog("journal_overhead")

    async def io(value: int) -> int:
        await anyio.sleep(delay)
        return value + 1

    @cat.fn
    async def a0(x: int) -> int:
        return await io(x)

    @cat.fn
    async def a1(x: int) -> int:
        return await io(x)

    @cat.fn
    async def a2(x: int) -> int:
        return await io(x)

    @cat.fn
    async def a3(x: int) -> int:
        return await io(x)

    @cat.fn
    async def b0(a0: int, a1: int) -> int:
        return await io(a0 + a1)

    @cat.fn
    async def b1(a1: int, a2: int) -> int:
        return await io(a1 + a2)

    @cat.fn
    async def b2(a2: int, a3: int) -> int:
        return await io(a2 + a3)

    @cat.fn
    async def b3(a3: int, a0: int) -> int:
        return await io(a3 + a0)

    @cat.fn
    async def c0(b0: int, b1: int) -> int:
        return await io(b0 + b1)

    @cat.fn
    async def c1(b2: int, b3: int) -> int:
        return await io(b2 + b3)

    @cat.rule
    def answer(c0: int, c1: int) -> int:
        return c0 + c1

    return cat


def systems(root: Path, dsn: str | None = None, delay: float = DELAY) -> dict[str, System]:
    """One System per mode, each on its own journal (PostgreSQL's only with a `dsn`)."""
    out = {"off": System(build_catalog(delay))}
    for sync in ("NORMAL", "FULL"):
        journal: Journal = TimedJournal(root / f"{sync.lower()}.db", sync)
        out[sync] = System(build_catalog(delay), journal=journal)
    if dsn is not None:
        journal = TimedPostgresJournal(dsn)
        out[POSTGRES] = System(build_catalog(delay), journal=journal)
    return out


@contextmanager
def postgres_schema(dsn: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A DSN reaching a fresh schema (dropped afterwards), and the server's durability settings."""
    import psycopg

    schema = f"journal_overhead_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
        settings = {}
        for name in ("fsync", "synchronous_commit", "server_version"):
            row = conn.execute(f"SHOW {name}".encode()).fetchone()
            settings[name] = "?" if row is None else str(row[0])
    joiner = "&" if "?" in dsn else "?"
    try:
        yield f"{dsn}{joiner}options=-csearch_path%3D{schema}", settings
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))
    return ordered[rank]


async def measure(
    by_mode: dict[str, System], *, rounds: int, per_round: int, burst: int
) -> dict[str, dict[str, Any]]:
    """Latency one at a time, journal seconds, and wall time for `burst` requests at once."""
    state = {"x": 1}
    out: dict[str, dict[str, Any]] = {
        m: {"lat": [], "burst": [], "hashes": set(), "answers": set()} for m in by_mode
    }
    for system in by_mode.values():  # warm up: plans compiled, files created
        for _ in range(3):
            await system.aask(state)
    for system in by_mode.values():
        journal = system.journal
        if isinstance(journal, Timing):
            journal.reset()
    for _ in range(rounds):
        for m, system in by_mode.items():
            for _ in range(per_round):
                start = time.perf_counter()
                response = await system.aask(state)
                out[m]["lat"].append(time.perf_counter() - start)
                out[m]["hashes"].add(response.hash)
                out[m]["answers"].add(response["answer"].value)
            await anyio.sleep(QUIET)
    for m, system in by_mode.items():
        journal = system.journal
        n = len(out[m]["lat"])
        if isinstance(journal, Timing):
            out[m]["journal_ms"] = journal.seconds / n * 1000
            out[m]["writes"] = journal.writes / n
            out[m]["caller_ms"] = journal.caller_seconds / n * 1000
            out[m]["commits"] = journal.commits / n
        else:
            out[m]["journal_ms"] = out[m]["writes"] = 0.0
            out[m]["caller_ms"] = out[m]["commits"] = 0.0
    for _ in range(rounds):
        for m, system in by_mode.items():
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(burst):
                    tg.start_soon(system.aask, state)
            out[m]["burst"].append((time.perf_counter() - start) / burst)
            await anyio.sleep(QUIET)
    return out


def report(
    results: dict[str, dict[str, Any]], delay: float, postgres: dict[str, str] | None
) -> bool:
    """Print the table; True when every mode gave the same answer and hash."""
    modes = list(results)
    off = results["off"]
    p50_off = percentile(off["lat"], 50)
    p99_off = percentile(off["lat"], 99)
    burst_off = statistics.median(off["burst"])
    print(f"aask on 10 async parts in 3 layers, each awaiting {delay * 1000:g} ms, and a rule")
    journals = "SQLite NORMAL and FULL" + (", PostgreSQL" if postgres is not None else "")
    print(f"{len(off['lat'])} requests per mode, one at a time; journals: {journals}")
    head = (
        f"{'mode':<12}{'p50 ms':>9}{'p99 ms':>9}{'p50 +%':>9}{'p99 +%':>9}"
        f"{'commits/req':>13}{'loop ms/req':>13}{'writer ms/req':>15}{'txns/req':>10}"
        f"{'32 at once ms/req':>19}{'+%':>8}"
    )
    print(head)
    for m in modes:
        r = results[m]
        p50, p99 = percentile(r["lat"], 50), percentile(r["lat"], 99)
        burst = statistics.median(r["burst"])
        print(
            f"{m:<12}{p50 * 1000:>9.2f}{p99 * 1000:>9.2f}"
            f"{(p50 / p50_off - 1) * 100:>9.1f}{(p99 / p99_off - 1) * 100:>9.1f}"
            f"{r['commits']:>13.1f}{r['caller_ms']:>13.3f}{r['journal_ms']:>15.3f}"
            f"{r['writes']:>10.2f}{burst * 1000:>19.3f}{(burst / burst_off - 1) * 100:>8.1f}"
        )
    for m in modes[1:]:
        over = (percentile(results[m]["lat"], 50) / p50_off - 1) * 100
        verdict = "met" if over <= GOAL_P50_PERCENT else "NOT met"
        print(f"goal p50 overhead <= {GOAL_P50_PERCENT:g}% with {m}: {verdict} ({over:.1f}%)")
    print(
        "commits/req and loop ms/req: commits handed over per request, and the time in "
        "them on the event loop (a NORMAL journal's whole commit, an append to its log; "
        "the others' hand-over to the writer thread, then awaited); writer ms/req and "
        "txns/req: transactions on the writer thread (NORMAL: applying its log, behind "
        "the requests)"
    )
    print("NORMAL survives a killed process, not a power loss; FULL survives both")
    if postgres is None:
        print(f"PostgreSQL not measured: set {DSN_VARIABLE}")
    else:
        print(
            f"PostgreSQL {postgres['server_version']} over TCP, fsync={postgres['fsync']}, "
            f"synchronous_commit={postgres['synchronous_commit']}"
            + (
                " (commits are not flushed to disk: no power-loss durability, and faster than "
                "a durable server)"
                if postgres["fsync"] == "off" or postgres["synchronous_commit"] == "off"
                else ""
            )
        )
    hashes = set().union(*(results[m]["hashes"] for m in modes))
    answers = set().union(*(results[m]["answers"] for m in modes))
    same = len(hashes) == 1 and len(answers) == 1
    print(f"same answer and hash in every mode: {same} (answer {sorted(answers)})")
    return same


def summary(results: dict[str, dict[str, Any]], postgres: dict[str, str] | None) -> dict[str, Any]:
    """The figures of the table, per mode, as a JSON-ready dict (seconds as ms)."""
    import solvi

    modes = {}
    for m, r in results.items():
        modes[m] = {
            "requests": len(r["lat"]),
            "p50_ms": percentile(r["lat"], 50) * 1000,
            "p99_ms": percentile(r["lat"], 99) * 1000,
            "burst_ms": [b * 1000 for b in r["burst"]],
            "burst_median_ms": statistics.median(r["burst"]) * 1000,
            "journal_ms": r["journal_ms"],
            "writes": r["writes"],
            "caller_ms": r["caller_ms"],
            "commits": r["commits"],
        }
    hashes = set().union(*(r["hashes"] for r in results.values()))
    answers = set().union(*(r["answers"] for r in results.values()))
    return {
        "benchmark": "journal_overhead",
        "python": sys.version.split()[0],
        "solvi": solvi.__file__,
        "delay": DELAY,
        "modes": modes,
        "postgres": postgres,
        "same": len(hashes) == 1 and len(answers) == 1,
    }


def run(root: Path, dsn: str | None, *, rounds: int, per_round: int, burst: int) -> Any:
    """Build every mode's System, measure them together, and close them."""
    by_mode = systems(root, dsn)
    try:
        return anyio.run(
            lambda: measure(by_mode, rounds=rounds, per_round=per_round, burst=burst),
            backend="asyncio",
        )
    finally:
        for system in by_mode.values():
            system.close()


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; exit 1 if the modes disagree on the answer or hash."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    sizes = {"rounds": 4, "per_round": 10, "burst": 32}
    if not args.quick:
        sizes = {"rounds": 20, "per_round": 30, "burst": 32}
    dsn = os.environ.get(DSN_VARIABLE) or None
    with tempfile.TemporaryDirectory(prefix="solvi-journal-overhead-") as tmp:
        if dsn is None:
            results, postgres = run(Path(tmp), None, **sizes), None
        else:
            with postgres_schema(dsn) as (schema_dsn, postgres):
                results = run(Path(tmp), schema_dsn, **sizes)
    if args.json:
        figures = summary(results, postgres)
        print(json.dumps(figures))
        return 0 if figures["same"] else 1
    return 0 if report(results, DELAY, postgres) else 1


if __name__ == "__main__":
    sys.exit(main())
