"""Which keys a request to the server may bring: by default only the catalog's inputs.

A catalog's inputs are the keys no part produces (the parts of its flows, not
its extract parts): what only a request can bring. Any other key names a fact
a part computes, or nothing at all; the server refuses both with 422
``not_an_input`` unless it was built with ``allow_overrides=True``, which
leaves the decision to the System (its own `RequestError` for hard checks and
the facts they read, and its ``overrides=``). Built with ``aliases=True``, it
first reads keys written in other conventions (``monthlyIncome``, a declared
synonym) as the inputs they name (`solvi.aliases`, experimental).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from solvi.aliases import AliasError, Aliases
from solvi.catalog import Part
from solvi.errors import _closest
from solvi.serve._requests import ClientError
from solvi.serve._types import json_types, parameter_types
from solvi.system import System

__all__ = ["ServedKeys"]

#: How many inputs an error lists before it says how many more there are.
_LISTED = 20


def _listing(names: tuple[str, ...]) -> str:
    if not names:
        return "(none: this catalog reads no request key)"
    shown = ", ".join(names[:_LISTED])
    more = len(names) - _LISTED
    return shown if more <= 0 else f"{shown} and {more} more (see /openapi.json)"


@attrs.frozen
class ServedKeys:
    """The keys a served System takes from a request, and what each computed fact is."""

    catalog: str
    #: The catalog's inputs, by name.
    inputs: tuple[str, ...]
    #: Each computed fact, with the parts that produce it ("part 'x'", "hard check 'y'").
    computed: Mapping[str, tuple[str, ...]]
    #: The JSON Schema of each input, from the annotations of the parts that read it.
    schemas: Mapping[str, dict[str, Any]]
    allow_overrides: bool = False
    #: How keys in other conventions are read as inputs (None: they are not).
    aliases: Aliases | None = None

    @classmethod
    def of(
        cls, system: System, *, allow_overrides: bool = False, aliases: bool = False
    ) -> ServedKeys:
        """The keys `system` takes when served (computed once, when the app is built).

        Raises:
            PlanError: with `aliases`, a synonym of the catalog names no input.
        """
        parts = [p for p in system.catalog.parts if p.kind != "extract"]
        computed: dict[str, list[str]] = {}
        for p in parts:
            kind = "hard check" if p.is_hard_check else "part"
            computed.setdefault(p.provides, []).append(f"{kind} {p.name!r}")
        readers: dict[str, list[Part]] = {}
        for p in parts:
            for name in p.inputs:
                if name not in computed:
                    readers.setdefault(name, []).append(p)
        # Declared inputs (System(inputs=...)) may name keys no part reads yet.
        declared = system.inputs if system.inputs is not None else ()
        inputs = tuple(sorted({*system.catalog.inputs, *declared}))
        schemas = {name: _schema(readers.get(name, []), name) for name in inputs}
        return cls(
            catalog=system.name,
            inputs=inputs,
            computed={fact: tuple(names) for fact, names in computed.items()},
            schemas=schemas,
            allow_overrides=allow_overrides,
            aliases=Aliases.of(system.catalog, inputs) if aliases else None,
        )

    def normalise(self, state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str] | None]:
        """The state with its keys read as inputs, and what was renamed (None: the
        server does not match names).

        Raises:
            ClientError: 422 ``ambiguous_key`` naming the key and every input it
                could be, or the two keys that name one input.
        """
        if self.aliases is None:
            return state, None
        try:
            return self.aliases.normalise(state)
        except AliasError as exc:
            raise _ambiguous(exc) from None

    def match(self, key: str) -> str:
        """One key read as the input it names (itself without name matching).

        Raises:
            ClientError: 422 ``ambiguous_key``.
        """
        if self.aliases is None:
            return key
        try:
            return self.aliases.match(key)
        except AliasError as exc:
            raise _ambiguous(exc) from None

    def check(self, keys: Iterable[str]) -> None:
        """Refuse the first key (by name) that is not an input, unless overrides are allowed.

        Raises:
            ClientError: 422 ``not_an_input`` naming the key, what it is, the
                closest input and the two ways to fix the request.
        """
        if self.allow_overrides:
            return
        known = set(self.inputs)
        bad = sorted(k for k in set(keys) if k not in known)
        if not bad:
            return
        key = bad[0]
        producers = self.computed.get(key)
        if producers is None:
            what = f"request key {key!r} is not an input of catalog {self.catalog!r}"
            fix = f"Correct or remove {key!r}"
        else:
            what = (
                f"request key {key!r} is computed by {' or '.join(producers)} of catalog "
                f"{self.catalog!r}, not one of its inputs"
            )
            fix = f"Leave {key!r} out (solvi computes it)"
        msg = (
            f"{what}{_closest(key, self.inputs)}; this server takes only the catalog's "
            f"inputs: {_listing(self.inputs)}. {fix}, or start the server with "
            f"--allow-overrides (asgi(..., allow_overrides=True)) to take every key the "
            f"System takes"
        )
        raise ClientError(422, "not_an_input", msg, key=key, keys=bad)


def _ambiguous(exc: AliasError) -> ClientError:
    return ClientError(422, "ambiguous_key", str(exc), key=exc.key, candidates=list(exc.candidates))


def _schema(readers: list[Part], name: str) -> dict[str, Any]:
    """An input's JSON Schema: the types every part reading it accepts, and who reads it."""
    schema: dict[str, Any] = {}
    types = json_types(parameter_types(p.func).get(name) for p in readers)
    if types is not None:
        schema["type"] = types[0] if len(types) == 1 else types
    if readers:
        schema["description"] = "Read by " + ", ".join(p.name for p in readers) + "."
    else:
        schema["description"] = "Declared in inputs=; no part reads it yet."
    return schema
