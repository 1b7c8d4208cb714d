"""What several benchmark scripts share: their plain-text tables, and timing with the
garbage collector paused."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["gc_paused", "table"]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns as wide as their widest cell, a rule of dashes under the header."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        first, *rest = zip(row, widths, strict=True)
        return "  ".join([first[0].ljust(first[1]), *(c.rjust(w) for c, w in rest)]).rstrip()

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)])


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collect, then keep the collector off while timing (as timeit does)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
