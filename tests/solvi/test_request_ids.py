"""A caller's request id, given by two processes at once: the journal's key lets one of
them open it, the other is refused with `RequestIdTaken` before any part runs.

Two Systems on one journal stand for two processes. Both check the id (`has_request`)
before either opens it, which is the race: the check alone cannot catch it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from stores import BACKENDS, backend

from solvi import Catalog, RequestIdTaken, System
from solvi.journal import Journal, PostgresJournal, SQLiteJournal


def _catalog(calls: list[str]) -> Catalog:
    cat = Catalog("booking")

    @cat.fn
    def reserve(amount: int) -> str:
        calls.append("reserve")  # not idempotent: it books money
        return "booked"

    @cat.rule
    def approve(reserve: str) -> bool:
        return reserve == "booked"

    return cat


@pytest.fixture(params=BACKENDS)
def journal_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where both journals live: one SQLite file, or one PostgreSQL schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "j.db")
        return
    with backend("postgresql", tmp_path) as db:
        yield db.spec


def _journal(spec: str) -> Journal:
    return PostgresJournal(spec) if spec.startswith("postgres") else SQLiteJournal(spec)


def _checked_together(journal: Journal, barrier: threading.Barrier) -> None:
    """Make `has_request` return only once both callers have asked it."""
    checked = journal.has_request

    def has_request(request_id: str) -> bool:
        found = checked(request_id)
        barrier.wait(timeout=10)
        return found

    journal.has_request = has_request  # type: ignore[method-assign]


@pytest.mark.parametrize("driver", ["ask", "aask"])
def test_one_id_asked_by_two_processes_at_once_runs_once(journal_spec: str, driver: str) -> None:
    calls: list[str] = []
    barrier = threading.Barrier(2)
    systems = []
    for _ in range(2):
        journal = _journal(journal_spec)
        _checked_together(journal, barrier)
        systems.append(System(_catalog(calls), ["approve"], journal=journal))
    outcomes: list[Any] = [None, None]

    def ask(i: int) -> None:
        try:
            if driver == "ask":
                outcomes[i] = systems[i].ask({"amount": 5}, request_id="order-7")
            else:
                outcomes[i] = anyio.run(
                    lambda: systems[i].aask({"amount": 5}, request_id="order-7")
                )
        except Exception as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for system in systems:
        system.close()
    refused = [o for o in outcomes if isinstance(o, Exception)]
    answered = [o for o in outcomes if not isinstance(o, Exception)]
    assert calls == ["reserve"]
    assert len(answered) == 1
    assert answered[0]["approve"].value is True
    (error,) = refused
    assert isinstance(error, RequestIdTaken)
    assert isinstance(error, ValueError)
    assert error.request_id == "order-7"
    assert str(error).startswith("request id 'order-7' is already in the journal ")
    reader = System(_catalog([]), ["approve"], journal=_journal(journal_spec))
    assert reader.journal_status() == []
    reader.close()
