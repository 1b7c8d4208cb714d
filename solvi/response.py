"""What `ask` returns: answers, the trace of what ran, and the auditable record."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any, Final, Literal

import attrs

from solvi._run.scheduler import (
    A_END,
    A_FACT,
    A_MESSAGE,
    A_OUTCOME,
    A_PART,
    A_START,
    OK,
    Attempt,
    Cause,
    Run,
)
from solvi._run.steps import Program
from solvi._terminal import visible
from solvi.flow import Flow
from solvi.record import canonical_json, record_hash, shortened, to_record_value
from solvi.strategy import HeadPlan

__all__ = [
    "RECORD_FORMAT",
    "Answer",
    "Response",
    "Safeguard",
    "Step",
    "Trace",
    "answer_of",
    "record_hashes",
    "render",
]

Status = Literal["decided", "forced", "abstained"]
RECORD_FORMAT = "solvi.record/1"
#: what `Response.record` (and a text request's) adds to the body its hash covers
UNHASHED: Final = ("plan", "order", "request_id", "notes", "hash", "decision_hash", "matched")
#: what it adds to each step
UNHASHED_IN_STEPS: Final = ("start_ms", "duration_ms")
#: what the decision hash covers
DECIDING: Final = ("catalog", "catalog_version", "input", "answers")
#: what each line of the default order says about it
_DEFAULT_ORDER = "(default order)"


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@attrs.frozen
class Answer:
    """The answer to one question.

    `status` is ``"decided"`` (the rule, or the question's trained head,
    answered), ``"forced"`` (a failed hard check imposed the question's `forced`
    value) or ``"abstained"`` (no answer; `reason` says why and `guard` names
    what stopped it: a hard check, or ``"timeout"``, ``"error"``, ``"inputs"``,
    ``"cycle"``, ``"head"``). `facts` holds the question's targets that were computed; it is
    left out of equality, since early exit computes fewer of them without
    changing the answer. `probability` is set when a head answered: how likely
    the head found its answer.
    """

    status: Status
    value: Any
    reason: str
    guard: str | None = None
    facts: Mapping[str, Any] = attrs.field(factory=dict, converter=_readonly, eq=False)
    probability: float | None = None

    @property
    def decided(self) -> bool:
        """Whether the rule itself answered."""
        return self.status == "decided"


@attrs.frozen
class Safeguard:
    """A part that timed out or raised: recorded, never raised to the caller."""

    kind: Literal["timeout", "error"]
    part: str
    fact: str
    message: str


@attrs.frozen
class Step:
    """One call of one part: start (ms since the request began), duration (ms), outcome."""

    part: str
    fact: str
    start_ms: float
    duration_ms: float
    outcome: Literal["ok", "timeout", "error"]
    message: str | None = None


@attrs.frozen
class Trace:
    """How a request ran: its steps in flow order, what was skipped and why."""

    steps: tuple[Step, ...]
    skipped: tuple[tuple[str, str], ...]
    early_exit: bool
    #: per fact with several producers: which one was planned, at what cost, and
    #: where that cost came from ("declared", "warm-up", "measured", "recheck", "frozen")
    plan: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, converter=_readonly)
    #: one line per hard check evaluated, in the order it was evaluated
    order: tuple[str, ...] = ()

    def explain_order(self) -> str:
        """Say, one numbered line per hard check, why it ran when it did."""
        return "\n".join(f"{n}. {line}" for n, line in enumerate(self.order, 1))


class Response:
    """The result of one request; everything derived is computed on first access."""

    def __init__(
        self, run: Run, catalog: str, catalog_version: str, *, request_id: str | None = None
    ) -> None:
        self.request_id = request_id
        self._run = run
        self._program: Program = run.program
        self._catalog = catalog
        self._catalog_version = catalog_version

    def __repr__(self) -> str:
        summary = ", ".join(f"{n}={a.status}" for n, a in self.answers.items())
        return f"<Response {self._catalog}: {summary}>"

    # -- answers -----------------------------------------------------------

    def __getitem__(self, question: str) -> Answer:
        return answer_of(self.answers, question, "response")

    def __iter__(self) -> Iterator[str]:
        return iter(self.answers)

    @cached_property
    def answers(self) -> Mapping[str, Answer]:
        """Every question's answer, in the order the questions were given."""
        return MappingProxyType(
            {slot.name: self._answer(slot.index) for slot in self._program.questions}
        )

    def _answer(self, q: int) -> Answer:
        run = self._run
        slot = self._program.questions[q]
        nodes = self._program.nodes
        facts = {t: run.vals[t] for t in slot.targets if t in run.vals and t not in run.state}
        if slot.blocked is not None:
            return Answer("abstained", None, slot.blocked, slot.blocked_guard, facts)
        if q in run.settled:
            check_node, how = run.settled[q]
            check = nodes[check_node].parts[0].name
            if how == "failed":
                said = run.check_reasons.get(nodes[check_node].fact)
                failed = f"hard check {check} failed" + ("" if said is None else f": {said}")
                if slot.has_forced:
                    return Answer("forced", slot.forced, failed, check, facts)
                return Answer(
                    "abstained",
                    None,
                    f"{failed}; the question has no forced value",
                    check,
                    facts,
                )
            cause = run.causes[check_node]
            return Answer(
                "abstained",
                None,
                f"hard check {check} could not be evaluated: {_cause_text(cause)}",
                cause.kind,
                facts,
            )
        for n in slot.answer_nodes:
            if run.status[n] != OK:
                missing = run.causes.get(n)
                if missing is None:
                    return Answer(
                        "abstained", None, f"{nodes[n].fact} was not computed", "inputs", facts
                    )
                return Answer("abstained", None, _cause_text(missing), missing.kind, facts)
        if slot.rule_node is not None:
            fact = nodes[slot.rule_node].fact
            return Answer("decided", run.vals[fact], f"rule {fact}", None, facts)
        plan = self._program.flow.questions[q]
        if isinstance(plan, HeadPlan):
            try:
                label, p = plan.head.decide(run.vals)
            except ValueError as exc:
                return Answer("abstained", None, str(exc), "head", facts)
            return Answer("decided", label, plan.head.reason(label, p), None, facts, p)
        value = {f: run.vals[f] for f in slot.answer_facts if f in run.vals}
        return Answer("decided", value, "reported facts", None, facts)

    @property
    def values(self) -> Mapping[str, Any]:
        """The facts this request computed, in flow order."""
        run = self._run
        return MappingProxyType(
            {n.fact: run.vals[n.fact] for n in self._program.nodes if run.status[n.index] == OK}
        )

    @property
    def notes(self) -> tuple[str, ...]:
        """After a resume: each interrupted step and what became of it."""
        return tuple(self._run.notes)

    @property
    def flow(self) -> Flow:
        """The flow this request ran."""
        return self._program.flow

    @property
    def input(self) -> Mapping[str, Any]:
        """The request's state, as given."""
        return MappingProxyType(self._run.state)

    # -- trace ---------------------------------------------------------------

    @cached_property
    def _skipped(self) -> tuple[tuple[str, str], ...]:
        """(part, reason) for every step that did not run, in flow order."""
        reasons = self._run.skip_reasons
        return tuple((name, reasons[name]) for name in self._program.step_names if name in reasons)

    @cached_property
    def _attempts(self) -> list[Attempt]:
        """The calls in flow order, whatever order they finished in."""
        rank = self._program.part_rank
        return sorted(self._run.attempts, key=lambda a: rank[a[A_PART]])

    @cached_property
    def trace(self) -> Trace:
        """Steps that ran (flow order), steps skipped with their reason, early exit."""
        run = self._run
        t0 = run.started
        steps = tuple(
            Step(
                a[A_PART],
                a[A_FACT],
                round((a[A_START] - t0) * 1000.0, 3),
                round((a[A_END] - a[A_START]) * 1000.0, 3),
                a[A_OUTCOME],  # type: ignore[arg-type]  # attempts hold only these outcomes
                a[A_MESSAGE],
            )
            for a in self._attempts
        )
        return Trace(
            steps=steps,
            skipped=self._skipped,
            early_exit=run.early_exit,
            plan=self._plan_record(),
            order=self._order_lines(),
        )

    def _order_lines(self) -> tuple[str, ...]:
        run = self._run
        if run.order_lines:
            return tuple(str(line) for line in run.order_lines)
        nodes = self._program.nodes
        lines = []
        for i in self._program.phases[0]:
            node = nodes[i]
            if not node.is_hard_check:
                continue
            if run.status[i] == OK:
                outcome = "passed" if run.vals[node.fact] else "failed"
            elif i in run.causes:
                outcome = "could not be evaluated"
            else:
                outcome = "not run"
            lines.append(
                f"{node.parts[0].name}: with every hard check, first {_DEFAULT_ORDER} → {outcome}"
            )
        return tuple(lines)

    def _plan_record(self) -> dict[str, Any]:
        flow = self._program.flow
        prices = self._run.prices
        if prices is None:
            return {f: dict(c) for f, c in flow.choices.items()}
        out: dict[str, Any] = {}
        for fact, choice in flow.choices.items():
            price = prices.get(choice["producer"])
            if price is None:
                out[fact] = dict(choice)
                continue
            out[fact] = {
                "producer": choice["producer"],
                "cost_ms": round(price.cost_ms, 3),
                "source": price.source,
                "candidates": {
                    name: round(prices[name].cost_ms, 3) if name in prices else cost
                    for name, cost in choice["candidates"].items()
                },
            }
            if price.note is not None:
                out[fact]["why"] = price.note
        return out

    @cached_property
    def safeguards(self) -> tuple[Safeguard, ...]:
        """Every timeout and error of this request, in flow order."""
        return tuple(
            Safeguard(a[A_OUTCOME], a[A_PART], a[A_FACT], a[A_MESSAGE] or "")  # type: ignore[arg-type]
            for a in self._attempts
            if a[A_OUTCOME] != "ok"
        )

    # -- record --------------------------------------------------------------

    @cached_property
    def _body(self) -> dict[str, Any]:
        """The record without timings: what the hash covers."""
        run = self._run
        answers: dict[str, dict[str, Any]] = {}
        for name, a in self.answers.items():
            answers[name] = {
                "status": a.status,
                "value": to_record_value(a.value, f"answer {name}"),
                "reason": a.reason,
                "guard": a.guard,
            }
            if a.probability is not None:
                answers[name]["probability"] = a.probability
        return {
            "format": RECORD_FORMAT,
            "catalog": self._catalog,
            "catalog_version": self._catalog_version,
            "input": _input_record(run),
            "early_exit": run.early_exit,
            "flow": list(self._program.step_names),
            "answers": answers,
            "values": {k: to_record_value(v, k) for k, v in self.values.items()},
            "steps": [
                {
                    "part": a[A_PART],
                    "fact": a[A_FACT],
                    "outcome": a[A_OUTCOME],
                    "message": a[A_MESSAGE],
                }
                for a in self._attempts
            ],
            "skipped": [list(pair) for pair in self._skipped],
            "safeguards": [attrs.asdict(s) for s in self.safeguards],
        }

    @cached_property
    def hash(self) -> str:
        """sha256 of the canonical record without timings: the same for the same input
        and the same steps, however they ran (threads, order of completion, process).
        Early exit and the order of hard checks change which steps run, and so this
        hash; `decision_hash` stays the same under them."""
        return record_hash(self._body)

    @cached_property
    def decision_hash(self) -> str:
        """sha256 of the catalog version, the input and the answers only.

        Unlike `hash` it does not cover which steps ran, so it is the same under
        any order of hard checks (with declared guards) and with or without
        early exit: it identifies the decision, `hash` the whole record.
        """
        body = self._body
        return record_hash({key: body[key] for key in DECIDING})

    @property
    def record(self) -> dict[str, Any]:
        """The whole record as JSON-ready data, timings and hash included.

        Raises:
            RecordError: a value has no JSON form; the message names the fact.
        """
        body = dict(self._body)
        body["steps"] = [
            {**entry, "start_ms": s.start_ms, "duration_ms": s.duration_ms}
            for entry, s in zip(body["steps"], self.trace.steps, strict=True)
        ]
        body["plan"] = {
            fact: to_record_value(dict(c), f"plan {fact}") for fact, c in self.trace.plan.items()
        }
        body["order"] = list(self.trace.order)
        body["request_id"] = self.request_id
        body["notes"] = list(self.notes)
        body["hash"] = self.hash
        body["decision_hash"] = self.decision_hash
        return body

    def to_json(self, *, indent: int | None = None) -> str:
        """The record as JSON text (canonical when `indent` is None)."""
        if indent is None:
            return canonical_json(self.record)
        return json.dumps(self.record, indent=indent, sort_keys=True, allow_nan=False)

    def show(self, *, timings: bool = True) -> str:
        """A readable text view of the answers, the steps and what was skipped.

        Args:
            timings: include each step's duration (leave them out for a view
                that is the same on every run).
        """
        return render(self.record, timings=timings)


def answer_of(answers: Mapping[str, Answer], question: str, what: str) -> Answer:
    """`answers[question]`, or a KeyError that lists the questions there are."""
    try:
        return answers[question]
    except KeyError:
        known = ", ".join(answers) or "none"
        msg = f"no question {question!r} in this {what} (questions: {known})"
        raise KeyError(msg) from None


def _cause_text(cause: Cause) -> str:
    return f"{cause.fact}: {cause.describe()}"


#: how each line of the default order ends (then there is no order to explain)
_DEFAULT_ORDER_ENDS = tuple(
    f"{_DEFAULT_ORDER} → {outcome}"
    for outcome in ("passed", "failed", "could not be evaluated", "not run")
)


def render(record: Mapping[str, Any], *, timings: bool = True) -> str:
    """Render a stored or fresh record as text (what `Response.show` and `solvi show` print).

    When a learned order ran, the lines of `Trace.explain_order` close the view. Every
    text taken from the record is shown through `solvi._terminal.visible`: a request's
    values, ids and error messages come from its caller, and escape sequences, bidi
    controls or megabytes in them must not act on the terminal that shows them.
    """
    request_id = record.get("request_id")
    lines = [
        visible(record["catalog"])
        + ("" if request_id is None else f"  request {visible(request_id)}")
        + f"  hash {visible(record['hash'][:12])}"
        + ("" if record["early_exit"] else "  (whole flow)")
    ]
    # a list: two names cut to the same text are still two answers
    answers = [(visible(name), a) for name, a in record["answers"].items()]
    width = max((len(n) for n, _ in answers), default=0)
    for name, a in answers:
        value = "-" if a["status"] == "abstained" else shortened(a["value"], bare_text=True)
        lines.append(
            f"  {name:<{width}}  {visible(a['status']):<9}  {visible(value):<8}  "
            f"{visible(a['reason'])}"
        )
    if record["steps"]:
        lines.append("steps")
        parts = [visible(s["part"]) for s in record["steps"]]
        pw = max(len(p) for p in parts)
        for part, s in zip(parts, record["steps"], strict=True):
            extra = f"  {visible(s['message'])}" if s["message"] else ""
            took = f"  {s['duration_ms']:>9.3f} ms" if timings else ""
            lines.append(f"  {part:<{pw}}  {visible(s['outcome']):<7}{took}{extra}".rstrip())
    if record["skipped"]:
        lines.append("skipped")
        skipped = [(visible(p), visible(reason)) for p, reason in record["skipped"]]
        pw = max(len(p) for p, _ in skipped)
        for part, reason in skipped:
            lines.append(f"  {part:<{pw}}  {reason}")
    order = record.get("order") or []
    if order and not str(order[0]).endswith(_DEFAULT_ORDER_ENDS):
        # A learned order (or an order object) ran: say why each hard check ran when.
        lines.append("order")
        lines.extend(f"  {n}. {visible(line)}" for n, line in enumerate(order, 1))
    notes = record.get("notes") or []
    if notes:
        # A resumed request: what became of the steps its crash interrupted.
        lines.append("notes")
        lines.extend(f"  {visible(note)}" for note in notes)
    return "\n".join(lines)


def _input_record(run: Run) -> dict[str, Any]:
    """The request's input in its record form: each container's as it was taken when
    the request began (scalars cannot change)."""
    forms = run.input_forms or {}
    return {
        k: forms[k] if k in forms else to_record_value(v, f"input {k}")
        for k, v in run.state.items()
    }


def record_hashes(record: Mapping[str, Any]) -> tuple[str, str]:
    """The hash and the decision hash that a record's content gives: a record edited
    after it was made no longer gives the hashes it carries.

    Raises:
        KeyError, TypeError: `record` is not shaped like a decision record.
    """
    body = {k: v for k, v in record.items() if k not in UNHASHED}
    body["steps"] = [
        {k: v for k, v in step.items() if k not in UNHASHED_IN_STEPS} for step in record["steps"]
    ]
    return record_hash(body), record_hash({key: body[key] for key in DECIDING})
