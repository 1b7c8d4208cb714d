"""Values as exact, tagged JSON: what the journal keeps so a resume gets back what a part returned.

JSON data (None, bool, int, str, finite float, lists, dicts with string keys
that do not start with ``$``) is kept as it is. Where JSON would lose
information, a one-key object says what the value was:

``{"$tuple": [...]}``, ``{"$set": [...]}``, ``{"$frozenset": [...]}``,
``{"$dict": [[key, value], ...]}`` (keys that are not plain strings),
``{"$float": "nan" | "inf" | "-inf"}``, ``{"$bytes": base64}``,
``{"$decimal": "1.10"}``, ``{"$uuid": "..."}``, ``{"$date": iso}``,
``{"$time": iso}``, ``{"$datetime": iso}``, ``{"$timedelta": [days, seconds, us]}``,
``{"$fail": reason}`` (a check's `solvi.Fail`).

Decoding knows only these tags and builds only these types: reading a journal
never imports a module or calls anything a journal names. A value of any other
type (a dataclass, an enum, an object) has no exact form: `encode` returns None
and the step that produced it is not resumable.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from typing import Any

from solvi.question import Fail

__all__ = ["ExactFormError", "decode", "encode"]


class ExactFormError(ValueError):
    """A journal holds a value that is not valid exact JSON (damaged or planted)."""


class _NoForm(Exception):
    """Raised inside `_enc` for a value that has no exact form."""


def _enc(value: Any) -> Any:
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is int:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if kind is list:
        return [_enc(v) for v in value]
    if kind is tuple:
        return {"$tuple": [_enc(v) for v in value]}
    if kind is dict:
        if all(type(k) is str and not k.startswith("$") for k in value):
            return {k: _enc(v) for k, v in value.items()}
        return {"$dict": [[_enc(k), _enc(v)] for k, v in value.items()]}
    if kind is set or kind is frozenset:
        items = sorted((_enc(v) for v in value), key=_sort_key)
        return {"$set" if kind is set else "$frozenset": items}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if kind is decimal.Decimal:
        return {"$decimal": str(value)}
    if kind is uuid.UUID:
        return {"$uuid": str(value)}
    if kind is dt.datetime:
        return {"$datetime": value.isoformat()}
    if kind is dt.date:
        return {"$date": value.isoformat()}
    if kind is dt.time:
        return {"$time": value.isoformat()}
    if kind is dt.timedelta:
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if kind is Fail:
        return {"$fail": value.reason}
    raise _NoForm


def _sort_key(encoded: Any) -> str:
    return json.dumps(encoded, sort_keys=True, separators=(",", ":"))


def encode(value: Any) -> str | None:
    """The exact JSON text of `value`, or None when it has no exact form."""
    try:
        return json.dumps(_enc(value), separators=(",", ":"), allow_nan=False)
    except (_NoForm, RecursionError):
        return None


def decode(text: str) -> Any:
    """The value `encode` wrote.

    Raises:
        ExactFormError: `text` is not exact JSON as `encode` writes it.
    """
    try:
        data = json.loads(text, parse_constant=_bare_constant)
        return _dec(data)
    except ExactFormError:
        raise
    except (ValueError, TypeError, KeyError, ArithmeticError, RecursionError) as exc:
        msg = f"not an exact value: {exc}"
        raise ExactFormError(msg) from exc


def _bare_constant(name: str) -> Any:
    """`encode` writes NaN and the infinities tagged, never as JSON's bare extensions."""
    msg = f'bare {name} (encode tags it as {{"$float": ...}})'
    raise ValueError(msg)


def _dec(data: Any) -> Any:
    kind = type(data)
    if data is None or kind is bool or kind is str or kind is int or kind is float:
        return data
    if kind is list:
        return [_dec(v) for v in data]
    if kind is not dict:
        msg = f"unexpected {kind.__name__}"
        raise ExactFormError(msg)
    if not any(k.startswith("$") for k in data):
        return {k: _dec(v) for k, v in data.items()}
    if len(data) != 1:
        msg = f"a tagged value has one key, got {sorted(data)}"
        raise ExactFormError(msg)
    ((tag, body),) = data.items()
    decoder = _TAGS.get(tag)
    if decoder is None:
        msg = f"unknown tag {tag!r}"
        raise ExactFormError(msg)
    return decoder(body)


def _items(body: Any) -> list[Any]:
    if type(body) is not list:
        msg = "a tagged collection holds a list"
        raise ExactFormError(msg)
    return [_dec(v) for v in body]


def _text(body: Any) -> str:
    if type(body) is not str:
        msg = "a tagged scalar holds a string"
        raise ExactFormError(msg)
    return body


def _float(body: Any) -> float:
    special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    if body not in special:
        msg = f"unknown float {body!r}"
        raise ExactFormError(msg)
    return special[body]


def _pairs(body: Any) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in _items(body):
        if type(pair) is not list or len(pair) != 2:
            msg = "a tagged dict holds [key, value] pairs"
            raise ExactFormError(msg)
        out[pair[0]] = pair[1]
    return out


def _timedelta(body: Any) -> dt.timedelta:
    if type(body) is not list or len(body) != 3 or any(type(v) is not int for v in body):
        msg = "a timedelta holds [days, seconds, microseconds]"
        raise ExactFormError(msg)
    return dt.timedelta(days=body[0], seconds=body[1], microseconds=body[2])


_TAGS: dict[str, Any] = {
    "$tuple": lambda body: tuple(_items(body)),
    "$set": lambda body: set(_items(body)),
    "$frozenset": lambda body: frozenset(_items(body)),
    "$dict": _pairs,
    "$float": _float,
    "$bytes": lambda body: base64.b64decode(_text(body), validate=True),
    "$decimal": lambda body: decimal.Decimal(_text(body)),
    "$uuid": lambda body: uuid.UUID(_text(body)),
    "$datetime": lambda body: dt.datetime.fromisoformat(_text(body)),
    "$date": lambda body: dt.date.fromisoformat(_text(body)),
    "$time": lambda body: dt.time.fromisoformat(_text(body)),
    "$timedelta": _timedelta,
    "$fail": lambda body: _fail(_text(body)),
}


def _fail(reason: str) -> Fail:
    try:
        return Fail(reason)
    except TypeError as exc:
        raise ExactFormError(str(exc)) from exc
