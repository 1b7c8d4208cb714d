"""Exact values: every supported value comes back as itself, tags only where JSON loses
information, and a damaged or hostile text is refused naming what is wrong."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import math
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvi import Fail
from solvi._db.exact import ExactFormError, decode, encode

_hashable = st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none())
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and the infinities included
    st.text(),
    st.binary(max_size=8),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.uuids(),
    st.dates(),
    st.times(),
    st.datetimes(timezones=st.none() | st.just(dt.UTC)),
    st.timedeltas(),
    st.text(min_size=1).filter(str.strip).map(Fail),
    st.sets(_hashable, max_size=4),
    st.frozensets(_hashable, max_size=4),
)
values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),  # "$" keys included
        st.dictionaries(st.integers(), inner, max_size=3),
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal, of the same type all the way down (NaN equals NaN; Decimal by its digits)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, decimal.Decimal | dt.date | dt.time):
        return str(a) == str(b)
    return bool(a == b)


@given(value=values)
def test_every_supported_value_comes_back_as_itself(value: Any) -> None:
    """decode(encode(v)) is v, type for type, and encoding that again gives the same text."""
    text = encode(value)
    assert text is not None
    back = decode(text)
    assert same(back, value)
    assert encode(back) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": [1, 2.5, None, True]}, '{"a":[1,2.5,null,true]}'),
        ((1, "x"), '{"$tuple":[1,"x"]}'),
        ({3, 1, 2}, '{"$set":[1,2,3]}'),
        (frozenset({"b", "a"}), '{"$frozenset":["a","b"]}'),
        ({1: "one"}, '{"$dict":[[1,"one"]]}'),
        ({"$ref": 1}, '{"$dict":[["$ref",1]]}'),
        (math.inf, '{"$float":"inf"}'),
        (-math.inf, '{"$float":"-inf"}'),
        (b"\x00\xff", '{"$bytes":"AP8="}'),
        (decimal.Decimal("1.10"), '{"$decimal":"1.10"}'),
        (dt.timedelta(days=1, seconds=2, microseconds=3), '{"$timedelta":[1,2,3]}'),
        (dt.date(2024, 2, 29), '{"$date":"2024-02-29"}'),
        (Fail("evidence is stale"), '{"$fail":"evidence is stale"}'),
    ],
)
def test_tags_appear_only_where_json_loses_information(value: Any, text: str) -> None:
    """Plain JSON data is kept as it is; each other type gets its one-key tag."""
    assert encode(value) == text


class _Colour(enum.Enum):
    RED = 1


@pytest.mark.parametrize(
    "value",
    [object(), _Colour.RED, [1, {"x": object()}], {frozenset(): 1j}, {1.5: lambda: 0}],
    ids=["object", "enum", "nested object", "complex", "lambda"],
)
def test_a_value_of_any_other_type_has_no_exact_form(value: Any) -> None:
    """encode returns None (the step is then not resumable), never raising."""
    assert encode(value) is None


def test_a_value_nested_too_deep_has_no_exact_form() -> None:
    """Recursion too deep for JSON gives None, not a RecursionError."""
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert encode(deep) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"$pickle":"gASV"}', "unknown tag '$pickle'"),
        ('{"$__reduce__":["os.system","echo"]}', "unknown tag '$__reduce__'"),
        ('{"$tuple":[1],"x":2}', "a tagged value has one key, got ['$tuple', 'x']"),
        ('{"$tuple":"ab"}', "a tagged collection holds a list"),
        ('{"$float":"1e400"}', "unknown float '1e400'"),
        ('{"$decimal":5}', "a tagged scalar holds a string"),
        ('{"$dict":[[1]]}', "a tagged dict holds [key, value] pairs"),
        ('{"$timedelta":[1,2]}', "a timedelta holds [days, seconds, microseconds]"),
        ('{"$timedelta":[1,2,"3"]}', "a timedelta holds [days, seconds, microseconds]"),
        (
            '{"$fail":" "}',
            "Fail(reason) takes a non-empty string saying why the check failed, got ' '",
        ),
        ('{"$set":[[1]]}', "not an exact value: unhashable type: 'list'"),
        ('{"$uuid":"nope"}', "not an exact value: badly formed hexadecimal UUID string"),
        ('{"$bytes":"@@"}', "not an exact value: Only base64 data is allowed"),
        ("NaN", 'not an exact value: bare NaN (encode tags it as {"$float": ...})'),
        ("[-Infinity]", 'not an exact value: bare -Infinity (encode tags it as {"$float": ...})'),
        (
            "cos\nsystem\n(S'echo hi'\ntR.",
            "not an exact value: Expecting value: line 1 column 1 (char 0)",
        ),
    ],
)
def test_a_damaged_or_hostile_text_is_refused_naming_the_fault(text: str, message: str) -> None:
    """decode builds only the types it knows and names what is wrong with anything else."""
    with pytest.raises(ExactFormError) as caught:
        decode(text)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_a_uuid_and_a_datetime_keep_their_type() -> None:
    """A UUID and an aware datetime decode to the same class and value."""
    u = uuid.UUID(int=7)
    when = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert decode(encode([u, when]) or "") == [u, when]
    assert encode(when) == '{"$datetime":"2024-01-02T03:04:05+00:00"}'
