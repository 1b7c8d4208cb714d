"""What a request may set: never a hard check, nor a fact a hard check reads, unless the
System allows it by name."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvi import Catalog, Question, System
from solvi.errors import RequestError


def _claims() -> Catalog:
    cat = Catalog("claims")

    @cat.fn
    def policy(policy_id: str) -> dict[str, bool]:
        return {"active": policy_id.startswith("P")}

    @cat.fn
    def holder(policy: dict[str, bool], customer: str) -> str:
        return customer.lower()

    @cat.check(hard=True)
    def policy_active(policy: dict[str, bool]) -> bool:
        return policy["active"]

    @cat.check(hard=True)
    def sanctions_clear(holder: str) -> bool:
        return holder != "mallory"

    @cat.fn
    def score(claim: int) -> int:
        return claim // 10

    @cat.rule
    def approve(policy_active: bool, sanctions_clear: bool, score: int) -> bool:
        return score < 50

    return cat


QUESTIONS = [Question("approve", forced=False)]
STATE: dict[str, Any] = {"policy_id": "X-1", "customer": "Mallory", "claim": 100}


def test_a_request_may_not_set_a_hard_check() -> None:
    """Setting a hard check is refused with the key, the check and both fixes."""
    system = System(_claims(), QUESTIONS)
    with pytest.raises(RequestError) as info:
        system.ask({**STATE, "policy_active": True})
    assert str(info.value) == (
        "request key 'policy_active' sets the hard check 'policy_active', which would "
        "bypass that check; leave it out of the request (solvi computes it), or allow it "
        "with System(..., overrides=['policy_active']) where the caller is trusted to set it"
    )
    assert info.value.key == "policy_active"
    assert isinstance(info.value, ValueError)


def test_a_request_may_not_set_what_a_hard_check_reads_however_far_back() -> None:
    """A computed fact a hard check reads, directly or through other parts, is refused."""
    system = System(_claims(), QUESTIONS)
    with pytest.raises(RequestError, match="'holder' sets a fact hard check 'sanctions_clear'"):
        system.ask({**STATE, "holder": "alice"})
    with pytest.raises(RequestError, match="'policy' sets a fact hard check 'policy_active'"):
        anyio.run(lambda: system.aask({**STATE, "policy": {"active": True}}))
    with pytest.raises(RequestError, match="request key 'policy'"):
        system.plan({*STATE, "policy"})


def test_facts_no_hard_check_reads_may_still_be_given() -> None:
    """A computed fact no hard check relies on may come with the request, as before."""
    system = System(_claims(), QUESTIONS)
    res = system.ask({"policy_id": "P-1", "customer": "alice", "claim": 1, "score": 99})
    assert res["approve"].value is False


def test_overrides_allow_a_trusted_caller_to_set_a_guarded_fact() -> None:
    """System(overrides=[...]) lets the named keys through, and only those."""
    system = System(_claims(), QUESTIONS, overrides=["policy_active"])
    res = system.ask({**STATE, "customer": "alice", "policy_active": True})
    assert res["approve"].status == "decided"
    with pytest.raises(RequestError, match="'holder'"):
        system.ask({**STATE, "holder": "alice"})


def test_an_override_must_name_something_guarded() -> None:
    """A misspelt override is refused, with the closest guarded name."""
    with pytest.raises(ValueError, match=r"overrides= names 'policy_actve'.*policy_active"):
        System(_claims(), QUESTIONS, overrides=["policy_actve"])


COMPUTED = ["policy", "holder", "policy_active", "sanctions_clear", "score"]


@settings(max_examples=60, deadline=None)
@given(
    extra=st.dictionaries(
        st.sampled_from(COMPUTED),
        st.one_of(st.booleans(), st.text(max_size=3), st.integers(), st.just({"active": True})),
    ),
    base=st.sampled_from(
        [
            {"policy_id": "X-1", "customer": "alice", "claim": 5},
            {"policy_id": "P-1", "customer": "Mallory", "claim": 5},
            {"policy_id": "P-2", "customer": "bob", "claim": 900},
        ]
    ),
)
def test_no_request_changes_a_hard_checks_outcome(
    extra: dict[str, Any], base: dict[str, Any]
) -> None:
    """Whatever computed facts a request adds, it is refused, or every hard check
    comes out as it does without them."""
    system = System(_claims(), QUESTIONS)
    plain = system.ask(base)
    try:
        res = system.ask({**base, **extra})
    except RequestError:
        assert set(extra) & {"policy", "holder", "policy_active", "sanctions_clear"}
        return
    for check in ("policy_active", "sanctions_clear"):
        assert res.values.get(check) == plain.values.get(check)
    assert res["approve"].status == plain["approve"].status or "score" in extra


def test_solvi_serve_refuses_a_guarded_key_with_422() -> None:
    """POST /v1/ask and GET /v1/plan answer a guarded key with 422 not_an_input."""
    httpx = pytest.importorskip("httpx")
    from solvi import asgi

    app = asgi(System(_claims(), QUESTIONS))

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            posted = await client.post("/v1/ask", json={**STATE, "policy_active": True})
            planned = await client.get("/v1/plan", params={"keys": "policy_id,policy"})
        for reply, key in ((posted, "policy_active"), (planned, "policy")):
            assert reply.status_code == 422
            body = reply.json()
            assert body["error"]["code"] == "not_an_input"
            assert f"request key {key!r}" in body["error"]["message"]

    anyio.run(main)


def test_a_missing_input_names_the_closest_request_key() -> None:
    """A typo in a parameter becomes a missing input whose reason names the key meant."""
    cat = Catalog("loans")

    @cat.rule
    def approve(incom: int) -> bool:
        return incom > 10

    res = System(cat).ask({"income": 20})
    hint = "inputs missing: incom (did you mean 'income'?)"
    assert (res["approve"].status, res["approve"].reason) == ("abstained", hint)
    assert dict(res.flow.skipped) == {"approve": hint}
