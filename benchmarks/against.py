"""The issue's benchmark goals, measured side by side against an earlier commit of solvi.

The baseline (``--baseline REV``, default 9be2a68, the solvi from before the run core's
rebuild) is checked out with ``git worktree add --detach`` into a temporary directory
and installed into a temporary venv of the same Python (``uv venv``; the baseline's
own ``requirements.lock`` through ``uv pip sync``, offline from uv's cache when it
can; then the package itself with ``--no-deps``). The current side is this checkout,
run by the Python running this script (``--current .``, the default), or another
commit installed the same way (``--current REV``).

Each round runs every chosen benchmark once in each environment, alternating
(baseline, current, baseline, current, ...), each in a fresh process from a neutral
directory, so it imports the solvi of the venv it runs in. This checkout's scripts
run in both environments, with ``--json``: a baseline's own copies run only when they
have that interface too; a script that a side cannot start (an earlier solvi that
lacks what it imports) is left out, saying why. Every figure below is a ratio within
one run, so the machine's speed cancels out; the tables give its median over the rounds, the range,
current/baseline, the goal and a verdict, and say whether the current side is worse
than the baseline beyond noise (ranges apart and more than 5% worse).

    .venv/bin/python benchmarks/against.py --quick          # 1 round of the --quick runs, ~1 min
    .venv/bin/python benchmarks/against.py                  # 3 rounds of the full runs, ~20 min
    .venv/bin/python benchmarks/against.py --current HEAD --rounds 5 --save runs.json
    .venv/bin/python benchmarks/against.py --load runs.json  # the tables again, no timing
    .venv/bin/python benchmarks/against.py --baseline HEAD --baseline-with anyio==4.13.0 \
        --only async

``--baseline-with NAME==VERSION`` (repeatable) installs that exact version into the
baseline's venv after its lock: with ``--baseline HEAD`` both sides run the same solvi,
and the tables show what the dependency's version alone changes.

``SOLVI_TEST_POSTGRES_DSN`` is passed on: with it, ``journal_overhead.py`` measures
the PostgreSQL journal too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BENCHMARKS = {
    "overhead": "overhead.py",
    "async": "async_latency.py",
    "journal": "journal_overhead.py",
    "blocking": "blocking_calls.py",
}
#: worse than the baseline "beyond noise": the ranges over rounds are apart and the
#: medians differ by more than this share of the baseline's
NOISE = 0.05
JOURNALS = ("NORMAL", "FULL", "PostgreSQL")


@dataclass(frozen=True)
class Env:
    """One side of the comparison: a Python with a solvi installed, and the scripts it runs."""

    side: str
    rev: str
    commit: str
    python: str
    scripts: Path
    #: exact versions installed over the lock (``--baseline-with``)
    pins: tuple[str, ...] = ()


#: what ``--baseline-with`` takes: a distribution name and an exact version, nothing that
#: could name a file or an address to install from
PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*")


def pin(text: str) -> str:
    """An argparse type: ``NAME==VERSION``, or an error saying what is wanted."""
    if PIN.fullmatch(text) is None:
        msg = f"{text!r} is not NAME==VERSION (an exact version, such as anyio==4.13.0)"
        raise argparse.ArgumentTypeError(msg)
    return text


@dataclass(frozen=True)
class Goal:
    """One goal of the issue: a figure per item (DAG or journal mode), and its bound."""

    title: str
    figure: str
    bound: float
    #: True when a larger figure is better (the bound is a minimum)
    higher: bool
    unit: str
    #: (benchmark name, its JSON) -> {item: figure}
    compute: Callable[[str, dict[str, Any]], dict[str, float]]
    benchmark: str
    note: str = ""

    def meets(self, value: float) -> bool:
        """Whether `value` is within the bound."""
        return value >= self.bound if self.higher else value <= self.bound

    def show(self, value: float) -> str:
        """The figure as printed: a ratio, or a percentage over 1."""
        if self.unit == "%":
            return f"{(value - 1) * 100:+.1f}%"
        return f"{value:.3f}{self.unit}"


def _overhead_ratio(_: str, data: dict[str, Any]) -> dict[str, float]:
    out = {}
    for dag in data["dags"]:
        ns, steps = dag["ns"], dag["steps"]
        loop = (ns["loop"] - ns["direct"]) / steps
        out[dag["dag"]] = (ns["solvi"] - ns["direct"]) / steps / loop
    return out


def _lattice(_: str, data: dict[str, Any]) -> dict[str, float]:
    median = data["latency"]["median_ms"]
    return {data["latency"]["dag"]: median["aask"] / median["gather"]}


def _throughput(_: str, data: dict[str, Any]) -> dict[str, float]:
    t = data["throughput"]
    # throughput is requests / wall seconds; the counts are equal, so a ratio of walls
    return {f"{t['requests']} at once": t["gather_concurrent"][0] / t["concurrent"][0]}


def _blocking(_: str, data: dict[str, Any]) -> dict[str, float]:
    c = data["concurrent"]
    # as for _throughput: equal counts, so aask's req/s over the hand-written's is a ratio of walls
    return {f"{c['requests']} at once": c["median_ms"]["hand"] / c["median_ms"]["aask"]}


Figures = Callable[[str, dict[str, Any]], dict[str, float]]


def _journal(key: str, *, inverse: bool = False) -> Figures:
    def compute(_: str, data: dict[str, Any]) -> dict[str, float]:
        modes = data["modes"]
        off = modes["off"][key]
        return {
            m: (off / modes[m][key] if inverse else modes[m][key] / off)
            for m in JOURNALS
            if m in modes
        }

    return compute


GOALS = (
    Goal(
        "ask: overhead per step / a bare generic loop's (overhead.py)",
        "solvi ovh/step / loop ovh/step",
        1.3,
        higher=False,
        unit="x",
        compute=_overhead_ratio,
        benchmark="overhead",
        note="overhead per step = (µs per request - direct calls' µs) / steps",
    ),
    Goal(
        "aask on the I/O lattice: median latency / gather per layer (async_latency.py)",
        "aask median / gather median",
        1.0,
        higher=False,
        unit="x",
        compute=_lattice,
        benchmark="async",
    ),
    Goal(
        "1,000 concurrent aask: throughput / a hand-written concurrent gather (async_latency.py)",
        "aask req/s / gather req/s",
        0.9,
        higher=True,
        unit="x",
        compute=_throughput,
        benchmark="async",
        note="both all at once in one task group, collector on, in the same run",
    ),
    Goal(
        "journal on 2 ms steps: p50 added (journal_overhead.py)",
        "p50 / p50 without journal",
        1.10,
        higher=False,
        unit="%",
        compute=_journal("p50_ms"),
        benchmark="journal",
        note="NORMAL is the default journal; FULL adds an fsync per commit",
    ),
    Goal(
        "journal on 2 ms steps: p99 added (journal_overhead.py)",
        "p99 / p99 without journal",
        1.25,
        higher=False,
        unit="%",
        compute=_journal("p99_ms"),
        benchmark="journal",
    ),
    Goal(
        "journal, 32 requests in flight: throughput kept (journal_overhead.py)",
        "req/s / req/s without journal",
        0.80,
        higher=True,
        unit="x",
        compute=_journal("burst_median_ms", inverse=True),
        benchmark="journal",
    ),
    Goal(
        "blocking=True parts in threads, requests at once: aask throughput / hand-written "
        "to_thread calls (blocking_calls.py)",
        "aask req/s / to_thread req/s",
        0.8,
        higher=True,
        unit="x",
        compute=_blocking,
        benchmark="blocking",
        note="System(threads=16) against one CapacityLimiter(16), fetch sleeping 1 ms; "
        "the bound is informational",
    ),
)


# -- the environments ----------------------------------------------------------


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    if done.returncode != 0:
        msg = f"git {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}"
        raise RuntimeError(msg)
    return done.stdout.strip()


def _uv_command() -> list[str]:
    """uv on PATH, else ``python -m uv`` of this Python, else of ``python3``."""
    found = shutil.which("uv")
    if found is not None:
        return [found]
    for python in (sys.executable, shutil.which("python3")):
        if (
            python
            and subprocess.run([python, "-m", "uv", "--version"], capture_output=True).returncode
            == 0
        ):
            return [python, "-m", "uv"]
    msg = "uv not found: install it (pip install uv) or put it on PATH"
    raise RuntimeError(msg)


def _uv(*args: str) -> None:
    done = subprocess.run([*_uv_command(), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        msg = f"{' '.join(done.args)} exited {done.returncode}: {done.stderr.strip()[-2000:]}"
        raise RuntimeError(msg)


def _install(
    side: str, rev: str, root: Path, worktrees: list[Path], pins: Sequence[str] = ()
) -> Env:
    """Check `rev` out under `root` and install it, with its own lock and then `pins`, into
    a venv there."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    src, venv = root / f"{side}-src", root / f"{side}-venv"
    _git("worktree", "add", "--detach", str(src), commit)
    worktrees.append(src)
    _uv("venv", "--quiet", "--python", sys.executable, str(venv))
    python = str(venv / "bin" / "python")
    lock = str(src / "requirements.lock")
    try:
        _uv("pip", "sync", "--quiet", "--offline", "--python", python, lock)
    except RuntimeError:  # not all in uv's cache: from the registry
        _uv("pip", "sync", "--quiet", "--python", python, lock)

    if pins:
        try:
            _uv("pip", "install", "--quiet", "--offline", "--python", python, *pins)
        except RuntimeError:
            _uv("pip", "install", "--quiet", "--python", python, *pins)
    _uv("pip", "install", "--quiet", "--offline", "--no-deps", "--python", python, str(src))
    return Env(side, rev, commit, python, src / "benchmarks", tuple(pins))


def _this_checkout() -> Env:
    dirty = _git("status", "--porcelain", "--", "solvi")
    commit = _git("rev-parse", "HEAD") + (" + uncommitted changes to solvi/" if dirty else "")
    return Env("current", ".", commit, sys.executable, HERE)


@contextmanager
def environments(
    baseline: str, current: str, pins: Sequence[str] = ()
) -> Iterator[tuple[Env, Env]]:
    """The two sides, installed for the duration; worktrees and venvs removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="solvi-against-"))
    worktrees: list[Path] = []
    try:
        base = _install("baseline", baseline, root, worktrees, pins)
        cur = _this_checkout() if current == "." else _install("current", current, root, worktrees)
        yield base, cur
    finally:
        for path in worktrees:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                check=False,
                capture_output=True,
            )
        shutil.rmtree(root, ignore_errors=True)


def script_for(env: Env, name: str) -> Path:
    """The env's own copy of a benchmark if it has the --json interface, else this checkout's."""
    own = env.scripts / BENCHMARKS[name]
    if own.is_file() and '"--json"' in own.read_text(encoding="utf-8"):
        return own
    return HERE / BENCHMARKS[name]


def run_one(env: Env, name: str, *, quick: bool, cwd: Path) -> dict[str, Any]:
    """One run of one benchmark in `env`, in a fresh process; its JSON."""
    script = script_for(env, name)
    command = [env.python, str(script), "--json", *(["--quick"] if quick else [])]
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        command,
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300 if quick else 900,
        check=False,
    )
    if done.returncode != 0:
        msg = f"{env.side}: {' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}"
        raise RuntimeError(msg)
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    venv = Path(env.python).parents[1]
    if env.rev != "." and not Path(data["solvi"]).is_relative_to(venv):
        msg = f"{env.side}: {script.name} imported {data['solvi']}, not the solvi in {venv}"
        raise RuntimeError(msg)
    data["script"] = str(script)
    return data


def cannot_run(envs: Sequence[Env], names: Sequence[str], cwd: Path) -> dict[str, str]:
    """The benchmarks that some side cannot even start (this checkout's script on an
    earlier solvi that lacks what it imports), each with why: `--help` is run first."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    reasons: dict[str, str] = {}
    for name in names:
        for env in envs:
            script = script_for(env, name)
            done = subprocess.run(
                [env.python, str(script), "--help"],
                cwd=cwd,
                env=environ,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if done.returncode != 0:
                lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
                where = "this checkout's" if script.parent == HERE else "its own"
                reasons[name] = (
                    f"{env.side} {env.rev} cannot start {where} {script.name}: {lines[-1]}"
                )
                break
    return reasons


def measure(
    envs: Sequence[Env], names: Sequence[str], *, rounds: int, quick: bool
) -> dict[str, Any]:
    """Every benchmark once per round in each env, alternating; the JSONs and the load
    (a benchmark that a side cannot start is left out, saying why)."""
    load: list[float] = [os.getloadavg()[0]]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="solvi-against-run-") as cwd:
        skipped = cannot_run(envs, names, Path(cwd))
        for name, why in skipped.items():
            print(f"  {name}: not measured: {why}", file=sys.stderr, flush=True)
        names = [n for n in names if n not in skipped]
        runs: dict[str, dict[str, list[Any]]] = {e.side: {n: [] for n in names} for e in envs}
        for r in range(rounds):
            for name in names:
                for env in envs:
                    t0 = time.perf_counter()
                    runs[env.side][name].append(run_one(env, name, quick=quick, cwd=Path(cwd)))
                    load.append(os.getloadavg()[0])
                    print(
                        f"  round {r + 1}/{rounds} {name:<8} {env.side:<8} "
                        f"{time.perf_counter() - t0:5.1f} s, load {load[-1]:.2f}",
                        file=sys.stderr,
                        flush=True,
                    )
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "quick": quick,
        "rounds": rounds,
        "seconds": time.perf_counter() - started,
        "cpus": os.cpu_count(),
        "load": load,
        "envs": {
            e.side: {"rev": e.rev, "commit": e.commit, "python": e.python, "pins": list(e.pins)}
            for e in envs
        },
        "scripts": {e.side: {n: runs[e.side][n][0]["script"] for n in names} for e in envs},
        "runs": runs,
        "skipped": skipped,
    }


# -- the tables ----------------------------------------------------------------


def _spread(goal: Goal, values: Sequence[float]) -> str:
    if len(values) == 1:
        return goal.show(values[0])
    lo, hi = min(values), max(values)
    return f"{goal.show(statistics.median(values))} [{goal.show(lo)}..{goal.show(hi)}]"


def versus(goal: Goal, base: Sequence[float], cur: Sequence[float]) -> str:
    """'better', 'same' (within noise) or 'WORSE' (ranges apart, medians > NOISE apart)."""
    b, c = statistics.median(base), statistics.median(cur)
    worse_by = (b - c) / b if goal.higher else (c - b) / b
    apart = min(cur) > max(base) if not goal.higher else max(cur) < min(base)
    better_apart = max(cur) < min(base) if not goal.higher else min(cur) > max(base)
    if worse_by > NOISE and apart:
        return "WORSE"
    if -worse_by > NOISE and better_apart:
        return "better"
    return "same"


def goal_table(goal: Goal, record: dict[str, Any]) -> str:
    """One goal: per item, both sides' figure (median [range]), the ratio, goal and verdict."""
    figures: dict[str, dict[str, list[float]]] = {}
    for side in ("baseline", "current"):
        for data in record["runs"][side].get(goal.benchmark, []):
            for item, value in goal.compute(goal.benchmark, data).items():
                figures.setdefault(item, {"baseline": [], "current": []})[side].append(value)
    bound = f"{'>=' if goal.higher else '<='} {goal.show(goal.bound)}"
    header = ["", "baseline", "current", "current/baseline", "goal", "verdict", "vs before"]
    rows = []
    for item, by in figures.items():
        base, cur = by["baseline"], by["current"]
        if not base or not cur:
            continue
        ratio = statistics.median(cur) / statistics.median(base)
        verdict = "meets" if goal.meets(statistics.median(cur)) else "MISSES"
        was = "meets" if goal.meets(statistics.median(base)) else "misses"
        rows.append(
            [
                item,
                _spread(goal, base),
                _spread(goal, cur),
                f"{ratio:.3f}",
                bound,
                f"{verdict} (was: {was})",
                versus(goal, base, cur),
            ]
        )
    lines = [f"{goal.title}", f"figure: {goal.figure}", table(header, rows)]
    if goal.note:
        lines.append(goal.note)
    return "\n".join(lines)


def report(record: dict[str, Any]) -> str:
    """The heading (sides, scripts, load), then one table per goal that was measured."""
    load = record["load"]
    envs = record["envs"]
    lines = [
        f"solvi against an earlier commit, {record['date']}: {record['rounds']} round(s) of the "
        f"{'--quick' if record['quick'] else 'full'} runs, alternating baseline and current, "
        f"{record['seconds'] / 60:.1f} min",
        *(
            f"  {side}: {e['rev']} = {e['commit']}"
            + "".join(f" with {p}" for p in e.get("pins", ()))
            + f" ({e['python']})"
            for side, e in envs.items()
        ),
        f"  load average (1 min) over the run: median {statistics.median(load):.2f}, "
        f"{min(load):.2f} to {max(load):.2f}, on {record['cpus']} CPUs",
    ]
    for side, scripts in record["scripts"].items():
        where = {
            "this checkout's" if Path(p).parent == HERE else "its own" for p in scripts.values()
        }
        lines.append(f"  {side} ran {' and '.join(sorted(where))} benchmark scripts")
    for name, why in record.get("skipped", {}).items():
        lines.append(f"  {name}: not measured: {why}")
    lines.append(
        "figures are medians over rounds [range]; 'vs before' is WORSE when the ranges are "
        f"apart and the medians more than {NOISE:.0%} apart"
    )
    for goal in GOALS:
        if goal.benchmark in record["runs"]["current"]:
            lines += ["", goal_table(goal, record)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Install, measure and print the tables (or print them from a saved run)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="9be2a68", metavar="REV", help="default 9be2a68")
    parser.add_argument(
        "--current", default=".", metavar="REV", help="'.': this checkout (default), or a commit"
    )
    parser.add_argument(
        "--baseline-with",
        type=pin,
        action="append",
        default=[],
        metavar="NAME==VERSION",
        help="install this exact version into the baseline's venv after its lock (repeatable)",
    )
    parser.add_argument("--rounds", type=int, default=None, help="default 3, quick 1")
    parser.add_argument("--quick", action="store_true", help="the benchmarks' --quick runs")
    parser.add_argument(
        "--only", nargs="+", choices=tuple(BENCHMARKS), default=list(BENCHMARKS), metavar="NAME"
    )
    parser.add_argument("--save", type=Path, metavar="PATH", help="write every run's JSON here")
    parser.add_argument("--load", type=Path, metavar="PATH", help="only print a saved run")
    args = parser.parse_args(argv)
    if args.load is not None:
        print(report(json.loads(args.load.read_text(encoding="utf-8"))))
        return 0
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    rounds = args.rounds or (1 if args.quick else 3)
    # a SIGTERM ends the run through the cleanup below (worktrees, venvs, the running child)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with environments(args.baseline, args.current, args.baseline_with) as envs:
        record = measure(envs, args.only, rounds=rounds, quick=args.quick)
    if not record["runs"]["current"]:
        print("nothing could be measured on both sides; see the reasons above", file=sys.stderr)
        return 1
    if args.save is not None:
        args.save.write_text(json.dumps(record), encoding="utf-8")
    print(report(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
