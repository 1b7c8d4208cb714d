"""The PostgreSQL store's own code that runs without a server: how a DSN is named in
messages (never its password). Stores on a real server are in test_storage.py."""

from __future__ import annotations

import pytest

from solvi._db.postgres_store import describe_dsn


@pytest.mark.parametrize(
    ("dsn", "described"),
    [
        ("postgresql://alice:secret@db.example:6543/claims", "db.example:6543/claims"),
        ("postgresql://alice@db.example/claims", "db.example:5432/claims"),
        ("postgresql:///claims", "localhost:5432/claims"),
        ("postgresql://bob@/", "localhost:5432/bob"),
        ("host=h port=1 dbname=d password=pw", "h:1/d"),
        ("postgresql://[::1", "(unparsable DSN)"),
    ],
)
def test_a_dsn_is_named_by_host_port_and_database(dsn: str, described: str) -> None:
    """host:port/database, defaults filled in, the password left out."""
    assert describe_dsn(dsn) == described
    assert "secret" not in describe_dsn(dsn)
