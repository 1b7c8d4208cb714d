"""Thread slots: a call holds its slot until its thread ends, given up or not, and a
call given up before its thread began is never made."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import anyio
import pytest

from solvi._run.steps import PartTimeout
from solvi._run.threads import LoopSlots, ThreadSlots

BACKENDS = ["asyncio", "trio"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_value_and_an_error_come_back_and_the_slot_is_free_again(backend: str) -> None:
    def fail() -> None:
        raise ValueError("no")

    async def main() -> None:
        slots = ThreadSlots(1)
        assert await slots.call(lambda a, b: a + b, (1, 2), None) == 3
        with pytest.raises(ValueError, match="no"):
            await slots.call(fail, (), None)
        assert slots.running == 0

    anyio.run(main, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_timed_out_call_keeps_its_slot_until_its_thread_ends(backend: str) -> None:
    """The caller gets PartTimeout at once; the next call waits for the thread."""
    release = threading.Event()
    order: list[str] = []

    def held() -> None:
        release.wait(5)
        order.append("first ended")

    def second() -> None:
        order.append("second ran")

    async def main() -> None:
        slots = ThreadSlots(1)
        with pytest.raises(PartTimeout):
            await slots.call(held, (), 0.02)
        assert slots.running == 1  # its thread still runs
        async with anyio.create_task_group() as tg:
            tg.start_soon(slots.call, second, (), None)
            await anyio.sleep(0.05)
            assert order == []  # waiting for the slot
            release.set()
        assert order == ["first ended", "second ran"]
        assert slots.running == 0

    anyio.run(main, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_call_cancelled_while_it_waits_for_a_slot_is_never_made(backend: str) -> None:
    release = threading.Event()
    made: list[str] = []

    def held() -> None:
        release.wait(5)

    def never() -> None:
        made.append("never")

    async def main() -> None:
        slots = ThreadSlots(1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(slots.call, held, (), None)
            await anyio.sleep(0.02)
            with anyio.move_on_after(0.02):
                await slots.call(never, (), None)
            release.set()
        await anyio.sleep(0.05)
        assert made == []
        assert slots.running == 0

    anyio.run(main, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_thread_that_outlives_its_loop_ends_quietly(backend: str) -> None:
    """Given up, then still running when the loop ends: its slot goes with the loop,
    and nothing is raised in the thread."""
    raised: list[BaseException] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: raised.append(args.exc_value)  # type: ignore[assignment,return-value]
    ended = threading.Event()

    def slow() -> None:
        time.sleep(0.1)
        ended.set()

    async def main() -> None:
        with pytest.raises(PartTimeout):
            await ThreadSlots(1).call(slow, (), 0.01)

    try:
        anyio.run(main, backend=backend)
        assert ended.wait(2)
        time.sleep(0.05)
    finally:
        threading.excepthook = previous
    assert raised == []


class _Loop:
    """Stands for an event loop: any object a weak reference can name."""


def test_each_loop_has_slots_of_its_own_dropped_with_it() -> None:
    table = LoopSlots(3)
    first, second = _Loop(), _Loop()
    assert table.of(first) is table.of(first)
    assert table.of(first) is not table.of(second)
    del second
    assert len(table._by_loop) == 1


HANG = """
import threading, time, anyio
from solvi import Catalog, System

cat = Catalog("t")

@cat.fn(blocking=True, timeout=0.01)
def cpu(x: int) -> int:
    return sum(range(3_000_000)) % 7  # one C call: holds the interpreter lock ~30 ms

@cat.rule
def r(cpu: int) -> int:
    return cpu

s = System(cat)
for i in range(12):
    anyio.run(lambda: s.aask({"x": i}))
# The last calls' worker threads may still be ending (a part given up at 10 ms runs
# 30 ms or, on a busy machine, much longer): wait for them, a stuck one never ends.
deadline = time.monotonic() + 20
while threading.active_count() > 1 and time.monotonic() < deadline:
    time.sleep(0.01)
print(threading.active_count())
"""


def test_a_thread_ending_as_its_loop_stops_does_not_hang_the_process() -> None:
    """Each request on a loop of its own (anyio.run per call), its blocking part given
    up by a timeout: the thread ends while its loop is stopping but not yet closed. It
    hands back its slot without waiting for that loop, so no thread is left stuck and
    the interpreter exits; waiting there once hung it for ever."""
    done = subprocess.run(
        [sys.executable, "-c", HANG], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert int(done.stdout) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_call_that_never_got_a_thread_says_so(backend: str) -> None:
    """Timed out while every thread was busy: the message says it waited for one, and
    how to give it one; a call that ran past its deadline is a plain timeout."""
    release = threading.Event()

    async def main() -> None:
        slots = ThreadSlots(1)
        with pytest.raises(PartTimeout) as ran:
            await slots.call(release.wait, (5,), 0.02)
        assert str(ran.value) == "timed out after 0.02 s"
        with pytest.raises(PartTimeout) as waited:
            await slots.call(print, (), 0.02)
        assert str(waited.value) == (
            "timed out after 0.02 s, waiting for one of the System's 1 threads (all busy): "
            "raise System(threads=...) or the timeout"
        )
        release.set()

    anyio.run(main, backend=backend)
