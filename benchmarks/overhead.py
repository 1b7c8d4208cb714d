"""Per-step overhead of `System.ask`, next to direct calls, a bare loop and Hamilton's driver.

Three DAGs of trivial parts (each returns the sum of its inputs plus 1), every one
ending in a rule named ``answer`` that reads the sink(s):

- chain: 100 parts, each reading the one before (the first reads the request key);
- fan-in: 100 independent parts reading the request key, one part reading all 100;
- lattice: 10 layers of 10, each part reading 3 neighbouring parts of the layer before
  ("r3"), and again with each part reading all 10 ("all"), where the fan-in dominates.

Each DAG runs five ways in one process, on the same generated functions:

- direct: a generated straight-line function that calls the parts one after another;
- loop: a bare generic loop, ``vals[n] = fn(*[vals[a] for a in args])``, in topological order;
- solvi: ``System(catalog).ask(state)`` with the flow already cached;
- hooked: the same with one hook that counts the steps it is told of (what a tracer or a
  metrics hook pays at the least);
- hamilton: Apache Hamilton's driver, ``dr.execute([answer], inputs=...)`` (dict result).

solvi's overhead per step is (solvi per request - direct per request) / steps, and the
goal is at most 1 µs. A second table runs chains of 50 to 400 parts to show the cost is
linear (µs per step flat).

Usage::

    .venv/bin/python benchmarks/overhead.py [--quick] [--plot PATH] [--json]

``--quick`` runs few repetitions (a CI smoke run of a few seconds); ``--plot`` writes an
SVG bar chart of µs per step (no plotting library needed); ``--json`` prints the
measurements as one JSON document instead of the tables (``against.py`` reads it).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import math
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import attrs

import solvi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import table

__all__ = [
    "METHODS",
    "Dag",
    "Result",
    "Settings",
    "build_methods",
    "chain",
    "fan_in",
    "final_values",
    "format_linearity",
    "format_table",
    "lattice",
    "main",
    "make_functions",
    "measure",
    "run",
    "standard_dags",
    "to_json",
    "write_svg",
]

REQUEST_KEY = "x"
FINAL = "answer"
REQUEST_VALUE = 1
GOAL_US = 1.0
METHODS = ("direct", "loop", "solvi", "hooked", "hamilton")

Call = Callable[[], Any]


# -- the DAGs ------------------------------------------------------------------


@attrs.frozen
class Dag:
    """A DAG of trivial parts in topological order; the last part is the rule ``answer``."""

    name: str
    #: (part name, names it reads), topologically ordered, the rule last
    parts: tuple[tuple[str, tuple[str, ...]], ...]
    note: str

    @property
    def steps(self) -> int:
        """How many parts one request runs (the rule included)."""
        return len(self.parts)


def chain(n: int = 100) -> Dag:
    """A chain of `n` parts; the first reads the request key, the rule reads the last."""
    parts = [(f"c{i}", (f"c{i - 1}",) if i else (REQUEST_KEY,)) for i in range(n)]
    parts.append((FINAL, (f"c{n - 1}",)))
    return Dag(f"chain {n}", tuple(parts), f"{n} parts in a line + rule")


def fan_in(n: int = 100) -> Dag:
    """`n` independent parts reading the request key and one part reading all of them."""
    leaves = [(f"f{i}", (REQUEST_KEY,)) for i in range(n)]
    names = tuple(name for name, _ in leaves)
    parts = [*leaves, ("fsum", names), (FINAL, ("fsum",))]
    return Dag(f"fan-in {n}", tuple(parts), f"{n} leaves, 1 part reading all {n}, rule")


def lattice(layers: int = 10, width: int = 10, reads: int | None = None) -> Dag:
    """`layers` layers of `width` parts; each reads `reads` parts of the layer before.

    `reads=None` reads the whole previous layer; `reads=3` reads the parts at the
    same position and its two neighbours (wrapping around). The rule reads the last layer.
    """
    if reads is not None and not 1 <= reads <= width:
        msg = f"reads must be between 1 and width={width}, got {reads!r}"
        raise ValueError(msg)
    parts: list[tuple[str, tuple[str, ...]]] = []
    previous: tuple[str, ...] = (REQUEST_KEY,)
    for k in range(layers):
        layer = tuple(f"l{k}_{j}" for j in range(width))
        for j, name in enumerate(layer):
            if k == 0 or reads is None or reads == width:
                inputs = previous
            else:
                first = j - (reads - 1) // 2
                inputs = tuple(previous[(first + d) % width] for d in range(reads))
            parts.append((name, inputs))
        previous = layer
    parts.append((FINAL, previous))
    if reads is None or reads == width:
        how, label = f"all {width} parts", f"lattice {layers}x{width} all"
    else:
        how, label = f"{reads} neighbouring parts", f"lattice {layers}x{width} r{reads}"
    note = f"{layers} layers of {width}, each part reads {how} of the layer before, rule"
    return Dag(label, tuple(parts), note)


def standard_dags() -> tuple[Dag, ...]:
    """The DAGs the issue names: chain 100, fan-in 100, lattice 10x10.

    The lattice runs twice: each part reading 3 parts of the layer before (the
    shape the goal is judged on: steps dominate, not the fan-in of each part), and
    each part reading all 10 (where a runner's cost per input shows).
    """
    return (chain(100), fan_in(100), lattice(10, 10, reads=3), lattice(10, 10))


def make_functions(dag: Dag) -> dict[str, Callable[..., int]]:
    """One real function per part, named after it, its parameters named after its inputs."""
    lines: list[str] = []
    for name, inputs in dag.parts:
        params = ", ".join(f"{i}: int" for i in inputs)
        lines.append(f"def {name}({params}) -> int:\n    return {' + '.join(inputs)} + 1\n")
    namespace: dict[str, Any] = {"__name__": f"overhead_{_ident(dag.name)}"}
    # dont_inherit: real annotations, not this module's postponed (string) ones
    code = compile("\n".join(lines), f"<overhead {dag.name}>", "exec", dont_inherit=True)
    exec(code, namespace)
    return {name: namespace[name] for name, _ in dag.parts}


def _ident(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


# -- the four ways to run a DAG ------------------------------------------------


def _direct(dag: Dag, funcs: dict[str, Callable[..., int]]) -> Call:
    """A straight-line function: one call per part, values in local variables."""
    body = [
        f"    v_{name} = f_{name}({', '.join('v_' + i for i in inputs)})"
        for name, inputs in dag.parts
    ]
    source = f"def direct(v_{REQUEST_KEY}):\n" + "\n".join(body) + f"\n    return v_{FINAL}\n"
    namespace: dict[str, Any] = {f"f_{name}": fn for name, fn in funcs.items()}
    exec(compile(source, f"<direct {dag.name}>", "exec", dont_inherit=True), namespace)
    return functools.partial(namespace["direct"], REQUEST_VALUE)


def _loop(dag: Dag, funcs: dict[str, Callable[..., int]]) -> Call:
    """The least any generic runner must do: look inputs up, call, store."""
    order = tuple((name, funcs[name], inputs) for name, inputs in dag.parts)

    def loop(x: int) -> Any:
        vals: dict[str, Any] = {REQUEST_KEY: x}
        for name, fn, args in order:
            vals[name] = fn(*[vals[a] for a in args])
        return vals[FINAL]

    return functools.partial(loop, REQUEST_VALUE)


class CountingHook:
    """The least a hook can do: count the steps it is told of."""

    def __init__(self) -> None:
        self.steps = 0

    def step_finished(self, event: Any) -> None:
        """Count one finished step."""
        self.steps += 1


def _takes_hooks() -> bool:
    """Whether the solvi being measured has hooks (an earlier commit that `against.py`
    runs this script on may not: its `hooked` column is then left out)."""
    return "hooks" in inspect.signature(solvi.System).parameters


def _solvi(
    dag: Dag, funcs: dict[str, Callable[..., int]], *, hooked: bool = False
) -> tuple[Call, Call]:
    """`System.ask` on a catalog of the same functions (timed: `ask` alone); with
    `hooked`, the System has one hook that counts the steps."""
    catalog = solvi.Catalog(f"overhead_{_ident(dag.name)}")
    for name, _ in dag.parts[:-1]:
        catalog.fn(funcs[name])
    catalog.rule(funcs[FINAL])
    system = solvi.System(catalog, hooks=[CountingHook()]) if hooked else solvi.System(catalog)
    state = {REQUEST_KEY: REQUEST_VALUE}
    timed = functools.partial(system.ask, state)

    def value() -> Any:
        answer = system.ask(state)[FINAL]
        if answer.status != "decided":
            msg = f"solvi did not decide {FINAL} on {dag.name}: {answer.reason}"
            raise RuntimeError(msg)
        return answer.value

    return timed, value


def _hamilton(dag: Dag, funcs: dict[str, Callable[..., int]]) -> tuple[Call, Call] | None:
    """Hamilton's driver over a temporary module of the same functions (dict result)."""
    try:
        from hamilton import ad_hoc_utils, base, driver
    except ImportError:
        return None
    module = ad_hoc_utils.create_temporary_module(*funcs.values())
    dr = (
        driver.Builder()
        .with_modules(module)
        .with_adapters(base.SimplePythonGraphAdapter(base.DictResult()))
        .build()
    )
    timed = functools.partial(dr.execute, [FINAL], inputs={REQUEST_KEY: REQUEST_VALUE})
    return timed, lambda: dr.execute([FINAL], inputs={REQUEST_KEY: REQUEST_VALUE})[FINAL]


def build_methods(dag: Dag, methods: Sequence[str] = METHODS) -> dict[str, tuple[Call, Call]]:
    """For each available method: (the call to time, a call returning the final value).

    Hamilton is left out when it is not installed (it is a benchmark-only extra), and
    `hooked` when the solvi measured has no hooks.
    """
    funcs = make_functions(dag)
    built: dict[str, tuple[Call, Call]] = {}
    for method in methods:
        if method == "direct":
            call = _direct(dag, funcs)
            built[method] = (call, call)
        elif method == "loop":
            call = _loop(dag, funcs)
            built[method] = (call, call)
        elif method == "solvi":
            built[method] = _solvi(dag, funcs)
        elif method == "hooked":
            if _takes_hooks():
                built[method] = _solvi(dag, funcs, hooked=True)
        elif method == "hamilton":
            pair = _hamilton(dag, funcs)
            if pair is not None:
                built[method] = pair
        else:
            msg = f"unknown method {method!r}; expected one of {', '.join(METHODS)}"
            raise ValueError(msg)
    return built


def final_values(dag: Dag) -> dict[str, Any]:
    """The value each method computes for ``answer`` on `dag` (they must all agree)."""
    return {method: value() for method, (_, value) in build_methods(dag).items()}


# -- timing --------------------------------------------------------------------


@attrs.frozen
class Settings:
    """How long to time each call: rounds (the median is kept) and seconds per round."""

    rounds: int
    seconds_per_round: float

    @classmethod
    def for_mode(cls, *, quick: bool) -> Settings:
        """Few short rounds for a smoke run, more and longer ones otherwise."""
        return cls(3, 0.004) if quick else cls(15, 0.05)


def measure(calls: Sequence[Call], settings: Settings) -> list[float]:
    """Median ns per call of each call, over `settings.rounds` rounds (gc off, as timeit does).

    Rounds are interleaved: round 1 of every call, then round 2 of every call, and so
    on, so a burst of load from elsewhere on the machine lands in one round of many
    cells rather than in every round of one cell, and the median drops it.
    """
    target = settings.seconds_per_round * 1e9
    timers: list[tuple[timeit.Timer, int]] = []
    for call in calls:
        for _ in range(3):
            call()  # warm up: solvi plans and compiles its flow on the first request
        timer = timeit.Timer(call, timer=time.perf_counter_ns)
        number = 1
        while True:
            elapsed = timer.timeit(number)
            if elapsed >= target / 5 or number >= 1 << 24:
                break
            number *= 4
        timers.append((timer, max(1, math.ceil(number * target / max(elapsed, 1)))))
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(settings.rounds):
        for i, (timer, number) in enumerate(timers):
            samples[i].append(timer.timeit(number) / number)
    return [statistics.median(s) for s in samples]


@attrs.frozen
class Result:
    """One DAG's timings: ns per request for each method that ran."""

    dag: Dag
    ns: dict[str, float]
    values: dict[str, Any]

    def us_per_request(self, method: str) -> float:
        """Microseconds per request."""
        return self.ns[method] / 1e3

    def us_per_step(self, method: str) -> float:
        """Microseconds per request divided by the steps."""
        return self.ns[method] / 1e3 / self.dag.steps

    def overhead_per_step(self, method: str) -> float:
        """µs per step above the direct calls of the same functions."""
        return (self.ns[method] - self.ns["direct"]) / 1e3 / self.dag.steps

    @property
    def agree(self) -> bool:
        """Whether every method computed the same final value."""
        return len({repr(v) for v in self.values.values()}) == 1


def run(
    dags: Sequence[Dag],
    settings: Settings,
    methods: Sequence[str] = METHODS,
    *,
    extra: Sequence[tuple[Dag, Sequence[str]]] = (),
) -> list[Result]:
    """Time `methods` on every DAG (and each `extra` DAG with its own methods), interleaved.

    Every method's value is computed before any timing; the results come back in
    order, `dags` first, then `extra`.
    """
    jobs = [(dag, methods) for dag in dags] + list(extra)
    built = [build_methods(dag, ms) for dag, ms in jobs]
    values = [{m: value() for m, (_, value) in b.items()} for b in built]
    cells = [(i, m) for i, b in enumerate(built) for m in b]
    times = measure([built[i][m][0] for i, m in cells], settings)
    ns: list[dict[str, float]] = [{} for _ in jobs]
    for (i, m), t in zip(cells, times, strict=True):
        ns[i][m] = t
    return [Result(dag, ns[i], values[i]) for i, (dag, _) in enumerate(jobs)]


# -- report --------------------------------------------------------------------


def format_table(results: Sequence[Result]) -> str:
    """Per DAG and method: µs per request, µs per step; then overheads, ratio and the goal."""
    methods = [m for m in METHODS if all(m in r.ns for r in results)]
    header = ["DAG", "steps", *methods]
    rows = [
        [
            r.dag.name,
            str(r.dag.steps),
            *(f"{r.us_per_request(m):.1f} ({r.us_per_step(m):.3f})" for m in methods),
        ]
        for r in results
    ]
    first = table(header, rows)

    header2 = ["DAG", "loop ovh/step", "solvi ovh/step"]
    if "hooked" in methods:
        header2 += ["with a hook"]
    if "hamilton" in methods:
        header2 += ["hamilton ovh/step", "hamilton/solvi"]
    header2 += [f"goal <= {GOAL_US:g} µs", "same value"]
    rows2 = []
    for r in results:
        solvi_ovh = r.overhead_per_step("solvi")
        row = [r.dag.name, f"{r.overhead_per_step('loop'):.3f}", f"{solvi_ovh:.3f}"]
        if "hooked" in methods:
            row += [f"{r.overhead_per_step('hooked'):.3f}"]
        if "hamilton" in methods:
            ham_ovh = r.overhead_per_step("hamilton")
            ratio = f"{ham_ovh / solvi_ovh:.1f}x" if solvi_ovh > 0 else "n/a"
            row += [f"{ham_ovh:.3f}", ratio]
        row += ["met" if solvi_ovh <= GOAL_US else "MISSED", "yes" if r.agree else "NO"]
        rows2.append(row)
    notes = [f"  {r.dag.name}: {r.dag.note}" for r in results]
    return "\n".join(
        [
            "µs per request (µs per step):",
            first,
            "",
            "Overhead per step (µs above the direct calls of the same functions):",
            table(header2, rows2),
            "",
            "DAGs:",
            *notes,
        ]
    )


def format_linearity(results: Sequence[Result]) -> str:
    """solvi per request and per step on growing chains (flat µs/step means linear)."""
    header = ["chain", "steps", "direct µs/req", "solvi µs/req", "solvi µs/step", "solvi ovh/step"]
    rows = [
        [
            str(r.dag.steps - 1),
            str(r.dag.steps),
            f"{r.us_per_request('direct'):.1f}",
            f"{r.us_per_request('solvi'):.1f}",
            f"{r.us_per_step('solvi'):.3f}",
            f"{r.overhead_per_step('solvi'):.3f}",
        ]
        for r in results
    ]
    return table(header, rows)


def to_json(results: Sequence[Result], linearity: Sequence[Result], settings: Settings) -> str:
    """The measurements as JSON: ns per request of each method on each DAG, and the steps."""

    def one(r: Result) -> dict[str, Any]:
        return {"dag": r.dag.name, "steps": r.dag.steps, "ns": r.ns, "agree": r.agree}

    return json.dumps(
        {
            "benchmark": "overhead",
            "python": platform.python_version(),
            "solvi": solvi.__file__,
            "settings": attrs.asdict(settings),
            "dags": [one(r) for r in results],
            "linearity": [one(r) for r in linearity],
        }
    )


def write_svg(results: Sequence[Result], path: Path) -> None:
    """A grouped bar chart of µs per step (log scale), one group per DAG."""
    methods = [m for m in METHODS if all(m in r.ns for r in results)]
    colours = {
        "direct": "#4c72b0",
        "loop": "#8172b2",
        "solvi": "#55a868",
        "hooked": "#dd8452",
        "hamilton": "#c44e52",
    }
    values = [r.us_per_step(m) for r in results for m in methods]
    lo = math.floor(math.log10(max(min(values), 1e-4)))
    hi = math.ceil(math.log10(max(values)))
    hi = max(hi, lo + 1)
    width, height, left, top, bottom = 760, 380, 70, 40, 70
    plot_h = height - top - bottom
    group_w = (width - left - 20) / len(results)
    bar_w = group_w * 0.8 / len(methods)

    def y(value: float) -> float:
        frac = (math.log10(max(value, 10.0**lo)) - lo) / (hi - lo)
        return top + plot_h * (1 - frac)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">'
        "µs per step (log scale): solvi ask vs direct calls, a bare loop, Hamilton</text>",
    ]
    for e in range(lo, hi + 1):
        ty = y(10.0**e)
        out.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{width - 20}" y2="{ty:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end">{10.0**e:g}</text>')
    goal_y = y(GOAL_US)
    out.append(
        f'<line x1="{left}" y1="{goal_y:.1f}" x2="{width - 20}" y2="{goal_y:.1f}" '
        f'stroke="#333" stroke-dasharray="4 3"/>'
    )
    for g, r in enumerate(results):
        x0 = left + g * group_w + group_w * 0.1
        for i, m in enumerate(methods):
            v = r.us_per_step(m)
            x = x0 + i * bar_w
            out.append(
                f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar_w * 0.9:.1f}" '
                f'height="{top + plot_h - y(v):.1f}" fill="{colours[m]}">'
                f"<title>{escape(r.dag.name)} {m}: {v:.3f} µs/step</title></rect>"
            )
        cx = x0 + group_w * 0.4
        out.append(
            f'<text x="{cx:.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
            f"{escape(r.dag.name)}</text>"
        )
    for i, m in enumerate(methods):
        lx = left + i * 115
        ly = height - 22
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colours[m]}"/>')
        out.append(f'<text x="{lx + 16}" y="{ly}">{m}</text>')
    out.append(
        f'<text x="{left + len(methods) * 115}" y="{height - 22}">dashed: {GOAL_US:g} µs</text>'
    )
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


# -- command line --------------------------------------------------------------


def main(argv: Sequence[str] | None = None, *, dags: Sequence[Dag] | None = None) -> int:
    """Run the benchmark and print its tables; return 1 if the methods disagree on a value.

    `dags` replaces the three standard DAGs and skips the linearity table (for tests).
    """
    parser = argparse.ArgumentParser(
        description="Per-step overhead of solvi's ask, next to direct calls, a loop and Hamilton."
    )
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run)")
    parser.add_argument("--plot", type=Path, metavar="PATH", help="write an SVG bar chart here")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    settings = Settings.for_mode(quick=args.quick)
    started = time.perf_counter()
    sizes = (50, 100, 200, 400) if dags is None else ()
    main_dags = standard_dags() if dags is None else tuple(dags)
    if not args.json:
        print(
            f"solvi overhead benchmark: Python {platform.python_version()}, "
            f"{settings.rounds} rounds of ~{settings.seconds_per_round:g} s per cell, median kept"
            + (" (quick)" if args.quick else "")
        )
    # chain 100 is already among the standard DAGs; its result is reused below
    extra = [(chain(n), ("direct", "solvi")) for n in sizes if n != 100]
    everything = run(main_dags, settings, extra=extra)
    ok = all(r.agree for r in everything)
    results = everything[: len(main_dags)]
    by_steps = {r.dag.steps - 1: r for r in everything if r.dag.name.startswith("chain ")}
    if args.json:
        print(to_json(results, [by_steps[n] for n in sizes], settings))
        return 0 if ok else 1
    if "hamilton" not in results[0].ns:
        print("hamilton is not installed: its columns are left out (pip install apache-hamilton)")
    print()
    print(format_table(results))
    if sizes:
        print()
        print("Linearity (solvi on chains; µs/step should stay flat):")
        print(format_linearity([by_steps[n] for n in sizes]))
    if args.plot is not None:
        write_svg(results, args.plot)
        print(f"\nplot written to {args.plot}")
    print(f"\n({time.perf_counter() - started:.1f} s)")
    if not ok:
        print("ERROR: the methods computed different values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
