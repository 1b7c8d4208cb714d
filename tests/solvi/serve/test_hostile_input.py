"""Hostile request bodies: whatever a client sends, the answer is JSON that can be sent."""

from __future__ import annotations

import json
from typing import Any

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
@pytest.mark.parametrize("digits", [4001, 4100, 5000])
async def test_an_integer_no_record_holds_is_refused_in_the_clients_terms(digits: int) -> None:
    """An integer of more digits than a record holds is a 400 naming that limit. Between
    4,001 and 4,300 digits (what int() reads) it once passed the parser and came back as
    a 500 from the record's own check."""
    body = b'{"name": ' + b"9" * digits + b"}"
    async with in_process_client(asgi(_echo())) as client:
        r = await client.post("/v1/ask", content=body, headers=JSON)
    assert r.status_code == 400
    assert r.json()["error"] == {
        "code": "invalid_json",
        "message": (
            f"the body holds an integer of {digits} digits; a record holds integers of up to"
            f" 4,000 digits, send a shorter number (or a string)"
        ),
    }


@pytest.mark.asyncio
async def test_the_longest_integer_a_record_holds_is_answered() -> None:
    body = b'{"name": ' + b"9" * 4000 + b"}"
    async with in_process_client(asgi(_echo())) as client:
        r = await client.post("/v1/ask", content=body, headers=JSON)
    assert r.status_code == 200


@pytest.mark.asyncio
@pytest.mark.parametrize("declared", ["\u00b2", "\u0661", "9" * 5000, "-1", "1e3", ""])
async def test_a_content_length_that_is_no_ascii_number_is_a_400(declared: str) -> None:
    """A mounted app sees headers no HTTP server checked: a Unicode digit or a number
    too long for int() once raised out of the app as a 500."""
    status, body = await _raw(
        [
            (b"content-type", b"application/json"),
            (b"content-length", declared.encode("latin-1", "replace")),
        ]
    )
    assert status == 400
    assert body["error"]["code"] == "invalid_json"
    assert "Content-Length header must be a whole number of bytes" in body["error"]["message"]


@pytest.mark.asyncio
async def test_limits_of_one_are_said_in_the_singular() -> None:
    """--max-body 1 refuses a body "(1 byte)", not "(1 bytes)"."""
    async with in_process_client(asgi(_echo(), max_body=1)) as client:
        r = await client.post("/v1/ask", content=b"{}", headers=JSON)
    assert r.status_code == 413
    assert "more than this server accepts (1 byte);" in r.json()["error"]["message"]


async def _raw(headers: list[tuple[bytes, bytes]], path: str = "/v1/ask") -> tuple[int, Any]:
    """One request straight to the app, with exactly these headers: its status and body."""
    app = asgi(_echo())
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "client": ("test", 1),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], json.loads(body)


@pytest.mark.asyncio
@pytest.mark.parametrize("charset", ["latin-1", "UTF-16", '"iso-8859-1"'])
async def test_a_body_in_another_charset_is_refused(charset: str) -> None:
    """The body is read as UTF-8, so a Content-Type naming another charset is a 415."""
    header = f"application/json; charset={charset}".encode()
    status, body = await _raw([(b"content-type", header), (b"content-length", b"2")])
    named = charset.strip('"').lower()
    assert status == 415
    assert body["error"]["message"].startswith(
        f"the body must be UTF-8 JSON, but its Content-Type says charset={named}"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("charset", ["utf-8", "UTF8", '"utf-8"'])
async def test_utf8_named_as_such_is_taken(charset: str) -> None:
    """Naming UTF-8 as the charset, in any spelling a client uses, is fine."""
    header = f"application/json; charset={charset}".encode()
    status, _ = await _raw([(b"content-type", header), (b"content-length", b"2")])
    assert status == 200


@pytest.mark.asyncio
async def test_content_length_beside_transfer_encoding_is_refused() -> None:
    """Two framings of one body are where a proxy and a server can disagree: a 400."""
    status, body = await _raw(
        [
            (b"content-type", b"application/json"),
            (b"content-length", b"2"),
            (b"transfer-encoding", b"chunked"),
        ]
    )
    assert (status, body["error"]["code"]) == (400, "invalid_request")
    assert "both Content-Length and Transfer-Encoding" in body["error"]["message"]


@pytest.mark.asyncio
async def test_a_trailing_slash_is_not_found_not_redirected() -> None:
    """`/v1/ask/` is a JSON 404, not a redirect to a URL built from the client's Host."""
    status, body = await _raw([(b"content-type", b"application/json")], path="/v1/ask/")
    assert (status, body["error"]["code"]) == (404, "not_found")
