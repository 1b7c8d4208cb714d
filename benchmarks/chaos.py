"""Chaos benchmark: SIGKILL a process running concurrent journaled `aask` requests, many times.

Each round is one child process. It first inspects the journal (`journal_status()`,
claiming nothing), then `recover()`s and `resume()`s every unfinished request the
killed round left, tries `resume()` on each request the killed round started that
has no stored response (to learn why not), and inspects again. Then it keeps 16
to 32 `aask` requests in flight, each with a request id, a journal and a store, 5%
of them cancelled by their caller at a random moment, and prints RUNNING once every
slot is busy. The parent SIGKILLs it after a random delay (up to 1 s; 0.4 s with
--quick). After the last kill a final round only recovers, and a last process only
inspects.

With ``--overlap`` each round starts while the one before still runs: once the new
child prints RUNNING (it has recovered what the dead rounds left, beside a live
process, and its own requests are in flight), the parent waits the random delay and
SIGKILLs the older one. So two live processes share the journal and the store
throughout, each round recovers beside a live sibling whose requests it must not
claim, and every kill lands while another process keeps writing. A request's owner
counts as alive at an inspection when its round is the one still running then; the
rows below judge only requests whose owner was dead.

Every part call appends one line (round, role, request id, part) to a side-effect
file with `os.write` on an O_APPEND descriptor, so calls cut short by the kill are
counted too. The parent then judges, from that file, each round's report, the store
and an uninterrupted reference run (a System without journal or store, computed in
the parent), one row per property:

- stuck requests: listed by `journal_status()` once a recovery has finished;
- steps shown running without a live owner, at any inspection;
- lost stored responses: a started request with no stored response that resume
  did not refuse for an accepted reason (the classes are printed);
- duplicated stored responses: more than one record or decision entry per id;
- settled steps re-run: a part called after its settled entry was journaled
  (also: called for a request that was not unfinished, or twice in one process);
- non-idempotent parts called more than once for one request;
- cancelled requests resumed, left open, or refused without saying so;
- answers that differ from the uninterrupted run's (questions that need a
  non-idempotent step cut by a kill must abstain with guard "interrupted");
- the store's audit chain (`solvi.verify`).

SQLite by default (journal and store in two files of a temporary directory);
``--postgres DSN`` puts both in a fresh schema of that server (dropped at the end),
through `runtime_resume/backends.py`. Exit status 1 when any row fails.

    python benchmarks/chaos.py [--quick] [--overlap] [--kills N] [--seed S] [--postgres DSN]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from solvi import Catalog, Question, ResumeRefused, System, verify
from solvi.storage import open_store

HERE = Path(__file__).resolve().parent
RESUME_BENCH = HERE / "runtime_resume"
sys.path.insert(0, str(RESUME_BENCH))

import flow as resume_flow  # noqa: E402  (benchmarks/runtime_resume/flow.py)

CATALOG = "chaos"
QUESTIONS = (Question("decide"), Question("review"))
#: a child that nobody kills stops its workload after this many seconds (a safety net)
CHILD_LIMIT = 30.0
#: how long the parent waits for any process to report or end (a safety net)
PROCESS_LIMIT = 120.0
ROLE_RUN = "run"
ROLE_RESUME = "resume"

# -- the catalog ----------------------------------------------------------------

#: set by each process: where part calls are appended (None: not recorded)
EFFECTS: int | None = None
#: the round and role written with each call
TAG = "0\tnone"
#: parts sleep only in the children; the reference run in the parent does not
SLEEP = True


def _effect(case: dict[str, Any], part: str) -> None:
    """Append one line for this call; os.write on an O_APPEND descriptor survives SIGKILL."""
    if EFFECTS is not None:
        os.write(EFFECTS, f"{TAG}\t{case['id']}\t{part}\n".encode())


async def _pause() -> None:
    if SLEEP:
        await anyio.sleep(random.uniform(0.001, 0.004))


def build_catalog() -> Catalog:
    """Three layers of async parts, two hard checks, a blocking sync part and two rules.

    Every part reads `case`, whose id is the request id, to log its call. `risk` and
    `score` are not idempotent (they stand for calls that book or notify).
    """
    cat = Catalog(CATALOG)

    @cat.fn(idempotent=True)
    async def profile(case: dict[str, Any]) -> dict[str, Any]:
        _effect(case, "profile")
        await _pause()
        return {"region": case["region"], "tier": "gold" if case["amount"] % 3 else "silver"}

    @cat.fn(idempotent=True)
    async def docs(case: dict[str, Any]) -> list[str]:
        _effect(case, "docs")
        await _pause()
        return sorted(f"doc{i}" for i in range(case["items"]))

    @cat.check(hard=True, idempotent=True)
    async def eligible(case: dict[str, Any], profile: dict[str, Any]) -> bool:
        _effect(case, "eligible")
        await _pause()
        return bool(profile["region"] in ("eu", "uk"))

    @cat.check(hard=True, idempotent=True)
    def limit_ok(case: dict[str, Any]) -> bool:
        _effect(case, "limit_ok")
        return bool(case["amount"] <= 9000)

    @cat.fn(idempotent=True)
    async def price(case: dict[str, Any], profile: dict[str, Any]) -> int:
        _effect(case, "price")
        await _pause()
        return int(case["amount"] * (2 if profile["tier"] == "gold" else 3))

    @cat.fn(idempotent=True)
    async def history(case: dict[str, Any], profile: dict[str, Any]) -> list[int]:
        _effect(case, "history")
        await _pause()
        return [case["amount"] % 7, case["items"], len(profile["tier"])]

    @cat.fn(idempotent=True, blocking=True)
    def ledger(case: dict[str, Any], profile: dict[str, Any]) -> int:
        _effect(case, "ledger")
        if SLEEP:
            time.sleep(random.uniform(0.001, 0.003))
        return int(case["amount"] // 10 + (5 if profile["tier"] == "gold" else 0))

    @cat.fn
    async def risk(case: dict[str, Any], profile: dict[str, Any]) -> float:
        _effect(case, "risk")
        await _pause()
        return 0.25 if case["amount"] < 5000 else 0.75

    @cat.fn
    async def score(
        case: dict[str, Any], price: int, history: list[int], risk: float, docs: list[str]
    ) -> int:
        _effect(case, "score")
        await _pause()
        return int(price // 100 + sum(history) - int(risk * 10) + len(docs))

    @cat.fn(idempotent=True)
    async def summary(case: dict[str, Any], ledger: int, docs: list[str]) -> str:
        _effect(case, "summary")
        await _pause()
        return f"{ledger}:{len(docs)}"

    @cat.rule
    def decide(case: dict[str, Any], eligible: bool, limit_ok: bool, score: int) -> bool:
        _effect(case, "decide")
        return bool(score >= 60)

    @cat.rule
    def review(case: dict[str, Any], eligible: bool, summary: str) -> str:
        _effect(case, "review")
        return "look" if summary.endswith(":0") else "ok"

    return cat


def request_input(request_id: str) -> dict[str, Any]:
    """The input of a request, from its id alone (so the parent can rebuild it)."""
    rng = random.Random(request_id)
    region = rng.choice(("eu", "eu", "uk", "eu", "us"))
    case = {"id": request_id, "amount": rng.randint(100, 10_000), "items": rng.randint(0, 4)}
    return {"case": case | {"region": region}}


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# -- a round (the child) ------------------------------------------------------------


def _status(system: System) -> list[dict[str, Any]]:
    """What `journal_status()` lists, as data."""
    return [
        {
            "id": r.request_id,
            "settled": list(r.settled),
            "during": list(r.interrupted_during_execution),
            "before": list(r.interrupted_before_start),
            "running": [s.part for s in r.steps if s.state == "running"],
        }
        for r in system.journal_status()
    ]


def _attempt(system: System, request_id: str) -> dict[str, Any]:
    """resume() one request: its hash and notes, or why it could not."""
    try:
        response = system.resume(request_id)
    except ResumeRefused as exc:
        return {"ok": False, "type": "ResumeRefused", "message": str(exc)}
    except Exception as exc:  # a benchmark reports what a resume raised, whatever it is
        return {"ok": False, "type": type(exc).__name__, "message": str(exc)}
    return {"ok": True, "hash": response.hash, "notes": list(response.notes)}


def _stored(system: System, request_id: str) -> bool:
    assert system.store is not None
    try:
        system.store.get_record(request_id)
    except LookupError:
        return False
    return True


def recover_round(
    system: System, work: Path, round_no: int, probe: list[int], live: list[int]
) -> dict[str, Any]:
    """Inspect, recover and resume everything; probe what the killed rounds in `probe` left
    unstored. `live`: the rounds whose process may still run (their requests are theirs)."""
    report: dict[str, Any] = {"round": round_no, "live": live, "inspected": _status(system)}
    t0 = time.perf_counter()
    recovered = [r.request_id for r in system.recover()]
    report["recovered"] = recovered
    report["resumes"] = {rid: _attempt(system, rid) for rid in recovered}
    probes: dict[str, Any] = {}
    prefixes = tuple(f"r{n:03d}-" for n in probe)
    for rid in _lines(work / "started.log"):
        if rid.startswith(prefixes) and rid not in report["resumes"] and not _stored(system, rid):
            probes[rid] = _attempt(system, rid)
    report["probes"] = probes
    report["recovery_s"] = time.perf_counter() - t0
    report["after"] = _status(system)
    return report


async def workload(system: System, work: Path, round_no: int, inflight: int, cancel: float) -> int:
    """Keep `inflight` requests going until killed (or CHILD_LIMIT); cancel some at random."""
    started = _open_append(work / "started.log")
    cancelled = _open_append(work / "cancelled.log")
    counter = itertools.count()
    deadline = time.monotonic() + CHILD_LIMIT
    rng = random.Random(f"{round_no}-workload")

    async def one() -> None:
        while time.monotonic() < deadline:
            n = next(counter)
            rid = f"r{round_no:03d}-{n:06d}"
            os.write(started, f"{rid}\n".encode())
            if n == inflight - 1:  # every request slot is busy: the kill may come now
                _say("RUNNING")
            state = request_input(rid)
            if rng.random() >= cancel:
                await system.aask(state, request_id=rid)
                continue
            with anyio.move_on_after(rng.uniform(0.0, 0.02)) as scope:
                await system.aask(state, request_id=rid)
            if scope.cancelled_caught:
                os.write(cancelled, f"{rid}\n".encode())

    async with anyio.create_task_group() as tg:
        for _ in range(inflight):
            tg.start_soon(one)
    os.close(started)
    os.close(cancelled)
    return next(counter)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _system(journal: str, store: str) -> System:
    return System(build_catalog(), QUESTIONS, journal=journal, store=store)


def child(args: argparse.Namespace) -> None:
    """One round: recover what the last one left, print RUNNING, then ask until killed."""
    global EFFECTS, TAG
    work = Path(args.work)
    EFFECTS = _open_append(work / "effects.log")
    TAG = f"{args.round}\t{ROLE_RESUME}"
    system = _system(args.journal, args.store)
    if args.role == "inspect":
        report = {"round": args.round, "live": [], "inspected": _status(system)}
    else:
        report = recover_round(system, work, args.round, args.probe, args.live)
    out = work / f"round-{args.round:03d}.json"
    out.with_suffix(".tmp").write_text(json.dumps(report))
    out.with_suffix(".tmp").replace(out)
    if args.role == "round":
        TAG = f"{args.round}\t{ROLE_RUN}"
        asyncio.run(workload(system, work, args.round, args.inflight, args.cancel))
    else:
        _say("RUNNING")
    system.close()


# -- the parent -------------------------------------------------------------------


@dataclass
class Where:
    """Where the journal and the store live, and what to do after a kill."""

    journal: str
    store: str
    backend: Any = None

    def settle(self, round_no: int, overlap: bool) -> str:
        """Wait until the killed child's owner lock is gone (PostgreSQL); with `overlap`,
        only its own (another child runs beside it)."""
        if self.backend is None:
            return ""
        return str(self.backend.settle(self.store, f"r{round_no:03d}-" if overlap else None))

    def drop(self) -> None:
        if self.backend is not None:
            self.backend.drop()


def _where(args: argparse.Namespace, work: Path) -> Where:
    if not args.postgres:
        return Where(str(work / "journal.db"), str(work / "store.db"))
    from backends import PostgresBackend  # benchmarks/runtime_resume/backends.py

    backend = PostgresBackend(args.postgres)
    spec = backend.fresh(work)
    return Where(backend.child_spec(spec), spec, backend)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=PROCESS_LIMIT)


@dataclass
class Kill:
    """What became of one round's child."""

    round: int
    delay: float
    killed: bool
    returncode: int | None
    settle: str = ""


class Child:
    """One round's child process, started; RUNNING is read from its output."""

    def __init__(
        self,
        args: argparse.Namespace,
        where: Where,
        work: Path,
        round_no: int,
        role: str,
        *,
        probe: list[int],
        live: list[int],
    ) -> None:
        rng = random.Random(f"{args.seed}-{round_no}")
        self.round, self.role, self.work, self.where = round_no, role, work, where
        self.overlap = bool(args.overlap)
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            role,
            "--round",
            str(round_no),
            "--work",
            str(work),
            "--journal",
            where.journal,
            "--store",
            where.store,
            "--inflight-now",
            str(rng.randint(*args.inflight)),
            "--cancel",
            str(args.cancel),
            "--probe",
            ",".join(map(str, probe)),
            "--live",
            ",".join(map(str, live)),
        ]
        self.running = threading.Event()
        with (work / f"round-{round_no:03d}.err").open("w") as err:
            self.proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True
            )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip() == "RUNNING":
                self.running.set()
        self.running.set()

    def wait_running(self) -> None:
        """Until the child says every request slot is busy (or it ended)."""
        self.running.wait(PROCESS_LIMIT)

    def end(self, delay: float | None) -> Kill:
        """SIGKILL the child after `delay` seconds if it still runs (None: let it finish),
        wait for it, and say what became of it."""
        proc, killed = self.proc, False
        try:
            if delay is not None and proc.poll() is None:
                time.sleep(delay)
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    killed = True
            proc.wait(timeout=PROCESS_LIMIT)
            self.reader.join(PROCESS_LIMIT)
        finally:
            _stop(proc)
            if proc.stdout is not None:
                proc.stdout.close()
        kill = Kill(self.round, delay or 0.0, killed, proc.returncode)
        if killed:
            kill.settle = self.where.settle(self.round, self.overlap)
        elif proc.returncode != 0:
            err = self.work / f"round-{self.round:03d}.err"
            tail = err.read_text().strip().splitlines()[-3:]
            msg = f"round {self.round} ({self.role}) exited with {proc.returncode}: "
            raise RuntimeError(msg + " | ".join(tail))
        return kill


def run_rounds(
    args: argparse.Namespace, where: Where, work: Path, kills: int, delays: list[float]
) -> list[Kill]:
    """The killed rounds, then the final recovery round and the last inspection.

    One at a time, each round probes the one killed just before it. With
    `args.overlap`, round n starts while round n-1 still runs and n-1 is killed once n
    is RUNNING: n probes n-2 (dead by then) and records n-1 as live; the final round
    probes the last two.
    """
    rounds: list[Kill] = []
    if not args.overlap:
        for n in range(1, kills + 1):
            child = Child(args, where, work, n, "round", probe=[n - 1], live=[])
            child.wait_running()
            rounds.append(child.end(delays[n - 1]))
        last = [kills]
    else:
        older: Child | None = None
        for n in range(1, kills + 1):
            live = [older.round] if older is not None else []
            child = Child(args, where, work, n, "round", probe=[n - 2], live=live)
            child.wait_running()
            if older is not None:
                rounds.append(older.end(delays[older.round - 1]))
            older = child
        assert older is not None
        rounds.append(older.end(delays[kills - 1]))
        last = [kills - 1, kills]
    for role, n, probe in (("final", kills + 1, last), ("inspect", kills + 2, [])):
        child = Child(args, where, work, n, role, probe=probe, live=[])
        child.wait_running()
        child.end(None)
    return rounds


def reference(request_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The uninterrupted answers and hash of every request (no journal, no store, no sleep)."""
    global SLEEP, EFFECTS
    SLEEP, EFFECTS = False, None
    system = System(build_catalog(), QUESTIONS)

    async def all_of() -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        limit = anyio.Semaphore(64)

        async def one(rid: str) -> None:
            async with limit:
                res = await system.aask(request_input(rid))
            out[rid] = {"hash": res.hash, "answers": res.record["answers"]}

        async with anyio.create_task_group() as tg:
            for rid in request_ids:
                tg.start_soon(one, rid)
        return out

    return asyncio.run(all_of())


# -- verdicts ---------------------------------------------------------------------


@dataclass
class Row:
    """One property: its count, what the count is made of, and the verdict."""

    prop: str
    count: int
    detail: str
    ok: bool

    @property
    def verdict(self) -> str:
        return "PASS" if self.ok else "FAIL"


@dataclass
class Evidence:
    """Everything the rounds left behind, gathered by the parent."""

    started: list[str]
    cancelled: set[str]
    reports: list[dict[str, Any]]
    #: (request id, part) -> [(round, role), ...] in call order
    calls: dict[tuple[str, str], list[tuple[int, str]]]
    records: dict[str, list[dict[str, Any]]]
    decisions: Counter[str]
    audit: Any
    reference: dict[str, dict[str, Any]]
    idempotent: frozenset[str]
    needs: dict[str, frozenset[str]]
    #: per round: request id -> what the inspection before recovery said
    inspections: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def dead(self, report: dict[str, Any], rid: str) -> bool:
        """Whether `rid`'s owner was dead at `report`'s inspection (its round not live)."""
        return int(rid[1:4]) not in report.get("live", ())

    def attempts(self, rid: str) -> Iterator[dict[str, Any]]:
        """Every resume of `rid`, in round order (recovered ones, then probes)."""
        for report in self.reports:
            for key in ("resumes", "probes"):
                got = report.get(key, {}).get(rid)
                if got is not None:
                    yield got


def gather(work: Path, where: Where) -> Evidence:
    """Read the side-effect file, the round reports and the store; run the reference."""
    started = _lines(work / "started.log")
    calls: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for line in _lines(work / "effects.log"):
        round_no, role, rid, part = line.split("\t")
        calls[(rid, part)].append((int(round_no), role))
    reports = [json.loads(p.read_text()) for p in sorted(work.glob("round-*.json"))]
    store = open_store(where.store)
    try:
        records: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rid, record in store.iter_records():
            records[rid].append(record)
        decisions = Counter(e.request_id for e in store.audit_entries() if e.kind == "decision")
        audit = verify(store)
    finally:
        store.close()
    catalog = build_catalog()
    ev = Evidence(
        started=started,
        cancelled=set(_lines(work / "cancelled.log")),
        reports=reports,
        calls=dict(calls),
        records=dict(records),
        decisions=decisions,
        audit=audit,
        reference=reference(started),
        idempotent=frozenset(p.name for p in catalog.parts if p.idempotent),
        needs=resume_flow.needs(catalog, QUESTIONS),
    )
    for report in reports:
        ev.inspections[report["round"]] = {r["id"]: r for r in report["inspected"]}
    return ev


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k}: {n}" for k, n in counter.most_common()) or "none"


def stuck_row(ev: Evidence) -> Row:
    """Requests `journal_status()` still lists once a recovery has finished."""
    stuck: set[str] = set()
    final: set[str] = set()
    for report in ev.reports:
        stuck |= {r["id"] for r in report.get("after", []) if ev.dead(report, r["id"])}
        if "after" not in report:  # the last process: it only inspects
            final = {r["id"] for r in report["inspected"]}
    stuck |= final
    why = Counter[str]()
    attempts = 0
    for rid in stuck:
        tries = list(ev.attempts(rid))
        attempts += len(tries)
        last = tries[-1] if tries else None
        if last is None:
            why["never resumed"] += 1
        elif last["ok"]:
            why["resumed, yet still listed"] += 1
        else:
            why[f"resume raised {last['type']}"] += 1
    rounds = sum(1 for r in ev.reports if r.get("after"))
    detail = (
        f"listed after recovery in {rounds} round(s), still at the end: {len(final)}; "
        f"{attempts} resume attempts on them; last: {_counts(why)}"
    )
    return Row(
        "stuck requests (listed by journal_status() after recovery)", len(stuck), detail, not stuck
    )


def ghost_row(ev: Evidence) -> Row:
    """Steps shown as running at an inspection made after their owner was killed."""
    ghosts = 0
    where = Counter[str]()
    live = Counter[str]()
    for report in ev.reports:
        for r in report["inspected"]:
            if ev.dead(report, r["id"]):
                ghosts += len(r["running"])
                where.update(r["running"])
            else:
                live.update(r["running"])
    inspections = len(ev.reports)
    detail = f"{inspections} inspections by a fresh process; running: {_counts(where)}"
    if live:
        detail += f" (with a live owner, not counted: {sum(live.values())})"
    return Row("steps shown running without a live owner", ghosts, detail, ghosts == 0)


#: resume refusals that explain a missing stored response, and when each is accepted
NEVER_JOURNALED = re.compile(r"has no request")
CANCELLED = re.compile(r"cancel", re.IGNORECASE)
CLOSED = re.compile(r"already closed")


def _classify(ev: Evidence, rid: str) -> tuple[str, bool]:
    """Why `rid` has no stored response, and whether that is an accepted reason."""
    tries = list(ev.attempts(rid))
    if not tries:
        return "never resumed nor refused", False
    last = tries[-1]
    if last["ok"]:
        return "resumed, but its response is not in the store", False
    message = last["message"]
    if last["type"] != "ResumeRefused":
        return f"resume raised {last['type']}", False
    if CANCELLED.search(message):
        return "refused: cancelled by its caller", True
    if NEVER_JOURNALED.search(message):
        ran = sum(len(v) for (r, _), v in ev.calls.items() if r == rid)
        if ran:
            return "refused: not in the journal, yet parts ran", False
        return "refused: not in the journal (killed before its open entry was durable)", True
    if CLOSED.search(message):
        return "refused: closed, with no stored response", False
    return f"refused: {message[:60]}", False


#: what can become of a started request; True: accepted (not a lost response)
OUTCOMES: dict[str, bool] = {
    "stored, by aask": True,
    "stored, by resume": True,
    "refused: cancelled by its caller": True,
    "refused: not in the journal (killed before its open entry was durable)": True,
    "refused: not in the journal, yet parts ran": False,
    "refused: closed, with no stored response": False,
    "resumed, but its response is not in the store": False,
    "never resumed nor refused": False,
}


def outcomes(ev: Evidence) -> Counter[str]:
    """How each started request ended (see OUTCOMES; other refusals and errors fail)."""
    classes = Counter[str]({name: 0 for name in OUTCOMES})
    resumed = {rid for rep in ev.reports for rid, a in rep.get("resumes", {}).items() if a["ok"]}
    resumed |= {rid for rep in ev.reports for rid, a in rep.get("probes", {}).items() if a["ok"]}
    for rid in ev.started:
        if rid in ev.records:
            classes["stored, by resume" if rid in resumed else "stored, by aask"] += 1
        else:
            classes[_classify(ev, rid)[0]] += 1
    return classes


def lost_row(ev: Evidence, classes: Counter[str]) -> Row:
    """Every started request has one stored response or an accepted refusal."""
    lost = sum(n for name, n in classes.items() if not OUTCOMES.get(name, False))
    seen = Counter({name: n for name, n in classes.items() if n})
    detail = f"{len(ev.started)} started; " + _counts(seen)
    return Row("lost stored responses", lost, detail, lost == 0)


def outcome_table(classes: Counter[str]) -> str:
    """Every outcome class, with its count, in Markdown."""
    lines = ["| outcome of a started request | requests | accepted |", "|---|---:|---|"]
    for name, n in classes.items():
        lines.append(f"| {name} | {n} | {'yes' if OUTCOMES.get(name, False) else 'no'} |")
    return "\n".join(lines)


def duplicate_row(ev: Evidence) -> Row:
    """At most one stored record and one decision entry per request id."""
    records = sum(1 for v in ev.records.values() if len(v) > 1)
    decisions = sum(1 for n in ev.decisions.values() if n > 1)
    stored = sum(len(v) for v in ev.records.values())
    detail = (
        f"{stored} records for {len(ev.records)} ids; ids with >1 record: {records}, "
        f"with >1 audit decision entry: {decisions}"
    )
    return Row(
        "duplicated stored responses", records + decisions, detail, not (records or decisions)
    )


def rerun_rows(ev: Evidence) -> tuple[Row, Row]:
    """Settled steps never run again; non-idempotent parts never run twice."""
    started_in = {rid: int(rid[1:4]) for rid in ev.started}
    bad = Counter[str]()
    again = Counter[str]()
    first = 0
    twice = Counter[str]()
    for (rid, part), calls in ev.calls.items():
        for (round_no, role), n in Counter(calls).items():
            if n > 1:
                bad["called twice by one process"] += n - 1
            if role == ROLE_RUN and round_no != started_in.get(rid):
                bad["asked in a round it did not start in"] += n
        for i, (round_no, role) in enumerate(calls):
            if role == ROLE_RUN:
                continue
            seen = ev.inspections.get(round_no, {}).get(rid)
            if seen is None:
                bad["called for a request not listed as unfinished"] += 1
            elif part in seen["settled"]:
                bad["settled before the kill, called again"] += 1
            elif i == 0:
                first += 1
            elif part in seen["during"]:
                again["interrupted during execution"] += 1
            else:
                again["interrupted before start (its started entry was not durable)"] += 1
        if part not in ev.idempotent and len(calls) > 1:
            twice[part] += len(calls) - 1
    count = sum(bad.values())
    detail = (
        f"failing: {_counts(bad)}; calls on resume: {first} first calls, "
        f"{sum(again.values())} re-runs of unsettled steps ({_counts(again)})"
    )
    rerun = Row("settled steps re-run", count, detail, count == 0)
    n = sum(twice.values())
    parts = ", ".join(sorted(p for p in build_catalog_names() if p not in ev.idempotent))
    detail = f"not idempotent: {parts}; extra calls: {_counts(twice)}"
    return rerun, Row("non-idempotent parts called more than once", n, detail, n == 0)


def build_catalog_names() -> list[str]:
    """Every part's name."""
    return [p.name for p in build_catalog().parts]


def cancelled_row(ev: Evidence) -> Row:
    """A cancelled request is never resumed, leaves journal_status and is refused as cancelled."""
    why = Counter[str]()
    bad = 0
    for rid in ev.cancelled:
        wrong = []
        if any(rid in rep.get("recovered", []) for rep in ev.reports):
            wrong.append("claimed by recover()")
        elif any(a["ok"] for a in ev.attempts(rid)):
            wrong.append("resumed")
        if any(
            ev.dead(rep, rid) and rid in {r["id"] for r in rep["inspected"]} for rep in ev.reports
        ):
            wrong.append("listed by journal_status() after its caller cancelled it")
        tries = list(ev.attempts(rid))
        if rid not in ev.records and tries and not CANCELLED.search(tries[-1].get("message", "")):
            wrong.append("refused without saying it was cancelled")
        why.update(wrong)
        bad += bool(wrong)
    stored = sum(1 for rid in ev.cancelled if rid in ev.records)
    detail = f"{len(ev.cancelled)} cancelled ({stored} with a stored response); {_counts(why)}"
    return Row("cancelled requests resumed or left open", bad, detail, bad == 0)


def answers_row(ev: Evidence) -> Row:
    """Stored answers equal the uninterrupted run's, or abstain where a kill cut a step."""
    kinds = Counter[str]()
    resumed = {rid for rep in ev.reports for rid in rep.get("resumes", {})}
    for rid, records in ev.records.items():
        record, want = records[0], ev.reference.get(rid)
        if want is None:
            kinds["stored, never started (unknown id)"] += 1
            continue
        how = "recovered" if rid in resumed else "uninterrupted"
        if record["hash"] == want["hash"]:
            kinds[f"equal hash ({how})"] += 1
            continue
        cut = {
            part
            for seen in ev.inspections.values()
            if rid in seen
            for part in seen[rid]["during"]
            if part not in ev.idempotent
        }
        ok = bool(cut)
        for question, answer in want["answers"].items():
            got = record["answers"][question]
            if ev.needs[question] & cut:
                ok = ok and got["status"] == "abstained" and got["guard"] == "interrupted"
            else:
                ok = ok and got == answer
        kinds["abstained where a non-idempotent step was cut" if ok else f"DIFFER ({how})"] += 1
    count = sum(n for k, n in kinds.items() if k.startswith(("DIFFER", "stored, never")))
    return Row("answers differ from an uninterrupted run", count, _counts(kinds), count == 0)


def audit_row(ev: Evidence) -> Row:
    """The store's audit chain verifies."""
    report = ev.audit
    return Row("audit chain broken", 0 if report.ok else 1, str(report), bool(report.ok))


def judge(ev: Evidence, classes: Counter[str]) -> list[Row]:
    """Every property's row."""
    rerun, twice = rerun_rows(ev)
    return [
        stuck_row(ev),
        ghost_row(ev),
        lost_row(ev, classes),
        duplicate_row(ev),
        rerun,
        twice,
        cancelled_row(ev),
        answers_row(ev),
        audit_row(ev),
    ]


def markdown(rows: Iterable[Row]) -> str:
    """The verdict table in Markdown."""
    lines = ["| property | count | detail | verdict |", "|---|---:|---|---|"]
    for r in rows:
        detail = r.detail.replace("|", "\\|")
        lines.append(f"| {r.prop} | {r.count} | {detail} | {r.verdict} |")
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _rounds(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n]


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The parent's options, and the child's (hidden)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 kills, short rounds (CI)")
    parser.add_argument("--kills", type=int, default=None, help="SIGKILLs (default 50, quick 5)")
    parser.add_argument("--seed", type=int, default=None, help="for the kill delays")
    parser.add_argument("--inflight", type=_range, default=(16, 32), help="per round, e.g. 16-32")
    parser.add_argument("--cancel", type=float, default=0.05, help="share of requests cancelled")
    parser.add_argument(
        "--max-delay", type=float, default=None, help="seconds (default 1, quick 0.4)"
    )
    parser.add_argument("--postgres", default="", metavar="DSN", help="journal and store here")
    parser.add_argument(
        "--overlap",
        action="store_true",
        help="start each round before killing the one before: two live processes at once",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--child", choices=("round", "final", "inspect"), help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--work", default="", help=argparse.SUPPRESS)
    parser.add_argument("--journal", default="", help=argparse.SUPPRESS)
    parser.add_argument("--store", default="", help=argparse.SUPPRESS)
    parser.add_argument("--inflight-now", type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument("--probe", type=_rounds, default=[], help=argparse.SUPPRESS)
    parser.add_argument("--live", type=_rounds, default=[], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the rounds, judge, print the table; 1 when any row fails."""
    args = parse(argv)
    if args.child:
        args.role = args.child
        args.inflight = args.inflight_now
        child(args)
        return 0
    kills = args.kills if args.kills is not None else (5 if args.quick else 50)
    max_delay = args.max_delay if args.max_delay is not None else (0.4 if args.quick else 1.0)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    args.seed = seed
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="solvi-chaos-"))
    where = _where(args, work)
    t0 = time.perf_counter()
    try:
        delays = [rng.uniform(0.02, max_delay) for _ in range(kills)]
        rounds = run_rounds(args, where, work, kills, delays)
        ev = gather(work, where)
    finally:
        where.drop()
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - t0
    classes = outcomes(ev)
    rows = judge(ev, classes)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    killed = sum(k.killed for k in rounds)
    recovered = sum(len(r.get("recovered", [])) for r in ev.reports)
    calls = sum(len(v) for v in ev.calls.values())
    overlap = ", each started before the one before was killed" if args.overlap else ""
    print(
        f"chaos benchmark: {backend} journal and store, {killed} SIGKILLs of {len(rounds)} "
        f"rounds{overlap} (delays up to {max_delay:g} s after RUNNING, seed {seed}), "
        f"{len(ev.started)} requests started, {recovered} recover() claims, {calls} part calls, "
        f"{elapsed:.1f} s\n"
    )
    print(markdown(rows))
    print()
    print(outcome_table(classes))
    failed = [r.prop for r in rows if not r.ok]
    print()
    if killed < len(rounds):
        print(f"note: {len(rounds) - killed} round(s) ended before their kill")
    if failed:
        print("FAIL: " + "; ".join(failed))
        return 1
    print("PASS: every property holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
