"""A System's settings: one frozen value, shown through read-only attributes."""

from __future__ import annotations

import pytest

from solvi import Catalog, System
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
