"""The insurance-claims example in examples/claims.py decides as its demo says."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from file_modules import import_file

from solvi import Response, System

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claims.py"

EXPENSIVE = [
    "fraud_model",
    "fraud_rules",
    "fraud_ok",
    "missing_documents",
    "documents_complete",
    "covered",
    "points",
    "approve",
    "fast_track",
]


@pytest.fixture(scope="module")
def claims() -> Iterator[ModuleType]:
    """The example module, loaded from its file."""
    module = import_file(EXAMPLE, "claims_example_under_test")
    yield module
    module.system.close()
    del sys.modules["claims_example_under_test"]


def _state(claims: ModuleType, claim_id: str) -> dict[str, Any]:
    for state in claims.CLAIMS:
        if state["claim"]["id"] == claim_id:
            return dict(state)
    raise KeyError(claim_id)


def _ask(claims: ModuleType, claim_id: str, **options: Any) -> Response:
    system: System = claims.system
    return system.ask(_state(claims, claim_id), **options)


def _verdicts(res: Response) -> dict[str, tuple[str, Any, str, str | None]]:
    return {n: (a.status, a.value, a.reason, a.guard) for n, a in res.answers.items()}


def test_module_exposes_catalog_questions_system_and_claims(claims: ModuleType) -> None:
    """Other code can import the catalog, the questions, the System and the samples."""
    assert claims.catalog.name == "claims"
    assert [q.name for q in claims.QUESTIONS] == ["approve", "fast_track"]
    assert isinstance(claims.system, System)
    assert [s["claim"]["id"] for s in claims.CLAIMS] == [
        "C-1001",
        "C-1002",
        "C-1003",
        "C-1004",
        "C-1005",
    ]


def test_fraud_model_is_declared_before_the_fraud_rules(claims: ModuleType) -> None:
    """The slow model is tried first; the cheap rules are the fallback producer."""
    producers = [p.name for p in claims.catalog if p.provides == "fraud_score"]
    assert producers == ["fraud_model", "fraud_rules"]
    hard = [p.name for p in claims.catalog if p.is_hard_check]
    assert hard == ["policy_in_force", "sanctions_clear"]


def test_simulated_io_is_async_or_blocking(claims: ModuleType) -> None:
    """Under a server no part blocks the loop: I/O is awaited, a blocking client is in a thread."""
    io = {p.name: (p.is_async, p.blocking) for p in claims.catalog if p.is_async or p.blocking}
    assert io == {
        "policy": (True, False),
        "sanctions_clear": (False, True),
        "fraud_model": (True, False),
        "missing_documents": (True, False),
    }


def test_concurrent_aask_calls_overlap_on_one_loop(claims: ModuleType) -> None:
    """Twenty concurrent aask calls take far less than twenty requests one after another."""
    system: System = claims.system
    state = _state(claims, "C-1001")
    anyio.run(system.aask, state)  # the first run on a loop imports and warms up
    one = time.perf_counter()
    anyio.run(system.aask, state)
    single = time.perf_counter() - one
    results: list[Response] = []

    async def many() -> None:
        async def ask() -> None:
            results.append(await system.aask(state))

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(ask)

    started = time.perf_counter()
    anyio.run(many)
    elapsed = time.perf_counter() - started
    assert len({r.hash for r in results}) == 1
    # A blocked loop would take about 20 * single; overlapping calls take a few singles.
    assert elapsed < 8 * single


@pytest.mark.parametrize("claim_id", ["C-1001", "C-1002", "C-1003", "C-1004", "C-1005"])
def test_aask_and_ask_give_the_same_record(claims: ModuleType, claim_id: str) -> None:
    """The async driver and the sync one write identical records for each sample claim."""
    system: System = claims.system
    sync = _ask(claims, claim_id)
    async_ = anyio.run(system.aask, _state(claims, claim_id))
    assert async_.hash == sync.hash
    assert _verdicts(async_) == _verdicts(sync)


@pytest.mark.parametrize(
    ("claim_id", "expected"),
    [
        ("C-1001", {"approve": ("decided", True), "fast_track": ("decided", True)}),
        ("C-1002", {"approve": ("decided", False), "fast_track": ("decided", False)}),
        ("C-1003", {"approve": ("forced", False), "fast_track": ("forced", False)}),
        ("C-1004", {"approve": ("decided", True), "fast_track": ("decided", False)}),
        ("C-1005", {"approve": ("forced", False), "fast_track": ("forced", False)}),
    ],
)
def test_each_sample_claim_gets_its_decision(
    claims: ModuleType, claim_id: str, expected: dict[str, tuple[str, bool]]
) -> None:
    """Each sample claim is answered with the status and value its story describes."""
    res = _ask(claims, claim_id)
    assert {name: (a.status, a.value) for name, a in res.answers.items()} == expected


def test_sample_facts_are_the_scorecard_values(claims: ModuleType) -> None:
    """The computed facts behind the decisions are the documented ones."""
    first = _ask(claims, "C-1001")
    assert first.values["fraud_score"] == 0.071
    assert first.values["points"] == 100
    second = _ask(claims, "C-1002")
    assert second.values["missing_documents"] == ["repair_quote"]
    assert second.values["documents_complete"] is False
    assert second.values["points"] == 40


def test_lapsed_policy_settles_early_and_skips_the_expensive_parts(claims: ModuleType) -> None:
    """C-1003 fails policy_in_force: only the phase of hard checks runs, the rest is skipped."""
    res = _ask(claims, "C-1003")
    assert res["approve"].reason == "hard check policy_in_force failed"
    assert res["approve"].guard == "policy_in_force"
    assert [s.part for s in res.trace.steps] == ["policy", "policy_in_force", "sanctions_clear"]
    assert list(res.trace.skipped) == [
        (name, "not needed: hard check policy_in_force failed") for name in EXPENSIVE
    ]
    assert "fraud_score" not in res.values


def test_sanctions_hit_settles_early_on_the_second_hard_check(claims: ModuleType) -> None:
    """C-1005's holder is on the sanctions list: sanctions_clear decides, the rest is skipped."""
    res = _ask(claims, "C-1005")
    assert res["fast_track"].guard == "sanctions_clear"
    assert [name for name, _ in res.trace.skipped] == EXPENSIVE
    assert {reason for _, reason in res.trace.skipped} == {
        "not needed: hard check sanctions_clear failed"
    }


def test_whole_flow_gives_the_same_answers_as_early_exit(claims: ModuleType) -> None:
    """early_exit=False runs everything, and the answers stay the same."""
    early = _ask(claims, "C-1003")
    whole = _ask(claims, "C-1003", early_exit=False)
    assert _verdicts(whole) == _verdicts(early)
    assert whole.trace.skipped == (
        ("fraud_rules", "not needed: fraud_score came from fraud_model"),
    )
    assert whole.values["points"] == 85


def test_failing_fraud_model_falls_back_to_the_fraud_rules(claims: ModuleType) -> None:
    """C-1004 is a flood claim: the model raises, the rules give fraud_score, no crash."""
    res = _ask(claims, "C-1004")
    assert res.values["fraud_score"] == 0.3
    outcomes = [(s.part, s.outcome) for s in res.trace.steps if s.fact == "fraud_score"]
    assert outcomes == [("fraud_model", "error"), ("fraud_rules", "ok")]
    assert [(g.kind, g.part, g.message) for g in res.safeguards] == [
        ("error", "fraud_model", "ValueError: the fraud model was not trained on 'flood' claims")
    ]
    assert res["approve"].status == "decided"


@pytest.mark.parametrize("claim_id", ["C-1001", "C-1002", "C-1003", "C-1004", "C-1005"])
def test_hash_is_the_same_with_one_worker_and_with_four(claims: ModuleType, claim_id: str) -> None:
    """Records are written in flow order, so threads change no hash."""
    one = _ask(claims, claim_id, workers=1)
    four = _ask(claims, claim_id, workers=4)
    assert one.hash == four.hash
    assert _verdicts(one) == _verdicts(four)


def test_demo_prints_every_claim_with_its_decision(
    claims: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The demo decides with aask, prints each record, stores them and finds the audit intact."""
    claims.main(tmp_path / "claims.db")
    out = capsys.readouterr().out
    for state in claims.CLAIMS:
        assert f"== {state['claim']['id']}: " in out
    assert "fraud_model         error" in out
    assert "not needed: hard check policy_in_force failed" in out
    # Stored, each record has a request id, which its first line names.
    assert len(re.findall(r"^claims  request [0-9a-f]{32}  hash ", out, re.MULTILINE)) == len(
        claims.CLAIMS
    )
    assert "audit log of 6 entries, intact: True" in out  # 5 decisions, 1 safeguard
    assert "same decision: True" in out
