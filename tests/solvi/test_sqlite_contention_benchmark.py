"""benchmarks/sqlite_contention.py runs both ways to the lock end to end (nothing timed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "sqlite_contention.py"


def _quick_run(*flags: str) -> dict[str, Any]:
    """The samples of one quick run (it exits 0: every probe went as the script checks)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", *flags, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(runs) == ["solvi", "sqlite"]
    return runs


def test_a_quick_run_probes_beside_a_busy_process_in_both_modes() -> None:
    """Every probe of an unknown id is refused (the script checks), in both modes, and
    the samples come back per mode and round."""
    for rounds in _quick_run("--probes", "5").values():
        (one,) = rounds
        assert len(one["resume"]) == len(one["status"]) == 5
        assert one["elapsed"] > 0


def test_a_flat_out_run_also_prunes_beside_the_busy_process() -> None:
    """With --flat-out the busy child answers without sleeping and the prober prunes too;
    every prune returns (none fails on the file's lock)."""
    for rounds in _quick_run("--flat-out", "--probes", "3").values():
        (one,) = rounds
        assert len(one["resume"]) == len(one["status"]) == len(one["prune"]) == 3
