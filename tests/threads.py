"""Running one piece of test work in several threads at once."""

from __future__ import annotations

import threading
from collections.abc import Callable


def errors_in_threads(work: Callable[[int], object], count: int) -> list[BaseException]:
    """Run ``work(0)`` to ``work(count - 1)``, each in a thread of its own, all at once;
    what they raised (a thread's exception would otherwise only be printed)."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            work(n)
        except BaseException as exc:  # handed back to the test's own thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
