"""`visible`: what a terminal shows of text a stranger wrote: escaped, never acted on,
cut when very long."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvi._terminal import MAX_MARKS, WIDTH, visible


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # retitles the window
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clears the screen
        (
            "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # an OSC 8 link
            "\\x1b]8;;https://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\",
        ),
        ("different\rsame", "different\\rsame"),  # writes "same" over "different"
        ("ring\x07", "ring\\x07"),
        ("same\b\b\b\bdiff", "same\\x08\\x08\\x08\\x08diff"),
        ("a\nfake line", "a\\nfake line"),
        ("a\tb", "a\\tb"),
        ("a\x00b", "a\\x00b"),
        ("x\x9b2Jy", "x\\x9b2Jy"),  # CSI in one byte, for 8-bit terminals
        ("\u202eemas\u202c", "\\u202eemas\\u202c"),  # reads "same"
        ("\u2066a\u2067b\u2068c\u2069", "\\u2066a\\u2067b\\u2068c\\u2069"),
        ("sa\u200bme\u200d\ufeff", "sa\\u200bme\\u200d\\ufeff"),
        ("\u2028", "\\u2028"),
        ("\ud800", "\\ud800"),  # a lone surrogate, which UTF-8 cannot write
        ("tag\U000e0041", "tag\\U000e0041"),
    ],
)
def test_what_acts_on_a_terminal_or_hides_text_is_escaped(text: str, shown: str) -> None:
    """Control, bidi, zero-width, separator and surrogate characters come out as repr
    writes them."""
    assert visible(text) == shown


@pytest.mark.parametrize("text", ["", "approve", "café: 12 €", "日本語", "e\u0301", "\\x1b"])
def test_printable_text_comes_back_unchanged(text: str) -> None:
    """Ordinary text, accents and other scripts included, is shown as it is."""
    assert visible(text) == text


def test_a_long_text_is_cut_with_a_note_of_how_much_was_left_out() -> None:
    """Ten megabytes show as WIDTH characters and a count of the rest."""
    assert visible("A" * 10_000_000) == "A" * WIDTH + "... (9,999,000 more characters)"
    assert visible("A" * WIDTH) == "A" * WIDTH


def test_the_cut_counts_the_escaped_text() -> None:
    """Escapes count towards the width; the note counts characters of the original."""
    assert visible("\x1b" * 300, width=10) == "\\x1b\\x1b... (298 more characters)"


def test_combining_marks_past_the_limit_are_escaped() -> None:
    """100,000 stacked marks cannot paint over the lines around them."""
    shown = visible("e" + "\u0301" * 100_000)
    assert shown.startswith("e" + "\u0301" * MAX_MARKS + "\\u0301\\u0301")
    assert shown.endswith("... (99,831 more characters)")
    assert visible("e" + "\u0301" * MAX_MARKS) == "e" + "\u0301" * MAX_MARKS


def test_anything_else_is_shown_as_str_writes_it() -> None:
    """None and numbers read as an f-string would write them."""
    assert visible(None) == "None"
    assert visible(12.5) == "12.5"


def _no_marks(text: str) -> bool:
    return not any(unicodedata.category(ch) in ("Mn", "Me") for ch in text)


@given(st.text(max_size=200).filter(_no_marks))
def test_escapes_are_those_of_repr(text: str) -> None:
    """Without quotes or backslashes, `visible` writes what repr writes inside its quotes."""
    text = text.replace("\\", "").replace("'", "").replace('"', "")
    assert visible(text) == repr(text)[1:-1]


@given(st.text(), st.integers(min_value=0, max_value=300))
def test_the_shown_text_is_printable_bounded_and_stable(text: str, width: int) -> None:
    """Whatever the text: printable, at most `width` characters before the note, and
    the same when shown again."""
    shown = visible(text, width)
    assert shown.isprintable()
    if len(shown) > width:
        assert shown.endswith(" more characters)")
        assert shown.rindex("... (") <= width
    else:
        assert visible(shown, width) == shown
