"""The shipped examples still give the verdicts and game metrics stored in the snapshot."""

from __future__ import annotations

from snapshot_examples import SNAPSHOT, collect, render


def test_examples_match_the_snapshot() -> None:
    """Every example's verdicts and game reports equal snapshots/examples.json (make snapshots)."""
    assert SNAPSHOT.read_text(encoding="utf-8") == render(collect()), (
        "the examples' verdicts or game metrics changed; if intended, run `make snapshots`"
        " and review the diff"
    )
