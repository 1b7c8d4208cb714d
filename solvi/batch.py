"""Batches: many requests through one System (or composite), with bounded concurrency.

One bad request does not abort a batch: it comes back as a `Failed` item in its
place. Results keep the order of the input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, TextIO

import anyio
import attrs

from solvi.compose import Askable, Result
from solvi.errors import _message

__all__ = ["Failed", "aask_many", "ask_many"]


@attrs.frozen(eq=False)
class Failed:
    """A batch item whose request raised instead of answering (a bad state, a RouteError).

    Parts that fail never get here: a System records them as safeguards in
    the response. This is for the request itself failing, so one bad state
    does not abort the batch.

    Attributes:
        index: the item's position in the batch.
        kind: the exception's type name, e.g. ``"TypeError"``.
        message: the exception's message.
        error: the exception itself, for a traceback.
    """

    index: int
    kind: str
    message: str
    error: Exception = attrs.field(repr=False)

    @classmethod
    def of(cls, index: int, error: Exception) -> Failed:
        """The Failed item for an exception raised by item `index`."""
        return cls(index, type(error).__name__, _message(error), error)


def _check_limit(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = (
            f"{name} must be a positive whole number (at most this many requests at once), "
            f"got {value!r}"
        )
        raise ValueError(msg)


def _check_batch(where: str, states: Any) -> list[Any]:
    if isinstance(states, Mapping | str | bytes) or not isinstance(states, Iterable):
        msg = (
            f"{where} takes an iterable of states (e.g. a list of dicts), got "
            f"{type(states).__name__}; for one state call system.ask(state)"
        )
        raise TypeError(msg)
    return list(states)


class _Progress:
    """A ``done/total`` line on stderr, rewritten in place; owned by one batch call."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.stream: TextIO | None = sys.stderr if enabled else None
        self._write()

    def _write(self) -> None:
        if self.stream is not None:
            self.stream.write(f"\r{self.done}/{self.total}")
            self.stream.flush()

    def step(self) -> None:
        self.done += 1
        self._write()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()


def _attempt(call: Callable[[Any], Result], index: int, state: Any) -> Result | Failed:
    try:
        return call(state)
    except Exception as error:  # one bad request must not abort the batch
        return Failed.of(index, error)


def ask_many(
    system: Askable,
    states: Iterable[Mapping[str, Any]],
    *,
    workers: int = 4,
    progress: bool = False,
) -> list[Result | Failed]:
    """Ask one system (or composite) for every state, `workers` requests at a time in threads.

    Args:
        system: a `System` or a composite.
        states: the requests' states.
        workers: at most this many requests at once (1: one after another, in
            this thread).
        progress: write a ``done/total`` line to stderr, rewritten as requests finish.

    Returns:
        One item per state, in input order: the result, or a `Failed` for a
        request that raised (a state that is not a mapping, a `RouteError`).

    Raises:
        TypeError: `states` is a single mapping or not iterable.
        ValueError: `workers` is not a positive whole number.
    """
    _check_limit("workers", workers)
    items = _check_batch("ask_many", states)
    bar = _Progress(len(items), progress)
    results: list[Result | Failed | None] = [None] * len(items)
    try:
        if workers == 1 or len(items) <= 1:
            for i, state in enumerate(items):
                results[i] = _attempt(system.ask, i, state)
                bar.step()
        else:
            pool = ThreadPoolExecutor(min(workers, len(items)), "solvi-batch")
            try:
                futures: dict[Future[Result | Failed], int] = {
                    pool.submit(_attempt, system.ask, i, state): i for i, state in enumerate(items)
                }
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.step()
            except BaseException:
                # Ctrl-C, say: the requests not yet begun are dropped, not run to the end
                # while the caller waits; those running finish, as in a one-worker batch.
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
    finally:
        bar.close()
    return [r for r in results if r is not None]


async def aask_many(
    system: Askable,
    states: Iterable[Mapping[str, Any]],
    *,
    limit: int = 16,
    progress: bool = False,
) -> list[Result | Failed]:
    """Ask one system (or composite) for every state on the running loop, `limit` at a time.

    The requests run as tasks of one task group, each holding a token of an
    `anyio.CapacityLimiter`; a task is started only when a token is free, so
    at most `limit` requests (and tasks) exist at once. Cancelling the call
    cancels every running request.

    Args:
        system: a `System` or a composite.
        states: the requests' states.
        limit: at most this many requests at once.
        progress: write a ``done/total`` line to stderr, rewritten as requests finish.

    Returns:
        One item per state, in input order: the result, or a `Failed` for a
        request that raised.

    Raises:
        TypeError: `states` is a single mapping or not iterable.
        ValueError: `limit` is not a positive whole number.
    """
    _check_limit("limit", limit)
    items = _check_batch("aask_many", states)
    bar = _Progress(len(items), progress)
    results: list[Result | Failed | None] = [None] * len(items)
    limiter = anyio.CapacityLimiter(limit)

    async def one(i: int, state: Any, token: object) -> None:
        try:
            try:
                results[i] = await system.aask(state)
            except Exception as error:  # one bad request must not abort the batch
                results[i] = Failed.of(i, error)
            bar.step()
        finally:
            limiter.release_on_behalf_of(token)

    try:
        async with anyio.create_task_group() as tg:
            for i, state in enumerate(items):
                token = object()
                await limiter.acquire_on_behalf_of(token)
                tg.start_soon(one, i, state, token)
    finally:
        bar.close()
    return [r for r in results if r is not None]
