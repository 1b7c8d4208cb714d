"""The overhead benchmark itself: every method computes the same answer (timings never asserted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The benchmark module, imported by path."""
    yield from load_benchmark("overhead.py")


def _small_dags(bench: ModuleType) -> list[Any]:
    return [bench.chain(5), bench.fan_in(4), bench.lattice(3, 4, reads=3), bench.lattice(3, 3)]


def _expected(dag: Any) -> int:
    vals = {"x": 1}
    for name, inputs in dag.parts:
        vals[name] = sum(vals[i] for i in inputs) + 1
    return vals["answer"]


def test_every_method_computes_the_expected_answer(bench: ModuleType) -> None:
    """Direct calls, the bare loop, solvi and Hamilton agree with a reference on each DAG."""
    for dag in _small_dags(bench):
        values = bench.final_values(dag)
        assert {"direct", "loop", "solvi"} <= set(values)
        assert set(values.values()) == {_expected(dag)}, dag.name


def test_hamilton_runs_when_installed(bench: ModuleType) -> None:
    """With Hamilton installed (the bench extra), it is one of the methods compared."""
    pytest.importorskip("hamilton")
    assert "hamilton" in bench.final_values(bench.chain(3))


def test_dag_shapes(bench: ModuleType) -> None:
    """The DAGs have the stated sizes and reads, the rule last, in topological order."""
    assert bench.chain(100).steps == 101
    assert bench.fan_in(100).steps == 102
    full, neighbours = bench.lattice(10, 10), bench.lattice(10, 10, reads=3)
    assert full.steps == neighbours.steps == 101
    assert dict(full.parts)["l5_0"] == tuple(f"l4_{j}" for j in range(10))
    assert dict(neighbours.parts)["l5_0"] == ("l4_9", "l4_0", "l4_1")
    for dag in (*bench.standard_dags(), bench.chain(50)):
        seen = {"x"}
        for name, inputs in dag.parts:
            assert set(inputs) <= seen, (dag.name, name)
            seen.add(name)
        assert dag.parts[-1][0] == "answer"


def test_quick_run_prints_tables_and_writes_plot(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quick run on small DAGs prints both tables, reports agreement and writes an SVG."""
    plot = tmp_path / "overhead.svg"
    dags = _small_dags(bench)
    assert bench.main(["--quick", "--plot", str(plot)], dags=dags) == 0
    out = capsys.readouterr().out
    assert "solvi ovh/step" in out
    for dag in dags:
        assert dag.name in out
    assert " NO" not in out
    svg = plot.read_text(encoding="utf-8")
    assert svg.startswith("<svg")
    assert svg.rstrip().endswith("</svg>")


def test_an_earlier_solvi_without_hooks_is_measured_without_that_column(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`against.py` runs this script on earlier commits, whose System takes no `hooks`:
    the `hooked` method is then left out, and the rest is measured as before."""
    real = bench.solvi.System

    def system_before_hooks(catalog: Any, questions: Any = None) -> Any:
        return real(catalog, questions)

    monkeypatch.setattr(bench.solvi, "System", system_before_hooks)
    dags = _small_dags(bench)
    assert "hooked" not in bench.final_values(dags[0])
    assert bench.main(["--quick"], dags=dags) == 0
    out = capsys.readouterr().out
    assert "solvi ovh/step" in out
    assert "with a hook" not in out
