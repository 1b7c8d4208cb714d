"""The exceptions solvi raises; each names the place and the fix."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CatalogError",
    "CheckpointError",
    "DuplicateRequestError",
    "MissingRecordError",
    "PlanError",
    "RecordError",
    "RequestError",
    "RequestIdTaken",
    "RouteError",
    "SolviError",
    "StoreError",
]


class SolviError(Exception):
    """Base class of every error solvi raises on purpose."""


class CatalogError(SolviError, ValueError):
    """A part was declared wrongly; raised by the decorator that declared it."""

    def __init__(self, message: str, *, part: str | None = None) -> None:
        super().__init__(message)
        self.part = part


class PlanError(SolviError, LookupError):
    """A question names something the catalog does not have; raised when a System is built."""

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class RequestError(SolviError, ValueError):
    """A request sets what it may not: a hard check, or a fact one relies on."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class CheckpointError(SolviError, ValueError):
    """A heads checkpoint that solvi did not write, or that was changed: refused, unused.

    Attributes:
        source: where the checkpoint came from (a path, or ``store``).
    """

    def __init__(self, message: str, *, source: str) -> None:
        super().__init__(message)
        self.source = source


class RecordError(SolviError, TypeError):
    """A value cannot be written into a decision record."""

    def __init__(self, message: str, *, fact: str | None = None) -> None:
        super().__init__(message)
        self.fact = fact


class RequestIdTaken(SolviError, ValueError):
    """A caller's request id is already in the journal: opened before, by this process
    or by another at the same moment. Nothing of the request ran."""

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message)
        self.request_id = request_id


class StoreError(SolviError):
    """A store cannot be opened or used as asked."""


class DuplicateRequestError(StoreError, ValueError):
    """A response is already stored under this request id."""

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message)
        self.request_id = request_id


class MissingRecordError(StoreError, LookupError):
    """No response is stored under this request id."""

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message)
        self.request_id = request_id


class RouteError(SolviError, LookupError):
    """A `Route` cannot pick a system for a request: its key is missing, or its value unknown.

    Attributes:
        key: the state key the Route reads.
        value: the value the request brought (None when the key is missing).
        known: the values the Route has a system for.
    """

    def __init__(self, message: str, *, key: str, value: Any, known: tuple[Any, ...]) -> None:
        super().__init__(message)
        self.key = key
        self.value = value
        self.known = known


def _closest(name: str, known: Iterable[str], *, cutoff: float = 0.6) -> str:
    """Say which known names look like `name`, for an error message."""
    matches = difflib.get_close_matches(name, list(known), n=3, cutoff=cutoff)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(repr(m) for m in matches) + "?)"


def _finite(value: object) -> bool:
    """A real number a float can hold: no boolean, NaN, infinity or integer past 1.8e308.

    `math.isfinite` raises OverflowError on such an integer instead of saying no.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) <= sys.float_info.max  # False for NaN too


def _message(exc: BaseException) -> str:
    """An exception's message, even when its `__str__` raises (a failing part's
    error must still be recorded, and the request still answered)."""
    try:
        return str(exc)
    except Exception:
        return "<no message: its __str__ raised>"


def _described(exc: BaseException) -> str:
    """``Type: message``, for a Cause or a warning."""
    return f"{type(exc).__name__}: {_message(exc)}"
