"""Importing a benchmark script by path (benchmarks/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(filename: str) -> Iterator[ModuleType]:
    """Yield `benchmarks/<filename>` imported as a module, and forget it afterwards."""
    name = "solvi_benchmark_" + Path(filename).stem
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / filename)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
