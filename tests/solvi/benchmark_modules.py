"""Importing a benchmark script by path (benchmarks/ is not a package)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from file_modules import import_file

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(filename: str) -> Iterator[ModuleType]:
    """Yield `benchmarks/<filename>` imported as a module, and forget it afterwards."""
    name = "solvi_benchmark_" + Path(filename).stem
    try:
        yield import_file(BENCHMARKS / filename, name)
    finally:
        sys.modules.pop(name, None)
