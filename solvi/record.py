"""Turning values into JSON a record can hold, and hashing records canonically."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import hashlib
import inspect
import json
import math
import uuid
from collections.abc import Mapping
from typing import Any, Final

import attrs

from solvi.errors import RecordError

__all__ = [
    "HUGE_INT",
    "HUGE_INT_DIGITS",
    "MAX_NESTING",
    "NEGATIVE_HUGE_INT",
    "NO_JSON_FORM",
    "PLAIN_TYPES",
    "canonical_json",
    "from_record_value",
    "json_problem",
    "read_stored_json",
    "record_hash",
    "shortened",
    "to_record_value",
]

#: how the message of a step whose value has no JSON form begins
NO_JSON_FORM: Final = "returned a value with no JSON form: "

#: types whose values a record holds as they are (no conversion to check), ints
#: within HUGE_INT of zero
PLAIN_TYPES: Final = frozenset({int, float, str, bool, type(None)})

#: ints a record holds lie strictly between -HUGE_INT and HUGE_INT, so have at most
#: HUGE_INT_DIGITS digits: Python writes no int of more digits than
#: `sys.get_int_max_str_digits()` (4,300 by default) as text
HUGE_INT_DIGITS: Final = 4000
HUGE_INT: Final = 10**HUGE_INT_DIGITS
#: its negative, made once: negating it on every check would copy it each time
NEGATIVE_HUGE_INT: Final = -HUGE_INT

#: lists and dicts nested deeper than this in a value (or a value that contains
#: itself) have no JSON form: encoders and readers stop at Python's recursion limit
MAX_NESTING: Final = 200


#: one-key objects a record uses as tags; a dict of one such key is kept apart as
#: ``{"$object": {...}}``
_TAGS: Final = frozenset({"$float", "$object"})


def _float(value: float) -> Any:
    if math.isfinite(value):
        return value
    # JSON has no NaN or infinity; keep them distinguishable from strings.
    if math.isnan(value):
        return {"$float": "nan"}
    return {"$float": "inf" if value > 0 else "-inf"}


def to_record_value(value: Any, where: str) -> Any:
    """Convert a fact's value to plain JSON data, or explain why it cannot be.

    Conversions (documented in docs/records.md): tuples and lists become lists;
    sets become sorted lists; dataclasses and attrs classes become dicts;
    enums their value; dates, times and datetimes ISO 8601 strings; Decimal and
    UUID strings; NaN and infinities ``{"$float": "nan" | "inf" | "-inf"}``.

    Raises:
        RecordError: the value (or something inside it) has no JSON form; the
            message names the fact (`where`) and the path inside it.
    """
    return _convert(value, where, 0)


def _convert(value: Any, where: str, depth: int) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not NEGATIVE_HUGE_INT < value < HUGE_INT:
            msg = (
                f"{where} is an integer of {value.bit_length():,} bits; a record holds "
                f"integers of up to {HUGE_INT_DIGITS:,} digits, so return a larger one as a "
                f"string, e.g. hex(value)"
            )
            raise RecordError(msg, fact=where.split("[", 1)[0])
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if depth >= MAX_NESTING and isinstance(value, Mapping | list | tuple | set | frozenset):
        fact = where.split("[", 1)[0]
        msg = (
            f"{fact} holds lists or dicts nested more than {MAX_NESTING} levels deep (or one "
            f"that contains itself), which a decision record cannot hold; flatten it in the "
            f"part"
        )
        raise RecordError(msg, fact=fact)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                msg = (
                    f"{where} has a dict key {k!r} of type {type(k).__name__}; records need "
                    f"string keys, so convert the keys (e.g. str(key)) in the part"
                )
                raise RecordError(
                    msg,
                    fact=where.split("[", 1)[0],
                )
            out[k] = _convert(v, f"{where}[{k!r}]", depth + 1)
        if len(out) == 1 and next(iter(out)) in _TAGS:
            return {"$object": out}  # a dict that would read as a tag
        return out
    if isinstance(value, list | tuple):
        return [_convert(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, set | frozenset):
        items = [_convert(v, f"{where}{{...}}", depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, enum.Enum):
        return _convert(value.value, where, depth)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _convert(dataclasses.asdict(value), where, depth)
    if attrs.has(type(value)):
        return _convert(attrs.asdict(value, recurse=False), where, depth)
    if inspect.isawaitable(value):
        msg = (
            f"{where} is a {type(value).__qualname__}, not a value: the part returned a call "
            f"of an `async def` function without awaiting it, so that call never ran; "
            f"declare the part `async def` and await it"
        )
        raise RecordError(msg, fact=where.split("[", 1)[0])
    msg = (
        f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which a decision "
        f"record cannot hold; return JSON data (str, int, float, bool, None, list, dict), a "
        f"dataclass or attrs instance, or convert it in the part"
    )
    raise RecordError(
        msg,
        fact=where.split("[", 1)[0],
    )


_FLOATS: Final = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def from_record_value(value: Any) -> Any:
    """A recorded value with its tags undone: NaN and the infinities floats again, and
    a dict that looked like a tag itself again.

    These are the conversions of `to_record_value` that can be undone without
    guessing, so a replay hands a part the float it was given, not a dict.
    Everything else stays the JSON it was recorded as.
    """
    return _untagged(value, 0)


def _untagged(value: Any, depth: int) -> Any:
    if depth > MAX_NESTING:
        return value
    if isinstance(value, list):
        return [_untagged(v, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "$float" and isinstance(inner, str) and inner in _FLOATS:
            return _FLOATS[inner]
        if key == "$object" and isinstance(inner, dict) and len(inner) == 1:
            return {k: _untagged(v, depth + 1) for k, v in inner.items()}
    return {k: _untagged(v, depth + 1) for k, v in value.items()}


class _BareConstant(Exception):  # a signal inside read_stored_json only
    """A bare ``NaN`` or ``Infinity`` met while parsing: JSON has none, solvi writes none."""


def _refuse_constant(name: str) -> Any:
    raise _BareConstant(name)


def read_stored_json(text: str | bytes) -> tuple[Any, str | None]:
    """Stored JSON text (a record, an audit payload) parsed, and None; or None and why
    solvi could not have written it, for a message about a row edited outside solvi."""
    try:
        return json.loads(text, parse_constant=_refuse_constant), None
    except _BareConstant as exc:
        return None, f"holds a bare {exc}, which solvi never writes"
    except RecursionError:
        # Python's parser recurses once per level; a hand-made nesting outruns the stack.
        return None, "nests too deeply to be read"
    except ValueError as exc:  # also bytes that are not UTF-8, an int of too many digits
        return None, f"is not JSON ({exc})"


def json_problem(value: Any, fact: str) -> str | None:
    """Why a fact's value cannot go into a decision record, or None when it can.

    The run checks each value when it arrives, so a value without a JSON form is a
    safeguard of the request that computed it, with or without a store.
    """
    try:
        to_record_value(value, fact)
    except RecordError as exc:
        return f"{NO_JSON_FORM}{exc}"
    return None


#: made once: `json.dumps` with these options builds an encoder on every call
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_json(data: Any) -> str:
    """The one JSON text of a record: sorted keys, no spaces, no NaN."""
    return _CANONICAL.encode(data)


def shortened(value: Any, width: int = 40, *, bare_text: bool = False) -> str:
    """A value's JSON for a line a person reads, cut to `width` characters ending in
    "..." (with `bare_text`, a str as it is, without quotes)."""
    text = value if bare_text and isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def record_hash(data: Any) -> str:
    """sha256 of a record's canonical JSON."""
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()
