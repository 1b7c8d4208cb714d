"""A System with a store keeps responses, audit entries and what it learned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from flows.claims_small import Calls, claims_catalog

from solvi import Question, System
from solvi.audit import verify
from solvi.errors import StoreError
from solvi.mistakes import SolviWarning
from solvi.order import OrderModel
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


@pytest.mark.parametrize(
    ("row", "named"),
    [
        (b"{not json", "not JSON text"),
        (b"\xff\xfe", "not JSON text"),
        (b"[]", "must be a JSON object"),
        (b'{"features": [], "refit": 50}', "missing fields checks"),
        (b'{"features": [], "refit": "50", "checks": {}}', "refit must be a whole number"),
        (b'{"features": [], "refit": 0, "checks": {}}', "refit must be 1 or more"),
        (
            b'{"features": [], "refit": 5, "checks": {"c": {"fails": "1", "total": 2, '
            b'"head": null}}}',
            "check 'c'.fails must be a whole number",
        ),
        (
            b'{"features": [], "refit": 5, "checks": {"c": {"fails": 3, "total": 2, '
            b'"head": null}}}',
            "fails must be at most its total 2",
        ),
        (
            b'{"features": [], "refit": 5, "checks": {"c": {"fails": 1, "total": 2, '
            b'"head": {"weights": {"x": 1e999}, "bias": 0, "scale": {}}}}}',
            "head.weights['x'] must be a finite number",
        ),
        (
            b'{"features": [], "refit": 5, "checks": {"c": {"fails": 1, "total": 2, '
            b'"head": {"weights": {}, "bias": 10' + b"0" * 400 + b', "scale": {}}}}}',
            "head.bias must be a finite number",
        ),
    ],
)
def test_a_changed_order_model_row_is_set_aside_with_a_warning(
    tmp_path: Path, row: bytes, named: str
) -> None:
    """A hand-edited learned order never stops the System: it warns, names the field,
    starts a fresh model and answers as before."""
    path = tmp_path / "decisions.db"
    store = open_store(path)
    store.save_blob("claims", "order_model", row)
    store.close()
    with pytest.warns(SolviWarning, match="stored order model not used") as caught:
        system = _system(path, order="learned")
    assert named in str(caught[0].message)
    assert system.order_model.counts("policy_in_force") == (0, 0)
    assert system.ask(STATE).answers["approve"].status == "decided"
    assert anyio.run(system.aask, STATE).answers["approve"].status == "decided"
    system.close()
    again = open_store(path)  # what the System learned since replaces the bad row
    saved = again.load_blob("claims", "order_model")
    again.close()
    assert saved is not None
    assert OrderModel.from_json(saved).counts("policy_in_force") == (0, 2)


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


def test_a_failed_learning_save_never_fails_an_answered_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 100th request saves what was learned after its response is stored. If that
    save fails, the request still returns its response (with a warning): raising would
    have its caller try again and run its parts twice. The next save keeps it all."""
    from solvi.system import SAVE_LEARNING_EVERY

    path = tmp_path / "decisions.db"
    system = _system(path)
    store = system.store
    assert store is not None
    real = store.save_costs
    failing = [True]

    def flaky(catalog: str, snapshot: Any) -> None:
        if failing[0]:
            raise StoreError("the database went away")
        real(catalog, snapshot)

    monkeypatch.setattr(store, "save_costs", flaky)
    for i in range(SAVE_LEARNING_EVERY - 1):
        system.ask({"policy_id": f"X{i}", "claim": {}}, request_id=f"r{i}")
    with pytest.warns(SolviWarning, match="what was learned could not be saved"):
        last = system.ask(STATE, request_id="last")
    assert last.request_id == "last"
    assert store.get_record("last")["hash"] == last.hash
    failing[0] = False
    system.close()
    again = open_store(path)
    assert again.load_costs("claims")["policy"][0] == SAVE_LEARNING_EVERY
    again.close()
