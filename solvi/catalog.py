"""The catalog: decorated parts that compute facts, gate questions and answer them."""

from __future__ import annotations

import hashlib
import inspect
import keyword
import types
import typing
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeVar, overload

import attrs

from solvi.errors import CatalogError, _finite

__all__ = ["Catalog", "Part", "PartKind", "inputs_of"]

PartKind = Literal["fn", "check", "rule", "extract"]
F = TypeVar("F", bound=Callable[..., Any])


def _not_a_dict(func: Any) -> str | None:
    """An extract's return annotation, when it surely allows no dict (else None)."""
    try:
        hint = typing.get_type_hints(func).get("return", Any)
    except Exception:  # an unresolvable annotation says nothing either way
        return None
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    for member in typing.get_args(hint) if union else (hint,):
        cls = typing.get_origin(member) or member
        if cls is Any or cls is object or not isinstance(cls, type):
            return None
        if issubclass(cls, Mapping):
            return None
    return hint.__qualname__ if isinstance(hint, type) else repr(hint).replace("typing.", "")


def _where(func: Callable[..., Any]) -> str:
    code = getattr(func, "__code__", None)
    if code is None:
        return getattr(func, "__module__", "?") or "?"
    return f"{code.co_filename}:{code.co_firstlineno}"


@attrs.frozen
class Part:
    """One declared part: a function, what it reads, what it provides and how it runs.

    Everything the executor needs is computed here once, when the part is
    declared: its inputs (the parameter names), whether it is async, its fact.
    """

    name: str
    kind: PartKind
    func: Callable[..., Any] = attrs.field(eq=False, repr=False)
    provides: str
    inputs: tuple[str, ...]
    index: int
    cost: float | None = None
    timeout: float | None = None
    blocking: bool = False
    hard: bool = False
    idempotent: bool = False
    is_async: bool = False
    where: str = attrs.field(default="?", eq=False, repr=False)

    @property
    def is_hard_check(self) -> bool:
        """Whether a False value from this part settles the questions it governs."""
        return self.kind == "check" and self.hard


def inputs_of(parts: Iterable[Part]) -> tuple[str, ...]:
    """The names `parts` (extract parts aside) read that none of them provides."""
    flow_parts = [p for p in parts if p.kind != "extract"]
    produced = {p.provides for p in flow_parts}
    return tuple(dict.fromkeys(i for p in flow_parts for i in p.inputs if i not in produced))


def _synonyms(catalog: str, aliases: Mapping[str, str] | None) -> Mapping[str, str]:
    """`aliases=` checked for shape: other names (any non-empty text) for input names.

    Whether each names an input is known only once every part is declared, so
    `solvi.aliases.Aliases.of` checks that when the System is built.
    """
    if aliases is None:
        return MappingProxyType({})
    where = f"Catalog({catalog!r}, aliases=...)"
    if not isinstance(aliases, Mapping):
        msg = (
            f"{where} takes a dict of synonym -> input name, e.g. {{'salary': 'income'}}, got "
            f"{type(aliases).__name__}"
        )
        raise CatalogError(msg)
    for synonym, target in aliases.items():
        if not isinstance(synonym, str) or not synonym.strip():
            msg = f"{where}: a synonym must be a non-empty string, got {synonym!r}"
            raise CatalogError(msg)
        if not isinstance(target, str) or not target.isidentifier():
            msg = (
                f"{where} maps {synonym!r} to {target!r}; map each synonym to an input's name "
                f"(a parameter name of the parts that read it)"
            )
            raise CatalogError(msg)
    return MappingProxyType(dict(aliases))


class Catalog:
    """A named, ordered collection of parts, filled by its decorators.

    Declaration order matters: producers of one fact are tried in it, and when
    several hard checks fail, the first declared decides.

    Args:
        name: the catalog's name, in records and stores.
        aliases: other names of the catalog's inputs (``{"salary": "income"}``),
            matched by `solvi.aliases` (experimental) for `ask_text` and, when
            enabled, `solvi serve`.

    Raises:
        CatalogError: the name is empty, or `aliases` is not a dict of
            non-empty synonyms to input names.
    """

    def __init__(self, name: str, *, aliases: Mapping[str, str] | None = None) -> None:
        if not isinstance(name, str) or not name:
            msg = f"a catalog needs a non-empty name, got {name!r}"
            raise CatalogError(msg)
        self.name = name
        #: synonyms of the catalog's inputs (``{"salary": "income"}``), for `solvi.aliases`
        self.aliases: Mapping[str, str] = _synonyms(name, aliases)
        self._parts: list[Part] = []
        self._by_name: dict[str, Part] = {}

    def __repr__(self) -> str:
        return f"Catalog({self.name!r}, {len(self._parts)} parts)"

    def __iter__(self) -> Iterator[Part]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def parts(self) -> tuple[Part, ...]:
        """The parts in declaration order."""
        return tuple(self._parts)

    def part(self, name: str) -> Part:
        """Return the part called `name`.

        Raises:
            KeyError: no part has that name.
        """
        return self._by_name[name]

    @property
    def version(self) -> str:
        """A short digest of the parts' names, kinds, inputs and outputs.

        Two catalogs with the same shape have the same version; a stored record
        from another version is not comparable with a run of this one.
        """
        digest = hashlib.sha256()
        for p in self._parts:
            line = f"{p.name}|{p.kind}|{p.provides}|{','.join(p.inputs)}|{p.hard}\n"
            digest.update(line.encode())
        return digest.hexdigest()[:16]

    @property
    def inputs(self) -> tuple[str, ...]:
        """The request keys: names parts read that no part provides, in first-read order.

        Extract parts are left out: they turn text into facts and are not part of a flow.
        """
        return inputs_of(self._parts)

    def guarded_facts(self) -> dict[str, str]:
        """Each fact a request must not set, with the first hard check it would bypass:
        the hard checks themselves, and every computed fact one of them reads, however
        far back (a request that brings it skips the part a hard check relies on)."""
        producers: dict[str, list[Part]] = {}
        for p in self._parts:
            if p.kind != "extract":
                producers.setdefault(p.provides, []).append(p)
        guarded: dict[str, str] = {}
        for check in self._parts:
            if not check.is_hard_check:
                continue
            todo = [check.provides]
            while todo:
                fact = todo.pop()
                if fact in guarded or fact not in producers:
                    continue  # seen, or a request key: nothing computes it
                guarded[fact] = check.name
                todo.extend(i for p in producers[fact] for i in p.inputs)
        return guarded

    # -- decorators -------------------------------------------------------

    @overload
    def fn(self, func: F, /) -> F: ...
    @overload
    def fn(
        self,
        /,
        *,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
        idempotent: bool = False,
    ) -> Callable[[F], F]: ...
    def fn(
        self,
        func: F | None = None,
        /,
        *,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
        idempotent: bool = False,
    ) -> F | Callable[[F], F]:
        """Declare a part that computes a fact (its name, or `provides`).

        Args:
            provides: the fact it computes; several parts may provide one fact
                and are then alternatives, tried in declaration order.
            cost: expected run time in ms, a prior for cost-based planning.
            timeout: seconds after which the call is abandoned.
            blocking: a sync part that must run in a worker thread under `aask`.
            idempotent: safe to run again after a crash interrupted it.

        Raises:
            CatalogError: the function cannot be a part (see the message).
        """
        return self._declare(
            "fn",
            func,
            provides=provides,
            cost=cost,
            timeout=timeout,
            blocking=blocking,
            idempotent=idempotent,
        )

    @overload
    def check(self, func: F, /) -> F: ...
    @overload
    def check(
        self,
        /,
        *,
        hard: bool = False,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
        idempotent: bool = False,
    ) -> Callable[[F], F]: ...
    def check(
        self,
        func: F | None = None,
        /,
        *,
        hard: bool = False,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
        idempotent: bool = False,
    ) -> F | Callable[[F], F]:
        """Declare a yes/no gate; its value is stored as a bool.

        A *hard* check that is False settles every question whose flow holds
        it: forced to the question's `forced` value, or abstained.

        Raises:
            CatalogError: the function cannot be a part (see the message).
        """
        return self._declare(
            "check",
            func,
            provides=provides,
            cost=cost,
            timeout=timeout,
            blocking=blocking,
            hard=hard,
            idempotent=idempotent,
        )

    @overload
    def rule(self, func: F, /) -> F: ...
    @overload
    def rule(
        self,
        /,
        *,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
    ) -> Callable[[F], F]: ...
    def rule(
        self,
        func: F | None = None,
        /,
        *,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
    ) -> F | Callable[[F], F]:
        """Declare a rule: the part that answers the question of the same name.

        Raises:
            CatalogError: the rule reads nothing, or the function cannot be a part.
        """
        return self._declare(
            "rule", func, provides=provides, cost=cost, timeout=timeout, blocking=blocking
        )

    @overload
    def extract(self, func: F, /) -> F: ...
    @overload
    def extract(
        self, /, *, cost: float | None = None, timeout: float | None = None, blocking: bool = False
    ) -> Callable[[F], F]: ...
    def extract(
        self,
        func: F | None = None,
        /,
        *,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
    ) -> F | Callable[[F], F]:
        """Declare a part that turns text into facts (a dict), used by `ask_text`.

        An extract reads ``text`` and, if it must, facts that extracts declared
        before it give; it returns a dict of facts (sync or ``async def``).

        Args:
            cost: expected run time in ms.
            timeout: seconds after which the call is abandoned (a safeguard).
            blocking: a sync extract that must run in a worker thread under `aask_text`.

        Raises:
            CatalogError: the function cannot be a part, reads nothing, reads a
                fact a part computes, reads something other than ``text`` with no
                extract before it, yields instead of returning, or is annotated to
                return something other than a dict.
        """
        options: dict[str, Any] = {"cost": cost, "timeout": timeout, "blocking": blocking}
        if func is None:

            def decorate(f: F) -> F:
                self._check_extract(f)
                return self._add("extract", f, **options)

            return decorate
        self._check_extract(func)
        return self._add("extract", func, **options)

    def _check_extract(self, func: Any) -> None:
        """Refuse, before it is declared, an extract that could never work."""
        if isinstance(func, type) or not callable(func):
            return  # _add says what is wrong with it
        name = getattr(func, "__name__", repr(func))
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            msg = (
                f"extract {name!r} is a generator (it yields); an extract returns one dict of "
                f"facts, so use return instead of yield"
            )
            raise CatalogError(msg, part=name)
        try:
            params = [
                p
                for p in inspect.signature(func).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):
            return  # _add reports an unreadable signature
        if not params:
            msg = (
                f"extract {name!r} reads nothing; an extract reads the request's text, so give "
                f"it a parameter named text: def {name}(text) -> dict"
            )
            raise CatalogError(msg, part=name)
        computed = {p.provides: p.name for p in self._parts if p.kind != "extract"}
        earlier = any(p.kind == "extract" for p in self._parts)
        for param in params:
            if param.name == "text":
                continue
            if param.name in computed:
                msg = (
                    f"extract {name!r} reads {param.name!r}, which part "
                    f"{computed[param.name]!r} computes; extracts run before the flow, so an "
                    f"extract reads only text and facts earlier extracts give (read "
                    f"{param.name!r} in a fn part instead)"
                )
                raise CatalogError(msg, part=name)
            if not earlier:
                msg = (
                    f"extract {name!r} reads {param.name!r}, but no extract is declared before "
                    f"it to give that; an extract reads text and facts earlier extracts give, "
                    f"so declare the extract that finds {param.name!r} first"
                )
                raise CatalogError(msg, part=name)
        returns = _not_a_dict(func)
        if returns is not None:
            msg = (
                f"extract {name!r} is annotated to return {returns}; an extract returns a dict "
                f"of facts (annotate it -> dict[str, Any])"
            )
            raise CatalogError(msg, part=name)

    # -- validation -------------------------------------------------------

    def _declare(self, kind: PartKind, func: F | None, **options: Any) -> F | Callable[[F], F]:
        if func is None:

            def decorate(f: F) -> F:
                return self._add(kind, f, **options)

            return decorate
        return self._add(kind, func, **options)

    def _add(
        self,
        kind: PartKind,
        func: F,
        *,
        provides: str | None = None,
        cost: float | None = None,
        timeout: float | None = None,
        blocking: bool = False,
        hard: bool = False,
        idempotent: bool = False,
    ) -> F:
        decorator = f"@{kind} (catalog {self.name!r})"
        if isinstance(func, type) or not callable(func):
            msg = (
                f"{decorator} needs a function, got {func!r} of type {type(func).__name__}; "
                f"decorate a def (or async def) whose parameters name the facts it reads"
            )
            raise CatalogError(
                msg,
            )
        name = getattr(func, "__name__", None)
        if not isinstance(name, str) or not name.isidentifier():
            msg = (
                f"{decorator} needs a named function, got {func!r}; wrap it in a def whose "
                f"parameters name the facts it reads"
            )
            raise CatalogError(msg)
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            # A generator object is truthy: as a check it would pass every request.
            msg = (
                f"{decorator}: {name!r} is a generator (it yields); a part returns its value "
                f"once, so use return instead of yield"
            )
            raise CatalogError(msg, part=name)
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            msg = f"{decorator} cannot read the parameters of {name!r}: {exc}"
            raise CatalogError(msg, part=name) from exc
        inputs: list[str] = []
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                msg = (
                    f"part {name!r} takes *{param.name}; a part's parameters must each name "
                    f"one fact or request key, so list them explicitly"
                )
                raise CatalogError(
                    msg,
                    part=name,
                )
            if param.kind is param.KEYWORD_ONLY:
                msg = (
                    f"part {name!r} has keyword-only parameter {param.name!r}; parts are called "
                    f"positionally, so drop the '*' before it"
                )
                raise CatalogError(
                    msg,
                    part=name,
                )
            if param.default is not param.empty:
                # Every parameter is a fact the flow must have before the call: a
                # default would never be used, and the part would wait for the key.
                msg = (
                    f"part {name!r} gives parameter {param.name!r} a default, which is never "
                    f"used: each parameter names a fact the part needs; drop the default, "
                    f"or keep the value inside the part"
                )
                raise CatalogError(msg, part=name)
            inputs.append(param.name)
        if kind == "rule" and not inputs:
            msg = (
                f"rule {name!r} reads nothing; a rule answers from facts, so give it at least "
                f"one parameter naming a fact"
            )
            raise CatalogError(
                msg,
                part=name,
            )
        if name in self._by_name:
            first = self._by_name[name]
            msg = (
                f"part {name!r} is declared twice in catalog {self.name!r}: first at "
                f"{first.where}, again at {_where(func)}; rename one of them (use provides= "
                f"to make both produce the same fact)"
            )
            raise CatalogError(
                msg,
                part=name,
            )
        fact = provides if provides is not None else name
        if not isinstance(fact, str) or not fact.isidentifier():
            msg = f"part {name!r}: provides= must be a fact name (an identifier), got {fact!r}"
            raise CatalogError(
                msg,
                part=name,
            )
        if keyword.iskeyword(fact) or unicodedata.normalize("NFKC", fact) != fact:
            # No parameter can read it: Python reserves the word, or reads the name as
            # its normal form (the ligature of "file" as "file").
            read_as = unicodedata.normalize("NFKC", fact)
            why = "is a Python keyword" if keyword.iskeyword(fact) else f"reads as {read_as!r}"
            msg = (
                f"part {name!r}: provides={fact!r} {why}, so no part's parameter can read "
                f"it; choose another name"
            )
            raise CatalogError(msg, part=name)
        if fact in inputs:
            msg = (
                f"part {name!r} reads the fact it provides ({fact!r}); a part cannot depend "
                f"on its own output"
            )
            raise CatalogError(
                msg,
                part=name,
            )
        if cost is not None and (not _finite(cost) or cost < 0):
            msg = f"part {name!r}: cost= must be a finite number of ms >= 0, got {cost!r}"
            raise CatalogError(
                msg,
                part=name,
            )
        if timeout is not None and (not _finite(timeout) or timeout <= 0):
            msg = f"part {name!r}: timeout= must be a positive number of seconds, got {timeout!r}"
            raise CatalogError(
                msg,
                part=name,
            )
        is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
            getattr(func, "__call__", None)  # noqa: B004 - an object with an async __call__
        )
        part = Part(
            name=name,
            kind=kind,
            func=func,
            provides=fact,
            inputs=tuple(inputs),
            index=len(self._parts),
            cost=None if cost is None else float(cost),
            timeout=None if timeout is None else float(timeout),
            blocking=bool(blocking),
            hard=bool(hard),
            idempotent=bool(idempotent),
            is_async=is_async,
            where=_where(func),
        )
        self._parts.append(part)
        self._by_name[name] = part
        return func
