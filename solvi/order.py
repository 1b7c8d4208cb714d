"""Learned models: the order of hard checks, and heads that answer questions.

`OrderModel` keeps, per hard check, Laplace counts and then a small logistic
model (`FastHead`) over the request's scalar values (and one level of dicts,
``invoice.currency``) plus any cheap computed facts named as features. The
scheduler asks it `p_fail(check, row)` to rank checks by expected saving.

A `Head` is a trained answer to a question without a rule: `FastHead` models
(one, or one per class when the labels have more than two values) over the
facts it selected, frozen into plain numbers so that a checkpoint holds it as
JSON data and reading one runs nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

import solvi._fields as check
from solvi._fields import MAX_CHECKPOINT_BYTES
from solvi.errors import CheckpointError, _finite
from solvi.record import canonical_json

__all__ = [
    "CHECKPOINT_FORMAT",
    "MAX_CHECKPOINT_BYTES",
    "Checkpoint",
    "CheckpointError",
    "FastHead",
    "Head",
    "Label",
    "LinearScore",
    "OrderLine",
    "OrderModel",
    "OrderPolicy",
    "checkpoint_text",
    "class_probabilities",
    "features_of",
    "fit_scores",
    "is_label",
    "read_checkpoint",
]

Row = dict[str, float]


@attrs.frozen
class OrderLine:
    """Why a learned order evaluated one hard check when it did."""

    check: str
    p_fail: float
    saves_ms: float
    costs_ms: float
    score: float
    unblocks: tuple[str, ...]
    outcome: str
    settles: tuple[str, ...]

    def __str__(self) -> str:
        text = (
            f"{self.check}: P(fail) {self.p_fail:.2f} × saves {self.saves_ms:.1f} ms "
            f"÷ costs {self.costs_ms:.1f} ms = {self.score:.3g}"
        )
        if self.unblocks:
            text += f" [unblocks {', '.join(self.unblocks)} (already decided by a failed check)]"
        text += f" → {self.outcome}"
        if self.settles:
            text += f"; settles {', '.join(self.settles)}"
        return text


@runtime_checkable
class OrderPolicy(Protocol):
    """Anything that can rank hard checks: the learned model, or an oracle."""

    def row(self, vals: Mapping[str, Any], init_keys: Iterable[str]) -> Row:
        """The features of one request, from its values and the keys it brought."""
        ...

    def p_fail(self, check: str, row: Row) -> float:
        """Probability that `check` fails on a request with these features."""
        ...


def _flatten(prefix: str, value: Any, out: Row, depth: int) -> None:
    if isinstance(value, bool):
        out[prefix] = 1.0 if value else 0.0
    elif _finite(value):
        out[prefix] = float(value)
    elif isinstance(value, str):
        out[f"{prefix}={value}"] = 1.0
    elif isinstance(value, Mapping) and depth == 0:
        for k, v in value.items():
            if isinstance(k, str):
                _flatten(f"{prefix}.{k}", v, out, 1)


def features_of(vals: Mapping[str, Any], names: Iterable[str]) -> Row:
    """Scalar features of the named values: numbers, booleans, one-hot strings,
    and one level into dicts (``invoice.currency=EUR``)."""
    out: Row = {}
    for name in names:
        if name in vals:
            _flatten(name, vals[name], out, 0)
    return out


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class FastHead:
    """A small logistic regression on sparse features, trained by SGD.

    `fit` runs a few epochs over the rows it is given; `update` takes one step
    on a new row. Numeric features are scaled by a running maximum of their
    magnitude so that one learning rate suits them all.

    Args:
        rate: SGD step size.
        l2: weight decay per step.
        epochs: passes over the rows in `fit`.
    """

    def __init__(self, rate: float = 0.1, l2: float = 1e-4, epochs: int = 5) -> None:
        self.rate = rate
        self.l2 = l2
        self.epochs = epochs
        self.weights: dict[str, float] = {}
        self.bias = 0.0
        self.scale: dict[str, float] = {}

    def _scaled(self, row: Row) -> Row:
        out: Row = {}
        for k, v in row.items():
            s = self.scale.get(k, 0.0)
            if abs(v) > s:
                s = abs(v)
                self.scale[k] = s
            out[k] = v / s if s else 0.0
        return out

    def predict(self, row: Row) -> float:
        """P(label 1) for a row."""
        z = self.bias
        for k, v in row.items():
            w = self.weights.get(k)
            if w is not None:
                s = self.scale.get(k, 0.0)
                z += w * (v / s if s else 0.0)
        return _sigmoid(z)

    def update(self, row: Row, label: float) -> None:
        """One SGD step on one labelled row."""
        x = self._scaled(row)
        error = self.predict(row) - label
        self.bias -= self.rate * error
        decay = 1.0 - self.rate * self.l2
        for k, v in x.items():
            self.weights[k] = self.weights.get(k, 0.0) * decay - self.rate * error * v

    def fit(self, rows: Iterable[tuple[Row, float]]) -> None:
        """Refit from scratch on the given rows (in order, `epochs` times).

        The scales start again too: kept from every row ever seen, they would hold a
        column for each distinct string value a request ever brought (one-hot), and the
        stored model would grow without end.
        """
        data = list(rows)
        self.weights = {}
        self.scale = {}
        self.bias = 0.0
        for _ in range(self.epochs):
            for row, label in data:
                self.update(row, label)

    def fit_scaled(self, rows: Sequence[Row], labels: Sequence[float]) -> None:
        """Refit from scratch with `scale` held as it is: the SGD steps of `fit`, on
        columns scaled once (a column `scale` lacks, or holds as 0, is left out).

        Each row's scaled values are computed once, not at every step, which
        makes this several times faster than `fit` on many passes.
        """
        scale = self.scale
        index: dict[str, int] = {}
        vectors = []
        for row in rows:
            vector = []
            for column, value in row.items():
                s = scale.get(column)
                if s:
                    j = index.setdefault(column, len(index))
                    vector.append((j, value / s))
            vectors.append(vector)
        weights = [0.0] * len(index)
        bias = 0.0
        rate = self.rate
        decay = 1.0 - rate * self.l2
        data = list(zip(vectors, labels, strict=True))
        for _ in range(self.epochs):
            for vector, label in data:
                z = bias
                for j, x in vector:
                    z += weights[j] * x
                step = rate * (_sigmoid(z) - label)
                bias -= step
                for j, x in vector:
                    weights[j] = weights[j] * decay - step * x
        self.bias = bias
        self.weights = {column: weights[j] for column, j in index.items()}

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for saving."""
        return {"weights": self.weights, "bias": self.bias, "scale": self.scale}

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "order model") -> FastHead:
        """The inverse of `to_dict`, checking every field.

        Raises:
            CheckpointError: the data is not a head's (the message names the field).
        """
        d = check.fields(data, ("bias", "scale", "weights"), f"{source}: head", source)
        head = cls()
        head.weights = check.columns(d["weights"], f"{source}: head.weights", source)
        head.bias = check.number(d["bias"], f"{source}: head.bias", source)
        head.scale = check.columns(d["scale"], f"{source}: head.scale", source)
        return head


class _CheckModel:
    def __init__(self, window: int) -> None:
        self.fails = 0
        self.total = 0
        self.rows: deque[tuple[Row, float]] = deque(maxlen=window)
        self.head: FastHead | None = None
        self.since_fit = 0


class OrderModel:
    """Per hard check: Laplace counts, then a `FastHead` refitted every `refit` rows.

    Args:
        features: names of cheap computed facts to add to the request's values.
        refit: rows between refits of a check's head (it is updated in between).
        window: the most recent rows a refit uses.
    """

    def __init__(
        self, features: Iterable[str] = (), *, refit: int = 50, window: int = 2000
    ) -> None:
        self.features = tuple(features)
        self.refit = refit
        self.window = window
        self._checks: dict[str, _CheckModel] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}: {m.fails}/{m.total}" for k, m in self._checks.items())
        return f"OrderModel({inner})"

    def row(self, vals: Mapping[str, Any], init_keys: Iterable[str]) -> Row:
        """The request's scalar values and the named cheap facts, as features."""
        return features_of(vals, (*init_keys, *self.features))

    def p_fail(self, check: str, row: Row) -> float:
        """P(check fails | row): Laplace until a head exists, then the head."""
        model = self._checks.get(check)
        if model is None:
            return 0.5
        if model.head is None:
            return (model.fails + 1) / (model.total + 2)
        return model.head.predict(row)

    def observe(self, check: str, row: Row, failed: bool) -> None:
        """Learn one outcome of one hard check."""
        with self._lock:
            model = self._checks.get(check)
            if model is None:
                model = self._checks[check] = _CheckModel(self.window)
            label = 1.0 if failed else 0.0
            model.total += 1
            model.fails += int(failed)
            model.rows.append((row, label))
            model.since_fit += 1
            if model.since_fit >= self.refit and 0 < model.fails < model.total:
                head = model.head or FastHead()
                head.fit(model.rows)
                model.head = head
                model.since_fit = 0
            elif model.head is not None:
                model.head.update(row, label)

    def counts(self, check: str) -> tuple[int, int]:
        """(failures, evaluations) seen for a check."""
        model = self._checks.get(check)
        return (0, 0) if model is None else (model.fails, model.total)

    def to_json(self) -> str:
        """The model as JSON text, for a store."""
        with self._lock:
            return json.dumps(
                {
                    "features": list(self.features),
                    "refit": self.refit,
                    "checks": {
                        name: {
                            "fails": m.fails,
                            "total": m.total,
                            "head": None if m.head is None else m.head.to_dict(),
                        }
                        for name, m in self._checks.items()
                    },
                }
            )

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str = "order model") -> OrderModel:
        """The inverse of `to_json` (recent rows are not kept), checking all of it.

        Raises:
            CheckpointError: the text is not a model `to_json` wrote; the message
                says where and why.
        """
        d = check.fields(
            check.parsed(data, source, "an order model"),
            ("checks", "features", "refit"),
            source,
            source,
        )
        features = [
            check.text(f, f"{source}: features[]", source)
            for f in check.listed(d["features"], f"{source}: features", source)
        ]
        refit = check.count(d["refit"], f"{source}: refit", source)
        if refit == 0:
            check.refuse(f"{source}: refit must be 1 or more", refit, source)
        model = cls(features, refit=refit)
        checks = d["checks"]
        if not isinstance(checks, dict):
            check.refuse(f"{source}: checks must be a JSON object", type(checks).__name__, source)
        for name, entry in checks.items():
            where = f"{source}: check {name!r}"
            e = check.fields(entry, ("fails", "head", "total"), where, source)
            m = _CheckModel(model.window)
            m.fails = check.count(e["fails"], f"{where}.fails", source)
            m.total = check.count(e["total"], f"{where}.total", source)
            if m.fails > m.total:
                check.refuse(f"{where}.fails must be at most its total {m.total}", m.fails, source)
            if e["head"] is not None:
                m.head = FastHead.from_dict(e["head"], source=where)
            model._checks[name] = m
        return model


# -- heads: trained answers to questions without a rule -------------------------------

#: a head's class: the label values it was trained on (JSON keeps each exactly)
Label = str | int | bool

#: what a heads checkpoint says it is
CHECKPOINT_FORMAT = "solvi.heads/1"
#: a checkpoint larger than this (bytes) is refused unread


def _pairs(pairs: Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    return tuple((str(c), float(w)) for c, w in pairs)


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


def _labels(labels: Iterable[Label]) -> tuple[Label, ...]:
    return tuple(labels)


def _scores(scores: Iterable[LinearScore]) -> tuple[LinearScore, ...]:
    return tuple(scores)


@attrs.frozen
class LinearScore:
    """One logistic model of a head as plain numbers: ``bias + sum(coef * feature)``.

    `coef` pairs each feature column with its weight already divided by the
    column's training scale, sorted by column, so the same head always sums in
    the same order and gives the same probability to the last bit.
    """

    bias: float = attrs.field(converter=float)
    coef: tuple[tuple[str, float], ...] = attrs.field(converter=_pairs)

    def z(self, row: Row) -> float:
        """The model's logit for a row (a column the row lacks counts as 0)."""
        z = self.bias
        for column, weight in self.coef:
            value = row.get(column)
            if value is not None:
                z += weight * value
        return z


def class_probabilities(models: Sequence[LinearScore], n: int, row: Row) -> tuple[float, ...]:
    """P(each of `n` classes | row) from a head's models (see `Head.models`)."""
    if n == 2:
        p = _sigmoid(models[0].z(row))
        return (1.0 - p, p)
    # One-vs-rest: each class's own probability, normalised to sum to one.
    raw = [_sigmoid(m.z(row)) for m in models]
    total = sum(raw)
    return tuple(r / total for r in raw) if total > 0 else tuple(1.0 / n for _ in raw)


def fit_scores(
    rows: Sequence[Row],
    labels: Sequence[Label],
    classes: Sequence[Label],
    *,
    epochs: int = 20,
    seed: int = 0,
) -> tuple[LinearScore, ...]:
    """Train the logistic models of a head: one `FastHead` for two classes (it gives
    P(second class)), else one per class, one-vs-rest.

    A column every row has is standardised before training (mean 0, standard
    deviation 1 over `rows`); any other column (a string's ``fact=value``, a key
    some dicts lack) is divided by its largest magnitude and left out of rows
    that lack it, so one-hot columns stay sparse; a constant column is left out.
    This lets a few passes of SGD converge; the models are then written back in
    the columns' own units. The rows are visited in one order shuffled by
    `seed`, so the same data always gives the same models.

    Args:
        rows: features of each example (see `features_of`).
        labels: each example's class, one of `classes`.
        classes: the classes, in the order the head reports them.
        epochs: passes over the rows.
        seed: seeds the order of the rows.

    Returns:
        One `LinearScore` for two classes, else one per class.
    """
    n = len(rows)
    seen: dict[str, int] = {}
    sums: dict[str, float] = {}
    peak: dict[str, float] = {}
    for row in rows:
        for column, value in row.items():
            seen[column] = seen.get(column, 0) + 1
            sums[column] = sums.get(column, 0.0) + value
            peak[column] = max(peak.get(column, 0.0), abs(value))
    # column -> (shift, scale): value' = (value - shift) / scale
    units: dict[str, tuple[float, float]] = {}
    for column, count in seen.items():
        if count == n:
            m = sums[column] / n
            # a product, not a power: an overflow gives inf, which the peak then scales
            sd = math.sqrt(sum((row[column] - m) * (row[column] - m) for row in rows) / n)
            if math.isfinite(sd) and sd > 0.0:
                units[column] = (m, sd)
            elif not math.isfinite(sd):
                units[column] = (0.0, peak[column])
        elif peak[column] > 0.0:
            units[column] = (0.0, peak[column])
    order = list(range(n))
    random.Random(seed).shuffle(order)
    scaled = [
        {c: (v - units[c][0]) / units[c][1] for c, v in rows[i].items() if c in units}
        for i in order
    ]
    wanted = list(classes[1:]) if len(classes) == 2 else list(classes)
    scores = []
    for target in wanted:
        head = FastHead(epochs=epochs)
        head.scale = dict.fromkeys(units, 1.0)
        head.fit_scaled(scaled, [1.0 if labels[i] == target else 0.0 for i in order])
        weights = head.weights
        coef = tuple((c, weights[c] / units[c][1]) for c in sorted(weights))
        bias = head.bias - sum(weights[c] * units[c][0] / units[c][1] for c in weights)
        scores.append(LinearScore(bias, coef))
    return tuple(scores)


@attrs.frozen
class Head:
    """A trained answer to a question without a rule (see `System.fit`).

    The head reads the facts it selected (`facts`, which become the question's
    targets, so its flow narrows to their producers), flattens them as the
    order model does (`features_of`) and answers the most likely class.

    Attributes:
        question: the question it answers.
        facts: the facts it selected, in the order they were chosen.
        classes: the label values, sorted, all of one kind (strings, whole numbers
            or booleans).
        models: one `LinearScore` for two classes (P of the second), else one per class.
        catalog_version: the version of the catalog it was fitted on.
        cost_ms: what its facts cost per decision when it was fitted.
        budget_ms: the budget it was fitted under (None: no budget).
        accuracy: its cross-validated accuracy on the training examples.
        rows: how many examples it was trained on.
        digest: a short hash of all of the above: the head's version.
    """

    question: str
    facts: tuple[str, ...] = attrs.field(converter=_names)
    classes: tuple[Label, ...] = attrs.field(converter=_labels)
    models: tuple[LinearScore, ...] = attrs.field(converter=_scores)
    catalog_version: str
    cost_ms: float = attrs.field(converter=float)
    budget_ms: float | None = attrs.field(converter=attrs.converters.optional(float))
    accuracy: float = attrs.field(converter=float)
    rows: int = attrs.field(converter=int)
    digest: str = attrs.field(init=False, eq=False)

    def __attrs_post_init__(self) -> None:
        text = canonical_json(self.to_dict())
        object.__setattr__(self, "digest", hashlib.sha256(text.encode()).hexdigest()[:16])

    def probabilities(self, row: Row) -> tuple[float, ...]:
        """P(each class | row), in the order of `classes`."""
        return class_probabilities(self.models, len(self.classes), row)

    def decide(self, vals: Mapping[str, Any]) -> tuple[Label, float]:
        """The most likely class for a request's values and its probability (ties go to
        the first class).

        Raises:
            ValueError: the values are so far from the training rows that the model's
                terms overflow to infinities of both signs, so no class is likelier.
        """
        probs = self.probabilities(features_of(vals, self.facts))
        if not all(math.isfinite(p) for p in probs):
            msg = (
                f"head {self.question}@{self.digest[:8]} cannot score this request: its "
                f"features ({', '.join(self.facts)}) are so far from the rows it was fitted "
                f"on that the model's terms overflow"
            )
            raise ValueError(msg)
        best = max(range(len(probs)), key=lambda i: (probs[i], -i))
        return self.classes[best], probs[best]

    def reason(self, value: Label, probability: float) -> str:
        """What an answer of this head says: the head, its facts, the probability."""
        on = ", ".join(self.facts) if self.facts else "no facts (the most frequent class)"
        return f"head {self.question}@{self.digest[:8]} on {on}: P({value}) {probability:.3f}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (what a checkpoint holds)."""
        return {
            "question": self.question,
            "facts": list(self.facts),
            "classes": list(self.classes),
            "models": [{"bias": m.bias, "coef": [list(c) for c in m.coef]} for m in self.models],
            "catalog_version": self.catalog_version,
            "cost_ms": self.cost_ms,
            "budget_ms": self.budget_ms,
            "accuracy": self.accuracy,
            "rows": self.rows,
        }

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "checkpoint") -> Head:
        """The inverse of `to_dict`, checking every field's shape, type and value.

        Raises:
            CheckpointError: the data is not a head's (the message names the field).
        """
        where = f"{source}: head"
        d = check.fields(data, _HEAD_FIELDS, where, source)
        question = check.text(d["question"], f"{where}.question", source)
        where = f"{source}: head {question!r}"
        facts = tuple(
            check.text(f, f"{where}.facts[]", source)
            for f in check.listed(d["facts"], where, source)
        )
        classes = tuple(
            _label(c, f"{where}.classes[]", source)
            for c in check.listed(d["classes"], where, source)
        )
        if len({type(c) for c in classes}) > 1:
            check.refuse(f"{where}.classes must all be of one kind", classes, source)
        if len(classes) < 2 or list(classes) != sorted(set(classes)):
            check.refuse(
                f"{where}.classes must be two or more different labels, sorted", classes, source
            )
        models = tuple(
            _score(m, f"{where}.models[]", source) for m in check.listed(d["models"], where, source)
        )
        if len(models) != (1 if len(classes) == 2 else len(classes)):
            check.refuse(
                f"{where}.models must hold one model for two classes, else one per class",
                len(models),
                source,
            )
        if len(set(facts)) != len(facts):
            check.refuse(f"{where}.facts must name each fact once", facts, source)
        for model in models:
            for column, _ in model.coef:
                if not any(_of_fact(column, f) for f in facts):
                    check.refuse(
                        f"{where}: model column {column!r} is no feature of its facts "
                        f"({', '.join(facts) or 'none'})",
                        column,
                        source,
                    )
        budget = d["budget_ms"]
        if budget is not None:
            budget = check.milliseconds(budget, f"{where}.budget_ms", source)
        accuracy = check.number(d["accuracy"], f"{where}.accuracy", source)
        if not 0.0 <= accuracy <= 1.0:
            check.refuse(f"{where}.accuracy must be from 0 to 1", accuracy, source)
        head = cls(
            question=question,
            facts=facts,
            classes=classes,
            models=models,
            catalog_version=check.text(d["catalog_version"], f"{where}.catalog_version", source),
            cost_ms=check.milliseconds(d["cost_ms"], f"{where}.cost_ms", source),
            budget_ms=budget,
            accuracy=accuracy,
            rows=check.count(d["rows"], f"{where}.rows", source, least=1),
        )
        return head


_HEAD_FIELDS = (
    "question",
    "facts",
    "classes",
    "models",
    "catalog_version",
    "cost_ms",
    "budget_ms",
    "accuracy",
    "rows",
)
_CHECKPOINT_FIELDS = ("format", "catalog", "catalog_version", "heads")


def _of_fact(column: str, fact: str) -> bool:
    """Whether `features_of` makes `column` from `fact` (itself, ``fact=text``, or one
    level into a dict, ``fact.key`` and ``fact.key=text``)."""
    return column == fact or column.startswith((f"{fact}=", f"{fact}."))


def is_label(value: object) -> bool:
    """A class a head can be trained on: a string of at most 200 characters, a whole
    number of at most 64 bits, or a boolean (JSON keeps each exactly)."""
    if isinstance(value, str):
        return len(value) <= 200
    return isinstance(value, int) and -(2**63) <= value < 2**63


def _label(value: Any, where: str, source: str) -> Label:
    if is_label(value):
        return value  # type: ignore[no-any-return]  # is_label checked the type
    check.refuse(
        f"{where} must be a string, a whole number of at most 64 bits or a boolean", value, source
    )


def _score(value: Any, where: str, source: str) -> LinearScore:
    d = check.fields(value, ("bias", "coef"), where, source)
    pairs = []
    for pair in check.listed(d["coef"], f"{where}.coef", source):
        if not (isinstance(pair, list) and len(pair) == 2):
            check.refuse(f"{where}.coef[] must be [column, weight] pairs", pair, source)
        pairs.append(
            (
                check.text(pair[0], f"{where}.coef[][0]", source),
                check.number(pair[1], f"{where}.coef[][1]", source),
            )
        )
    if [c for c, _ in pairs] != sorted({c for c, _ in pairs}):
        check.refuse(
            f"{where}.coef must be sorted by column, each column once",
            [c for c, _ in pairs],
            source,
        )
    return LinearScore(check.number(d["bias"], f"{where}.bias", source), tuple(pairs))


@attrs.frozen
class Checkpoint:
    """The heads a checkpoint holds, and the catalog they were fitted on."""

    catalog: str
    catalog_version: str
    heads: tuple[Head, ...]


def checkpoint_text(catalog: str, catalog_version: str, heads: Iterable[Head]) -> str:
    """A checkpoint: the heads as JSON data, nothing that runs when read."""
    data = {
        "format": CHECKPOINT_FORMAT,
        "catalog": catalog,
        "catalog_version": catalog_version,
        "heads": [h.to_dict() for h in sorted(heads, key=lambda h: h.question)],
    }
    return json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"


def read_checkpoint(data: bytes | str, *, source: str = "checkpoint") -> Checkpoint:
    """Read a checkpoint written by `checkpoint_text`, checking all of it.

    Only JSON is parsed: nothing in a checkpoint is imported, unpickled or run.
    Anything else (too large, not UTF-8, not JSON, NaN, a field twice, a field
    of the wrong type, an unknown field, a head of another catalog version) is
    refused.

    Raises:
        CheckpointError: the checkpoint is refused; the message says where and why.
    """
    try:
        return _checkpoint(check.parsed(data, source, "a heads checkpoint"), source)
    except CheckpointError as exc:
        msg = f"{exc}; write checkpoints with system.save_heads(path)"
        raise CheckpointError(msg, source=source) from None


def _checkpoint(parsed: Any, source: str) -> Checkpoint:
    d = check.fields(parsed, _CHECKPOINT_FIELDS, source, source)
    if d["format"] != CHECKPOINT_FORMAT:
        check.refuse(f"{source}: format must be {CHECKPOINT_FORMAT!r}", d["format"], source)
    catalog = check.text(d["catalog"], f"{source}: catalog", source)
    version = check.text(d["catalog_version"], f"{source}: catalog_version", source)
    heads = tuple(
        Head.from_dict(h, source=source)
        for h in check.listed(d["heads"], f"{source}: heads", source)
    )
    questions = [h.question for h in heads]
    if len(set(questions)) != len(questions):
        check.refuse(f"{source}: each question may have one head", questions, source)
    for head in heads:
        if head.catalog_version != version:
            check.refuse(
                f"{source}: head {head.question!r} was fitted on catalog version "
                f"{head.catalog_version}, the checkpoint says {version}",
                head.catalog_version,
                source,
            )
    return Checkpoint(catalog, version, heads)
