"""`benchmarks/games.py`, loaded once for the tests that reuse its game generators."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "games.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("games_benchmark_module", BENCHMARK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


GAMES = _load()
