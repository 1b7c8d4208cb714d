"""Latency, per-step overhead and throughput of `System.aask`, next to hand-written asyncio.

Three measurements, side by side in one run on one asyncio event loop:

1. I/O lattice: 10 layers of 10 async parts, each awaiting 2 ms of simulated I/O
   (``anyio.sleep``); part ``node_k_j`` reads 2 or 3 parts of layer k-1 (layer 0 reads
   the request key) and the rule ``answer`` reads the last layer. End-to-end latency
   (median and p90 over many requests) of ``aask``, ``aask(speculate=True)``, a
   hand-written ``asyncio.gather`` per layer, one asyncio task per node awaiting the
   tasks it reads, and Hamilton's async driver, each as a ratio to the critical-path
   floor (layers x 2 ms); ten sequential 2 ms sleeps show what the event loop's timers
   alone add to the floor. Goals: ``aask`` at most 1.15x the floor, and no slower than
   the gather-per-layer baseline of the same run.
2. Per-step overhead on trivial async parts (each ``async def`` returns at once), on a
   chain of 100 and a fan-out/fan-in of 100: (time per request - hand-written
   sequential awaits of the same coroutines) / steps. Goals: ``aask`` at most 4 µs per
   step, and at least 10x below Hamilton's async driver.
3. Throughput: 1,000 ``aask`` requests at once in one task group on the I/O lattice,
   against the same 1,000 one after another. Goal: at least 5x.

Every part is a real generated function whose parameters name what it reads, so
Hamilton and solvi see the same functions. Before any timing, every method's value of
``answer`` is checked against the others.

Usage::

    .venv/bin/python benchmarks/async_latency.py [--quick] [--plot PATH] [--json]

``--quick`` is a CI smoke run of a few seconds; ``--plot`` writes an SVG bar chart of
the lattice latencies (no plotting library needed); ``--json`` prints the
measurements as one JSON document instead of the tables (``against.py`` reads it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import nullcontext
from importlib import metadata
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import anyio
import attrs

import solvi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import gc_paused, table

__all__ = [
    "LATENCY_METHODS",
    "STEP_METHODS",
    "Dag",
    "Latency",
    "Settings",
    "StepResult",
    "Throughput",
    "build_methods",
    "chain",
    "expected_value",
    "fan",
    "final_values",
    "format_latency",
    "format_steps",
    "format_throughput",
    "lattice",
    "main",
    "make_functions",
    "measure_latency",
    "measure_steps",
    "measure_throughput",
    "run",
    "to_json",
    "write_svg",
]

REQUEST_KEY = "x"
FINAL = "answer"
REQUEST_VALUE = 1
LATENCY_GOAL = 1.15
STEP_GOAL_US = 4.0
HAMILTON_GOAL = 10.0
THROUGHPUT_GOAL = 5.0

#: the ways to run the I/O lattice, timed end to end
LATENCY_METHODS = ("sleeps", "gather", "tasks", "aask", "aask_speculate", "hamilton")
#: the ways to run the trivial DAGs; "direct" is the baseline of the overhead
STEP_METHODS = ("direct", "gather", "tasks", "aask", "hamilton")
LABELS = {
    "floor": "critical-path floor",
    "sleeps": "sequential sleeps",
    "direct": "sequential awaits",
    "gather": "asyncio.gather per layer",
    "tasks": "asyncio task per node",
    "aask": "solvi aask",
    "aask_speculate": "solvi aask(speculate=True)",
    "hamilton": "hamilton async driver",
}

Call = Callable[[], Awaitable[Any]]


# -- the DAGs ------------------------------------------------------------------


@attrs.frozen
class Dag:
    """A DAG of async parts in topological order; the last part is the rule ``answer``.

    Every part but the rule awaits ``delay`` seconds of simulated I/O (none when 0).
    """

    name: str
    #: (part name, names it reads), topologically ordered, the rule last
    parts: tuple[tuple[str, tuple[str, ...]], ...]
    delay: float
    note: str
    #: the parts grouped by depth (the request key is depth -1), for gather per layer
    layers: tuple[tuple[str, ...], ...] = attrs.field(init=False)

    @layers.default
    def _layers(self) -> tuple[tuple[str, ...], ...]:
        depth = {REQUEST_KEY: -1}
        grouped: list[list[str]] = []
        for name, inputs in self.parts:
            d = 1 + max(depth[i] for i in inputs)
            depth[name] = d
            if d == len(grouped):
                grouped.append([])
            grouped[d].append(name)
        return tuple(tuple(g) for g in grouped)

    @property
    def steps(self) -> int:
        """How many parts one request runs (the rule included)."""
        return len(self.parts)

    @property
    def io_depth(self) -> int:
        """How many parts that await I/O lie on the longest path (the rule awaits none)."""
        return len(self.layers) - 1 if self.delay > 0 else 0

    @property
    def floor_ms(self) -> float:
        """The critical-path floor: the I/O on the longest path, awaited back to back."""
        return self.io_depth * self.delay * 1e3


def lattice(layers: int = 10, width: int = 10, delay: float = 0.002) -> Dag:
    """`layers` layers of `width` parts; part j of layer k reads 2 or 3 parts of layer k-1.

    Part j reads parts j and j+1 of the layer before (wrapping around), and also part
    j + width//2 when j is a multiple of 3; layer 0 reads the request key; the rule
    reads the whole last layer.
    """
    if layers < 1 or width < 1:
        msg = f"a lattice needs at least 1 layer of 1 part, got {layers}x{width}"
        raise ValueError(msg)
    parts: list[tuple[str, tuple[str, ...]]] = []
    previous: tuple[str, ...] = (REQUEST_KEY,)
    for k in range(layers):
        layer = tuple(f"node_{k}_{j}" for j in range(width))
        for j, name in enumerate(layer):
            if k == 0:
                inputs = previous
            else:
                picks = [j, (j + 1) % width]
                if j % 3 == 0:
                    picks.append((j + width // 2) % width)
                inputs = tuple(dict.fromkeys(previous[p] for p in picks))
            parts.append((name, inputs))
        previous = layer
    parts.append((FINAL, previous))
    io = f"{delay * 1e3:g} ms of I/O each" if delay > 0 else "trivial"
    note = (
        f"{layers} layers of {width} parts ({io}), each reading 2-3 parts of the layer "
        f"before; a rule reads the last layer"
    )
    return Dag(f"lattice {layers}x{width}", tuple(parts), delay, note)


def chain(n: int = 100, delay: float = 0.0) -> Dag:
    """`n` parts in a line (the first reads the request key) and a rule reading the last."""
    parts = [(f"c{i}", (f"c{i - 1}",) if i else (REQUEST_KEY,)) for i in range(n)]
    parts.append((FINAL, (f"c{n - 1}",)))
    return Dag(f"chain {n}", tuple(parts), delay, f"{n} parts in a line, rule")


def fan(n: int = 100, delay: float = 0.0) -> Dag:
    """`n` parts reading the request key, one part reading all of them, and a rule."""
    leaves = [(f"f{i}", (REQUEST_KEY,)) for i in range(n)]
    names = tuple(name for name, _ in leaves)
    parts = [*leaves, ("fsum", names), (FINAL, ("fsum",))]
    return Dag(f"fan {n}", tuple(parts), delay, f"{n} parts reading the key, 1 reading all, rule")


def expected_value(dag: Dag) -> int:
    """The value of ``answer``: every part returns the sum of its inputs plus 1."""
    vals = {REQUEST_KEY: REQUEST_VALUE}
    for name, inputs in dag.parts:
        vals[name] = sum(vals[i] for i in inputs) + 1
    return vals[FINAL]


def make_functions(dag: Dag) -> dict[str, Callable[..., Awaitable[int]]]:
    """One ``async def`` per part, named after it, its parameters named after its inputs.

    Each returns the sum of its inputs plus 1, after ``await anyio.sleep(delay)`` when
    the DAG has a delay (never in the rule).
    """
    lines: list[str] = []
    for name, inputs in dag.parts:
        params = ", ".join(f"{i}: int" for i in inputs)
        wait = f"    await sleep({dag.delay!r})\n" if dag.delay > 0 and name != FINAL else ""
        lines.append(
            f"async def {name}({params}) -> int:\n{wait}    return {' + '.join(inputs)} + 1\n"
        )
    namespace: dict[str, Any] = {"__name__": f"async_latency_{_ident(dag.name)}"}
    namespace["sleep"] = anyio.sleep
    # dont_inherit: real annotations, not this module's postponed (string) ones
    code = compile("\n".join(lines), f"<async_latency {dag.name}>", "exec", dont_inherit=True)
    exec(code, namespace)
    return {name: namespace[name] for name, _ in dag.parts}


def _ident(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


# -- the ways to run a DAG -----------------------------------------------------
#
# The hand-written baselines use asyncio directly (gather, create_task): they are
# what a user would write without a framework, and what Hamilton does inside.


def _direct(dag: Dag, funcs: dict[str, Callable[..., Awaitable[int]]]) -> Call:
    """A generated straight-line coroutine: one ``await`` per part, values in locals."""
    body = [
        f"    v_{name} = await f_{name}({', '.join('v_' + i for i in inputs)})"
        for name, inputs in dag.parts
    ]
    source = f"async def direct(v_{REQUEST_KEY}):\n" + "\n".join(body) + f"\n    return v_{FINAL}\n"
    namespace: dict[str, Any] = {f"f_{name}": fn for name, fn in funcs.items()}
    exec(compile(source, f"<direct {dag.name}>", "exec", dont_inherit=True), namespace)
    direct = namespace["direct"]

    def call() -> Awaitable[Any]:
        return direct(REQUEST_VALUE)  # type: ignore[no-any-return]  # generated function

    return call


def _gather(dag: Dag, funcs: dict[str, Callable[..., Awaitable[int]]]) -> Call:
    """``asyncio.gather`` over each layer, one layer after another."""
    inputs = dict(dag.parts)
    layers = tuple(tuple((n, funcs[n], inputs[n]) for n in layer) for layer in dag.layers)

    async def gather() -> Any:
        vals: dict[str, Any] = {REQUEST_KEY: REQUEST_VALUE}
        for layer in layers:
            results = await asyncio.gather(*(fn(*[vals[a] for a in args]) for _, fn, args in layer))
            for (name, _, _), value in zip(layer, results, strict=True):
                vals[name] = value
        return vals[FINAL]

    return gather


def _tasks(dag: Dag, funcs: dict[str, Callable[..., Awaitable[int]]]) -> Call:
    """One asyncio task per part, each awaiting the tasks of the parts it reads."""
    order = tuple((name, funcs[name], inputs) for name, inputs in dag.parts)

    async def node(
        futures: dict[str, asyncio.Future[Any]],
        fn: Callable[..., Awaitable[int]],
        args: tuple[str, ...],
    ) -> Any:
        return await fn(*[await futures[a] for a in args])

    async def tasks() -> Any:
        key: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        key.set_result(REQUEST_VALUE)
        futures: dict[str, asyncio.Future[Any]] = {REQUEST_KEY: key}
        for name, fn, args in order:
            futures[name] = asyncio.create_task(node(futures, fn, args))
        return await futures[FINAL]

    return tasks


def _system(dag: Dag, funcs: dict[str, Callable[..., Awaitable[int]]]) -> solvi.System:
    catalog = solvi.Catalog(f"async_latency_{_ident(dag.name)}")
    for name, _ in dag.parts[:-1]:
        catalog.fn(funcs[name])
    catalog.rule(funcs[FINAL])
    return solvi.System(catalog)


def _aask(system: solvi.System, dag: Dag, *, speculate: bool) -> tuple[Call, Call]:
    """`await system.aask(state)` (timed alone), and a call returning ``answer``'s value."""
    state = {REQUEST_KEY: REQUEST_VALUE}

    def timed() -> Awaitable[Any]:
        return system.aask(state, speculate=speculate)

    async def value() -> Any:
        answer = (await system.aask(state, speculate=speculate))[FINAL]
        if answer.status != "decided":
            msg = f"solvi did not decide {FINAL} on {dag.name}: {answer.reason}"
            raise RuntimeError(msg)
        return answer.value

    return timed, value


async def _hamilton(
    dag: Dag, funcs: dict[str, Callable[..., Awaitable[int]]]
) -> tuple[Call, Call] | None:
    """Hamilton's async driver over a temporary module of the same functions (dict result)."""
    try:
        from hamilton import ad_hoc_utils, async_driver
    except ImportError:
        return None
    module = ad_hoc_utils.create_temporary_module(*funcs.values())
    built = async_driver.Builder().with_modules(module).build()
    dr = await built if asyncio.iscoroutine(built) else built
    inputs = {REQUEST_KEY: REQUEST_VALUE}

    def timed() -> Awaitable[Any]:
        return dr.execute([FINAL], inputs=inputs)  # type: ignore[no-any-return]  # untyped

    async def value() -> Any:
        return (await dr.execute([FINAL], inputs=inputs))[FINAL]

    return timed, value


def _sleeps(dag: Dag) -> Call:
    """The I/O of the longest path alone: `io_depth` sleeps of `delay`, one after another."""
    depth, delay = dag.io_depth, dag.delay

    async def sleeps() -> Any:
        for _ in range(depth):
            await anyio.sleep(delay)
        return expected_value(dag)  # computes nothing on the way: report the right answer

    return sleeps


async def build_methods(dag: Dag, methods: Sequence[str]) -> dict[str, tuple[Call, Call]]:
    """For each available method: (the call to time, a call returning ``answer``'s value).

    Hamilton is left out when it is not installed (it is a benchmark-only extra).
    Both ``aask`` methods share one System, as a server would.
    """
    funcs = make_functions(dag)
    system: solvi.System | None = None
    built: dict[str, tuple[Call, Call]] = {}
    for method in methods:
        if method in ("aask", "aask_speculate"):
            system = system or _system(dag, funcs)
            built[method] = _aask(system, dag, speculate=method == "aask_speculate")
        elif method == "hamilton":
            pair = await _hamilton(dag, funcs)
            if pair is not None:
                built[method] = pair
        elif method in ("direct", "gather", "tasks", "sleeps"):
            if method == "direct":
                call = _direct(dag, funcs)
            elif method == "gather":
                call = _gather(dag, funcs)
            elif method == "tasks":
                call = _tasks(dag, funcs)
            else:
                call = _sleeps(dag)
            built[method] = (call, call)
        else:
            known = sorted({*LATENCY_METHODS, *STEP_METHODS})
            msg = f"unknown method {method!r}; expected one of {', '.join(known)}"
            raise ValueError(msg)
    return built


async def final_values(dag: Dag, methods: Sequence[str]) -> dict[str, Any]:
    """The value each method computes for ``answer`` on `dag` (they must all agree)."""
    return {m: await value() for m, (_, value) in (await build_methods(dag, methods)).items()}


# -- timing --------------------------------------------------------------------


@attrs.frozen
class Settings:
    """Sizes and repetitions of one run."""

    layers: int = 10
    width: int = 10
    delay: float = 0.002
    #: lattice requests per method (latency), after `warmup` untimed ones
    latency_requests: int = 100
    warmup: int = 5
    chain: int = 100
    fan: int = 100
    #: per-step rounds (the median is kept) and seconds per round
    step_rounds: int = 9
    seconds_per_round: float = 0.05
    #: requests of the throughput comparison
    requests: int = 1000

    @classmethod
    def for_mode(cls, *, quick: bool) -> Settings:
        """The full run (well under 90 s), or a smoke run of a few seconds."""
        if quick:
            return cls(
                latency_requests=8,
                warmup=2,
                step_rounds=3,
                seconds_per_round=0.004,
                requests=40,
            )
        return cls()


def _p90(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


@attrs.frozen
class Latency:
    """End-to-end latencies of one DAG, in ms, for each method that ran."""

    dag: Dag
    samples: dict[str, list[float]]
    values: dict[str, Any]

    def median(self, method: str) -> float:
        """Median ms per request (the floor is exact)."""
        if method == "floor":
            return self.dag.floor_ms
        return statistics.median(self.samples[method])

    def p90(self, method: str) -> float:
        """90th percentile ms per request."""
        if method == "floor":
            return self.dag.floor_ms
        return _p90(self.samples[method])

    @property
    def agree(self) -> bool:
        """Whether every method computed the same value of ``answer``."""
        return len({repr(v) for v in self.values.values()}) == 1


async def measure_latency(dag: Dag, settings: Settings) -> Latency:
    """Time one request at a time, methods interleaved: each round runs every method once.

    The order of the methods rotates from round to round, so none always follows the
    same neighbour; `warmup` untimed rounds come first (the cost book learns the parts).
    """
    built = await build_methods(dag, LATENCY_METHODS)
    values = {m: await value() for m, (_, value) in built.items()}
    names = list(built)
    calls = [built[m][0] for m in names]
    samples: dict[str, list[float]] = {m: [] for m in names}
    for _ in range(settings.warmup):
        for call in calls:
            await call()
    with gc_paused():
        for r in range(settings.latency_requests):
            shift = r % len(names)
            for i in [*range(shift, len(names)), *range(shift)]:
                start = time.perf_counter()
                await calls[i]()
                samples[names[i]].append((time.perf_counter() - start) * 1e3)
    return Latency(dag, samples, values)


@attrs.frozen
class StepResult:
    """One trivial DAG's timings: ns per request for each method that ran."""

    dag: Dag
    ns: dict[str, float]
    values: dict[str, Any]

    def us_per_request(self, method: str) -> float:
        """Microseconds per request."""
        return self.ns[method] / 1e3

    def overhead_per_step(self, method: str) -> float:
        """µs per step above the sequential awaits of the same coroutines."""
        return (self.ns[method] - self.ns["direct"]) / 1e3 / self.dag.steps

    @property
    def agree(self) -> bool:
        """Whether every method computed the same value of ``answer``."""
        return len({repr(v) for v in self.values.values()}) == 1


async def _per_call_ns(call: Call, number: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(number):
        await call()
    return (time.perf_counter_ns() - start) / number


async def measure_steps(dags: Sequence[Dag], settings: Settings) -> list[StepResult]:
    """Median ns per request of each method on each DAG, rounds interleaved across cells.

    Each call runs a few times first, untimed: aask learns from its first requests
    that the parts are fast and then awaits them inline.
    """
    built = [await build_methods(dag, STEP_METHODS) for dag in dags]
    values = [{m: await value() for m, (_, value) in b.items()} for b in built]
    cells = [(i, m) for i, b in enumerate(built) for m in b]
    target = settings.seconds_per_round * 1e9
    numbers: list[int] = []
    for i, m in cells:
        call = built[i][m][0]
        for _ in range(5):
            await call()
        number = 1
        while True:
            per_call = await _per_call_ns(call, number)
            if per_call * number >= target / 5 or number >= 1 << 20:
                break
            number *= 4
        numbers.append(max(1, math.ceil(target / max(per_call, 1.0))))
    samples: list[list[float]] = [[] for _ in cells]
    with gc_paused():
        for _ in range(settings.step_rounds):
            for c, (i, m) in enumerate(cells):
                samples[c].append(await _per_call_ns(built[i][m][0], numbers[c]))
    ns: list[dict[str, float]] = [{} for _ in dags]
    for (i, m), s in zip(cells, samples, strict=True):
        ns[i][m] = statistics.median(s)
    return [StepResult(dag, ns[i], values[i]) for i, dag in enumerate(dags)]


@attrs.frozen
class Throughput:
    """`requests` aask requests one after another, and all at once in one task group.

    Each entry is (wall seconds, CPU seconds) for all the requests. The garbage
    collector runs as usual (as in a server), except in `concurrent_no_gc`, which
    shows how much of the concurrent cost is the collector scanning live requests.
    """

    dag: Dag
    requests: int
    sequential: tuple[float, float]
    concurrent: tuple[float, float]
    concurrent_no_gc: tuple[float, float]
    #: the gather-per-layer baseline, all at once (for scale)
    gather_concurrent: tuple[float, float]
    agree: bool

    @property
    def speedup(self) -> float:
        """Concurrent throughput over sequential throughput, collector on in both."""
        return self.sequential[0] / self.concurrent[0]


async def measure_throughput(dag: Dag, settings: Settings) -> Throughput:
    """Run `settings.requests` aask requests sequentially, then concurrently on one loop."""
    funcs = make_functions(dag)
    system = _system(dag, funcs)
    gather = _gather(dag, funcs)
    state = {REQUEST_KEY: REQUEST_VALUE}
    n = settings.requests
    answers: list[Any] = []

    async def one() -> None:
        answers.append((await system.aask(state))[FINAL].value)

    async def one_gather() -> None:
        answers.append(await gather())

    for _ in range(settings.warmup):
        await one()
    answers.clear()

    async def one_after_another() -> None:
        for _ in range(n):
            await one()

    async def all_at_once(request: Callable[[], Coroutine[Any, Any, None]]) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(request)

    async def timed(run_all: Awaitable[None], *, collector: bool = True) -> tuple[float, float]:
        gc.collect()
        with nullcontext() if collector else gc_paused():
            wall, cpu = time.perf_counter(), time.process_time()
            await run_all
            return time.perf_counter() - wall, time.process_time() - cpu

    sequential = await timed(one_after_another())
    concurrent = await timed(all_at_once(one))
    concurrent_no_gc = await timed(all_at_once(one), collector=False)
    gather_concurrent = await timed(all_at_once(one_gather))
    agree = len(answers) == 4 * n and set(answers) == {expected_value(dag)}
    return Throughput(dag, n, sequential, concurrent, concurrent_no_gc, gather_concurrent, agree)


# -- report --------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def format_latency(result: Latency) -> str:
    """Median and p90 latency of each method, and each as a ratio to the floor."""
    dag = result.dag
    floor = dag.floor_ms
    methods = ["floor", *(m for m in LATENCY_METHODS if m in result.samples)]
    header = ["method", "median ms", "p90 ms", "median/floor", "p90/floor"]
    rows = []
    for m in methods:
        label = LABELS[m]
        if m == "floor":
            label += f" ({dag.io_depth} x {dag.delay * 1e3:g} ms)"
        elif m == "sleeps":
            label = f"{dag.io_depth} {label} of {dag.delay * 1e3:g} ms"
        med, p90 = result.median(m), result.p90(m)
        rows.append(
            [label, f"{med:.2f}", f"{p90:.2f}", f"{med / floor:.3f}x", f"{p90 / floor:.3f}x"]
        )
    aask, gather = result.median("aask"), result.median("gather")
    within = aask / floor <= LATENCY_GOAL
    n = len(result.samples["aask"])
    lines = [
        f"I/O {dag.name}: {dag.steps} parts, {n} requests per method, one at a time",
        table(header, rows),
        f"goal: aask median <= {LATENCY_GOAL:g}x the floor: {_verdict(within)}"
        f" ({aask / floor:.3f}x)",
        f"goal: aask median no worse than gather per layer: {_verdict(aask <= gather)}"
        f" (aask/gather {aask / gather:.3f}; p90 {result.p90('aask') / result.p90('gather'):.3f})",
        f"same value: {'yes' if result.agree else 'NO'}",
    ]
    return "\n".join(lines)


def format_steps(results: Sequence[StepResult]) -> str:
    """µs per request of each method, then the overhead per step and the goals."""
    methods = [m for m in STEP_METHODS if all(m in r.ns for r in results)]
    header = ["DAG", "steps", *(f"{m} µs/req" for m in methods)]
    rows = [
        [r.dag.name, str(r.dag.steps), *(f"{r.us_per_request(m):.1f}" for m in methods)]
        for r in results
    ]
    others = [m for m in methods if m != "direct"]
    header2 = ["DAG", *(f"{m} ovh/step" for m in others)]
    if "hamilton" in methods:
        header2.append("hamilton/aask")
    header2 += [f"goal <= {STEP_GOAL_US:g} µs"]
    if "hamilton" in methods:
        header2.append(f"goal >= {HAMILTON_GOAL:g}x")
    header2.append("same value")
    rows2 = []
    for r in results:
        aask = r.overhead_per_step("aask")
        row = [r.dag.name, *(f"{r.overhead_per_step(m):.2f}" for m in others)]
        ratio = math.inf
        if "hamilton" in methods:
            ratio = r.overhead_per_step("hamilton") / aask if aask > 0 else math.inf
            row.append(f"{ratio:.1f}x")
        row.append(_verdict(aask <= STEP_GOAL_US))
        if "hamilton" in methods:
            row.append(_verdict(ratio >= HAMILTON_GOAL))
        row.append("yes" if r.agree else "NO")
        rows2.append(row)
    return "\n".join(
        [
            "Trivial async parts, µs per request:",
            table(header, rows),
            "",
            "Overhead per step (µs above sequential awaits of the same coroutines, / steps):",
            table(header2, rows2),
            *(f"  {r.dag.name}: {r.dag.note}" for r in results),
        ]
    )


def format_throughput(result: Throughput) -> str:
    """Requests per second one after another and all at once, and the ratio."""
    n = result.requests
    header = ["how", "seconds", "requests/s", "ms/request", "CPU ms/request"]
    rows = [
        (f"aask, {n} one after another", result.sequential),
        (f"aask, {n} at once (one task group)", result.concurrent),
        (f"aask, {n} at once, collector paused", result.concurrent_no_gc),
        (f"gather per layer, {n} at once", result.gather_concurrent),
    ]
    shown = table(
        header,
        [
            [how, f"{wall:.2f}", f"{n / wall:.0f}", f"{wall / n * 1e3:.2f}", f"{cpu / n * 1e3:.2f}"]
            for how, (wall, cpu) in rows
        ],
    )
    return "\n".join(
        [
            f"Throughput on the I/O {result.dag.name}, one event loop:",
            shown,
            f"goal: concurrent >= {THROUGHPUT_GOAL:g}x sequential (collector on): "
            f"{_verdict(result.speedup >= THROUGHPUT_GOAL)} ({result.speedup:.1f}x; "
            f"{result.sequential[0] / result.concurrent_no_gc[0]:.1f}x with it paused)",
            f"same value: {'yes' if result.agree else 'NO'}",
        ]
    )


def to_json(
    latency: Latency, steps: Sequence[StepResult], throughput: Throughput, settings: Settings
) -> str:
    """The measurements as JSON: latencies in ms, ns per request, (wall, CPU) seconds."""
    return json.dumps(
        {
            "benchmark": "async_latency",
            "python": platform.python_version(),
            "solvi": solvi.__file__,
            "settings": attrs.asdict(settings),
            "latency": {
                "dag": latency.dag.name,
                "floor_ms": latency.dag.floor_ms,
                "requests": len(latency.samples["aask"]),
                "median_ms": {m: latency.median(m) for m in latency.samples},
                "p90_ms": {m: latency.p90(m) for m in latency.samples},
                "agree": latency.agree,
            },
            "steps": [
                {"dag": r.dag.name, "steps": r.dag.steps, "ns": r.ns, "agree": r.agree}
                for r in steps
            ],
            "throughput": {
                "dag": throughput.dag.name,
                "requests": throughput.requests,
                "sequential": throughput.sequential,
                "concurrent": throughput.concurrent,
                "concurrent_no_gc": throughput.concurrent_no_gc,
                "gather_concurrent": throughput.gather_concurrent,
                "agree": throughput.agree,
            },
        }
    )


def write_svg(result: Latency, path: Path) -> None:
    """A horizontal bar chart of median latency / floor per method, p90 as a tick."""
    methods = ["floor", *(m for m in LATENCY_METHODS if m in result.samples)]
    floor = result.dag.floor_ms
    medians = [result.median(m) / floor for m in methods]
    p90s = [result.p90(m) / floor for m in methods]
    top_value = max(max(p90s), LATENCY_GOAL) * 1.05
    width, left, right, top, bar_h = 760, 220, 30, 40, 26
    height = top + len(methods) * bar_h + 50
    plot_w = width - left - right

    def x(value: float) -> float:
        return left + plot_w * value / top_value

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">'
        f"{escape(result.dag.name)}, {result.dag.delay * 1e3:g} ms I/O per part: "
        "median latency / critical-path floor (tick: p90)</text>",
    ]
    for i, (m, med, p90) in enumerate(zip(methods, medians, p90s, strict=True)):
        y = top + i * bar_h
        colour = "#55a868" if m.startswith("aask") else "#999" if m == "floor" else "#4c72b0"
        if m == "hamilton":
            colour = "#c44e52"
        out.append(
            f'<rect x="{left}" y="{y + 4}" width="{x(med) - left:.1f}" height="{bar_h - 8}" '
            f'fill="{colour}"><title>{LABELS[m]}: {med:.3f}x</title></rect>'
        )
        out.append(
            f'<line x1="{x(p90):.1f}" y1="{y + 2}" x2="{x(p90):.1f}" y2="{y + bar_h - 2}" '
            f'stroke="#333" stroke-width="2"/>'
        )
        out.append(
            f'<text x="{left - 8}" y="{y + bar_h / 2 + 4}" text-anchor="end">'
            f"{escape(LABELS[m])}</text>"
        )
        out.append(
            f'<text x="{x(max(med, p90)) + 6:.1f}" y="{y + bar_h / 2 + 4}">{med:.2f}x</text>'
        )
    bottom = top + len(methods) * bar_h
    for goal, dash in ((1.0, ""), (LATENCY_GOAL, ' stroke-dasharray="4 3"')):
        out.append(
            f'<line x1="{x(goal):.1f}" y1="{top}" x2="{x(goal):.1f}" y2="{bottom}" '
            f'stroke="#333"{dash}/>'
        )
    out.append(
        f'<text x="{x(LATENCY_GOAL):.1f}" y="{bottom + 18}" text-anchor="middle">'
        f"goal {LATENCY_GOAL:g}x</text>"
    )
    out.append(f'<text x="{x(1.0):.1f}" y="{bottom + 18}" text-anchor="middle">1x</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


# -- command line --------------------------------------------------------------


async def run(
    settings: Settings,
) -> tuple[Latency, list[StepResult], Throughput]:
    """The three measurements, on the running event loop."""
    io = lattice(settings.layers, settings.width, settings.delay)
    latency = await measure_latency(io, settings)
    steps = await measure_steps((chain(settings.chain), fan(settings.fan)), settings)
    throughput = await measure_throughput(io, settings)
    return latency, steps, throughput


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """Run the benchmark and print its tables; return 1 if the methods disagree on a value.

    `settings` replaces the sizes and repetitions `--quick` would choose (for tests).
    """
    parser = argparse.ArgumentParser(
        description="Latency, per-step overhead and throughput of solvi's aask."
    )
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run)")
    parser.add_argument("--plot", type=Path, metavar="PATH", help="write an SVG bar chart here")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    if settings is None:
        settings = Settings.for_mode(quick=args.quick)
    started = time.perf_counter()
    if not args.json:
        print(
            f"solvi async latency benchmark: Python {platform.python_version()}, asyncio, "
            f"anyio {metadata.version('anyio')}" + (" (quick)" if args.quick else "")
        )
    latency, steps, throughput = asyncio.run(run(settings))
    ok = latency.agree and throughput.agree and all(r.agree for r in steps)
    if args.json:
        print(to_json(latency, steps, throughput, settings))
        return 0 if ok else 1
    if "hamilton" not in latency.samples:
        print("hamilton is not installed: its rows are left out (pip install apache-hamilton)")
    print()
    print(format_latency(latency))
    print()
    print(format_steps(steps))
    print()
    print(format_throughput(throughput))
    if args.plot is not None:
        write_svg(latency, args.plot)
        print(f"\nplot written to {args.plot}")
    print(f"\n({time.perf_counter() - started:.1f} s)")
    if not ok:
        print("ERROR: the methods computed different values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
