"""Settings for the whole test suite."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# CI runs the same examples every time, so a red build is reproducible; locally,
# each run explores new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config: pytest.Config) -> None:
    """CI sets SOLVI_REQUIRE_POSTGRES: then the PostgreSQL tests must not be skipped."""
    if os.environ.get("SOLVI_REQUIRE_POSTGRES") and not os.environ.get("SOLVI_TEST_POSTGRES_DSN"):
        msg = (
            "SOLVI_REQUIRE_POSTGRES is set but SOLVI_TEST_POSTGRES_DSN is not: start a server "
            'with `eval "$(bash .ci/postgres.sh start)"`'
        )
        raise pytest.UsageError(msg)
