"""The cost book: what each part has cost, measured on every request."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping

import attrs

__all__ = ["CostBook", "PartCost"]


@attrs.frozen
class PartCost:
    """What one part has cost so far: calls measured and their mean in ms."""

    samples: int
    mean_ms: float


class CostBook(Mapping[str, PartCost]):
    """Run times per part: a cumulative mean, or a moving average with `alpha`.

    Reading it is a mapping of part name to `PartCost`. Writes come from the
    System after each request, under a lock, so threads may share it.

    Args:
        alpha: weight of a new sample in an exponential moving average; None
            keeps the plain cumulative mean.
    """

    def __init__(self, alpha: float | None = None) -> None:
        if alpha is not None and not 0.0 < alpha <= 1.0:
            msg = f"alpha must be in (0, 1] or None, got {alpha!r}"
            raise ValueError(msg)
        self.alpha = alpha
        self._stats: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def __getitem__(self, part: str) -> PartCost:
        n, mean = self._stats[part]
        return PartCost(int(n), mean)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._stats))

    def __len__(self) -> int:
        return len(self._stats)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}: {v[1]:.3f} ms x{int(v[0])}" for k, v in self._stats.items())
        return f"CostBook({inner})"

    def mean(self, part: str, default: float | None = None) -> float | None:
        """The measured mean in ms, or `default` when the part never ran."""
        entry = self._stats.get(part)
        return default if entry is None else entry[1]

    def observe(self, samples: Iterable[tuple[str, float]]) -> None:
        """Fold in (part, seconds) samples."""
        alpha = self.alpha
        stats = self._stats
        with self._lock:
            for part, seconds in samples:
                ms = seconds * 1000.0
                entry = stats.get(part)
                if entry is None:
                    stats[part] = [1.0, ms]
                    continue
                entry[0] += 1.0
                if alpha is None:
                    entry[1] += (ms - entry[1]) / entry[0]
                else:
                    entry[1] += alpha * (ms - entry[1])

    def restore(self, data: Mapping[str, tuple[int, float]]) -> None:
        """Load saved (samples, mean_ms) pairs, replacing what the book held."""
        with self._lock:
            self._stats = {k: [float(n), float(m)] for k, (n, m) in data.items()}

    def snapshot(self) -> dict[str, tuple[int, float]]:
        """(samples, mean_ms) per part, for saving."""
        with self._lock:
            return {k: (int(v[0]), v[1]) for k, v in self._stats.items()}
