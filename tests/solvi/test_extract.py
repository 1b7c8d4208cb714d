"""`ask_text`: extract parts turn text into facts, then the request is asked."""

from __future__ import annotations

import re

import pytest

from solvi import Catalog, SolviError, System


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
    assert res.flow.skipped == {}


def test_text_without_the_fact_abstains() -> None:
    """When the text lacks a fact, the question abstains naming what is missing."""
    res = System(_catalog()).ask_text("Please call me back.")
    assert res["approve"].status == "abstained"
    assert res["approve"].reason == "inputs missing: amount"


def test_an_extract_part_must_return_a_dict() -> None:
    """An extract part that returns something else is reported with the fix."""
    cat = Catalog("bad")

    @cat.extract
    def words(text: str) -> list[str]:
        return text.split()

    @cat.rule
    def anything(words: list[str]) -> bool:
        return True

    with pytest.raises(SolviError, match="must return a dict of facts"):
        System(cat).ask_text("a b")
