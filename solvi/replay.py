"""Replay: re-run a stored request through a System, read only, and report what changed.

A replay plans the record's input with the System's catalog, runs the flow
with the record's early-exit setting, and compares answers, computed values,
every planned step and the record hash. It runs the request itself, not
through `System.ask`: nothing is stored, journaled or learned (costs,
producer choices and the order model stay as they were), and no hook is told.
A step that timed out when the request was recorded is not run again: a
timeout belongs to its moment, so the step takes its recorded outcome and
everything downstream is compared as usual. A record of another catalog, or of
another version of this catalog, is refused rather than compared.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

import attrs

from solvi._run.scheduler import Run, by_declaration, drives, order_policy
from solvi._run.steps import Cause, Node, Program
from solvi._run.sync import Caller, Outcome, call_here, run_node
from solvi._terminal import visible
from solvi.catalog import Part
from solvi.errors import RequestError, StoreError
from solvi.extract import respond
from solvi.inputs import as_state
from solvi.record import canonical_json, from_record_value, shortened
from solvi.response import record_hashes

if TYPE_CHECKING:
    from solvi.storage import Store
    from solvi.system import System

__all__ = [
    "NOT_RERUN",
    "Difference",
    "ReplayResult",
    "ReplaySummary",
    "iter_replays",
    "replay",
    "replay_store",
    "summary_line",
]

#: Recorded outcomes a replay takes instead of calling the part again: they belong to
#: their moment (a slow service, a crash), not to the inputs.
NOT_RERUN = frozenset({"timeout", "interrupted"})


@attrs.frozen
class Difference:
    """One thing the replay computed differently from the record.

    `kind` is ``"answer"`` (`name` is the question; `stored` and `replayed`
    hold status, value, reason and guard), ``"value"`` (`name` is the fact;
    None stands for a fact that was not computed), ``"step"`` (`name` is the
    part; each side is ``{"outcome": ..., "message": ...}`` for a step that
    ran, ``{"skipped": reason}`` for one that did not, or None for a step the
    record does not mention, e.g. one deleted from it), ``"hash"`` (`name`
    is ``"hash"``) or ``"altered"``: the record was edited after it was made,
    so its content no longer gives the hash it carries (`name` is ``"hash"`` or
    ``"decision_hash"``; `stored` is the hash the record carries, `replayed`
    the one its content gives).
    """

    kind: Literal["answer", "value", "step", "hash", "altered"]
    name: str
    stored: Any
    replayed: Any

    def __str__(self) -> str:
        if self.kind == "altered":
            return (
                f"altered {self.name}: the record carries {visible(str(self.stored)[:16])}, "
                f"its content gives {self.replayed[:16]} (it was edited after it was made)"
            )
        if self.kind == "step":
            stored, replayed = _step_text(self.stored), _step_text(self.replayed)
        elif isinstance(self.stored, Mapping) and isinstance(self.replayed, Mapping):
            # an answer: only the fields that differ, or a cut would hide them
            fields = [
                k
                for k in _union(self.stored, self.replayed)
                if (k in self.stored, self.stored.get(k))
                != (k in self.replayed, self.replayed.get(k))
            ]
            stored = shortened({k: self.stored[k] for k in fields if k in self.stored}, 60)
            replayed = shortened({k: self.replayed[k] for k in fields if k in self.replayed}, 60)
        else:
            stored, replayed = shortened(self.stored, 60), shortened(self.replayed, 60)
        if self.kind != "step":  # a step's text is made of shown parts already
            stored, replayed = visible(stored), visible(replayed)
        return f"{self.kind} {visible(self.name)}: stored {stored}, replayed {replayed}"


@attrs.frozen
class ReplayResult:
    """The outcome of replaying one record.

    `same` is True when nothing differs (and the record was not refused);
    `not_rerun` names the steps that took their recorded outcome instead of
    running again (they timed out when recorded); `refused` says why the
    record was not replayed at all.
    """

    request_id: str | None
    same: bool
    differences: tuple[Difference, ...] = ()
    not_rerun: tuple[str, ...] = ()
    refused: str | None = None

    def lines(self) -> list[str]:
        """One line per difference, or the refusal, each naming the request.

        What the record holds (request id, names, values, messages) is shown through
        `solvi._terminal.visible`: escaped, and cut when very long.
        """
        request = visible(self.request_id)
        out = [f"  {request}: {d}" for d in self.differences]
        if self.refused is not None:
            out.append(f"  {request}: refused: {visible(self.refused)}")
        return out


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
        """Records not replayed (another catalog version, or not a decision record)."""
        return sum(1 for r in self.results if r.refused is not None)

    @property
    def ok(self) -> bool:
        """Whether no replayed record differs (refused records are not differences)."""
        return self.different == 0

    def __str__(self) -> str:
        lines = [
            summary_line(
                self.catalog,
                self.version,
                len(self.results),
                self.same,
                self.different,
                self.refused,
            )
        ]
        for r in self.results:
            lines.extend(r.lines())
        return "\n".join(lines)


def summary_line(
    catalog: str, version: str, total: int, same: int, different: int, refused: int
) -> str:
    """The first line of a `ReplaySummary` (also the last line `solvi replay` prints)."""
    return (
        f"replayed {total} records of catalog {catalog} (version {version}): {same} same, "
        f"{different} different, {refused} refused"
    )


def _step_text(state: Mapping[str, Any] | None) -> str:
    """A step's state as a reader says it: missing, ran (outcome), skipped (reason),
    each text of the record shown through `visible`."""
    if state is None:
        return "missing"
    said = []
    if "outcome" in state:
        message = state.get("message")
        told = f": {visible(message)}" if message else ""
        said.append(f"ran ({visible(state['outcome'])}{told})")
    if "skipped" in state:
        said.append(f"skipped ({visible(state['skipped'])})")
    return " and ".join(said)


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


def _refusal(system: System, record: Mapping[str, Any]) -> str | None:
    catalog = record.get("catalog")
    version = record.get("catalog_version")
    if catalog != system.name:
        return (
            f"the record is from catalog {catalog!r}, this System answers with catalog "
            f"{system.name!r}; replay it with a System of that catalog"
        )
    if version != system.version:
        flow = record.get("flow")
        gone = (
            [p for p in flow if isinstance(p, str) and p not in system.catalog]
            if isinstance(flow, list)
            else []
        )
        lacks = f" (this catalog has no part {', '.join(map(repr, gone))})" if gone else ""
        return (
            f"the record is from catalog version {version}, this System runs version "
            f"{system.version}{lacks}; replay it with the catalog as it was then"
        )
    return None


_FIX = "pass a Response.record or a request id stored in the store"


def _check_record(record: object) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        msg = f"not a decision record: got {type(record).__name__}; {_FIX}"
        raise TypeError(msg)
    needed = ("catalog", "catalog_version", "input", "early_exit", "answers", "values", "hash")
    missing = [k for k in needed if k not in record]
    if missing:
        msg = f"not a decision record (it has no {', '.join(missing)}); {_FIX}"
        raise ValueError(msg)
    for key in ("input", "answers", "values"):
        if not isinstance(record[key], Mapping):
            msg = f"not a decision record: its {key} is a {type(record[key]).__name__}; {_FIX}"
            raise ValueError(msg)  # noqa: TRY004  # a record of the wrong shape, as one lacking a key
    _step_states(record)  # a malformed trace is refused here, not half-compared
    return record


def _step_states(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each step a record mentions: the outcome of one that ran, the reason for one skipped.

    A record without ``steps`` or ``skipped`` mentions none of its steps there.

    Raises:
        ValueError: ``steps`` or ``skipped`` does not have a record's shape.
    """
    states: dict[str, dict[str, Any]] = {}
    steps = record.get("steps", [])
    skipped = record.get("skipped", [])
    if not isinstance(steps, list) or not all(
        isinstance(s, Mapping) and isinstance(s.get("part"), str) for s in steps
    ):
        msg = f"not a decision record: its steps are not a list of steps with a part; {_FIX}"
        raise ValueError(msg)
    if not isinstance(skipped, list) or not all(
        isinstance(s, list | tuple) and len(s) == 2 and isinstance(s[0], str) for s in skipped
    ):
        msg = f"not a decision record: its skipped are not [part, reason] pairs; {_FIX}"
        raise ValueError(msg)
    for step in steps:
        state = states.setdefault(step["part"], {})
        state["outcome"], state["message"] = step.get("outcome"), step.get("message")
    for part, reason in skipped:
        states.setdefault(part, {})["skipped"] = reason
    return states


def replay(
    system: System,
    record_or_request_id: Mapping[str, Any] | str,
    *,
    store: Store | None = None,
) -> ReplayResult:
    """Re-run a stored request through `system`, without writing anything, and list
    every difference.

    Plans the record's input, runs the flow with the record's early-exit
    setting (async parts in an event loop of their own, as under `ask`) and
    compares each answer, each computed value, each planned step (one that the
    record neither ran nor lists as skipped is a difference) and the hash. A
    step that timed out when recorded is not run again: it takes its recorded
    outcome. Nothing is stored, journaled, learned or told to hooks.

    Args:
        system: the System to replay with; its catalog version must be the record's.
        record_or_request_id: a record (`Response.record`, or one read from a
            store), or the request id of a stored record.
        store: where to read a request id from (default: the System's store).

    Returns:
        A `ReplayResult`; `refused` is set, and nothing compared, when the
        record is of another catalog or catalog version, or sets a key the
        System does not let a request set.

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
    try:
        run, not_rerun = _rerun(system, record)
    except RequestError as exc:
        return ReplayResult(request_id, same=False, refused=str(exc))
    response = respond(run, system.name, system.version)
    # Compare JSON with JSON: the stored record went through the same conversion.
    fresh: dict[str, Any] = json.loads(canonical_json(response.record))
    differences = _altered(record) + _compare(record, fresh)
    return ReplayResult(
        request_id, same=not differences, differences=differences, not_rerun=not_rerun
    )


# -- running the request again, touching nothing ------------------------------------------


def _rerun(system: System, record: Mapping[str, Any]) -> tuple[Run, tuple[str, ...]]:
    """Run the record's request through `system`'s flow: no journal, store, learning or
    hooks. Returns the finished run and the steps that took their recorded outcome."""
    state = as_state(from_record_value(record["input"]))
    program, prices = system.planner.recorded_program(frozenset(state), record.get("plan"))
    run = Run(
        program,
        state,
        early_exit=bool(record["early_exit"]),
        timeout=system.timeout,
        started=perf_counter(),
        prices=prices,
        found=system.guards == "found",
    )
    taken: list[str] = []
    call = _taking_recorded(_recorded_outcomes(record, program), taken)
    policy = order_policy(None, system.settings.order, system.order_model)
    cost_of = system.planner.node_cost
    order = by_declaration(policy, system.order_model, system.guards)
    for drive in drives(run, policy, cost_of, by_declaration=order):
        nodes = program.nodes
        for index in run.still_to_run(drive.indices, drive.filter_wanted):
            run_node(run, nodes[index], call)
    return run, tuple(taken)


def _recorded_outcomes(record: Mapping[str, Any], program: Program) -> dict[str, Cause]:
    """The planned calls the record holds as timed out (or interrupted): part -> cause."""
    facts = {p.name: node.fact for node in program.nodes for p in node.parts}
    out: dict[str, Cause] = {}
    for step in record.get("steps", ()):
        part, outcome = step["part"], step.get("outcome")
        if outcome in NOT_RERUN and part in facts:
            message = step.get("message")
            out[part] = Cause(
                str(outcome), part, facts[part], "" if message is None else str(message)
            )
    return out


def _taking_recorded(recorded: Mapping[str, Cause], taken: list[str]) -> Caller:
    """A call that is not made when the record holds it as timed out: it takes its
    recorded outcome, as a resume takes a journaled one."""

    def call(run: Run, node: Node, part: Part, args: tuple[Any, ...]) -> Outcome:
        cause = recorded.get(part.name)
        if cause is None:
            return call_here(run, node, part, args)
        taken.append(part.name)
        return None, cause

    return call


# -- comparing ---------------------------------------------------------------------------


def _altered(record: Mapping[str, Any]) -> tuple[Difference, ...]:
    """The hashes a record carries that its content does not give (a record written
    before `decision_hash` existed carries none, and is not faulted for it)."""
    return tuple(
        Difference("altered", name, record[name], own)
        for name, own in zip(("hash", "decision_hash"), record_hashes(record), strict=True)
        if name in record and record[name] != own
    )


def _compare(record: Mapping[str, Any], fresh: Mapping[str, Any]) -> tuple[Difference, ...]:
    differences: list[Difference] = []
    stored_answers: Mapping[str, Any] = record["answers"]
    fresh_answers: Mapping[str, Any] = fresh["answers"]
    for name in _union(stored_answers, fresh_answers):
        stored, replayed = stored_answers.get(name), fresh_answers.get(name)
        if stored != replayed:
            differences.append(Difference("answer", name, stored, replayed))
    stored_values: Mapping[str, Any] = record["values"]
    fresh_values: Mapping[str, Any] = fresh["values"]
    for fact in _union(stored_values, fresh_values):
        if stored_values.get(fact) != fresh_values.get(fact) or (
            (fact in stored_values) != (fact in fresh_values)
        ):
            differences.append(
                Difference("value", fact, stored_values.get(fact), fresh_values.get(fact))
            )
    stored_steps, fresh_steps = _step_states(record), _step_states(fresh)
    # Every planned step, in flow order, then any other step the record mentions.
    for part in _union(fresh["flow"], stored_steps):
        stored_step, fresh_step = stored_steps.get(part), fresh_steps.get(part)
        if stored_step != fresh_step:
            differences.append(Difference("step", part, stored_step, fresh_step))
    if record["hash"] != fresh["hash"]:
        differences.append(Difference("hash", "hash", record["hash"], fresh["hash"]))
    return tuple(differences)


def _union(a: Iterable[str], b: Iterable[str]) -> list[str]:
    seen = dict.fromkeys(a)
    seen.update(dict.fromkeys(b))
    return list(seen)


# -- a whole store -------------------------------------------------------------------------


def iter_replays(
    system: System, store: Store | None = None, since: dt.datetime | None = None
) -> Iterator[ReplayResult]:
    """Replay the stored records of `system`'s catalog one at a time, in storage order.

    The records are those stored before the first result is asked for (later
    ones, from any writer, are left out), read in batches, never all at once.
    A stored record that is not a decision record is refused, not raised.

    Args:
        system: the System to replay with.
        store: the store to read (default: the System's store).
        since: only records stored at or after this time (a naive time is UTC).

    Raises:
        ValueError: no store was given and the System has none.
    """
    source = _resolve_store(system, store)
    damaged: list[ReplayResult] = []

    def refuse(request_id: str, error: StoreError) -> None:
        damaged.append(ReplayResult(request_id, same=False, refused=str(error)))

    for request_id, record in source.iter_records(
        since=since, catalog=system.name, on_damaged=refuse
    ):
        yield from damaged  # those stored before this one
        damaged.clear()
        try:
            result = replay(system, record)
        except (TypeError, ValueError) as exc:
            yield ReplayResult(request_id, same=False, refused=str(exc))
            continue
        yield attrs.evolve(result, request_id=request_id)
    yield from damaged


def replay_store(
    system: System, store: Store | None = None, since: dt.datetime | None = None
) -> ReplaySummary:
    """Replay every stored record of `system`'s catalog, in the order they were stored.

    Writes nothing: see `replay`. The records are those stored when it starts
    (see `iter_replays`).

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
    return ReplaySummary(system.name, system.version, tuple(iter_replays(system, store, since)))
