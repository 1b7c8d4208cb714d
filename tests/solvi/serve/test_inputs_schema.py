"""The server takes only a catalog's inputs (unless overrides are allowed), and its OpenAPI
description lists them with the types the annotations of the parts that read them give."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from anyio.from_thread import start_blocking_portal
from flows.serve_app import LOANS, make_system
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving import in_process_client

from solvi import Catalog, Question, System
from solvi.serve import asgi, load_system

ROOT = Path(__file__).resolve().parents[3]
INPUTS = ["age", "customer", "debts", "income"]
COMPUTED = ["adult", "affordable", "approve", "credit_score", "debt_ratio", "limit"]
TAIL = (
    "this server takes only the catalog's inputs: age, customer, debts, income. {fix}, or "
    "start the server with --allow-overrides (asgi(..., allow_overrides=True)) to take every "
    "key the System takes"
)


_client = in_process_client


@pytest_asyncio.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the loans app, inputs only."""
    async with _client(asgi(make_system())) as c:
        yield c


# -- only inputs by default -------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_computed_fact_is_not_an_input(client: httpx.AsyncClient) -> None:
    """A key a part computes (no hard check reads it) is a 422 naming the part and the fix."""
    r = await client.post("/v1/ask", json={**LOANS[0], "debt_ratio": 0.1})
    assert r.status_code == 422
    assert r.json() == {
        "error": {
            "code": "not_an_input",
            "message": "request key 'debt_ratio' is computed by part 'debt_ratio' of catalog "
            "'loans', not one of its inputs; "
            + TAIL.format(fix="Leave 'debt_ratio' out (solvi computes it)"),
            "key": "debt_ratio",
            "keys": ["debt_ratio"],
        }
    }


@pytest.mark.asyncio
async def test_a_hard_check_is_not_an_input(client: httpx.AsyncClient) -> None:
    """A hard check as a key is refused by the server before the System sees it."""
    r = await client.post("/v1/ask", json={**LOANS[1], "adult": True, "limit": 3})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["message"].startswith(
        "request key 'adult' is computed by hard check 'adult' of catalog 'loans', not one of "
        "its inputs; this server takes only"
    )
    assert (error["key"], error["keys"]) == ("adult", ["adult", "limit"])


@pytest.mark.asyncio
async def test_an_unknown_key_names_the_closest_input(client: httpx.AsyncClient) -> None:
    """A misspelt input is a 422 that suggests the input it resembles."""
    r = await client.post("/v1/ask", json={"customer": "ana", "incom": 10})
    assert r.status_code == 422
    assert r.json()["error"]["message"] == (
        "request key 'incom' is not an input of catalog 'loans' (did you mean 'income'?); "
        + TAIL.format(fix="Correct or remove 'incom'")
    )


@pytest.mark.asyncio
async def test_plan_takes_only_inputs(client: httpx.AsyncClient) -> None:
    """GET /v1/plan refuses a computed fact among its keys, as POST /v1/ask does."""
    r = await client.get("/v1/plan", params={"keys": "age,credit_score"})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "not_an_input"
    assert r.json()["error"]["key"] == "credit_score"
    assert (await client.get("/v1/plan", params={"keys": ",".join(INPUTS)})).status_code == 200


@pytest.mark.asyncio
async def test_allow_overrides_leaves_the_decision_to_the_system() -> None:
    """With allow_overrides a computed fact is taken, and a hard check is refused by the
    System itself unless its overrides= names it."""
    system = make_system()
    state = {**LOANS[0], "affordable": False}
    async with _client(asgi(system, allow_overrides=True)) as c:
        taken = await c.post("/v1/ask", json=state)
        refused = await c.post("/v1/ask", json={**LOANS[1], "adult": True})
        plan = await c.get("/v1/plan", params={"keys": "age,adult"})
    assert taken.status_code == 200
    assert taken.json()["hash"] == make_system().ask(state).hash
    assert taken.json()["answers"]["approve"]["value"] is False
    assert refused.status_code == 422
    assert refused.json()["error"] == {
        "code": "not_an_input",
        "message": "request key 'adult' sets the hard check 'adult', which would bypass that "
        "check; leave it out of the request (solvi computes it), or allow it with "
        "System(..., overrides=['adult']) where the caller is trusted to set it",
        "key": "adult",
    }
    assert plan.status_code == 422
    trusted = System(
        system.catalog, [Question("approve", forced=False), "limit"], overrides=["adult"]
    )
    async with _client(asgi(trusted, allow_overrides=True)) as c:
        overridden = await c.post("/v1/ask", json={**LOANS[1], "adult": True})
    assert overridden.status_code == 200
    assert overridden.json()["answers"]["approve"]["status"] != "forced"


def _loans_app(allow: bool) -> Any:
    return asgi(make_system(), allow_overrides=allow)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    extra=st.dictionaries(st.sampled_from(COMPUTED), st.booleans() | st.integers(0, 900)),
    base=st.sampled_from(LOANS[:5]),
    allow=st.booleans(),
)
def test_no_request_of_computed_names_changes_a_hard_check(
    extra: dict[str, Any], base: dict[str, Any], allow: bool
) -> None:
    """A request that adds computed facts is refused (by the server, or with overrides
    allowed by the System when it sets `adult`); one that is answered decides `adult` as
    `ask` on the inputs alone does, and its record equals `ask`'s on the same state."""
    state = {**base, **extra}
    with start_blocking_portal() as portal:
        client = _client(_loans_app(allow))
        try:
            r: httpx.Response = portal.call(functools.partial(client.post, "/v1/ask", json=state))
        finally:
            portal.call(client.aclose)
    if extra and not allow:
        assert r.status_code == 422
        assert r.json()["error"]["key"] == min(extra)
        return
    if "adult" in extra:
        assert r.status_code == 422
        assert r.json()["error"]["key"] == "adult"
        return
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["hash"] == make_system().ask(state).hash
    plain = make_system().ask(base)
    adult = plain.record["values"].get("adult")
    assert body["values"].get("adult", adult) == adult
    if plain["approve"].status == "forced":
        assert body["answers"]["approve"] == plain.record["answers"]["approve"]


# -- the OpenAPI description -------------------------------------------------------------


@pytest.mark.asyncio
async def test_state_schema_lists_the_inputs_with_their_types(client: httpx.AsyncClient) -> None:
    """The request body has one typed property per input and takes no other key."""
    description = (await client.get("/openapi.json")).json()
    state = description["components"]["schemas"]["State"]
    assert state["properties"] == {
        "age": {"type": "integer", "description": "Read by adult."},
        "customer": {"type": "string", "description": "Read by credit_score."},
        "debts": {"type": "number", "description": "Read by debt_ratio."},
        "income": {"type": "number", "description": "Read by debt_ratio."},
    }
    assert state["additionalProperties"] is False
    assert state["maxProperties"] == 1000
    assert "no other key is accepted" in state["description"]
    plan = description["paths"]["/v1/plan"]["get"]
    assert set(plan["responses"]) == {"200", "400", "422"}
    assert "(age, customer, debts, income)" in plan["parameters"][0]["description"]
    item = r"\s*(?:age|customer|debts|income)?\s*"
    assert plan["parameters"][0]["schema"] == {"type": "string", "pattern": f"^{item}(?:,{item})*$"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_keys_value_the_schema_allows_is_planned(data: st.DataObject) -> None:
    """keys= drawn from its OpenAPI pattern is always planned; keys the pattern refuses
    because they name something else are refused with not_an_input."""
    with start_blocking_portal() as portal:
        client = _client(asgi(make_system()))
        try:

            def get(path: str, **options: Any) -> httpx.Response:
                r: httpx.Response = portal.call(functools.partial(client.get, path, **options))
                return r

            description = get("/openapi.json").json()
            schema = description["paths"]["/v1/plan"]["get"]["parameters"][0]["schema"]
            allowed = data.draw(st.from_regex(schema["pattern"]), label="allowed")
            planned = get("/v1/plan", params={"keys": allowed})
            other = data.draw(st.sampled_from(COMPUTED) | st.from_regex(r"\A[a-z]{1,6}\Z"))
            if other in INPUTS:
                return
            refused = get("/v1/plan", params={"keys": f"{allowed},{other}"})
        finally:
            portal.call(client.aclose)
    assert planned.status_code == 200, planned.text
    assert refused.status_code == 422
    assert refused.json()["error"]["key"] == other


@pytest.mark.asyncio
async def test_allowed_overrides_open_the_state_schema() -> None:
    """With allow_overrides the inputs are still listed, but other keys are not excluded."""
    async with _client(asgi(make_system(), allow_overrides=True, max_keys=7)) as c:
        description = (await c.get("/openapi.json")).json()
    state = description["components"]["schemas"]["State"]
    assert sorted(state["properties"]) == INPUTS
    assert "additionalProperties" not in state
    assert state["maxProperties"] == 7
    assert "facts the System lets a request set" in state["description"]
    keys = description["paths"]["/v1/plan"]["get"]["parameters"][0]
    assert keys["schema"] == {"type": "string"}


@pytest.mark.asyncio
async def test_claims_example_state_schema() -> None:
    """The gallery's claims System takes a claim object and a list of documents."""
    system = load_system(f"{ROOT / 'examples' / 'claims.py'}:system")
    async with _client(asgi(system)) as c:
        state = (await c.get("/openapi.json")).json()["components"]["schemas"]["State"]
    assert state["properties"] == {
        "claim": {
            "type": "object",
            "description": "Read by policy, policy_in_force, fraud_model, fraud_rules, "
            "missing_documents, covered, points, fast_track.",
        },
        "documents": {"type": "array", "description": "Read by missing_documents."},
    }


@pytest.mark.asyncio
async def test_conflicting_annotations_leave_an_input_untyped() -> None:
    """Two parts that read one input as int and as str give it no type in the schema."""
    cat = Catalog("mixed")

    @cat.fn
    def doubled(x: int) -> int:
        return 2 * x

    @cat.fn
    def shouted(x: str) -> str:
        return str(x).upper()

    @cat.rule
    def both(doubled: int, shouted: str) -> bool:
        return True

    async with _client(asgi(System(cat))) as c:
        state = (await c.get("/openapi.json")).json()["components"]["schemas"]["State"]
    assert state["properties"] == {"x": {"description": "Read by doubled, shouted."}}


@pytest.mark.asyncio
async def test_declared_inputs_are_what_the_server_takes() -> None:
    """With System(inputs=...), a declared key no part reads yet is an input too."""
    system = make_system()
    declared = System(system.catalog, system.questions, inputs=[*INPUTS, "channel"])
    async with _client(asgi(declared)) as c:
        ok = await c.post("/v1/ask", json={**LOANS[0], "channel": "web"})
        schema = (await c.get("/openapi.json")).json()
    assert ok.status_code == 200
    state = schema["components"]["schemas"]["State"]["properties"]
    assert state["channel"] == {"description": "Declared in inputs=; no part reads it yet."}
