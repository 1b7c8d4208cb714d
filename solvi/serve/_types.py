"""JSON Schema types of request keys, read from the annotations of the parts that read them.

A part's parameter annotation says what it expects to receive: ``int`` is a JSON
integer, ``list[str]`` an array, ``Mapping[str, Any]`` an object. An annotation
that has no JSON counterpart (a class, ``Any``, a set) or none at all constrains
nothing. Annotations written as strings (``from __future__ import annotations``)
are resolved in the part's module; where that fails, the outermost name of the
annotation is read instead, so ``Mapping[str, Any]`` with ``Mapping`` imported
only for type checking is still an object.
"""

from __future__ import annotations

import ast
import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["json_types", "parameter_types"]

#: What "number" admits in JSON Schema: integers too.
_NUMBER = frozenset({"number", "integer"})
_BY_CLASS: dict[Any, frozenset[str]] = {
    bool: frozenset({"boolean"}),
    int: frozenset({"integer"}),
    float: _NUMBER,
    str: frozenset({"string"}),
    list: frozenset({"array"}),
    tuple: frozenset({"array"}),
    collections.abc.Sequence: frozenset({"array"}),
    collections.abc.MutableSequence: frozenset({"array"}),
    dict: frozenset({"object"}),
    collections.abc.Mapping: frozenset({"object"}),
    collections.abc.MutableMapping: frozenset({"object"}),
    type(None): frozenset({"null"}),
    None: frozenset({"null"}),
}
_BY_NAME: dict[str, frozenset[str]] = {
    "bool": _BY_CLASS[bool],
    "int": _BY_CLASS[int],
    "float": _NUMBER,
    "str": _BY_CLASS[str],
    "list": _BY_CLASS[list],
    "List": _BY_CLASS[list],
    "tuple": _BY_CLASS[list],
    "Tuple": _BY_CLASS[list],
    "Sequence": _BY_CLASS[list],
    "MutableSequence": _BY_CLASS[list],
    "dict": _BY_CLASS[dict],
    "Dict": _BY_CLASS[dict],
    "Mapping": _BY_CLASS[dict],
    "MutableMapping": _BY_CLASS[dict],
    "None": _BY_CLASS[None],
}
_ORDER = ("boolean", "integer", "number", "string", "array", "object", "null")


def _of_type(annotation: Any) -> frozenset[str] | None:
    """The JSON types an evaluated annotation admits, or None when it constrains nothing."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return _union(_of_type(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        annotation = origin
    try:
        return _BY_CLASS.get(annotation)
    except TypeError:  # an unhashable annotation object: nothing known
        return None


def _of_text(node: ast.expr) -> frozenset[str] | None:
    """The JSON types an annotation written as text admits, read from its outermost name."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_of_text(node.left), _of_text(node.right)])
    if isinstance(node, ast.Constant) and node.value is None:
        return _BY_NAME["None"]
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        if outer == "Optional":
            return _union([_of_text(node.slice), _BY_NAME["None"]])
        if outer == "Union" and isinstance(node.slice, ast.Tuple):
            return _union(_of_text(element) for element in node.slice.elts)
        return _BY_NAME.get(outer or "")
    return _BY_NAME.get(_name(node) or "")


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _union(members: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """The types of a union: None (anything) when any member constrains nothing."""
    admitted: set[str] = set()
    for member in members:
        if member is None:
            return None
        admitted |= member
    return frozenset(admitted)


def parameter_types(func: Callable[..., Any]) -> dict[str, frozenset[str] | None]:
    """The JSON types each parameter of `func` admits, by name (None: no constraint)."""
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return {}
    try:
        hints: dict[str, Any] | None = typing.get_type_hints(func)
    except Exception:  # an annotation that does not resolve: read the text instead
        hints = None
    found: dict[str, frozenset[str] | None] = {}
    for name, parameter in parameters.items():
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            found[name] = None
        elif hints is not None and name in hints:
            found[name] = _of_type(hints[name])
        elif isinstance(annotation, str):
            try:
                found[name] = _of_text(ast.parse(annotation, mode="eval").body)
            except SyntaxError:
                found[name] = None
        else:
            found[name] = _of_type(annotation)
    return found


def json_types(readers: Iterable[frozenset[str] | None]) -> list[str] | None:
    """The JSON types a value may have so that every reader accepts it, in a fixed order.

    A reader without a constraint accepts anything; readers that cannot all be
    satisfied at once (``int`` in one part, ``str`` in another) give no constraint
    rather than one no request could meet.
    """
    admitted: frozenset[str] | None = None
    for reader in readers:
        if reader is None:
            continue
        admitted = reader if admitted is None else admitted & reader
    if not admitted:
        return None
    if "number" in admitted:
        admitted = admitted - {"integer"}
    return [t for t in _ORDER if t in admitted]
