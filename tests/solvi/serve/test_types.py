"""JSON Schema types of request keys (`solvi.serve._types`), read from the annotations of
the parts that read them: each annotation's types, names that do not resolve, and how the
types of several readers meet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from solvi.serve._types import json_types, parameter_types

if TYPE_CHECKING:
    from collections.abc import MutableMapping


class Opaque:
    """A class with no JSON counterpart."""


def _annotated(
    a: int,
    b: float,
    c: str,
    d: bool,
    e: list[int],
    f: dict[str, Any],
    g: Mapping[str, int],
    h: Sequence[str],
    i: int | None,
    j: Optional[str],  # noqa: UP045  # the spelling under test
    k: Any,
    m: set[int],
    n: Opaque,
    o,  # no annotation, on purpose
    p: tuple[int, ...],
) -> None:
    """Parameters of every kind of annotation the schema reads."""


def _unresolved(a: MutableMapping[str, int], b: int | Missing, c: Missing | None) -> None:  # noqa: F821
    """Annotations that name what exists only for type checkers (or nowhere)."""


def test_parameter_types_read_annotations() -> None:
    """Each annotation maps to the JSON types it admits; others constrain nothing."""
    assert parameter_types(_annotated) == {
        "a": frozenset({"integer"}),
        "b": frozenset({"number", "integer"}),
        "c": frozenset({"string"}),
        "d": frozenset({"boolean"}),
        "e": frozenset({"array"}),
        "f": frozenset({"object"}),
        "g": frozenset({"object"}),
        "h": frozenset({"array"}),
        "i": frozenset({"integer", "null"}),
        "j": frozenset({"string", "null"}),
        "k": None,
        "m": None,
        "n": None,
        "o": None,
        "p": frozenset({"array"}),
    }


def test_unresolved_annotations_are_read_by_name() -> None:
    """An annotation that does not resolve is read from its outermost name."""
    assert parameter_types(_unresolved) == {
        "a": frozenset({"object"}),
        "b": None,
        "c": None,
    }


def test_json_types_meet_every_reader() -> None:
    """Readers' types intersect; a conflict or no annotation gives no constraint."""
    integer, number, string = frozenset({"integer"}), frozenset({"number", "integer"}), None
    assert json_types([integer, number]) == ["integer"]
    assert json_types([number, number]) == ["number"]
    assert json_types([number, string]) == ["number"]
    assert json_types([integer, frozenset({"string"})]) is None
    assert json_types([frozenset({"integer", "null"}), frozenset({"string", "null"})]) == ["null"]
    assert json_types([]) is None
