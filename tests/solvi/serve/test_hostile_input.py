"""Hostile request bodies: whatever a client sends, the answer is JSON that can be sent."""

from __future__ import annotations

import json
import sys

import pytest
from flows.serve_app import make_system
from serving import in_process_client

from solvi import Catalog, System
from solvi.serve import asgi

JSON = {"content-type": "application/json"}
SURROGATE_KEY = b'{"\\ud800": 1}'
SURROGATE_VALUE = b'{"name": "\\ud800"}'


def _echo() -> System:
    """A System whose rule returns its input unchanged."""
    cat = Catalog("echo")

    @cat.rule
    def greet(name: str) -> str:
        return name

    return System(cat)


@pytest.mark.asyncio
@pytest.mark.parametrize("aliases", [False, True], ids=["inputs", "aliases"])
async def test_a_lone_surrogate_key_is_refused_with_ascii_json(aliases: bool) -> None:
    """A key that is a lone surrogate is a 422 whose body is ASCII JSON naming the key."""
    async with in_process_client(asgi(make_system(), aliases=aliases)) as client:
        r = await client.post("/v1/ask", content=SURROGATE_KEY, headers=JSON)
    assert r.status_code == 422
    assert r.content.isascii()
    assert json.loads(r.content)["error"]["key"] == "\ud800"


@pytest.mark.asyncio
@pytest.mark.parametrize("params", [{}, {"question": "greet"}], ids=["record", "one question"])
async def test_a_lone_surrogate_value_comes_back_escaped(params: dict[str, str]) -> None:
    """A value with a lone surrogate is accepted, and an answer that returns it is sent."""
    async with in_process_client(asgi(_echo())) as client:
        r = await client.post("/v1/ask", params=params, content=SURROGATE_VALUE, headers=JSON)
    assert r.status_code == 200
    assert r.content.isascii()
    body = json.loads(r.content)
    answer = body["answer"] if params else body["answers"]["greet"]
    assert answer["value"] == "\ud800"


@pytest.mark.asyncio
async def test_an_over_long_integer_is_refused_in_the_clients_terms() -> None:
    """A 5000-digit integer is a 400 naming the digit limit, not Python's setting."""
    body = b'{"name": ' + b"9" * 5000 + b"}"
    async with in_process_client(asgi(_echo())) as client:
        r = await client.post("/v1/ask", content=body, headers=JSON)
    assert r.status_code == 400
    assert r.json()["error"] == {
        "code": "invalid_json",
        "message": (
            f"the body holds an integer of 5000 digits; integers over "
            f"{sys.get_int_max_str_digits()} digits are refused, send a shorter number "
            f"(or a string)"
        ),
    }


@pytest.mark.asyncio
async def test_limits_of_one_are_said_in_the_singular() -> None:
    """--max-body 1 refuses a body "(1 byte)", not "(1 bytes)"."""
    async with in_process_client(asgi(_echo(), max_body=1)) as client:
        r = await client.post("/v1/ask", content=b"{}", headers=JSON)
    assert r.status_code == 413
    assert "more than this server accepts (1 byte);" in r.json()["error"]["message"]
