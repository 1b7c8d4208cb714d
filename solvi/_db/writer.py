"""One writer thread per database: every commit runs there, never on an event loop.

Callers `submit` a unit of work (the statements of one request, say) and get a
`Ticket`. The thread takes everything submitted while it was busy and commits it
in one transaction (a group commit across requests and event loops), so a burst
of concurrent steps costs one commit, not one each. If that transaction fails,
each unit is retried in a transaction of its own, so one bad unit fails alone.

A synchronous caller waits with `Ticket.wait`; an async caller awaits
`Ticket.wait_async`, which parks the task on its own event loop (asyncio or trio)
and is woken from the writer thread: the loop's thread does no database work.
Units are committed in the order they were submitted, so once a ticket is done,
every unit submitted before it is committed or failed.

`Writer.nudge` queues work nobody waits for (the SQLite journal applying commits
that are durable already in its log): the thread lets it wait `Writer.delay`
seconds for more before it commits, unless a unit somebody waits for arrives
first, and then takes everything queued in submission order.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio

__all__ = ["Ticket", "Writer", "WriterClosed", "done_ticket", "finish_ticket"]

U = TypeVar("U")


class WriterClosed(RuntimeError):
    """Work was submitted to a writer that has been closed."""


class Ticket:
    """The promise of one submitted unit: done once its transaction committed or failed."""

    __slots__ = ("_wakers", "_writer", "done", "error", "quiet")

    def __init__(self, writer: Writer[Any] | None, *, quiet: bool = False) -> None:
        self._writer = writer
        self.done = False
        self.error: BaseException | None = None
        #: the unit's failure is not its waiter's (see `Writer.submit`)
        self.quiet = quiet
        #: (loop key, call) to wake each async waiter, while some wait
        self._wakers: list[tuple[Any, Callable[[], None]]] | None = None

    def result(self) -> None:
        """Raise the unit's error, if it failed (call once it is done)."""
        if self.error is not None:
            raise self.error

    def wait(self) -> None:
        """Block this (non-loop) thread until the unit is committed; raise its error."""
        if not self.done:
            assert self._writer is not None  # a writer-less ticket is only awaited async
            self._writer.wait_for(self)
        self.result()

    async def wait_async(self) -> None:
        """Wait on the running event loop until the unit is committed; raise its error.

        Cancelling the wait leaves the unit to be committed all the same.
        """
        if self.done:
            self.result()
            return
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            future: asyncio.Future[None] = loop.create_future()

            def wake() -> None:
                if not future.done():
                    future.set_result(None)

            self._add_waker(loop, wake)
            if not self.done:  # else the writer finished first, and may not have seen us
                await future
        else:
            token = _trio_token()
            event = anyio.Event()
            self._add_waker(token, event.set)
            if not self.done:
                await event.wait()
        self.result()

    def _add_waker(self, loop_key: Any, wake: Callable[[], None]) -> None:
        wakers = self._wakers
        if wakers is None:
            self._wakers = [(loop_key, wake)]
        else:
            wakers.append((loop_key, wake))  # several tasks may wait for one unit


def done_ticket(error: BaseException | None = None) -> Ticket:
    """A ticket already done: for work finished before it was handed over (an append
    to a log), failed with `error` if given."""
    ticket = Ticket(None)
    ticket.done = True
    ticket.error = error
    return ticket


def _trio_token() -> Any:
    trio = sys.modules["trio"]
    return trio.lowlevel.current_trio_token()


def _call_soon(loop_key: Any, calls: list[Callable[[], None]]) -> None:
    """Run `calls` on the loop `loop_key` stands for, from another thread."""

    def run_all() -> None:
        for call in calls:
            call()

    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there any more
        if isinstance(loop_key, asyncio.AbstractEventLoop):
            loop_key.call_soon_threadsafe(run_all)
        else:
            loop_key.run_sync_soon(run_all)


class Writer(Generic[U]):
    """A thread that commits units of work in submission order, gathering them.

    Args:
        commit: runs on the writer thread with a list of units, in one transaction;
            raises to fail them all (they are then retried one by one).
        name: the thread's name.
        on_exit: runs on the writer thread when it stops (to close its connection).
        delay: seconds nudged work may wait for more before it is committed.
    """

    def __init__(
        self,
        commit: Callable[[list[U]], None],
        *,
        name: str,
        on_exit: Callable[[], None] | None = None,
        delay: float = 0.05,
    ) -> None:
        self._commit = commit
        self.delay = delay
        self._name = name
        self._on_exit = on_exit
        self._cond = threading.Condition()
        self._units: list[U] = []
        self._tickets: list[Ticket] = []
        self._closing = False
        self._thread: threading.Thread | None = None
        #: queued units somebody waits for
        self._urgent = 0
        #: when the nudged unit queued is due (monotonic seconds), None if none is
        self._due: float | None = None

    def submit(self, unit: U, *, quiet: bool = False) -> Ticket:
        """Queue one unit for the next commit.

        With `quiet` the ticket never carries the unit's error: its waiter only waits
        for the thread to have done the work (to catch up, say), and whoever the work
        is for finds out about a failure on their own.

        Raises:
            WriterClosed: the writer was closed.
        """
        ticket = Ticket(self, quiet=quiet)
        with self._cond:
            self._queue(unit, ticket)
            self._urgent += 1
            self._cond.notify_all()
        return ticket

    def nudge(self, unit: U) -> None:
        """Queue `unit`, work nobody waits for, to be committed within `delay` seconds,
        unless such a unit is queued already (it then stands for both: `commit` is
        called with what was queued, and is to do whatever such work there is).

        Raises:
            WriterClosed: the writer was closed.
        """
        if self._due is not None and not self._closing:
            return  # read without the lock: at worst one unit more is queued
        with self._cond:
            if self._due is not None and not self._closing:
                return
            self._queue(unit, Ticket(self))
            self._due = time.monotonic() + self.delay
            self._cond.notify_all()

    def _queue(self, unit: U, ticket: Ticket) -> None:
        """Append a unit (holding the condition), starting the thread the first time."""
        if self._closing:
            msg = f"{self._name} is closed; open a new one to write"
            raise WriterClosed(msg)
        self._units.append(unit)
        self._tickets.append(ticket)
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self._thread.start()

    def commit(self, unit: U) -> None:
        """Submit one unit and wait for it (from a thread that runs no event loop)."""
        self.submit(unit).wait()

    def wait_for(self, ticket: Ticket) -> None:
        """Block until `ticket` is done."""
        with self._cond:
            while not ticket.done:
                self._cond.wait()

    def close(self) -> None:
        """Commit what was submitted, then stop the thread (a second call does nothing)."""
        with self._cond:
            self._closing = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return self._closing

    def _work(self) -> None:
        try:
            while True:
                with self._cond:
                    self._wait_for_work()
                    if not self._units:
                        return
                    units, self._units = self._units, []
                    tickets, self._tickets = self._tickets, []
                    self._urgent, self._due = 0, None
                self._run(units, tickets)
        finally:
            if self._on_exit is not None:
                self._on_exit()

    def _wait_for_work(self) -> None:
        """Wait (holding the condition) until a unit somebody waits for is queued, the
        nudged unit is due, or the writer is closing."""
        while not self._closing and not self._urgent:
            due = self._due
            if due is None:
                self._cond.wait()
                continue
            left = due - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _run(self, units: list[U], tickets: list[Ticket]) -> None:
        try:
            self._commit(units)
        except BaseException as exc:
            if len(units) == 1:
                if not tickets[0].quiet:
                    tickets[0].error = exc
            else:
                for unit, ticket in zip(units, tickets, strict=True):
                    try:
                        self._commit([unit])
                    except BaseException as alone:  # handed to the unit's waiter
                        if not ticket.quiet:
                            ticket.error = alone
        self._finish(tickets)

    def _finish(self, tickets: list[Ticket]) -> None:
        with self._cond:
            wakers = _mark_done(tickets)
            self._cond.notify_all()
        _wake(wakers)


def finish_ticket(ticket: Ticket, error: BaseException | None = None) -> None:
    """Mark a writer-less ticket done (its work ran elsewhere), waking its async waiters."""
    ticket.error = error
    _wake(_mark_done([ticket]))


def _mark_done(tickets: list[Ticket]) -> dict[Any, list[Callable[[], None]]]:
    """Mark `tickets` done; return their waiters' wake calls by event loop."""
    wakers: dict[Any, list[Callable[[], None]]] = {}
    for ticket in tickets:
        ticket.done = True
        for loop_key, wake in ticket._wakers or ():
            wakers.setdefault(loop_key, []).append(wake)
    return wakers


def _wake(wakers: dict[Any, list[Callable[[], None]]]) -> None:
    # A waiter that sets its waker after `_mark_done` looked sees `done` and never parks.
    for loop_key, calls in wakers.items():
        _call_soon(loop_key, calls)
