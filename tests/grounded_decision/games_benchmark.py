"""`benchmarks/games.py`, loaded once for the tests that reuse its game generators."""

from __future__ import annotations

from pathlib import Path

from file_modules import import_file

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "games.py"
GAMES = import_file(BENCHMARK, "games_benchmark_module")
