"""Where a store or a journal lives, from what a user writes: one reading for both.

A file path or ``sqlite:///path`` is a SQLite file (``sqlite:///data/x.db`` the
relative path ``data/x.db``, ``sqlite:////var/x.db`` the absolute ``/var/x.db``);
``postgresql://...`` (or ``postgres://...``) a PostgreSQL database.
"""

from __future__ import annotations

import os
from typing import Literal

import attrs

__all__ = ["Location", "locate"]

ACCEPTED = (
    "a file path, 'sqlite:///path/to/file.db', or "
    "'postgresql://user@host:port/database' (also 'postgres://')"
)


@attrs.frozen
class Location:
    """A SQLite file's path, or a PostgreSQL connection string."""

    kind: Literal["sqlite", "postgresql"]
    target: str


def locate(spec: object, what: str) -> Location:
    """Read `spec` (a path or URL) for `what` (``"store="``, ``"journal="``).

    Raises:
        ValueError: `spec` is none of the accepted forms; the message says which are.
    """
    if isinstance(spec, os.PathLike):
        return Location("sqlite", str(os.fspath(spec)))
    if not isinstance(spec, str) or not spec:
        msg = f"{what} cannot be opened from {spec!r}; pass {ACCEPTED}"
        raise ValueError(msg)
    if spec.startswith(("postgresql://", "postgres://")):
        return Location("postgresql", spec)
    if spec.startswith("sqlite:///"):
        path = spec[len("sqlite:///") :]
        if not path:
            msg = f"{what} {spec!r} names no file; write sqlite:///path/to/file.db"
            raise ValueError(msg)
        return Location("sqlite", path)
    if "://" in spec or spec.startswith("sqlite:"):
        scheme = spec.split(":", 1)[0]
        msg = f"{what} cannot be opened from {spec!r}: unknown scheme {scheme!r}; pass {ACCEPTED}"
        raise ValueError(msg)
    return Location("sqlite", spec)
