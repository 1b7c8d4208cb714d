"""A System's settings: one frozen value, shown through read-only attributes."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from solvi import Catalog, Question, System
from solvi.settings import Setting


def _system(**options: object) -> System:
    cat = Catalog("s")

    @cat.rule
    def answer(x):
        return x

    return System(cat, **options)  # type: ignore[arg-type]


def test_each_attribute_shows_its_setting() -> None:
    """workers, timeout and the others read the frozen settings."""
    system = _system(workers=3, timeout=2.5, early_exit=False, guards="found")
    assert (system.workers, system.timeout, system.early_exit, system.guards) == (
        3,
        2.5,
        False,
        "found",
    )
    assert system.settings.workers == 3


def test_a_setting_cannot_be_assigned() -> None:
    """Assigning raises AttributeError saying to build a System with it instead."""
    system = _system()
    with pytest.raises(AttributeError) as info:
        system.workers = 8  # type: ignore[misc]
    assert str(info.value) == (
        "workers is a setting, fixed when the System is built; build a System with "
        "workers=8 instead"
    )
    assert system.workers == 1


def test_the_class_attribute_documents_the_setting() -> None:
    """On the class, the attribute is the descriptor, with its docstring."""
    assert isinstance(System.timeout, Setting)
    assert "Seconds" in (System.timeout.__doc__ or "")


def _small_catalog() -> Catalog:
    cat = Catalog("arguments")

    @cat.fn
    def score(x: int) -> int:
        return x

    @cat.rule
    def approve(score: int) -> bool:
        return score > 0

    return cat


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda c: System(c, "approve"), TypeError, "write ['approve'] for one question"),
        (lambda c: System(c, [42]), TypeError, "questions must be Question objects or names"),
        (lambda c: System(c, timeout=math.nan), ValueError, "timeout must be a positive"),
        (lambda c: System(c, early_exit="no"), TypeError, "early_exit must be True or False"),
        (lambda c: System(c, learn="yes"), TypeError, "learn must be True or False"),
        (lambda c: System(c, strategist="cost"), TypeError, 'pass producers="equivalent"'),
        (lambda c: System(c, overrides=[1]), TypeError, "overrides must hold names"),
        (lambda c: System(c).ask({"x": 1}, timeout=-1), ValueError, "timeout must be a positive"),
        (lambda c: System(c).ask({"x": 1}, timeout="0.1"), ValueError, "timeout must be a"),
        (lambda c: System(c).ask({"x": 1}, early_exit="no"), TypeError, "early_exit must be"),
        (lambda c: System(c).plan("ab"), TypeError, "got the string 'ab'; write ['ab']"),
        (lambda c: System(c).plan(5), TypeError, "plan's keys must be a list of names"),
        (lambda c: System(c).plan([1]), TypeError, "plan's keys must hold names"),
    ],
)
def test_a_wrong_argument_is_refused_at_once_saying_what_to_pass(
    build: Any, error: type[Exception], message: str
) -> None:
    """Wrong types are refused where they are passed, not deep inside a later request
    (a string of questions would be read letter by letter, "no" would count as true)."""
    with pytest.raises(error, match=re.escape(message)):
        build(_small_catalog())


def test_a_question_name_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="a Question's name must be a string"):
        Question(42)  # type: ignore[arg-type]
