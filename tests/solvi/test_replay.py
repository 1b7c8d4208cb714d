"""Replay: same answers, differences named, other versions refused, timeouts not re-run."""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from flows.echo import HOSTILE, HOSTILE_SHOWN, echo_system
from flows.loans import loans_system
from stores import Backend

from solvi import Catalog
from solvi._targets import load_attribute
from solvi.replay import Difference, ReplayResult, replay, replay_store
from solvi.storage import MissingRecordError, Store, open_store
from solvi.storecli import add_store_commands
from solvi.system import System

FLOWS = Path(__file__).resolve().parent / "flows"
TARGET = f"{FLOWS / 'loans.py'}:system"
ADULT = {"applicant": {"age": 30, "income": 60_000}}
MINOR = {"applicant": {"age": 16, "income": 60_000}}


@pytest.fixture
def settings() -> dict[str, Any]:
    """What the loans parts read: the approval limit and the bureau's delay."""
    return {"limit": 40, "bureau_delay": 0.0}


@pytest.fixture
def loans(settings: dict[str, Any]) -> System:
    """The loans System reading `settings`."""
    return loans_system(settings)


def test_replay_of_an_unchanged_system_is_the_same(store: Store, loans: System) -> None:
    """A stored request replayed by id, with nothing changed, has no difference."""
    store.save_response(loans.ask(ADULT).record, request_id="a")
    assert replay(loans, "a", store=store) == ReplayResult("a", same=True)
    assert replay(loans, store.get_record("a")) == ReplayResult(None, same=True)


def test_replay_runs_async_parts_and_honours_early_exit(loans: System) -> None:
    """The async part runs again in a loop of its own; a forced answer replays as forced."""
    record = loans.ask(MINOR).record
    assert record["answers"]["approve"]["status"] == "forced"
    assert "rate" not in record["values"]
    whole = loans.ask(MINOR, early_exit=False).record
    assert whole["values"]["rate"] == 0.05
    assert replay(loans, record).same
    assert replay(loans, whole).same


def test_a_changed_part_shows_as_answer_value_and_hash_differences(
    store: Store, loans: System, settings: dict[str, Any]
) -> None:
    """Raising the limit after recording flips `approve`; replay names all three kinds."""
    store.save_response(loans.ask(ADULT).record, request_id="a")
    settings["limit"] = 60
    result = replay(loans, "a", store=store)
    assert not result.same
    assert result.refused is None
    stored = {"status": "decided", "value": True, "reason": "rule approve", "guard": None}
    assert result.differences[:2] == (
        Difference("answer", "approve", stored, {**stored, "value": False}),
        Difference("value", "approve", True, False),
    )
    assert [d.kind for d in result.differences] == ["answer", "value", "hash"]
    assert str(result.differences[1]) == "value approve: stored true, replayed false"


def test_a_record_of_another_catalog_version_is_refused(
    loans: System, settings: dict[str, Any]
) -> None:
    """A record from a catalog with another shape is refused, naming both versions."""
    newer = loans_system(settings, extra=True)
    assert newer.version != loans.version
    result = replay(newer, loans.ask(ADULT).record)
    assert (result.same, result.differences) == (False, ())
    assert result.refused == (
        f"the record is from catalog version {loans.version}, this System runs version "
        f"{newer.version}; replay it with the catalog as it was then"
    )


def test_a_record_of_another_catalog_is_refused(loans: System) -> None:
    """A record whose catalog has another name is refused, not compared."""
    record = dict(loans.ask(ADULT).record, catalog="claims")
    refused = replay(loans, record).refused
    assert refused is not None
    assert refused.startswith("the record is from catalog 'claims', this System answers")


def test_a_timed_out_step_is_not_rerun_and_everything_is_compared(
    loans: System, settings: dict[str, Any]
) -> None:
    """A step that timed out when recorded takes its recorded outcome; answers, values,
    steps and the hash are all compared, and match."""
    # Far past the 0.05 s timeout: a result that lands before its waiter wakes stands
    # (as under aask), so a busy machine waking it 0.15 s late gave a decided answer.
    settings["bureau_delay"] = 5
    record = loans.ask(ADULT).record
    assert record["answers"]["clean_record"]["guard"] == "timeout"
    # Called again, the bureau would now raise (a negative sleep): it must not be called.
    settings["bureau_delay"] = -1
    result = replay(loans, record)
    assert result == ReplayResult(None, same=True, not_rerun=("bureau",))
    settings["limit"] = 60
    changed = replay(loans, record)
    assert [(d.kind, d.name) for d in changed.differences] == [
        ("answer", "approve"),
        ("value", "approve"),
        ("hash", "hash"),
    ]
    assert changed.not_rerun == ("bureau",)


def test_replay_by_id_needs_a_store(loans: System) -> None:
    """A request id without a store raises ValueError saying where to pass one."""
    with pytest.raises(ValueError, match="needs a store: pass store="):
        replay(loans, "a")


def test_replay_of_an_unknown_id_raises_lookup_error(store: Store, loans: System) -> None:
    """An id that was never stored raises MissingRecordError."""
    with pytest.raises(MissingRecordError):
        replay(loans, "nope", store=store)


def test_replay_rejects_what_is_not_a_record(loans: System) -> None:
    """A mapping without a record's keys raises ValueError naming what is missing."""
    with pytest.raises(ValueError, match=r"not a decision record \(it has no catalog_version"):
        replay(loans, {"catalog": "loans"})


def test_replay_store_summarises_same_different_and_refused(
    store: Store, loans: System, settings: dict[str, Any]
) -> None:
    """replay_store replays the catalog's records in order and counts each outcome."""
    store.save_response(loans.ask(ADULT).record, request_id="adult")
    store.save_response(loans.ask(MINOR).record, request_id="minor")
    old = loans_system(settings, extra=True)
    store.save_response(old.ask(ADULT).record, request_id="old")
    settings["limit"] = 60
    summary = replay_store(loans, store)
    assert [r.request_id for r in summary.results] == ["adult", "minor", "old"]
    assert (summary.same, summary.different, summary.refused, summary.ok) == (1, 1, 1, False)
    text = str(summary).splitlines()
    assert text[0] == (
        f"replayed 3 records of catalog loans (version {loans.version}): 1 same, "
        f"1 different, 1 refused"
    )
    assert text[1].startswith("  adult: answer approve: stored ")
    assert text[-1].startswith(f"  old: refused: the record is from catalog version {old.version}")


def test_replay_store_since_takes_only_later_records(store: Store, loans: System) -> None:
    """since= replays only the records stored at or after that time."""
    store.save_response(loans.ask(ADULT).record, request_id="early")
    cut = dt.datetime.now(dt.UTC)
    store.save_response(loans.ask(MINOR).record, request_id="late")
    summary = replay_store(loans, store, since=cut)
    assert [r.request_id for r in summary.results] == ["late"]
    assert summary.ok


@pytest.fixture
def target_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The loans module as `solvi replay` loads it; its SETTINGS, restored afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    settings: dict[str, Any] = load_attribute(f"{FLOWS / 'loans.py'}:SETTINGS")
    saved = dict(settings)
    yield settings
    settings.update(saved)
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="solvi")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


def test_replay_command_exits_0_then_1_after_a_change(
    db: Backend, target_module: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """`solvi replay module:system --store S` exits 0 when all match, 1 on a difference."""
    system: System = load_attribute(TARGET)
    store = db.open()
    store.save_response(system.ask(ADULT).record, request_id="a")
    store.save_response(system.ask(MINOR).record, request_id="m")
    store.close()
    assert _cli(["replay", TARGET, "--store", db.spec]) == 0
    assert capsys.readouterr().out == (
        f"replayed 2 records of catalog loans (version {system.version}): 2 same, "
        f"0 different, 0 refused\n"
    )
    target_module["limit"] = 60
    assert _cli(["replay", TARGET, "--store", db.spec]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("  a: answer approve: stored ")
    assert out[-1] == (
        f"replayed 2 records of catalog loans (version {system.version}): 1 same, "
        f"1 different, 0 refused"
    )
    since = dt.datetime.now(dt.UTC).isoformat()
    assert _cli(["replay", TARGET, "--store", db.spec, "--since", since]) == 0
    assert "replayed 0 records" in capsys.readouterr().out


def test_replay_command_explains_what_is_missing(
    tmp_path: Path, target_module: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """No store, a bad --since, a bad target or no store file: exit 2 with one line."""
    assert _cli(["replay", TARGET]) == 2
    assert "has no store; pass --store STORE" in capsys.readouterr().err
    assert _cli(["replay", TARGET, "--store", str(tmp_path / "x.db"), "--since", "May"]) == 2
    assert "--since 'May' is not an ISO 8601 time" in capsys.readouterr().err
    assert _cli(["replay", f"{FLOWS / 'loans.py'}:nothing", "--store", "x.db"]) == 2
    assert capsys.readouterr().err.startswith("solvi replay: ")
    missing = tmp_path / "none.db"
    assert _cli(["replay", TARGET, "--store", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"solvi replay: no SQLite store at {str(missing)!r}: no such file; give the path of "
        f"a store a System wrote (System(store=...))\n"
    )
    assert not missing.exists()


def test_nan_and_infinite_inputs_replay_as_floats(store: Store) -> None:
    """A record keeps NaN and the infinities as ``$float`` objects; the replay gives the
    part the float again, so the answers are the same."""
    cat = Catalog("limits")

    @cat.rule
    def unbounded(cap: float) -> bool:
        return math.isinf(cap) or math.isnan(cap)

    system = System(cat, store=store)
    for i, cap in enumerate((math.nan, math.inf, -math.inf, 2.5)):
        res = system.ask({"cap": cap}, request_id=f"cap-{i}")
        assert res["unbounded"].value is (i < 3)
        assert replay(system, f"cap-{i}", store=store).same


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "nests too deeply to be read"),
        ('{"answers": NaN}', "holds a bare NaN, which solvi never writes"),
        ("[1, 2]", "is not a JSON object (it is list)"),
    ],
)
def test_a_damaged_row_is_refused_and_the_replay_goes_on(
    tmp_path: Path, loans: System, text: str, why: str
) -> None:
    """A stored record whose text is no JSON object is refused in its place; the records
    after it are still replayed."""
    path = tmp_path / "decisions.db"
    store = open_store(path)
    for request_id in ("first", "broken", "last"):
        store.save_response(loans.ask(ADULT).record, request_id=request_id)
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE solvi_responses SET record = ? WHERE request_id = 'broken'", (text,))
    db.close()
    store = open_store(path)
    summary = replay_store(loans, store)
    store.close()
    assert [(r.request_id, r.same) for r in summary.results] == [
        ("first", True),
        ("broken", False),
        ("last", True),
    ]
    refused = summary.results[1].refused
    assert refused is not None
    assert refused.startswith(f"the stored record of request 'broken' {why}")
    assert refused.endswith("run `solvi audit verify` on the store")


def test_an_answer_difference_shows_the_fields_that_differ(
    store: Store, loans: System, settings: dict[str, Any]
) -> None:
    """Only the differing fields of an answer are printed, so a cut never hides them."""
    store.save_response(loans.ask(ADULT).record, request_id="adult")
    settings["limit"] = 60
    (difference, *_) = replay(loans, "adult", store=store).differences
    assert str(difference) == 'answer approve: stored {"value": true}, replayed {"value": false}'


def test_replay_lines_show_what_a_stranger_wrote_escaped() -> None:
    """A request id and a step's error holding escape sequences, a carriage return, a
    bidi override and a line break print escaped, each difference on its own line:
    none can move the cursor, retitle the window or pass for another line."""
    record = echo_system().ask({"text": HOSTILE}).record
    result = attrs.evolve(replay(echo_system("x"), record), request_id="r-" + HOSTILE)
    lines = result.lines()
    s = HOSTILE_SHOWN
    assert lines[4:6] == [
        f"  r-{s}: step checked: stored ran (error: ValueError: {s}), replayed ran (error: "
        f"ValueError: x{s})",
        f"  r-{s}: step mood: stored skipped (inputs missing: checked (checked raised "
        f"ValueError: {s})), replayed skipped (inputs missing: checked (checked raised "
        f"ValueError: x{s}))",
    ]
    assert len(lines) == len(result.differences) == 7
    assert all(line.isprintable() for line in lines)


def test_replay_lines_cut_a_very_long_request_id_and_message() -> None:
    """Ten megabytes in a request id or an error message print as 1,000 characters and
    a count of the rest."""
    stored = {"outcome": "error", "message": "A" * 10_000_000}
    difference = Difference("step", "checked", stored, {"outcome": "ok", "message": None})
    result = ReplayResult("B" * 10_000_000, same=False, differences=(difference,))
    assert result.lines() == [
        f"  {'B' * 1000}... (9,999,000 more characters): step checked: stored ran (error: "
        f"{'A' * 1000}... (9,999,000 more characters)), replayed ran (ok)"
    ]


def test_a_refusal_and_an_altered_hash_from_a_record_are_shown_escaped(loans: System) -> None:
    """A record whose catalog version and hash were edited to hold escape sequences is
    refused, and reported altered, in text that shows them escaped."""
    record = dict(loans.ask(ADULT).record, catalog_version="\x1b[2J\x1b]0;x\x07")
    (line,) = ReplayResult("r", same=False, refused=replay(loans, record).refused).lines()
    assert line == (
        "  r: refused: the record is from catalog version \\x1b[2J\\x1b]0;x\\x07, this "
        f"System runs version {loans.version}; replay it with the catalog as it was then"
    )
    altered = Difference("altered", "hash", "\x1b[2J\x1b[H" + "0" * 64, "f" * 64)
    assert str(altered) == (
        "altered hash: the record carries \\x1b[2J\\x1b[H000000000, its content gives "
        + "f" * 16
        + " (it was edited after it was made)"
    )


def test_a_refusal_names_the_parts_the_catalog_no_longer_has(
    store: Store, settings: dict[str, Any]
) -> None:
    """A record of another version names the parts of its flow this catalog lacks."""
    old = loans_system(settings, extra=True)
    record = dict(old.ask(ADULT).record)
    record["flow"] = [*record["flow"], "note"]
    store.save_response(record, request_id="old")
    refused = replay(loans_system(settings), "old", store=store).refused
    assert refused is not None
    assert "(this catalog has no part 'note')" in refused


def test_replay_strict_fails_when_nothing_was_compared(
    db: Backend, target_module: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """With --strict a refused record, or no record at all, is exit status 1."""
    store = db.open()
    old = loans_system(dict(target_module), extra=True)
    store.save_response(old.ask(ADULT).record, request_id="old")
    store.close()
    assert _cli(["replay", TARGET, "--store", db.spec]) == 0
    assert _cli(["replay", TARGET, "--store", db.spec, "--strict"]) == 1
    assert "0 same, 0 different, 1 refused" in capsys.readouterr().out
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat()
    assert _cli(["replay", TARGET, "--store", db.spec, "--since", later]) == 0
    assert _cli(["replay", TARGET, "--store", db.spec, "--since", later, "--strict"]) == 1
    assert "replayed 0 records" in capsys.readouterr().out
