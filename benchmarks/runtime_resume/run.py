"""Crash-resume benchmark: kill a real process at an exact point, then inspect and resume.

Per scenario a child process asks one request of the bench flow (`flow.py`)
with a journal and signals READY once it holds the scenario's shape
(`scenarios.py`); it is killed with SIGKILL. Then, each in a fresh process: an
inspector reads `journal_status()` (claims nothing), a probe tries to resume
with a changed plan and catalog version (must be refused), and a resumer runs
`recover()` + `resume()` (two at once in the racing scenario). Each property
gets a verdict row; the answers are compared with a control run that was never
interrupted.

Every scenario runs on the SQLite journal, and on the PostgreSQL journal when
SOLVI_TEST_POSTGRES_DSN names a server (a fresh schema per scenario and per
control run; see `backends.py`). Each backend gets its own table.

Exit status: 1 on any VIOLATED, LOST-SILENT or GHOST-RUNNING row; otherwise 2
if a scenario printed ARM INVALID; else 0.

    python benchmarks/runtime_resume/run.py [--quick] [--repeat N] [--backend sqlite|postgres|both]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import flow
from backends import Backend, PostgresBackend, SQLiteBackend
from before import Before
from scenarios import SCENARIOS, Scenario, premise

HERE = Path(__file__).resolve().parent
PROC = HERE / "proc.py"
#: how long any process of a scenario may take before it counts as hung (a safety net)
PROCESS_LIMIT = 60.0

HOLDS = "holds"
VIOLATED = "VIOLATED"
EXACT = "reconstructed-exact"
EXPLICIT = "interrupted-explicit"
LOSSY = "reconstructed-lossy"
LOST = "LOST-SILENT"
GHOST = "GHOST-RUNNING"
NOT_MEASURED = "not-measured"
FAILING = (VIOLATED, LOST, GHOST)
DSN_VARIABLE = "SOLVI_TEST_POSTGRES_DSN"


@attrs.frozen
class Row:
    """One property of one scenario: the child's account at death, what came after, a verdict."""

    prop: str
    before: str
    after: str
    verdict: str


@attrs.frozen
class Outcome:
    """A scenario's rows on one backend, or why the arm is invalid."""

    scenario: Scenario
    backend: str
    rows: tuple[Row, ...] = ()
    invalid: str = ""
    #: what it took for the dead child's owner lock to go (PostgreSQL)
    settled_after_kill: str = ""


@attrs.frozen
class Evidence:
    """Everything the processes of one scenario reported."""

    before: Before
    inspected: dict[str, Any]
    changed: dict[str, Any]
    resumes: tuple[dict[str, Any], ...]
    control: dict[str, Any]
    child_calls: Counter[str]
    resume_calls: Counter[str]
    changed_calls: Counter[str]
    torn: str
    digest_before: str
    digest_after: str


# -- processes -------------------------------------------------------------------


def _command(role: str, journal: str, *extra: str) -> list[str]:
    return [sys.executable, str(PROC), role, "--journal", journal, *extra]


def _env(call_log: Path) -> dict[str, str]:
    return {**os.environ, "SOLVI_BENCH_CALL_LOG": str(call_log), "PYTHONUNBUFFERED": "1"}


def _result(stdout: str, what: str, stderr: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            data: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return data
    msg = f"{what} printed no result; its stderr:\n{stderr}"
    raise RuntimeError(msg)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=PROCESS_LIMIT)


def run_child(scenario: Scenario, journal: str, call_log: Path, errors: Path) -> Before:
    """Start the child, wait for READY (or its end), SIGKILL it, and read its account."""
    before = Before()
    signalled = threading.Event()
    with errors.open("w") as stderr:
        proc = subprocess.Popen(
            _command("child", journal, "--scenario", scenario.name),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=_env(call_log),
        )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            before.feed(line)
            if before.ready:
                signalled.set()
        signalled.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        signalled.wait(PROCESS_LIMIT)
        if before.ready:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=PROCESS_LIMIT)
        reader.join(PROCESS_LIMIT)
    finally:
        _stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    before.returncode = proc.returncode
    before.killed = proc.returncode == -signal.SIGKILL
    return before


def run_role(role: str, journal: str, call_log: Path, *extra: str) -> dict[str, Any]:
    """Run one inspecting, probing or control process to its end."""
    done = subprocess.run(
        _command(role, journal, *extra),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(call_log),
        timeout=PROCESS_LIMIT,
        check=False,
    )
    return _result(done.stdout, role, done.stderr)


def run_racing(journal: str, call_log: Path, probe_log: Path) -> tuple[dict[str, Any], ...]:
    """Two resumers, both armed before either is told to go (the first probes first)."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for probe in (("--probe", str(probe_log)), ()):
            procs.append(
                subprocess.Popen(
                    _command("resume", journal, "--wait-go", *probe),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=_env(call_log),
                )
            )
        for p in procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ARMED":
                msg = "a racing resumer died before it was armed"
                raise RuntimeError(msg)
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=PROCESS_LIMIT)
            results.append(_result(out, "racing resumer", err))
        return tuple(results)
    finally:
        for p in procs:
            _stop(p)


def run_claimed(journal: str, call_log: Path, probe_log: Path) -> dict[str, Any]:
    """A resumer that pauses after its claim while an inspector reads; then it resumes."""
    proc = subprocess.Popen(
        _command("resume", journal, "--pause-after-claim", "--probe", str(probe_log)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(call_log),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        if proc.stdout.readline().strip() != "CLAIMED":
            msg = "the claiming resumer died before its claim"
            raise RuntimeError(msg)
        inspected = run_role("inspect", journal, call_log.with_name("inspect-claimed.log"))
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=PROCESS_LIMIT)
        result = _result(out, "claiming resumer", err)
        result["inspected_while_claimed"] = inspected
        return result
    finally:
        _stop(proc)


def calls(path: Path) -> Counter[str]:
    """Part calls recorded in a side-effect log."""
    return Counter(path.read_text().split()) if path.exists() else Counter()


# -- one scenario -------------------------------------------------------------------


def run_scenario(
    scenario: Scenario, backend: Backend, root: Path, controls: dict[int, dict[str, Any]]
) -> Outcome:
    """Kill, inspect, probe, resume; then judge every property."""
    work = Path(tempfile.mkdtemp(prefix=f"{backend.name}-{scenario.name}-", dir=root))
    journal = backend.fresh(work)
    errors = work / "child.err"
    before = run_child(scenario, backend.child_spec(journal), work / "child.log", errors)
    invalid = premise(scenario, before, before.plan)
    if invalid:
        tail = errors.read_text().strip().splitlines()[-1:]
        why = invalid + (f" (child stderr: {tail[0]})" if tail else "")
        return Outcome(scenario, backend.name, invalid=why)
    settled_after_kill = backend.settle(journal)
    torn = backend.tear_last(journal) if scenario.tear_last else ""
    digest_before = backend.digest(journal)
    inspected = run_role("inspect", journal, work / "inspect.log")
    digest_after = backend.digest(journal)
    if scenario.racing:
        resumes = run_racing(journal, work / "resume.log", work / "changed.log")
    elif scenario.inspect_claimed:
        resumes = (run_claimed(journal, work / "resume.log", work / "changed.log"),)
    else:
        resumes = (
            run_role("resume", journal, work / "resume.log", "--probe", str(work / "changed.log")),
        )
    changed = next(r["changed"] for r in resumes if "changed" in r)
    evidence = Evidence(
        before=before,
        inspected=inspected,
        changed=changed,
        resumes=resumes,
        control=controls[scenario.workers],
        child_calls=calls(work / "child.log"),
        resume_calls=calls(work / "resume.log"),
        changed_calls=calls(work / "changed.log") + calls(work / "inspect.log"),
        torn=torn,
        digest_before=digest_before,
        digest_after=digest_after,
    )
    rows = tuple(judge(scenario, evidence))
    return Outcome(scenario, backend.name, rows=rows, settled_after_kill=settled_after_kill)


# -- verdicts ---------------------------------------------------------------------


def _names(parts: Iterable[str]) -> str:
    listed = sorted(parts)
    return ", ".join(listed) if listed else "none"


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def judge(scenario: Scenario, ev: Evidence) -> list[Row]:
    """Every property's row for one scenario."""
    rows = [_opened(ev), _ghost(ev), _settled(ev), _kind(ev), _in_flight(ev), _rerun(ev)]
    rows += [_notes(ev), _answers(ev), _closed(ev), _changed(ev), _read_only(ev)]
    if scenario.racing:
        rows.append(_race(ev))
    return rows


def _opened(ev: Evidence) -> Row:
    committed = ev.before.open_committed
    present = bool(ev.inspected.get("exists"))
    before = "open entry committed" if committed else "open entry not committed (ask not acked)"
    after = "request in the journal" if present else "no such request"
    if committed and not present:
        verdict = LOST
    elif present and not committed:
        verdict = VIOLATED  # the journal holds a request the process never saw accepted
    else:
        verdict = HOLDS
    return Row("request journaled", before, after, verdict)


def _ghost(ev: Evidence) -> Row:
    running = ev.before.running()
    shown = list(ev.inspected.get("running", []))
    for r in ev.resumes:
        # A racing loser reads while the winner may really be re-running a step, so
        # its view is reported in the race row, not judged here.
        if r["resumed"]:
            shown += r.get("running_after", [])
        claimed = r.get("inspected_while_claimed")
        if claimed is not None:
            shown += [f"{p} (while claimed)" for p in claimed.get("running", [])]
    steps = ev.inspected.get("steps", {})
    shown += [p for p, state in steps.items() if state == "running"]
    alive = ev.inspected.get("owner_alive")
    after = f"owner alive: {alive}; shown running: {_names(shown)}"
    verdict = GHOST if shown or alive else HOLDS
    return Row(
        "no step running without owner", f"running at death: {_names(running)}", after, verdict
    )


def _settled(ev: Evidence) -> Row:
    before = ev.before.settled
    after: dict[str, Any] = ev.inspected.get("settled", {})
    torn = int(ev.inspected.get("skipped_torn", 0))
    described = f"{len(before)} settled"
    if not ev.inspected.get("exists"):
        return Row("settled steps kept exactly", described, "no request", NOT_MEASURED)
    wrong = []
    for part, s in before.items():
        got = after.get(part)
        if got is None:
            continue
        if s.outcome == "ok":
            same = _canon(got["value"]) == _canon(s.value) == _canon(s.returned)
        else:
            same = got["outcome"] == s.outcome and got["message"] == s.message == s.returned
        if not same:
            wrong.append(part)
    missing = sorted(set(before) - set(after))
    extra = sorted(set(after) - set(before))
    text = f"{len(after)} kept, {len(wrong)} differ, {len(missing)} missing, {torn} torn skipped"
    if missing:
        text += f" ({_names(missing)})"
    if wrong or extra:
        verdict = VIOLATED
    elif missing:
        verdict = LOSSY if torn >= len(missing) else LOST
    elif not before:
        verdict = NOT_MEASURED
    else:
        verdict = EXACT
    return Row("settled steps kept exactly", described, text, verdict)


def _expected_kinds(ev: Evidence) -> dict[str, str]:
    want = {p: "during" for p in ev.before.running()}
    want.update({p: "before" for p in ev.before.not_started()})
    if ev.torn:
        want[ev.torn] = "during"  # its started entry stands; the settled one is gone
    return want


def _kind(ev: Evidence) -> Row:
    status = ev.inspected.get("status")
    want = _expected_kinds(ev)
    before = f"during: {_names(p for p, k in want.items() if k == 'during')}; "
    before += f"before start: {len(ev.before.not_started())}"
    if status is None:
        return Row("interruption kind as at death", before, "no unfinished request", NOT_MEASURED)
    got = {p: "during" for p in status["during"]} | {p: "before" for p in status["before"]}
    after = f"during: {_names(status['during'])}; before start: {len(status['before'])}"
    if got != want:
        verdict = VIOLATED
    elif not got:
        verdict = NOT_MEASURED
    else:
        verdict = HOLDS
    return Row("interruption kind as at death", before, after, verdict)


def _in_flight(ev: Evidence) -> Row:
    running = sorted(ev.before.running())
    if not running:
        return Row("in-flight executions counted", "none in flight", "-", NOT_MEASURED)
    idempotent = flow.idempotent_parts()
    counts = []
    verdict = HOLDS
    for part in running:
        cut, again = ev.child_calls[part], ev.resume_calls[part]
        counts.append(f"{part} {cut}+{again}={cut + again}")
        if cut < 1 or again > (1 if part in idempotent else 0):
            verdict = VIOLATED
    before = f"running: {_names(running)} (idempotent: {_names(set(running) & idempotent)})"
    return Row("in-flight executions counted", before, "cut+re-run: " + ", ".join(counts), verdict)


def _rerun(ev: Evidence) -> Row:
    if not any(r["resumed"] for r in ev.resumes):
        return Row("settled parts re-executed", "-", "no resume ran", NOT_MEASURED)
    settled = set(ev.inspected.get("settled", {}))
    again = sorted(p for p in settled if ev.resume_calls[p])
    text = f"{sum(ev.resume_calls[p] for p in settled)} re-executed"
    if again:
        text += f" ({_names(again)})"
    if ev.torn:
        text += f"; torn {ev.torn} re-run {ev.resume_calls[ev.torn]}x"
    verdict = VIOLATED if again else HOLDS
    return Row("settled parts re-executed", f"{len(settled)} settled in journal", text, verdict)


def _winner(ev: Evidence) -> dict[str, Any] | None:
    won = [r for r in ev.resumes if r["resumed"]]
    return won[0] if len(won) == 1 else None


def _notes(ev: Evidence) -> Row:
    status = ev.inspected.get("status")
    winner = _winner(ev)
    if status is None or winner is None:
        return Row("one note per interrupted step", "-", "no resume ran", NOT_MEASURED)
    interrupted = set(status["during"]) | set(status["before"])
    notes: list[str] = winner["notes"]
    bad = []
    for part in interrupted:
        mine = [n for n in notes if n.startswith(f"{part} was interrupted")]
        if len(mine) != 1:
            bad.append(part)
            continue
        claims_run = "; re-run" in mine[0] or "; run on resume" in mine[0]
        if claims_run != bool(ev.resume_calls[part]):
            bad.append(part)
    strays = len(notes) - len(interrupted)
    after = f"{len(notes)} notes, {len(bad)} wrong or missing"
    if bad:
        after += f" ({_names(bad)})"
    verdict = VIOLATED if bad or strays else HOLDS
    if not interrupted and not notes:
        verdict = NOT_MEASURED
    return Row("one note per interrupted step", f"{len(interrupted)} interrupted", after, verdict)


def _answers(ev: Evidence) -> Row:
    status = ev.inspected.get("status")
    winner = _winner(ev)
    control = ev.control
    if status is None or winner is None:
        return Row("answers and hash vs control", "-", "no resume ran", NOT_MEASURED)
    cut = set(status["during"]) - flow.idempotent_parts()
    needs = flow.needs()
    answers = winner["answers"]
    if not cut:
        same = winner["hash"] == control["hash"] and answers == control["answers"]
        after = "hash and answers equal" if same else "differ from the control"
        return Row(
            "answers and hash vs control",
            "no non-idempotent cut",
            after,
            EXACT if same else VIOLATED,
        )
    ok = True
    shown = []
    for question, want in control["answers"].items():
        got = answers[question]
        if needs[question] & cut:
            good = got["status"] == "abstained" and got["guard"] == "interrupted"
            shown.append(f"{question}: {got['status']}/{got['guard']}")
        else:
            good = got == want
            shown.append(f"{question}: {'= control' if good else 'differs'}")
        ok = ok and good
    before = f"non-idempotent cut: {_names(cut)}"
    return Row(
        "answers and hash vs control", before, "; ".join(shown), EXPLICIT if ok else VIOLATED
    )


def _closed(ev: Evidence) -> Row:
    winner = _winner(ev)
    if winner is None:
        if not ev.inspected.get("exists") and not any(r["resumed"] for r in ev.resumes):
            return Row("closed after resume", "-", "nothing to resume", NOT_MEASURED)
        return Row("closed after resume", "-", "no single resume won", VIOLATED)
    left = winner["unfinished_after"]
    closed = winner["closed_after"] is True
    after = f"closed: {closed}; unfinished: {_names(left)}"
    return Row(
        "closed after resume", "resumed once", after, HOLDS if closed and not left else VIOLATED
    )


def _changed(ev: Evidence) -> Row:
    if not ev.inspected.get("exists"):
        return Row("changed plan refused", "-", "no request to resume", NOT_MEASURED)
    plan, version = ev.changed["plan"], ev.changed["version"]
    ran = sum(ev.changed_calls.values())
    after = f"plan: {'refused' if plan['refused'] else 'ACCEPTED'}; "
    after += f"version: {'refused' if version['refused'] else 'ACCEPTED'}; parts run: {ran}"
    if plan["left_claimed"]:
        after += "; refusal left it claimed"
    verdict = HOLDS if plan["refused"] and version["refused"] and not ran else VIOLATED
    return Row("changed plan refused", "questions and catalog changed", after, verdict)


def _read_only(ev: Evidence) -> Row:
    same = ev.digest_before == ev.digest_after
    after = "journal rows unchanged" if same else "journal rows CHANGED"
    return Row(
        "inspection wrote nothing",
        "journal_status() in a fresh process",
        after,
        HOLDS if same else VIOLATED,
    )


def _race(ev: Evidence) -> Row:
    won = sum(1 for r in ev.resumes if r["resumed"])
    others = [
        "refused" if "refused" in r else f"recovered {len(r['recovered'])}, missing"
        for r in ev.resumes
        if not r["resumed"]
    ]
    seen = [p for r in ev.resumes if not r["resumed"] for p in r.get("running_after", [])]
    after = f"{won} won; loser: {', '.join(others) or '-'}; loser saw running: {_names(seen)}"
    calls_ok = all(n <= 1 for n in ev.resume_calls.values())
    verdict = HOLDS if won == 1 and calls_ok else VIOLATED
    return Row("exactly one resumer wins", "2 resumers, released together", after, verdict)


# -- the run ------------------------------------------------------------------------


def run_controls(backend: Backend, root: Path, workers: Iterable[int]) -> dict[int, dict[str, Any]]:
    """One uninterrupted run per worker count, each on a fresh journal of `backend`."""
    out = {}
    for n in sorted(set(workers)):
        work = Path(tempfile.mkdtemp(prefix=f"{backend.name}-control-{n}-", dir=root))
        journal = backend.fresh(work)
        out[n] = run_role("control", journal, work / "calls.log", "--workers", str(n))
    hashes = {c["hash"] for c in out.values()}
    if len(hashes) != 1:
        msg = f"uninterrupted runs on {backend.title} disagree across worker counts: {hashes}"
        raise RuntimeError(msg)
    return out


def print_table(backend: Backend, outcomes: list[Outcome]) -> None:
    """One backend's verdict table: one block per scenario run."""
    widths = (30, 46, 62)
    rule = "=" * 78
    print(f"\n{rule}\n{backend.title} journal ({backend.name}): crash-resume verdicts\n{rule}")
    for outcome in outcomes:
        s = outcome.scenario
        print(f"\n== {s.name}: {s.title} [{backend.title}]")
        if outcome.invalid:
            print(f"ARM INVALID: {outcome.invalid}")
            continue
        if outcome.settled_after_kill:
            print(f"after SIGKILL: {outcome.settled_after_kill}")
        head = ("property", "at death", "after (inspect, resume)", "verdict")
        print("  ".join(h.ljust(w) for h, w in zip(head, (*widths, 0), strict=True)).rstrip())
        for row in outcome.rows:
            cells = (row.prop, row.before, row.after)
            line = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
            print(f"{line}  {row.verdict}")


def choose_backends(choice: str | None) -> tuple[list[Backend], str]:
    """The backends to measure, and a line saying what is not measured and why."""
    dsn = os.environ.get(DSN_VARIABLE) or None
    if choice in ("postgres", "both") and dsn is None:
        msg = f"--backend {choice} needs {DSN_VARIABLE} set to a postgresql:// URL"
        raise SystemExit(msg)
    if choice is None:
        choice = "both" if dsn is not None else "sqlite"
    backends: list[Backend] = []
    if choice in ("sqlite", "both"):
        backends.append(SQLiteBackend())
    if choice in ("postgres", "both"):
        assert dsn is not None
        backends.append(PostgresBackend(dsn))
    skipped = ""
    if not any(b.name == "postgres" for b in backends):
        skipped = (
            f"PostgreSQL not measured: set {DSN_VARIABLE}"
            if dsn is None
            else "PostgreSQL not measured: --backend sqlite"
        )
    elif not any(b.name == "sqlite" for b in backends):
        skipped = "SQLite not measured: --backend postgres"
    return backends, skipped


def summarize(
    backend: Backend, outcomes: list[Outcome], chosen: list[Scenario], repeat: int
) -> None:
    """One backend's counts: runs, invalid arms, verdicts (per scenario when repeated)."""
    verdicts = Counter(r.verdict for o in outcomes for r in o.rows)
    invalid = sum(1 for o in outcomes if o.invalid)
    print(
        f"{backend.title}: {len(outcomes)} scenario runs ({repeat} per scenario), "
        f"{invalid} ARM INVALID"
    )
    print("  verdicts: " + ", ".join(f"{v}={n}" for v, n in sorted(verdicts.items())))
    if repeat > 1:
        for s in chosen:
            mine = [o for o in outcomes if o.scenario is s]
            seen = Counter(r.verdict for o in mine for r in o.rows)
            bad = sum(1 for o in mine if o.invalid)
            print(f"    {s.name}: {dict(sorted(seen.items()))} invalid={bad}")


def main(argv: list[str] | None = None) -> int:
    """Run every scenario (`--repeat` times) on each backend, print the tables and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every scenario once (CI)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per scenario without --quick")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--only", action="append", default=[], help="run only this scenario")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres", "both"),
        default=None,
        help=f"journal backend(s); default: both when {DSN_VARIABLE} is set, else sqlite",
    )
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    backends, skipped = choose_backends(args.backend)
    print("crash-resume benchmark on: " + ", ".join(f"{b.title} journal" for b in backends))
    if skipped:
        print(skipped)
    outcomes: dict[str, list[Outcome]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="solvi-resume-") as tmp:
            root = Path(tmp)
            controls = {
                b.name: run_controls(b, root, (s.workers for s in chosen)) for b in backends
            }
            runs = [(b, s) for s in chosen for _ in range(repeat) for b in backends]
            with ThreadPoolExecutor(max(1, args.jobs)) as pool:
                done = list(
                    pool.map(lambda r: run_scenario(r[1], r[0], root, controls[r[0].name]), runs)
                )
    finally:
        for b in backends:
            b.drop()
    for b in backends:
        outcomes[b.name] = [o for o in done if o.backend == b.name]
        print_table(b, outcomes[b.name] if repeat == 1 else outcomes[b.name][::repeat])
    print()
    for b in backends:
        summarize(b, outcomes[b.name], chosen, repeat)
    if skipped:
        print(skipped)
    every = [o for b in backends for o in outcomes[b.name]]
    verdicts = Counter(r.verdict for o in every for r in o.rows)
    failing = {v: verdicts[v] for v in FAILING if verdicts[v]}
    if failing:
        where = sorted({o.backend for o in every for r in o.rows if r.verdict in FAILING})
        print(f"FAIL: {failing} (on {', '.join(where)})")
        return 1
    if any(o.invalid for o in every):
        print("FAIL: some arms never reached their premise")
        return 2
    print(
        "OK: no VIOLATED, LOST-SILENT or GHOST-RUNNING row on "
        + ", ".join(b.title for b in backends)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
