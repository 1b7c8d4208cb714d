"""Replay only reads: nothing stored, journaled, learned or told; a fixed list of stored ids,
streamed; a planned step missing from a record is a difference; timeouts are not re-run."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flows.loans import loans_catalog
from stores import Backend

from solvi import Catalog, MeasuredCosts, Question, System
from solvi.replay import Difference, ReplayResult, iter_replays, replay, replay_store
from solvi.storage import Store
from solvi.storecli import add_store_commands

ADULT = {"applicant": {"age": 30, "income": 60_000}}
MINOR = {"applicant": {"age": 16, "income": 60_000}}
TABLES = ("solvi_responses", "solvi_audit", "solvi_costs", "solvi_blobs")


def _loans(settings: dict[str, Any], **options: Any) -> System:
    return System(
        loans_catalog(settings), [Question("approve", forced=False), "clean_record"], **options
    )


@pytest.fixture
def settings() -> dict[str, Any]:
    """What the loans parts read: the approval limit and the bureau's delay."""
    return {"limit": 40, "bureau_delay": 0.0}


def _counts(db: Backend) -> dict[str, Any]:
    """Rows per store table, and the chain head: what a write would change."""
    counts: dict[str, Any] = {t: db.sql(f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}
    counts["head"] = db.sql("SELECT seq, hash FROM solvi_audit_head")[0]
    return counts


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="solvi")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


def _edit_record(db: Backend, request_id: str, change: Any) -> None:
    """Rewrite a stored record's text in the database, as someone with access could."""
    (text,) = db.sql("SELECT record FROM solvi_responses WHERE request_id = %s", (request_id,))[0]
    record = json.loads(text)
    change(record)
    db.sql(
        "UPDATE solvi_responses SET record = %s WHERE request_id = %s",
        (json.dumps(record, separators=(",", ":")), request_id),
    )


# -- a step missing from a record ----------------------------------------------------------


def test_a_step_deleted_from_a_stored_record_is_a_difference(
    db: Backend, store: Store, settings: dict[str, Any]
) -> None:
    """Removing a step that ran from a stored trace is reported, naming the step."""
    system = _loans(settings)
    store.save_response(system.ask(ADULT).record, request_id="a")
    assert replay(system, "a", store=store).same

    def drop_score(record: dict[str, Any]) -> None:
        record["steps"] = [s for s in record["steps"] if s["part"] != "score"]

    _edit_record(db, "a", drop_score)
    result = replay(system, "a", store=store)
    altered, deleted = result.differences
    assert result == ReplayResult("a", same=False, differences=(altered, deleted))
    assert (altered.kind, altered.name) == ("altered", "hash")
    assert deleted == Difference("step", "score", None, {"outcome": "ok", "message": None})
    assert str(deleted) == "step score: stored missing, replayed ran (ok)"


def test_a_skipped_step_deleted_from_a_record_is_a_difference(settings: dict[str, Any]) -> None:
    """A step the record should list as skipped, but does not, is reported too."""
    system = _loans(settings)
    record = system.ask(MINOR).record
    reason = "not needed: hard check adult failed"
    assert record["skipped"][0] == ["rate", reason]
    record["skipped"] = record["skipped"][1:]
    altered, difference = replay(system, record).differences
    assert (altered.kind, altered.name) == ("altered", "hash")
    assert difference == Difference("step", "rate", None, {"skipped": reason})
    assert str(difference) == f"step rate: stored missing, replayed skipped ({reason})"


def test_a_step_the_flow_does_not_plan_is_a_difference(settings: dict[str, Any]) -> None:
    """A step added to a record, or with another outcome, differs from the replay's."""
    system = _loans(settings)
    record = system.ask(ADULT).record
    record["steps"].append({"part": "ghost", "fact": "ghost", "outcome": "ok", "message": None})
    record["steps"][0]["outcome"] = "error"
    altered, *differences = replay(system, record).differences
    assert (altered.kind, altered.name) == ("altered", "hash")
    assert [(d.kind, d.name, d.stored, d.replayed) for d in differences] == [
        (
            "step",
            "adult",
            {"outcome": "error", "message": None},
            {"outcome": "ok", "message": None},
        ),
        ("step", "ghost", {"outcome": "ok", "message": None}, None),
    ]


# -- timed-out steps take their recorded outcome --------------------------------------------


def _slow_catalog(delay: dict[str, float]) -> Catalog:
    """A hard check and a fallback producer that time out when `delay` says so."""
    cat = Catalog("slow")

    @cat.check(hard=True, timeout=0.05)
    def vetted(applicant: dict[str, Any]) -> bool:
        time.sleep(delay["check"])
        return True

    @cat.fn(provides="score")
    def score_primary(applicant: dict[str, Any]) -> int:
        raise ConnectionError("primary scorer down")

    @cat.fn(provides="score", timeout=0.05)
    def score_backup(applicant: dict[str, Any]) -> int:
        time.sleep(delay["backup"])
        return 700

    @cat.rule
    def approve(vetted: bool, applicant: dict[str, Any]) -> bool:
        return True

    @cat.rule
    def rated(score: int) -> bool:
        return score > 600

    return cat


def test_a_timed_out_hard_check_is_not_rerun(settings: dict[str, Any]) -> None:
    """A hard check that timed out stays 'could not be evaluated' on replay: the same record."""
    delay = {"check": 0.2, "backup": 0.0}
    system = System(_slow_catalog(delay), ["approve", "rated"])
    record = system.ask({"applicant": {}}).record
    assert record["answers"]["approve"]["reason"] == (
        "hard check vetted could not be evaluated: vetted: vetted timed out after 0.05 s"
    )
    delay["check"] = -1  # run again, it would raise instead
    assert replay(system, record) == ReplayResult(None, same=True, not_rerun=("vetted",))


def test_a_producer_after_one_that_raised_keeps_its_recorded_timeout() -> None:
    """The producer that raised runs again; the fallback that timed out does not."""
    delay = {"check": 0.0, "backup": 0.2}
    system = System(_slow_catalog(delay), ["approve", "rated"])
    record = system.ask({"applicant": {}}).record
    outcomes = [(s["part"], s["outcome"]) for s in record["steps"]]
    assert ("score_primary", "error") in outcomes
    assert ("score_backup", "timeout") in outcomes
    delay["backup"] = 0.0  # fast now: a re-run would decide `rated`
    assert replay(system, record) == ReplayResult(None, same=True, not_rerun=("score_backup",))


# -- nothing written, learned or told ---------------------------------------------------------


class Told:
    """A hook that notes every event it is given."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def request_started(self, event: object) -> None:
        self.events.append("request_started")

    def step_started(self, event: object) -> None:
        self.events.append("step_started")

    def step_finished(self, event: object) -> None:
        self.events.append("step_finished")

    def request_finished(self, event: object) -> None:
        self.events.append("request_finished")


def _journal_rows(system: System, path: Path) -> tuple[int, int]:
    """The journal's rows, once every commit made so far is in the database (a journal
    that logs its commits applies them in the background)."""
    assert system.journal is not None
    system.journal.catch_up()
    with sqlite3.connect(path) as conn:
        requests = conn.execute("SELECT count(*) FROM journal_requests").fetchone()[0]
        entries = conn.execute("SELECT count(*) FROM journal_entries").fetchone()[0]
    conn.close()
    return int(requests), int(entries)


def test_replay_stores_journals_learns_and_tells_nothing(
    tmp_path: Path, settings: dict[str, Any]
) -> None:
    """With a store, a journal, a learned order and a hook, a replay changes none of them."""
    told = Told()
    system = _loans(
        settings,
        store=tmp_path / "store.db",
        journal=tmp_path / "journal.db",
        order="learned",
        hooks=[told],
    )
    for state in (ADULT, MINOR):
        system.ask(state, request_id=f"r-{state['applicant']['age']}")
    before = (
        dict(system.stats),
        system.cost_book.snapshot(),
        system.order_model.to_json(),
        _journal_rows(system, tmp_path / "journal.db"),
        len(told.events),
    )
    assert system.replay("r-30").same
    assert system.replay("r-16").same
    assert replay_store(system).same == 2
    after = (
        dict(system.stats),
        system.cost_book.snapshot(),
        system.order_model.to_json(),
        _journal_rows(system, tmp_path / "journal.db"),
        len(told.events),
    )
    assert after == before
    assert [rid for rid, _ in system.store.iter_records()] == ["r-30", "r-16"]  # type: ignore[union-attr]
    system.close()


def test_replay_store_and_system_replay_leave_the_row_counts(
    db: Backend, settings: dict[str, Any]
) -> None:
    """replay_store, System.replay and replay by id write no row to the store's tables."""
    system = _loans(settings, store=db.spec)
    ids = [system.ask(ADULT if i % 2 else MINOR).request_id for i in range(6)]
    system.save_learning()
    before = _counts(db)
    assert replay_store(system).same == 6
    assert all(system.replay(rid).same for rid in ids if rid is not None)
    assert replay(system, ids[0] or "", store=system.store).same
    assert _counts(db) == before
    system.store.close()  # type: ignore[union-attr]  # not System.close: that saves learning


def test_replay_under_measured_costs_runs_the_recorded_producer(settings: dict[str, Any]) -> None:
    """A record made in warm-up replays through the producer it used, though the cost book
    now prefers another, and the chooser counts no ask."""
    cat = Catalog("priced")

    @cat.fn(provides="score", cost=1.0)
    def score_slow(applicant: dict[str, Any]) -> int:
        time.sleep(0.02)
        return 700

    @cat.fn(provides="score", cost=2.0)
    def score_fast(applicant: dict[str, Any]) -> int:
        return 700

    @cat.rule
    def approve(score: int) -> bool:
        return score > 600

    system = System(
        cat,
        producers="equivalent",
        cost_policy="measured",
        costs=MeasuredCosts(min_samples=1),
    )
    first = system.ask({"applicant": {}}).record
    assert first["plan"]["score"]["producer"] == "score_slow"
    for _ in range(3):
        latest = system.ask({"applicant": {}}).record
    assert latest["plan"]["score"]["producer"] == "score_fast"
    chooser = system.planner.chooser
    assert chooser is not None
    asks, book = chooser.asks, system.cost_book.snapshot()
    assert replay(system, first).same
    assert replay(system, latest).same
    assert (chooser.asks, system.cost_book.snapshot()) == (asks, book)


def test_a_record_setting_a_guarded_key_is_refused(settings: dict[str, Any]) -> None:
    """A record whose input sets a hard check this System guards is refused, not run."""
    record = _loans(settings, overrides=["adult"]).ask({**ADULT, "adult": True}).record
    refused = replay(_loans(settings), record).refused
    assert refused == (
        "request key 'adult' sets the hard check 'adult', which would bypass that check; "
        "leave it out of the request (solvi computes it), or allow it with "
        "System(..., overrides=['adult']) where the caller is trusted to set it"
    )


def test_a_stored_record_of_the_wrong_shape_is_refused_not_raised(
    db: Backend, store: Store, settings: dict[str, Any]
) -> None:
    """replay_store goes on past a record someone broke, listing it as refused."""
    system = _loans(settings)
    store.save_response(system.ask(ADULT).record, request_id="a")
    store.save_response(system.ask(MINOR).record, request_id="b")
    _edit_record(db, "a", lambda r: r.update(steps="gone"))
    summary = replay_store(system, store)
    assert (summary.same, summary.different, summary.refused) == (1, 0, 1)
    assert summary.results[0].refused == (
        "not a decision record: its steps are not a list of steps with a part; pass a "
        "Response.record or a request id stored in the store"
    )


# -- a whole store: a fixed list, streamed ---------------------------------------------------


def test_iter_replays_leaves_out_records_stored_after_it_started(
    store: Store, settings: dict[str, Any]
) -> None:
    """Records saved while a replay runs are not replayed: the list is fixed at its start."""
    system = _loans(settings)
    record = system.ask(ADULT).record
    for i in range(5):
        store.save_response(record, request_id=f"old-{i}")
    replays = iter_replays(system, store)
    first = next(replays)
    for i in range(3):
        store.save_response(record, request_id=f"new-{i}")
    ids = [first.request_id, *(r.request_id for r in replays)]
    assert ids == [f"old-{i}" for i in range(5)]


def test_iter_replays_reads_one_record_per_result(
    store: Store, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each result is made before the next record is taken from the store."""
    system = _loans(settings)
    record = system.ask(ADULT).record
    for i in range(4):
        store.save_response(record, request_id=f"r{i}")
    taken: list[str] = []
    real = store.iter_records

    def counting(**options: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        for request_id, stored in real(**options):
            taken.append(request_id)
            yield request_id, stored

    monkeypatch.setattr(store, "iter_records", counting)
    seen = []
    for result in iter_replays(system, store):
        seen.append((result.request_id, list(taken)))
    assert seen == [(f"r{i}", [f"r{j}" for j in range(i + 1)]) for i in range(4)]


TARGET = """
from flows.loans import SETTINGS, loans_catalog
from solvi import Question, System

system = System(
    loans_catalog(SETTINGS), [Question("approve", forced=False), "clean_record"], store={store!r}
)
"""


@pytest.fixture
def own_store_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A file whose System keeps its own store (the modules it loads are forgotten after)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    path = tmp_path / "lending.py"
    path.write_text(TARGET.format(store=str(tmp_path / "own.db")))
    yield path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_replay_command_on_its_own_store_ends_and_writes_nothing(
    tmp_path: Path,
    own_store_target: Path,
    settings: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`solvi replay file:system` whose System stores: 250 records replayed once each,
    the row counts unchanged, then the same with replay_store and System.replay."""
    db = Backend("sqlite", str(tmp_path / "own.db"))
    system = _loans(settings, store=db.spec)
    for i in range(250):
        system.ask(ADULT if i % 3 else MINOR)
    system.close()
    before = _counts(db)
    assert _cli(["replay", f"{own_store_target}:system"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("0 different, 0 refused\n")
    assert out.splitlines() == [
        f"replayed 250 records of catalog loans (version {system.version}): 250 same, "
        f"0 different, 0 refused"
    ]
    assert _counts(db) == before
    again = _loans(settings, store=db.spec)
    assert replay_store(again).same == 250
    first = next(rid for rid, _ in again.store.iter_records())  # type: ignore[union-attr]
    assert again.replay(first).same
    assert _counts(db) == before
    again.store.close()  # type: ignore[union-attr]  # not System.close: that saves learning


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda r: r["safeguards"].clear(), id="a safeguard deleted"),
        pytest.param(lambda r: r["steps"].reverse(), id="steps reordered"),
        pytest.param(lambda r: r["steps"][0].update(fact="other"), id="a step's fact"),
        pytest.param(lambda r: r["flow"].pop(), id="the flow"),
        pytest.param(lambda r: r["steps"].append(dict(r["steps"][0])), id="a step twice"),
        pytest.param(lambda r: r.update(format="solvi.record/0"), id="the format"),
    ],
)
def test_a_record_edited_where_the_replay_does_not_look_is_still_caught(edit: Any) -> None:
    """Its content no longer gives the hash it carries: an `altered` difference, even
    where the answers, values and steps come out the same."""
    cat = Catalog("down")

    @cat.fn
    def rate(applicant: dict[str, Any]) -> float:
        raise ConnectionError("rate service down")

    @cat.check(hard=True)
    def adult(applicant: dict[str, Any]) -> bool:
        return applicant["age"] >= 18

    @cat.rule
    def approve(adult: bool, rate: float) -> bool:
        return rate < 0.1

    system = System(cat, ["approve"])
    response = system.ask(ADULT)
    record = response.record
    assert record["safeguards"]
    assert replay(system, record).same
    edit(record)
    result = replay(system, record)
    assert not result.same
    (altered,) = (d for d in result.differences if d.kind == "altered")
    assert (altered.name, altered.stored) == ("hash", response.hash)
    assert str(altered).startswith(f"altered hash: the record carries {altered.stored[:16]}, ")


def test_an_edited_decision_hash_is_caught(settings: dict[str, Any]) -> None:
    system = _loans(settings)
    record = system.ask(ADULT).record
    record["decision_hash"] = "0" * 64
    (altered,) = replay(system, record).differences
    assert (altered.kind, altered.name, altered.stored) == ("altered", "decision_hash", "0" * 64)
