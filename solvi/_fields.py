"""JSON data read back (checkpoints, the learned order) checked field by field.

Each check names the field at fault (`where`) and the file or row it came from
(`source`) in a `CheckpointError`; the reader that calls them adds what to do.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from solvi.errors import CheckpointError, _finite

__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "columns",
    "count",
    "fields",
    "listed",
    "milliseconds",
    "number",
    "parsed",
    "refuse",
    "text",
]

#: the largest checkpoint (or stored learned order) read: far above any real one
MAX_CHECKPOINT_BYTES = 16_000_000


def refuse(what: str, got: Any, source: str) -> NoReturn:
    shown = repr(got)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    msg = f"{what}, got {shown}"
    raise CheckpointError(msg, source=source)


def fields(data: Any, names: tuple[str, ...], where: str, source: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        refuse(f"{where} must be a JSON object", type(data).__name__, source)
    keys = set(data)
    if keys != set(names):
        extra, missing = sorted(keys - set(names)), sorted(set(names) - keys)
        said = "; ".join(
            part
            for part in (
                f"unknown fields {', '.join(map(str, extra))}" if extra else "",
                f"missing fields {', '.join(missing)}" if missing else "",
            )
            if part
        )
        refuse(
            f"{where} must have exactly the fields {', '.join(names)} ({said})",
            sorted(keys, key=str),
            source,
        )
    return data


def listed(value: Any, where: str, source: str) -> list[Any]:
    if not isinstance(value, list):
        refuse(f"{where}: expected a JSON list", type(value).__name__, source)
    return value


def text(value: Any, where: str, source: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        refuse(f"{where} must be a non-empty string of at most 200 characters", value, source)
    return value


def number(value: Any, where: str, source: str) -> float:
    if not _finite(value):
        refuse(f"{where} must be a finite number", value, source)
    return float(value)


def columns(value: Any, where: str, source: str) -> dict[str, float]:
    if not isinstance(value, dict):
        refuse(f"{where} must be a JSON object", type(value).__name__, source)
    return {column: number(v, f"{where}[{column!r}]", source) for column, v in value.items()}


def count(value: Any, where: str, source: str, *, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        refuse(f"{where} must be a whole number, {least} or more", value, source)
    return value


def milliseconds(value: Any, where: str, source: str) -> float:
    found = number(value, where, source)
    if found < 0:
        refuse(f"{where} must be a number of milliseconds, 0 or more", value, source)
    return found


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            msg = f"field {key!r} appears twice"
            raise ValueError(msg)
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    msg = f"{name} is not a JSON number"
    raise ValueError(msg)


def parsed(data: bytes | str, source: str, kind: str) -> Any:
    """JSON data only (no NaN, no field twice), from at most `MAX_CHECKPOINT_BYTES`."""
    if len(data) > MAX_CHECKPOINT_BYTES:
        refuse(
            f"{source}: {kind} must be at most {MAX_CHECKPOINT_BYTES} bytes", "a larger one", source
        )
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = f"{source} is not {kind}: not JSON text ({type(exc).__name__}: {str(exc)[:120]})"
        raise CheckpointError(msg, source=source) from None
