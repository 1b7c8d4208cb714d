"""The OpenAPI 3.1 description of the app `asgi(system)` builds."""

from __future__ import annotations

from typing import Any

from solvi.response import RECORD_FORMAT
from solvi.serve._inputs import ServedKeys
from solvi.serve._metrics import STATUSES
from solvi.serve._requests import ERROR_CODES, MAX_DEPTH, counted
from solvi.system import System

__all__ = ["openapi"]

_STR: dict[str, Any] = {"type": "string"}
_STRS: dict[str, Any] = {"type": "array", "items": _STR}
_STR_OR_NULL: dict[str, Any] = {"type": ["string", "null"]}
_HASH: dict[str, Any] = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_MATCHED: dict[str, Any] = {
    "type": "object",
    "additionalProperties": _STR,
    "description": "Each key read as another name: the key as sent -> the input it names.",
}
_ERRORS = {
    400: "Bad JSON (not UTF-8, a repeated key, a number that is not finite) or a bad query value.",
    404: "Unknown question.",
    408: "The body did not arrive within the server's read timeout.",
    413: "The body is larger than the server accepts.",
    415: "The body is not sent as application/json.",
    422: (
        "A key that is not one of the catalog's inputs, more keys than the server accepts, a "
        "body that is not a JSON object or nests too deep, or a computed value with no JSON form."
    ),
}
_PLAN_ERRORS = {
    400: "A missing or unknown query parameter.",
    422: "A key that is not one of the catalog's inputs, or more keys than the server accepts.",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(**properties: Any) -> dict[str, Any]:
    """An object schema whose listed properties are all required."""
    return {"type": "object", "required": list(properties), "properties": properties}


def _operation(
    op: str,
    summary: str,
    ok: str,
    schema: Any,
    errors: dict[int, str] | None = None,
    media: str = "application/json",
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": ok, "content": {media: {"schema": schema}}}}
    for status, description in (errors or {}).items():
        responses[str(status)] = {
            "description": description,
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


def _state(keys: ServedKeys, max_body: int, max_keys: int) -> dict[str, Any]:
    """The request body: a property per input, typed from the parts that read it."""
    if keys.allow_overrides:
        takes = (
            "its keys are the catalog's inputs (listed here) or facts the System lets a request set"
        )
    else:
        takes = "its keys are the catalog's inputs, and no other key is accepted"
    if keys.aliases is not None:
        takes += (
            " (a key written in another convention, such as camelCase, kebab-case, spaces or "
            "upper case, or a synonym the catalog declares, is read as the input it names)"
        )
    schema: dict[str, Any] = {
        "type": "object",
        "description": (
            f"The request's state: fact names to values; {takes}. Which keys it has selects "
            f"the flow. At most {counted(max_body, 'byte')} and {counted(max_keys, 'key')}, "
            f"lists and objects nested at most {MAX_DEPTH} deep."
        ),
        "properties": dict(keys.schemas),
        "maxProperties": max_keys,
    }
    if not keys.allow_overrides and keys.aliases is None:
        schema["additionalProperties"] = False
    return schema


def _keys_param(keys: ServedKeys) -> dict[str, Any]:
    """``keys=`` of GET /v1/plan: comma-separated inputs, blanks around them ignored."""
    if keys.allow_overrides:
        return dict(_STR)
    # Input names are parameter names, so identifiers: nothing in them needs escaping.
    item = rf"\s*(?:{'|'.join(keys.inputs)})?\s*"
    return {"type": "string", "pattern": rf"^{item}(?:,{item})*$"}


def openapi(system: System, max_body: int, max_keys: int, keys: ServedKeys) -> dict[str, Any]:
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
    single = _obj(
        catalog={"const": system.name},
        question={"type": "string", "enum": questions},
        answer=_ref("Answer"),
        hash=_HASH,
    )
    if keys.aliases is not None:
        for schema in (record, single):
            schema["properties"]["matched"] = _MATCHED
            schema["required"].append("matched")
    schemas = {
        "State": _state(keys, max_body, max_keys),
        "Record": record,
        "Answer": _obj(
            status={"type": "string", "enum": list(STATUSES)},
            value={"description": "The answer's value (null when it abstained)."},
            reason=_STR,
            guard={**_STR_OR_NULL, "description": "What stopped the question, if anything."},
        ),
        "SingleAnswer": single,
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
        "Error": _obj(error=_obj(code={"type": "string", "enum": list(ERROR_CODES)}, message=_STR)),
    }
    ask = _operation(
        "ask",
        "Answer every question (or one) for the posted state.",
        "The record, or with question= one answer and the record's hash. Parts that raised or "
        "timed out are safeguards in it.",
        {"oneOf": [_ref("Record"), _ref("SingleAnswer")]},
        _ERRORS,
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
    plan = _operation(
        "plan", "The flow for exactly these keys.", "The flow.", _ref("Plan"), _PLAN_ERRORS
    )
    also = " or facts the System lets a request set" if keys.allow_overrides else ""
    plan["parameters"] = [
        _query(
            "keys",
            _keys_param(keys),
            f"The request's keys, comma-separated (may be empty): inputs of the catalog "
            f"({', '.join(keys.inputs)}){also}, at most {max_keys}.",
            required=True,
        )
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
