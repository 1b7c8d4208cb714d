"""What a request may set: the catalog's inputs, and the facts no request may bring.

A request's keys are the facts it brings. Bringing a hard check, or a computed fact
a hard check reads (however far back), would skip the part the check relies on, so
such a key is refused unless the System names it in `overrides=`. The check runs
once per key set, when its flow is planned; a cached flow's keys have passed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from solvi.catalog import Catalog
from solvi.errors import RecordError, RequestError, _closest
from solvi.record import to_record_value

__all__ = ["MAX_REQUEST_ID", "RequestGuard", "as_state", "check_request_id", "check_request_value"]

#: the longest request id a caller may give, in characters
MAX_REQUEST_ID = 1000


@attrs.frozen
class RequestGuard:
    """The facts a request may not set, each with the hard check it would bypass."""

    guarded: Mapping[str, str]
    overrides: frozenset[str]

    @classmethod
    def of(cls, catalog: Catalog, overrides: Iterable[str] = ()) -> RequestGuard:
        """The guard of `catalog`, allowing `overrides`.

        Raises:
            ValueError: an override names nothing a hard check relies on.
        """
        guarded = catalog.guarded_facts()
        allowed = frozenset(overrides)
        unknown = sorted(allowed - guarded.keys())
        if unknown:
            msg = (
                f"overrides= names {', '.join(map(repr, unknown))}, which no hard check "
                f"relies on{_closest(unknown[0], guarded)}; list only hard checks and the "
                f"facts they read"
            )
            raise ValueError(msg)
        return cls(guarded, allowed)

    def check(self, keys: Iterable[str]) -> None:
        """Raise for the first key (by name) that would set a guarded fact.

        Raises:
            RequestError: naming the key, the check it would bypass and the fix.
        """
        bad = sorted(set(keys) & self.guarded.keys() - self.overrides)
        if not bad:
            return
        key = bad[0]
        check = self.guarded[key]
        what = f"the hard check {check!r}" if key == check else f"a fact hard check {check!r} reads"
        msg = (
            f"request key {key!r} sets {what}, which would bypass that check; leave it out "
            f"of the request (solvi computes it), or allow it with "
            f"System(..., overrides=[{key!r}]) where the caller is trusted to set it"
        )
        raise RequestError(msg, key=key)


def check_request_value(key: str, value: object) -> Any:
    """A request value's record form, taken before anything runs: the record then shows
    the input as it was asked, whatever later becomes of the caller's objects.

    Raises:
        RecordError: the record could not hold the value; naming the key and the
            path inside it.
    """
    try:
        return to_record_value(value, f"request key {key!r}")
    except RecordError as exc:
        raise RecordError(str(exc), fact=key) from None


def check_request_id(request_id: object) -> None:
    """Refuse a caller's request id that a store or a journal could not keep as it is.

    Raises:
        RequestError: it is not text of 1 to `MAX_REQUEST_ID` characters that UTF-8
            encodes (a lone surrogate does not) without a NUL (PostgreSQL text has none).
    """
    if isinstance(request_id, str) and 0 < len(request_id) <= MAX_REQUEST_ID:
        try:
            request_id.encode("utf-8")
        except UnicodeEncodeError:
            problem = "holds a lone surrogate, which UTF-8 cannot encode"
        else:
            if "\x00" not in request_id:
                return
            problem = "holds a NUL character"
    elif isinstance(request_id, str):
        problem = f"has {len(request_id)} characters"
    else:
        problem = f"is a {type(request_id).__name__}"
    shown = repr(request_id) if len(repr(request_id)) <= 60 else repr(request_id)[:57] + "..."
    msg = f"request_id {shown} {problem}; pass text of 1 to {MAX_REQUEST_ID} characters"
    raise RequestError(msg, key="request_id")


def as_state(state: Any) -> dict[str, Any]:
    """A request's state as a new dict of string keys.

    Raises:
        TypeError: `state` is not a mapping, or a key is not a string.
    """
    if not isinstance(state, Mapping):
        msg = (
            f"a request's state must be a mapping of fact names to values, got "
            f"{type(state).__name__}"
        )
        raise TypeError(msg)
    bad = [k for k in state if not isinstance(k, str)]
    if bad:
        msg = f"a request's keys must be strings, got {bad[0]!r}"
        raise TypeError(msg)
    return dict(state)
