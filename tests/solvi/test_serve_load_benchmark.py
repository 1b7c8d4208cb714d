"""The serve load benchmark: a real `solvi serve` child on loopback, loaded and stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVE_LOAD = ROOT / "benchmarks" / "serve_load.py"


def test_serve_load_answers_every_request_of_a_small_run() -> None:
    """A small run against the claims example answers all its requests and stops the server."""
    pytest.importorskip("uvicorn")
    done = subprocess.run(
        [
            sys.executable,
            str(SERVE_LOAD),
            "--quick",
            "--connections",
            "5",
            "--total",
            "20",
            "examples/claims.py:system",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("examples/")]
    assert row.split()[1:4] == ["5", "20", "0"], out
