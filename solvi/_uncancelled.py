"""Waiting to the end through any cancellation: what a request must finish once begun.

anyio's shielded cancel scope keeps anyio's (and trio's) cancellation out of a wait,
but a native asyncio `Task.cancel()` (from `asyncio.timeout`, `wait_for`, or a
framework that cancels the task of a client gone away) goes through any shield. The
closing of a cancelled request, and the storing of an answered one, must not be cut
short by it: a request left open would be claimed by a later `recover()` although its
caller gave up. So each wait here is begun again after such a cancellation until what
it waits for has ended, and the cancellation is raised then.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import anyio

from solvi._db.writer import Ticket, finish_ticket

__all__ = ["in_thread_through", "in_thread_to_the_end", "to_the_end"]

T = TypeVar("T")


async def to_the_end(wait: Callable[[], Awaitable[None]]) -> None:
    """Await `wait()` under a shield until it returns, then raise any cancellation
    that came meanwhile. `wait` must be safe to call again: it waits on work that goes
    on by itself (a writer's ticket, say), so an interrupted wait loses nothing."""
    caught = await _through(wait)
    if caught is not None:
        raise caught


async def _through(wait: Callable[[], Awaitable[None]]) -> BaseException | None:
    """Await `wait()` to its end; return the native cancellation that came meanwhile,
    if one did. An error of `wait` is raised, as anyio's shield would let it out."""
    cancelled = anyio.get_cancelled_exc_class()
    caught: BaseException | None = None
    while True:
        try:
            with anyio.CancelScope(shield=True):
                await wait()
        except cancelled as exc:  # only a native asyncio cancel gets through the shield
            caught = exc
        else:
            return caught


class _Handoff(Generic[T]):
    """Blocking work that runs once, in whichever worker thread claims it first."""

    __slots__ = ("claimed", "func", "lock", "ticket", "value")

    def __init__(self, func: Callable[[], T]) -> None:
        self.func = func
        self.claimed = False
        self.lock = threading.Lock()
        self.ticket = Ticket(None)
        self.value: Any = None

    def run(self) -> None:
        with self.lock:
            if self.claimed:
                return  # a second hand-off of an interrupted wait: the first one runs it
            self.claimed = True
        try:
            self.value = self.func()
        except BaseException as exc:  # handed to the awaiting task
            finish_ticket(self.ticket, exc)
        else:
            finish_ticket(self.ticket)

    async def wait(self, limiter: anyio.CapacityLimiter | None) -> None:
        if not self.claimed:
            # Cancelled while it waits for a thread, the work is not started; the
            # next wait hands it off again.
            await anyio.to_thread.run_sync(self.run, limiter=limiter)
        await self.ticket.wait_async()


async def in_thread_to_the_end(
    func: Callable[[], T], limiter: anyio.CapacityLimiter | None = None
) -> T:
    """Run blocking `func` in a worker thread exactly once and return its value (or
    raise its error), waiting to its end through any cancellation, which is raised
    after (see `to_the_end`)."""
    value, caught = await in_thread_through(func, limiter)
    if caught is not None:
        raise caught
    return value


async def in_thread_through(
    func: Callable[[], T], limiter: anyio.CapacityLimiter | None = None
) -> tuple[T, BaseException | None]:
    """`in_thread_to_the_end`, returning the cancellation that came meanwhile (or None)
    beside the value instead of raising it, for a caller that has to act on it first."""
    handoff = _Handoff(func)
    caught = await _through(lambda: handoff.wait(limiter))
    handoff.ticket.result()
    return handoff.value, caught
