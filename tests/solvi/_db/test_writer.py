"""The writer thread: commits in submission order, gathers concurrent units into one
transaction, fails a bad unit alone, lets nudged work wait for more, wakes async
waiters on asyncio and trio, and closes without losing or hanging."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import pytest

from solvi import Catalog, System
from solvi._db.urls import locate
from solvi._db.writer import Writer, WriterClosed
from solvi.journal import SQLiteJournal, open_journal


class Log:
    """A commit function that records each transaction (and can be slowed or fail)."""

    def __init__(self) -> None:
        self.transactions: list[list[str]] = []
        self.delay = 0.0
        self.bad: set[str] = set()

    def commit(self, units: list[str]) -> None:
        time.sleep(self.delay)
        if self.bad & set(units):
            msg = f"refused {sorted(self.bad & set(units))}"
            raise ValueError(msg)
        self.transactions.append(list(units))


def test_units_are_committed_in_order_and_gathered() -> None:
    """What arrives while the writer is busy goes into its next transaction, in order."""
    log = Log()
    log.delay = 0.02
    writer: Writer[str] = Writer(log.commit, name="test")
    tickets = [writer.submit(f"u{i}") for i in range(20)]
    for ticket in tickets:
        ticket.wait()
    writer.close()
    flat = [u for t in log.transactions for u in t]
    assert flat == [f"u{i}" for i in range(20)]
    assert len(log.transactions) < 20  # gathered


def test_a_bad_unit_fails_alone() -> None:
    """A transaction that fails is retried unit by unit: only the bad unit fails."""
    log = Log()
    log.delay = 0.01
    log.bad = {"bad"}
    writer: Writer[str] = Writer(log.commit, name="test")
    first = writer.submit("slow")  # keeps the writer busy while the others gather
    tickets = {u: writer.submit(u) for u in ("a", "bad", "b")}
    first.wait()
    for unit, ticket in tickets.items():
        if unit == "bad":
            with pytest.raises(ValueError, match="refused"):
                ticket.wait()
        else:
            ticket.wait()
    writer.close()
    assert [u for t in log.transactions for u in t] == ["slow", "a", "b"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_async_waiters_are_woken_from_the_writer_thread(backend: str) -> None:
    """Many tasks awaiting their commits on one loop are all woken, none early."""
    log = Log()
    log.delay = 0.001
    writer: Writer[str] = Writer(log.commit, name="test")
    done: list[str] = []

    async def one(unit: str) -> None:
        ticket = writer.submit(unit)
        await ticket.wait_async()
        assert any(unit in t for t in log.transactions)
        done.append(unit)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(one, f"u{i}")

    anyio.run(main, backend=backend)
    writer.close()
    assert sorted(done) == sorted(f"u{i}" for i in range(50))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancelled_wait_still_commits(backend: str) -> None:
    """Cancelling the wait does not take the unit back: it is committed all the same."""
    log = Log()
    log.delay = 0.05
    writer: Writer[str] = Writer(log.commit, name="test")

    async def main() -> None:
        with anyio.move_on_after(0.001):
            await writer.submit("kept").wait_async()

    anyio.run(main, backend=backend)
    writer.close()
    assert log.transactions == [["kept"]]


def test_close_commits_what_was_submitted_and_never_hangs() -> None:
    """Closing right after submitting, from many threads at once, loses nothing and
    returns; afterwards a submit is refused."""
    for _ in range(200):
        log = Log()
        writer: Writer[str] = Writer(log.commit, name="test")
        tickets = [writer.submit(f"u{i}") for i in range(3)]
        closers = [threading.Thread(target=writer.close) for _ in range(3)]
        for c in closers:
            c.start()
        for c in closers:
            c.join(timeout=5)
            assert not c.is_alive()
        assert all(t.done for t in tickets)
        assert [u for t in log.transactions for u in t] == ["u0", "u1", "u2"]
    with pytest.raises(WriterClosed, match="is closed"):
        writer.submit("late")


def test_nudged_work_waits_for_the_delay_unless_a_waited_unit_comes() -> None:
    """A nudged unit is committed once the delay has passed, with whatever was nudged
    meanwhile standing for it (one unit queued); a unit somebody waits for takes it
    along at once; closing commits what is queued."""
    log = Log()
    writer: Writer[str] = Writer(log.commit, name="test", delay=0.3)
    began = time.monotonic()
    writer.nudge("lazy")
    writer.nudge("lazy again")  # a lazy unit is queued: nothing more is
    while not log.transactions:
        time.sleep(0.005)
    assert time.monotonic() - began >= 0.3
    assert log.transactions == [["lazy"]]
    writer.nudge("lazy")
    began = time.monotonic()
    writer.submit("waited").wait()
    assert time.monotonic() - began < 0.25
    assert log.transactions[-1] == ["lazy", "waited"]
    writer.nudge("at close")
    writer.close()
    assert log.transactions[-1] == ["at close"]
    with pytest.raises(WriterClosed, match="is closed"):
        writer.nudge("late")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_task_awaiting_one_ticket_is_woken(backend: str) -> None:
    """Several tasks may await the same unit (a request's open entry): all are woken."""
    log = Log()
    log.delay = 0.05
    writer: Writer[str] = Writer(log.commit, name="test")
    woken: list[int] = []

    async def main() -> None:
        ticket = writer.submit("open")

        async def wait(k: int) -> None:
            await ticket.wait_async()
            woken.append(k)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for k in range(5):
                    tg.start_soon(wait, k)

    anyio.run(main, backend=backend)
    writer.close()
    assert sorted(woken) == [0, 1, 2, 3, 4]


def test_stores_and_journals_read_locations_alike(tmp_path: Path) -> None:
    """One reading of paths and URLs for store= and journal=, with the same errors."""
    assert locate(tmp_path / "a.db", "journal=").kind == "sqlite"
    assert locate("sqlite:///x.db", "journal=").target == "x.db"
    assert locate("postgres://u@h/db", "store=").kind == "postgresql"
    for bad in ("mysql://db/solvi", "", "sqlite:", 42):
        with pytest.raises(ValueError, match=r"a file path, 'sqlite:///path/to/file.db', or"):
            open_journal(bad)
    with pytest.raises(ValueError, match="names no file"):
        open_journal("sqlite:///")


def test_journal_true_keeps_the_journal_in_the_store(tmp_path: Path) -> None:
    """journal=True opens the journal in the store's own file, and a response and its
    close are committed together."""
    cat = Catalog("together")

    @cat.fn
    def double(x: int) -> int:
        return 2 * x

    @cat.rule
    def big(double: int) -> bool:
        return double > 3

    system = System(cat, store=tmp_path / "s.db", journal=True)
    assert isinstance(system.journal, SQLiteJournal)
    assert system.journal.path == tmp_path / "s.db"
    response = anyio.run(lambda: system.aask({"x": 2}, request_id="r1"))
    assert system.journal.load("r1").closed
    assert system.store is not None
    assert system.store.get_record("r1")["hash"] == response.hash
    system.close()
    with pytest.raises(ValueError, match="journal=True keeps the journal in the store"):
        System(cat, journal=True)
