"""Reading PGSolver files into arrays: the compiled reader gives what the Python reader gives,
and every other file (or every file, without numba) is left to the Python reader."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
from gd_strategies import games
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision.statechart import (
    GameGraph,
    PgsolverFormatError,
    _zielonka_native,
    pgsolver,
    write_pgsolver,
)
from grounded_decision.statechart.arrays import ArrayGame, read_pgsolver_arrays
from grounded_decision.statechart.pgsolver import read_pgsolver_with_ids

Read = tuple[ArrayGame, Any]


def _read(text: str | bytes, *, compiled: bool = True) -> tuple[Read, bool]:
    """``read_pgsolver_arrays(text)``, and whether it called the Python reader; with
    ``compiled=False`` as if numba were not installed."""
    calls: list[str] = []
    python_reader = pgsolver.read_pgsolver_with_ids

    def spy(source: str) -> tuple[GameGraph, tuple[int, ...]]:
        calls.append(source)
        return python_reader(source)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pgsolver, "read_pgsolver_with_ids", spy)
        if not compiled:
            patch.setattr(_zielonka_native, "available", lambda: False)
        result = read_pgsolver_arrays(text)
    return result, bool(calls)


def _python(text: str) -> Read:
    """What the Python reader makes of the file, as arrays."""
    game, ids = read_pgsolver_with_ids(text)
    return ArrayGame.from_game(game), np.array(ids, dtype=np.int64)


def _assert_same(got: Read, expected: Read) -> None:
    """The same game (arrays, dtypes and start) and the same file ids."""
    (game, ids), (want, want_ids) = got, expected
    for field in ("owner", "priority", "offsets", "targets"):
        mine, theirs = getattr(game, field), getattr(want, field)
        assert mine.dtype == theirs.dtype, field
        assert mine.tolist() == theirs.tolist(), field
    assert game.start == want.start
    assert ids.dtype == np.int64
    assert ids.tolist() == want_ids.tolist()


def _escaped(name: str) -> str:
    """A name as a file quotes it, written here independently of the writer."""
    for raw, escape in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r")):
        name = name.replace(raw, escape)
    return f'"{name}"'


def test_numba_is_there_so_the_compiled_reader_is_tested() -> None:
    """The fast extra is installed where the tests run."""
    assert _zielonka_native.available()


@settings(max_examples=150, deadline=None)
@given(
    games(two_player=True, max_priority=6),
    st.lists(st.text(max_size=8), min_size=10, max_size=10),
)
def test_a_written_file_is_read_compiled_as_the_python_reader_reads_it(
    game: GameGraph, names: list[str]
) -> None:
    """Names of any text (quotes, backslashes, line breaks escaped, non-ASCII) are skipped;
    the arrays and ids are the Python reader's, from str or bytes, with numba or without."""
    game = attrs.evolve(game, names=tuple(names[: len(game)]))
    text = write_pgsolver(game)
    expected = _python(text)
    for source in (text, text.encode("utf-8")):
        got, fell_back = _read(source)
        assert not fell_back
        _assert_same(got, expected)
        got, _ = _read(source, compiled=False)
        _assert_same(got, expected)


_BLANK = st.sampled_from([" ", "  ", "\t", " \t "])
_MAYBE = st.sampled_from(["", " ", "\t"])
_COMMA = st.sampled_from([",", " ,", ", ", " , ", "\t,\t"])


@st.composite
def plain_files(draw: st.DrawFn) -> str:
    """Valid files in the plain form, written by hand: ids sparse and shuffled, a bound
    above the largest id, a start line or not, repeated successors, leading zeros, blanks
    where the format allows them, names or not, a final line end or not."""
    n = draw(st.integers(1, 8))
    ids = draw(st.lists(st.integers(0, 3 * n + 3), min_size=n, max_size=n, unique=True))
    bound = max(ids) + draw(st.integers(0, 3))
    lines = [f"{draw(_MAYBE)}parity{draw(_BLANK)}{bound}{draw(_MAYBE)};{draw(_MAYBE)}"]
    if draw(st.booleans()):
        lines.append(f"start{draw(_BLANK)}{draw(st.sampled_from(ids))};")
    for ident in draw(st.permutations(ids)):
        priority = str(draw(st.integers(0, 10**18 - 1)))
        if len(priority) < 18 and draw(st.booleans()):
            priority = "0" + priority
        owner = draw(st.sampled_from(["0", "1", "00", "01"]))
        targets = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=6))
        moves = str(targets[0])
        for target in targets[1:]:
            moves += f"{draw(_COMMA)}{target}"
        name = ""
        if draw(st.booleans()):
            name = draw(_MAYBE) + _escaped(draw(st.text(max_size=6)))
        lines.append(
            f"{draw(_MAYBE)}{ident}{draw(_BLANK)}{priority}{draw(_BLANK)}{owner}{draw(_BLANK)}"
            f"{moves}{name}{draw(_MAYBE)};{draw(_MAYBE)}"
        )
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@settings(max_examples=300, deadline=None)
@given(plain_files())
def test_sparse_shuffled_ids_a_start_and_repeated_moves_read_as_the_python_reader_does(
    text: str,
) -> None:
    """Renumbering by increasing id, the start, and each vertex's distinct successors in
    the order first listed are the Python reader's, read by the compiled reader."""
    expected = _python(text)
    got, fell_back = _read(text)
    assert not fell_back
    _assert_same(got, expected)
    got, _ = _read(text, compiled=False)
    _assert_same(got, expected)


# Every malformed game file of test_pgsolver.py, and a few more at the edges of the plain
# form: a successor or a start above the bound, ids past the file's length, raw line breaks
# in names, text after the ';'.
BAD_FILES = [
    "",
    "parity 1;\n0 0 0 1;\n1 0 x 0;\n",
    "parity 1;\n0 0 2 0;\n",
    "parity 1;\n0 0 0 0;\n0 1 1 0;\n",
    "parity 0;\n0 0 0 0;\n1 0 0 0;\n",
    "parity 1;\n\n0 0 0 1;\n",
    "parity 1;\n0 0 0 0\n",
    "parity 1;\n",
    "parity 1;\nstart 5;\n0 0 0 0;\n",
    "parity 1;\n0 0 0 0,,0;\n",
    "parity 1;\n0 0 0 1 0;\n",
    'parity 0;\n0 0 0 0 "open;\n',
    'parity 0;\n0 0 0 0 "a\\";\n',
    'parity 0;\n0 0 0 0 "a" b;\n',
    "parity 0;\n0 0 0 ٣;\n",
    "parity " + "9" * 5000 + ";\n0 0 0 0;\n",
    "parity 1;\n0 0 0 " + "1" * 19 + ";\n",
    "parity 1;\f\n0 0 0 0;\x85\n1 0 x 0;\n",
    "parity 1;\r\n\r\n0 0 2 0;\r\n",
    "parity 1;\n0 1 0 1;\n1 2 1;\n",
    'parity 1;\n0 1 0 1;\n1 2 1 "end";\n',
    "parity 1;\n0 -1 0 1;\n1 2 1 0;\n",
    "parity 1;\n0 +1 0 1;\n1 2 1 0;\n",
    "parity 1;\n0 1 -1 1;\n1 2 1 0;\n",
    "parity 1;\n0 1 0 +1;\n1 2 1 0;\n",
    "parity -1;\n0 1 0 0;\n",
    "parity 1;\r0 0 0 1;\r1 0 x 0;",
    "parity 1;\n0 1 0 1;\n1 0 0 2;\n",
    "parity 1;\nstart 2;\n0 0 0 1;\n1 0 0 0;\n",
    "parity 1;\n0 0 0 1;\n1 0 0 0;\nstart 1;\n",
    "parity 1;\nstart 0;\nstart 0;\n0 0 0 1;\n1 0 0 0;\n",
    "parity 99999;\n0 0 0 1;\n99999 0 0 0;\n",
    "parity 1;\n0 0 0 1;\n1 0 0 0;x\n",
    "parity 1;\n0 0 0 1;\n1 0 0 0,;\n",
    "parity 1;\n0 0 0 1;\n1 0 0 ,0;\n",
    "parity 1;\n0 0 0 1;\n1 0 0 0 1;\n",
    'parity 1;\n0 0 0 1 "a\nb";\n1 0 0 0;\n',
    'parity 1;\n0 0 0 1 "a\rb";\n1 0 0 0;\n',
    'parity 1;\n0 0 0 1 "a\\\nb";\n1 0 0 0;\n',
    'parity 1;\n0 0 0 1 "a";;\n1 0 0 0;\n',
    "parity 1;\n0 0 0 1;\n1 0 0 0",
    "parity 1;\n0 0 0 1;\n1 0 0 0;\n\n2 0 0 0;\n",
    "parity1;\n0 0 0 0;\n",
    "parity 1 2;\n0 0 0 0;\n",
    "paritysol 1;\n0 0 0 0;\n",
    "parity 0;\n0 0 0x 0;\n",
    "parity 0;\n0 0 0 0x;\n",
]


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "no-numba"])
@pytest.mark.parametrize("text", BAD_FILES)
def test_a_bad_file_raises_the_python_readers_error(text: str, compiled: bool) -> None:
    """The same PgsolverFormatError, message and line, from str or from bytes."""
    with pytest.raises(PgsolverFormatError) as expected:
        read_pgsolver_with_ids(text)
    for source in (text, text.encode("utf-8")):
        with pytest.raises(PgsolverFormatError) as caught:
            _read(source, compiled=compiled)
        assert str(caught.value) == str(expected.value)
        assert caught.value.line == expected.value.line


# Files the Python reader reads but the compiled reader leaves to it.
OTHER_FORMS = {
    "CRLF": 'parity 2;\r\nstart 2;\r\n2 1 1 0,2;\r\n0 2 0 2 "a";\r\n',
    "CR": 'parity 2;\rstart 2;\r2 1 1 0,2;\r0 2 0 2 "a";\r',
    "byte order mark": "\ufeffparity 1;\n0 0 0 1;\n1 1 1 0;\n",
    "blank line": "parity 1;\n\n0 0 0 1;\n1 1 1 0;\n",
    "blank line at the end": "parity 1;\n0 0 0 1;\n1 1 1 0;\n\n",
    "blanks at the end": "parity 1;\n0 0 0 1;\n1 1 1 0;\n   ",
    "start after a blank line": "parity 1;\n\nstart 1;\n0 0 0 1;\n1 1 1 0;\n",
    "comments": "# a game\nparity 1;\n0 0 0 1;\n  # the other vertex\n1 1 1 0;\n",
    "form feed between words": "parity 1;\n0\f0 0 1;\n1\v1 1 0;\n",
    "other white space": "parity 1;\n0\u30000 0 1;\x85\n1 1 1 0;\u00a0\n",
    "unit separator": "parity 1;\n0\x1f0 0 1;\n1 1 1 0;\n",
    "bound past the file's length": "parity 1000000;\n7 0 0 1000000;\n1000000 1 1 7,7;\n",
}


@pytest.mark.parametrize("text", OTHER_FORMS.values(), ids=list(OTHER_FORMS))
def test_other_forms_the_python_reader_accepts_are_read_through_it(text: str) -> None:
    """Line ends other than LF, a byte order mark, blank and comment lines, other white
    space and very sparse ids: the compiled reader declines, the Python reader reads."""
    expected = _python(text)
    for source in (text, text.encode("utf-8")):
        got, fell_back = _read(source)
        assert fell_back
        _assert_same(got, expected)
        got, _ = _read(source, compiled=False)
        _assert_same(got, expected)


def test_non_ascii_names_are_read_compiled_from_str_and_from_utf8_bytes() -> None:
    """A name's non-ASCII characters, a lone surrogate among them, are skipped like any."""
    text = 'parity 1;\n0 0 0 1 "é ✓ \U0001f600";\n1 0 1 0 "\ud800";\n'
    expected = _python(text)
    got, fell_back = _read(text)
    assert not fell_back
    _assert_same(got, expected)
    got, fell_back = _read(text.replace("\ud800", "x").encode("utf-8"))
    assert not fell_back
    _assert_same(got, expected)


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "no-numba"])
def test_bytes_that_are_not_utf8_are_refused(compiled: bool) -> None:
    """Even inside a name, where the compiled reader would never look at them."""
    with pytest.raises(UnicodeDecodeError):
        _read(b'parity 0;\n0 0 0 0 "\xff";\n', compiled=compiled)
    with pytest.raises(UnicodeDecodeError):
        _read(b"parity 0;\n0 0 0 \xc3;\n", compiled=compiled)


def test_neither_str_nor_bytes_is_a_type_error() -> None:
    """A bytearray or a memoryview is refused, naming what was given."""
    with pytest.raises(TypeError, match="takes the file's text as str or its UTF-8 bytes"):
        read_pgsolver_arrays(bytearray(b"parity 0;\n0 0 0 0;\n"))  # type: ignore[arg-type]


def test_a_large_written_game_reads_back_equal() -> None:
    """200,000 vertices with one to three moves each, written and read back compiled."""
    rng = np.random.default_rng(7)
    n = 200_000
    degree = rng.integers(1, 4, size=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, out=offsets[1:])
    vertex = np.repeat(np.arange(n), degree)
    slot = np.arange(offsets[-1]) - offsets[vertex]
    targets = (vertex + np.array([1, 17, 40_000])[slot]) % n  # distinct per vertex
    game = ArrayGame(
        rng.integers(0, 2, size=n),
        rng.integers(0, 10**12, size=n),
        offsets,
        targets,
        start=123_456,
    )
    text = write_pgsolver(game)
    (read, ids), fell_back = _read(text)
    assert not fell_back
    _assert_same((read, ids), (game, np.arange(n, dtype=np.int64)))
