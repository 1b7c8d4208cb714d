"""JSON read back, checked field by field: each refusal names the field and the source."""

from __future__ import annotations

import pytest

from solvi import CheckpointError
from solvi import _fields as check


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: check.fields([], ("a",), "row", "src"), "row must be a JSON object, got 'list'"),
        (
            lambda: check.fields({"a": 1, "b": 2}, ("a", "c"), "row", "src"),
            "row must have exactly the fields a, c (unknown fields b; missing fields c)",
        ),
        (lambda: check.text("", "row.name", "src"), "row.name must be a non-empty string"),
        (lambda: check.number(10**400, "row.x", "src"), "row.x must be a finite number"),
        (lambda: check.number(True, "row.x", "src"), "row.x must be a finite number, got True"),
        (
            lambda: check.count(0, "row.n", "src", least=1),
            "row.n must be a whole number, 1 or more",
        ),
        (
            lambda: check.milliseconds(-1, "row.ms", "src"),
            "row.ms must be a number of milliseconds",
        ),
        (lambda: check.columns({"a": "x"}, "row.w", "src"), "row.w['a'] must be a finite number"),
        (lambda: check.parsed(b"\xff", "src", "a thing"), "src is not a thing: not JSON text"),
        (lambda: check.parsed('{"a": NaN}', "src", "a thing"), "NaN is not a JSON number"),
        (lambda: check.parsed('{"a": 1, "a": 2}', "src", "a thing"), "field 'a' appears twice"),
        (lambda: check.parsed("[" * 100_000, "src", "a thing"), "RecursionError"),
    ],
)
def test_each_refusal_names_the_field_and_its_source(call: object, message: str) -> None:
    """A CheckpointError with `source` set, whose message says where and what."""
    with pytest.raises(CheckpointError) as caught:
        call()  # type: ignore[operator]
    assert message in str(caught.value)
    assert caught.value.source == "src"


def test_what_passes_comes_back_as_its_type() -> None:
    """Numbers come back as floats, columns as a dict of floats, JSON as data."""
    assert check.number(3, "x", "src") == 3.0
    assert check.columns({"a": 1}, "w", "src") == {"a": 1.0}
    assert check.parsed(b'{"a": [1]}', "src", "a thing") == {"a": [1]}
