"""The learned order of hard checks: how likely each is to fail, given cheap facts.

`OrderModel` keeps, per hard check, Laplace counts and then a small logistic
model (`FastHead`) over the request's scalar values (and one level of dicts,
``invoice.currency``) plus any cheap computed facts named as features. The
scheduler asks it `p_fail(check, row)` to rank checks by expected saving.
"""

from __future__ import annotations

import json
import math
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["FastHead", "OrderModel", "OrderPolicy", "features_of"]

Row = dict[str, float]


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
    elif isinstance(value, int | float):
        number = float(value)
        if math.isfinite(number):
            out[prefix] = number
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
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def update(self, row: Row, label: float) -> None:
        """One SGD step on one labelled row."""
        x = self._scaled(row)
        error = self.predict(row) - label
        self.bias -= self.rate * error
        decay = 1.0 - self.rate * self.l2
        for k, v in x.items():
            self.weights[k] = self.weights.get(k, 0.0) * decay - self.rate * error * v

    def fit(self, rows: Iterable[tuple[Row, float]]) -> None:
        """Refit from scratch on the given rows (in order, `epochs` times)."""
        data = list(rows)
        self.weights = {}
        self.bias = 0.0
        for _ in range(self.epochs):
            for row, label in data:
                self.update(row, label)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for saving."""
        return {"weights": self.weights, "bias": self.bias, "scale": self.scale}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FastHead:
        """The inverse of `to_dict`."""
        head = cls()
        head.weights = dict(data["weights"])
        head.bias = float(data["bias"])
        head.scale = dict(data["scale"])
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
    def from_json(cls, text: str) -> OrderModel:
        """The inverse of `to_json` (recent rows are not kept)."""
        data = json.loads(text)
        model = cls(data["features"], refit=data["refit"])
        for name, entry in data["checks"].items():
            m = _CheckModel(model.window)
            m.fails, m.total = entry["fails"], entry["total"]
            if entry["head"] is not None:
                m.head = FastHead.from_dict(entry["head"])
            model._checks[name] = m
        return model
