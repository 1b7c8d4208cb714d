"""The chaos benchmark's quick mode: real processes SIGKILLed while journaled requests run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAOS = ROOT / "benchmarks" / "chaos.py"


def test_chaos_quick_run_with_two_kills_passes_every_property() -> None:
    """Two SIGKILLs of a child running concurrent journaled aask calls leave every row PASS."""
    done = subprocess.run(
        [sys.executable, str(CHAOS), "--quick", "--kills", "2"],
        capture_output=True,
        text=True,
        timeout=40,
        check=False,
        cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert "| property | count | detail | verdict |" in done.stdout, out
    assert done.returncode == 0, out
    assert "| FAIL |" not in done.stdout, out


def test_chaos_quick_run_with_overlapping_processes_passes_every_property() -> None:
    """Each round starts beside the live one before it, which is then SIGKILLed: recovery
    beside a live process claims none of its requests, and every row stays PASS."""
    done = subprocess.run(
        [sys.executable, str(CHAOS), "--quick", "--overlap", "--kills", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    out = done.stdout + done.stderr
    assert "each started before the one before was killed" in done.stdout, out
    assert "| FAIL |" not in done.stdout, out
    assert done.returncode == 0, out
