"""Replay: re-run a stored request through the System and report what changed.

A replay asks the System again with the record's input and early-exit
setting, then compares answers, computed values and the record hash. A step
that timed out when the request was recorded is not judged: a timeout belongs
to its moment, so every answer and value that depended on it is reported as
skipped, and the hash is not compared. A record of another catalog, or of
another version of this catalog, is refused rather than compared.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from solvi.record import canonical_json

if TYPE_CHECKING:
    from solvi.storage import Store
    from solvi.system import System

__all__ = ["Difference", "ReplayResult", "ReplaySummary", "Skipped", "replay", "replay_store"]

TIMED_OUT = "timed out when recorded"


@attrs.frozen
class Difference:
    """One thing the replay computed differently from the record.

    `kind` is ``"answer"`` (`name` is the question; `stored` and `replayed`
    hold status, value, reason and guard), ``"value"`` (`name` is the fact;
    None stands for a fact that was not computed) or ``"hash"`` (`name` is
    ``"hash"``).
    """

    kind: Literal["answer", "value", "hash"]
    name: str
    stored: Any
    replayed: Any

    def __str__(self) -> str:
        stored, replayed = _short(self.stored), _short(self.replayed)
        return f"{self.kind} {self.name}: stored {stored}, replayed {replayed}"


@attrs.frozen
class Skipped:
    """Something the replay did not compare, and why (a step timed out when recorded).

    `kind` is ``"answer"``, ``"value"`` or ``"hash"``, as in `Difference`.
    """

    kind: Literal["answer", "value", "hash"]
    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: skipped, {self.reason}"


@attrs.frozen
class ReplayResult:
    """The outcome of replaying one record.

    `same` is True when nothing compared differs (and the record was not
    refused); `skipped` lists the answers, values and hash that were not
    compared because a step timed out when recorded;
    `refused` says why the record was not replayed at all.
    """

    request_id: str | None
    same: bool
    differences: tuple[Difference, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    refused: str | None = None


@attrs.frozen
class ReplaySummary:
    """Replays of every stored record of one catalog."""

    catalog: str
    version: str
    results: tuple[ReplayResult, ...]

    @property
    def same(self) -> int:
        """Records replayed without a difference."""
        return sum(1 for r in self.results if r.same)

    @property
    def different(self) -> int:
        """Records replayed with at least one difference."""
        return sum(1 for r in self.results if r.differences)

    @property
    def refused(self) -> int:
        """Records not replayed (another catalog version)."""
        return sum(1 for r in self.results if r.refused is not None)

    @property
    def ok(self) -> bool:
        """Whether no replayed record differs (refused records are not differences)."""
        return self.different == 0

    def __str__(self) -> str:
        lines = [
            f"replayed {len(self.results)} records of catalog {self.catalog} "
            f"(version {self.version}): {self.same} same, {self.different} different, "
            f"{self.refused} refused"
        ]
        for r in self.results:
            for d in r.differences:
                lines.append(f"  {r.request_id}: {d}")
            if r.refused is not None:
                lines.append(f"  {r.request_id}: refused: {r.refused}")
        return "\n".join(lines)


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def _resolve_store(system: System, store: Store | None) -> Store:
    if store is not None:
        return store
    own: Store | None = getattr(system, "store", None)
    if own is None:
        msg = (
            f"replaying by request id needs a store: pass store=, or give System "
            f"{system.name!r} a store"
        )
        raise ValueError(msg)
    return own


def _tainted(system: System, record: Mapping[str, Any]) -> frozenset[str]:
    """Facts that timed out when recorded, and every fact computed from them."""
    timed_out = {g["fact"] for g in record.get("safeguards", ()) if g.get("kind") == "timeout"}
    if not timed_out:
        return frozenset()
    flow = system.plan(record["input"])
    tainted = set(timed_out)
    changed = True
    while changed:
        changed = False
        for node in flow.nodes:
            if node.fact not in tainted and tainted.intersection(node.inputs):
                tainted.add(node.fact)
                changed = True
    return frozenset(tainted)


def _refusal(system: System, record: Mapping[str, Any]) -> str | None:
    catalog = record.get("catalog")
    version = record.get("catalog_version")
    if catalog != system.name:
        return (
            f"the record is from catalog {catalog!r}, this System answers with catalog "
            f"{system.name!r}; replay it with a System of that catalog"
        )
    if version != system.version:
        return (
            f"the record is from catalog version {version}, this System runs version "
            f"{system.version}; replay it with the catalog as it was then"
        )
    return None


def _check_record(record: object) -> Mapping[str, Any]:
    fix = "pass a Response.record or a request id stored in the store"
    if not isinstance(record, Mapping):
        msg = f"not a decision record: got {type(record).__name__}; {fix}"
        raise TypeError(msg)
    needed = ("catalog", "catalog_version", "input", "early_exit", "answers", "values", "hash")
    missing = [k for k in needed if k not in record]
    if missing:
        msg = f"not a decision record (it has no {', '.join(missing)}); {fix}"
        raise ValueError(msg)
    return record


def replay(
    system: System,
    record_or_request_id: Mapping[str, Any] | str,
    *,
    store: Store | None = None,
) -> ReplayResult:
    """Re-run a stored request through `system` and list every difference.

    Runs ``system.ask(record["input"], early_exit=record["early_exit"])``
    (async parts run in an event loop of their own, as `ask` always does)
    and compares each answer, each computed value and the hash. Answers and
    values that depended on a step that timed out when recorded are skipped,
    not compared, and so is the hash.

    Args:
        system: the System to replay with; its catalog version must be the record's.
        record_or_request_id: a record (`Response.record`, or one read from a
            store), or the request id of a stored record.
        store: where to read a request id from (default: the System's store).

    Returns:
        A `ReplayResult`; `refused` is set, and nothing compared, when the
        record is of another catalog or catalog version.

    Raises:
        TypeError: `record_or_request_id` is neither a mapping nor a string.
        ValueError: the record is not a decision record, or a request id was
            given without a store.
        MissingRecordError: no record is stored under that request id.
    """
    request_id: str | None = None
    if isinstance(record_or_request_id, str):
        request_id = record_or_request_id
        record = _check_record(_resolve_store(system, store).get_record(request_id))
    else:
        record = _check_record(record_or_request_id)
    refused = _refusal(system, record)
    if refused is not None:
        return ReplayResult(request_id, same=False, refused=refused)
    response = system.ask(dict(record["input"]), early_exit=bool(record["early_exit"]))
    # Compare JSON with JSON: the stored record went through the same conversion.
    fresh: dict[str, Any] = json.loads(canonical_json(response.record))
    return _compare(system, record, fresh, request_id)


def _compare(
    system: System, record: Mapping[str, Any], fresh: Mapping[str, Any], request_id: str | None
) -> ReplayResult:
    tainted = _tainted(system, record)
    flow = system.plan(record["input"]) if tainted else None
    differences: list[Difference] = []
    skipped: list[Skipped] = []
    stored_answers: Mapping[str, Any] = record["answers"]
    fresh_answers: Mapping[str, Any] = fresh["answers"]
    for name in _union(stored_answers, fresh_answers):
        stored = stored_answers.get(name)
        if stored is not None and (
            stored.get("guard") == "timeout"
            or (flow is not None and _question_facts(flow, name) & tainted)
        ):
            skipped.append(Skipped("answer", name, TIMED_OUT))
            continue
        replayed = fresh_answers.get(name)
        if stored != replayed:
            differences.append(Difference("answer", name, stored, replayed))
    stored_values: Mapping[str, Any] = record["values"]
    fresh_values: Mapping[str, Any] = fresh["values"]
    for fact in _union(stored_values, fresh_values):
        if fact in tainted:
            skipped.append(Skipped("value", fact, TIMED_OUT))
            continue
        if stored_values.get(fact) != fresh_values.get(fact) or (
            (fact in stored_values) != (fact in fresh_values)
        ):
            differences.append(
                Difference("value", fact, stored_values.get(fact), fresh_values.get(fact))
            )
    if tainted:
        skipped.append(Skipped("hash", "hash", TIMED_OUT))
    elif record["hash"] != fresh["hash"]:
        differences.append(Difference("hash", "hash", record["hash"], fresh["hash"]))
    return ReplayResult(
        request_id, same=not differences, differences=tuple(differences), skipped=tuple(skipped)
    )


def _question_facts(flow: Any, name: str) -> frozenset[str]:
    try:
        facts: frozenset[str] = flow.question(name).facts
    except KeyError:
        return frozenset()
    return facts


def _union(a: Iterable[str], b: Iterable[str]) -> list[str]:
    seen = dict.fromkeys(a)
    seen.update(dict.fromkeys(b))
    return list(seen)


def replay_store(
    system: System, store: Store | None = None, since: dt.datetime | None = None
) -> ReplaySummary:
    """Replay every stored record of `system`'s catalog, in the order they were stored.

    Args:
        system: the System to replay with.
        store: the store to read (default: the System's store).
        since: only records stored at or after this time (a naive time is UTC).

    Returns:
        A `ReplaySummary`: its `ok` is False when any replayed record differs;
        records of another catalog version count as refused.

    Raises:
        ValueError: no store was given and the System has none.
    """
    source = _resolve_store(system, store)
    results = tuple(
        _replay_one(system, request_id, record)
        for request_id, record in source.iter_records(since=since, catalog=system.name)
    )
    return ReplaySummary(system.name, system.version, results)


def _replay_one(system: System, request_id: str, record: Mapping[str, Any]) -> ReplayResult:
    return attrs.evolve(replay(system, record), request_id=request_id)
