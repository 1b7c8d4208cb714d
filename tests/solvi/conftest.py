"""Shared fixtures for the solvi tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flows.claims_small import Calls, claims_catalog
from stores import BACKENDS, Backend, backend

from solvi import Question, System
from solvi.storage import Store


@pytest.fixture
def calls() -> Calls:
    """A fresh call log."""
    return Calls()


@pytest.fixture
def claims(calls: Calls) -> System:
    """The claims system: `approve` is forced False by a failed hard check."""
    return System(claims_catalog(calls), [Question("approve", forced=False), "fast_track"])


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """An empty database on each backend (PostgreSQL when SOLVI_TEST_POSTGRES_DSN is set)."""
    with backend(request.param, tmp_path) as b:
        yield b


@pytest.fixture
def store(db: Backend) -> Iterator[Store]:
    """A store on that database, closed afterwards."""
    s = db.open()
    yield s
    s.close()


@pytest.fixture
def system() -> System:
    """The small claims System (test modules may define their own)."""
    return System(claims_catalog(Calls()), [Question("approve", forced=False), "fast_track"])
