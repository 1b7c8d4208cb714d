"""The cost book: its means against a plain computation, whichever way samples arrive."""

from __future__ import annotations

import math
import re
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


def test_a_sampled_book_measures_every_request_first_then_one_in_n() -> None:
    """`first` requests are all measured; of the next 4,000, about one in four is, and
    the mean is still that of the calls measured."""
    book = CostBook(first=10, one_in=4)
    for _ in range(10):
        book.observe_attempts(_attempts([("a", 0.002)]))
    assert book["a"].samples == 10
    for _ in range(4000):
        book.observe_attempts(_attempts([("a", 0.002)]))
    measured = book["a"].samples - 10
    assert 800 < measured < 1200  # binomial(4000, 1/4): 1000 +- 27 per standard deviation
    assert math.isclose(book["a"].mean_ms, 2.0, rel_tol=1e-9)


def test_a_book_measures_every_request_unless_told_to_sample() -> None:
    """By default, and always with a moving average, every request is measured."""
    for book in (CostBook(first=0), CostBook(alpha=0.5, first=0, one_in=8)):
        for _ in range(50):
            book.observe_attempts(_attempts([("a", 0.001)]))
        assert book["a"].samples == 50
        assert book.one_in == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"one_in": 0}, "one_in must be a whole number >= 1, got 0"),
        ({"one_in": 2.5}, "one_in must be a whole number >= 1, got 2.5"),
        ({"first": -1}, "first must be a whole number >= 0, got -1"),
        ({"first": True}, "first must be a whole number >= 0, got True"),
    ],
)
def test_bad_sampling_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    """Sampling settings must be whole numbers in range; the message names the setting."""
    with pytest.raises(ValueError, match=re.escape(message)):
        CostBook(**kwargs)  # type: ignore[arg-type]  # the wrong types are the point


def test_a_system_samples_only_where_no_choice_waits_on_each_measurement() -> None:
    """Declared costs sample after warm-up; measured costs and learned producers never."""
    from solvi import Catalog, System

    cat = Catalog("sampling")

    @cat.fn(provides="x", cost=1.0)
    def x_cheap(a: int) -> int:
        return a

    @cat.fn(provides="x", cost=2.0)
    def x_dear(a: int) -> int:
        return a

    @cat.rule
    def out(x: int) -> int:
        return x

    assert System(cat).cost_book.one_in == 8
    assert System(cat, producers="equivalent", cost_policy="measured").cost_book.one_in == 1
    assert System(cat, producers="learned").cost_book.one_in == 1
