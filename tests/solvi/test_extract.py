"""The `extract` decorator and the basics of `ask_text`: facts from text feed the flow."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import anyio
import pytest

from solvi import Catalog, CatalogError, PlanError, System


def _catalog() -> Catalog:
    cat = Catalog("letters")

    @cat.extract
    def amount_from_letter(text: str) -> dict[str, int]:
        match = re.search(r"(\d+) EUR", text)
        return {"amount": int(match.group(1))} if match else {}

    @cat.rule
    def approve(amount: int) -> bool:
        return amount < 1_000

    return cat


def test_extracted_facts_feed_the_flow() -> None:
    """Facts an extract part finds in the text are the request's keys."""
    res = System(_catalog()).ask_text("Please refund 250 EUR for the broken phone.")
    assert res["approve"].value is True
    assert res.input["amount"] == 250
    assert res.input["text"] == "Please refund 250 EUR for the broken phone."
    assert res.flow.skipped == {}


def test_text_without_the_fact_abstains() -> None:
    """When the text lacks a fact, the question abstains naming what is missing."""
    res = System(_catalog()).ask_text("Please call me back.")
    assert res["approve"].status == "abstained"
    assert res["approve"].reason == "inputs missing: amount"
    assert res["approve"].guard == "inputs"


def test_an_extract_that_returns_no_dict_is_a_safeguard() -> None:
    """An extract returning something else is an error safeguard naming what it returned."""
    cat = Catalog("bad")

    @cat.extract
    def words(text: str) -> Any:
        return text.split()

    @cat.rule
    def anything(count: int) -> bool:
        return True

    res = System(cat).ask_text("a b")
    assert [(s.kind, s.part, s.message) for s in res.safeguards] == [
        ("error", "words", "returned list, not a dict of facts")
    ]
    assert res["anything"].reason == (
        "inputs missing: count (no extract gave it; words returned list, not a dict of facts)"
    )
    assert res["anything"].guard == "error"


def test_decorator_refuses_an_extract_that_reads_nothing() -> None:
    """An extract without parameters cannot read the text."""
    cat = Catalog("c")
    with pytest.raises(CatalogError) as caught:

        @cat.extract
        def nothing() -> dict[str, int]:
            return {}

    assert str(caught.value) == (
        "extract 'nothing' reads nothing; an extract reads the request's text, so give it a "
        "parameter named text: def nothing(text) -> dict"
    )
    assert "nothing" not in cat


def test_decorator_refuses_a_first_extract_reading_something_else() -> None:
    """With no extract before it, nothing could give the fact it reads."""
    cat = Catalog("c")
    with pytest.raises(CatalogError) as caught:

        @cat.extract(timeout=1.0)
        def currency(text: str, amount: int) -> dict[str, str]:
            return {}

    assert str(caught.value) == (
        "extract 'currency' reads 'amount', but no extract is declared before it to give "
        "that; an extract reads text and facts earlier extracts give, so declare the extract "
        "that finds 'amount' first"
    )


def test_decorator_refuses_an_extract_reading_a_computed_fact() -> None:
    """Extracts run before the flow, so a fact a part computes is never there for them."""
    cat = Catalog("c")

    @cat.fn
    def score(amount: int) -> int:
        return amount

    with pytest.raises(CatalogError) as caught:

        @cat.extract
        def needs_score(text: str, score: int) -> dict[str, int]:
            return {}

    assert str(caught.value) == (
        "extract 'needs_score' reads 'score', which part 'score' computes; extracts run "
        "before the flow, so an extract reads only text and facts earlier extracts give (read "
        "'score' in a fn part instead)"
    )


def test_a_computed_fact_declared_later_is_a_plan_error() -> None:
    """A part declared after the extract that computes what it reads fails the System."""
    cat = Catalog("c")

    @cat.extract
    def amounts(text: str) -> dict[str, int]:
        return {}

    @cat.extract
    def needs_score(text: str, score: int) -> dict[str, int]:
        return {}

    @cat.fn
    def score(amount: int) -> int:
        return amount

    with pytest.raises(PlanError, match="extract 'needs_score' reads 'score', which part"):
        System(cat)


def test_decorator_refuses_generators_and_non_dict_annotations() -> None:
    """A generator, or an extract annotated to return no dict, could never give facts."""
    cat = Catalog("c")
    with pytest.raises(CatalogError, match="is a generator \\(it yields\\)"):

        @cat.extract
        def words(text: str) -> Any:
            yield from text.split()

    with pytest.raises(CatalogError) as caught:

        @cat.extract
        def listed(text: str) -> list[str]:
            return []

    assert str(caught.value) == (
        "extract 'listed' is annotated to return list[str]; an extract returns a dict of "
        "facts (annotate it -> dict[str, Any])"
    )

    @cat.extract
    def maybe(text: str) -> dict[str, int] | None:
        return {}

    assert "maybe" in cat


def test_a_part_computing_text_is_a_plan_error() -> None:
    """ask_text sets `text`, so no part may compute it."""
    cat = Catalog("c")

    @cat.fn(provides="text")
    def letter(letter_id: str) -> str:
        return ""

    @cat.rule
    def approve(text: str) -> bool:
        return True

    with pytest.raises(PlanError, match="part 'letter' of catalog 'c' computes 'text'"):
        System(cat)


@pytest.mark.parametrize("blocking", [False, True])
def test_an_extract_raising_its_own_cancelled_error_is_its_error(blocking: bool) -> None:
    """CancelledError out of an extract (a BaseException) is the extract's error under
    `ask_text` and `aask_text` on asyncio and trio; it crashed all but asyncio's."""
    cat = Catalog("letters")

    @cat.extract(blocking=blocking)
    def amounts(text: str) -> dict[str, int]:
        raise asyncio.CancelledError

    @cat.rule
    def small_claim(amount: int) -> bool:
        return amount < 1_000

    system = System(cat)
    for res in (
        system.ask_text("x"),
        anyio.run(system.aask_text, "x"),
        anyio.run(system.aask_text, "x", backend="trio"),
    ):
        assert res["small_claim"].status == "abstained"
        assert "CancelledError" in res["small_claim"].reason


@pytest.mark.parametrize("raised", [SystemExit, GeneratorExit])
def test_an_extract_stopping_the_process_stops_it_as_itself(raised: type[BaseException]) -> None:
    """SystemExit or GeneratorExit out of an async extract leaves `aask_text` as
    itself, as it leaves `ask_text`, not wrapped in an exception group of one."""
    cat = Catalog("letters")

    @cat.extract
    async def amounts(text: str) -> dict[str, int]:
        raise raised

    @cat.rule
    def small_claim(amount: int) -> bool:
        return amount < 1_000

    system = System(cat)
    with pytest.raises(raised):
        system.ask_text("x")
    for backend in ("asyncio", "trio"):
        with pytest.raises(raised):
            anyio.run(system.aask_text, "x", backend=backend)
