"""Text-policy parsing: precedence, comments, printing, star height and syntax errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gd_strategies import policies
from hypothesis import given, settings

from grounded_decision import Limits, Module
from grounded_decision import policy as gp
from grounded_decision.errors import GroundedDecisionError, PolicySyntaxError
from grounded_decision.policy import Act, Alt, Expr, Seq, Star, parse, star_height
from grounded_decision.policy.parse import MAX_HEIGHT, MAX_NESTING


def test_star_binds_tighter_than_seq_and_seq_tighter_than_alt() -> None:
    """test(a) | test(b) ; act(c)* reads as a | (b ; (c*))."""
    assert parse("test(a) | test(b) ; act(c)*") == Alt(
        (gp.Test("a"), Seq((gp.Test("b"), Star(Act("c")))))
    )


def test_parentheses_override_precedence() -> None:
    """(test(a) | test(b)) ; act(c) groups the choice first."""
    assert parse("(test(a) | test(b)) ; act(c)") == Seq(
        (Alt((gp.Test("a"), gp.Test("b"))), Act("c"))
    )


def test_whitespace_newlines_and_comments_are_ignored() -> None:
    """Comments run to the end of the line and layout does not matter."""
    text = "# page after an alert\n(test(ping))*   # keep watching\n ;\n\ttest(alert) ; act(page)\n"
    assert parse(text) == Seq((Star(gp.Test("ping")), gp.Test("alert"), Act("page")))


BREAKS = ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("brk", BREAKS, ids=repr)
def test_every_line_break_ends_a_comment_and_counts_one_line(brk: str) -> None:
    """Line breaks are the ones ``str.splitlines`` knows, as an editor shows them: a
    comment stops at each, and an error's line and column agree with ``splitlines``."""
    text = f"test(a) ; # one{brk}test(b) ;{brk}{brk}  )"
    with pytest.raises(PolicySyntaxError) as caught:
        parse(text)
    lines = text.splitlines()
    assert (caught.value.line, caught.value.column) == (len(lines), lines[-1].index(")") + 1)
    assert parse(f"test(a) # one{brk}; test(b)") == Seq((gp.Test("a"), gp.Test("b")))


def test_nested_groups_flatten() -> None:
    """Grouping a sequence inside a sequence gives one flat sequence."""
    assert parse("(test(a) ; test(b)) ; test(c)") == parse("test(a) ; test(b) ; test(c)")
    assert parse("((test(a))*)*") == Star(gp.Test("a"))


def test_star_height_counts_nesting() -> None:
    """Star height is the deepest nesting of *, 0 without loops."""
    assert star_height(parse("test(a) ; act(b)")) == 0
    assert star_height(parse("(test(ping))* ; test(alert) ; act(page)")) == 1
    assert star_height(parse("((test(a) ; (test(b))*)* | act(c))")) == 2


@settings(max_examples=200, deadline=None)
@given(policies())
def test_printing_then_parsing_gives_the_same_tree(expr: Expr) -> None:
    """str(expr) is policy text that parses back to an equal tree (after flattening)."""
    again = parse(str(expr))
    assert parse(str(again)) == again
    assert str(again) == str(parse(str(expr)))


MALFORMED = [
    ("", 1, 1, "test(...), act(...) or '('", "end of policy"),
    ("test(a", 1, 7, "')' after test(a", "end of policy"),
    ("test()", 1, 6, "an event name inside test(...)", "')'"),
    ("act(", 1, 5, "an action name inside act(...)", "end of policy"),
    ("test a", 1, 6, "'(' after 'test'", "'a'"),
    ("foo(x)", 1, 1, "test(...), act(...) or '('", "'foo'"),
    ("test(a) act(b)", 1, 9, "';', '|', '*' or end of policy", "'act'"),
    ("test(a) ;\n  | act(b)", 2, 3, "test(...), act(...) or '('", "'|'"),
    ("(test(a) ; act(b)", 1, 18, "')' to close the '(' at line 1, column 1", "end of policy"),
    ("test(a))", 1, 8, "';', '|', '*' or end of policy", "')'"),
    ("test(a) & act(b)", 1, 9, "a name, '(', ')', ';', '|', '*' or a comment", "'&'"),
    ("# only a comment\n", 2, 1, "test(...), act(...) or '('", "end of policy"),
    ("*test(a)", 1, 1, "test(...), act(...) or '('", "'*'"),
    ("test(a b)", 1, 8, "')' after test(a", "'b'"),
    ("test(a) |", 1, 10, "test(...), act(...) or '('", "end of policy"),
]


@pytest.mark.parametrize(("text", "line", "column", "expected", "got"), MALFORMED)
def test_syntax_errors_carry_line_column_and_expectation(
    text: str, line: int, column: int, expected: str, got: str
) -> None:
    """Each malformed policy raises PolicySyntaxError pointing at the offending token."""
    with pytest.raises(PolicySyntaxError) as caught:
        parse(text)
    error = caught.value
    assert (error.line, error.column, error.expected, error.got) == (line, column, expected, got)
    assert str(error).startswith(f"policy line {line}, column {column}: expected {expected}, got")
    assert isinstance(error, ValueError)
    assert isinstance(error, GroundedDecisionError)


def _nested_loops(depth: int) -> str:
    inner = "test(z)"
    for i in range(depth):
        inner = f"(test(e{i}) ; {inner})*"
    return f"test(s) ; {inner} ; act(x)"


def test_the_deepest_nesting_allowed_prints_and_checks_without_recursion_errors() -> None:
    """MAX_NESTING levels of loops parse, print and build a module; one more is refused
    naming the place, before anything can stop at Python's recursion limit."""
    expr = parse(_nested_loops(MAX_NESTING))
    assert parse(str(expr)) == expr
    Module.from_expr("deep", expr, Limits(None, None, None))
    with pytest.raises(PolicySyntaxError, match=f"at most {MAX_NESTING} nested parentheses"):
        parse(_nested_loops(MAX_NESTING + 1))


def _tallest(levels: int) -> str:
    """The deepest tree parsing allows: an Alt, a Seq and a Star per level of parentheses."""
    inner = "test(z)"
    for i in range(levels):
        inner = f"(test(e{i}) | test(f) ; {inner}*)"
    return f"test(s) | test(s) ; {inner}*"


def test_the_tallest_parsed_tree_is_exactly_the_height_allowed_by_hand() -> None:
    """Every tree parsing gives can be built by hand, and one node more is refused."""
    expr = parse(_tallest(MAX_NESTING))
    assert isinstance(expr, Alt)
    assert Alt(expr.options) == expr
    with pytest.raises(ValueError, match=f"at most MAX_HEIGHT = {MAX_HEIGHT} nodes deep"):
        Star(expr)


def test_a_tree_too_deep_to_print_is_refused_where_it_is_built() -> None:
    """Seqs nested 3,000 deep once reached Module.from_expr and stopped at Python's
    recursion limit; the node past MAX_HEIGHT refuses itself, naming the fix."""
    expr: Expr = gp.Test("a")
    for _ in range(MAX_HEIGHT - 1):
        expr = Seq((expr, gp.Test("b")))
    Module.from_expr("deepest", expr)
    with pytest.raises(ValueError, match="one Seq of many parts") as caught:
        Seq((expr, gp.Test("b")))
    assert "makes it 305" in str(caught.value)


HAND_BUILT: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: Seq(()), ValueError, r"Seq\(parts\) must hold at least one node, got \(\)"),
    (lambda: Alt(()), ValueError, r"Alt\(options\) must hold at least one node"),
    (lambda: Seq([gp.Test("a")]), TypeError, r"must be a tuple .* got list; write Seq\(\("),
    (lambda: Alt((gp.Test("a"), 5)), TypeError, r"Alt\(options\)\[1\] must be a Test, .* int: 5"),
    (lambda: Star("test(a)"), TypeError, r"Star\(body\) must be a .* node, got str"),
    (lambda: Act(5), TypeError, r"Act\(action\) must be a str, got int: 5"),
    (lambda: gp.Test("a b"), ValueError, r"Test\(event\) must be a name of letters.*'a b'"),
    (lambda: gp.Test(""), ValueError, r"got ''"),
    (lambda: Act("1st"), ValueError, r"not starting with a digit"),
    (lambda: Module.from_expr("m", 5), TypeError, r"tree of Test, .* got int: 5; read text"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("build", "error", "message"), HAND_BUILT)
def test_a_hand_built_tree_is_held_to_what_parsing_gives(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    """Nodes parsing could not give are refused where they are built, naming the field;
    they once failed later, in compiling, or wrote a record nothing could read."""
    with pytest.raises(error, match=message):
        build()
