"""Name matching (experimental): keys written in other conventions, mapped to a catalog's inputs.

A catalog's inputs are Python parameter names (``monthly_income``). Keys that
come from elsewhere (a JSON body written in JavaScript, a model that extracts
facts from text) spell them ``monthlyIncome``, ``monthly-income``,
``Monthly Income`` or ``MONTHLY_INCOME``, or use another word altogether
(``salary``, declared with ``Catalog(aliases={"salary": "income"})``).
`Aliases` maps such keys back to the inputs, and refuses a key it could read
two ways rather than pick one.

Two names match when they are equal once case, underscores, hyphens and
whitespace are ignored (`normal_form`). An exact input name always names
itself. A declared synonym must name an input and must not be mistakable for
another input; both are checked when the System is built (`PlanError`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from solvi.catalog import Catalog
from solvi.errors import PlanError, RequestError, _closest

__all__ = ["AliasError", "Aliases", "normal_form"]

_SEPARATORS = re.compile(r"[\s_\-]+")


def normal_form(key: str) -> str:
    """The form two spellings of one name share: case-folded, with every underscore,
    hyphen and whitespace removed (``monthlyIncome`` and ``MONTHLY_INCOME`` are both
    ``monthlyincome``)."""
    return _SEPARATORS.sub("", key).casefold()


class AliasError(RequestError):
    """A key that could name more than one input, or two keys that name the same input.

    Attributes:
        key: the key at fault.
        candidates: the names it could be read as (two or more), sorted.
    """

    def __init__(self, message: str, *, key: str, candidates: tuple[str, ...]) -> None:
        super().__init__(message, key=key)
        self.candidates = candidates


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@attrs.frozen
class Aliases:
    """How one catalog's inputs may be spelt: built once, then read per key.

    Build it with `Aliases.of(catalog)`. `match` maps one key, `normalise` a
    whole state.
    """

    catalog: str
    #: the catalog's inputs (the names parts read and no part provides), sorted
    inputs: tuple[str, ...]
    #: declared synonym -> the input it stands for
    synonyms: Mapping[str, str] = attrs.field(converter=_readonly)
    #: normal form -> the inputs that have it (more than one: a key of that form is ambiguous)
    forms: Mapping[str, tuple[str, ...]] = attrs.field(converter=_readonly, repr=False)

    @classmethod
    def of(cls, catalog: Catalog, inputs: Iterable[str] = ()) -> Aliases:
        """The matcher of `catalog`: its inputs and its declared ``aliases=``.

        Args:
            catalog: the catalog.
            inputs: more inputs, e.g. those a System declares with ``inputs=``.

        Raises:
            PlanError: a synonym names no input (a computed fact, or nothing), is
                an input itself, or reads like another input or another synonym
                with a different meaning.
        """
        parts = catalog.parts
        inputs = tuple(sorted({*catalog.inputs, *inputs}))
        computed = {p.provides: p.name for p in parts if p.kind != "extract"}
        by_form: dict[str, list[str]] = {}
        for name in inputs:
            by_form.setdefault(normal_form(name), []).append(name)
        where = f"Catalog({catalog.name!r}, aliases=...)"
        synonyms: dict[str, str] = dict(catalog.aliases)
        claimed: dict[str, tuple[str, str]] = {}  # form -> (synonym, input)
        for synonym, target in synonyms.items():
            if target not in inputs:
                if target in computed:
                    what = f"which part {computed[target]!r} computes"
                else:
                    what = f"which no part reads{_closest(target, inputs)}"
                msg = (
                    f"{where} maps {synonym!r} to {target!r}, {what}; a synonym must name one "
                    f"of the catalog's inputs: {', '.join(inputs) or '(none)'}"
                )
                raise PlanError(msg, name=synonym)
            if synonym in inputs or synonym in computed:
                own = (
                    "an input itself"
                    if synonym in inputs
                    else f"a fact part {computed[synonym]!r} computes"
                )
                msg = (
                    f"{where} declares {synonym!r} as a synonym of {target!r}, but {synonym!r} "
                    f"is {own}; a key {synonym!r} must keep meaning that, so remove "
                    f"the synonym"
                )
                raise PlanError(msg, name=synonym)
            form = normal_form(synonym)
            others = [n for n in by_form.get(form, ()) if n != target]
            if others:
                msg = (
                    f"{where} declares {synonym!r} as a synonym of {target!r}, but it reads "
                    f"like input {others[0]!r} (both are {form!r} once case, '_', '-' and "
                    f"spaces are ignored), so a key spelt like it would have two meanings; "
                    f"choose a synonym that looks like no other input"
                )
                raise PlanError(msg, name=synonym)
            earlier = claimed.get(form)
            if earlier is not None and earlier[1] != target:
                msg = (
                    f"{where} declares {earlier[0]!r} as a synonym of {earlier[1]!r} and "
                    f"{synonym!r} as a synonym of {target!r}; both are {form!r} once case, "
                    f"'_', '-' and spaces are ignored, so a key spelt like them would have two "
                    f"meanings; drop or rename one of them"
                )
                raise PlanError(msg, name=synonym)
            claimed[form] = (synonym, target)
        forms = {form: tuple(names) for form, names in by_form.items()}
        for form, (_, target) in claimed.items():
            forms[form] = (target,)
        return cls(catalog.name, inputs, synonyms, forms)

    def match(self, key: str) -> str:
        """The input `key` names, or `key` itself when it names none.

        An input's exact name and a declared synonym name that input; any
        other key names the input whose `normal_form` it shares.

        Raises:
            AliasError: the key's form is shared by two or more inputs; the
                message names them all.
        """
        if key in self.synonyms:
            return self.synonyms[key]
        found = self.forms.get(normal_form(key))
        if found is None or key in found:
            return key
        if len(found) == 1:
            return found[0]
        listed = " or ".join(repr(n) for n in found)
        msg = (
            f"key {key!r} could be input {listed} of catalog {self.catalog!r} (they are all "
            f"{normal_form(key)!r} once case, '_', '-' and spaces are ignored); send the input's "
            f"exact name"
        )
        raise AliasError(msg, key=key, candidates=found)

    def normalise(self, state: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """`state` with every key renamed to the input it names (see `match`).

        Returns:
            The renamed state (keys in their order) and what was renamed:
            ``{"monthlyIncome": "monthly_income"}``. Keys that name no input
            are kept as they are.

        Raises:
            AliasError: a key is ambiguous, or two keys name the same input
                (both are named: send it once).
        """
        out: dict[str, Any] = {}
        origin: dict[str, str] = {}
        matched: dict[str, str] = {}
        for key, value in state.items():
            name = self.match(key)
            if name in out:
                first = origin[name]
                msg = (
                    f"keys {first!r} and {key!r} both name input {name!r} of catalog "
                    f"{self.catalog!r}; send it once"
                )
                raise AliasError(msg, key=key, candidates=tuple(sorted((first, key))))
            out[name] = value
            origin[name] = key
            if name != key:
                matched[key] = name
        return out, matched
