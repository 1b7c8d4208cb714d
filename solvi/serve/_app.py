"""`solvi serve`: a System over HTTP, as an ASGI app (Starlette) served by uvicorn.

`asgi(system)` builds the app once: ``POST /v1/ask`` answers a request with
``await system.aask(state)`` and returns its record; ``GET /v1/plan``,
``GET /healthz``, ``GET /metrics`` (Prometheus text) and ``GET /openapi.json``
describe the System and what the app has served. Every error a client can
cause is a 4xx answer with a JSON body ``{"error": {"code", "message"}}``; a
part that raises or times out is a safeguard inside a 200 answer.

Starlette and uvicorn are the optional ``serve`` extra: this module imports
them only when an app is built or served, so ``import solvi`` works without
them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import sys
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from pathlib import Path
from time import perf_counter
from types import ModuleType
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from solvi.catalog import Catalog
from solvi.errors import RecordError, SolviError, _closest
from solvi.flow import Flow
from solvi.record import to_record_value
from solvi.response import RECORD_FORMAT
from solvi.response import Response as Answered
from solvi.system import System

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.datastructures import QueryParams
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_DEPTH", "add_serve_command", "asgi", "load_system", "main", "run"]

_INSTALL = "pip install 'solvi[serve]'"

#: The deepest nesting of lists and objects a posted state may have: deeper
#: values would exhaust the stack when the record is written.
MAX_DEPTH = 64

#: Upper bounds (seconds) of the latency histograms.
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_ASK_OPTIONS = ("early_exit", "speculate", "timeout", "question")
_STATUSES = ("decided", "forced", "abstained")
_ERROR_CODES = (
    "invalid_json",
    "invalid_query",
    "not_an_object",
    "too_deep",
    "unrecordable_value",
    "unsupported_media_type",
    "body_too_large",
    "unknown_question",
    "not_found",
    "method_not_allowed",
    "client_disconnected",
)
#: Not a standard status: what nginx logs when the client left before the answer.
_CLIENT_CLOSED = 499


def _need(package: str) -> ModuleType:
    """Import one package of the serve extra, or say how to install it."""
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        msg = (
            f"solvi's HTTP server needs {package}, which is not installed; install the serve "
            f"extra with: {_INSTALL}"
        )
        raise ImportError(msg, name=package) from exc


# -- errors a client can cause ---------------------------------------------------------


class _ClientError(Exception):
    """A request the app refuses: status, code and a message that says how to fix it."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def _error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def _json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    from starlette.responses import Response

    body = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def _refuse(err: _ClientError) -> Response:
    return _json_response(_error_body(err.code, err.message, **err.details), err.status)


# -- query values --------------------------------------------------------------------


@attrs.frozen
class _AskOptions:
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
            raise _ClientError(400, "invalid_query", msg, parameter=name)
        if name in values:
            msg = f"query parameter {name!r} is given twice; give it once"
            raise _ClientError(400, "invalid_query", msg, parameter=name)
        values[name] = value
    return values


def _boolean(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    msg = f"query parameter {name!r} must be true or false, got {text!r}"
    raise _ClientError(400, "invalid_query", msg, parameter=name)


def _seconds(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        msg = (
            f"query parameter {name!r} must be a positive number of seconds (e.g. 2.5), "
            f"got {text!r}"
        )
        raise _ClientError(400, "invalid_query", msg, parameter=name)
    return value


def _ask_options(params: QueryParams, questions: Sequence[str]) -> _AskOptions:
    given = _single(params, _ASK_OPTIONS)
    question = given.get("question")
    if question is not None and question not in questions:
        msg = (
            f"no question {question!r} in this System{_closest(question, questions)}; "
            f"ask one of: {', '.join(questions)}, or leave out question= for all of them"
        )
        raise _ClientError(404, "unknown_question", msg, questions=list(questions))
    return _AskOptions(
        early_exit=_boolean("early_exit", given["early_exit"]) if "early_exit" in given else None,
        speculate=_boolean("speculate", given["speculate"]) if "speculate" in given else False,
        timeout=_seconds("timeout", given["timeout"]) if "timeout" in given else None,
        question=question,
    )


def _plan_keys(params: QueryParams) -> list[str]:
    for name, _ in params.multi_items():
        if name != "keys":
            msg = f"unknown query parameter {name!r}; this endpoint takes keys"
            raise _ClientError(400, "invalid_query", msg, parameter=name)
    given = params.getlist("keys")
    if not given:
        msg = (
            "give the request's keys, comma-separated: /v1/plan?keys=age,income "
            "(keys= with nothing plans a request without keys)"
        )
        raise _ClientError(400, "invalid_query", msg, parameter="keys")
    return given


# -- the request body ------------------------------------------------------------------


def _check_media_type(request: Request) -> None:
    header = request.headers.get("content-type")
    media = (header or "").split(";", 1)[0].strip().lower()
    if media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    ):
        return
    got = "no Content-Type" if header is None else f"Content-Type {header!r}"
    msg = f"the body must be JSON, got {got}; send the state with Content-Type: application/json"
    raise _ClientError(415, "unsupported_media_type", msg)


def _too_large(size: int, limit: int) -> _ClientError:
    msg = (
        f"the body is {size} bytes or more, more than this server accepts ({limit} bytes); send a "
        f"smaller state, or start the server with a larger max_body"
    )
    return _ClientError(413, "body_too_large", msg, limit=limit)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            msg = f"the Content-Length header must be a whole number of bytes, got {declared!r}"
            raise _ClientError(400, "invalid_json", msg)
        if int(declared) > limit:
            raise _too_large(int(declared), limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _no_constants(name: str) -> Any:
    msg = f"{name} is not JSON; numbers must be finite"
    raise ValueError(msg)


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


def _parse_state(body: bytes) -> dict[str, Any]:
    if not body.strip():
        msg = 'the body is empty; send the request\'s state as a JSON object, e.g. {"age": 30}'
        raise _ClientError(400, "invalid_json", msg)
    try:
        state = json.loads(body, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        msg = (
            f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
            f"send the state as a JSON object"
        )
        raise _ClientError(400, "invalid_json", msg) from None
    except UnicodeDecodeError:
        msg = "the body is not UTF-8 text; send the state as UTF-8 encoded JSON"
        raise _ClientError(400, "invalid_json", msg) from None
    except (ValueError, RecursionError) as exc:
        msg = f"the body cannot be read as JSON: {exc}; send the state as a JSON object"
        raise _ClientError(400, "invalid_json", msg) from None
    if not isinstance(state, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(state), "a number"
        )
        msg = (
            f"the body is {kind}, not a JSON object; send the request's state as an object "
            f'of fact names to values, e.g. {{"age": 30}}'
        )
        raise _ClientError(422, "not_an_object", msg)
    if not _depth_ok(state):
        msg = (
            f"the state nests lists and objects more than {MAX_DEPTH} levels deep; flatten it "
            f"to at most {MAX_DEPTH} levels"
        )
        raise _ClientError(422, "too_deep", msg, limit=MAX_DEPTH)
    return state


# -- metrics ---------------------------------------------------------------------------


class _Histogram:
    """Counts of observations per latency bucket, with their sum."""

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * len(_BUCKETS)
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.total += seconds
        self.count += 1
        i = bisect_left(_BUCKETS, seconds)
        if i < len(_BUCKETS):
            self.counts[i] += 1

    def lines(self, name: str, labels: str) -> list[str]:
        sep = "," if labels else ""
        out: list[str] = []
        running = 0
        for bound, n in zip(_BUCKETS, self.counts, strict=True):
            running += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound}"}} {running}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        brace = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{brace} {self.total!r}")
        out.append(f"{name}_count{brace} {self.count}")
        return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Metrics:
    """What one app has served, written in the Prometheus text format (version 0.0.4)."""

    def __init__(self, system: System) -> None:
        self.catalog = system.name
        self.version = system.version
        self.http: dict[tuple[str, str, int], int] = {}
        self.answers: dict[tuple[str, str], int] = {
            (q.name, status): 0 for q in system.questions for status in _STATUSES
        }
        self.safeguards: dict[tuple[str, str], int] = {}
        self.parts: dict[str, _Histogram] = {}
        self.asks = _Histogram()
        self.in_flight = 0

    def count_http(self, path: str, method: str, status: int) -> None:
        key = (path, method, status)
        self.http[key] = self.http.get(key, 0) + 1

    def observe(self, res: Answered, seconds: float) -> None:
        self.asks.observe(seconds)
        for name, answer in res.answers.items():
            self.answers[name, answer.status] = self.answers.get((name, answer.status), 0) + 1
        for guard in res.safeguards:
            kind = (guard.kind, guard.part)
            self.safeguards[kind] = self.safeguards.get(kind, 0) + 1
        for step in res.trace.steps:
            hist = self.parts.get(step.part)
            if hist is None:
                hist = self.parts[step.part] = _Histogram()
            hist.observe(step.duration_ms / 1000.0)

    def render(self) -> str:
        lines = [
            "# HELP solvi_info The catalog this server answers for.",
            "# TYPE solvi_info gauge",
            f'solvi_info{{catalog="{_label(self.catalog)}",version="{_label(self.version)}"}} 1',
            "# HELP solvi_http_requests_total HTTP requests by path, method and status code.",
            "# TYPE solvi_http_requests_total counter",
        ]
        for (path, method, code), n in sorted(self.http.items()):
            lines.append(
                f'solvi_http_requests_total{{path="{_label(path)}",method="{method}",'
                f'status="{code}"}} {n}'
            )
        lines += [
            "# HELP solvi_requests_in_flight POST /v1/ask requests being answered now.",
            "# TYPE solvi_requests_in_flight gauge",
            f"solvi_requests_in_flight {self.in_flight}",
            "# HELP solvi_answers_total Answers given, by question and status.",
            "# TYPE solvi_answers_total counter",
        ]
        for (question, status), n in sorted(self.answers.items()):
            lines.append(
                f'solvi_answers_total{{question="{_label(question)}",status="{status}"}} {n}'
            )
        lines += [
            "# HELP solvi_safeguards_total Parts that timed out or raised, by kind and part.",
            "# TYPE solvi_safeguards_total counter",
        ]
        for (kind, part), n in sorted(self.safeguards.items()):
            lines.append(f'solvi_safeguards_total{{kind="{kind}",part="{_label(part)}"}} {n}')
        lines += [
            "# HELP solvi_ask_duration_seconds Time to answer one POST /v1/ask (aask only).",
            "# TYPE solvi_ask_duration_seconds histogram",
            *self.asks.lines("solvi_ask_duration_seconds", ""),
            "# HELP solvi_part_duration_seconds Run time of each call of a part.",
            "# TYPE solvi_part_duration_seconds histogram",
        ]
        for part, hist in sorted(self.parts.items()):
            lines += hist.lines("solvi_part_duration_seconds", f'part="{_label(part)}"')
        return "\n".join(lines) + "\n"


class _CountRequests:
    """ASGI middleware: count every HTTP response by path, method and status."""

    def __init__(self, app: ASGIApp, metrics: _Metrics, paths: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        # Unknown paths share one label, so clients cannot grow the metrics without bound.
        label = path if path in self.paths else "other"
        method = scope["method"] if scope["method"] in {"GET", "POST", "HEAD"} else "other"
        status = 500

        async def counting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            self.metrics.count_http(label, method, status)


# -- the OpenAPI description ---------------------------------------------------------------

_STR: dict[str, Any] = {"type": "string"}
_STRS: dict[str, Any] = {"type": "array", "items": _STR}
_STR_OR_NULL: dict[str, Any] = {"type": ["string", "null"]}
_HASH: dict[str, Any] = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_ERRORS = {
    400: "Bad JSON or a bad query value.",
    404: "Unknown question.",
    413: "The body is larger than the server accepts.",
    415: "The body is not sent as application/json.",
    422: "The body is not a JSON object or nests too deep, or a computed value has no JSON form.",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(**properties: Any) -> dict[str, Any]:
    """An object schema whose listed properties are all required."""
    return {"type": "object", "required": list(properties), "properties": properties}


def _operation(
    op: str, summary: str, ok: str, schema: Any, *errors: int, media: str = "application/json"
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": ok, "content": {media: {"schema": schema}}}}
    for status in errors:
        responses[str(status)] = {
            "description": _ERRORS[status],
            "content": {"application/json": {"schema": _ref("Error")}},
        }
    return {"operationId": op, "summary": summary, "responses": responses}


def _query(name: str, schema: dict[str, Any], text: str, *, required: bool = False) -> Any:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "schema": schema,
        "description": text,
    }


def _openapi(system: System, max_body: int) -> dict[str, Any]:
    """The OpenAPI 3.1 description of the app `asgi(system)` builds."""
    questions = [q.name for q in system.questions]
    record = _obj(
        format={"const": RECORD_FORMAT},
        catalog={"const": system.name},
        catalog_version={"const": system.version},
        input={"type": "object", "description": "The posted state."},
        early_exit={"type": "boolean"},
        flow=_STRS,
        answers={**_obj(**{n: _ref("Answer") for n in questions}), "additionalProperties": False},
        values={"type": "object", "description": "The facts computed, by name."},
        steps={"type": "array", "items": _ref("Step")},
        skipped={
            "type": "array",
            "items": {"type": "array", "prefixItems": [_STR, _STR], "minItems": 2, "maxItems": 2},
        },
        safeguards={"type": "array", "items": _ref("Safeguard")},
        hash=_HASH,
    )
    record["description"] = "The decision record: Response.record in Python."
    schemas = {
        "State": {
            "type": "object",
            "description": (
                f"The request's state: fact names to values; its keys select the flow. At most "
                f"{max_body} bytes, lists and objects nested at most {MAX_DEPTH} deep."
            ),
        },
        "Record": record,
        "Answer": _obj(
            status={"type": "string", "enum": list(_STATUSES)},
            value={"description": "The answer's value (null when it abstained)."},
            reason=_STR,
            guard={**_STR_OR_NULL, "description": "What stopped the question, if anything."},
        ),
        "SingleAnswer": _obj(
            catalog={"const": system.name},
            question={"type": "string", "enum": questions},
            answer=_ref("Answer"),
            hash=_HASH,
        ),
        "Step": _obj(
            part=_STR,
            fact=_STR,
            outcome={"type": "string", "enum": ["ok", "timeout", "error"]},
            message=_STR_OR_NULL,
            start_ms={"type": "number"},
            duration_ms={"type": "number", "minimum": 0},
        ),
        "Safeguard": _obj(
            kind={"type": "string", "enum": ["timeout", "error"]},
            part=_STR,
            fact=_STR,
            message=_STR,
        ),
        "Plan": _obj(
            catalog={"const": system.name},
            version={"const": system.version},
            keys=_STRS,
            steps={**_STRS, "description": "Part names in execution order."},
            skipped={"type": "object", "additionalProperties": _STR},
            questions={"type": "array", "items": _ref("QuestionPlan")},
            mermaid=_STR,
        ),
        "QuestionPlan": _obj(
            name=_STR,
            rule=_STR_OR_NULL,
            targets=_STRS,
            governing=_STRS,
            narrowed={"type": "boolean"},
            blocked=_STR_OR_NULL,
            guard=_STR_OR_NULL,
        ),
        "Health": _obj(
            status={"const": "ok"},
            catalog={"const": system.name},
            version={"const": system.version},
            questions=_STRS,
            **{"async": {"type": "boolean"}},
        ),
        "Error": _obj(
            error=_obj(code={"type": "string", "enum": list(_ERROR_CODES)}, message=_STR)
        ),
    }
    ask = _operation(
        "ask",
        "Answer every question (or one) for the posted state.",
        "The record, or with question= one answer and the record's hash. Parts that raised or "
        "timed out are safeguards in it.",
        {"oneOf": [_ref("Record"), _ref("SingleAnswer")]},
        400,
        404,
        413,
        415,
        422,
    )
    ask["parameters"] = [
        _query("early_exit", {"type": "boolean"}, "Skip what a failed hard check made unneeded."),
        _query("speculate", {"type": "boolean", "default": False}, "Start steps speculatively."),
        _query(
            "timeout",
            {"type": "number", "exclusiveMinimum": 0},
            "Seconds, for parts without a timeout of their own.",
        ),
        _query("question", {"type": "string", "enum": questions}, "Answer only this question."),
    ]
    ask["requestBody"] = {
        "required": True,
        "content": {"application/json": {"schema": _ref("State")}},
    }
    plan = _operation("plan", "The flow for exactly these keys.", "The flow.", _ref("Plan"), 400)
    plan["parameters"] = [
        _query("keys", _STR, "The request's keys, comma-separated (may be empty).", required=True)
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"solvi: {system.name}",
            "version": system.version,
            "description": (
                f"Answers the questions of catalog {system.name!r} ({', '.join(questions)}) "
                f"with await System.aask(state)."
            ),
        },
        "paths": {
            "/v1/ask": {"post": ask},
            "/v1/plan": {"get": plan},
            "/healthz": {
                "get": _operation("health", "Up, for which catalog.", "Up.", _ref("Health"))
            },
            "/metrics": {
                "get": _operation(
                    "metrics",
                    "Counters and latencies.",
                    "Prometheus text exposition, version 0.0.4.",
                    _STR,
                    media="text/plain",
                )
            },
            "/openapi.json": {
                "get": _operation(
                    "openapi", "This description.", "OpenAPI 3.1.", {"type": "object"}
                )
            },
        },
        "components": {"schemas": schemas},
    }


# -- the app -----------------------------------------------------------------------------


def _flow_json(system: System, flow: Flow) -> dict[str, Any]:
    return {
        "catalog": system.name,
        "version": system.version,
        "keys": sorted(flow.keys),
        "steps": list(flow.steps),
        "skipped": dict(flow.skipped),
        "questions": [
            {
                "name": q.name,
                "rule": q.rule,
                "targets": list(q.targets),
                "governing": list(q.governing),
                "narrowed": q.narrowed,
                "blocked": q.blocked,
                "guard": q.blocked_guard,
            }
            for q in flow.questions
        ],
        "mermaid": flow.to_mermaid(),
    }


class _Server:
    """The endpoints of one app, sharing one System and one set of metrics."""

    def __init__(self, system: System, max_body: int) -> None:
        self.system = system
        self.max_body = max_body
        self.metrics = _Metrics(system)
        self.questions = tuple(q.name for q in system.questions)
        self.description = _openapi(system, max_body)
        self.health = {
            "status": "ok",
            "catalog": system.name,
            "version": system.version,
            "questions": list(self.questions),
            "async": system.is_async,
        }

    async def ask(self, request: Request) -> Response:
        """POST /v1/ask: the record of `await system.aask(state)`."""
        from starlette.requests import ClientDisconnect

        gone = _ClientError(
            _CLIENT_CLOSED,
            "client_disconnected",
            "the client closed the connection before the answer was ready",
        )
        try:
            options = _ask_options(request.query_params, self.questions)
            _check_media_type(request)
            state = _parse_state(await _read_body(request, self.max_body))
        except _ClientError as err:
            return _refuse(err)
        except ClientDisconnect:
            return _refuse(gone)
        started = perf_counter()
        self.metrics.in_flight += 1
        try:
            res = await self._answer(request, state, options)
        finally:
            self.metrics.in_flight -= 1
        if res is None:
            return _refuse(gone)
        self.metrics.observe(res, perf_counter() - started)
        from starlette.responses import Response

        try:
            if options.question is None:
                return Response(res.to_json(), media_type="application/json")
            answer = res[options.question]
            single = {
                "catalog": self.system.name,
                "question": options.question,
                "answer": {
                    "status": answer.status,
                    "value": to_record_value(answer.value, f"answer {options.question}"),
                    "reason": answer.reason,
                    "guard": answer.guard,
                },
                "hash": res.hash,
            }
            return _json_response(single)
        except RecordError as exc:
            msg = (
                f"the answers were computed but cannot be sent: {exc}. The request was "
                f"well-formed; a part of catalog {self.system.name!r} must return JSON data"
            )
            return _refuse(_ClientError(422, "unrecordable_value", msg, fact=exc.fact))

    async def _answer(
        self, request: Request, state: dict[str, Any], options: _AskOptions
    ) -> Answered | None:
        """Run `aask`, cancelled when the client disconnects first (then None)."""
        done: list[Answered] = []
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                # Once the body is read, the next message an ASGI server sends is the disconnect.
                if (await request.receive())["type"] == "http.disconnect":
                    tg.cancel_scope.cancel()

            tg.start_soon(watch)
            done.append(
                await self.system.aask(
                    state,
                    early_exit=options.early_exit,
                    speculate=options.speculate,
                    timeout=options.timeout,
                )
            )
            tg.cancel_scope.cancel()
        return done[0] if done else None

    async def plan(self, request: Request) -> Response:
        """GET /v1/plan?keys=a,b: the flow for requests with exactly these keys."""
        try:
            given = _plan_keys(request.query_params)
        except _ClientError as err:
            return _refuse(err)
        keys = {k.strip() for text in given for k in text.split(",") if k.strip()}
        return _json_response(_flow_json(self.system, self.system.plan(keys)))

    async def healthz(self, request: Request) -> Response:
        """GET /healthz: up, and for which catalog."""
        return _json_response(self.health)

    async def metrics_text(self, request: Request) -> Response:
        """GET /metrics: the Prometheus text exposition."""
        from starlette.responses import Response

        return Response(self.metrics.render(), media_type="text/plain; version=0.0.4")

    async def openapi_json(self, request: Request) -> Response:
        """GET /openapi.json: the OpenAPI description (with the mount path as server)."""
        root = request.scope.get("root_path", "")
        if not root:
            return _json_response(self.description)
        return _json_response({**self.description, "servers": [{"url": root}]})

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Starlette's own 404 and 405, as JSON errors."""
        from starlette.exceptions import HTTPException

        if not isinstance(exc, HTTPException):  # pragma: no cover - registered for it only
            raise exc
        if exc.status_code == 405:
            code = "method_not_allowed"
            allowed = (exc.headers or {}).get("Allow", "")
            msg = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        else:
            code = "not_found"
            msg = (
                f"no endpoint {request.url.path!r}; this server has POST /v1/ask, "
                f"GET /v1/plan, GET /healthz, GET /metrics and GET /openapi.json"
            )
        return _json_response(_error_body(code, msg), exc.status_code, exc.headers)


def asgi(system: System, *, max_body: int = 1_000_000) -> Starlette:
    """Build the HTTP app of a System: mount it in your own app, or serve it with uvicorn.

    The app is built once and holds its own metrics. Endpoints: ``POST /v1/ask``
    (the posted JSON object is the state; query options ``early_exit``,
    ``speculate``, ``timeout`` and ``question``), ``GET /v1/plan?keys=a,b``,
    ``GET /healthz``, ``GET /metrics`` and ``GET /openapi.json``. Errors a client
    causes are 4xx answers with a JSON body ``{"error": {"code", "message"}}``.

    Args:
        system: the System that answers.
        max_body: the largest request body accepted, in bytes (413 above it).

    Returns:
        A Starlette application.

    Raises:
        ImportError: Starlette is not installed (the message gives the install command).
        TypeError: `system` is not a System.
        ValueError: `max_body` is not a positive whole number.
    """
    if not isinstance(system, System):
        msg = f"asgi() needs a solvi.System, got {type(system).__name__}; build System(catalog)"
        raise TypeError(msg)
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body <= 0:
        msg = f"max_body must be a positive whole number of bytes, got {max_body!r}"
        raise ValueError(msg)
    _need("starlette")
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.routing import Route

    server = _Server(system, max_body)
    routes = [
        Route("/v1/ask", server.ask, methods=["POST"]),
        Route("/v1/plan", server.plan, methods=["GET"]),
        Route("/healthz", server.healthz, methods=["GET"]),
        Route("/metrics", server.metrics_text, methods=["GET"]),
        Route("/openapi.json", server.openapi_json, methods=["GET"]),
    ]
    paths = frozenset(r.path for r in routes)
    return Starlette(
        routes=routes,
        middleware=[Middleware(_CountRequests, metrics=server.metrics, paths=paths)],
        exception_handlers={HTTPException: server.http_error},
    )


# -- serving a target -------------------------------------------------------------------


def _import_target_module(module_text: str) -> ModuleType:
    if module_text.endswith(".py") or "/" in module_text or os.sep in module_text:
        path = Path(module_text).expanduser().resolve()
        if not path.is_file():
            msg = f"no file {module_text!r}; give the path of a .py file, relative to {os.getcwd()}"
            raise SolviError(msg)
        # Like `python path/to/file.py`: modules next to the file are importable.
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        name = f"_solvi_serve_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            msg = f"cannot import {module_text!r}; give a .py file"
            raise SolviError(msg)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_text)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_text.startswith(exc.name):
            raise
        msg = (
            f"cannot import module {module_text!r}: {exc}; run from the directory that holds "
            f"it, or give a file path (path/to/file.py:system)"
        )
        raise SolviError(msg) from exc


def load_system(target: str) -> System:
    """Load the System named by ``module:attribute`` or ``path/to/file.py:attribute``.

    The attribute may be a System, a Catalog (served as ``System(catalog)``) or a
    function taking no arguments that returns either.

    Raises:
        SolviError: the target is malformed, missing, or names something else.
    """
    module_text, sep, attr = target.rpartition(":")
    if not sep or not module_text or not attr:
        msg = (
            f"{target!r} names no attribute; write module:attribute or "
            f"path/to/file.py:attribute (for example examples/claims.py:system)"
        )
        raise SolviError(msg)
    module = _import_target_module(module_text)
    value: Any = module
    for piece in attr.split("."):
        if not hasattr(value, piece):
            found = sorted(n for n, v in vars(module).items() if isinstance(v, System | Catalog))
            hint = f" (it has: {', '.join(found)})" if found else ""
            msg = f"no attribute {attr!r} in {module_text!r}; name a System or a factory{hint}"
            raise SolviError(msg)
        value = getattr(value, piece)
    if not isinstance(value, System | Catalog) and callable(value):
        value = value()
    if isinstance(value, Catalog):
        return System(value)
    if not isinstance(value, System):
        msg = (
            f"{target!r} is a {type(value).__name__}, not a solvi System; name a System, a "
            f"Catalog, or a function without arguments that returns one"
        )
        raise SolviError(msg)
    return value


def run(
    target: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_body: int = 1_000_000,
    log_level: str = "info",
) -> None:
    """Serve the System named by `target` with uvicorn until interrupted.

    Args:
        target: ``module:attribute`` or ``path/to/file.py:attribute`` naming a
            System, a Catalog, or a function without arguments returning one.
        host: the address to listen on (default loopback only).
        port: the TCP port.
        max_body: the largest request body accepted, in bytes.
        log_level: uvicorn's log level.

    Raises:
        ImportError: Starlette or uvicorn is not installed.
        SolviError: the target cannot be loaded.
    """
    uvicorn = _need("uvicorn")
    app = asgi(load_system(target), max_body=max_body)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        msg = f"a port is a whole number from 0 to 65535, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        msg = f"give a positive whole number of bytes, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", help="module:attribute or path/to/file.py:attribute naming a System"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="TCP port (8000)")
    parser.add_argument(
        "--max-body",
        type=_positive,
        default=1_000_000,
        help="largest request body accepted, in bytes (1000000)",
    )
    parser.set_defaults(run=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        run(args.target, args.host, args.port, max_body=args.max_body)
    except (SolviError, ImportError) as exc:
        sys.stderr.write(f"solvi serve: {exc}\n")
        return 1
    return 0


def add_serve_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Register ``serve TARGET [--host] [--port] [--max-body]`` on an argparse subparsers object.

    The sub-command sets ``run`` to a function taking the parsed arguments and
    returning the exit status (1 when the target cannot be loaded or the serve
    extra is missing).

    Returns:
        The ``serve`` parser.
    """
    parser = subparsers.add_parser(
        "serve",
        help="serve a System over HTTP (POST /v1/ask, plan, health, metrics)",
        description=(
            "Serve a System over HTTP with uvicorn: POST /v1/ask, GET /v1/plan, GET /healthz, "
            f"GET /metrics, GET /openapi.json. Needs the serve extra: {_INSTALL}"
        ),
    )
    _add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``solvi serve`` on its own (what ``python -m solvi.serve`` runs).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(prog="solvi serve", description="Serve a System over HTTP.")
    _add_arguments(parser)
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
