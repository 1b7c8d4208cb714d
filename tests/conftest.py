"""Settings for the whole test suite."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """CI sets SOLVI_REQUIRE_POSTGRES: then the PostgreSQL tests must not be skipped."""
    if os.environ.get("SOLVI_REQUIRE_POSTGRES") and not os.environ.get("SOLVI_TEST_POSTGRES_DSN"):
        msg = (
            "SOLVI_REQUIRE_POSTGRES is set but SOLVI_TEST_POSTGRES_DSN is not: start a server "
            'with `eval "$(bash .ci/postgres.sh start)"`'
        )
        raise pytest.UsageError(msg)
