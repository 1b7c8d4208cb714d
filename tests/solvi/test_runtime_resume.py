"""The crash-resume benchmark in its quick mode, and a smoke run of the journal overhead benchmark.

Both run on SQLite, and on PostgreSQL too when SOLVI_TEST_POSTGRES_DSN names a
server (CI starts one). The crash-resume run starts real processes and kills
them with SIGKILL; every verdict it prints is checked, per backend. The
overhead run's timings are never asserted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from stores import DSN_VARIABLE, POSTGRES_DSN

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
#: the journal backends each benchmark must measure in this environment
BACKENDS = ("SQLite", "PostgreSQL") if POSTGRES_DSN is not None else ("SQLite",)
TABLE = re.compile(r"^(SQLite|PostgreSQL) journal \(\w+\): crash-resume verdicts$", re.MULTILINE)


def _run(script: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


def _tables(out: str) -> dict[str, str]:
    """Each backend's verdict table, by its title, up to the next table or the summary."""
    heads = list(TABLE.finditer(out))
    summary = out.find("\nSQLite: ")
    ends = [h.start() for h in heads[1:]] + [summary if summary >= 0 else len(out)]
    return {h.group(1): out[h.end() : end] for h, end in zip(heads, ends, strict=True)}


def test_crash_resume_quick_run_has_no_failing_verdict() -> None:
    """On every backend, every scenario reaches its premise and no row is VIOLATED,
    LOST-SILENT or GHOST-RUNNING."""
    done = _run(CRASH, timeout=110)
    out = done.stdout
    tables = _tables(out)
    assert tuple(tables) == BACKENDS, out + done.stderr
    if POSTGRES_DSN is None:
        assert f"PostgreSQL not measured: set {DSN_VARIABLE}" in out
    for backend, table in tables.items():
        assert not re.search(r"^ARM INVALID", table, flags=re.MULTILINE), table
        rows = [line for line in table.splitlines() if line.rstrip().endswith(VERDICTS)]
        scenarios = re.findall(rf"^== (\w+):.*\[{backend}\]$", table, flags=re.MULTILINE)
        assert len(scenarios) >= 9, table
        assert len(rows) >= 10 * len(scenarios), table
        bad = [line for line in rows if line.rstrip().endswith(FAILING)]
        assert bad == [], f"{backend}:\n" + "\n".join(bad)
        ran = rf"^{backend}: {len(scenarios)} scenario runs \(1 per scenario\), 0 ARM INVALID$"
        assert re.search(ran, out, flags=re.MULTILINE), out
    if "PostgreSQL" in tables:
        # Every PostgreSQL scenario says when the server had ended the dead child's sessions.
        waits = re.findall(r"^after SIGKILL: .*owner lock free", tables["PostgreSQL"], re.M)
        assert len(waits) == len(re.findall(r"^== ", tables["PostgreSQL"], re.M)), out
    assert done.returncode == 0, out + done.stderr


def test_journal_overhead_quick_run_answers_the_same_in_every_mode() -> None:
    """Journal off, SQLite NORMAL and FULL (and PostgreSQL when a server is set) give one
    answer and one hash."""
    done = _run(OVERHEAD, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    modes = ["off", "NORMAL", "FULL"] + (["PostgreSQL"] if POSTGRES_DSN is not None else [])
    for mode in modes:
        assert re.search(rf"^{mode}\s+\d", done.stdout, flags=re.MULTILINE), done.stdout
    if POSTGRES_DSN is None:
        assert f"PostgreSQL not measured: set {DSN_VARIABLE}" in done.stdout
    assert "same answer and hash in every mode: True (answer [22])" in done.stdout
