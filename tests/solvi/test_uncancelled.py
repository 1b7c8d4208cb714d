"""Waits that native asyncio cancellation cannot cut short (`solvi._uncancelled`)."""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest

from solvi._uncancelled import in_thread_to_the_end


def test_the_work_runs_once_to_its_end_through_two_task_cancels() -> None:
    """Two `Task.cancel()` calls during the work: it runs once, to its end, and the
    caller is cancelled only after it."""
    runs: list[str] = []
    go_on = threading.Event()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def work() -> int:
            runs.append("started")
            loop.call_soon_threadsafe(started.set)
            go_on.wait(5)
            runs.append("ended")
            return 7

        task = asyncio.ensure_future(in_thread_to_the_end(work))
        await started.wait()
        task.cancel()
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()  # still waiting for the work
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert runs == ["started", "ended"]


def test_a_cancel_before_a_thread_is_free_starts_the_work_once_a_thread_is() -> None:
    """Cancelled while it waits for a thread of its limiter, the work still runs once."""
    runs: list[int] = []

    async def main() -> None:
        limiter = anyio.CapacityLimiter(1)
        await limiter.acquire()  # the only thread is taken
        task = asyncio.ensure_future(in_thread_to_the_end(lambda: runs.append(1), limiter))
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.01)
        assert runs == []
        limiter.release()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert runs == [1]


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_the_value_or_the_error_of_the_work_comes_back(loop: str) -> None:
    def fails() -> None:
        raise LookupError("no such row")

    async def main() -> None:
        assert await in_thread_to_the_end(lambda: 41 + 1) == 42
        with pytest.raises(LookupError, match="no such row"):
            await in_thread_to_the_end(fails)

    anyio.run(main, backend=loop)
