"""The journal: crash, recover, resume; nothing lost, nothing shown running without an owner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flows import crashy

from solvi import SolviError
from solvi.journal import Journal, open_journal
from solvi.recovery import ResumeRefused

HERE = Path(__file__).resolve().parent


POSTGRES = os.environ.get("SOLVI_TEST_POSTGRES_DSN")


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    crashy.CRASH_AT.clear()
    crashy.CALL_LOG.clear()
    yield
    crashy.CRASH_AT.clear()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param(
            "postgres",
            marks=pytest.mark.skipif(
                POSTGRES is None, reason="set SOLVI_TEST_POSTGRES_DSN to test PostgreSQL"
            ),
        ),
    ]
)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty journal location on each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "j.db")
    assert POSTGRES is not None
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS journal_entries, journal_requests, solvi_migrations")
    return POSTGRES


def _sql(journal: Journal, sql: str) -> None:
    journal.commit(((sql, ()),))


def _control_hash(tmp_path: Path) -> str:
    system = crashy.build(tmp_path / "control.db")
    try:
        return system.ask(crashy.STATE).hash
    finally:
        system.close()


def _crash_in(path: str, part: str) -> tuple[str, str]:
    """Run one request that dies inside `part`; return its id and the journal location."""
    system = crashy.build(path)
    crashy.CRASH_AT[part] = "raise"
    with pytest.raises(crashy.Crash):
        system.ask(crashy.STATE, request_id="req-1")
    crashy.CRASH_AT.clear()
    system.close()  # the owner is gone
    return "req-1", path


def test_closed_requests_are_not_unfinished(where: str) -> None:
    """A request that finished is closed in the journal and needs no recovery."""
    system = crashy.build(where)
    res = system.ask(crashy.STATE)
    assert res.request_id is not None
    assert system.journal_status() == []
    assert system.recover() == []


def test_resume_after_a_crash_during_a_step_reuses_settled_values(where: str) -> None:
    """Settled steps are not re-run; an interrupted non-idempotent step makes its answer abstain."""
    request_id, path = _crash_in(where, "points")
    assert crashy.CALL_LOG == ["policy", "policy_in_force", "fraud_score", "documents", "points"]
    system = crashy.build(path)
    (status,) = system.journal_status()
    assert status.settled == ("policy", "policy_in_force", "fraud_score", "documents")
    assert status.interrupted_during_execution == ("points",)
    assert status.interrupted_before_start == ("approve",)
    assert all(s.state != "running" for s in status.steps)
    (claimed,) = system.recover()
    assert claimed.request_id == request_id
    crashy.CALL_LOG.clear()
    res = system.resume(request_id)
    assert crashy.CALL_LOG == []
    answer = res["approve"]
    assert (answer.status, answer.guard) == ("abstained", "interrupted")
    assert res.notes == (
        "points was interrupted during execution; not re-run (declare idempotent=True to allow it)",
        "approve was interrupted before start; not run on resume "
        "(inputs missing: points (points was interrupted during execution; not re-run "
        "(not idempotent)))",
    )
    assert system.journal_status() == []


def test_resume_reruns_an_idempotent_step_and_matches_the_control(
    where: str, tmp_path: Path
) -> None:
    """An idempotent step interrupted mid-call runs again; answers and hash equal the control."""
    control = _control_hash(tmp_path)
    request_id, path = _crash_in(where, "documents")
    system = crashy.build(path)
    system.recover()
    crashy.CALL_LOG.clear()
    res = system.resume(request_id)
    assert crashy.CALL_LOG == ["documents", "points", "approve"]
    assert res["approve"].value is True
    assert res.hash == control
    assert res.notes[0] == "documents was interrupted during execution; re-run (idempotent)"
    assert "points was interrupted before start; run on resume" in res.notes


def test_a_crash_before_any_step_resumes_to_the_control(where: str, tmp_path: Path) -> None:
    """Steps interrupted before start simply run on resume."""
    control = _control_hash(tmp_path)
    request_id, path = _crash_in(where, "policy")
    system = crashy.build(path)
    res = system.resume(request_id)
    assert res.hash == control


def test_resume_refuses_a_live_owner_and_a_closed_request(where: str) -> None:
    """Only a dead owner's unfinished request can be resumed, and only once."""
    path = where
    live = crashy.build(path)
    crashy.CRASH_AT["points"] = "raise"
    with pytest.raises(crashy.Crash):
        live.ask(crashy.STATE, request_id="r")
    crashy.CRASH_AT.clear()
    other = crashy.build(path)
    with pytest.raises(ResumeRefused, match="belongs to a live process"):
        other.resume("r")
    assert other.recover() == []
    live.close()
    other.resume("r")
    with pytest.raises(ResumeRefused, match="already closed"):
        other.resume("r")


def test_resume_refuses_another_catalog_version(where: str) -> None:
    """A request journaled by another catalog version is refused."""
    request_id, path = _crash_in(where, "points")
    journal = open_journal(path)
    _sql(journal, "UPDATE journal_requests SET catalog_version = 'other'")
    journal.close()
    system = crashy.build(path)
    with pytest.raises(ResumeRefused, match="catalog version other"):
        system.resume(request_id)


def test_two_recoverers_never_claim_the_same_request(where: str) -> None:
    """Claims are exclusive: of two recovering Systems only one gets the request."""
    _, path = _crash_in(where, "points")
    first, second = crashy.build(path), crashy.build(path)
    claims = first.recover() + second.recover()
    assert [c.request_id for c in claims] == ["req-1"]


def test_a_damaged_last_entry_is_skipped(where: str) -> None:
    """A torn tail entry is skipped and counted, never fatal."""
    request_id, path = _crash_in(where, "points")
    journal = open_journal(path)
    _sql(
        journal,
        "UPDATE journal_entries SET value = '{\"broken' WHERE seq = (SELECT MAX(seq) FROM "
        "journal_entries WHERE kind = 'settled')",
    )
    journal.close()
    system = crashy.build(path)
    (status,) = system.journal_status()
    assert status.skipped_torn == 1
    assert "documents" not in status.settled
    res = system.resume(request_id)
    assert res["approve"].status == "abstained"


def test_journal_needs_configuring(tmp_path: Path) -> None:
    """recover() without a journal says how to add one."""
    from flows.claims_small import Calls, claims_catalog

    from solvi import System

    with pytest.raises(SolviError, match="needs a journal"):
        System(claims_catalog(Calls())).recover()


def test_real_sigkill_mid_step_then_recover(tmp_path: Path) -> None:
    """A child process killed with SIGKILL inside a step is recovered by another process."""
    path = tmp_path / "j.db"
    calls = tmp_path / "calls.log"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from flows import crashy
        crashy.CRASH_AT["points"] = "kill"
        system = crashy.build({str(path)!r})
        system.ask(crashy.STATE, request_id="killed")
        """
    )
    env = {**os.environ, "SOLVI_CALL_LOG": str(calls)}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60, check=False)
    assert done.returncode == -9
    system = crashy.build(path)
    (status,) = system.journal_status()
    assert status.interrupted_during_execution == ("points",)
    assert status.settled == ("policy", "policy_in_force", "fraud_score", "documents")
    res = system.resume("killed")
    assert res["approve"].guard == "interrupted"
    assert calls.read_text().split() == [
        "policy",
        "policy_in_force",
        "fraud_score",
        "documents",
        "points",
    ]
    assert json.loads(res.to_json())["notes"]


def test_recover_reports_what_the_dead_owner_left(where: str) -> None:
    """recover() lists the interruptions as found, and a claimed request never shows running."""
    request_id, path = _crash_in(where, "points")
    system = crashy.build(path)
    (claimed,) = system.recover()
    assert claimed.interrupted_during_execution == ("points",)
    assert claimed.interrupted_before_start == ("approve",)
    (status,) = system.journal_status()
    assert [s.state for s in status.steps if s.part in ("points", "approve")] == [
        "interrupted during execution",
        "interrupted before start",
    ]
    system.resume(request_id)


def test_resumed_values_keep_their_python_types(tmp_path: Path) -> None:
    """Settled values come back exactly (a date stays a date, a tuple a tuple)."""
    import datetime as dt

    from solvi import Catalog, System

    cat = Catalog("typed")

    @cat.fn
    def when(day: int) -> dt.date:
        return dt.date(2026, 1, day)

    @cat.fn
    def pair(day: int) -> tuple[int, int]:
        return (day, day + 1)

    @cat.fn(idempotent=True)
    def late(when: dt.date, pair: tuple[int, int]) -> str:
        if crashy.CRASH_AT.get("late"):
            raise crashy.Crash("late")
        return f"{type(when).__name__} {type(pair).__name__}"

    @cat.rule
    def describe(late: str) -> str:
        return late

    path = tmp_path / "typed.db"
    first = System(cat, journal=path)
    crashy.CRASH_AT["late"] = "raise"
    with pytest.raises(crashy.Crash):
        first.ask({"day": 3}, request_id="t")
    crashy.CRASH_AT.clear()
    first.close()
    second = System(cat, journal=path)
    assert second.resume("t")["describe"].value == "date tuple"
    second.close()


def test_a_third_reader_never_sees_a_claimed_step_running(where: str) -> None:
    """After another process claims the request, the dead owner's step is still interrupted."""
    request_id, path = _crash_in(where, "points")
    claimer = crashy.build(path)
    claimer.recover()
    reader = crashy.build(path)
    (status,) = reader.journal_status()
    states = {s.part: s.state for s in status.steps}
    assert states["points"] == "interrupted during execution"
    claimer.resume(request_id)


def test_a_refused_resume_leaves_the_request_unclaimed(where: str) -> None:
    """A resume refused for a changed question does not take the request from others."""
    from solvi import System

    request_id, path = _crash_in(where, "points")
    base = crashy.build(path)
    changed = System(base.catalog, [crashy.Question("approve", forced=True)], journal=path)
    with pytest.raises(ResumeRefused, match="catalog version"):
        changed.resume(request_id)
    other = crashy.build(path)
    assert [r.request_id for r in other.recover()] == [request_id]
    with pytest.raises(ResumeRefused, match="has no request"):
        other.resume("no-such-request")


def test_a_damaged_request_row_does_not_hide_the_others(where: str) -> None:
    """One unreadable request row is set aside; the other unfinished requests are listed."""
    _, path = _crash_in(where, "points")
    second = crashy.build(path)
    crashy.CRASH_AT["points"] = "raise"
    with pytest.raises(crashy.Crash):
        second.ask(crashy.STATE, request_id="req-2")
    crashy.CRASH_AT.clear()
    second.close()
    journal = open_journal(path)
    _sql(journal, "UPDATE journal_requests SET plan = '[broken' WHERE request_id = 'req-1'")
    journal.close()
    reader = crashy.build(path)
    assert [r.request_id for r in reader.journal_status()] == ["req-2"]
    assert reader.journal is not None
    assert reader.journal.damaged == {"req-1"}


def test_a_crash_under_aask_resumes_to_the_control(where: str, tmp_path: Path) -> None:
    """The async path's shared commits leave a journal that resumes to the control."""
    import anyio

    control = _control_hash(tmp_path)
    system = crashy.build(where)
    crashy.CRASH_AT["documents"] = "raise"

    with pytest.raises(BaseException) as info:  # noqa: PT011 - a Crash, maybe in a group
        anyio.run(lambda: system.aask(crashy.STATE, request_id="async-1"))
    died = info.value
    assert isinstance(died, crashy.Crash) or (
        isinstance(died, BaseExceptionGroup) and died.subgroup(crashy.Crash) is not None
    )
    crashy.CRASH_AT.clear()
    system.close()
    resumer = crashy.build(where)
    (status,) = resumer.journal_status()
    assert "documents" in status.interrupted_during_execution
    assert "policy" in status.settled
    assert resumer.resume("async-1").hash == control


def test_a_stored_response_is_kept_before_its_request_closes(where: str, tmp_path: Path) -> None:
    """With a store, `ask` and `aask` keep the response before the journal closes the
    request (a crash in between leaves it open, to be resumed), and the closed entry
    carries the stored record's hash; without a store the hash is not worked out."""
    import anyio

    from solvi import SQLiteStore, System

    base = crashy.build(where)
    journal = base.journal
    assert journal is not None
    open_when_stored: list[bool] = []

    class Watching(SQLiteStore):
        def _is_open(self, request_id: str) -> bool:
            rows = journal._fetch(
                "SELECT closed_at FROM journal_requests WHERE request_id = ?", (request_id,)
            )
            return rows[0][0] is None

        def save_response(self, record: Any, *, request_id: str) -> None:
            open_when_stored.append(self._is_open(request_id))
            super().save_response(record, request_id=request_id)

        async def asave_response(self, record: Any, *, request_id: str) -> None:
            open_when_stored.append(self._is_open(request_id))
            await super().asave_response(record, request_id=request_id)

    system = System(
        base.catalog, base.questions, journal=journal, store=Watching(tmp_path / "s.db")
    )
    kept = {
        "sync-1": system.ask(crashy.STATE, request_id="sync-1").hash,
        "async-1": anyio.run(lambda: system.aask(crashy.STATE, request_id="async-1")).hash,
    }
    assert open_when_stored == [True, True]
    base.ask(crashy.STATE, request_id="bare-1")  # no store
    rows = journal._fetch("SELECT request_id, closed_at, response_hash FROM journal_requests")
    closed = {request_id: (closed_at, digest) for request_id, closed_at, digest in rows}
    for request_id, digest in kept.items():
        assert closed[request_id][0] is not None
        assert closed[request_id][1] == digest
    assert closed["bare-1"][0] is not None
    assert closed["bare-1"][1] is None
    system.close()


def _entries_of(journal: Journal, request_id: str) -> int:
    rows = journal._fetch(
        "SELECT count(*) FROM journal_entries WHERE request_id = ?", (request_id,)
    )
    return int(rows[0][0])


def test_prune_forgets_closed_requests_and_keeps_open_ones(where: str) -> None:
    """Requests closed long enough ago go, entries and all; a request still open (its
    owner dead, waiting for recovery) and one closed too recently stay."""
    _crash_in(where, "points")  # req-1 stays open: its owner died
    system = crashy.build(where)
    journal = system.journal
    assert journal is not None
    try:
        for request_id in ("old-1", "old-2", "new"):
            system.ask(crashy.STATE, request_id=request_id)
        assert _entries_of(journal, "old-1") > 0
        _sql(
            journal,
            "UPDATE journal_requests SET closed_at = closed_at - 7200 "
            "WHERE request_id IN ('old-1', 'old-2')",
        )

        assert journal.prune(older_than=3600) == 2
        assert not journal.has_request("old-1")
        assert not journal.has_request("old-2")
        assert _entries_of(journal, "old-1") == 0
        assert journal.has_request("new")
        assert [status.request_id for status in system.journal_status()] == ["req-1"]
        with pytest.raises(ResumeRefused, match=r"has no request 'old-1': .* or prune"):
            system.resume("old-1")

        assert journal.prune(older_than=0) == 1  # "new" too; never an open request
        assert journal.prune(older_than=0) == 0
        (claimed,) = system.recover()
        assert claimed.request_id == "req-1"
        system.resume("req-1")
        assert journal.prune(older_than=0) == 1
    finally:
        system.close()


def test_prune_works_through_more_requests_than_one_batch(where: str) -> None:
    """A few hundred requests go per transaction; every batch starts after the last."""
    system = crashy.build(where)
    journal = system.journal
    assert journal is not None
    try:
        for number in range(1_203):
            system.ask(crashy.STATE, request_id=f"r{number:05}")
        assert journal.prune(older_than=0) == 1_203
        assert journal._fetch("SELECT count(*) FROM journal_entries") == [(0,)]
        assert journal._fetch("SELECT count(*) FROM journal_requests") == [(0,)]
    finally:
        system.close()


@pytest.mark.parametrize("older_than", [-1, float("nan"), float("inf"), True, "7d", None])
def test_prune_refuses_what_is_not_a_number_of_seconds(where: str, older_than: Any) -> None:
    """The message says what it takes."""
    journal = open_journal(where)
    assert journal is not None
    try:
        with pytest.raises(ValueError, match="older_than must be a number of seconds, 0 or more"):
            journal.prune(older_than)
    finally:
        journal.close()


def test_prune_deletes_only_what_the_database_itself_holds_closed(where: str) -> None:
    """A reader sees commits still in a process's log (SQLite): a request it sees closed
    may be open in the database, with entries yet to be applied. The deletes ask the
    database again, so such a request keeps its row and entries until its close lands."""
    journal = open_journal(where)
    assert journal is not None
    try:
        journal.open(
            "r", catalog="c", catalog_version="v", state_json="{}", plan=("p",), early_exit=True
        )
        journal.started("r", 0, "p")
        journal.catch_up()
        seen_closed = journal._fetch

        def fetch(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
            if sql.startswith("SELECT request_id FROM journal_requests WHERE request_id >"):
                return [("r",)] if params[0] < "r" else []  # as if its close were logged
            return seen_closed(sql, params)

        journal._fetch = fetch  # type: ignore[method-assign]
        assert journal.prune(older_than=0) == 0
        del journal._fetch
        assert journal.has_request("r")
        assert _entries_of(journal, "r") == 1
        journal.close_request("r", "hash")
        assert journal.prune(older_than=0) == 1
        assert _entries_of(journal, "r") == 0
    finally:
        journal.close()


def test_prune_beside_a_process_at_work_loses_nothing_and_leaves_no_entry(where: str) -> None:
    """One journal prunes everything closed, again and again, while a System on
    another answers 150 requests: each is answered, none is left open, and once the
    last close has landed a last prune leaves no request and no entry."""
    import threading

    system = crashy.build(where)
    pruner = open_journal(where)
    assert pruner is not None
    done = threading.Event()
    pruned = 0

    def prune_until_done() -> None:
        nonlocal pruned
        while not done.is_set():
            pruned += pruner.prune(older_than=0)

    thread = threading.Thread(target=prune_until_done)
    thread.start()
    try:
        answers = [
            system.ask(crashy.STATE, request_id=f"r{number:03}")["approve"].value
            for number in range(150)
        ]
    finally:
        done.set()
        thread.join()
    assert answers == [True] * 150
    assert system.journal_status() == []
    system.close()
    pruned += pruner.prune(older_than=0)
    assert pruned == 150
    assert pruner._fetch("SELECT count(*) FROM journal_requests") == [(0,)]
    assert pruner._fetch("SELECT count(*) FROM journal_entries") == [(0,)]
    pruner.close()
