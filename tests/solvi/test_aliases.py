"""`solvi.aliases`: keys in other conventions and declared synonyms, read as a catalog's inputs;
ambiguous keys refused naming every candidate; `solvi serve --aliases`."""

from __future__ import annotations

import argparse
import json
import keyword
from typing import Any

import httpx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from solvi import Catalog, CatalogError, PlanError, System, asgi
from solvi.aliases import AliasError, Aliases, normal_form
from solvi.serve import add_serve_command

JSON = {"content-type": "application/json"}


def _catalog(aliases: dict[str, str] | None = None) -> Catalog:
    cat = Catalog("loans", aliases=aliases)

    @cat.fn
    def ratio(monthly_income: float, debts: float) -> float:
        return debts / monthly_income

    @cat.rule
    def approve(ratio: float, customer_id: str) -> bool:
        return ratio < 0.4

    return cat


def _two_postcodes() -> Catalog:
    cat = Catalog("addresses")

    @cat.rule
    def deliver(postcode: str, post_code: str) -> bool:
        return postcode == post_code

    return cat


# -- matching one key ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "monthly_income",
        "monthlyIncome",
        "MonthlyIncome",
        "monthly-income",
        "Monthly Income",
        "MONTHLY_INCOME",
        "monthly  income",
    ],
)
def test_each_convention_names_the_input(key: str) -> None:
    """camelCase, PascalCase, kebab-case, spaces and upper case all name one input."""
    assert Aliases.of(_catalog()).match(key) == "monthly_income"


def test_a_declared_synonym_names_its_input_in_any_spelling() -> None:
    """`Catalog(aliases=...)` adds other words for an input; they match like inputs do."""
    aliases = Aliases.of(_catalog({"salary": "monthly_income", "clientRef": "customer_id"}))
    assert aliases.match("salary") == "monthly_income"
    assert aliases.match("SALARY") == "monthly_income"
    assert aliases.match("client-ref") == "customer_id"
    assert aliases.inputs == ("customer_id", "debts", "monthly_income")


def test_a_key_that_names_no_input_is_kept() -> None:
    """A key that matches nothing is left for the input check to refuse."""
    aliases = Aliases.of(_catalog())
    assert aliases.match("colour") == "colour"
    assert aliases.match("ratio") == "ratio"  # a computed fact: not renamed, and not an input


def test_an_ambiguous_key_is_refused_naming_both_inputs() -> None:
    """A key two inputs could be is refused; the exact names still name themselves."""
    aliases = Aliases.of(_two_postcodes())
    assert aliases.match("postcode") == "postcode"
    assert aliases.match("post_code") == "post_code"
    with pytest.raises(AliasError) as caught:
        aliases.match("PostCode")
    assert str(caught.value) == (
        "key 'PostCode' could be input 'post_code' or 'postcode' of catalog 'addresses' (they "
        "are all 'postcode' once case, '_', '-' and spaces are ignored); send the input's "
        "exact name"
    )
    assert caught.value.candidates == ("post_code", "postcode")
    assert caught.value.key == "PostCode"


def test_normalise_renames_keys_and_says_which() -> None:
    """A whole state is renamed key by key, in order, with a map of what was renamed."""
    aliases = Aliases.of(_catalog({"salary": "monthly_income"}))
    state, matched = aliases.normalise({"salary": 4000, "DEBTS": 900, "note": "x"})
    assert state == {"monthly_income": 4000, "debts": 900, "note": "x"}
    assert list(state) == ["monthly_income", "debts", "note"]
    assert matched == {"salary": "monthly_income", "DEBTS": "debts"}


def test_two_keys_naming_one_input_are_refused() -> None:
    """Two spellings of one input in one state would mean two values: refused, both named."""
    aliases = Aliases.of(_catalog())
    with pytest.raises(AliasError) as caught:
        aliases.normalise({"monthly_income": 1, "monthlyIncome": 2})
    assert str(caught.value) == (
        "keys 'monthly_income' and 'monthlyIncome' both name input 'monthly_income' of "
        "catalog 'loans'; send it once"
    )
    assert caught.value.candidates == ("monthlyIncome", "monthly_income")


# -- synonyms checked when the System is built ---------------------------------------------


def test_a_synonym_of_nothing_fails_the_system() -> None:
    """A synonym must name an input; the closest input is suggested."""
    with pytest.raises(PlanError) as caught:
        System(_catalog({"salary": "monthly_incom"}))
    assert str(caught.value) == (
        "Catalog('loans', aliases=...) maps 'salary' to 'monthly_incom', which no part reads "
        "(did you mean 'monthly_income'?); a synonym must name one of the catalog's inputs: "
        "customer_id, debts, monthly_income"
    )


def test_a_synonym_of_a_computed_fact_fails_the_system() -> None:
    """A computed fact is not something a request brings."""
    with pytest.raises(PlanError, match="maps 'share' to 'ratio', which part 'ratio' computes"):
        System(_catalog({"share": "ratio"}))


def test_a_synonym_that_collides_with_an_input_fails_the_system() -> None:
    """A synonym may not be an input, nor read like another one."""
    with pytest.raises(PlanError) as caught:
        System(_catalog({"debts": "monthly_income"}))
    assert str(caught.value) == (
        "Catalog('loans', aliases=...) declares 'debts' as a synonym of 'monthly_income', but "
        "'debts' is an input itself; a key 'debts' must keep meaning that, so remove the synonym"
    )
    with pytest.raises(PlanError) as caught:
        System(_catalog({"Customer-ID": "monthly_income"}))
    assert str(caught.value) == (
        "Catalog('loans', aliases=...) declares 'Customer-ID' as a synonym of 'monthly_income', "
        "but it reads like input 'customer_id' (both are 'customerid' once case, '_', '-' and "
        "spaces are ignored), so a key spelt like it would have two meanings; choose a synonym "
        "that looks like no other input"
    )


def test_two_synonyms_that_read_alike_fail_the_system() -> None:
    """Two synonyms of one form for different inputs would make a key mean two things."""
    with pytest.raises(PlanError) as caught:
        System(_catalog({"pay": "monthly_income", "PAY": "debts"}))
    assert str(caught.value) == (
        "Catalog('loans', aliases=...) declares 'pay' as a synonym of 'monthly_income' and "
        "'PAY' as a synonym of 'debts'; both are 'pay' once case, '_', '-' and spaces are "
        "ignored, so a key spelt like them would have two meanings; drop or rename one of them"
    )


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        (["salary"], "takes a dict of synonym -> input name"),
        ({"": "income"}, "a synonym must be a non-empty string, got ''"),
        ({"salary": "monthly income"}, "maps 'salary' to 'monthly income'; map each synonym"),
    ],
)
def test_aliases_of_the_wrong_shape_fail_the_catalog(aliases: Any, message: str) -> None:
    """`aliases=` is a dict of non-empty synonyms to input names."""
    with pytest.raises(CatalogError, match=message):
        Catalog("c", aliases=aliases)


# -- properties ---------------------------------------------------------------------------

WORDS = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), min_size=1, max_size=4)


def _variants(words: list[str]) -> list[str]:
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    return [
        "_".join(words),
        camel,
        camel[0].upper() + camel[1:],
        "-".join(words),
        " ".join(words),
        "_".join(words).upper(),
        "-".join(w.capitalize() for w in words),
    ]


def _catalog_reading(names: list[str]) -> Catalog:
    cat = Catalog("random")
    source = f"def decide({', '.join(names)}):\n    return True\n"
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    cat.rule(namespace["decide"])
    return cat


@given(st.lists(WORDS, min_size=1, max_size=5, unique_by=lambda w: "_".join(w)))
def test_every_spelling_maps_back_or_is_refused_naming_all(inputs: list[list[str]]) -> None:
    """Each convention-variant of an input maps back to it, unless another input shares its
    form: then it is refused naming every input of that form, never read as one silently."""
    names = ["_".join(w) for w in inputs]
    assume(not any(keyword.iskeyword(n) for n in names))
    aliases = Aliases.of(_catalog_reading(names))
    for words, name in zip(inputs, names, strict=True):
        alike = sorted(n for n in names if normal_form(n) == normal_form(name))
        for key in _variants(words):
            if key in names:
                assert aliases.match(key) == key
            elif len(alike) == 1:
                assert aliases.match(key) == name
            else:
                with pytest.raises(AliasError) as caught:
                    aliases.match(key)
                assert caught.value.candidates == tuple(alike)


@given(st.lists(WORDS, min_size=2, max_size=5), st.text(min_size=1, max_size=12))
def test_no_key_silently_names_one_of_two_alike_inputs(inputs: list[list[str]], key: str) -> None:
    """Whatever the key, a match is its own name, the one input of its form, or refused."""
    names = list(dict.fromkeys("_".join(w) for w in inputs))
    assume(not any(keyword.iskeyword(n) for n in names))
    aliases = Aliases.of(_catalog_reading(names))
    alike = sorted(n for n in names if normal_form(n) == normal_form(key))
    if key in names or not alike:
        assert aliases.match(key) == key
    elif len(alike) == 1:
        assert aliases.match(key) == alike[0]
    else:
        with pytest.raises(AliasError) as caught:
            aliases.match(key)
        assert caught.value.candidates == tuple(alike)


# -- solvi serve --aliases -----------------------------------------------------------------


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://solvi.test")


@pytest.mark.asyncio
async def test_serve_with_aliases_reads_other_conventions_and_says_so() -> None:
    """With aliases=True a camelCase body is answered as its inputs; `matched` says how."""
    system = System(_catalog({"salary": "monthly_income"}))
    body = {"salary": 4000, "Debts": 900, "customerId": "c1"}
    async with _client(asgi(system, aliases=True)) as client:
        answer = await client.post("/v1/ask", content=json.dumps(body), headers=JSON)
        single = await client.post(
            "/v1/ask?question=approve", content=json.dumps(body), headers=JSON
        )
        plan = await client.get("/v1/plan?keys=salary,Debts,customerId")
    assert answer.status_code == 200
    record = answer.json()
    assert record["matched"] == {
        "salary": "monthly_income",
        "Debts": "debts",
        "customerId": "customer_id",
    }
    assert record["input"] == {"monthly_income": 4000, "debts": 900, "customer_id": "c1"}
    same = system.ask({"monthly_income": 4000, "debts": 900, "customer_id": "c1"})
    assert record["hash"] == same.hash  # what was renamed is not part of the hash
    assert single.json()["matched"] == record["matched"]
    assert single.json()["answer"]["value"] is True
    assert plan.json()["keys"] == ["customer_id", "debts", "monthly_income"]


@pytest.mark.asyncio
async def test_serve_without_aliases_refuses_other_conventions() -> None:
    """By default a key in another convention is not an input (422 not_an_input)."""
    async with _client(asgi(System(_catalog()))) as client:
        answer = await client.post(
            "/v1/ask", content=json.dumps({"monthlyIncome": 4000}), headers=JSON
        )
    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "not_an_input"
    assert "matched" not in answer.json()


@pytest.mark.asyncio
async def test_serve_refuses_an_ambiguous_key_naming_both() -> None:
    """A key that could be two inputs is a 422 ambiguous_key with both candidates."""
    async with _client(asgi(System(_two_postcodes()), aliases=True)) as client:
        answer = await client.post("/v1/ask", content=json.dumps({"PostCode": "1"}), headers=JSON)
        plan = await client.get("/v1/plan?keys=Post-Code")
    async with _client(asgi(System(_catalog()), aliases=True)) as client:
        body = {"monthly_income": 1, "monthlyIncome": 2}
        twice = await client.post("/v1/ask", content=json.dumps(body), headers=JSON)
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "ambiguous_key"
    assert error["candidates"] == ["post_code", "postcode"]
    assert error["key"] == "PostCode"
    assert "could be input 'post_code' or 'postcode'" in error["message"]
    assert twice.status_code == 422
    assert twice.json()["error"]["candidates"] == ["monthlyIncome", "monthly_income"]
    assert plan.status_code == 422
    assert plan.json()["error"]["code"] == "ambiguous_key"


@pytest.mark.asyncio
async def test_openapi_with_aliases_takes_other_spellings_and_lists_matched() -> None:
    """The described state allows other keys and the record has `matched`."""
    async with _client(asgi(System(_catalog()), aliases=True)) as client:
        described = (await client.get("/openapi.json")).json()
    async with _client(asgi(System(_catalog()))) as client:
        plain = (await client.get("/openapi.json")).json()
    schemas = described["components"]["schemas"]
    assert "additionalProperties" not in schemas["State"]
    assert "camelCase" in schemas["State"]["description"]
    assert "matched" in schemas["Record"]["required"]
    assert "matched" in schemas["SingleAnswer"]["required"]
    assert "ambiguous_key" in schemas["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    assert plain["components"]["schemas"]["State"]["additionalProperties"] is False
    assert "matched" not in plain["components"]["schemas"]["Record"]["properties"]


def test_serve_command_takes_aliases() -> None:
    """`solvi serve --aliases` sets the option (off by default)."""
    parser = argparse.ArgumentParser()
    add_serve_command(parser.add_subparsers())
    assert parser.parse_args(["serve", "x:system", "--aliases"]).aliases is True
    assert parser.parse_args(["serve", "x:system"]).aliases is False
