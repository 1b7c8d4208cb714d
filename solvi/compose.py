"""Composition: several Systems asked as one (Cascade, Vote, Route), and batches of requests.

A composite takes anything with a System's interface (`name`, `questions`, `ask`,
`aask`) and has that interface itself, so composites nest: a Cascade of Routes, a
Vote of Cascades. Each returns a `Composite`: the merged answers, whose reasons say
which system answered, and every underlying response, so nothing a member decided
is lost from the audit. `ask_many` and `aask_many` run a batch of requests with
bounded concurrency, one result (or `Failed`) per request, in input order.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal, Protocol

import attrs

from solvi._tasks import each
from solvi.errors import RouteError
from solvi.question import Question
from solvi.record import canonical_json, record_hash, to_record_value
from solvi.response import Answer, answer_of

__all__ = [
    "COMPOSITE_FORMAT",
    "Askable",
    "Cascade",
    "Composite",
    "Result",
    "Route",
    "RouteError",
    "Vote",
]

#: The `format` field of a composite record.
COMPOSITE_FORMAT = "solvi.composite/1"


class Result(Protocol):
    """What `ask` returns: a `Response`, or a `Composite` when systems are composed."""

    @property
    def answers(self) -> Mapping[str, Answer]:
        """Every question's answer."""

    @property
    def hash(self) -> str:
        """sha256 of the record without timings."""

    @property
    def record(self) -> dict[str, Any]:
        """The whole record as JSON-ready data."""


class Askable(Protocol):
    """The interface a composite needs from a member: a `System`'s, or another composite's."""

    @property
    def name(self) -> str:
        """The name reasons and records use for this member."""

    @property
    def questions(self) -> Sequence[Question | str]:
        """The questions this member answers."""

    def ask(self, state: Mapping[str, Any]) -> Result:
        """Answer every question for one request, synchronously."""

    async def aask(self, state: Mapping[str, Any]) -> Result:
        """Answer every question for one request on the running event loop."""


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@attrs.frozen(eq=False)
class Composite:
    """What `Cascade`, `Vote` and `Route` return: merged answers and every member's response.

    Compare composites by `hash`: two requests with equal member hashes and
    equal merged answers have equal hashes, however they ran (`ask` or `aask`).

    Attributes:
        kind: ``"cascade"``, ``"vote"`` or ``"route"``.
        name: the composite's name.
        answers: question -> `Answer`; each reason starts with the member that
            answered (``"rules: rule approve"``), or says how the vote split.
        responses: ``(member name, response)`` pairs, in the order the members
            were asked; a member's response may itself be a `Composite`.
        detail: what else decided the result: the quorum of a vote, the key,
            value and whether the default was taken for a route.
    """

    kind: Literal["cascade", "vote", "route"]
    name: str
    answers: Mapping[str, Answer] = attrs.field(converter=_readonly)
    responses: tuple[tuple[str, Result], ...]
    detail: Mapping[str, Any] = attrs.field(factory=dict, converter=_readonly)

    def __repr__(self) -> str:
        summary = ", ".join(f"{n}={a.status}" for n, a in self.answers.items())
        return f"<Composite {self.kind} {self.name}: {summary}>"

    def __getitem__(self, question: str) -> Answer:
        return answer_of(self.answers, question, "result")

    def __iter__(self) -> Iterator[str]:
        return iter(self.answers)

    @cached_property
    def _body(self) -> dict[str, Any]:
        """The record without the members' own records: what the hash covers."""
        return {
            "format": COMPOSITE_FORMAT,
            "kind": self.kind,
            "name": self.name,
            "detail": to_record_value(dict(self.detail), "detail"),
            "answers": {
                name: {
                    "status": a.status,
                    "value": to_record_value(a.value, f"answer {name}"),
                    "reason": a.reason,
                    "guard": a.guard,
                }
                for name, a in self.answers.items()
            },
            "members": [{"system": label, "hash": r.hash} for label, r in self.responses],
        }

    @cached_property
    def hash(self) -> str:
        """sha256 of the canonical record without the members' records, only their hashes.

        Member hashes leave out timings, so this is the same for the same
        input however the members ran.
        """
        return record_hash(self._body)

    @property
    def record(self) -> dict[str, Any]:
        """The whole record: merged answers, and each member's name, hash and full record.

        Drop ``"hash"`` and each member's ``"record"`` to get what `hash` covers.

        Raises:
            RecordError: a value has no JSON form; the message names where.
        """
        body = dict(self._body)
        body["members"] = [
            {"system": label, "hash": r.hash, "record": r.record} for label, r in self.responses
        ]
        body["hash"] = self.hash
        return body

    def to_json(self) -> str:
        """The record as canonical JSON text (sorted keys, no spaces)."""
        return canonical_json(self.record)


# -- members ------------------------------------------------------------------


def _check_member(where: str, member: Any) -> None:
    missing = [a for a in ("name", "questions", "ask", "aask") if not hasattr(member, a)]
    if missing:
        msg = (
            f"{where} is a {type(member).__name__}, which lacks {', '.join(missing)}; pass a "
            f"solvi.System, a Cascade, a Vote or a Route"
        )
        raise TypeError(msg)


def _members(kind: str, systems: Any) -> tuple[Askable, ...]:
    """The members as a tuple, each checked for the System interface."""
    if isinstance(systems, Mapping) or not isinstance(systems, Iterable):
        msg = (
            f"{kind} takes a list of systems, e.g. {kind}([first, second]), "
            f"got {type(systems).__name__}"
        )
        raise TypeError(msg)
    members = tuple(systems)
    if not members:
        msg = f"{kind} needs at least one system, got an empty list; pass {kind}([a, b])"
        raise ValueError(msg)
    for i, member in enumerate(members):
        _check_member(f"{kind} member {i}", member)
    return members


def _labels(members: Sequence[Askable]) -> tuple[str, ...]:
    """One name per member: its own, or ``name#n`` where distinct members share a name."""
    distinct = list({id(m): m for m in members}.values())
    names = [d.name for d in distinct]
    taken = set(names)  # a member named "a#1" keeps that name: no suffix may reuse it
    seen: dict[str, int] = {}
    label: dict[int, str] = {}
    for d in distinct:
        if names.count(d.name) == 1:
            label[id(d)] = d.name
            continue
        while True:
            seen[d.name] = seen.get(d.name, 0) + 1
            candidate = f"{d.name}#{seen[d.name]}"
            if candidate not in taken:
                break
        taken.add(candidate)
        label[id(d)] = candidate
    return tuple(label[id(m)] for m in members)


def _number_kind(value: Any) -> type | None:
    """bool, int or float for a number (NumPy's too), else None."""
    if isinstance(value, bool):
        return bool
    if isinstance(value, numbers.Integral):
        return int
    if isinstance(value, numbers.Real):
        return float
    return None


def _same_kind(value: Any, routes: Mapping[Any, Any]) -> bool:
    """Whether the route a dict found for `value` is keyed by a number of the same kind:
    True equals 1 and 1.0 to a dict, but a request saying True means no route 1."""
    kind = _number_kind(value)
    return any(k == value and _number_kind(k) is kind for k in routes)


def _union_questions(members: Iterable[Askable]) -> tuple[Question, ...]:
    """Every member's questions, each name once (first member wins), in member order."""
    out: dict[str, Question] = {}
    for m in members:
        for q in m.questions:
            question = Question(q) if isinstance(q, str) else q
            out.setdefault(question.name, question)
    return tuple(out.values())


def _check_state(kind: str, state: Any) -> None:
    if not isinstance(state, Mapping):
        msg = (
            f"a request's state must be a mapping of fact names to values, got "
            f"{type(state).__name__} (asked through {kind})"
        )
        raise TypeError(msg)


def _tagged(label: str, answer: Answer) -> Answer:
    return attrs.evolve(answer, reason=f"{label}: {answer.reason}")


# -- Cascade ------------------------------------------------------------------


@attrs.frozen(init=False, eq=False)
class Cascade:
    """Ask the first system; ask the next only for the questions still abstained on.

    A later system is asked only if it has at least one of the open questions,
    and its answers are taken only for those. The questions are the first
    system's. A question every asked system abstained on stays abstained, and
    its reason lists each system's reason in turn.

    Args:
        systems: the systems, in the order to ask them.
        name: the name reasons and records use (default ``cascade(a, b)``).

    Raises:
        TypeError: `systems` is not a list, or a member lacks the System interface.
        ValueError: `systems` is empty.
    """

    systems: tuple[Askable, ...]
    name: str
    questions: tuple[Question, ...]
    _labels: tuple[str, ...] = attrs.field(repr=False)
    _has: tuple[frozenset[str], ...] = attrs.field(repr=False)

    def __init__(self, systems: Iterable[Askable], *, name: str | None = None) -> None:
        members = _members("Cascade", systems)
        labels = _labels(members)
        self.__attrs_init__(
            members,
            name or f"cascade({', '.join(labels)})",
            _union_questions(members[:1]),
            labels,
            tuple(frozenset(q.name for q in _union_questions([m])) for m in members),
        )

    def _next(self, done: list[tuple[int, Result]]) -> int | None:
        """The next member that has a question every member so far abstained on."""
        still = set(done[0][1].answers)
        for _, response in done:
            still -= {q for q, a in response.answers.items() if a.status != "abstained"}
        for j in range(done[-1][0] + 1, len(self.systems)):
            if still & self._has[j]:
                return j
        return None

    def _merge(self, done: list[tuple[int, Result]]) -> Composite:
        """Fold the responses so far into one result."""
        first_label = self._labels[done[0][0]]
        answers = {q: _tagged(first_label, a) for q, a in done[0][1].answers.items()}
        tried = {
            q: [f"{first_label}: {a.reason}"]
            for q, a in done[0][1].answers.items()
            if a.status == "abstained"
        }
        for j, response in done[1:]:
            label = self._labels[j]
            for q, a in response.answers.items():
                if q not in tried:
                    continue
                if a.status != "abstained":
                    answers[q] = _tagged(label, a)
                    del tried[q]
                else:
                    tried[q].append(f"{label}: {a.reason}")
                    answers[q] = attrs.evolve(a, reason="; ".join(tried[q]))
        return Composite(
            "cascade",
            self.name,
            answers,
            tuple((self._labels[j], r) for j, r in done),
        )

    def ask(self, state: Mapping[str, Any]) -> Composite:
        """Ask the systems in turn until no question is left abstained.

        Raises:
            TypeError: `state` is not a mapping (or a member rejects it).
        """
        _check_state("Cascade", state)
        done: list[tuple[int, Result]] = [(0, self.systems[0].ask(state))]
        while (j := self._next(done)) is not None:
            done.append((j, self.systems[j].ask(state)))
        return self._merge(done)

    async def aask(self, state: Mapping[str, Any]) -> Composite:
        """`ask` on the running event loop: the same answers and hash.

        Raises:
            TypeError: `state` is not a mapping (or a member rejects it).
        """
        _check_state("Cascade", state)
        done: list[tuple[int, Result]] = [(0, await self.systems[0].aask(state))]
        while (j := self._next(done)) is not None:
            done.append((j, await self.systems[j].aask(state)))
        return self._merge(done)


# -- Vote ---------------------------------------------------------------------


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@attrs.frozen(init=False, eq=False)
class Vote:
    """Ask every system; per question, the value enough of them gave wins.

    Decided and forced answers are votes; abstentions are not. A value wins
    when at least `quorum` members gave it (values compared with ``==``) and
    no other value has as many votes. Otherwise the question abstains with
    guard ``"vote"`` and a reason that shows the split. A winner is
    ``"decided"`` if any of its voters decided, else ``"forced"``.

    Args:
        systems: the voters (each at most once).
        quorum: the votes a value needs (default: a majority of the systems).
        name: the name reasons and records use (default ``vote(a, b, c)``).

    Raises:
        TypeError: `systems` is not a list, or a member lacks the System interface.
        ValueError: `systems` is empty or lists one system twice, or `quorum`
            is not a whole number from 1 to the number of systems.
    """

    systems: tuple[Askable, ...]
    quorum: int
    name: str
    questions: tuple[Question, ...]
    _labels: tuple[str, ...] = attrs.field(repr=False)

    def __init__(
        self, systems: Iterable[Askable], *, quorum: int | None = None, name: str | None = None
    ) -> None:
        members = _members("Vote", systems)
        for i, m in enumerate(members):
            if any(m is other for other in members[:i]):
                msg = (
                    f"Vote lists system {m.name!r} twice, so it would vote twice; list each "
                    f"system once"
                )
                raise ValueError(msg)
        n = len(members)
        majority = n // 2 + 1
        if quorum is None:
            quorum = majority
        elif isinstance(quorum, bool) or not isinstance(quorum, int) or not 1 <= quorum <= n:
            msg = (
                f"quorum must be a whole number from 1 to {n} (the number of systems), got "
                f"{quorum!r}; leave it out for a majority ({majority} of {n})"
            )
            raise ValueError(msg)
        labels = _labels(members)
        self.__attrs_init__(
            members,
            quorum,
            name or f"vote({', '.join(labels)})",
            _union_questions(members),
            labels,
        )

    def _count(self, question: str, votes: list[tuple[str, Answer]]) -> Answer:
        """The answer of one question from the members' answers to it."""
        groups: list[tuple[Any, list[str], list[Answer]]] = []
        abstained: list[str] = []
        for label, a in votes:
            if a.status == "abstained":
                abstained.append(label)
                continue
            for value, labels, answers in groups:
                if bool(value == a.value):
                    labels.append(label)
                    answers.append(a)
                    break
            else:
                groups.append((a.value, [label], [a]))
        best = max((len(g[1]) for g in groups), default=0)
        leaders = [g for g in groups if len(g[1]) == best]
        if best >= self.quorum and len(leaders) == 1:
            value, labels, answers = leaders[0]
            decided = [a for a in answers if a.status == "decided"]
            lead = decided[0] if decided else answers[0]
            return Answer(
                "decided" if decided else "forced",
                value,
                f"vote {best} of {len(votes)} for {_show(value)} "
                f"(quorum {self.quorum}): {', '.join(labels)}",
                None if decided else lead.guard,
                lead.facts,
            )
        split = [f"{_show(v)} from {', '.join(labels)}" for v, labels, _ in groups]
        if abstained:
            split.append(f"abstained: {', '.join(abstained)}")
        why = (
            f"tie at {best} votes"
            if best >= self.quorum
            else f"no value reached quorum {self.quorum}"
        )
        return Answer("abstained", None, f"{why} ({'; '.join(split)})", "vote")

    def _tally(self, responses: Sequence[Result]) -> Composite:
        names: dict[str, None] = {}
        for r in responses:
            names.update(dict.fromkeys(r.answers))
        answers = {
            q: self._count(
                q,
                [
                    (label, r.answers[q])
                    for label, r in zip(self._labels, responses, strict=True)
                    if q in r.answers
                ],
            )
            for q in names
        }
        return Composite(
            "vote",
            self.name,
            answers,
            tuple(zip(self._labels, responses, strict=True)),
            {"quorum": self.quorum},
        )

    def ask(self, state: Mapping[str, Any]) -> Composite:
        """Ask every system, one after another, and count the votes.

        Raises:
            TypeError: `state` is not a mapping (or a member rejects it).
        """
        _check_state("Vote", state)
        return self._tally([m.ask(state) for m in self.systems])

    async def aask(self, state: Mapping[str, Any]) -> Composite:
        """Ask every system concurrently, in one task group, and count the votes.

        The answers and hash equal those of `ask`, and so does what it raises:
        when members raise, every member still runs to its end and the error of
        the first in order is raised, as `ask` (which asks them in order) raises
        it, whichever failed first in time.

        Raises:
            TypeError: `state` is not a mapping (or a member rejects it).
        """
        _check_state("Vote", state)
        responses: list[Result | None] = [None] * len(self.systems)
        errors: list[Exception | None] = [None] * len(self.systems)

        async def one(i: int) -> None:
            try:
                responses[i] = await self.systems[i].aask(state)
            except Exception as exc:  # kept for its place in the order, raised below
                errors[i] = exc

        await each(len(self.systems), one)
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first
        return self._tally([r for r in responses if r is not None])


# -- Route --------------------------------------------------------------------


@attrs.frozen(init=False, eq=False)
class Route:
    """Pick one system per request by the value of one state key.

    A value with no route goes to `default`; without a default it raises
    `RouteError` rather than abstaining, since a value nobody expected is a
    gap in the routing table to fix, not a decision. A state without the key
    raises `RouteError` whether or not there is a default.

    Args:
        key: the state key whose value picks the system.
        routes: value -> system.
        default: the system for every other value (default: none).
        name: the name reasons and records use (default ``route(key)``).

    Raises:
        TypeError: `key` is not a string, `routes` is not a mapping, or a
            system lacks the System interface.
        ValueError: `routes` is empty.
    """

    key: str
    routes: Mapping[Any, Askable]
    default: Askable | None
    name: str
    questions: tuple[Question, ...]
    _labels: Mapping[int, str] = attrs.field(repr=False)

    def __init__(
        self,
        key: str,
        routes: Mapping[Any, Askable],
        default: Askable | None = None,
        *,
        name: str | None = None,
    ) -> None:
        if not isinstance(key, str) or not key:
            msg = f"Route needs the state key to route on as a non-empty string, got {key!r}"
            raise TypeError(msg)
        if not isinstance(routes, Mapping):
            msg = (
                f"Route routes must be a mapping of values of state[{key!r}] to systems, "
                f"e.g. {{'eu': eu_system}}, got {type(routes).__name__}"
            )
            raise TypeError(msg)
        if not routes:
            msg = (
                f"Route on {key!r} has no routes; give at least one, e.g. "
                f"Route({key!r}, {{'eu': eu_system}})"
            )
            raise ValueError(msg)
        for value, member in routes.items():
            _check_member(f"Route {key!r} value {value!r}", member)
        if default is not None:
            _check_member(f"Route {key!r} default", default)
        members = [*routes.values(), *([default] if default is not None else [])]
        labels = _labels(members)
        self.__attrs_init__(
            key,
            MappingProxyType(dict(routes)),
            default,
            name or f"route({key})",
            _union_questions(members),
            MappingProxyType({id(m): label for m, label in zip(members, labels, strict=True)}),
        )

    def pick(self, state: Mapping[str, Any]) -> tuple[Askable, bool]:
        """The system for this state, and whether it is the default.

        Raises:
            TypeError: `state` is not a mapping.
            RouteError: the state lacks the key, or has a value with no
                route and there is no default.
        """
        _check_state("Route", state)
        known = tuple(self.routes)
        if self.key not in state:
            msg = (
                f"Route {self.name!r} routes on state[{self.key!r}], but the state has no "
                f"{self.key!r} (keys: {', '.join(map(str, state)) or 'none'}); add it"
            )
            raise RouteError(msg, key=self.key, value=None, known=known)
        value = state[self.key]
        try:
            member = self.routes.get(value)
        except TypeError:  # an unhashable value matches no route
            member = None
        if member is not None and not _same_kind(value, self.routes):
            member = None  # True or 1.0 is not the route 1, though a dict finds it
        if member is not None:
            return member, False
        if self.default is not None:
            return self.default, True
        msg = (
            f"Route {self.name!r} has no system for {self.key}={value!r} (known values: "
            f"{', '.join(map(repr, known))}); add a route for it or pass default="
        )
        raise RouteError(msg, key=self.key, value=value, known=known)

    def _wrap(
        self, state: Mapping[str, Any], member: Askable, fallback: bool, res: Result
    ) -> Composite:
        label = self._labels[id(member)]
        value = state[self.key]
        how = "by default for" if fallback else "by"
        answers = {
            q: attrs.evolve(a, reason=f"{label} ({how} {self.key}={_show(value)}): {a.reason}")
            for q, a in res.answers.items()
        }
        return Composite(
            "route",
            self.name,
            answers,
            ((label, res),),
            {"key": self.key, "value": value, "default": fallback},
        )

    def ask(self, state: Mapping[str, Any]) -> Composite:
        """Ask the system the state's value picks.

        Raises:
            TypeError: `state` is not a mapping (or the member rejects it).
            RouteError: see `pick`.
        """
        member, fallback = self.pick(state)
        return self._wrap(state, member, fallback, member.ask(state))

    async def aask(self, state: Mapping[str, Any]) -> Composite:
        """`ask` on the running event loop: the same answers and hash.

        Raises:
            TypeError: `state` is not a mapping (or the member rejects it).
            RouteError: see `pick`.
        """
        member, fallback = self.pick(state)
        return self._wrap(state, member, fallback, await member.aask(state))
