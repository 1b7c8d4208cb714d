"""Support tickets triaged from their text: priority, queue, and whether to review a refund.

The tickets arrive as free text. Extract parts turn each into facts with
regular expressions and keyword tables (no model to download): the customer
(written ``customerId`` on the way in, matched to the catalog's input
``customer_id``), the topic, the severity (twice: from a ``[P1]``/``[P3]`` tag
in the subject, and from alarm words by an ``async`` extract standing for a
classifier behind an API), the order number, and how many links the ticket
holds. The order extract fails on a ticket that mentions an order without its
number, and the two severity extracts can disagree: both show in the answers
instead of being settled silently. A hard check drops tickets full of links
as spam; rules answer the rest.

Run it with ``python examples/triage.py``: it triages each ticket with
``aask_text`` (the extracts of a ticket run concurrently), checks that
``ask_text`` gives the same records, and prints a table. Other code imports
``catalog``, ``system`` and ``TICKETS`` from here.
"""

from __future__ import annotations

import re
from typing import Any

import anyio

from solvi import Catalog, Fail, Question, System
from solvi.extract import TextResponse

__all__ = ["TICKETS", "catalog", "main", "system", "table", "triage_all"]

#: the customers the help desk knows, and their plans
PLANS = {"C-101": "enterprise", "C-202": "free", "C-303": "team"}

#: which words say what a ticket is about (first match wins)
TOPICS = (
    ("billing", ("charge", "invoice", "refund", "payment")),
    ("accounts", ("log in", "login", "password")),
    ("shipping", ("delivery", "parcel", "shipping")),
)

#: words that make a ticket urgent
ALARMS = ("down", "outage", "asap", "immediately")

TICKETS: dict[str, str] = {
    "T1": "[P1] Checkout is down for customer C-101: order #5521 failed to charge.",
    "T2": "Customer C-202 here. I cannot log in since the password reset, no rush.",
    "T3": "[P3] C-303: the outage lost my parcel, where is my order?",
    "T4": "Customer C-202: invoice software, cheap! http://a.example http://b.example http://c.example",
    "T5": "Customer C-202: my invoice for order #88 is wrong.",
}

catalog = Catalog("triage", aliases={"client": "customer_id"})


# -- from text to facts ----------------------------------------------------------


@catalog.extract
def customer(text: str) -> dict[str, Any]:
    """The customer id, given as ``customerId`` (matched to the input customer_id)."""
    found = re.search(r"\bC-\d{3}\b", text)
    return {"customerId": found.group(0)} if found else {}


@catalog.extract
def topic(text: str) -> dict[str, Any]:
    """What the ticket is about, from a keyword table."""
    lowered = text.lower()
    for name, words in TOPICS:
        if any(word in lowered for word in words):
            return {"topic": name}
    return {}


@catalog.extract
def tagged_severity(text: str) -> dict[str, Any]:
    """The severity the subject's tag says: [P1] is high, [P3] low."""
    found = re.match(r"\[P([13])\]", text)
    if found is None:
        return {}
    return {"severity": "high" if found.group(1) == "1" else "low"}


@catalog.extract
async def worded_severity(text: str) -> dict[str, Any]:
    """The severity the words say (a classifier behind an API, simulated)."""
    await anyio.sleep(0.005)
    lowered = text.lower()
    return {"severity": "high" if any(w in lowered for w in ALARMS) else "low"}


@catalog.extract
def order(text: str) -> dict[str, Any]:
    """The order number; a ticket that mentions an order without one is an error."""
    if "order" not in text.lower():
        return {}
    found = re.search(r"order #(\d+)", text)
    if found is None:
        msg = "the ticket mentions an order but gives no number"
        raise ValueError(msg)
    return {"order_number": found.group(1)}


@catalog.extract
def links(text: str) -> dict[str, Any]:
    """How many links the ticket holds."""
    return {"links": text.count("http")}


# -- the decisions ------------------------------------------------------------------


@catalog.fn
def plan(customer_id: str) -> str:
    """The customer's plan (unknown customers are on the free plan)."""
    return PLANS.get(customer_id, "free")


@catalog.check(hard=True)
def genuine(links: int) -> bool | Fail:
    """A ticket with more than two links is spam."""
    return links <= 2 or Fail(f"{links} links")


@catalog.rule
def priority(severity: str, plan: str, genuine: bool) -> str:
    """P1 for high severity on a paid plan, P2 for other high severity, else P3."""
    if severity == "high":
        return "P1" if plan != "free" else "P2"
    return "P3"


@catalog.rule
def queue(topic: str, genuine: bool) -> str:
    """The team that answers tickets of this topic."""
    return topic


@catalog.rule
def refund_review(topic: str, order_number: str, genuine: bool) -> bool:
    """Billing tickets about an order go to a refund review."""
    return topic == "billing"


QUESTIONS = [
    Question("priority", forced="spam"),
    Question("queue", forced="spam"),
    Question("refund_review", forced=False),
]
system = System(catalog, QUESTIONS)


# -- running it -------------------------------------------------------------------------


async def triage_all(tickets: dict[str, str]) -> dict[str, TextResponse]:
    """Triage every ticket at once with aask_text."""
    done: dict[str, TextResponse] = {}

    async def one(name: str, text: str) -> None:
        done[name] = await system.aask_text(text)

    async with anyio.create_task_group() as tg:
        for name, text in tickets.items():
            tg.start_soon(one, name, text)
    return {name: done[name] for name in tickets}


def _cell(res: TextResponse, question: str) -> str:
    answer = res[question]
    if answer.status == "abstained":
        return "-"
    value = answer.value
    return {True: "yes", False: "no"}.get(value, str(value)) if isinstance(value, bool) else value


def _notes(res: TextResponse) -> list[str]:
    notes = [f"{key}: {res.text.disagreement(key)}" for key in res.text.conflicts]
    notes += [f"{s.part}: {s.message}" for s in res.safeguards]
    forced = {a.reason for a in res.answers.values() if a.status == "forced"}
    return [*notes, *sorted(forced)]


def table(responses: dict[str, TextResponse]) -> str:
    """One line per ticket with its answers, then what kept a question from its answer."""
    lines = [f"{'ticket':<8}{'priority':<10}{'queue':<10}refund"]
    for name, res in responses.items():
        cells = [_cell(res, q) for q in ("priority", "queue", "refund_review")]
        lines.append(f"{name:<8}{cells[0]:<10}{cells[1]:<10}{cells[2]}")
    for name, res in responses.items():
        lines.extend(f"{name}: {note}" for note in _notes(res))
    return "\n".join(lines)


def main() -> None:
    """Triage the sample tickets and print the table."""
    responses = anyio.run(triage_all, TICKETS)
    for name, res in responses.items():
        if system.ask_text(TICKETS[name]).hash != res.hash:
            msg = f"ticket {name}: ask_text and aask_text disagree"
            raise AssertionError(msg)
    print(table(responses))


if __name__ == "__main__":
    main()
