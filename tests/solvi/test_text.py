"""`ask_text` and `aask_text`: extracts sync and async, concurrent under `aask_text`, merged with
conflicts reported, failures as safeguards, and one record whichever way they ran."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from file_modules import import_file

from solvi import Catalog, Question, RequestError, Safeguard, System
from solvi.extract import EXTRACTS, ExtractStep, Overruled, TextResponse, respond


def _timeless(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what differs between runs: timings."""
    out = dict(record)
    out["steps"] = [
        {k: v for k, v in s.items() if k not in ("start_ms", "duration_ms")} for s in out["steps"]
    ]
    return out


def _claims(calls: list[str], *, signed: bool = False) -> Catalog:
    """Amounts found twice (a sync and an async extract), an order id in camelCase, a
    blocking extract, one that raises, and one that reads what the others found."""
    cat = Catalog("claims", aliases={"ref": "order_id"})

    @cat.extract
    def amount_in_subject(text: str) -> dict[str, Any]:
        calls.append("amount_in_subject")
        found = re.search(r"Subject:[^\n]*?(\d+) EUR", text)
        return {"amount": int(found.group(1))} if found else {}

    @cat.extract
    async def amount_in_body(text: str) -> dict[str, Any]:
        calls.append("amount_in_body")
        await anyio.lowlevel.checkpoint()
        found = re.search(r"refund (\d+) EUR", text)
        return {"amount": int(found.group(1))} if found else {}

    @cat.extract(blocking=True)
    def order(text: str) -> dict[str, Any]:
        calls.append("order")
        found = re.search(r"order #(\d+)", text)
        return {"orderId": found.group(1)} if found else {}

    @cat.extract
    def signature(text: str) -> dict[str, Any]:
        calls.append("signature")
        if signed:
            return {}
        raise ValueError("no signature")

    @cat.extract
    def size(text: str, amount: int) -> dict[str, Any]:
        calls.append("size")
        return {"large": amount >= 1_000}

    @cat.rule
    def refund(amount: int, order_id: str) -> bool:
        return amount < 500

    @cat.rule
    def review(large: bool) -> bool:
        return large

    return cat


AGREE = "Subject: claim of 250 EUR\nPlease refund 250 EUR for order #77."
DISAGREE = "Subject: claim of 250 EUR\nPlease refund 300 EUR for order #77."


# -- merging, conflicts, the caller's state -------------------------------------------------


def test_agreeing_extracts_merge_into_the_request() -> None:
    """Keys extracts agree on, renamed to inputs, join the request; the rule decides."""
    calls: list[str] = []
    res = System(_claims(calls)).ask_text(AGREE)
    assert isinstance(res, TextResponse)
    assert res["refund"].value is True
    assert res["review"].value is False
    assert {k: v for k, v in res.input.items() if k != EXTRACTS} == {
        "amount": 250,
        "order_id": "77",
        "large": False,
        "text": AGREE,
    }
    assert calls == ["amount_in_subject", "amount_in_body", "order", "signature", "size"]
    assert res.text.steps == (
        ExtractStep("amount_in_subject", "ok", None, ("amount",)),
        ExtractStep("amount_in_body", "ok", None, ("amount",)),
        ExtractStep("order", "ok", None, ("order_id",)),
        ExtractStep("signature", "error", "ValueError: no signature", ()),
        ExtractStep("size", "ok", None, ("large",)),
    )
    assert res.text.matched == {"orderId": "order_id"}
    assert res.record["matched"] == {"orderId": "order_id"}


def test_disagreeing_extracts_settle_nothing_and_say_so() -> None:
    """A key two extracts give differently is left out; what needs it abstains naming both."""
    res = System(_claims([])).ask_text(DISAGREE)
    assert "amount" not in res.input
    assert res.text.conflicts == {"amount": {"amount_in_subject": 250, "amount_in_body": 300}}
    assert res["refund"].status == "abstained"
    assert res["refund"].reason == (
        "inputs missing: amount (extracts disagree: amount_in_subject gave 250, "
        "amount_in_body gave 300)"
    )
    assert res["refund"].guard == "conflict"
    assert res.text.steps[-1] == ExtractStep("size", "skipped", "inputs missing: amount", ())
    assert res.record["input"][EXTRACTS]["conflicts"] == {
        "amount": {"amount_in_body": 300, "amount_in_subject": 250}
    }


def test_the_callers_state_wins_and_the_disagreement_is_reported() -> None:
    """A key the caller gives keeps the caller's value; where the text said otherwise, the
    record says so, and a conflict among extracts on it is settled by the caller, reported."""
    res = System(_claims([])).ask_text(DISAGREE, {"amount": 120, "order_id": "77"})
    assert res["refund"].value is True
    assert res.input["amount"] == 120
    assert res.text.conflicts == {}
    assert res.text.overruled == {
        "amount": Overruled(120, {"amount_in_subject": 250, "amount_in_body": 300})
    }
    agreeing = System(_claims([])).ask_text(AGREE, {"order_id": "77"})
    assert agreeing.text.overruled == {}  # the caller and the text agree on order_id


def test_the_state_may_not_set_what_ask_text_sets() -> None:
    """`text` and `$extracts` come from ask_text; the text must be a str."""
    system = System(_claims([]))
    with pytest.raises(ValueError, match="ask_text sets the request key 'text' itself"):
        system.ask_text("x", {"text": "y"})
    with pytest.raises(TypeError, match="ask_text takes the text as a str, got bytes"):
        system.ask_text(b"x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "options", "raised", "message"),
    [
        ({"text": "y"}, {}, ValueError, "ask_text sets the request key 'text' itself"),
        ([1, 2], {}, TypeError, "a request's state"),
        (None, {"nope": 1}, TypeError, "got an unknown option 'nope'"),
        (None, {"early_exti": True}, TypeError, "did you mean 'early_exit'"),
        (None, {"request_id": ""}, RequestError, "request_id '' has 0 characters"),
        ({"refund_allowed": True}, {}, RequestError, "request key 'refund_allowed' sets"),
    ],
)
def test_a_request_that_would_be_refused_runs_no_extract(
    state: Any, options: dict[str, Any], raised: type[Exception], message: str
) -> None:
    """The state and the options are checked before any extract runs, by ask_text and
    aask_text: a refused request costs no extract call and counts in no statistic."""
    calls: list[str] = []
    cat = _claims(calls, signed=True)

    @cat.check(hard=True)
    def refund_allowed(amount: int) -> bool:
        return amount < 10_000

    system = System(cat, [Question("refund", requires=["refund_allowed"]), "review"])
    with pytest.raises(raised, match=re.escape(message)):
        system.ask_text(AGREE, state, **options)
    with pytest.raises(raised, match=re.escape(message)):
        anyio.run(lambda: system.aask_text(AGREE, state, **options))
    assert calls == []
    assert system.stats["errors"] == 0


def test_a_plain_request_may_not_bring_what_ask_text_records() -> None:
    """`$extracts` is what ask_text records of its extracts: a plain request bringing
    it would carry safeguards that never happened, so ask and aask refuse it."""
    system = System(_claims([]))
    forged = {"amount": 5, "order_id": "1", EXTRACTS: {"steps": [], "conflicts": {}}}
    with pytest.raises(RequestError, match=re.escape("request key '$extracts' is what")):
        system.ask(forged)
    with pytest.raises(RequestError, match=re.escape("request key '$extracts' is what")):
        anyio.run(system.aask, forged)
    assert system.ask_text(AGREE)["refund"].status == "decided"


# -- failures ---------------------------------------------------------------------------------


def test_a_raising_extract_is_a_safeguard_never_a_crash() -> None:
    """The extract's error is a safeguard; questions needing keys nobody gave abstain saying so."""
    cat = Catalog("letters")

    @cat.extract
    def amounts(text: str) -> dict[str, Any]:
        raise KeyError("amount")

    @cat.rule
    def approve(amount: int) -> bool:
        return amount < 1_000

    system = System(cat)
    res = system.ask_text("Please refund 250 EUR.")
    assert res.safeguards == (Safeguard("error", "amounts", "amounts", "KeyError: 'amount'"),)
    assert res["approve"].reason == (
        "inputs missing: amount (no extract gave it; amounts raised KeyError: 'amount')"
    )
    assert res["approve"].guard == "error"
    assert res.record["safeguards"] == [
        {"kind": "error", "part": "amounts", "fact": "amounts", "message": "KeyError: 'amount'"}
    ]
    assert system.stats["errors"] == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_slow_extract_times_out_as_a_safeguard(asynchronous: bool) -> None:
    """An extract past its timeout= is a timeout safeguard under ask_text and aask_text."""
    cat = Catalog("letters")

    @cat.extract(timeout=0.05)
    async def slow(text: str) -> dict[str, Any]:
        await anyio.sleep(5)
        return {"amount": 1}

    @cat.rule
    def approve(amount: int) -> bool:
        return True

    system = System(cat)
    if asynchronous:
        res = anyio.run(system.aask_text, "text")
    else:
        res = system.ask_text("text")
    assert res.safeguards == (Safeguard("timeout", "slow", "slow", "timed out after 0.05 s"),)
    assert res["approve"].reason == (
        "inputs missing: amount (no extract gave it; slow timed out after 0.05 s)"
    )
    assert res["approve"].guard == "timeout"
    assert system.stats["timeouts"] == 1


def _bad_output(kind: str) -> Catalog:
    cat = Catalog("bad", aliases={"ref": "order_id"})

    @cat.fn
    def score(order_id: str) -> int:
        return 1

    @cat.extract
    def gives(text: str) -> Any:
        outputs: dict[str, Any] = {
            "computed": {"score": 3},
            "text": {"text": "other"},
            "twice": {"orderId": "1", "order_id": "2"},
            "no_json": {"order_id": object()},
            "key": {1: "x"},
            "coroutine": asyncio.sleep(0),
        }
        for name, value in outputs.items():
            if name != kind and asyncio.iscoroutine(value):
                value.close()
        return outputs[kind]

    @cat.rule
    def approve(score: int) -> bool:
        return True

    return cat


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (
            "computed",
            "gave 'score', which part 'score' computes; an extract gives request keys only",
        ),
        ("text", "gave 'text', which ask_text sets; give other keys"),
        (
            "twice",
            "gave an ambiguous key: keys 'orderId' and 'order_id' both name input 'order_id' "
            "of catalog 'bad'; send it once",
        ),
        ("no_json", "returned a value with no JSON form: order_id is a builtins.object"),
        ("key", "gave the key 1 (int); keys are strings"),
        ("coroutine", "returned a coroutine; declare the extract async def"),
    ],
)
def test_an_output_that_cannot_join_a_request_is_an_error(kind: str, message: str) -> None:
    """What an extract returns must be a dict of request keys with recordable values."""
    res = System(_bad_output(kind)).ask_text("x")
    (safeguard,) = res.safeguards
    assert (safeguard.kind, safeguard.part) == ("error", "gives")
    assert safeguard.message.startswith(message)
    assert res.input.keys() == {"text", EXTRACTS}


# -- concurrency and identical records -----------------------------------------------------


@pytest.mark.asyncio
async def test_aask_text_runs_async_extracts_concurrently() -> None:
    """Two extracts that each wait for the other to start both finish: they run at once;
    a third that raises is a safeguard."""
    first_in, second_in = anyio.Event(), anyio.Event()
    cat = Catalog("pair")

    @cat.extract
    async def first(text: str) -> dict[str, Any]:
        first_in.set()
        await second_in.wait()
        return {"a": 1}

    @cat.extract
    async def second(text: str) -> dict[str, Any]:
        second_in.set()
        await first_in.wait()
        return {"b": 2}

    @cat.extract
    async def failing(text: str) -> dict[str, Any]:
        raise RuntimeError("model down")

    @cat.rule
    def both(a: int, b: int) -> int:
        return a + b

    with anyio.fail_after(5):
        res = await System(cat).aask_text("text")
    assert res["both"].value == 3
    assert res.safeguards == (Safeguard("error", "failing", "failing", "RuntimeError: model down"),)
    assert [s.outcome for s in res.text.steps] == ["ok", "ok", "error"]


@pytest.mark.asyncio
async def test_an_extract_reading_earlier_facts_waits_for_them() -> None:
    """Under aask_text an extract that reads a fact starts once the extracts before it end."""
    order: list[str] = []
    cat = Catalog("chain")

    @cat.extract
    async def amount(text: str) -> dict[str, Any]:
        await anyio.sleep(0.01)
        order.append("amount")
        return {"amount": 5}

    @cat.extract
    def doubled(text: str, amount: int) -> dict[str, Any]:
        order.append("doubled")
        return {"twice": amount * 2}

    @cat.rule
    def total(twice: int) -> int:
        return twice

    res = await System(cat).aask_text("text")
    assert res["total"].value == 10
    assert order == ["amount", "doubled"]


@pytest.mark.asyncio
async def test_a_blocking_extract_runs_in_a_worker_thread() -> None:
    """blocking=True keeps a sync extract off the event loop's thread under aask_text."""
    threads: list[str] = []
    cat = Catalog("threads")

    @cat.extract(blocking=True)
    def lookup(text: str) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"a": 1}

    @cat.rule
    def one(a: int) -> int:
        return a

    await System(cat).aask_text("text")
    assert threads
    assert threads[0] != threading.current_thread().name


@pytest.mark.asyncio
async def test_cancelling_aask_text_cancels_its_extracts() -> None:
    """A cancelled aask_text cancels the extracts still running, and asks nothing."""
    cancelled: list[str] = []
    cat = Catalog("slow")

    @cat.extract
    async def slow(text: str) -> dict[str, Any]:
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            cancelled.append("slow")
            raise
        return {"a": 1}

    @cat.rule
    def one(a: int) -> int:
        return a

    system = System(cat)
    with anyio.move_on_after(0.05):
        await system.aask_text("text")
    assert cancelled == ["slow"]
    assert system.stats["requests"] == 0


def test_ask_text_and_aask_text_give_one_record_and_hash() -> None:
    """Sync, async, blocking, failing, conflicting and dependent extracts: the same record and
    hash under ask_text, aask_text on asyncio and on trio."""
    for text in (AGREE, DISAGREE):
        system = System(_claims([]))
        by_ask = system.ask_text(text)
        by_aask = anyio.run(system.aask_text, text)
        on_trio = anyio.run(system.aask_text, text, backend="trio")
        assert by_ask.hash == by_aask.hash == on_trio.hash
        assert _timeless(by_ask.record) == _timeless(by_aask.record) == _timeless(on_trio.record)
        assert by_ask.answers == by_aask.answers


def test_how_keys_were_spelt_is_shown_but_not_hashed() -> None:
    """Two texts whose extracts spell a key differently make one decision and one hash."""
    cat = Catalog("spelling")

    @cat.extract
    def order(text: str) -> dict[str, Any]:
        key, value = text.split("=")
        return {key: value}

    @cat.rule
    def known(order_id: str) -> bool:
        return order_id == "77"

    system = System(cat)
    camel, snake = system.ask_text("orderId=77"), system.ask_text("order_id=77")
    assert camel.record["matched"] == {"orderId": "order_id"}
    assert snake.record["matched"] == {}
    assert "matched" not in camel.record["input"][EXTRACTS]
    assert camel.input["order_id"] == snake.input["order_id"] == "77"
    assert camel["known"] == snake["known"]
    assert camel.record["input"]["text"] != snake.record["input"]["text"]


# -- the record, replay and storage -----------------------------------------------------------


def test_the_record_holds_every_extract_in_order() -> None:
    """The input's $extracts lists each extract's outcome in declaration order."""
    res = System(_claims([])).ask_text(DISAGREE)
    assert res.record["input"][EXTRACTS]["steps"] == [
        {"part": "amount_in_subject", "outcome": "ok", "message": None, "gave": ["amount"]},
        {"part": "amount_in_body", "outcome": "ok", "message": None, "gave": ["amount"]},
        {"part": "order", "outcome": "ok", "message": None, "gave": ["order_id"]},
        {
            "part": "signature",
            "outcome": "error",
            "message": "ValueError: no signature",
            "gave": [],
        },
        {"part": "size", "outcome": "skipped", "message": "inputs missing: amount", "gave": []},
    ]
    assert res.show(timings=False).splitlines()[-7:] == [
        "extracts",
        "  amount_in_subject  ok       amount",
        "  amount_in_body     ok       amount",
        "  order              ok       order_id",
        "  signature          error    ValueError: no signature",
        "  size               skipped  inputs missing: amount",
        "  conflict on amount: extracts disagree: amount_in_subject gave 250, "
        "amount_in_body gave 300",
    ]


def test_replay_uses_the_stored_input_and_never_runs_the_extracts() -> None:
    """A replay reads the merged facts from the record's input: no extract is called again."""
    calls: list[str] = []
    system = System(_claims(calls, signed=True))
    res = system.ask_text(AGREE)
    calls.clear()
    result = system.replay(res.record)
    assert result.same, result.differences
    assert calls == []


def test_a_response_rebuilt_from_a_text_run_is_the_same() -> None:
    """`respond` makes a TextResponse from a run whose input holds $extracts: the same record."""
    res = System(_claims([])).ask_text(DISAGREE)
    again = respond(res._run, "claims", res.record["catalog_version"])
    assert isinstance(again, TextResponse)
    assert again.hash == res.hash
    assert again["refund"] == res["refund"]


def test_the_stored_record_of_a_text_request_is_its_record(tmp_path: Path) -> None:
    """With a store, what is kept is the record ask_text returned (conflicts and all)."""
    system = System(_claims([]), store=tmp_path / "claims.db")
    res = system.ask_text(DISAGREE)
    assert system.store is not None
    assert system.store.get_record(res.request_id or "")["hash"] == res.hash


def test_replay_of_a_conflict_is_the_same() -> None:
    """A replayed text record with a conflict gives the same reasons and hash."""
    system = System(_claims([]))
    result = system.replay(system.ask_text(DISAGREE).record)
    assert result.same, result.differences


# -- the gallery example --------------------------------------------------------------------

TRIAGE = Path(__file__).resolve().parents[2] / "examples" / "triage.py"
TRIAGE_TABLE = """\
ticket  priority  queue     refund
T1      P1        billing   yes
T2      P3        accounts  -
T3      -         shipping  -
T4      spam      spam      -
T5      P3        billing   yes
T3: severity: extracts disagree: tagged_severity gave "low", worded_severity gave "high"
T3: order: ValueError: the ticket mentions an order but gives no number
T4: hard check genuine failed: 3 links
"""


def test_the_triage_example_prints_its_table() -> None:
    """`python examples/triage.py` runs on its own and prints the triage of every ticket."""
    done = subprocess.run(
        [sys.executable, str(TRIAGE)], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == TRIAGE_TABLE
    assert done.stderr == ""


def test_the_triage_example_decides_from_text_alone() -> None:
    """Its tickets abstain where the text is unclear, with reasons naming the extracts."""
    triage = import_file(TRIAGE, "triage_example_under_test")
    res = triage.system.ask_text(triage.TICKETS["T3"])
    assert res["priority"].reason == (
        'inputs missing: severity (extracts disagree: tagged_severity gave "low", '
        'worded_severity gave "high")'
    )
    assert res["refund_review"].guard == "error"
    assert res.text.matched == {"customerId": "customer_id"}
    assert triage.catalog.part("worded_severity").is_async
