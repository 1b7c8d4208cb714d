"""The processes a scenario starts: the child that dies, the inspector, the probe, the resumers.

Usage: ``proc.py ROLE --journal PATH_OR_DSN [...]``. Each role but the child prints one
``RESULT {json}`` line; the child prints one JSON event per line on stdout
(journal writes, part calls) and ``READY`` once it holds the scenario's shape,
then freezes until it is killed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

import flow
from scenarios import BY_NAME, Trigger

from solvi._db.journal_base import Unit
from solvi._db.journal_rows import Item, rows_of
from solvi._db.writer import Ticket
from solvi.journal import (
    CLOSE_REQUEST,
    OPEN_REQUEST,
    Journal,
    JournalError,
    PostgresJournal,
    SQLiteJournal,
)
from solvi.recovery import ResumeRefused

#: a frozen child that nobody kills gives up after this many seconds (a safety net only)
FREEZE_LIMIT = 120.0


class Probe:
    """Reports every journal write and part call of the child, and freezes it on its trigger."""

    def __init__(self, trigger: Trigger) -> None:
        self.trigger = trigger
        self.lock = threading.Lock()
        self.ready = False
        self.held: set[str] = set()
        self.committed: set[str] = set()

    def _emit(self, event: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
        sys.stdout.flush()

    def _fire(self) -> None:
        self.ready = True
        sys.stdout.write("READY\n")
        sys.stdout.flush()

    @staticmethod
    def _freeze() -> None:
        threading.Event().wait(FREEZE_LIMIT)
        os._exit(70)

    def _satisfied(self) -> bool:
        t = self.trigger
        return t.holds > 0 and len(self.held) >= t.holds and t.settled <= self.committed

    def point(self, write: str, when: str, part: str = "", **details: Any) -> None:
        """A journal write is about to begin ("pre") or has committed ("post")."""
        with self.lock:
            if self.ready:
                freeze = True
            else:
                self._emit({"ev": "journal", "write": write, "when": when, "part": part, **details})
                if write == "settled" and when == "post":
                    self.committed.add(part)
                freeze = self.trigger.freeze_at == (write, when, part)
                if freeze or self._satisfied():
                    self._fire()
        if freeze:
            self._freeze()

    def part(self, kind: str, part: str, *rest: Any) -> None:
        """A part's call entered, returned or raised; a held part blocks once entered."""
        hold = False
        with self.lock:
            if kind == "enter":
                hold = part in self.trigger.hold and len(self.held) < self.trigger.holds
                if self.ready:
                    hold = True  # nothing new may run once READY is out
                else:
                    self._emit({"ev": "enter", "part": part, "held": hold})
                    if hold:
                        self.held.add(part)
                        if self._satisfied():
                            self._fire()
            elif not self.ready:
                key = "value" if kind == "return" else "message"
                self._emit({"ev": kind, "part": part, key: rest[0]})
        if hold:
            self._freeze()


class Tracing(Journal):
    """Reports each journal statement just before its commit begins and once it committed.

    Mixed into each backend's journal (`TracingSQLiteJournal`,
    `TracingPostgresJournal`), ahead of it, so that ``super()`` is the real write.
    Under `ask` each commit holds one statement.
    """

    probe: Probe

    def _points(self, unit: Unit, when: str) -> None:
        for item in unit:
            if type(item) is not tuple:
                continue
            sql, params = item
            if sql == OPEN_REQUEST:
                self.probe.point("open", when, plan=json.loads(params[6]))
            elif sql == CLOSE_REQUEST:
                self.probe.point("close", when)
            elif params[1] == "started":
                self.probe.point("started", when, params[3])
            elif when == "pre":
                self.probe.point("settled", when, params[3])
            else:
                value = None if params[5] is None else json.loads(params[5])
                self.probe.point(
                    "settled", when, params[3], outcome=params[4], value=value, message=params[6]
                )

    def submit(self, unit: Unit, *, direct: bool = False) -> Ticket:
        self._points(unit, "pre")
        ticket = super().submit(unit, direct=direct)
        ticket.wait()
        self._points(unit, "post")
        return ticket

    def log(self, request_id: str, items: list[Item]) -> Ticket:
        if not self.logs_commits:  # the items become statements, and go through submit
            return super().log(request_id, items)
        unit = tuple(rows_of(request_id, items))
        self._points(unit, "pre")
        ticket = super().log(request_id, items)
        ticket.wait()
        self._points(unit, "post")
        return ticket


class TracingSQLiteJournal(Tracing, SQLiteJournal):
    """The SQLite journal, traced."""

    def __init__(self, path: str, probe: Probe) -> None:
        super().__init__(path)
        self.probe = probe


class TracingPostgresJournal(Tracing, PostgresJournal):
    """The PostgreSQL journal, traced."""

    def __init__(self, dsn: str, probe: Probe) -> None:
        super().__init__(dsn)
        self.probe = probe


def tracing_journal(spec: str, probe: Probe) -> Journal:
    """The traced journal for a path or a ``postgresql://`` DSN."""
    if spec.startswith(("postgresql://", "postgres://")):
        return TracingPostgresJournal(spec, probe)
    return TracingSQLiteJournal(spec, probe)


def _result(data: dict[str, Any]) -> None:
    sys.stdout.write("RESULT " + json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()


def _answers(response: Any) -> dict[str, Any]:
    return {
        name: {"status": a.status, "value": a.value, "guard": a.guard}
        for name, a in response.answers.items()
    }


def child(args: argparse.Namespace) -> None:
    """Ask the request with a tracing journal; freeze at the scenario's trigger."""
    scenario = BY_NAME[args.scenario]
    probe = Probe(scenario.trigger)
    journal = tracing_journal(args.journal, probe)
    system = flow.build_system(journal, hook=probe.part, workers=scenario.workers)
    system.ask(flow.INPUT, request_id=flow.REQUEST_ID)
    sys.stdout.write(json.dumps({"ev": "finished"}) + "\n")
    system.close()


def inspect(args: argparse.Namespace) -> None:
    """Read what the journal says about the request, claiming nothing."""
    system = flow.build_system(args.journal)
    assert system.journal is not None
    status = system.journal_status()
    out: dict[str, Any] = {
        "unfinished": [r.request_id for r in status],
        "running": [
            f"{r.request_id}:{s.part}" for r in status for s in r.steps if s.state == "running"
        ],
    }
    try:
        rj = system.journal.load(flow.REQUEST_ID)
    except JournalError:
        out["exists"] = False
    else:
        settled = {
            e.part: {"outcome": e.outcome, "value": e.value, "message": e.message}
            for e in rj.entries
            if e.kind == "settled"
        }
        out.update(
            exists=True,
            owner_alive=rj.owner_alive,
            closed=rj.closed,
            plan=list(rj.plan),
            steps={s.part: s.state for s in rj.steps()},
            settled=settled,
            skipped_torn=rj.skipped_torn,
        )
        for r in status:
            if r.request_id == flow.REQUEST_ID:
                out["status"] = {
                    "settled": list(r.settled),
                    "during": list(r.interrupted_during_execution),
                    "before": list(r.interrupted_before_start),
                }
    system.journal.close()
    _result(out)


def changed(journal: str) -> dict[str, Any]:
    """Try to resume with another catalog version, then with another plan: both must refuse.

    Each probing System's journal is closed before the real resume starts, so a
    claim a refusal left behind belongs to a dead owner by then.
    """
    out: dict[str, Any] = {}
    for key, system in (
        ("version", flow.build_system(journal, extra_part=True)),
        ("plan", flow.build_system(journal, questions=flow.CHANGED_QUESTIONS)),
    ):
        assert system.journal is not None
        try:
            system.resume(flow.REQUEST_ID)
        except ResumeRefused as exc:
            out[key] = {"refused": True, "message": str(exc)}
        except JournalError as exc:
            out[key] = {"refused": False, "missing": True, "message": str(exc)}
        else:
            out[key] = {"refused": False, "message": "resumed"}
        try:
            owner = system.journal.load(flow.REQUEST_ID).owner
        except JournalError:
            owner = None
        out[key]["left_claimed"] = owner == system.journal.owner
        system.close()
    return out


def resume(args: argparse.Namespace) -> None:
    """recover() and resume(); with --wait-go, only once the orchestrator says go.

    With --probe LOG, first the changed-plan probe, its part calls logged to LOG.
    """
    out: dict[str, Any] = {"resumed": False}
    if args.probe:
        calls = os.environ.get("SOLVI_BENCH_CALL_LOG", "")
        os.environ["SOLVI_BENCH_CALL_LOG"] = args.probe
        out["changed"] = changed(args.journal)
        os.environ["SOLVI_BENCH_CALL_LOG"] = calls
    system = flow.build_system(args.journal)
    assert system.journal is not None
    if args.wait_go:
        sys.stdout.write("ARMED\n")
        sys.stdout.flush()
        if sys.stdin.readline().strip() != "go":
            return
    recovered = system.recover()
    out["recovered"] = [r.request_id for r in recovered]
    if args.pause_after_claim:
        sys.stdout.write("CLAIMED\n")
        sys.stdout.flush()
        if sys.stdin.readline().strip() != "go":
            return
    try:
        response = system.resume(flow.REQUEST_ID)
    except ResumeRefused as exc:
        out["refused"] = str(exc)
    except JournalError as exc:
        out["missing"] = str(exc)
    else:
        out.update(
            resumed=True,
            answers=_answers(response),
            hash=response.hash,
            notes=list(response.notes),
        )
    status = system.journal_status()
    out["unfinished_after"] = [r.request_id for r in status]
    out["running_after"] = [
        f"{r.request_id}:{s.part}" for r in status for s in r.steps if s.state == "running"
    ]
    try:
        out["closed_after"] = system.journal.load(flow.REQUEST_ID).closed
    except JournalError:
        out["closed_after"] = None
    system.close()
    _result(out)


def control(args: argparse.Namespace) -> None:
    """The same request on a fresh journal, never interrupted."""
    system = flow.build_system(args.journal, workers=args.workers)
    response = system.ask(flow.INPUT, request_id=flow.REQUEST_ID)
    system.close()
    _result({"answers": _answers(response), "hash": response.hash})


def main() -> None:
    """Run one role."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("role", choices=("child", "inspect", "resume", "control"))
    parser.add_argument("--journal", required=True)
    parser.add_argument("--scenario", default="")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--wait-go", action="store_true")
    parser.add_argument("--pause-after-claim", action="store_true")
    parser.add_argument("--probe", default="", help="first try a changed plan (log its calls here)")
    args = parser.parse_args()
    roles = {
        "child": child,
        "inspect": inspect,
        "resume": resume,
        "control": control,
    }
    roles[args.role](args)


if __name__ == "__main__":
    main()
