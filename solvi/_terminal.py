"""Text a stranger wrote, made safe to print on a terminal.

Request values, request ids, part error messages and whatever else a record or a
store holds come from HTTP clients. Printed as they are, ``ESC [ 2 J`` clears the
screen, ``ESC ] 0 ; ... BEL`` retitles the window, a carriage return or backspaces
write over what a line said, a bidi override (U+202E) or a zero-width character
makes text read other than it is, and ten megabytes flood the terminal. The
human-readable output of `solvi show`, `solvi replay` and `solvi audit verify`
passes such text through `visible`; JSON output, records and hashes keep it exact.
"""

from __future__ import annotations

import unicodedata
from typing import Final

__all__ = ["MAX_MARKS", "WIDTH", "visible"]

#: how many characters of one value a line shows before it is cut: a request id (at
#: most 1,000 characters) shows whole, ten megabytes do not
WIDTH: Final = 1000
#: combining marks shown on one character: enough for any script, while 100,000
#: stacked marks would paint over the lines around them
MAX_MARKS: Final = 4

_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_MARKS: Final = frozenset({"Mn", "Me"})


def _escape(ch: str) -> str:
    """A character as Python's repr writes it when it does not print it."""
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: object, width: int = WIDTH) -> str:
    """`text` as a terminal should show it: nothing in it acts on the terminal, and
    nothing in it is hidden.

    Every character Python does not print (`str.isprintable`: control characters,
    format characters such as the bidi controls U+202A-U+202E and U+2066-U+2069 and
    the zero-width ones, lone surrogates, separators other than the space) is
    written as `repr` writes it (``\\x1b``, ``\\r``, ``\\u202e``); so is each
    combining mark past `MAX_MARKS` on one character. Text longer than `width`
    characters, once escaped, is cut there and ends with ``... (N more
    characters)``, N counted in the original text. Printable text within `width`
    comes back unchanged, and so does text already passed through `visible`.

    Args:
        text: the text to show (anything else is shown as `str` writes it, as an
            f-string would).
        width: the most characters shown before the cut (the note comes on top).

    Returns:
        The text to print.
    """
    if not isinstance(text, str):
        text = str(text)
    if len(text) <= width and text.isascii() and text.isprintable():
        return text
    out: list[str] = []
    used = marks = 0
    for i, ch in enumerate(text):
        marks = marks + 1 if unicodedata.category(ch) in _MARKS else 0
        piece = ch if ch.isprintable() and marks <= MAX_MARKS else _escape(ch)
        used += len(piece)
        if used > width:
            out.append(f"... ({len(text) - i:,} more characters)")
            break
        out.append(piece)
    return "".join(out)
