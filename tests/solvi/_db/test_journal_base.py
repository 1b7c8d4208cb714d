"""What every journal backend shares, without a database: input hashes, units and
small messages (pruning is tested on both backends in test_sqlite_journal and
test_postgres_journal)."""

from __future__ import annotations

import hashlib
from typing import Any

from solvi._db.journal_base import drive_unit, input_hash, newer_schema


def test_input_hash_is_sha256_of_the_text() -> None:
    """The input's canonical text, hashed."""
    assert input_hash('{"a":1}') == hashlib.sha256(b'{"a":1}').hexdigest()


def test_a_newer_journal_is_refused_with_the_upgrade_to_make() -> None:
    """The message names the file and both versions."""
    assert newer_schema("j.db", 4, 3) == (
        "journal j.db has schema version 4, newer than this solvi understands (3); upgrade solvi"
    )


def test_drive_unit_runs_statements_and_plans_in_order() -> None:
    """Tuples go to execute, callables' plans to run_plan, in the unit's order."""
    done: list[Any] = []
    drive_unit(
        [("SQL 1", (1,)), lambda: "plan", ("SQL 2", ())],
        lambda sql, params: done.append((sql, params)),
        lambda plan: done.append(plan),
    )
    assert done == [("SQL 1", (1,)), "plan", ("SQL 2", ())]
