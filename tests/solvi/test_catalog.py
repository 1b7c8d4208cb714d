"""Declaring parts: decorators, options and the mistakes they catch."""

from __future__ import annotations

from typing import Any

import pytest

from solvi import Catalog, CatalogError


def test_bare_and_configured_decorators_return_the_function() -> None:
    """Decorators work bare and with options, and hand back the function unchanged."""
    cat = Catalog("c")

    def policy(policy_id: str) -> str:
        return policy_id

    assert cat.fn(policy) is policy

    @cat.fn(provides="score", cost=5, timeout=2, blocking=True)
    def model(claim: dict[str, int]) -> int:
        return 1

    part = cat.part("model")
    assert (part.provides, part.inputs, part.cost, part.timeout, part.blocking) == (
        "score",
        ("claim",),
        5.0,
        2.0,
        True,
    )
    assert model({"a": 1}) == 1


def test_inputs_are_parameter_names_and_async_is_detected() -> None:
    """A part's inputs are its parameter names; async def parts are marked async."""
    cat = Catalog("c")

    @cat.check(hard=True)
    async def in_force(policy: object, claim: object) -> bool:
        return True

    part = cat.part("in_force")
    assert part.inputs == ("policy", "claim")
    assert part.is_async
    assert part.is_hard_check
    assert part.kind == "check"


def test_duplicate_part_names_are_rejected_naming_both_places() -> None:
    """Declaring a name twice names both definitions and the fix."""
    cat = Catalog("c")

    @cat.fn
    def points(claim: object) -> int:
        return 1

    with pytest.raises(CatalogError, match=r"'points' is declared twice.*provides="):

        @cat.fn
        def points(claim: object) -> int:
            return 2


def test_rule_without_parameters_is_rejected() -> None:
    """A rule must read at least one fact."""
    cat = Catalog("c")
    with pytest.raises(CatalogError, match="rule 'approve' reads nothing"):

        @cat.rule
        def approve() -> bool:
            return True


@pytest.mark.parametrize("thing", [42, "name", int])
def test_check_of_something_that_is_not_a_function_is_rejected(thing: object) -> None:
    """Only functions can be parts."""
    cat = Catalog("c")
    with pytest.raises(CatalogError, match="needs a function"):
        cat.check(thing)  # type: ignore[call-overload]  # the wrong type is the point


def test_star_args_and_keyword_only_parameters_are_rejected() -> None:
    """Every input must be a named positional parameter."""
    cat = Catalog("c")
    with pytest.raises(CatalogError, match=r"takes \*args"):

        @cat.fn
        def a(*args: int) -> int:
            return 0

    with pytest.raises(CatalogError, match="keyword-only"):

        @cat.fn
        def b(x: int, *, y: int) -> int:
            return 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cost": -1}, "cost= must be"),
        ({"cost": float("nan")}, "cost= must be"),
        ({"cost": 10**400}, "cost= must be a finite number"),
        ({"timeout": 0}, "timeout= must be"),
        ({"timeout": -(10**400)}, "timeout= must be a positive number"),
        ({"provides": "not a name"}, "provides= must be"),
        ({"provides": "class"}, "provides='class' is a Python keyword"),
        ({"provides": "\ufb01le"}, "reads as 'file', so no part's parameter can read it"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, object], message: str) -> None:
    """Costs, timeouts and fact names are validated when declared."""
    cat = Catalog("c")

    def part(x: int) -> int:
        return x

    with pytest.raises(CatalogError, match=message):
        cat.fn(**options)(part)  # type: ignore[call-overload]  # wrong values on purpose


def test_a_part_cannot_read_its_own_fact() -> None:
    """A self-reading part is a one-part cycle, rejected at once."""
    cat = Catalog("c")
    with pytest.raises(CatalogError, match="reads the fact it provides"):

        @cat.fn(provides="x")
        def grow(x: int) -> int:
            return x


def test_version_follows_the_catalog_shape() -> None:
    """Two catalogs of the same shape share a version; another shape changes it."""

    def build(extra: bool) -> Catalog:
        cat = Catalog("c")

        @cat.fn
        def a(k: int) -> int:
            return k

        if extra:

            @cat.fn
            def b(a: int) -> int:
                return a

        return cat

    assert build(False).version == build(False).version != build(True).version


@pytest.mark.parametrize("kind", ["fn", "check", "rule"])
def test_a_generator_is_refused_for_every_kind_of_part(kind: str) -> None:
    """A generator object is truthy: a hard check that yields would pass every request.
    Every kind of part refuses a generator or an async generator when declared."""
    cat = Catalog("g")

    def adult(age: int) -> Any:
        yield age >= 18

    async def also(age: int) -> Any:
        yield age >= 18

    decorate = getattr(cat, kind)
    for func in (adult, also):
        with pytest.raises(CatalogError, match=r"is a generator \(it yields\); a part returns"):
            decorate(func)


def test_a_default_is_refused_since_it_would_never_be_used() -> None:
    """`def total(a, b=3)` made `b` a required key without a word: every parameter is
    a fact the part waits for, so a default is refused, naming the parameter."""
    cat = Catalog("d")

    def total(a: int, b: int = 3) -> int:
        return a + b

    with pytest.raises(CatalogError, match="part 'total' gives parameter 'b' a default"):
        cat.fn(total)
