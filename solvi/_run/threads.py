"""Worker threads for blocking parts under an event loop, counted until they end.

A thread cannot be stopped: when a timeout or a cancellation gives up on a call, its
caller goes on and the thread runs to its end in the background. anyio's limiter frees
the thread's slot as soon as its caller stops waiting, so a System's ``threads=N``
would let the next calls start beside the ones still running. Here a call holds its
slot until its thread ends; a call given up before its thread began is never made.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

import anyio

from solvi._run.steps import PartTimeout, call_in_thread, current_loop

__all__ = ["LoopSlots", "ThreadSlots"]

_WAITING, _RUNNING, _ABANDONED, _ENDED, _GONE = range(5)


class ThreadSlots:
    """At most ``threads`` blocking calls at once on one event loop (a limiter belongs
    to the loop that made it), whether their callers still wait for them or not."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._slots = anyio.CapacityLimiter(threads)
        # anyio's own limiter for the threads; ours is the tighter one, so it never waits
        self._threads = anyio.CapacityLimiter(threads)

    @property
    def running(self) -> int:
        """Calls holding a slot, abandoned ones whose threads still run included."""
        return int(self._slots.borrowed_tokens)

    async def call(
        self, func: Callable[..., Any], args: tuple[Any, ...], seconds: float | None
    ) -> Any:
        """Call ``func(*args)`` in a worker thread once a slot is free; raise
        PartTimeout once it runs past ``seconds``, and give up at once on cancellation."""
        call = _Call(self._slots, current_loop())
        slotted = False
        with anyio.move_on_after(seconds):  # the wait for a slot counts, as for anyio's
            try:  # a free slot without a trip round the loop; the thread's start checks
                self._slots.acquire_on_behalf_of_nowait(call)  # for cancellation anyway
            except anyio.WouldBlock:
                await self._slots.acquire_on_behalf_of(call)
            slotted = True
            try:
                return await anyio.to_thread.run_sync(
                    call.run, func, args, abandon_on_cancel=True, limiter=self._threads
                )
            finally:
                call.leave()
        assert seconds is not None  # only a deadline ends the scope without a return
        if call.outcome is not None:
            # The call ended in time, and only its way back to the loop came after the
            # deadline: its result stands, as under `ask`.
            ok, value = call.outcome
            if ok:
                return value
            raise value
        raise PartTimeout(seconds, waiting_for=None if slotted else self.threads)


class LoopSlots:
    """A System's ``ThreadSlots``, one per event loop it runs on (a limiter belongs to
    the loop that made it), dropped with the loop."""

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._by_loop: weakref.WeakKeyDictionary[object, ThreadSlots] = weakref.WeakKeyDictionary()

    def of(self, loop: object) -> ThreadSlots:
        """The slots of `loop` (see `current_loop`), made on first use."""
        slots = self._by_loop.get(loop)
        if slots is None:
            slots = self._by_loop[loop] = ThreadSlots(self._threads)
        return slots


def _soon(loop: object, callback: Callable[[], None]) -> None:
    """Have `loop` (see `current_loop`) run `callback` soon, from any thread, without
    waiting for it; nothing once the loop has ended (its limiter has ended with it)."""
    with contextlib.suppress(RuntimeError):  # a closed loop; trio's RunFinishedError
        if isinstance(loop, asyncio.AbstractEventLoop):
            loop.call_soon_threadsafe(callback)
        else:
            loop.run_sync_soon(callback)  # type: ignore[attr-defined]  # trio's token


class _Call:
    """One call's slot: given back by whichever of the caller and the thread is last."""

    def __init__(self, slots: anyio.CapacityLimiter, loop: object) -> None:
        self._slots = slots
        self._loop = loop
        self._lock = threading.Lock()
        self._state = _WAITING
        #: (True, value) or (False, exception) once the call has ended in its thread
        self.outcome: tuple[bool, Any] | None = None

    def run(self, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """In the worker thread: the call, unless its caller left before it began."""
        with self._lock:
            if self._state == _GONE:
                return None
            self._state = _RUNNING
        try:
            value = call_in_thread(func, *args)
        except BaseException as exc:
            self.outcome = (False, exc)
            raise
        else:
            self.outcome = (True, value)
            return value
        finally:
            with self._lock:
                abandoned = self._state == _ABANDONED
                self._state = _ENDED
            if abandoned:
                # Handed to the loop, not waited for: a loop that has stopped but is not
                # closed yet takes the callback and never runs it, and a thread waiting
                # for it would hang for ever (and the interpreter's exit with it).
                _soon(self._loop, self._release)

    def _release(self) -> None:
        self._slots.release_on_behalf_of(self)

    def leave(self) -> None:
        """On the loop, when the caller stops waiting: give the slot back, unless the
        thread still runs, which then gives it back when it ends."""
        with self._lock:
            if self._state == _RUNNING:
                self._state = _ABANDONED
                return
            if self._state == _WAITING:
                self._state = _GONE
        self._slots.release_on_behalf_of(self)
