"""The async latency benchmark itself: every method computes the same answer.

Timings are never asserted: they depend on the machine.
"""

from __future__ import annotations

import asyncio
import inspect
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The benchmark module, imported by path."""
    yield from load_benchmark("async_latency.py")


def _tiny(bench: ModuleType) -> Any:
    """Sizes small enough for a test run of about a second."""
    return bench.Settings(
        layers=3,
        width=3,
        delay=0.0005,
        latency_requests=3,
        warmup=1,
        chain=5,
        fan=4,
        step_rounds=2,
        seconds_per_round=0.001,
        requests=10,
    )


def test_expected_value_follows_the_parts(bench: ModuleType) -> None:
    """The reference value: every part returns the sum of its inputs plus 1."""
    assert bench.expected_value(bench.chain(3)) == 5  # x=1: c0=2, c1=3, c2=4, answer=5
    assert bench.expected_value(bench.fan(3)) == 8  # x=1: leaves 2, 2, 2; fsum=7; answer=8


@pytest.mark.parametrize("shape", ["lattice", "chain", "fan"])
def test_every_method_computes_the_expected_answer(bench: ModuleType, shape: str) -> None:
    """Sequential awaits, gather, tasks, aask (both ways) and Hamilton agree on each DAG."""
    dag = {
        "lattice": bench.lattice(3, 4, delay=0.0005),
        "chain": bench.chain(5),
        "fan": bench.fan(4),
    }[shape]
    methods = sorted({*bench.LATENCY_METHODS, *bench.STEP_METHODS})
    values = asyncio.run(bench.final_values(dag, methods))
    assert {"direct", "gather", "tasks", "aask", "aask_speculate", "sleeps"} <= set(values)
    assert values == dict.fromkeys(values, bench.expected_value(dag)), dag.name


def test_hamilton_runs_when_installed(bench: ModuleType) -> None:
    """With Hamilton installed (the bench extra), its async driver is one of the methods."""
    pytest.importorskip("hamilton")
    dag = bench.lattice(2, 2, delay=0.0)
    values = asyncio.run(bench.final_values(dag, ["hamilton"]))
    assert values == {"hamilton": bench.expected_value(dag)}


def test_lattice_shape(bench: ModuleType) -> None:
    """10 layers of 10 reading 2-3 parts of the layer before, a rule on the last layer."""
    dag = bench.lattice(10, 10)
    parts = dict(dag.parts)
    assert dag.steps == 101
    assert len(dag.layers) == 11
    assert dag.floor_ms == pytest.approx(20.0)
    assert all(parts[f"node_0_{j}"] == ("x",) for j in range(10))
    for k in range(1, 10):
        for j in range(10):
            inputs = parts[f"node_{k}_{j}"]
            assert 2 <= len(inputs) <= 3
            assert len(set(inputs)) == len(inputs)
            assert all(i.startswith(f"node_{k - 1}_") for i in inputs)
    assert parts["answer"] == tuple(f"node_9_{j}" for j in range(10))
    seen = {"x"}
    for name, inputs in dag.parts:
        assert set(inputs) <= seen, name
        seen.add(name)


def test_generated_functions_have_real_parameter_names(bench: ModuleType) -> None:
    """Each part is an async def named after it whose parameters name its inputs."""
    dag = bench.lattice(3, 3)
    funcs = bench.make_functions(dag)
    for name, inputs in dag.parts:
        fn = funcs[name]
        assert fn.__name__ == name
        assert inspect.iscoroutinefunction(fn)
        assert tuple(inspect.signature(fn).parameters) == inputs


def test_quick_run_prints_tables_and_writes_plot(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quick run on tiny sizes prints the three tables, reports agreement, writes an SVG."""
    plot = tmp_path / "latency.svg"
    assert bench.main(["--quick", "--plot", str(plot)], settings=_tiny(bench)) == 0
    out = capsys.readouterr().out
    for text in ("median/floor", "solvi aask", "aask ovh/step", "Throughput", "at once"):
        assert text in out
    assert "same value: yes" in out
    assert " NO" not in out
    root = ET.fromstring(plot.read_text(encoding="utf-8"))
    assert root.tag.endswith("svg")
    assert len(root.findall("{http://www.w3.org/2000/svg}rect")) >= 6


def test_a_method_that_disagrees_fails_the_run(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """If one method computed another value, the run says so and exits with status 1."""
    real = bench._gather

    def off_by_one(dag: Any, funcs: Any) -> Callable[[], Awaitable[Any]]:
        gather = real(dag, funcs)

        async def wrong() -> Any:
            return await gather() + 1

        return wrong

    monkeypatch.setattr(bench, "_gather", off_by_one)
    assert bench.main(["--quick"], settings=_tiny(bench)) == 1
    out = capsys.readouterr().out
    assert "same value: NO" in out
