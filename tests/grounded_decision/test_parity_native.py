"""The compiled Zielonka against the Python one it mirrors: same regions, strategies and work."""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

import attrs
import pytest
from games_benchmark import GAMES
from gd_strategies import brute_even_wins, games
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision.errors import ParityUnsolved
from grounded_decision.statechart import (
    NO_LIMITS,
    GameGraph,
    Limits,
    _zielonka_native,
    check_certificate,
    parity,
    solve_parity,
)
from grounded_decision.statechart._parity_core import Budget
from grounded_decision.statechart._peel import peel
from grounded_decision.statechart._zielonka_fast import ZielonkaSolver
from grounded_decision.statechart._zielonka_native import NativeZielonka, available

Answer = tuple[list[int], list[int], int]


def _solve(
    solver: type[ZielonkaSolver | NativeZielonka], game: GameGraph, vertices: list[int] | None
) -> Answer:
    budget = Budget(None, None)
    args = (game.successors, game.predecessors, game.owner, game.priority)
    run = solver(*args, budget, vertices)
    deque(run.steps(), maxlen=0)
    winner, strategy = run.answer()
    return winner, strategy, budget.steps


def _python(game: GameGraph, vertices: list[int] | None = None) -> Answer:
    return _solve(ZielonkaSolver, game, vertices)


def _native(game: GameGraph, vertices: list[int] | None = None) -> Answer:
    return _solve(NativeZielonka, game, vertices)


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the kernel hand back to Python after every step, so each pause and resume runs."""
    monkeypatch.setattr(_zielonka_native, "CHUNK", 1)


def test_numba_is_installed_where_the_tests_run() -> None:
    """The lock installs the fast extra, so the compiled solver is what these tests check."""
    assert available()


@settings(max_examples=300, deadline=None)
@given(game=games(two_player=True, max_vertices=14, max_priority=7))
def test_native_equals_python_on_random_games(game: GameGraph) -> None:
    """Winners, strategies and units of work are identical to the Python solver's."""
    assert _native(game) == _python(game)


@settings(max_examples=150, deadline=None)
@given(game=games(two_player=True, max_priority=6))
def test_native_on_the_peeled_core_matches_brute_force(game: GameGraph) -> None:
    """Solving only the core, as solve_parity does, the core's winners are brute force's."""
    core = peel(game.successors, game.predecessors).core
    winner, strategy, _ = _native(game, core)
    assert (winner, strategy) == _python(game, core)[:2]
    expected = brute_even_wins(game)
    assert all((winner[v] == 0) == expected[v] for v in core)


@pytest.mark.usefixtures("tiny_chunks")
@settings(max_examples=100, deadline=None)
@given(game=games(two_player=True, max_vertices=14, max_priority=7))
def test_pausing_after_every_step_changes_nothing(game: GameGraph) -> None:
    """Returning to Python after every step and resuming gives the same answer and work."""
    assert _native(game) == _python(game)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("priorities", [4, None])
def test_native_equals_python_on_seeded_random_games(seed: int, priorities: int | None) -> None:
    """Random games of 3,000 vertices, few or as many priorities as vertices: identical."""
    game = GAMES.random_parity_game(3_000, random.Random(seed), priorities=priorities)
    native = _native(game)
    assert native == _python(game)
    assert check_certificate(game, native[0], native[1]).valid


@pytest.mark.parametrize(
    "label",
    ["counter_core", "ladder", "jurdzinski", "two_counters", "van_dijk", "recursive_ladder"],
)
def test_native_equals_python_on_crafted_families(label: str) -> None:
    """Crafted games that make Zielonka re-solve again and again (deep release stacks)."""
    game = {
        "counter_core": lambda: GAMES.counter_core(7),
        "ladder": lambda: GAMES.ladder(200),
        "jurdzinski": lambda: GAMES.jurdzinski(6, 6),
        "two_counters": lambda: GAMES.two_counters(5),
        "van_dijk": lambda: GAMES.van_dijk_counters(6),
        "recursive_ladder": lambda: GAMES.recursive_ladder(8),
    }[label]()
    assert _native(game) == _python(game)


@pytest.mark.usefixtures("tiny_chunks")
def test_a_crafted_game_paused_at_every_step_matches() -> None:
    """The core counter with a pause after each of its many steps."""
    game = GAMES.counter_core(6)
    assert _native(game) == _python(game)


def test_deep_nesting_grows_the_level_stack() -> None:
    """20,000 nested priorities: far more levels than the stack starts with."""
    n = 20_000
    game = GameGraph(
        names=tuple(f"v{v}" for v in range(n)),
        start=0,
        edges=tuple(((v, "stay", 0.0), (min(v + 1, n - 1), "next", 0.0)) for v in range(n)),
        priority=tuple(range(n)),
        owner=tuple(v % 2 for v in range(n)),
    )
    winner, strategy, steps = _native(game)
    assert winner == list(game.owner)
    assert (winner, strategy, steps) == _python(game)


@pytest.fixture
def native_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let solve_parity take the compiled solver for games of any size."""
    monkeypatch.setattr(parity, "NATIVE_MIN_VERTICES", 1)


@pytest.mark.usefixtures("native_everywhere")
@pytest.mark.parametrize("algorithm", ["zielonka", "auto"])
@settings(max_examples=80, deadline=None)
@given(game=games(two_player=True, max_priority=6))
def test_solve_parity_with_the_compiled_solver_matches_brute_force(
    algorithm: str, game: GameGraph
) -> None:
    """Through solve_parity (peeling, deciding the peeled, auto's race) the answer holds."""
    solution = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    assert check_certificate(game, solution.winner, solution.strategy).valid
    assert tuple(side == 0 for side in solution.winner) == brute_even_wins(game)


@pytest.mark.usefixtures("native_everywhere")
def test_solve_parity_reports_the_same_work_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """ParitySolution.steps is the same whichever Zielonka ran."""
    game = GAMES.random_parity_game(2_000, random.Random(11))
    native = solve_parity(game, NO_LIMITS, algorithm="zielonka")
    monkeypatch.setattr(parity, "available", lambda: False)
    python = solve_parity(game, NO_LIMITS, algorithm="zielonka")
    assert native == python


@pytest.mark.usefixtures("native_everywhere")
def test_a_step_budget_refuses_the_compiled_solver_too() -> None:
    """A parity_steps budget stops the compiled solver with the documented refusal."""
    game = GAMES.counter_core(8)
    with pytest.raises(ParityUnsolved, match=r"Limits\.parity_steps") as caught:
        solve_parity(game, Limits(max_game_vertices=None, parity_steps=50), algorithm="zielonka")
    assert caught.value.setting == "parity_steps"


@pytest.mark.usefixtures("native_everywhere")
def test_without_numba_the_python_solver_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """When numba cannot be imported, solve_parity quietly uses the Python solver."""
    monkeypatch.setattr(parity, "available", lambda: False)
    monkeypatch.setattr(parity, "NativeZielonka", _refuse)
    game = GAMES.random_parity_game(500, random.Random(3))
    solution = solve_parity(game, NO_LIMITS, algorithm="zielonka")
    assert check_certificate(game, solution.winner, solution.strategy).valid


def test_the_compiled_solver_without_numba_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asked for directly without numba, it names the extra to install."""
    monkeypatch.setattr(_zielonka_native, "available", lambda: False)
    game = GAMES.counter_core(2)
    args = (game.successors, game.predecessors, game.owner, game.priority)
    with pytest.raises(RuntimeError, match=r"pip install 'solvi\[fast\]'"):
        NativeZielonka(*args, Budget(None, None), None)


def _refuse(*args: object) -> None:
    msg = "the compiled solver must not run here"
    raise AssertionError(msg)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(50, 400))
def test_native_equals_python_on_larger_random_games(seed: int, n: int) -> None:
    """Random games of up to 400 vertices, out-degree 1 or 2: identical answers and work."""
    game = GAMES.random_parity_game(n, random.Random(seed))
    assert _native(game) == _python(game)


def test_the_benchmark_section_compares_the_two_zielonkas(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`games.py --section compiled --quick` times both on the same cores and finds them equal."""
    status = GAMES.main(["--section", "compiled", "--quick"])
    out = capsys.readouterr().out
    assert status == 0
    rows = [line for line in out.splitlines() if line.startswith(("random", "ladder"))]
    assert len(rows) == 3
    assert all(row.split()[-1] == "yes" for row in rows)


def test_numba_that_cannot_load_the_kernel_warns_and_python_solves(tmp_path: Path) -> None:
    """A process where numba is there but cannot load the kernel (here: a cache locator
    it does not know) says why once and answers with the Python solver."""
    script = tmp_path / "solve.py"
    script.write_text(
        "import random\n"
        "from grounded_decision.statechart import NO_LIMITS, GameGraph, check_certificate\n"
        "from grounded_decision.statechart import fast_solver_available, solve_parity\n"
        "rng = random.Random(1)\n"
        "n = 40_000\n"
        "game = GameGraph(names=tuple(map(str, range(n))), start=0,\n"
        "    edges=tuple(tuple((w, 'm', 0.0) for w in {rng.randrange(n), rng.randrange(n)})\n"
        "                for _ in range(n)),\n"
        "    priority=tuple(rng.randrange(n) for _ in range(n)),\n"
        "    owner=tuple(rng.randint(0, 1) for _ in range(n)))\n"
        "print(fast_solver_available())\n"
        "s = solve_parity(game, NO_LIMITS, algorithm='zielonka')\n"
        "print(check_certificate(game, s.winner, s.strategy).valid)\n"
    )
    env = {**os.environ, "NUMBA_CACHE_LOCATOR_CLASSES": "NoSuchLocator"}
    done = subprocess.run(
        [sys.executable, "-W", "always", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
    assert done.stderr.count("the compiled Zielonka could not be loaded") == 1
    assert "NUMBA_CACHE_DIR" in done.stderr


@pytest.mark.usefixtures("native_everywhere")
def test_a_time_budget_stops_the_compiled_solver_on_an_exponential_game() -> None:
    """Friedmann's ladder of 45 rungs would keep Zielonka busy for ages; parity_seconds
    stops the compiled solver between two chunks of work, with the documented refusal."""
    game = GAMES.recursive_ladder(45)
    limits = Limits(max_game_vertices=None, max_parity_depth=None, parity_seconds=0.2)
    started = time.monotonic()
    with pytest.raises(ParityUnsolved, match=r"Limits\.parity_seconds") as caught:
        solve_parity(game, limits, algorithm="zielonka")
    assert caught.value.setting == "parity_seconds"
    assert time.monotonic() - started < 10


def test_priorities_past_64_bits_are_ordered_as_python_orders_them() -> None:
    """A priority of 2**70 (a GameGraph takes any int) cannot be a machine integer: the
    order is sorted in Python, and the answer and work still equal the Python solver's."""
    base = GAMES.random_parity_game(400, random.Random(5), priorities=6)
    huge = tuple(p + (2**70 if p % 3 == 0 else 0) for p in base.priority)
    game = attrs.evolve(base, priority=huge)
    assert _native(game) == _python(game)


def _signal_a_running_solve(signum: int, expected: type[BaseException]) -> None:
    """Send `signum` to this thread while the kernel solves Friedmann's ladder of 45 rungs
    (which Zielonka would take ages over), and expect `expected` from the solve."""
    game = GAMES.recursive_ladder(45)
    args = (game.successors, game.predecessors, game.owner, game.priority)
    steps = NativeZielonka(*args, Budget(None, None), None).steps()
    deque(itertools.islice(steps, 3), maxlen=0)  # loaded and running
    timer = threading.Timer(0.3, signal.pthread_kill, (threading.get_ident(), signum))
    timer.start()
    try:
        with pytest.raises(expected):
            deque(steps, maxlen=0)
    finally:
        timer.cancel()


def test_ctrl_c_during_the_compiled_solver_is_a_keyboard_interrupt() -> None:
    """Ctrl-C while the kernel runs reaches the caller as KeyboardInterrupt (the CLI then
    says "interrupted"), not as the SystemError numba wraps it in when the signal's handler
    runs in the Python code that hands the kernel's result back."""
    _signal_a_running_solve(signal.SIGINT, KeyboardInterrupt)


class _Alarm(Exception):
    """What the test's own signal handler raises."""


def test_a_signal_handlers_own_exception_comes_out_as_itself() -> None:
    """A program's handler that raises its own exception (a deadline by SIGALRM, say)
    while the kernel runs: the caller gets that exception, not numba's SystemError."""

    def alarm(signum: int, frame: object) -> None:
        raise _Alarm

    before = signal.signal(signal.SIGUSR1, alarm)
    try:
        _signal_a_running_solve(signal.SIGUSR1, _Alarm)
    finally:
        signal.signal(signal.SIGUSR1, before)
