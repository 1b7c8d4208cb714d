"""The crash-resume benchmark in its quick mode, and a smoke run of the journal overhead benchmark.

The crash-resume run starts real processes and kills them with SIGKILL; every
verdict it prints is checked. The overhead run's timings are never asserted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRASH = ROOT / "benchmarks" / "runtime_resume" / "run.py"
OVERHEAD = ROOT / "benchmarks" / "journal_overhead.py"
FAILING = ("VIOLATED", "LOST-SILENT", "GHOST-RUNNING")
VERDICTS = (
    "holds",
    "reconstructed-exact",
    "interrupted-explicit",
    "reconstructed-lossy",
    "not-measured",
    *FAILING,
)


def _run(script: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


def test_crash_resume_quick_run_has_no_failing_verdict() -> None:
    """Every scenario reaches its premise and no row is VIOLATED, LOST-SILENT or GHOST-RUNNING."""
    done = _run(CRASH, timeout=110)
    out = done.stdout
    assert not re.search(r"^ARM INVALID", out, flags=re.MULTILINE), out
    rows = [line for line in out.splitlines() if line.rstrip().endswith(VERDICTS)]
    scenarios = re.findall(r"^== (\w+):", out, flags=re.MULTILINE)
    assert len(scenarios) >= 9, out
    assert len(rows) >= 10 * len(scenarios), out
    bad = [line for line in rows if line.rstrip().endswith(FAILING)]
    assert bad == [], "\n".join(bad)
    assert done.returncode == 0, out + done.stderr
    assert "0 ARM INVALID" in out


def test_journal_overhead_quick_run_answers_the_same_in_every_mode() -> None:
    """Journal off, NORMAL and FULL all run and give one answer and one hash."""
    done = _run(OVERHEAD, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    for mode in ("off", "NORMAL", "FULL"):
        assert re.search(rf"^{mode}\s+\d", done.stdout, flags=re.MULTILINE), done.stdout
    assert "same answer and hash in every mode: True (answer [22])" in done.stdout
