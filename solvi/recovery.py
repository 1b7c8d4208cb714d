"""Journaling requests as they run, and finishing them after a crash.

The System calls `begin` before running a journaled request and `end` after
it; `inspect`, `recover` and `prepare_resume` read the journal back.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from json.encoder import encode_basestring_ascii as encode_json_string
from time import perf_counter
from typing import Any

import attrs

from solvi.errors import SolviError
from solvi.journal import (
    INSERT_ENTRY,
    EntryRows,
    GroupCommit,
    Journal,
    JournalEntry,
    JournalError,
    RequestJournal,
    StepState,
    input_hash,
    pack_exact,
)
from solvi.program import Program
from solvi.record import canonical_json, to_record_value
from solvi.schedule import A_PART, FAILED, OK, Cause, Run

__all__ = [
    "JournalWriter",
    "Recovery",
    "ResumeRefused",
    "begin",
    "inspect",
    "notes_after_resume",
    "prepare_resume",
    "recover",
    "state_json",
    "value_forms",
]


class ResumeRefused(SolviError, ValueError):
    """A journaled request cannot be resumed safely (see the message)."""


@attrs.frozen
class Recovery:
    """An unfinished request whose owner died, now claimed by this process."""

    request_id: str
    input: dict[str, Any]
    settled: tuple[str, ...]
    interrupted_during_execution: tuple[str, ...]
    interrupted_before_start: tuple[str, ...]
    skipped_torn: int
    steps: tuple[StepState, ...]


class JournalWriter:
    """Binds a journal to one request for the scheduler's `starting`/`called` hooks.

    Without a group each entry is committed at once. With one (under `aask`),
    entries wait in the group, and the driver awaits `flush` before a call
    starts or a result is released.
    """

    __slots__ = ("flush", "group", "journal", "request_id", "rows")

    #: make everything this request recorded durable: the group's `flush` (so that
    #: a waiting step resumes through one coroutine less), a no-op without a group
    flush: Callable[[], Awaitable[None]]

    def __init__(self, journal: Journal, request_id: str, group: GroupCommit | None = None) -> None:
        self.journal = journal
        self.request_id = request_id
        self.group = group
        self.rows = EntryRows(request_id)
        self.flush = _durable_already if group is None else group.flush

    def started(self, step: int, part: str) -> None:
        """Record a started entry."""
        if self.group is None:
            self.journal.started(self.request_id, step, part)
        else:
            self.group.pending.append((INSERT_ENTRY, self.rows.started(step, part)))

    def settled(self, step: int, part: str, value: Any, cause: Cause | None) -> None:
        """Record a settled entry with the value (as JSON, and exactly) or the error."""
        if cause is None:
            outcome, message = "ok", None
            data, exact = value_forms(value, part)
        else:
            outcome, data, message, exact = cause.kind, None, cause.message, None
        if self.group is None:
            self.journal.settled(self.request_id, step, part, outcome, data, message, exact)
        else:
            row = self.rows.settled(step, part, outcome, data, message, exact)
            self.group.pending.append((INSERT_ENTRY, row))

    def flush_now(self) -> None:
        """The same, without waiting for other steps' entries."""
        if self.group is not None:
            self.group.flush_now()

    def close(self, response_hash: str | None) -> None:
        """Record the closed entry, with whatever the request still has pending.

        `response_hash` is kept with it when known (None when the response was not
        stored: working it out only for the journal would lengthen every request).
        """
        if self.group is None:
            self.journal.close_request(self.request_id, response_hash)
        else:
            self.group.add(self.journal.close_statement(self.request_id, response_hash))
            self.group.flush_now()


async def _durable_already() -> None:
    """Without a group every entry is committed as it is written."""


def value_forms(value: Any, part: str) -> tuple[str, str | None]:
    """A settled value's canonical JSON (as `canonical_json` of its record form) and
    its exact form (`pack_exact`), with the common plain types done directly."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value), None
    if kind is str:
        return encode_json_string(value), None
    if value is None:
        return "null", None
    if kind is bool:
        return ("true" if value else "false"), None
    return canonical_json(to_record_value(value, part)), pack_exact(value)


#: input values whose record form is the value itself
_AS_IS = frozenset({str, int, bool, type(None)})


def state_json(state: dict[str, Any]) -> str:
    """The canonical JSON of a request's input (what the journal keeps and hashes)."""
    for value in state.values():
        kind = type(value)
        if kind not in _AS_IS and not (kind is float and math.isfinite(value)):
            break
    else:
        return canonical_json(state)  # plain scalars only: nothing to convert
    return canonical_json({k: to_record_value(v, f"input {k}") for k, v in state.items()})


def begin(
    journal: Journal,
    run: Run,
    request_id: str,
    catalog: str,
    catalog_version: str,
    group: GroupCommit | None = None,
) -> None:
    """Commit the open entry and attach the writer; nothing has run yet."""
    details: dict[str, Any] = {
        "catalog": catalog,
        "catalog_version": catalog_version,
        "state_json": state_json(run.state),
        "plan": run.program.step_names,
        "early_exit": run.early_exit,
    }
    if group is None:
        journal.open(request_id, **details)
    else:
        # Committed with the first started entry, before any step is dispatched.
        group.add(journal.open_statement(request_id, **details))
    run.journal = JournalWriter(journal, request_id, group)
    run.plain = False
    journal.running_here(request_id)


def _recovery(rj: RequestJournal) -> Recovery:
    steps = rj.steps()
    return Recovery(
        request_id=rj.request_id,
        input=rj.input,
        settled=tuple(s.part for s in steps if s.state == "settled"),
        interrupted_during_execution=tuple(
            s.part for s in steps if s.state == "interrupted during execution"
        ),
        interrupted_before_start=tuple(
            s.part for s in steps if s.state == "interrupted before start"
        ),
        skipped_torn=rj.skipped_torn,
        steps=steps,
    )


def recover(journal: Journal, catalog: str) -> list[Recovery]:
    """Claim every unfinished request of `catalog` whose owner is dead."""
    out = []
    for rj in journal.unfinished(catalog):
        if rj.owner_alive:
            continue
        if journal.claim(rj.request_id):
            out.append(_recovery(rj))  # as found: what the dead owner left
    return out


def inspect(journal: Journal, catalog: str) -> list[Recovery]:
    """Every unfinished request of `catalog`, read only (claims nothing)."""
    return [_recovery(rj) for rj in journal.unfinished(catalog)]


def prepare_resume(
    journal: Journal,
    request_id: str,
    program_for: Any,
    catalog_version: str,
    timeout: float | None,
) -> tuple[Run, list[str]]:
    """A Run holding what the journal settled, ready for a driver to finish, and the
    planned steps the crash left before their start.

    Raises:
        ResumeRefused: the request is closed, owned by a live process, or its
            catalog version, input or plan differ from this System's.
    """
    try:
        rj = journal.load(request_id)
    except JournalError as exc:
        raise ResumeRefused(str(exc)) from exc
    if rj.closed:
        msg = f"request {request_id!r} is already closed; there is nothing to resume"
        raise ResumeRefused(msg)
    if rj.catalog_version != catalog_version:
        msg = (
            f"request {request_id!r} was journaled by catalog version {rj.catalog_version}, "
            f"this System is version {catalog_version}; resume it with the catalog that "
            f"started it"
        )
        raise ResumeRefused(msg)
    if input_hash(state_json(rj.input)) != rj.input_hash:
        msg = f"request {request_id!r}: the journaled input does not match its hash"
        raise ResumeRefused(msg)
    program: Program = program_for(rj.input)
    if program.flow.steps != rj.plan:
        msg = (
            f"request {request_id!r} was planned as {list(rj.plan)}, now "
            f"{list(program.flow.steps)}; the plan changed, so it cannot be resumed"
        )
        raise ResumeRefused(msg)
    # Claim last, so that a refusal above leaves the request to others.
    if rj.owner != journal.owner and not journal.claim(request_id):
        msg = (
            f"request {request_id!r} belongs to a live process ({rj.owner}); only a dead "
            f"owner's requests can be resumed"
        )
        raise ResumeRefused(msg)
    run = Run(
        program, dict(rj.input), early_exit=rj.early_exit, timeout=timeout, started=perf_counter()
    )
    untouched = _prefill(run, rj)
    run.journal = JournalWriter(journal, request_id)
    run.plain = False
    run.resumed = True
    journal.running_here(request_id)
    return run, untouched


def _prefill(run: Run, rj: RequestJournal) -> list[str]:
    nodes = run.program.nodes
    settled: dict[str, JournalEntry] = {}
    started = rj.started_parts()
    for entry in rj.entries:
        if entry.kind == "settled":
            settled[entry.part] = entry
    t = run.started
    for node in nodes:
        for k, part in enumerate(node.parts):
            if run.status[node.index] in (OK, FAILED):
                break
            outcome = settled.get(part.name)
            if outcome is not None:
                cause = None
                if outcome.outcome != "ok":
                    kind = outcome.outcome or "error"
                    cause = Cause(kind, part.name, node.fact, outcome.message or "")
                done = run.called(node, k, t, t, outcome.value, cause)
                if not done:
                    run.resume_from[node.index] = k + 1
                continue
            if part.name in started:
                if part.idempotent:
                    run.notes.append(
                        f"{part.name} was interrupted during execution; re-run (idempotent)"
                    )
                    run.resume_from[node.index] = k
                else:
                    run.notes.append(
                        f"{part.name} was interrupted during execution; not re-run "
                        f"(declare idempotent=True to allow it)"
                    )
                    message = "interrupted during execution; not re-run (not idempotent)"
                    done = run.called(
                        node, k, t, t, None, Cause("interrupted", part.name, node.fact, message)
                    )
                    if not done:
                        run.resume_from[node.index] = k + 1
                    continue
            break
    return [p for p in run.program.flow.steps if p not in settled and p not in started]


def notes_after_resume(run: Run, untouched: list[str]) -> None:
    """Say, for each step the crash left before its start, whether the resume ran it."""
    ran = {a[A_PART] for a in run.attempts}
    for part in untouched:
        if part in ran:
            run.notes.append(f"{part} was interrupted before start; run on resume")
        elif part in run.skip_reasons:
            run.notes.append(
                f"{part} was interrupted before start; not run on resume ({run.skip_reasons[part]})"
            )
