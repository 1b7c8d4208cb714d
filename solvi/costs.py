"""The cost book: what each part has cost, measured on every request."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from random import random
from typing import Any

import attrs

from solvi.catalog import Part
from solvi.order import OrderModel, Row
from solvi.strategy import Price

#: the largest P(fail) a learned choice believes, so no expected cost is infinite
MAX_P_FAIL = 0.99

__all__ = ["CostBook", "MeasuredCosts", "PartCost", "ProducerChooser"]


@attrs.frozen
class PartCost:
    """What one part has cost so far: calls measured and their mean in ms."""

    samples: int
    mean_ms: float


class CostBook(Mapping[str, PartCost]):
    """Run times per part: a cumulative mean, or a moving average with `alpha`.

    Reading it is a mapping of part name to `PartCost`. Writes come from the
    System after each request, under a lock, so threads may share it.

    Folding a request in is most of what measuring costs `ask` per step, so a
    cumulative mean may be sampled: every request is measured until `first` have
    been, then one request in `one_in`, drawn at random (so no periodic mix of
    requests is always the one left out). The means stay those of the calls
    made; `samples` counts the calls measured. A moving average always measures
    every request, since it is there to notice a slowdown at once.

    Args:
        alpha: weight of a new sample in an exponential moving average; None
            keeps the plain cumulative mean.
        first: requests measured in full before sampling starts.
        one_in: after `first`, measure one request in this many (1: all).
    """

    def __init__(self, alpha: float | None = None, *, first: int = 1000, one_in: int = 1) -> None:
        if alpha is not None and not 0.0 < alpha <= 1.0:
            msg = f"alpha must be in (0, 1] or None, got {alpha!r}"
            raise ValueError(msg)
        for name, value, least in (("first", first, 0), ("one_in", one_in, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                msg = f"{name} must be a whole number >= {least}, got {value!r}"
                raise ValueError(msg)
        self.alpha = alpha
        self.first = first
        self.one_in = one_in if alpha is None else 1
        self._seen = 0
        self._chance = 1.0 / self.one_in
        #: part -> [samples, total seconds] for the cumulative mean (so folding in a
        #: sample is two additions), or [samples, mean ms] for the moving average
        self._stats: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _mean(self, entry: list[float]) -> float:
        return entry[1] * 1000.0 / entry[0] if self.alpha is None else entry[1]

    def __getitem__(self, part: str) -> PartCost:
        entry = self._stats[part]
        return PartCost(int(entry[0]), self._mean(entry))

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._stats))

    def __len__(self) -> int:
        return len(self._stats)

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{k}: {self._mean(v):.3f} ms x{int(v[0])}" for k, v in self._stats.items()
        )
        return f"CostBook({inner})"

    def mean(self, part: str, default: float | None = None) -> float | None:
        """The measured mean in ms, or `default` when the part never ran."""
        entry = self._stats.get(part)
        return default if entry is None else self._mean(entry)

    def all_below(self, parts: tuple[str, ...], ms: float) -> bool:
        """Whether every one of `parts` has run and its mean is below `ms`."""
        stats = self._stats
        for part in parts:
            entry = stats.get(part)
            if entry is None or self._mean(entry) >= ms:
                return False
        return True

    def observe(self, samples: Iterable[tuple[str, float]]) -> None:
        """Fold in (part, seconds) samples."""
        self._fold((part, 0.0, seconds) for part, seconds in samples)

    def observe_attempts(self, attempts: Iterable[tuple[Any, ...]]) -> None:
        """Fold in a request's attempts (part name at [1], start and end at [3] and [4])."""
        if self.alpha is not None:
            self._fold((a[1], a[3], a[4]) for a in attempts)
            return
        if self.one_in > 1:
            if self._seen >= self.first:
                if random() >= self._chance:
                    return
            else:
                self._seen += 1  # racy under threads: at worst a few more measured
        # The cumulative mean: unrolled for speed.
        stats = self._stats
        get = stats.get
        with self._lock:
            for _, part, _, start, end, _, _ in attempts:
                entry = get(part)
                if entry is None:
                    stats[part] = [1.0, end - start]
                else:
                    entry[0] += 1.0
                    entry[1] += end - start

    def _fold(self, samples: Iterable[tuple[str, float, float]]) -> None:
        """Fold in (part, start, end) samples, in seconds."""
        alpha = self.alpha
        stats = self._stats
        with self._lock:
            for part, start, end in samples:
                seconds = end - start
                entry = stats.get(part)
                if entry is None:
                    stats[part] = [1.0, seconds if alpha is None else seconds * 1000.0]
                elif alpha is None:
                    entry[0] += 1.0
                    entry[1] += seconds
                else:
                    entry[0] += 1.0
                    entry[1] += alpha * (seconds * 1000.0 - entry[1])

    def restore(self, data: Mapping[str, tuple[int, float]]) -> None:
        """Load saved (samples, mean_ms) pairs, replacing what the book held."""
        with self._lock:
            self._stats = {
                k: [float(n), float(m) * n / 1000.0 if self.alpha is None else float(m)]
                for k, (n, m) in data.items()
                if n >= 1
            }

    def snapshot(self) -> dict[str, tuple[int, float]]:
        """(samples, mean_ms) per part, for saving."""
        with self._lock:
            return {k: (int(v[0]), self._mean(v)) for k, v in self._stats.items()}


@attrs.frozen
class MeasuredCosts:
    """Settings of the measured cost policy.

    Args:
        min_samples: calls each producer gets (its warm-up) before measured
            means decide; a producer without declared `cost=` is tried first.
        recheck: a producer unused for this many asks gets one more trial, so a
            producer that became fast again is noticed.
        alpha: weight of a new sample in the moving average; None keeps the
            cumulative mean (steady, but slow to notice a slowdown).
    """

    min_samples: int = attrs.field(default=3)
    recheck: int = attrs.field(default=50)
    alpha: float | None = None

    @min_samples.validator
    def _check_min_samples(self, _: object, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            msg = f"min_samples must be a whole number >= 1, got {value!r}"
            raise ValueError(msg)

    @recheck.validator
    def _check_recheck(self, _: object, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            msg = f"recheck must be a whole number >= 1, got {value!r}"
            raise ValueError(msg)


class ProducerChooser:
    """Chooses, per request, which of several equivalent producers to plan.

    Owned by one System; `prices` and `ran` are called under its lock.
    """

    def __init__(
        self,
        groups: Mapping[str, tuple[Part, ...]],
        book: CostBook,
        settings: MeasuredCosts,
        *,
        measured: bool = True,
        failures: OrderModel | None = None,
    ) -> None:
        self.groups = dict(groups)
        self.book = book
        self.settings = settings
        #: whether costs are the book's measurements (else each part's declared cost)
        self.measured = measured
        #: producers="learned": P(a producer fails or times out | the request's facts)
        self.failures = failures
        self.asks = 0
        self.last_used: dict[str, int] = {}
        self.frozen: dict[str, str] | None = None
        self._members = {p.name for group in self.groups.values() for p in group}
        self._lock = threading.Lock()

    def _measured(self, part: Part) -> tuple[int, float]:
        declared = part.cost if part.cost is not None else 0.0
        entry = self.book._stats.get(part.name)
        if entry is None or not self.measured:
            return (0 if entry is None else int(entry[0])), declared
        return int(entry[0]), self.book._mean(entry)

    def prices(
        self, *, ask: bool = True, state: Mapping[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Price]]:
        """This request's prices and the signature of its choice (for the flow cache).

        With `ask` False (`System.plan`: looking is not asking) the ask is not
        counted, and the prices are those the next ask would get. Under learned
        producers `state` is the request's: the choice depends on its facts.
        """
        failures = self.failures
        row = None if failures is None or state is None else failures.row(state, state)
        with self._lock:
            asks = self.asks + 1
            if ask:
                self.asks = asks
            settings = self.settings
            prices: dict[str, Price] = {}
            chosen: list[str] = []
            notes: dict[str, str] = {}
            for fact, group in self.groups.items():
                measured = {p.name: self._measured(p) for p in group}
                pick: Part
                if self.frozen is not None and fact in self.frozen:
                    pick = next(p for p in group if p.name == self.frozen[fact])
                    source = "frozen"
                elif failures is not None and row is not None:
                    pick, source = self._learned_pick(group, measured, row, asks, notes)
                else:
                    under = [p for p in group if measured[p.name][0] < settings.min_samples]
                    stale = [
                        p
                        for p in group
                        if asks - self.last_used.get(p.name, asks) >= settings.recheck
                    ]
                    if under:
                        pick = min(under, key=lambda p: (measured[p.name][1], p.index))
                        source = "warm-up"
                    elif stale:
                        pick = min(stale, key=lambda p: self.last_used.get(p.name, 0))
                        source = "recheck"
                    else:
                        pick = min(group, key=lambda p: (measured[p.name][1], p.index))
                        source = "measured"
                for p in group:
                    samples, mean = measured[p.name]
                    measured_here = samples and self.measured
                    label = source if p is pick else ("measured" if measured_here else "declared")
                    prices[p.name] = Price(mean, label, preferred=p is pick, note=notes.get(p.name))
                chosen.append(pick.name)
            return tuple(chosen), prices

    def _learned_pick(
        self,
        group: tuple[Part, ...],
        measured: Mapping[str, tuple[int, float]],
        row: Row,
        asks: int,
        notes: dict[str, str],
    ) -> tuple[Part, str]:
        """The producer with the least expected cost on this request, and why.

        A producer that fails with probability p costs its price each time it is
        tried and succeeds once in 1/(1 - p) tries, so its expected cost to a fact
        is price / (1 - p). Each producer is first tried `min_samples` times, and
        one unused for `recheck` asks is tried again, so a recovered one is seen.
        """
        failures = self.failures
        assert failures is not None
        settings = self.settings
        untried = [p for p in group if failures.counts(p.name)[1] < settings.min_samples]
        if untried:
            pick = min(untried, key=lambda p: (measured[p.name][1], p.index))
            notes[pick.name] = (
                f"warm-up: tried {failures.counts(pick.name)[1]} of {settings.min_samples} "
                f"times before P(fail) decides"
            )
            return pick, "warm-up"
        stale = [p for p in group if asks - self.last_used.get(p.name, asks) >= settings.recheck]
        if stale:
            pick = min(stale, key=lambda p: self.last_used.get(p.name, 0))
            notes[pick.name] = f"recheck: unused for {settings.recheck} asks"
            return pick, "recheck"
        expected: dict[str, float] = {}
        terms = []
        for p in group:
            p_fail = min(failures.p_fail(p.name, row), MAX_P_FAIL)
            cost = measured[p.name][1]
            expected[p.name] = cost / (1.0 - p_fail)
            terms.append(
                f"{p.name} {cost:g} ms / (1 - P(fail) {p_fail:.2f}) = {expected[p.name]:.1f} ms"
            )
        pick = min(group, key=lambda p: (expected[p.name], p.index))
        notes[pick.name] = "least expected cost: " + "; ".join(terms)
        return pick, "learned"

    def learn(self, state: Mapping[str, Any], attempts: Iterable[tuple[Any, ...]]) -> None:
        """Learned producers: note whether each producer this request tried failed."""
        failures = self.failures
        if failures is None:
            return
        tried = [(a[1], a[5] != "ok") for a in attempts if a[1] in self._members]
        if not tried:
            return
        row = failures.row(state, state)
        for part, failed in tried:
            failures.observe(part, row, failed)

    def ran(self, parts: Iterable[str]) -> None:
        """Note which producers this request ran."""
        with self._lock:
            for name in parts:
                if name in self._members:
                    self.last_used[name] = self.asks

    def freeze(self) -> None:
        """Keep the current choice for every fact until `unfreeze`."""
        with self._lock:
            self.frozen = {}
            for fact, group in self.groups.items():
                self.frozen[fact] = min(group, key=lambda p: (self._measured(p)[1], p.index)).name

    def unfreeze(self) -> None:
        """Let measurements choose again."""
        with self._lock:
            self.frozen = None
