"""Hypothesis strategies: random acyclic catalogs and requests for them."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import anyio.lowlevel
import attrs
from hypothesis import strategies as st

from solvi import Catalog, Question, SolviWarning, System

KEYS = ("k0", "k1", "k2")


@attrs.frozen
class PartSpec:
    """A part to generate: what it reads, its kind and its arithmetic."""

    name: str
    fact: str
    kind: str  # "fn" | "check" | "rule"
    hard: bool
    inputs: tuple[str, ...]
    salt: int


@attrs.frozen
class CatalogSpec:
    """A whole random catalog and its questions' forced values."""

    parts: tuple[PartSpec, ...]
    forced: tuple[tuple[str, bool | None], ...]


class Log:
    """Which parts ran, shared safely by worker threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.names: list[str] = []

    def add(self, name: str) -> None:
        """Note one call."""
        with self.lock:
            self.names.append(name)


def _value(inputs: tuple[Any, ...], salt: int) -> int:
    total = salt
    for v in inputs:
        total = total * 31 + (int(v) if not isinstance(v, bool) else int(v) * 7)
    return total % 101


def _make(spec: PartSpec, log: Log, async_part: bool, yields: bool = False) -> Any:
    params = ", ".join(spec.inputs)
    pause = "    await checkpoint()\n" if async_part and yields else ""
    body = (
        "    log.add(name)\n"
        f"{pause}"
        "    v = value(({args}), salt)\n"
        "    if v % 13 == 0:\n"
        "        raise ValueError(f'{{name}} refuses {{v}}')\n"
        "    return {ret}\n"
    ).format(
        args="".join(f"{i}, " for i in spec.inputs),
        ret="v % 4 != 0" if spec.kind == "check" else "v",
    )
    prefix = "async def" if async_part else "def"
    source = f"{prefix} {spec.name}({params}):\n{body}"
    namespace: dict[str, Any] = {
        "log": log,
        "value": _value,
        "salt": spec.salt,
        "name": spec.name,
        "checkpoint": anyio.lowlevel.checkpoint,
    }
    exec(source, namespace)
    return namespace[spec.name]


def build(
    spec: CatalogSpec, log: Log, *, async_parts: bool = False, yields: bool = False
) -> tuple[Catalog, list[Question]]:
    """Make the catalog and questions a spec describes: with `async_parts`, every other
    part is async, and with `yields` those let the loop run others once during a call."""
    return declare(
        spec,
        [_make(p, log, async_parts and i % 2 == 0, yields) for i, p in enumerate(spec.parts)],
    )


def declare(
    spec: CatalogSpec, funcs: Sequence[Callable[..., Any]]
) -> tuple[Catalog, list[Question]]:
    """The spec's catalog with `funcs` as its parts (one per part, in order), and its questions."""
    cat = Catalog("random")
    for p, func in zip(spec.parts, funcs, strict=True):
        if p.kind == "fn":
            cat.fn(provides=p.fact)(func)
        elif p.kind == "check":
            cat.check(hard=p.hard, provides=p.fact)(func)
        else:
            cat.rule(func)
    questions = [
        Question(name) if forced is None else Question(name, forced=forced)
        for name, forced in spec.forced
    ]
    return cat, questions


@st.composite
def catalogs(draw: st.DrawFn, max_facts: int = 8) -> CatalogSpec:
    """A random acyclic catalog over KEYS, with one or two producers per fact."""
    n = draw(st.integers(2, max_facts))
    available = list(KEYS)
    parts: list[PartSpec] = []
    facts: list[str] = []
    for i in range(n):
        fact = f"f{i}"
        kind = draw(st.sampled_from(["fn", "fn", "check"]))
        hard = kind == "check" and draw(st.booleans())
        producers = draw(st.integers(1, 2)) if kind == "fn" else 1
        for j in range(producers):
            inputs = tuple(
                draw(st.lists(st.sampled_from(available), min_size=1, max_size=3, unique=True))
            )
            parts.append(PartSpec(f"p{i}_{j}", fact, kind, hard, inputs, draw(st.integers(0, 50))))
        facts.append(fact)
        available.append(fact)
    rules: list[tuple[str, bool | None]] = []
    for r in range(draw(st.integers(1, 3))):
        inputs = tuple(draw(st.lists(st.sampled_from(facts), min_size=1, max_size=4, unique=True)))
        name = f"rule{r}"
        parts.append(PartSpec(name, name, "rule", False, inputs, r))
        rules.append((name, draw(st.sampled_from([None, False, True]))))
    return CatalogSpec(tuple(parts), tuple(rules))


def states(keys: tuple[str, ...] = KEYS) -> st.SearchStrategy[dict[str, int]]:
    """A request bringing some or all of the keys."""
    return st.lists(st.sampled_from(keys), min_size=1, unique=True).flatmap(
        lambda ks: st.fixed_dictionaries({k: st.integers(0, 1000) for k in ks})
    )


def system_of(cat: Catalog, questions: list[Question], **options: Any) -> System:
    """A System of a generated catalog.

    A generated catalog may declare a hard check that no question's flow holds;
    the System warns of it (`SolviWarning`), and for these tests that is a
    shape to run, not a mistake to report.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolviWarning)
        return System(cat, questions, **options)
