"""How a journaled step fails: its start cannot be written, its call raises, or its
value cannot be recorded. `ask` and `aask` record each the same way, and none of
them crashes the request.

A theme file, kept here because it crosses modules: both drivers, the scheduler and
the journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from solvi import Catalog, System
from solvi._db import journal_log
from solvi.journal import SQLiteJournal


class Unrecordable:
    """A value with no JSON form."""


def build(journal: Any) -> System:
    cat = Catalog("journal_steps")

    @cat.fn
    async def a(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return x + 1

    @cat.fn
    async def b(x: int) -> Unrecordable:
        return Unrecordable()

    @cat.fn
    async def c(x: int) -> int:
        msg = "no c today"
        raise ValueError(msg)

    @cat.rule
    def uses_a(a: int) -> int:
        return a * 2

    @cat.rule
    def uses_b(b: Unrecordable) -> bool:
        return True

    @cat.rule
    def uses_c(c: int) -> int:
        return c

    return System(cat, journal=journal)


def entries(system: System, request_id: str) -> dict[str, list[tuple[str, str | None]]]:
    """Each part's entries, as (kind, outcome)."""
    assert system.journal is not None
    out: dict[str, list[tuple[str, str | None]]] = {}
    for e in system.journal.load(request_id).entries:
        out.setdefault(e.part, []).append((e.kind, e.outcome))
    return out


def test_each_failure_is_recorded_alike_by_ask_and_aask(tmp_path: Path) -> None:
    system = build(tmp_path / "j.db")
    try:
        by_ask = system.ask({"x": 1}, request_id="sync")
        by_aask = anyio.run(lambda: system.aask({"x": 1}, request_id="async"))
        assert by_aask.hash == by_ask.hash
        assert by_aask["uses_a"].value == 4
        for response in (by_ask, by_aask):
            messages = {s.part: s.message for s in response.safeguards}
            assert messages["b"].startswith("returned a value with no JSON form: b is a ")
            assert messages["c"] == "ValueError: no c today"
        expected = {
            "a": [("started", None), ("settled", "ok")],
            "b": [("started", None), ("settled", "error")],
            "c": [("started", None), ("settled", "error")],
            "uses_a": [("started", None), ("settled", "ok")],
        }
        assert entries(system, "sync") == expected
        assert entries(system, "async") == expected
    finally:
        system.close()


def _starts_a(statements: Any) -> bool:
    return any(params[1:4:2] == ("started", "a") for _, params in statements if len(params) > 3)


class FailsOnce(SQLiteJournal):
    """A journal that cannot commit the started entry of part `a` (a full disk, say):
    neither in its log (NORMAL) nor in the database (FULL)."""

    failed = False

    def __init__(self, path: Path, synchronous: str) -> None:
        super().__init__(path, synchronous=synchronous)
        log = self._log
        if log is None:
            return
        append = log.append

        def append_unless_a(record: bytes) -> tuple[int, int, int]:
            (parsed,), _ = journal_log.parse(record)
            if _starts_a(parsed.statements or ()):
                self.failed = True
                msg = "disk full"
                raise OSError(msg)
            return append(record)

        log.append = append_unless_a  # type: ignore[method-assign]  # the fault injected

    def _write(self, units: list[Any]) -> None:
        items = [item for unit in units for item in getattr(unit, "unit", ())]
        if _starts_a(item for item in items if type(item) is tuple):
            self.failed = True
            msg = "disk full"
            raise OSError(msg)
        super()._write(units)


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
@pytest.mark.parametrize("how", ["ask", "aask"])
def test_a_step_whose_start_cannot_be_written_does_not_run(
    tmp_path: Path, how: str, synchronous: str
) -> None:
    """A start that cannot be written (to the log or the database) keeps its call from
    running; its step fails with the reason, the others run, the journal says so."""
    calls: list[str] = []
    cat = Catalog("unwritable")

    @cat.fn
    async def a(x: int) -> int:
        calls.append("a")
        return x + 1

    @cat.fn
    async def b(x: int) -> int:
        calls.append("b")
        return x - 1

    @cat.rule
    def uses_a(a: int) -> int:
        return a

    @cat.rule
    def uses_b(b: int) -> int:
        return b

    journal = FailsOnce(tmp_path / "j.db", synchronous)
    system = System(cat, journal=journal)
    try:
        if how == "ask":
            response = system.ask({"x": 1}, request_id="r")
        else:
            response = anyio.run(lambda: system.aask({"x": 1}, request_id="r"))
        settled = {e.part: e for e in system.journal.load("r").entries if e.kind == "settled"}
    finally:
        system.close()
    assert journal.failed
    assert "a" not in calls
    (safeguard,) = response.safeguards
    reason = "OSError: disk full"
    if synchronous == "NORMAL":
        owners = tmp_path / "j.db.owners"
        reason = f"JournalError: cannot append to the journal's commit log in {owners}: disk full"
    assert (safeguard.part, safeguard.message) == (
        "a",
        f"was not started: journal could not record the start: {reason}",
    )
    assert response["uses_a"].value is None
    assert response["uses_b"].value == 0
    assert (settled["a"].outcome, settled["a"].message) == ("error", safeguard.message)
