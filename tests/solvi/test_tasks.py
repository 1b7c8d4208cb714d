"""Calls side by side in one task group: all of them run, a lone failure is itself."""

from __future__ import annotations

import anyio
import pytest

from solvi._tasks import alone, each


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_each_runs_every_call_concurrently(backend: str) -> None:
    """All calls are awaited, overlapping: each waits for the next one to have started."""
    started: list[int] = []

    async def main() -> None:
        events = [anyio.Event() for _ in range(4)]

        async def one(i: int) -> None:
            started.append(i)
            events[i].set()
            if i < 3:
                await events[i + 1].wait()

        await each(4, one)

    anyio.run(main, backend=backend)
    assert sorted(started) == [0, 1, 2, 3]


@pytest.mark.parametrize("raised", [ValueError, GeneratorExit])
def test_a_lone_failure_leaves_as_itself_and_cancels_the_others(
    raised: type[BaseException],
) -> None:
    """One failing call is raised as itself; the calls still waiting are cancelled."""
    cancelled: list[int] = []

    async def one(i: int) -> None:
        if i == 0:
            raise raised
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(i)
            raise

    with pytest.raises(raised):
        anyio.run(each, 3, one)
    assert sorted(cancelled) == [1, 2]


def test_several_failures_stay_a_group() -> None:
    """Two failures are both kept: only a group of one is unwrapped."""
    group = BaseExceptionGroup("two", [ValueError("a"), KeyError("b")])
    assert alone(group) is group
    one = BaseExceptionGroup("one", [ValueError("a")])
    assert isinstance(alone(one), ValueError)
