"""A System with a store keeps responses, audit entries and what it learned."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from flows.claims_small import Calls, claims_catalog

from solvi import Question, System
from solvi.audit import verify
from solvi.errors import StoreError
from solvi.storage import open_store

STATE = {"policy_id": "P1", "claim": {"amount": 120}}


def _system(store: object, **options: object) -> System:
    return System(
        claims_catalog(Calls()),
        [Question("approve", forced=False), "fast_track"],
        store=store,
        **options,  # type: ignore[arg-type]  # test options
    )


def test_every_response_is_stored_with_its_audit_entries(tmp_path: Path) -> None:
    """ask and aask both store the record under the response's request id."""
    path = tmp_path / "decisions.db"
    system = _system(path)
    res = system.ask(STATE)
    ares = anyio.run(system.aask, {"policy_id": "X1", "claim": {}})
    assert res.request_id is not None
    assert ares.request_id is not None
    store = open_store(path)
    assert json.loads(json.dumps(store.get_record(res.request_id))) == json.loads(res.to_json())
    assert store.get_record(ares.request_id)["answers"]["approve"]["status"] == "forced"
    report = verify(store)
    assert report.ok
    assert report.entries >= 2
    store.close()
    system.close()


def test_a_restarted_system_keeps_its_costs_and_order_model(tmp_path: Path) -> None:
    """Costs and the order model are saved on close and loaded by the next System."""
    path = tmp_path / "decisions.db"
    first = _system(path, learn=True)
    for i in range(5):
        first.ask({"policy_id": f"X{i}", "claim": {}})
    first.close()
    second = _system(path)
    assert second.cost_book["policy"].samples == 5
    assert second.order_model.counts("policy_in_force") == (5, 5)
    second.close()


def test_replay_of_a_stored_request_finds_no_difference(tmp_path: Path) -> None:
    """system.replay re-runs a stored request and reports it the same."""
    system = _system(tmp_path / "decisions.db")
    res = system.ask(STATE)
    assert res.request_id is not None
    result = system.replay(res.request_id)
    assert result.same
    assert result.differences == ()
    system.close()


def test_close_closes_the_store_even_when_saving_what_was_learned_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database gone at close time: the error is raised, and the store is closed
    all the same (its connections are not left behind)."""
    system = _system(tmp_path / "decisions.db")
    system.ask(STATE)

    def gone() -> None:
        raise StoreError("the database went away")

    monkeypatch.setattr(system, "save_learning", gone)
    with pytest.raises(StoreError, match="went away"):
        system.close()
    assert system.store is not None
    with pytest.raises(StoreError, match="is closed"):
        system.store.get_record("anything")
