"""The chaos benchmark's quick mode: real processes SIGKILLed while journaled requests run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAOS = ROOT / "benchmarks" / "chaos.py"


def _chaos(*args: str, timeout: float) -> str:
    """Run the benchmark; its output, after checking every row passed."""
    done = subprocess.run(
        [sys.executable, str(CHAOS), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert "| property | count | detail | verdict |" in done.stdout, out
    assert "| FAIL |" not in done.stdout, out
    assert done.returncode == 0, out
    return done.stdout


def test_chaos_quick_run_with_two_kills_passes_every_property() -> None:
    """Two SIGKILLs of a child running concurrent journaled aask calls leave every row PASS."""
    _chaos("--kills", "2", timeout=40)


def test_chaos_quick_run_with_overlapping_processes_passes_every_property() -> None:
    """Each round starts beside the live one before it, which is then SIGKILLed: recovery
    beside a live process claims none of its requests, and every row stays PASS."""
    out = _chaos("--overlap", "--kills", "3", timeout=60)
    assert "each started before the one before was killed" in out
