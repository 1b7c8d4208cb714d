"""What a client sends, checked without an app: the JSON body's edge cases, the query
options and the media type, each refusal with its status, code and message."""

from __future__ import annotations

import pytest
from starlette.datastructures import QueryParams
from starlette.requests import Request

from solvi.serve._requests import (
    MAX_DEPTH,
    AskOptions,
    ClientError,
    ask_options,
    check_media_type,
    parse_state,
    plan_keys,
)

UTF8 = "send the state as UTF-8 encoded JSON"


@pytest.mark.parametrize(
    ("body", "state"),
    [
        (b'{"age": 30}', {"age": 30}),
        (b'\xef\xbb\xbf{"a": 1}', {"a": 1}),  # a UTF-8 byte order mark is ignored
        (b'{"x": 1e308, "y": -0.5}', {"x": 1e308, "y": -0.5}),
        ('{"name": "Zoë"}'.encode(), {"name": "Zoë"}),
        (b'  {"a": {"a": 1}}  ', {"a": {"a": 1}}),  # the same key in two objects is fine
        (b"{}", {}),
    ],
)
def test_a_strict_json_object_is_taken(body: bytes, state: dict[str, object]) -> None:
    """UTF-8 JSON objects with finite numbers and each key once come back as dicts."""
    assert parse_state(body, max_keys=10) == state


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        (
            b"  ",
            400,
            "invalid_json",
            'the body is empty; send the request\'s state as a JSON object, e.g. {"age": 30}',
        ),
        (
            b'{"a": 1',
            400,
            "invalid_json",
            "the body is not valid JSON: Expecting ',' delimiter "
            "at line 1 column 8; send the state as a JSON object",
        ),
        (
            b'{"a": NaN}',
            400,
            "invalid_json",
            "the body holds NaN, which is not JSON; numbers must be finite",
        ),
        (
            b'{"a": -Infinity}',
            400,
            "invalid_json",
            "the body holds -Infinity, which is not JSON; numbers must be finite",
        ),
        (
            b'{"a": 1e400}',
            400,
            "invalid_json",
            "the body holds the number 1e400, which is too "
            "large for a float (it would be infinite); numbers must be finite",
        ),
        (
            b'{"a": 1, "a": 2}',
            400,
            "invalid_json",
            "an object in the body gives the key 'a' "
            "twice; give each key once (readers of repeated keys disagree about which value "
            "counts)",
        ),
        (
            b"\xff\xfe{\x00}\x00",
            400,
            "invalid_json",
            "the body is not UTF-8 text: it starts "
            f"with a UTF-16 or UTF-32 byte order mark; {UTF8}",
        ),
        (
            b'{\x00"\x00',
            400,
            "invalid_json",
            "the body is not UTF-8 text: it has a NUL byte at "
            f"offset 1, as UTF-16 and UTF-32 text do; {UTF8}",
        ),
        (
            b'{"a": "\xe9"}',
            400,
            "invalid_json",
            "the body is not UTF-8 text: byte 0xe9 at "
            f"offset 7 (invalid continuation byte); {UTF8}",
        ),
        (
            b"[1, 2]",
            422,
            "not_an_object",
            "the body is an array, not a JSON object; send the "
            'request\'s state as an object of fact names to values, e.g. {"age": 30}',
        ),
        (
            b"null",
            422,
            "not_an_object",
            "the body is null, not a JSON object; send the "
            'request\'s state as an object of fact names to values, e.g. {"age": 30}',
        ),
        (
            b"3.5",
            422,
            "not_an_object",
            "the body is a number, not a JSON object; send the "
            'request\'s state as an object of fact names to values, e.g. {"age": 30}',
        ),
        (
            b'{"a": 1, "b": 2, "c": 3}',
            422,
            "too_many_keys",
            "the state has 3 keys, more than "
            "this server takes (2); send fewer keys, or start the server with a larger "
            "--max-keys",
        ),
    ],
)
def test_each_malformed_body_is_refused_saying_how_to_fix_it(
    body: bytes, status: int, code: str, message: str
) -> None:
    """Status, stable code and the exact message of each refusal."""
    with pytest.raises(ClientError) as caught:
        parse_state(body, max_keys=2)
    assert (caught.value.status, caught.value.code, caught.value.message) == (
        status,
        code,
        message,
    )


def _nested(depth: int) -> bytes:
    return ('{"a": ' * depth + "1" + "}" * depth).encode()


def test_nesting_is_taken_to_the_limit_and_refused_past_it() -> None:
    """MAX_DEPTH levels of objects are read; one more is 422 too_deep naming the limit."""
    assert parse_state(_nested(MAX_DEPTH), max_keys=1)["a"]
    with pytest.raises(ClientError) as caught:
        parse_state(_nested(MAX_DEPTH + 1), max_keys=1)
    assert (caught.value.status, caught.value.code, caught.value.details) == (
        422,
        "too_deep",
        {"limit": MAX_DEPTH},
    )
    assert caught.value.message == (
        "the state nests lists and objects more than 64 levels deep; flatten it to at most 64 "
        "levels"
    )


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"a": ' + b"[" * 100_000])
def test_a_body_too_deep_for_the_parser_is_too_deep_not_a_crash(body: bytes) -> None:
    """Nesting past the interpreter's recursion limit is the 422 too_deep the serving
    page gives for any nesting past 64 levels; it was a 400 quoting the recursion limit."""
    with pytest.raises(ClientError) as caught:
        parse_state(body, max_keys=1)
    assert (caught.value.status, caught.value.code) == (422, "too_deep")
    assert caught.value.message.startswith("the state nests lists and objects more than 64")


QUESTIONS = ("approve", "fast_track")


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ("", AskOptions()),
        ("early_exit=FALSE&speculate=true", AskOptions(early_exit=False, speculate=True)),
        ("timeout=2.5&question=approve", AskOptions(timeout=2.5, question="approve")),
    ],
)
def test_query_options_are_read(query: str, options: AskOptions) -> None:
    """Booleans in any case, a positive timeout and a known question."""
    assert ask_options(QueryParams(query), QUESTIONS) == options


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        (
            "retries=1",
            400,
            "unknown query parameter 'retries'; this endpoint takes early_exit, "
            "speculate, timeout, question",
        ),
        (
            "timout=1",
            400,
            "unknown query parameter 'timout' (did you mean 'timeout'?); this "
            "endpoint takes early_exit, speculate, timeout, question",
        ),
        ("timeout=1&timeout=2", 400, "query parameter 'timeout' is given twice; give it once"),
        ("speculate=yes", 400, "query parameter 'speculate' must be true or false, got 'yes'"),
        (
            "timeout=0",
            400,
            "query parameter 'timeout' must be a positive number of seconds (e.g. 2.5), got '0'",
        ),
        (
            "timeout=inf",
            400,
            "query parameter 'timeout' must be a positive number of seconds (e.g. 2.5), got 'inf'",
        ),
        (
            "question=aprove",
            404,
            "no question 'aprove' in this System (did you mean "
            "'approve'?); ask one of: approve, fast_track, or leave out question= for all of them",
        ),
    ],
)
def test_bad_query_options_are_refused(query: str, status: int, message: str) -> None:
    """Each bad option names itself, what arrived and what is taken."""
    with pytest.raises(ClientError) as caught:
        ask_options(QueryParams(query), QUESTIONS)
    assert (caught.value.status, caught.value.message) == (status, message)


def test_plan_keys_are_required_and_alone() -> None:
    """/v1/plan takes keys= only; without it the message shows the form."""
    assert plan_keys(QueryParams("keys=age,income")) == ["age,income"]
    with pytest.raises(ClientError) as caught:
        plan_keys(QueryParams(""))
    assert caught.value.message == (
        "give the request's keys, comma-separated: /v1/plan?keys=age,income (keys= with "
        "nothing plans a request without keys)"
    )
    with pytest.raises(ClientError) as caught:
        plan_keys(QueryParams("keys=a&x=1"))
    assert caught.value.message == "unknown query parameter 'x'; this endpoint takes keys"


def _request(content_type: bytes | None) -> Request:
    headers = [] if content_type is None else [(b"content-type", content_type)]
    return Request({"type": "http", "method": "POST", "headers": headers})


@pytest.mark.parametrize(
    "content_type",
    [b"application/json", b"Application/JSON; charset=utf-8", b"application/problem+json"],
)
def test_json_media_types_are_taken(content_type: bytes) -> None:
    """application/json in any case, with parameters, and any application/*+json."""
    check_media_type(_request(content_type))


@pytest.mark.parametrize(
    ("content_type", "got"),
    [(None, "no Content-Type"), (b"text/plain", "Content-Type 'text/plain'")],
)
def test_other_media_types_are_415(content_type: bytes | None, got: str) -> None:
    """Anything else is 415 naming what came and the header to send."""
    with pytest.raises(ClientError) as caught:
        check_media_type(_request(content_type))
    assert (caught.value.status, caught.value.code, caught.value.message) == (
        415,
        "unsupported_media_type",
        f"the body must be JSON, got {got}; send the state with Content-Type: application/json",
    )
