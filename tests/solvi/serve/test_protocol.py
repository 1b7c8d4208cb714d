"""The server's bounds: read deadlines for headers and bodies (`solvi.serve._protocol`,
checked on a real uvicorn over a socket), and through the app strict UTF-8 and finite
numbers, each key once and a limit on keys (body parsing alone is in test_requests.py)."""

from __future__ import annotations

import argparse
import json
import select
import socket
import time
from collections.abc import AsyncIterator, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import pytest_asyncio
from flows.serve_app import LOANS, make_system
from serving import free_port, in_process_client, serve_command, served

from solvi.serve import add_serve_command, asgi

ROOT = Path(__file__).resolve().parents[3]
SERVE_APP = Path(__file__).resolve().parents[1] / "flows" / "serve_app.py"
JSON = {"content-type": "application/json"}
NOT_UTF8 = "the body is not UTF-8 text: {why}; send the state as UTF-8 encoded JSON"
INFINITE = (
    "the body holds the number {n}, which is too large for a float (it would be infinite); "
    "numbers must be finite"
)


_client = in_process_client


@pytest_asyncio.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the loans app with its default limits."""
    async with _client(asgi(make_system())) as c:
        yield c


async def _refusal(client: httpx.AsyncClient, body: bytes) -> tuple[int, dict[str, Any]]:
    r = await client.post("/v1/ask", content=body, headers=JSON)
    error: dict[str, Any] = r.json()["error"]
    return r.status_code, error


# -- the body: UTF-8, finite numbers, each key once ---------------------------------------

STATE = '{"customer": "ana", "age": 34}'
BAD_TEXT = [
    (
        "utf-16 with BOM",
        STATE.encode("utf-16"),
        "it starts with a UTF-16 or UTF-32 byte order mark",
    ),
    (
        "utf-16-be with BOM",
        b"\xfe\xff" + STATE.encode("utf-16-be"),
        "it starts with a UTF-16 or UTF-32 byte order mark",
    ),
    (
        "utf-16-le",
        STATE.encode("utf-16-le"),
        "it has a NUL byte at offset 1, as UTF-16 and UTF-32 text do",
    ),
    (
        "utf-16-be",
        STATE.encode("utf-16-be"),
        "it has a NUL byte at offset 0, as UTF-16 and UTF-32 text do",
    ),
    ("utf-32", STATE.encode("utf-32"), "it starts with a UTF-16 or UTF-32 byte order mark"),
    ("latin-1", '{"customer": "José"}'.encode("latin-1"), "byte 0xe9 at offset 17 "),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("body", "why"), [c[1:] for c in BAD_TEXT], ids=[c[0] for c in BAD_TEXT])
async def test_a_body_that_is_not_utf8_is_refused(
    client: httpx.AsyncClient, body: bytes, why: str
) -> None:
    """UTF-16 and UTF-32 (with or without a byte order mark) and Latin-1 are 400s."""
    status, error = await _refusal(client, body)
    assert status == 400
    assert error["code"] == "invalid_json"
    if why.endswith(" "):
        why += "(invalid continuation byte)"
    assert error["message"] == NOT_UTF8.format(why=why)


@pytest.mark.asyncio
async def test_a_utf8_byte_order_mark_is_ignored(client: httpx.AsyncClient) -> None:
    """RFC 8259 lets a reader ignore a UTF-8 byte order mark; the state is read as without."""
    body = json.dumps(LOANS[0]).encode()
    with_mark = await client.post("/v1/ask", content=b"\xef\xbb\xbf" + body, headers=JSON)
    assert with_mark.status_code == 200
    assert with_mark.json()["hash"] == make_system().ask(LOANS[0]).hash


NOT_FINITE = [
    (b'{"debts": 1e400}', INFINITE.format(n="1e400")),
    (b'{"debts": -1e400}', INFINITE.format(n="-1e400")),
    (b'{"debts": [1, {"x": 2.5E+999}]}', INFINITE.format(n="2.5E+999")),
    (b'{"debts": NaN}', "the body holds NaN, which is not JSON; numbers must be finite"),
    (
        b'{"debts": -Infinity}',
        "the body holds -Infinity, which is not JSON; numbers must be finite",
    ),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("body", "message"), NOT_FINITE)
async def test_numbers_must_be_finite(client: httpx.AsyncClient, body: bytes, message: str) -> None:
    """A number that overflows to infinity is refused as NaN and Infinity are, nested or not."""
    assert await _refusal(client, body) == (400, {"code": "invalid_json", "message": message})


@pytest.mark.asyncio
async def test_large_finite_numbers_are_taken(client: httpx.AsyncClient) -> None:
    """1e308 is a float, and a long integer stays an integer: both reach the parts."""
    state = {"customer": "ana", "age": 10**30, "income": 1e308, "debts": 1.0}
    r = await client.post("/v1/ask", json=state)
    assert r.status_code == 200
    assert r.json()["input"] == state


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body", [b'{"age": 30, "age": 12}', b'{"customer": {"id": 1, "id": 2}}'], ids=["top", "nested"]
)
async def test_a_repeated_key_is_refused(client: httpx.AsyncClient, body: bytes) -> None:
    """An object that gives a key twice is a 400: readers disagree on which value counts."""
    status, error = await _refusal(client, body)
    key = "age" if b"age" in body else "id"
    assert (status, error["code"]) == (400, "invalid_json")
    assert error["message"] == (
        f"an object in the body gives the key {key!r} twice; give each key once (readers of "
        f"repeated keys disagree about which value counts)"
    )


# -- how many keys -----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_too_many_keys_is_422_naming_the_limit() -> None:
    """A state or a plan with more keys than max_keys is refused before anything else."""
    app = asgi(make_system(), max_keys=3)
    async with _client(app) as c:
        ask = await c.post("/v1/ask", json=LOANS[0])
        unknown = await c.post("/v1/ask", json={f"k{i}": i for i in range(5)})
        plan = await c.get("/v1/plan", params={"keys": "age,customer,debts,income"})
        fits = await c.post("/v1/ask", json={"customer": "ana", "age": 30, "income": 10})
    assert ask.status_code == 422
    assert ask.json() == {
        "error": {
            "code": "too_many_keys",
            "message": "the state has 4 keys, more than this server takes (3); send fewer "
            "keys, or start the server with a larger --max-keys",
            "limit": 3,
        }
    }
    assert unknown.json()["error"]["code"] == "too_many_keys"
    assert plan.status_code == 422
    assert plan.json()["error"]["message"].startswith("keys= has 4 keys, more than")
    assert fits.status_code == 200


# -- the body's deadline, in the app ----------------------------------------------------------


def _scope() -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/ask",
        "raw_path": b"/v1/ask",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"40")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


@pytest.mark.asyncio
async def test_a_slow_body_is_cut_off_with_408() -> None:
    """A body that stops arriving is answered 408 read_timeout after read_timeout seconds."""
    system = make_system()
    app = asgi(system, read_timeout=0.2)
    sent: list[MutableMapping[str, Any]] = []
    chunks = iter([b'{"customer": ', b'"ana", '])

    async def receive() -> dict[str, Any]:
        chunk = next(chunks, None)
        if chunk is None:
            await anyio.sleep(30)  # the client goes quiet
        return {"type": "http.request", "body": chunk or b"", "more_body": True}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    started = time.monotonic()
    with anyio.fail_after(5):
        await app(_scope(), receive, send)
    assert 0.2 <= time.monotonic() - started < 2
    assert sent[0]["status"] == 408
    assert json.loads(sent[1]["body"]) == {
        "error": {
            "code": "read_timeout",
            "message": "the body did not arrive within 0.2 seconds (20 bytes came); send the "
            "whole body at once, or start the server with a larger --read-timeout",
            "limit": 0.2,
        }
    }
    assert system.stats["requests"] == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_keys": 0}, "max_keys must be a positive whole number of keys, got 0"),
        ({"max_keys": 2.5}, "max_keys must be a positive whole number of keys, got 2.5"),
        ({"read_timeout": 0}, "read_timeout must be a positive finite number of seconds, got 0"),
        (
            {"read_timeout": float("inf")},
            "read_timeout must be a positive finite number of seconds, got inf",
        ),
        ({"read_timeout": True}, "read_timeout must be a positive finite number of seconds"),
        ({"max_body": -1}, "max_body must be a positive whole number of bytes, got -1"),
    ],
)
def test_asgi_checks_its_limits(options: dict[str, Any], message: str) -> None:
    """Each limit must be a positive number; the error names it and what arrived."""
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        asgi(make_system(), **options)


def test_serve_command_takes_the_limits(capsys: pytest.CaptureFixture[str]) -> None:
    """--max-keys, --read-timeout and --allow-overrides parse, with their defaults."""
    parser = argparse.ArgumentParser(prog="solvi")
    add_serve_command(parser.add_subparsers(dest="command", required=True))
    plain = parser.parse_args(["serve", "app.py:system"])
    assert (plain.max_keys, plain.read_timeout, plain.allow_overrides) == (1000, 10.0, False)
    given = parser.parse_args(
        ["serve", "a:b", "--max-keys", "5", "--read-timeout", "2.5", "--allow-overrides"]
    )
    assert (given.max_keys, given.read_timeout, given.allow_overrides) == (5, 2.5, True)
    for flag, value, expected in [
        ("--read-timeout", "0", "give a positive number of seconds (e.g. 2.5), got '0'"),
        ("--read-timeout", "inf", "give a positive number of seconds (e.g. 2.5), got 'inf'"),
        ("--max-keys", "-3", "give a positive whole number, got '-3'"),
    ]:
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", "a:b", flag, value])
        assert expected in capsys.readouterr().err


# -- a real uvicorn: header deadlines over a socket ---------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    """`solvi serve` on loopback with a 1 s read timeout, 5 keys at most, overrides allowed."""
    port = free_port()
    options = ("--read-timeout", "1", "--max-keys", "5", "--allow-overrides")
    target = f"{SERVE_APP.relative_to(ROOT)}:system"
    with served(serve_command(target, port, *options), port):
        yield "127.0.0.1", port


def _exchange(address: tuple[str, int], *sends: bytes, pause: float = 0.0) -> tuple[bytes, float]:
    """Send each piece (pausing between them) until the server speaks, then read until it
    closes.

    Returns what came back and the seconds from the first send to the close.
    """
    with socket.create_connection(address, timeout=10) as sock:
        started = time.monotonic()
        for piece in sends:
            if select.select([sock], [], [], 0)[0]:
                break  # an answer (or the close) is in: sending more would reset the socket
            sock.sendall(piece)
            time.sleep(pause)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received, time.monotonic() - started


def _split(response: bytes) -> tuple[str, dict[str, Any]]:
    head, _, body = response.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0].decode(), json.loads(body)


def test_half_a_request_line_is_answered_408_and_closed(server: tuple[str, int]) -> None:
    """A client that sends half a request line and waits is cut off after the deadline."""
    received, elapsed = _exchange(server, b"GET /heal")
    assert 0.9 <= elapsed < 5
    status, body = _split(received)
    assert status == "HTTP/1.1 408 Request Timeout"
    assert body == {
        "error": {
            "code": "read_timeout",
            "message": "the request line and headers did not arrive within 1 second; send the "
            "whole request at once, or start the server with a larger --read-timeout",
            "limit": 1.0,
        }
    }


def test_trickled_headers_are_cut_off(server: tuple[str, int]) -> None:
    """A byte of header every 0.3 s never finishes: the deadline counts from the first byte."""
    pieces = [b"GET /healthz HTTP/1.1\r\n", *[b"X" for _ in range(20)]]
    received, elapsed = _exchange(server, *pieces, pause=0.3)
    assert elapsed < 8
    assert received.startswith(b"HTTP/1.1 408 ")


def test_a_silent_connection_is_closed(server: tuple[str, int]) -> None:
    """A connection that never sends a byte is closed, with nothing written to it."""
    received, elapsed = _exchange(server)
    assert received == b""
    assert 0.9 <= elapsed < 5


def test_the_next_request_on_a_kept_alive_connection_has_a_deadline(
    server: tuple[str, int],
) -> None:
    """After one answered request, half of the next one is cut off like the first."""
    with socket.create_connection(server, timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while b'"async":true}' not in first:
            first += sock.recv(65536)
        sock.sendall(b"GET /he")
        started = time.monotonic()
        second = b""
        while chunk := sock.recv(65536):
            second += chunk
        elapsed = time.monotonic() - started
    assert first.startswith(b"HTTP/1.1 200 OK")
    assert second.startswith(b"HTTP/1.1 408 Request Timeout")
    assert 0.9 <= elapsed < 5


def test_a_trickled_body_is_answered_408(server: tuple[str, int]) -> None:
    """A body that stops halfway gets the app's 408 read_timeout, then the connection closes."""
    head = (
        b"POST /v1/ask HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"content-length: 100\r\n\r\n"
    )
    received, elapsed = _exchange(server, head + b'{"customer": ')
    status, body = _split(received)
    assert status == "HTTP/1.1 408 Request Timeout"
    assert body["error"]["code"] == "read_timeout"
    assert body["error"]["message"].startswith(
        "the body did not arrive within 1 second (13 bytes came)"
    )
    assert elapsed < 5


def test_a_body_left_unread_after_the_answer_is_cut_off(server: tuple[str, int]) -> None:
    """A 415 answered from the headers does not keep the connection open for the body."""
    head = (
        b"POST /v1/ask HTTP/1.1\r\nHost: x\r\ncontent-type: text/plain\r\n"
        b"content-length: 999\r\n\r\n"
    )
    received, elapsed = _exchange(server, head + b"abc")
    status, body = _split(received)
    assert status == "HTTP/1.1 415 Unsupported Media Type"
    assert body["error"]["code"] == "unsupported_media_type"
    assert 0.9 <= elapsed < 5


def test_real_server_takes_the_flags(server: tuple[str, int]) -> None:
    """--allow-overrides lets a computed fact in, --max-keys refuses a sixth key."""
    base = f"http://{server[0]}:{server[1]}"
    state = {**LOANS[0], "affordable": False}
    with httpx.Client(base_url=base, trust_env=False, timeout=10) as http:
        taken = http.post("/v1/ask", json=state)
        refused = http.post("/v1/ask", json={**state, "limit": 1, "credit_score": 2})
        guarded = http.post("/v1/ask", json={**LOANS[1], "adult": True})
    assert taken.status_code == 200
    assert taken.json()["hash"] == make_system().ask(state).hash
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "too_many_keys"
    assert guarded.status_code == 422
    assert guarded.json()["error"]["key"] == "adult"


def _get_with_header(size: int) -> bytes:
    """GET /healthz with one header of `size` bytes, the whole request in one piece."""
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-big: "
    return head + b"a" * size + b"\r\n\r\n"


def test_a_head_over_16_kib_sent_at_once_is_refused_431(server: tuple[str, int]) -> None:
    """h11 bounds only a head that arrives in pieces; one sent whole is refused too."""
    received, _ = _exchange(server, _get_with_header(20_000))
    status, body = _split(received)
    assert status == "HTTP/1.1 431 Request Header Fields Too Large"
    assert body == {
        "error": {
            "code": "headers_too_large",
            "message": "the request line and headers are over 16384 bytes; send fewer or "
            "shorter headers",
            "limit": 16384,
        }
    }


def test_a_head_under_16_kib_is_answered(server: tuple[str, int]) -> None:
    """A large head within the limit reaches the app."""
    received, _ = _exchange(server, _get_with_header(15_000))
    assert received.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    "head",
    [
        b"POST /v1/ask HTTP/1.1\r\nHost: x\r\ncontent-length: abc\r\n\r\n",
        b"POST /v1/ask HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"GET /healthz HTTP/1.1\r\n\r\n",  # no Host header
    ],
    ids=["content-length", "chunk-size", "no-host"],
)
def test_a_request_h11_cannot_parse_gets_a_json_400(server: tuple[str, int], head: bytes) -> None:
    """Malformed HTTP is answered in the same JSON as every other refusal, then closed."""
    received, _ = _exchange(server, head)
    status, body = _split(received)
    assert status == "HTTP/1.1 400 Bad Request"
    assert body["error"]["code"] == "invalid_request"
    assert b"connection: close" in received.partition(b"\r\n\r\n")[0]


def test_a_body_too_large_is_refused_and_the_connection_closed_at_once(
    server: tuple[str, int],
) -> None:
    """A 413 from Content-Length closes the connection: the upload is not read for the
    read timeout after it, as a body left unread after another answer is."""
    head = (
        b"POST /v1/ask HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"content-length: 100000000\r\n\r\n"
    )
    received, elapsed = _exchange(server, head + b"{" * 1000)
    status, body = _split(received)
    assert status == "HTTP/1.1 413 Request Entity Too Large"
    assert body["error"]["code"] == "body_too_large"
    assert elapsed < 0.8  # the read timeout is 1 s
