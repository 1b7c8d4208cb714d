"""Async calls side by side in one anyio task group, a lone failure raised as itself.

A task group raises what its tasks raised in an exception group, even when only one
failed. The async ways of asking (`aask_text`'s extracts, `Vote`, the driver) raise
that one failure as itself, so that they raise what the sync ways raise.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio

__all__ = ["alone", "each"]


def alone(group: BaseExceptionGroup[Any]) -> BaseException:
    """A task group's single failure as itself (a part's SystemExit included); a group
    of several as it is."""
    return group.exceptions[0] if len(group.exceptions) == 1 else group


async def each(count: int, one: Callable[[int], Coroutine[Any, Any, None]]) -> None:
    """Await ``one(0)`` to ``one(count - 1)`` concurrently; a failure cancels the rest."""
    try:
        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(one, i)
    except BaseExceptionGroup as group:
        raise alone(group) from None
