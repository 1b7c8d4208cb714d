"""Where a store or a journal lives: paths and URLs read one way for both, and each form
that cannot be read refused with a message listing the forms that can."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from solvi._db.urls import Location, locate

ACCEPTED = (
    "a file path, 'sqlite:///path/to/file.db', or "
    "'postgresql://user@host:port/database' (also 'postgres://')"
)


@pytest.mark.parametrize(
    ("spec", "location"),
    [
        ("decisions.db", Location("sqlite", "decisions.db")),
        ("/var/lib/x.db", Location("sqlite", "/var/lib/x.db")),
        ("sqlite:///data/x.db", Location("sqlite", "data/x.db")),
        ("sqlite:////var/x.db", Location("sqlite", "/var/x.db")),
        (Path("a") / "b.db", Location("sqlite", "a/b.db")),
        ("postgresql://u@h:5432/d", Location("postgresql", "postgresql://u@h:5432/d")),
        (
            "postgres://u@h/d?sslmode=require",
            Location("postgresql", "postgres://u@h/d?sslmode=require"),
        ),
    ],
)
def test_each_accepted_form_is_read(spec: object, location: Location) -> None:
    """Paths, sqlite:/// URLs (three slashes relative, four absolute) and PostgreSQL URLs."""
    assert locate(spec, "store=") == location


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", f"store= cannot be opened from ''; pass {ACCEPTED}"),
        (None, f"store= cannot be opened from None; pass {ACCEPTED}"),
        (42, f"store= cannot be opened from 42; pass {ACCEPTED}"),
        ("sqlite:///", "store= 'sqlite:///' names no file; write sqlite:///path/to/file.db"),
        (
            "mysql://h/d",
            f"store= cannot be opened from 'mysql://h/d': unknown scheme 'mysql'; pass {ACCEPTED}",
        ),
        (
            "sqlite:x.db",
            f"store= cannot be opened from 'sqlite:x.db': unknown scheme 'sqlite'; pass {ACCEPTED}",
        ),
        (
            "sqlite://x.db",
            f"store= cannot be opened from 'sqlite://x.db': unknown scheme 'sqlite'; "
            f"pass {ACCEPTED}",
        ),
    ],
)
def test_what_cannot_be_read_is_refused_listing_the_forms(spec: object, message: str) -> None:
    """The message names the option, what arrived and every form it takes."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        locate(spec, "store=")


def test_the_message_names_the_option_it_came_from() -> None:
    """The same reading serves journal=: the message says journal=."""
    with pytest.raises(ValueError, match=r"^journal= 'sqlite:///' names no file"):
        locate("sqlite:///", "journal=")
