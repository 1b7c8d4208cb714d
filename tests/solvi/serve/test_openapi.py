"""The OpenAPI description on its own (`solvi.serve._openapi`): built from a System and its
served keys, without an app, its info, paths, limits and the plan's keys pattern exactly."""

from __future__ import annotations

import re
from typing import Any

import pytest

from solvi import Catalog, Question, System
from solvi.serve._inputs import ServedKeys
from solvi.serve._openapi import openapi
from solvi.serve._requests import ERROR_CODES, MAX_DEPTH


def _system() -> System:
    cat = Catalog("loan")

    @cat.fn
    def ratio(debts: float, income: float) -> float:
        return debts / income

    @cat.rule
    def approve(ratio: float, age: int) -> bool:
        return ratio < 0.4 and age >= 18

    return System(cat, [Question("approve")])


@pytest.fixture(scope="module")
def description() -> dict[str, Any]:
    """The description of the loan System, 1000 bytes and 7 keys at most."""
    system = _system()
    return openapi(system, 1000, 7, ServedKeys.of(system))


def test_info_names_the_catalog_its_version_and_questions(description: dict[str, Any]) -> None:
    """OpenAPI 3.1, titled after the catalog, versioned by its version."""
    system = _system()
    assert description["openapi"] == "3.1.0"
    assert description["info"] == {
        "title": "solvi: loan",
        "version": system.version,
        "description": "Answers the questions of catalog 'loan' (approve) with await "
        "System.aask(state).",
    }


def test_every_route_of_the_app_is_described(description: dict[str, Any]) -> None:
    """The five routes, each with its one method."""
    assert {path: list(ops) for path, ops in description["paths"].items()} == {
        "/v1/ask": ["post"],
        "/v1/plan": ["get"],
        "/healthz": ["get"],
        "/metrics": ["get"],
        "/openapi.json": ["get"],
    }
    metrics = description["paths"]["/metrics"]["get"]["responses"]["200"]
    assert list(metrics["content"]) == ["text/plain"]


def test_the_state_schema_takes_only_inputs_within_the_limits(description: dict[str, Any]) -> None:
    """Inputs only (no additional properties), at most max_keys, limits in its description."""
    state = description["components"]["schemas"]["State"]
    assert sorted(state["properties"]) == ["age", "debts", "income"]
    assert state["properties"]["age"]["type"] == "integer"
    assert state["additionalProperties"] is False
    assert state["maxProperties"] == 7
    assert state["description"].endswith(
        f"At most 1000 bytes and 7 keys, lists and objects nested at most {MAX_DEPTH} deep."
    )


def test_the_answers_of_a_record_are_the_systems_questions(description: dict[str, Any]) -> None:
    """A record's answers object has exactly the questions, each an Answer."""
    schemas = description["components"]["schemas"]
    record = next(s for s in schemas.values() if "answers" in s.get("properties", {}))
    answers = record["properties"]["answers"]
    assert answers["required"] == ["approve"]
    assert answers["additionalProperties"] is False
    assert answers["properties"] == {"approve": {"$ref": "#/components/schemas/Answer"}}
    error = schemas["Error"]["properties"]["error"]["properties"]["code"]
    assert error == {"type": "string", "enum": list(ERROR_CODES)}


def test_the_plan_keys_pattern_takes_inputs_only(description: dict[str, Any]) -> None:
    """keys= matches comma-separated inputs (blanks allowed, empty allowed), nothing else."""
    param = description["paths"]["/v1/plan"]["get"]["parameters"][0]
    pattern = re.compile(param["schema"]["pattern"])
    for good in ["age", "age, income", "", "debts,income,age"]:
        assert pattern.fullmatch(good), good
    for bad in ["ratio", "age;income", "approve"]:
        assert not pattern.fullmatch(bad), bad


def test_with_overrides_the_state_is_open_and_keys_any_string() -> None:
    """allow_overrides: no additionalProperties bound, keys= a plain string."""
    system = _system()
    described = openapi(system, 10, 2, ServedKeys.of(system, allow_overrides=True))
    assert "additionalProperties" not in described["components"]["schemas"]["State"]
    param = described["paths"]["/v1/plan"]["get"]["parameters"][0]
    assert param["schema"] == {"type": "string"}
