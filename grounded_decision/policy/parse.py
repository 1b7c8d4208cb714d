"""Text policies: the expression tree and a recursive-descent parser with precise errors.

Grammar (``*`` binds tightest, then ``;``, then ``|``; ``#`` starts a comment)::

    policy := alt
    alt    := seq ("|" seq)*
    seq    := rep (";" rep)*
    rep    := atom "*"*
    atom   := "test" "(" NAME ")" | "act" "(" NAME ")" | "(" alt ")"
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import attrs

from grounded_decision.errors import PolicyCompileError, PolicySyntaxError

__all__ = [
    "LINE_BREAK",
    "MAX_HEIGHT",
    "MAX_NESTING",
    "MAX_POLICY_STATES",
    "MAX_POLICY_TRANSITIONS",
    "Act",
    "Alt",
    "Expr",
    "Seq",
    "Star",
    "Test",
    "parse",
    "star_height",
    "too_many_states",
    "too_many_transitions",
]


#: The deepest nesting of parentheses a policy may have. Printing, compiling and
#: checking a policy each walk it with a few Python frames per level, so a deeper one
#: would stop at Python's recursion limit instead of with an error naming its place.
MAX_NESTING = 100

#: The deepest policy tree (a step counts 1): a parsed policy adds at most an ``Alt``, a
#: ``Seq`` and a ``Star`` per level of parentheses, so it is never deeper than this, and a
#: tree built by hand is held to the same, for printing and compiling walk it recursively.
MAX_HEIGHT = 3 * (MAX_NESTING + 1) + 1

#: Most automaton states ``compile_policy`` builds for one text policy by default; ``parse``
#: given ``max_states`` refuses, while it reads, a policy sure to need more.
MAX_POLICY_STATES = 10_000
#: the most transitions a chart built from a policy may have: an action state takes
#: every move of the state after its action, so ``(test(e) ; act(a) | ...)*`` with n
#: alternatives needs about n * n, and memory grows with them
MAX_POLICY_TRANSITIONS = 250_000

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NODES = "Test, Act, Seq, Alt or Star"


def _check_name(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A step's name is one the parser reads back, so the policy prints and parses again."""
    node = type(instance).__name__
    if not isinstance(value, str):
        msg = f"{node}({attribute.name}) must be a str, got {type(value).__name__}: {value!r}"
        raise TypeError(msg)
    if _NAME.fullmatch(value) is None:
        msg = (
            f"{node}({attribute.name}) must be a name of letters, digits, '_', '.' and '-'"
            f" not starting with a digit, '.' or '-', got {value!r}"
        )
        raise ValueError(msg)


def _check_children(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A group holds a non-empty tuple of nodes: the forms the parser builds."""
    node = type(instance).__name__
    if not isinstance(value, tuple):
        msg = (
            f"{node}({attribute.name}) must be a tuple of {_NODES} nodes, got"
            f" {type(value).__name__}; write {node}((..., ...))"
        )
        raise TypeError(msg)
    if not value:
        msg = f"{node}({attribute.name}) must hold at least one node, got ()"
        raise ValueError(msg)
    for place, child in enumerate(value):
        if not isinstance(child, _NODE_TYPES):
            msg = (
                f"{node}({attribute.name})[{place}] must be a {_NODES} node, got"
                f" {type(child).__name__}: {child!r:.60}"
            )
            raise TypeError(msg)


def _check_body(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, _NODE_TYPES):
        msg = f"Star(body) must be a {_NODES} node, got {type(value).__name__}: {value!r:.60}"
        raise TypeError(msg)


def _height(node: Expr) -> int:
    return 1 if isinstance(node, Test | Act) else node._height


def _set_height(node: Seq | Alt | Star, children: tuple[Expr, ...]) -> None:
    """Store the node's height, refusing one past ``MAX_HEIGHT`` where it is built."""
    height = 1 + max(_height(child) for child in children)
    if height > MAX_HEIGHT:
        msg = (
            f"a policy tree may be at most MAX_HEIGHT = {MAX_HEIGHT} nodes deep, as deep as"
            f" parsing allows, and this {type(node).__name__} makes it {height}; build a"
            " flatter tree, e.g. one Seq of many parts rather than Seqs inside Seqs"
        )
        raise ValueError(msg)
    object.__setattr__(node, "_height", height)


@attrs.frozen
class Test:
    """``test(event)``: the next event must be ``event``."""

    event: str = attrs.field(validator=_check_name)

    def __str__(self) -> str:
        """Return the policy text of this node."""
        return f"test({self.event})"


@attrs.frozen
class Act:
    """``act(action)``: propose ``action``."""

    action: str = attrs.field(validator=_check_name)

    def __str__(self) -> str:
        """Return the policy text of this node."""
        return f"act({self.action})"


@attrs.frozen
class Seq:
    """``a ; b ; ...``: the parts one after another."""

    parts: tuple[Expr, ...] = attrs.field(validator=_check_children)
    _height: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _set_height(self, self.parts)

    def __str__(self) -> str:
        """Return the policy text of this node."""
        return " ; ".join(_wrap(part, (Alt,)) for part in self.parts)


@attrs.frozen
class Alt:
    """``a | b | ...``: any one of the options."""

    options: tuple[Expr, ...] = attrs.field(validator=_check_children)
    _height: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _set_height(self, self.options)

    def __str__(self) -> str:
        """Return the policy text of this node."""
        return " | ".join(str(option) for option in self.options)


@attrs.frozen
class Star:
    """``a*``: the body zero or more times."""

    body: Expr = attrs.field(validator=_check_body)
    _height: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _set_height(self, (self.body,))

    def __str__(self) -> str:
        """Return the policy text of this node."""
        return f"{_wrap(self.body, (Alt, Seq))}*"


_NODE_TYPES = (Test, Act, Seq, Alt, Star)
Expr = Test | Act | Seq | Alt | Star
"""A parsed text policy."""


def _wrap(node: Expr, loose: tuple[type, ...]) -> str:
    return f"({node})" if isinstance(node, loose) else str(node)


def star_height(expr: Expr) -> int:
    """Return the deepest nesting of ``*`` in the expression (0 for a loop-free policy)."""
    if isinstance(expr, Test | Act):
        return 0
    if isinstance(expr, Star):
        return 1 + star_height(expr.body)
    children = expr.parts if isinstance(expr, Seq) else expr.options
    return max(star_height(child) for child in children)


#: Line breaks as ``str.splitlines`` knows them, ``\r\n`` counting once: an editor shows
#: any of them as a new line, so an error's line number and a comment's end agree with it.
LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_TOKEN = re.compile(
    r"(?P<space>\s+)|#[^\n\r\v\f\x1c-\x1e\x85\u2028\u2029]*"
    rf"|(?P<name>{_NAME.pattern})|(?P<punct>[()*;|])"
)
_END = "end of policy"


class _Token(NamedTuple):
    """One token (a tuple: a policy of a million steps makes millions of them)."""

    kind: str
    text: str
    line: int
    column: int

    def shown(self) -> str:
        return _END if self.kind == "end" else repr(self.text)


def _tokenize(text: str) -> Iterator[_Token]:
    """Yield the tokens one by one, then an ``end`` token; a long policy is never held
    as a list of tokens."""
    pos, size = 0, len(text)
    line, line_start = 1, 0
    match_at = _TOKEN.match
    while pos < size:
        match = match_at(text, pos)
        column = pos - line_start + 1
        if match is None:
            expected = "a name, '(', ')', ';', '|', '*' or a comment"
            msg = (
                f"policy line {line}, column {column}: expected {expected}, got {text[pos]!r};"
                " names use letters, digits, '_', '.' and '-', and comments start with '#'"
            )
            raise PolicySyntaxError(
                msg, line=line, column=column, expected=expected, got=repr(text[pos])
            )
        kind, end = match.lastgroup, match.end()
        if kind == "name":
            yield _Token("name", text[pos:end], line, column)
        elif kind == "punct":
            yield _Token(text[pos], text[pos], line, column)
        elif kind == "space" and LINE_BREAK.search(text, pos, end):
            breaks = list(LINE_BREAK.finditer(text, pos, end))
            line += len(breaks)
            line_start = breaks[-1].end()
        pos = end
    yield _Token("end", "", line, len(text) - line_start + 1)


def _limit(cap: int, default: int, constant: str, option: str) -> str:
    """How a refusal names its cap: the module's constant when it is the default, else
    the option it was given as."""
    return f"{constant} = {default}" if cap == default else f"{option} = {cap}"


def too_many_states(max_states: int) -> PolicyCompileError:
    """The refusal of a policy needing more than ``max_states`` automaton states: one
    text, whether ``parse`` sees it coming or ``compile_policy`` reaches it."""
    limit = _limit(max_states, MAX_POLICY_STATES, "MAX_POLICY_STATES", "max_states")
    msg = (
        f"policy needs more than {max_states} automaton states (limit"
        f" {limit}); shorten it, or build the chart with"
        " dfa_to_statechart(compile_policy(expr, max_states=N), name)"
        " and pass it to Module(name, chart, expr=expr)"
    )
    return PolicyCompileError(msg)


def too_many_transitions(max_transitions: int, name: str | None, why: str) -> PolicyCompileError:
    """The refusal of a policy whose chart needs more than ``max_transitions``
    transitions (`why` says what makes them); `name` is the policy's, when known."""
    limit = _limit(
        max_transitions, MAX_POLICY_TRANSITIONS, "MAX_POLICY_TRANSITIONS", "max_transitions"
    )
    named = "policy" if name is None else f"policy {name!r}"
    msg = (
        f"{named} needs a chart of more than {max_transitions} transitions"
        f" (limit {limit}): {why}; split the policy, or build the chart with"
        " dfa_to_statechart(dfa, name, max_transitions=N) and pass it to"
        " Module(name, chart, expr=expr)"
    )
    return PolicyCompileError(msg)


class _Bounds:
    """Lower bounds on the automaton and the chart of the policy being read, sure
    whatever text follows, each checked against its cap as it grows.

    States: one for the start, and one per symbol of a step directly followed by
    another step in a sequence (``test(e) ; act(a)`` counts ``test(e)``). After reading
    that symbol the automaton is in a state holding the step that follows, which only
    that symbol's moves enter, so states so reached on two symbols differ, and none is
    the start.

    Transitions: one per event tested. Every step of a policy lies on some word it
    accepts (its grammar has no empty choice), so every state ``compile_policy``
    builds lies on such a word too, and each event labels a move of at least one of
    them, which the chart keeps as a transition.
    """

    def __init__(self, max_states: int | None, max_transitions: int | None) -> None:
        self.max_states = max_states
        self.max_transitions = max_transitions
        self.symbols: set[tuple[str, str]] = set()
        self.events: set[str] = set()

    def followed(self, step: Test | Act) -> None:
        """Count `step`'s symbol; refuse once the states are sure to pass the cap."""
        if self.max_states is None:
            return
        symbol = ("test", step.event) if isinstance(step, Test) else ("act", step.action)
        self.symbols.add(symbol)
        # compile_policy never refuses its first state, so a cap of 0 still takes one
        if len(self.symbols) + 1 > max(self.max_states, 1):
            raise too_many_states(self.max_states)

    def tested(self, event: str) -> None:
        """Count an event; refuse once the transitions are sure to pass the cap."""
        cap = self.max_transitions
        if cap is None:
            return
        self.events.add(event)
        if len(self.events) > cap:
            why = f"it tests more than {cap} different events, each a transition at least"
            raise too_many_transitions(cap, None, why)


class _Parser:
    """Recursive descent over the tokens, one ahead; one instance per ``parse`` call."""

    def __init__(self, tokens: Iterator[_Token], bounds: _Bounds | None = None) -> None:
        self.tokens = tokens
        self.current = next(tokens)
        self.depth = 0
        self.bounds = bounds

    def peek(self) -> _Token:
        return self.current

    def take(self) -> _Token:
        token = self.current
        if token.kind != "end":
            self.current = next(self.tokens)
        return token

    def fail(self, expected: str, token: _Token, hint: str) -> PolicySyntaxError:
        msg = (
            f"policy line {token.line}, column {token.column}: expected {expected},"
            f" got {token.shown()}; {hint}"
        )
        return PolicySyntaxError(
            msg, line=token.line, column=token.column, expected=expected, got=token.shown()
        )

    def policy(self) -> Expr:
        expr = self.alt()
        token = self.peek()
        if token.kind != "end":
            hint = (
                "a ')' here has no matching '('"
                if token.kind == ")"
                else "join steps with ';' (then) or '|' (or)"
            )
            raise self.fail("';', '|', '*' or end of policy", token, hint)
        return expr

    def alt(self) -> Expr:
        options: list[Expr] = []
        while True:
            node = self.seq()
            options.extend(node.options if isinstance(node, Alt) else (node,))
            if self.peek().kind != "|":
                break
            self.take()
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def seq(self) -> Expr:
        parts: list[Expr] = []
        while True:
            node = self.rep()
            if self.bounds is not None and parts and isinstance(parts[-1], Test | Act):
                head = node.parts[0] if isinstance(node, Seq) else node
                if isinstance(head, Test | Act):
                    self.bounds.followed(parts[-1])
            parts.extend(node.parts if isinstance(node, Seq) else (node,))
            if self.peek().kind != ";":
                break
            self.take()
        return parts[0] if len(parts) == 1 else Seq(tuple(parts))

    def rep(self) -> Expr:
        node = self.atom()
        while self.peek().kind == "*":
            self.take()
            node = node if isinstance(node, Star) else Star(node)
        return node

    def atom(self) -> Expr:
        token = self.take()
        if token.kind == "(":
            self.depth += 1
            if self.depth > MAX_NESTING:
                expected = f"at most {MAX_NESTING} nested parentheses"
                raise self.fail(expected, token, "flatten the policy")
            inner = self.alt()
            closing = self.take()
            if closing.kind != ")":
                msg = f"')' to close the '(' at line {token.line}, column {token.column}"
                raise self.fail(
                    msg,
                    closing,
                    "add the missing ')'",
                )
            self.depth -= 1
            return inner
        if token.kind == "name" and token.text in ("test", "act"):
            what = "an event name" if token.text == "test" else "an action name"
            opening = self.take()
            if opening.kind != "(":
                msg = f"'(' after {token.text!r}"
                raise self.fail(msg, opening, f"write {token.text}(name)")
            name = self.take()
            if name.kind != "name":
                msg = f"{what} inside {token.text}(...)"
                raise self.fail(msg, name, f"write {token.text}(name)")
            closing = self.take()
            if closing.kind != ")":
                msg = f"')' after {token.text}({name.text}"
                raise self.fail(msg, closing, "close it with ')'")
            if token.text == "act":
                return Act(name.text)
            if self.bounds is not None:
                self.bounds.tested(name.text)
            return Test(name.text)
        hint = (
            "steps are written test(event) or act(action)"
            if token.kind == "name"
            else "a step is missing here"
        )
        raise self.fail("test(...), act(...) or '('", token, hint)


def parse(text: str, *, max_states: int | None = None, max_transitions: int | None = None) -> Expr:
    """Parse a text policy such as ``(test(ping))* ; test(alert) ; act(page)``.

    Parameters:
        text: the policy; whitespace and ``#`` comments are ignored.
        max_states: the cap ``compile_policy`` will be given (``MAX_POLICY_STATES`` for
            ``Module.from_expr``); a policy sure to need more automaton states is refused
            as soon as the text read so far shows it, with ``compile_policy``'s refusal, so
            a huge policy is not read to its end (nor checked for syntax past that point).
            ``None``, the default, refuses nothing.
        max_transitions: the same for the cap ``dfa_to_statechart`` will be given
            (``MAX_POLICY_TRANSITIONS`` for ``Module.from_expr``): a policy testing more
            different events than that is refused once it has.

    Returns:
        The expression tree (``Test``, ``Act``, ``Seq``, ``Alt``, ``Star``).

    Raises:
        PolicySyntaxError: with ``line``, ``column`` (1-based), ``expected`` and ``got``.
        PolicyCompileError: when the policy is sure to need more than ``max_states``
            automaton states, or more than ``max_transitions`` transitions.

    .. versionchanged:: Unreleased ``max_states`` and ``max_transitions``.
    """
    capped = max_states is not None or max_transitions is not None
    bounds = _Bounds(max_states, max_transitions) if capped else None
    return _Parser(_tokenize(text), bounds).policy()
