"""What a second process waits for a SQLite journal beside a busy one, with SQLite's own
busy handler and with solvi's `write_transaction`, side by side in one run.

Each round starts a busy child: the chaos benchmark's workload (24 journaled `aask`
requests in flight with a store, `benchmarks/chaos.py`) on a fresh journal and store.
Once it runs, a probing child opens the same files and times `resume()` of request
ids the journal does not hold (each a view of the journal: its write lock, every
process's log applied, a rollback) and `journal_status()`, one after another. Meanwhile
the busy child's completed requests are counted, so the table also shows what the
probing costs it. Both children take the same way to the lock:

- ``sqlite``: ``BEGIN IMMEDIATE`` under the connection's busy timeout, each thread on
  its own (how solvi took the lock before `solvi._db.sqlite_lock`);
- ``solvi``: `write_transaction`: threads of a process in turn, polling within 1 ms.

Rounds alternate between the two, so load elsewhere spoils a round of each.

With ``--flat-out`` the busy child's parts do not sleep, so it answers as fast as it can
and its writer thread is always behind on its log, and the prober also times
`SQLiteJournal.prune` (each one a read of the journal and a delete in its own write
transactions).

    python benchmarks/sqlite_contention.py [--quick] [--flat-out] [--rounds N] [--probes N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import chaos  # noqa: E402  (benchmarks/chaos.py: its catalog and workload)

MODES = ("sqlite", "solvi")
INFLIGHT = 24


def use_mode(mode: str) -> None:
    """Make this process take SQLite's write lock the `mode` way (see the module doc)."""
    if mode == "solvi":
        return
    from solvi._db import sqlite_lock

    def plain_begin(conn: Any, path: str, timeout: float, *_: Any) -> None:
        # wait in SQLite's busy handler, up to the timeout
        conn.execute(f"PRAGMA busy_timeout = {round(timeout * 1000)}")
        conn.execute("BEGIN IMMEDIATE")

    sqlite_lock._begin = plain_begin  # type: ignore[assignment]  # the mode's whole point
    # A turn of its own for each transaction: threads never wait for each other. (The
    # solvi of 729b863 and before, which PYTHONPATH may put first, kept a bare lock.)
    own_turn = getattr(sqlite_lock, "_Turn", None) or (lambda path: threading.RLock())
    sqlite_lock._turn = own_turn


def busy_child(work: Path, *, flat_out: bool) -> None:
    """The chaos workload on `work`'s journal and store until killed; with `flat_out`,
    its catalog with no sleeps, journal only and ids of the System's own, as fast as
    it goes."""
    import asyncio

    if flat_out:
        asyncio.run(_flat_out(work))
        return
    chaos.EFFECTS = chaos._open_append(work / "effects.log")
    chaos.TAG = f"1\t{chaos.ROLE_RUN}"
    system = chaos._system(str(work / "journal.db"), str(work / "store.db"))
    asyncio.run(chaos.workload(system, work, 1, INFLIGHT, 0.0))


async def _flat_out(work: Path) -> None:
    import anyio

    from solvi import System

    chaos.SLEEP = False
    system = System(chaos.build_catalog(), chaos.QUESTIONS, journal=str(work / "journal.db"))
    started = chaos._open_append(work / "started.log")

    async def one(n: int) -> None:
        os.write(started, b"r\n")
        await system.aask(chaos.request_input(f"f{n:07d}"))

    n = 0
    while True:
        async with anyio.create_task_group() as tg:
            for _ in range(INFLIGHT):
                tg.start_soon(one, n)
                n += 1
        if n == INFLIGHT:
            chaos._say("RUNNING")


def _stored(work: Path) -> int:
    """Requests the busy child has finished (started minus those still in flight)."""
    return max(0, len(chaos._lines(work / "started.log")) - INFLIGHT)


def probe_child(work: Path, probes: int, *, flat_out: bool) -> dict[str, Any]:
    """Time `probes` resumes of unknown ids, then as many journal_status() calls (and
    as many prunes, with `flat_out`)."""
    system = chaos._system(str(work / "journal.db"), str(work / "store.db"))
    done_before = _stored(work)
    started = time.perf_counter()
    resumes = []
    for i in range(probes):
        t = time.perf_counter()
        outcome = chaos._attempt(system, f"x{i:06d}")
        resumes.append(time.perf_counter() - t)
        if outcome.get("type") != "ResumeRefused":
            msg = f"resume of an unknown id gave {outcome}"
            raise RuntimeError(msg)
    statuses = []
    for _ in range(probes):
        t = time.perf_counter()
        system.journal_status()
        statuses.append(time.perf_counter() - t)
    prunes = []
    if flat_out:
        from solvi.journal import SQLiteJournal

        journal = SQLiteJournal(work / "journal.db")
        for _ in range(probes):
            t = time.perf_counter()
            journal.prune(older_than=0)
            prunes.append(time.perf_counter() - t)
        journal.close()
    elapsed = time.perf_counter() - started
    done = _stored(work) - done_before
    system.close()
    return {
        "resume": resumes,
        "status": statuses,
        "prune": prunes,
        "elapsed": elapsed,
        "sibling_done": done,
    }


def _run(mode: str, probes: int, *, flat_out: bool) -> dict[str, Any]:
    """One round: a busy child, then a probing child beside it; the probe's figures."""
    with tempfile.TemporaryDirectory(prefix="solvi-contention-") as tmp:
        me = [sys.executable, str(Path(__file__).resolve()), "--mode", mode, "--work", tmp]
        if flat_out:
            me.append("--flat-out")
        busy = subprocess.Popen(
            [*me, "--child", "busy"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        try:
            assert busy.stdout is not None
            line = busy.stdout.readline().strip()
            if line != "RUNNING":
                msg = f"the busy child did not start ({line!r})"
                raise RuntimeError(msg)
            probe = subprocess.run(
                [*me, "--child", "probe", "--probes", str(probes)],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        finally:
            busy.kill()
            busy.wait()
        if probe.returncode != 0:
            msg = f"the probing child failed: {probe.stderr[-2000:]}"
            raise RuntimeError(msg)
        result: dict[str, Any] = json.loads(probe.stdout.strip().splitlines()[-1])
        return result


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(runs: dict[str, list[dict[str, Any]]]) -> str:
    """One row per mode and call: percentiles in ms over every round's calls."""
    header = (
        f"{'mode':<7} {'call':<15} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>9} {'max ms':>9}"
        f" {'sum s':>7} {'sibling req/s':>14}"
    )
    lines = [header, "-" * len(header)]
    for mode in MODES:
        rounds = runs[mode]
        rate = statistics.median(r["sibling_done"] / r["elapsed"] for r in rounds)
        for call in ("resume", "status", "prune"):
            samples = [s for r in rounds for s in r.get(call, ())]
            if not samples:
                continue
            lines.append(
                f"{mode:<7} {call + '()':<15} {_pct(samples, 0.5):8.1f} {_pct(samples, 0.9):8.1f}"
                f" {_pct(samples, 0.99):9.1f} {max(samples) * 1000:9.1f} {sum(samples):7.2f}"
                f" {rate:14.0f}"
            )
    slow = {m: sum(s for r in runs[m] for s in r["resume"]) for m in MODES}
    ratio = slow["sqlite"] / slow["solvi"]
    lines.append(f"resume() time beside the busy process, sqlite / solvi: {ratio:.1f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 20 probes (CI smoke)")
    parser.add_argument(
        "--flat-out",
        action="store_true",
        help="the busy child's parts do not sleep; time prune too",
    )
    parser.add_argument("--rounds", type=int, default=None, help="per mode (default 3)")
    parser.add_argument("--probes", type=int, default=None, help="per round (default 200)")
    parser.add_argument("--json", action="store_true", help="print the samples as JSON")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--work", default="", help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=("busy", "probe"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    probes = args.probes or (20 if args.quick else 200)
    if args.child:
        use_mode(args.mode)
        if args.child == "busy":
            chaos.CHILD_LIMIT = 600.0
            busy_child(Path(args.work), flat_out=args.flat_out)
        else:
            print(json.dumps(probe_child(Path(args.work), probes, flat_out=args.flat_out)))
        return 0
    rounds = args.rounds or (1 if args.quick else 3)
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    started = time.perf_counter()
    for r in range(rounds):
        for mode in MODES:
            runs[mode].append(_run(mode, probes, flat_out=args.flat_out))
            print(f"  round {r + 1}/{rounds} {mode}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(runs))
        return 0
    print(
        f"a prober beside a busy process on one SQLite journal: {rounds} round(s) per mode, "
        f"{probes} calls of each kind per round, {time.perf_counter() - started:.0f} s, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(report(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
