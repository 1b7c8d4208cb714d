"""`solvi journal prune`: closed requests go, open ones stay, and a wrong journal or
age is one line on standard error with exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from flows import crashy

from solvi import Catalog, System
from solvi.cli import main
from solvi.journal import SQLiteJournal
from solvi.journalcli import seconds_of


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("600", 600.0), ("90s", 90.0), ("30m", 1800.0), ("1.5h", 5400.0), ("7d", 604800.0)],
)
def test_ages_are_read_with_their_units(text: str, seconds: float) -> None:
    assert seconds_of(text) == seconds


def test_prune_forgets_closed_requests_and_says_how_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "j.db"
    system = crashy.build(path)
    for request_id in ("a", "b"):
        system.ask(crashy.STATE, request_id=request_id)
    system.close()

    assert main(["journal", "prune", str(path), "--older-than", "1h"]) == 0
    assert capsys.readouterr().out.endswith("forgot 0 requests closed before 1h ago\n")
    assert main(["journal", "prune", f"sqlite:///{path}", "--older-than", "0"]) == 0
    assert capsys.readouterr().out == (
        f"SQLiteJournal('{path}'): forgot 2 requests closed before 0 ago\n"
    )
    journal = SQLiteJournal(path)
    try:
        assert not journal.has_request("a")
        assert not journal.has_request("b")
    finally:
        journal.close()


def test_a_missing_journal_is_refused_and_not_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.db"
    assert main(["journal", "prune", str(path), "--older-than", "7d"]) == 2
    assert capsys.readouterr().err == (
        f"solvi journal prune: no journal at {path}: name the file a System's journal= writes\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("age", ["7 weeks", "-1d", "d", "1e9", ""])
def test_an_age_that_is_not_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], age: str
) -> None:
    assert main(["journal", "prune", str(tmp_path / "j.db"), f"--older-than={age}"]) == 2
    assert capsys.readouterr().err == (
        f"solvi journal prune: --older-than {age!r} is not an age; write a number of "
        f"seconds, or with a unit: 90s, 30m, 12h, 7d\n"
    )


def test_a_file_that_is_not_a_journal_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A text file, or a SQLite database without a journal (a store given by mistake),
    is refused and left as it was, with nothing made beside it."""
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 100)
    assert main(["journal", "prune", str(path), "--older-than", "7d"]) == 2
    assert capsys.readouterr().err == (
        f"solvi journal prune: {path} is not a SQLite database (file is not a database): "
        f"name the file a System's journal= writes\n"
    )
    assert path.read_text() == "not a database\n" * 100
    store = tmp_path / "store.db"
    cat = Catalog("stored")

    @cat.rule
    def positive(x: int) -> bool:
        return x > 0

    kept = System(cat, store=str(store))
    kept.ask({"x": 1})
    kept.close()
    before = store.read_bytes()
    assert main(["journal", "prune", str(store), "--older-than", "7d"]) == 2
    assert capsys.readouterr().err == (
        f"solvi journal prune: {store} holds no solvi journal (a store keeps one only "
        f"with journal=True): name the file a System's journal= writes\n"
    )
    assert store.read_bytes() == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".owners")]
