"""A catalog that puts its caller's text into an answer, a step's error and a skip reason:
what the text views show of text a stranger wrote."""

from __future__ import annotations

from solvi import Catalog, System

#: what a stranger may send: it retitles the window, writes over its line, turns text
#: around, and starts a new line that looks like a line of the report
HOSTILE = "\x1b]0;pwned\x07\rsame\u202e\nok"
#: how `solvi._terminal.visible` shows it
HOSTILE_SHOWN = "\\x1b]0;pwned\\x07\\rsame\\u202e\\nok"


def echo_system(prefix: str = "", store: object = None) -> System:
    """Catalog ``echo``: `said` answers the request's ``text`` (after `prefix`); part
    `checked` raises ValueError with that text, so `mood` is skipped and abstains.

    A different `prefix` changes the answers and the error, not the catalog version.
    """
    cat = Catalog("echo")

    @cat.fn
    def echoed(text: str) -> str:
        return prefix + text

    @cat.fn
    def checked(text: str) -> str:
        raise ValueError(prefix + text)

    @cat.rule
    def said(echoed: str) -> str:
        return echoed

    @cat.rule
    def mood(checked: str) -> str:
        return checked

    return System(cat, ["said", "mood"], store=store)
