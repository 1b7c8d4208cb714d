"""What a client sends to the app, checked: query options and the JSON body.

Every mistake is a `ClientError`: the HTTP status, a stable code and a
message that says how to fix the request.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from solvi.errors import _closest
from solvi.record import HUGE_INT_DIGITS

if TYPE_CHECKING:
    from starlette.datastructures import QueryParams
    from starlette.requests import Request

__all__ = [
    "CLIENT_CLOSED",
    "ERROR_CODES",
    "MAX_DEPTH",
    "AskOptions",
    "ClientError",
    "ask_options",
    "check_key_count",
    "check_media_type",
    "counted",
    "parse_state",
    "plan_keys",
    "read_body",
]

#: The deepest nesting of lists and objects a posted state may have: deeper
#: values would exhaust the stack when the record is written.
MAX_DEPTH = 64
_ASK_OPTIONS = ("early_exit", "speculate", "timeout", "question")


def counted(n: float, noun: str) -> str:
    """``1 byte``, ``2 bytes``, ``0.5 seconds``: a number and its noun, plural unless one."""
    shown = f"{n:g}" if isinstance(n, float) else str(n)
    return f"{shown} {noun}" if n == 1 else f"{shown} {noun}s"


ERROR_CODES = (
    "invalid_json",
    "invalid_query",
    "not_an_object",
    "too_deep",
    "too_many_keys",
    "unrecordable_value",
    "not_an_input",
    "ambiguous_key",
    "unsupported_media_type",
    "body_too_large",
    "read_timeout",
    "unknown_question",
    "not_found",
    "method_not_allowed",
    "client_disconnected",
)
#: Not a standard status: what nginx logs when the client left before the answer.
CLIENT_CLOSED = 499

# -- errors a client can cause ---------------------------------------------------------


class ClientError(Exception):
    """A request the app refuses: status, code and a message that says how to fix it."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


# -- query values --------------------------------------------------------------------


@attrs.frozen
class AskOptions:
    """The query options of one POST /v1/ask, checked."""

    early_exit: bool | None = None
    speculate: bool = False
    timeout: float | None = None
    question: str | None = None


def _single(params: QueryParams, known: Sequence[str]) -> dict[str, str]:
    """The query parameters as a dict; unknown or repeated names are refused."""
    values: dict[str, str] = {}
    for name, value in params.multi_items():
        if name not in known:
            msg = (
                f"unknown query parameter {name!r}{_closest(name, known)}; this endpoint "
                f"takes {', '.join(known)}"
            )
            raise ClientError(400, "invalid_query", msg, parameter=name)
        if name in values:
            msg = f"query parameter {name!r} is given twice; give it once"
            raise ClientError(400, "invalid_query", msg, parameter=name)
        values[name] = value
    return values


def _boolean(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    msg = f"query parameter {name!r} must be true or false, got {text!r}"
    raise ClientError(400, "invalid_query", msg, parameter=name)


def _seconds(name: str, text: str) -> float:
    try:
        # float() also reads "1_000" and padded text, which no other reader takes
        value = math.nan if "_" in text or text != text.strip() else float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        msg = (
            f"query parameter {name!r} must be a positive number of seconds (e.g. 2.5), "
            f"got {text!r}"
        )
        raise ClientError(400, "invalid_query", msg, parameter=name)
    return value


def ask_options(params: QueryParams, questions: Sequence[str]) -> AskOptions:
    given = _single(params, _ASK_OPTIONS)
    question = given.get("question")
    if question is not None and question not in questions:
        msg = (
            f"no question {question!r} in this System{_closest(question, questions)}; "
            f"ask one of: {', '.join(questions)}, or leave out question= for all of them"
        )
        raise ClientError(404, "unknown_question", msg, questions=list(questions))
    return AskOptions(
        early_exit=_boolean("early_exit", given["early_exit"]) if "early_exit" in given else None,
        speculate=_boolean("speculate", given["speculate"]) if "speculate" in given else False,
        timeout=_seconds("timeout", given["timeout"]) if "timeout" in given else None,
        question=question,
    )


def plan_keys(params: QueryParams) -> list[str]:
    for name, _ in params.multi_items():
        if name != "keys":
            msg = f"unknown query parameter {name!r}; this endpoint takes keys"
            raise ClientError(400, "invalid_query", msg, parameter=name)
    given = params.getlist("keys")
    if not given:
        msg = (
            "give the request's keys, comma-separated: /v1/plan?keys=age,income "
            "(keys= with nothing plans a request without keys)"
        )
        raise ClientError(400, "invalid_query", msg, parameter="keys")
    return given


# -- the request body ------------------------------------------------------------------


def check_media_type(request: Request) -> None:
    header = request.headers.get("content-type")
    media, _, parameters = (header or "").partition(";")
    media = media.strip().lower()
    if media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    ):
        charset = _charset(parameters)
        if charset is None or charset in ("utf-8", "utf8"):
            return
        msg = (
            f"the body must be UTF-8 JSON, but its Content-Type says charset={charset}; "
            f"send it as UTF-8 with Content-Type: application/json"
        )
        raise ClientError(415, "unsupported_media_type", msg)
    got = "no Content-Type" if header is None else f"Content-Type {header!r}"
    msg = f"the body must be JSON, got {got}; send the state with Content-Type: application/json"
    raise ClientError(415, "unsupported_media_type", msg)


def _charset(parameters: str) -> str | None:
    """The charset a Content-Type's parameters name (lower case, unquoted), if any."""
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _too_large(size: int, limit: int) -> ClientError:
    msg = (
        f"the body is {size} bytes or more, more than this server accepts "
        f"({counted(limit, 'byte')}); send a smaller state, or start the server with a larger "
        f"max_body"
    )
    return ClientError(413, "body_too_large", msg, limit=limit)


async def read_body(request: Request, limit: int, seconds: float) -> bytes:
    """The body, refused when it passes `limit` bytes or takes over `seconds` to arrive.

    The time bounds the whole body, not each chunk: a client that trickles a
    byte every second is cut off as surely as one that stops.
    """
    declared = request.headers.get("content-length")
    if declared is not None and "transfer-encoding" in request.headers:
        # Which one frames the body is where a proxy and a server can disagree
        # (request smuggling): refused, as RFC 9112 allows.
        msg = "the request has both Content-Length and Transfer-Encoding headers; send one of them"
        raise ClientError(400, "invalid_request", msg)
    if declared is not None:
        digits = declared.strip()
        # ASCII digits only ("²" is a digit to str.isdigit), and few enough for int()
        if not (digits.isascii() and digits.isdigit()) or len(digits) > _MAX_LENGTH_DIGITS:
            msg = f"the Content-Length header must be a whole number of bytes, got {declared!r:.60}"
            raise ClientError(400, "invalid_json", msg)
        if int(digits) > limit:
            raise _too_large(int(digits), limit)
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(seconds) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
    if scope.cancelled_caught:
        msg = (
            f"the body did not arrive within {counted(seconds, 'second')} "
            f"({counted(size, 'byte')} came); send "
            f"the whole body at once, or start the server with a larger --read-timeout"
        )
        raise ClientError(408, "read_timeout", msg, limit=seconds)
    return b"".join(chunks)


def _no_constants(name: str) -> Any:
    msg = f"the body holds {name}, which is not JSON; numbers must be finite"
    raise ClientError(400, "invalid_json", msg)


def _finite(text: str) -> float:
    """A JSON number with a fraction or an exponent, refused when a float cannot hold it."""
    value = float(text)
    if math.isinf(value):
        msg = (
            f"the body holds the number {text}, which is too large for a float (it would be "
            f"infinite); numbers must be finite"
        )
        raise ClientError(400, "invalid_json", msg)
    return value


#: a Content-Length past this many digits is past any body a server takes
_MAX_LENGTH_DIGITS = 18


def _whole(text: str) -> int:
    """A JSON integer, refused in the client's terms when a record could not hold it
    (which also keeps it within what int() reads)."""
    digits = len(text.lstrip("-"))
    most = min(HUGE_INT_DIGITS, sys.get_int_max_str_digits() or HUGE_INT_DIGITS)
    if digits > most:
        msg = (
            f"the body holds an integer of {digits} digits; a record holds integers of up to"
            f" {most:,} digits, send a shorter number (or a string)"
        )
        raise ClientError(400, "invalid_json", msg)
    return int(text)


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: a repeated key would mean two things."""
    made = dict(pairs)
    if len(made) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                msg = (
                    f"an object in the body gives the key {key!r} twice; give each key once "
                    f"(readers of repeated keys disagree about which value counts)"
                )
                raise ClientError(400, "invalid_json", msg)
            seen.add(key)
    return made


def _text(body: bytes) -> str:
    """The body as text: UTF-8 only, as RFC 8259 requires (no UTF-16 or UTF-32 guessing)."""
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        msg = (
            "the body is not UTF-8 text: it starts with a UTF-16 or UTF-32 byte order mark; send "
            "the state as UTF-8 encoded JSON"
        )
        raise ClientError(400, "invalid_json", msg)
    nul = body.find(b"\x00")
    if nul >= 0:
        msg = (
            f"the body is not UTF-8 text: it has a NUL byte at offset {nul}, as UTF-16 and "
            f"UTF-32 text do; send the state as UTF-8 encoded JSON"
        )
        raise ClientError(400, "invalid_json", msg)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = (
            f"the body is not UTF-8 text: byte 0x{body[exc.start]:02x} at offset {exc.start} "
            f"({exc.reason}); send the state as UTF-8 encoded JSON"
        )
        raise ClientError(400, "invalid_json", msg) from None
    # A UTF-8 byte order mark is not JSON, but RFC 8259 lets a reader ignore it.
    return text.removeprefix("\ufeff")


def _depth_ok(value: Any) -> bool:
    """Whether `value` nests lists and objects at most MAX_DEPTH deep (no recursion)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children: Any
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return False
        todo.extend((child, depth + 1) for child in children)
    return True


def parse_state(body: bytes, max_keys: int) -> dict[str, Any]:
    """The posted state: a JSON object of at most `max_keys` keys, strictly parsed.

    Strict means UTF-8 only, finite numbers only (no ``NaN``, ``Infinity`` or a
    ``1e400`` that overflows to infinity), each key once per object, and at
    most MAX_DEPTH levels of nesting.

    Raises:
        ClientError: 400 ``invalid_json``, 422 ``not_an_object``, ``too_many_keys``
            or ``too_deep``.
    """
    if not body.strip():
        msg = 'the body is empty; send the request\'s state as a JSON object, e.g. {"age": 30}'
        raise ClientError(400, "invalid_json", msg)
    text = _text(body)
    try:
        state = json.loads(
            text,
            parse_constant=_no_constants,
            parse_float=_finite,
            parse_int=_whole,
            object_pairs_hook=_once,
        )
    except json.JSONDecodeError as exc:
        msg = (
            f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
            f"send the state as a JSON object"
        )
        raise ClientError(400, "invalid_json", msg) from None
    except ValueError as exc:
        msg = f"the body cannot be read as JSON: {exc}; send the state as a JSON object"
        raise ClientError(400, "invalid_json", msg) from None
    except RecursionError:  # only nesting far past MAX_DEPTH runs the decoder that deep
        raise _too_deep() from None
    if not isinstance(state, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(state), "a number"
        )
        msg = (
            f"the body is {kind}, not a JSON object; send the request's state as an object "
            f'of fact names to values, e.g. {{"age": 30}}'
        )
        raise ClientError(422, "not_an_object", msg)
    check_key_count(len(state), max_keys, "the state")
    if not _depth_ok(state):
        raise _too_deep()
    return state


def _too_deep() -> ClientError:
    msg = (
        f"the state nests lists and objects more than {MAX_DEPTH} levels deep; flatten it "
        f"to at most {MAX_DEPTH} levels"
    )
    return ClientError(422, "too_deep", msg, limit=MAX_DEPTH)


def check_key_count(count: int, limit: int, what: str) -> None:
    """Refuse a request with more keys than the server takes.

    Raises:
        ClientError: 422 ``too_many_keys`` naming the limit and the option that sets it.
    """
    if count > limit:
        msg = (
            f"{what} has {count} keys, more than this server takes ({limit}); send fewer "
            f"keys, or start the server with a larger --max-keys"
        )
        raise ClientError(422, "too_many_keys", msg, limit=limit)
