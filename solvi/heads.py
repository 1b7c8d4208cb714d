"""Heads: answers learned from labelled examples, which narrow a question's flow.

`facts_for` runs the whole flow on each example and keeps every fact it
computed, with what each step took. `fit` trains a `Head` on them for a
question without a rule: it selects, greedily, the facts worth their cost, and
from then on the question's targets are those facts, so its flow runs only
their producers and the head answers it. Heads are kept in the store, their
digest is part of `System.version` (so a record is replayed with the head that
made it), and `save_heads` writes them to a JSON checkpoint that
`solvi.strategy.ModelStrategist.load` plans from in another process.

The cost of a set of facts is the cost of the flow their question would run:
every step of the question's narrowed flow (the facts' producers, what they
read, the checks the planner adds and the question's `requires`), each counted
once however many facts share it; request keys cost nothing. A step costs its
first producer's declared ``cost=``, else the mean time `facts_for` measured.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import reprlib
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from time import perf_counter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

from solvi._run.scheduler import A_END, A_FACT, A_START, OK, Run
from solvi._run.steps import Program, compile_flow
from solvi._run.sync import run_sequential
from solvi.errors import PlanError, SolviError, _closest, _finite
from solvi.flow import Flow
from solvi.inputs import as_state
from solvi.mistakes import SolviWarning
from solvi.order import (
    CheckpointError,
    Head,
    Label,
    LinearScore,
    Row,
    checkpoint_text,
    class_probabilities,
    features_of,
    fit_scores,
    is_label,
    read_checkpoint,
)
from solvi.question import Question
from solvi.record import canonical_json
from solvi.strategy import ModelStrategist, Strategist

if TYPE_CHECKING:
    from solvi.system import System

__all__ = [
    "EPOCHS",
    "FOLDS",
    "HEADS_BLOB",
    "MIN_EXAMPLES",
    "MIN_GAIN",
    "FactsTable",
    "attach_heads",
    "facts_for",
    "fit",
    "objective",
    "save_heads",
]

#: the store blob that keeps a catalog's heads
HEADS_BLOB = "heads"
#: passes over the examples when a head's models are trained
EPOCHS = 20
#: folds of the cross-validation that scores a set of facts
FOLDS = 3
#: a fact is added only if it lowers the selection's `objective` by this much
#: (cross-validated log loss, in nats per example, plus this much per e-fold of cost)
MIN_GAIN = 0.005
#: fewer labelled examples than this are refused
MIN_EXAMPLES = 10
_SEED = 0


def _read_only(rows: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    return tuple(MappingProxyType(dict(r)) for r in rows)


@attrs.frozen(eq=False)
class FactsTable:
    """What heads learn from: one row per example, every fact of its whole flow.

    Attributes:
        keys: each example's request keys.
        values: each example's keys and computed facts (in flow order), as
            ``system.ask(state, early_exit=False).values`` has them on top of the
            state; a fact whose step raised or timed out is missing.
        rows: `values` flattened as the order model's rows: numbers and booleans
            as they are, a string as ``fact=value``, one level into dicts
            (``applicant.income``); see `solvi.order.features_of`.
        ms: per example, each computed fact's measured time (ms, all its producers' calls).
        facts: every fact seen, keys first, in first-seen order.
    """

    keys: tuple[frozenset[str], ...]
    values: tuple[Mapping[str, Any], ...] = attrs.field(converter=_read_only)
    rows: tuple[Mapping[str, float], ...] = attrs.field(converter=_read_only)
    ms: tuple[Mapping[str, float], ...] = attrs.field(converter=_read_only)
    facts: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.values)

    @property
    def mean_ms(self) -> Mapping[str, float]:
        """Each computed fact's mean measured time (ms) over the examples that computed it."""
        total: dict[str, float] = {}
        count: Counter[str] = Counter()
        for took in self.ms:
            for fact, ms in took.items():
                total[fact] = total.get(fact, 0.0) + ms
                count[fact] += 1
        return MappingProxyType({f: total[f] / count[f] for f in total})


def _base(system: System) -> Strategist:
    strategist = system.settings.strategist
    return strategist.base if isinstance(strategist, ModelStrategist) else strategist


def facts_for(system: System, states: Iterable[Mapping[str, Any]]) -> FactsTable:
    """The facts a head may learn from: the whole flow of each state, and what it cost.

    Each state runs through the flow planned for its keys as if no head had
    been fitted (so a fitted head hides no fact from the next fit), with
    ``early_exit=False``, one step after another, with no journal, store, hooks
    or learning: training runs are not decisions.

    Args:
        states: the examples, each a request's state.

    Returns:
        A `FactsTable`, one row per state.

    Raises:
        TypeError: a state is not a mapping with string keys.
        RequestError: a state sets a hard check or a fact one reads.
    """
    base = _base(system)
    programs: dict[frozenset[str], Program] = {}
    keys_of: list[frozenset[str]] = []
    values: list[dict[str, Any]] = []
    ms: list[dict[str, float]] = []
    seen: dict[str, None] = {}
    for given in states:
        state = as_state(given)
        keys = frozenset(state)
        program = programs.get(keys)
        if program is None:
            system.guard.check(keys)
            flow = base.plan(system.catalog.parts, system.questions, keys)
            program = programs[keys] = compile_flow(flow)
        run = Run(
            program,
            state,
            early_exit=False,
            timeout=system.timeout,
            started=perf_counter(),
            found=system.guards == "found",
        )
        run_sequential(run)
        vals = dict(state)
        vals.update((n.fact, run.vals[n.fact]) for n in program.nodes if run.status[n.index] == OK)
        took: dict[str, float] = {}
        for a in run.attempts:
            took[a[A_FACT]] = took.get(a[A_FACT], 0.0) + (a[A_END] - a[A_START]) * 1000.0
        keys_of.append(keys)
        values.append(vals)
        ms.append(took)
        seen.update(dict.fromkeys(state))
        seen.update(dict.fromkeys(n.fact for n in program.nodes))
    return FactsTable(
        keys=tuple(keys_of),
        values=values,
        rows=[features_of(v, v) for v in values],
        ms=ms,
        facts=tuple(seen),
    )


# -- fitting --------------------------------------------------------------------------


def _ruleless(system: System, name: str) -> Question:
    names = [q.name for q in system.questions]
    if name not in names:
        msg = (
            f"fit: this System has no question {name!r}{_closest(name, names)}; its "
            f"questions are {', '.join(names)}"
        )
        raise PlanError(msg, name=name)
    question = system.questions[names.index(name)]
    rule = question.rule
    if rule is None and question.uses is None:
        part = next((p for p in system.catalog.parts if p.name == name), None)
        rule = name if part is not None and part.kind == "rule" else None
    if rule is not None:
        msg = (
            f"fit: question {name!r} is answered by its rule {rule!r}, and a rule's "
            f"arguments come before a head's facts in planning; fit a question without a "
            f"rule instead, e.g. Question({name + '_head'!r}, uses=[...]) (the head's facts "
            f"take the place of its uses)"
        )
        raise PlanError(msg, name=name)
    return question


def _labels(labels: Iterable[Any], n: int) -> tuple[list[Label], tuple[Label, ...]]:
    given = list(labels)
    if len(given) != n:
        msg = f"fit: {n} states but {len(given)} labels; give one label per state, in order"
        raise ValueError(msg)
    if n < MIN_EXAMPLES:
        msg = f"fit needs at least {MIN_EXAMPLES} labelled states, got {n}"
        raise ValueError(msg)
    for i, label in enumerate(given):
        if not is_label(label):
            shown = (
                f"an integer of {label.bit_length():,} bits"
                if isinstance(label, int) and label.bit_length() > 64
                else reprlib.repr(label)
            )
            msg = (
                f"fit: label {i} is {shown} ({type(label).__name__}); a label is a string "
                f"(at most 200 characters), a whole number of at most 64 bits or a boolean"
            )
            raise TypeError(msg)
    kinds = sorted({type(label).__name__ for label in given})
    if len(kinds) > 1:
        msg = f"fit: the labels mix {' and '.join(kinds)}; use labels of one kind"
        raise TypeError(msg)
    classes = tuple(sorted(set(given)))
    if len(classes) < 2:
        msg = f"fit: every label is {classes[0]!r}; a head needs examples of two classes or more"
        raise ValueError(msg)
    return given, classes


def _budget(budget_ms: float | None) -> float | None:
    if budget_ms is None:
        return None
    if not _finite(budget_ms) or budget_ms < 0:
        msg = f"fit: budget_ms must be a number of milliseconds, 0 or more, got {budget_ms!r}"
        raise ValueError(msg)
    return float(budget_ms)


def _probe(question: str, facts: tuple[str, ...]) -> Head:
    """A head with these facts and no weights: enough to plan its question's flow."""
    return Head(question, facts, (False, True), (LinearScore(0.0, ()),), "", 0.0, None, 0.0, 0)


class _Costs:
    """What a set of facts costs per decision of one question (see the module docstring)."""

    def __init__(self, system: System, table: FactsTable, question: str) -> None:
        self._system = system
        self._base = _base(system)
        self._question = question
        self._keys = Counter(table.keys)
        self._measured = table.mean_ms
        self._known: dict[tuple[str, ...], float] = {}

    def __call__(self, facts: tuple[str, ...]) -> float:
        key = tuple(sorted(facts))
        cost = self._known.get(key)
        if cost is None:
            total = 0.0
            heads = {self._question: _probe(self._question, key)}
            for keys, count in self._keys.items():
                flow = self._plan(keys, heads)
                needed = flow.question(self._question).facts
                for node in flow.nodes:
                    if node.fact in needed:
                        declared = node.parts[0].cost
                        step = self._measured.get(node.fact, 0.0) if declared is None else declared
                        total += step * count
            cost = self._known[key] = total / max(1, sum(self._keys.values()))
        return cost

    def _plan(self, keys: frozenset[str], heads: Mapping[str, Head]) -> Flow:
        return ModelStrategist(heads.values(), self._base).plan(
            self._system.catalog.parts, self._system.questions, keys
        )


def _folds(n: int) -> list[list[int]]:
    order = list(range(n))
    random.Random(_SEED).shuffle(order)
    return [order[k::FOLDS] for k in range(FOLDS)]


def _score(
    rows: Sequence[Row], labels: Sequence[Label], classes: tuple[Label, ...], folds: list[list[int]]
) -> tuple[float, float]:
    """Cross-validated (accuracy, mean log loss) of a head trained on these rows."""
    correct = 0
    loss = 0.0
    for k, held in enumerate(folds):
        train = [i for j, fold in enumerate(folds) if j != k for i in fold]
        models = fit_scores(
            [rows[i] for i in train], [labels[i] for i in train], classes, epochs=EPOCHS
        )
        for i in held:
            probs = class_probabilities(models, len(classes), rows[i])
            best = max(range(len(probs)), key=lambda c: (probs[c], -c))
            truth = classes.index(labels[i])
            correct += best == truth
            loss -= math.log(max(probs[truth], 1e-12))
    return correct / len(labels), loss / len(labels)


def _select(
    pieces: Sequence[Mapping[str, Row]],
    labels: Sequence[Label],
    classes: tuple[Label, ...],
    candidates: Sequence[str],
    cost: _Costs,
    budget: float | None,
) -> tuple[tuple[str, ...], float]:
    """Greedy forward selection on cost-aware log loss (see `objective`): add the fact
    that lowers it most, by at least `MIN_GAIN`, while the set's cost stays within
    `budget`. Returns the facts and their cross-validated accuracy."""
    folds = _folds(len(labels))

    def rows_of(facts: tuple[str, ...]) -> list[Row]:
        out = []
        for piece in pieces:
            row: Row = {}
            for f in facts:
                row.update(piece[f])
            out.append(row)
        return out

    chosen: tuple[str, ...] = ()
    accuracy, loss = _score(rows_of(chosen), labels, classes, folds)
    current = objective(loss, cost(chosen))
    while True:
        options: list[tuple[float, float, int, float, str]] = []
        for rank, fact in enumerate(candidates):
            if fact in chosen:
                continue
            trial = (*chosen, fact)
            price = cost(trial)
            if budget is not None and price > budget:
                continue
            acc, trial_loss = _score(rows_of(trial), labels, classes, folds)
            value = objective(trial_loss, price)
            if value <= current - MIN_GAIN:
                options.append((value, price, rank, acc, fact))
        if not options:
            return chosen, accuracy
        current, _, _, accuracy, fact = min(options)
        chosen = (*chosen, fact)


def objective(loss: float, cost_ms: float) -> float:
    """What selection minimises: cross-validated log loss (nats per example) plus
    ``MIN_GAIN * ln(1 + cost_ms)``, so each e-fold rise of one plus the cost per
    decision must buy another `MIN_GAIN` of log loss."""
    return loss + MIN_GAIN * math.log1p(cost_ms)


def fit(
    system: System,
    question: str,
    states: Iterable[Mapping[str, Any]] | FactsTable,
    labels: Iterable[Any],
    *,
    features: Iterable[str] | None = None,
    budget_ms: float | None = None,
) -> Head:
    """Train a head for a question without a rule, and answer it with the head from now on.

    The head is trained on `facts_for(states)`. Without `features` it selects
    them: greedy forward selection, each step adding the fact that lowers the
    `objective` most (cross-validated log loss, plus `MIN_GAIN` per e-fold of
    one plus the cost per decision), by at least `MIN_GAIN`, as long as the
    question's narrowed flow costs at most `budget_ms` per decision. From then
    on the question's targets are the head's facts: its flow runs only their
    producers (and what the planner always adds), and it is answered
    ``decided`` with the head's most likely class, its probability, and a
    reason naming the head and its facts.
    The head is kept in the store and changes `System.version`; the cached
    flows are dropped. Fit between requests, not while others run.

    Args:
        question: the name of one of the System's questions, one without a rule.
        states: the examples (request states), or a `FactsTable` of them.
        labels: each example's right answer: strings, whole numbers or booleans,
            of one kind, two classes or more.
        features: train on exactly these facts (no selection).
        budget_ms: the most the head's facts may cost per decision (ms).

    Returns:
        The new `Head`.

    Raises:
        PlanError: the question is unknown or has a rule, or a feature names no fact.
        ValueError: too few examples, labels that do not match the states, one class
            only, a bad budget, or no set of facts within the budget.
        TypeError: a label is not a string, a whole number or a boolean.
    """
    q = _ruleless(system, question)
    table = states if isinstance(states, FactsTable) else facts_for(system, states)
    given, classes = _labels(labels, len(table))
    budget = _budget(budget_ms)
    cost = _Costs(system, table, q.name)
    floor = cost(())
    if budget is not None and floor > budget:
        msg = (
            f"fit: no head of question {q.name!r} fits budget_ms={budget:g}: with no facts at "
            f"all its flow costs {floor:.1f} ms per decision (its requires and the checks "
            f"the planner adds); raise the budget"
        )
        raise ValueError(msg)
    usable = [f for f in table.facts if any(features_of(v, (f,)) for v in table.values)]
    pieces = [{f: features_of(v, (f,)) for f in usable} for v in table.values]
    if features is None:
        chosen, accuracy = _select(pieces, given, classes, usable, cost, budget)
    else:
        chosen = tuple(dict.fromkeys([features] if isinstance(features, str) else features))
        for f in chosen:
            if f not in usable:
                msg = (
                    f"fit: feature {f!r} is not a fact the examples have a number, boolean "
                    f"or string for{_closest(f, usable)}; name facts of facts_for(states)"
                )
                raise PlanError(msg, name=f)
        if budget is not None and cost(chosen) > budget:
            msg = (
                f"fit: the features {', '.join(chosen)} cost {cost(chosen):.1f} ms per "
                f"decision, over budget_ms={budget:g}; drop some, or leave features out to "
                f"select within the budget"
            )
            raise ValueError(msg)
        rows = [{k: v for f in chosen for k, v in p[f].items()} for p in pieces]
        accuracy = _score(rows, given, classes, _folds(len(given)))[0]
    rows = [{k: v for f in chosen for k, v in p[f].items()} for p in pieces]
    head = Head(
        question=q.name,
        facts=chosen,
        classes=classes,
        models=fit_scores(rows, given, classes, epochs=EPOCHS),
        catalog_version=system.catalog.version,
        cost_ms=round(cost(chosen), 6),
        budget_ms=budget,
        accuracy=accuracy,
        rows=len(given),
    )
    _install(system, {**system.heads, q.name: head})
    _keep(system)
    return head


# -- keeping heads: the System, the store, checkpoints ------------------------------------


def _problem(system: System, head: Head) -> str | None:
    """Why this System cannot use a head (None: it can)."""
    names = [q.name for q in system.questions]
    if head.catalog_version != system.catalog.version:
        return (
            f"head {head.question!r} was fitted on catalog version {head.catalog_version}, "
            f"this catalog {system.name!r} is version {system.catalog.version}; fit it again"
        )
    if head.question not in names:
        return (
            f"head {head.question!r} answers a question this System does not ask (it asks "
            f"{', '.join(names)})"
        )
    try:
        _ruleless(system, head.question)
    except PlanError:
        return f"head {head.question!r} answers a question that has a rule in this System"
    known = {p.provides for p in system.catalog.parts} | set(system.catalog.inputs)
    unknown = [f for f in head.facts if f not in known]
    if unknown:
        return f"head {head.question!r} reads {', '.join(unknown)}, which the catalog lacks"
    return None


def attach_heads(system: System) -> Mapping[str, Head]:
    """At build: take the heads of the store and of a `ModelStrategist`, and plan with them.

    A checkpoint's head that this System cannot use is a `PlanError`; a stored
    one (fitted on another catalog version, say) is left out with a `SolviWarning`.
    """
    found: dict[str, Head] = {}
    if system.store is not None:
        saved = system.store.load_blob(system.name, HEADS_BLOB)
        if saved is not None:
            found.update(_stored(system, saved))
    strategist = system.settings.strategist
    if isinstance(strategist, ModelStrategist):
        if strategist.catalog is not None and strategist.catalog != system.name:
            msg = (
                f"the heads of this ModelStrategist were fitted on catalog "
                f"{strategist.catalog!r}, not {system.name!r}; load the checkpoint of this catalog"
            )
            raise PlanError(msg, name=strategist.catalog)
        for head in strategist.heads.values():
            problem = _problem(system, head)
            if problem is not None:
                msg = f"{problem}; checkpoint refused"
                raise PlanError(msg, name=head.question)
        found.update(strategist.heads)
    elif not found:
        return MappingProxyType({})
    _install(system, found)
    return system.heads


def _stored(system: System, saved: bytes) -> dict[str, Head]:
    try:
        heads = read_checkpoint(saved, source=f"store {system.store}").heads
    except CheckpointError as exc:
        warnings.warn(f"stored heads not used: {exc}", SolviWarning, stacklevel=4)
        return {}
    usable: dict[str, Head] = {}
    asked = {q.name for q in system.questions}
    for head in heads:
        if head.question not in asked:
            continue  # another System of this catalog asks it
        problem = _problem(system, head)
        if problem is None:
            usable[head.question] = head
        else:
            warnings.warn(f"stored head not used: {problem}", SolviWarning, stacklevel=4)
    return usable


def _install(system: System, heads: Mapping[str, Head]) -> None:
    """Plan with these heads from now on: a new strategist, no cached flows, a new version."""
    strategist = ModelStrategist(heads.values(), _base(system), catalog=system.name)
    system.settings = attrs.evolve(system.settings, strategist=strategist)
    version = system.catalog.version
    if heads:
        pairs = sorted([q, h.digest] for q, h in heads.items())
        version += "+" + hashlib.sha256(canonical_json(pairs).encode()).hexdigest()[:12]
    questions_digest = system.planner.journal_version.rsplit(".", 1)[-1]
    system.version = version
    system.planner.replan(strategist, f"{version}.{questions_digest}")
    system.heads = MappingProxyType(dict(heads))


def _keep(system: System) -> None:
    """Write the System's heads to its store, beside the stored heads of questions it
    does not ask."""
    if system.store is None:
        return
    asked = {q.name for q in system.questions}
    kept: dict[str, Head] = {}
    saved = system.store.load_blob(system.name, HEADS_BLOB)
    if saved is not None:
        try:
            old = read_checkpoint(saved, source="store").heads
        except CheckpointError:
            old = ()
        kept = {
            h.question: h
            for h in old
            if h.question not in asked and h.catalog_version == system.catalog.version
        }
    kept.update(system.heads)
    text = checkpoint_text(system.name, system.catalog.version, kept.values())
    system.store.save_blob(system.name, HEADS_BLOB, text.encode())


def save_heads(system: System, path: str | os.PathLike[str]) -> None:
    """Write the System's heads to a JSON checkpoint, for `ModelStrategist.load`.

    The file holds data only (reading it runs nothing) and is replaced whole:
    written beside, then renamed.

    Raises:
        SolviError: the System has no heads.
        OSError: the file cannot be written.
    """
    if not system.heads:
        msg = (
            "save_heads(): this System has no heads to save; train one first with "
            "system.fit(question, states, labels)"
        )
        raise SolviError(msg)
    target = os.fspath(path)
    partial = f"{target}.partial-{os.getpid()}"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(checkpoint_text(system.name, system.catalog.version, system.heads.values()))
    os.replace(partial, target)
