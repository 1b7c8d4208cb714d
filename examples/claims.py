"""Insurance claims: decide whether to pay a claim, and whether to fast-track it.

The catalog looks up the policy, screens the policy holder against a sanctions
list, scores fraud with a slow model (falling back to cheap rules when the model
fails), checks the documents and sums scorecard points. Latencies are simulated
with short sleeps so the demo shows what early exit and concurrency save.

It is written as a catalog should be under a server: the policy database, the
fraud model and the document store are ``async def`` parts that ``await`` their
(simulated) I/O, so ``await system.aask(...)`` in a web handler never blocks the
event loop; the sanctions screening stands for a client library that only
offers blocking calls, so it is declared ``blocking=True`` and ``aask`` runs it
in a worker thread. Only cheap, pure computations are plain sync parts, run
inline. ``system.ask`` answers the same, in scripts.

Run it with ``python examples/claims.py`` (what ``make demo`` runs): it decides
each sample claim with ``aask``. Other code imports ``catalog``, ``QUESTIONS``,
``system`` and ``CLAIMS`` from here; ``solvi check examples/claims.py:system``
checks the catalog and ``solvi serve examples/claims.py:system`` serves it.
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path
from typing import Any

import anyio

from solvi import Catalog, Question, System, verify

__all__ = ["CLAIMS", "DEMO_STORE", "QUESTIONS", "catalog", "decide_all", "main", "system"]

#: Where `make demo` keeps its decisions (SQLite, created on first run).
DEMO_STORE = Path(".demo") / "claims.db"

# -- the outside world, simulated ------------------------------------------------

POLICIES: dict[str, dict[str, Any]] = {
    "P-100": {
        "holder": "Ana Ruiz",
        "status": "active",
        "start": "2019-03-01",
        "end": "2026-02-28",
        "limit": 20_000,
        "covers": ["theft", "water", "fire"],
        "prior_claims": 0,
    },
    "P-200": {
        "holder": "Ben Okafor",
        "status": "active",
        "start": "2023-06-15",
        "end": "2026-06-14",
        "limit": 15_000,
        "covers": ["theft", "water"],
        "prior_claims": 2,
    },
    "P-300": {
        "holder": "Chloe Martin",
        "status": "lapsed",
        "start": "2020-01-01",
        "end": "2024-12-31",
        "limit": 50_000,
        "covers": ["theft", "water", "fire"],
        "prior_claims": 0,
    },
    "P-400": {
        "holder": "Viktor Sorel",
        "status": "active",
        "start": "2024-02-01",
        "end": "2027-01-31",
        "limit": 30_000,
        "covers": ["theft", "fire"],
        "prior_claims": 0,
    },
    "P-500": {
        "holder": "Eva Lindqvist",
        "status": "active",
        "start": "2021-09-01",
        "end": "2026-08-31",
        "limit": 40_000,
        "covers": ["water", "flood", "fire"],
        "prior_claims": 1,
    },
}

SANCTIONS_LIST = frozenset({"viktor sorel"})

REQUIRED_DOCUMENTS: dict[str, tuple[str, ...]] = {
    "theft": ("police_report", "receipt"),
    "water": ("photos", "repair_quote"),
    "fire": ("fire_report", "photos"),
    "flood": ("photos", "repair_quote"),
}

#: The claim kinds the fraud model was trained on.
MODEL_KINDS = frozenset({"theft", "water", "fire"})


async def _io(ms: float) -> None:
    """Stand in for an async client's network call that takes `ms` milliseconds."""
    await anyio.sleep(ms / 1000.0)


def _blocking_io(ms: float) -> None:
    """Stand in for a blocking client library's call that takes `ms` milliseconds."""
    time.sleep(ms / 1000.0)


# -- the catalog --------------------------------------------------------------------

catalog = Catalog("claims")


@catalog.fn(cost=10.0)
async def policy(claim: dict[str, Any]) -> dict[str, Any]:
    """The policy the claim is made under, from the policy database (an async driver)."""
    await _io(8)
    policy_id = claim["policy_id"]
    if policy_id not in POLICIES:
        msg = f"no policy {policy_id!r} in the policy database"
        raise LookupError(msg)
    return POLICIES[policy_id]


@catalog.check(hard=True)
def policy_in_force(policy: dict[str, Any], claim: dict[str, Any]) -> bool:
    """The policy is active and the loss happened while it ran."""
    return bool(policy["status"] == "active" and policy["start"] <= claim["date"] <= policy["end"])


@catalog.check(hard=True, cost=20.0, blocking=True)
def sanctions_clear(policy: dict[str, Any]) -> bool:
    """The policy holder is on no sanctions list (a screening service's blocking client)."""
    _blocking_io(15)
    return str(policy["holder"]).lower() not in SANCTIONS_LIST


@catalog.fn(provides="fraud_score", cost=60.0, timeout=1.0)
async def fraud_model(claim: dict[str, Any], policy: dict[str, Any]) -> float:
    """A fraud model on a model server: slow, and it only knows the kinds it was trained on."""
    await _io(30 + zlib.crc32(claim["id"].encode()) % 50)
    if claim["kind"] not in MODEL_KINDS:
        msg = f"the fraud model was not trained on {claim['kind']!r} claims"
        raise ValueError(msg)
    share = claim["amount"] / policy["limit"]
    score = 0.05 + 0.5 * share + 0.15 * policy["prior_claims"]
    return round(min(float(score), 1.0), 3)


@catalog.fn(provides="fraud_score", cost=2.0)
def fraud_rules(claim: dict[str, Any], policy: dict[str, Any]) -> float:
    """Cheap fraud rules, used when the model fails."""
    score = 0.1
    if claim["amount"] > policy["limit"] / 2:
        score += 0.3
    score += 0.2 * policy["prior_claims"]
    return round(min(float(score), 1.0), 3)


@catalog.check
def fraud_ok(fraud_score: float) -> bool:
    """The fraud score is low enough to pay without an investigation."""
    return fraud_score < 0.6


@catalog.fn(cost=5.0)
async def missing_documents(claim: dict[str, Any], documents: list[str]) -> list[str]:
    """The documents this kind of claim needs that were not sent (a document store)."""
    await _io(5)
    return [d for d in REQUIRED_DOCUMENTS[claim["kind"]] if d not in documents]


@catalog.check
def documents_complete(missing_documents: list[str]) -> bool:
    """Every required document is there."""
    return not missing_documents


@catalog.check
def covered(policy: dict[str, Any], claim: dict[str, Any]) -> bool:
    """The policy covers this kind of loss, up to this amount."""
    return bool(claim["kind"] in policy["covers"] and claim["amount"] <= policy["limit"])


@catalog.fn
def points(policy: dict[str, Any], claim: dict[str, Any], fraud_score: float) -> int:
    """Scorecard points: a clean history, a small amount and a low fraud score earn points."""
    total = 50
    if policy["prior_claims"] == 0:
        total += 20
    else:
        total -= 5 * policy["prior_claims"]
    if claim["amount"] < 2_000:
        total += 15
    if fraud_score < 0.2:
        total += 15
    return total


@catalog.rule
def approve(covered: bool, fraud_ok: bool, documents_complete: bool, points: int) -> bool:
    """Pay the claim."""
    return covered and fraud_ok and documents_complete and points >= 40


@catalog.rule
def fast_track(approve: bool, points: int, claim: dict[str, Any]) -> bool:
    """Pay without a handler looking at it first."""
    return approve and points >= 80 and claim["amount"] <= 2_500


#: A failed hard check (lapsed policy, sanctions hit) declines the claim.
QUESTIONS = (Question("approve", forced=False), Question("fast_track", forced=False))

system = System(catalog, QUESTIONS, workers=4)

# -- sample claims -----------------------------------------------------------------

CLAIMS: list[dict[str, Any]] = [
    {
        "claim": {
            "id": "C-1001",
            "policy_id": "P-100",
            "kind": "theft",
            "date": "2025-04-02",
            "amount": 850,
        },
        "documents": ["police_report", "receipt"],
    },
    {
        "claim": {
            "id": "C-1002",
            "policy_id": "P-200",
            "kind": "water",
            "date": "2025-05-19",
            "amount": 6_400,
        },
        "documents": ["photos"],
    },
    {
        "claim": {
            "id": "C-1003",
            "policy_id": "P-300",
            "kind": "fire",
            "date": "2025-03-08",
            "amount": 12_000,
        },
        "documents": ["fire_report", "photos"],
    },
    {
        "claim": {
            "id": "C-1004",
            "policy_id": "P-500",
            "kind": "flood",
            "date": "2025-01-27",
            "amount": 9_300,
        },
        "documents": ["photos", "repair_quote"],
    },
    {
        "claim": {
            "id": "C-1005",
            "policy_id": "P-400",
            "kind": "theft",
            "date": "2025-06-30",
            "amount": 1_200,
        },
        "documents": ["police_report", "receipt"],
    },
]

#: What each sample shows, for the demo's headings.
STORIES = {
    "C-1001": "small theft, everything in order",
    "C-1002": "water damage, the repair quote is missing",
    "C-1003": "fire under a lapsed policy: settled early by a failed hard check",
    "C-1004": "flood: the fraud model fails, the fraud rules take over",
    "C-1005": "the policy holder is on the sanctions list",
}


async def decide_all(system: System) -> list[str | None]:
    """Decide each sample claim with `await system.aask`, as a web handler would; print each.

    Returns:
        The request ids of the decisions (None without a store), in the order of `CLAIMS`.
    """
    started = time.perf_counter()
    ids: list[str | None] = []
    for state in CLAIMS:
        claim_id = state["claim"]["id"]
        res = await system.aask(state)
        ids.append(res.request_id)
        print(f"== {claim_id}: {STORIES[claim_id]}")
        print(res.show())
        print()
    elapsed = (time.perf_counter() - started) * 1000.0
    print(f"{len(CLAIMS)} claims in {elapsed:.0f} ms; stats {system.stats}")
    return ids


def main(store: str | Path = DEMO_STORE) -> None:
    """Decide each sample claim, keep the decisions in SQLite, and check the store.

    Args:
        store: the SQLite file that keeps every decision and its audit log.
    """
    Path(store).parent.mkdir(parents=True, exist_ok=True)
    with System(catalog, QUESTIONS, workers=4, store=store) as demo:
        ids = anyio.run(decide_all, demo)
        assert demo.store is not None
        report = verify(demo.store)
        print(f"store {store}: audit log of {report.entries} entries, intact: {report.ok}")
        again = demo.replay(ids[0])
        print(f"replay of {CLAIMS[0]['claim']['id']}: same decision: {again.same}")


if __name__ == "__main__":
    main()
