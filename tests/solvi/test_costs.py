"""The cost book: its means against a plain computation, whichever way samples arrive."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvi.costs import CostBook, PartCost

SAMPLES = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0.0, 2.0)), min_size=1, max_size=40
)


def _attempts(samples: list[tuple[str, float]]) -> list[tuple[object, ...]]:
    return [(0, part, "f", 10.0, 10.0 + seconds, "ok", None) for part, seconds in samples]


@given(SAMPLES)
def test_the_cumulative_mean_is_the_mean_of_the_samples(samples: list[tuple[str, float]]) -> None:
    """Per part: the count and the plain mean in ms, from attempts or from samples."""
    from_attempts, from_samples = CostBook(), CostBook()
    from_attempts.observe_attempts(_attempts(samples))
    from_samples.observe(samples)
    for part in {p for p, _ in samples}:
        times = [(10.0 + s - 10.0) * 1000.0 for p, s in samples if p == part]
        for book in (from_attempts, from_samples):
            cost = book[part]
            assert cost.samples == len(times)
            assert math.isclose(cost.mean_ms, statistics.fmean(times), rel_tol=1e-9, abs_tol=1e-9)
            assert book.mean(part) == cost.mean_ms


@given(SAMPLES, st.floats(0.01, 1.0))
def test_the_moving_average_follows_its_recurrence(
    samples: list[tuple[str, float]], alpha: float
) -> None:
    """With alpha, each new sample moves the mean by alpha of the difference."""
    book = CostBook(alpha=alpha)
    book.observe_attempts(_attempts(samples))
    expected: dict[str, list[float]] = {}
    for part, seconds in samples:
        ms = (10.0 + seconds - 10.0) * 1000.0
        if part not in expected:
            expected[part] = [1, ms]
        else:
            expected[part][0] += 1
            expected[part][1] += alpha * (ms - expected[part][1])
    for part, (n, mean) in expected.items():
        assert book[part].samples == n
        assert math.isclose(book[part].mean_ms, mean, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("alpha", [None, 0.3])
@given(samples=SAMPLES)
def test_a_snapshot_restores_the_same_book(
    alpha: float | None, samples: list[tuple[str, float]]
) -> None:
    """snapshot() then restore() gives the same counts and means, and keeps learning alike."""
    book = CostBook(alpha=alpha)
    book.observe(samples)
    again = CostBook(alpha=alpha)
    again.restore(book.snapshot())
    for part in book:
        assert again[part].samples == book[part].samples
        assert math.isclose(again[part].mean_ms, book[part].mean_ms, rel_tol=1e-9, abs_tol=1e-9)
    book.observe([("a", 0.5)])
    again.observe([("a", 0.5)])
    assert math.isclose(again["a"].mean_ms, book["a"].mean_ms, rel_tol=1e-9)


def test_a_part_never_measured_has_no_entry() -> None:
    """Reading a part that never ran raises KeyError; mean() gives the default."""
    book = CostBook()
    with pytest.raises(KeyError):
        _ = book["x"]
    assert book.mean("x", 5.0) == 5.0
    book.observe([("x", 0.002)])
    assert book["x"] == PartCost(1, pytest.approx(2.0))
