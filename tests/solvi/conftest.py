"""Shared fixtures for the solvi tests."""

from __future__ import annotations

import pytest
from flows.claims_small import Calls, claims_catalog

from solvi import Question, System


@pytest.fixture
def calls() -> Calls:
    """A fresh call log."""
    return Calls()


@pytest.fixture
def claims(calls: Calls) -> System:
    """The claims system: `approve` is forced False by a failed hard check."""
    return System(claims_catalog(calls), [Question("approve", forced=False), "fast_track"])
