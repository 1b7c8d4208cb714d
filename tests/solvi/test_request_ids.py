"""A caller's request id, given by two processes at once: the journal's key lets one of
them open it, the other is refused with `RequestIdTaken` before any part runs.

Two Systems on one journal stand for two processes. Both check the id (`has_request`)
before either opens it, which is the race: the check alone cannot catch it.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from stores import BACKENDS, backend

from solvi import Catalog, RequestError, RequestIdTaken, System
from solvi.journal import Journal, PostgresJournal, SQLiteJournal
from solvi.storage import DuplicateRequestError


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


@pytest.mark.parametrize("driver", ["ask", "aask"])
@pytest.mark.parametrize("shared", [False, True], ids=["journal apart", "journal in the store"])
def test_an_id_the_store_holds_is_refused_before_any_part_runs(
    tmp_path: Path, driver: str, shared: bool
) -> None:
    """Another process stored a response under the id, without a journal: this one's
    request raises DuplicateRequestError before it runs, and leaves nothing open."""
    calls: list[str] = []
    store = tmp_path / "s.db"
    other = System(_catalog([]), ["approve"], store=store)
    other.ask({"amount": 1}, request_id="order-7")
    other.close()
    journal: Any = True if shared else tmp_path / "j.db"
    system = System(_catalog(calls), ["approve"], store=store, journal=journal)

    def ask() -> object:
        if driver == "ask":
            return system.ask({"amount": 5}, request_id="order-7")
        return anyio.run(lambda: system.aask({"amount": 5}, request_id="order-7"))

    with pytest.raises(DuplicateRequestError, match="already stored under request id 'order-7'"):
        ask()
    assert calls == []
    assert system.journal_status() == []
    system.close()


def test_a_response_stored_meanwhile_under_the_id_closes_the_request_as_refused(
    tmp_path: Path,
) -> None:
    """The race the check cannot see: the store takes another response under the id while
    the request runs. The request raises, is closed, and no `recover` claims it."""
    store = tmp_path / "s.db"
    system = System(_catalog([]), ["approve"], store=store, journal=tmp_path / "j.db")
    other = System(_catalog([]), ["approve"], store=store)
    check = system._check_new_id

    def check_then_lose_the_race(request_id: str | None) -> None:
        check(request_id)
        other.ask({"amount": 1}, request_id="order-7")

    system._check_new_id = check_then_lose_the_race  # type: ignore[method-assign]
    with pytest.raises(DuplicateRequestError):
        system.ask({"amount": 5}, request_id="order-7")
    assert system.journal_status() == []
    assert system.recover() == []
    with pytest.raises(Exception, match="already closed"):
        system.resume("order-7")
    system.close()
    other.close()


@pytest.mark.parametrize(
    ("request_id", "problem"),
    [
        ("\ud800", "holds a lone surrogate, which UTF-8 cannot encode"),
        ("a\x00b", "holds a NUL character"),
        ("", "has 0 characters"),
        ("x" * 1001, "has 1001 characters"),
        (17, "is a int"),
    ],
)
def test_a_request_id_no_database_can_keep_is_refused_before_anything_runs(
    tmp_path: Path, request_id: Any, problem: str
) -> None:
    """ask, aask, resume, a store's lookups and saves refuse it with a RequestError
    that says what to pass, not a raw UnicodeEncodeError from the database driver."""
    calls: list[int] = []
    cat = Catalog("ids")

    @cat.rule
    def approve(amount: int) -> bool:
        calls.append(amount)
        return amount < 10

    system = System(cat, store=tmp_path / "s.db", journal=tmp_path / "j.db")
    attempts = [
        lambda: system.ask({"amount": 1}, request_id=request_id),
        lambda: anyio.run(functools.partial(system.aask, {"amount": 1}, request_id=request_id)),
        lambda: system.resume(request_id),
        lambda: system.store.get_record(request_id),  # type: ignore[union-attr]
        lambda: system.store.save_response(  # type: ignore[union-attr]
            system.ask({"amount": 1}).record, request_id=request_id
        ),
    ]
    for attempt in attempts:
        with pytest.raises(RequestError, match=re.escape(problem)) as caught:
            attempt()
        assert "pass text of 1 to 1000 characters" in str(caught.value)
    assert calls == [1]  # only the ask that made a record to save
    system.close()
