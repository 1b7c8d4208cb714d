"""Calling one part from synchronous code: inline, under a timeout, or in an event loop."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio

from solvi.catalog import Part
from solvi.schedule import Cause

__all__ = ["PartTimeout", "call_sync", "cause_of", "current_loop", "in_event_loop"]


class PartTimeout(Exception):
    """A part ran past its timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


def in_event_loop() -> bool:
    """Whether this thread is running an asyncio or trio event loop right now."""
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return True
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            return False
        return True
    return False


def current_loop() -> object:
    """An object standing for the running event loop (asyncio's loop, or trio's token)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        trio = sys.modules.get("trio")
        if trio is None:
            raise
        token: object = trio.lowlevel.current_trio_token()
        return token


def _run_in_daemon_thread(func: Callable[[], Any], timeout: float | None) -> Any:
    """Run `func` in a daemon thread and wait at most `timeout` seconds for it.

    A thread cannot be stopped; on timeout it finishes in the background and its
    result is dropped. Daemon threads keep a stuck part from holding up exit.
    """
    box: list[Any] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            box.append(func())
        except BaseException as exc:  # handed over to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=target, name="solvi-part", daemon=True)
    thread.start()
    if not done.wait(timeout):
        assert timeout is not None  # done.wait(None) only returns once set
        raise PartTimeout(timeout)
    if failure:
        raise failure[0]
    return box[0]


async def _await_part(
    func: Callable[..., Any], args: tuple[Any, ...], seconds: float | None
) -> Any:
    if seconds is None:
        return await func(*args)
    try:
        with anyio.fail_after(seconds):
            return await func(*args)
    except TimeoutError:
        raise PartTimeout(seconds) from None


def call_sync(part: Part, args: tuple[Any, ...], timeout: float | None) -> Any:
    """Call a part from sync code; raise PartTimeout when it runs past `timeout`."""
    if part.is_async:
        run = partial(anyio.run, _await_part, part.func, args, timeout)
        if in_event_loop():
            return _run_in_daemon_thread(run, None)
        return run()
    if timeout is None:
        return part.func(*args)
    return _run_in_daemon_thread(partial(part.func, *args), timeout)


def cause_of(exc: BaseException, part_name: str, fact: str) -> Cause:
    """The Cause a part's exception becomes: a timeout, or an error with its type."""
    if isinstance(exc, PartTimeout):
        return Cause("timeout", part_name, fact, str(exc))
    return Cause("error", part_name, fact, f"{type(exc).__name__}: {exc}")
