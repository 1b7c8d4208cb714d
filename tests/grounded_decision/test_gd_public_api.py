"""Every public module declares __all__, and it matches what the module defines."""

from __future__ import annotations

import importlib
import inspect

import pytest

import grounded_decision

MODULES = [
    "grounded_decision",
    "grounded_decision.statechart",
    "grounded_decision.policy",
    "grounded_decision.checks",
    "grounded_decision.evidence",
    "grounded_decision.module",
    "grounded_decision.refs",
    "grounded_decision.errors",
    "grounded_decision.cli",
    "grounded_decision.examples",
    "grounded_decision.examples.common",
    "grounded_decision.bridge",
]

SPEC_STATECHART_NAMES = {
    "compile_game",
    "GameGraph",
    "attractor",
    "even_wins",
    "controller_wins_from_start",
    "max_mean_payoff",
    "min_mean_payoff",
    "nonnegative_mean",
    "Limits",
    "GameTooLarge",
    "ParityUnsolved",
}


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_exactly_the_public_definitions(name: str) -> None:
    """__all__ names every public object the module defines or re-exports, and each imports."""
    module = importlib.import_module(name)
    exported = set(module.__all__)
    for item in exported:
        assert hasattr(module, item), f"{name}.{item} is listed but missing"
    defined = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "") == name
    }
    assert defined <= exported


def test_statechart_exports_the_spec_names() -> None:
    """grounded_decision.statechart exports every name the design lists."""
    from grounded_decision import statechart

    assert set(statechart.__all__) >= SPEC_STATECHART_NAMES


def test_package_errors_share_one_base() -> None:
    """Every exported exception derives from GroundedDecisionError."""
    errors = [
        getattr(grounded_decision, n)
        for n in grounded_decision.__all__
        if inspect.isclass(getattr(grounded_decision, n))
        and issubclass(getattr(grounded_decision, n), Exception)
    ]
    assert len(errors) >= 8
    assert all(issubclass(e, grounded_decision.GroundedDecisionError) for e in errors)
