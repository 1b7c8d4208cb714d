"""The PGSolver text format for parity games and their solutions, as other solvers read it.

A game file starts with ``parity N;`` (``N`` the largest vertex id), optionally followed by
``start S;``, then one line per vertex: ``id priority owner succ,succ,... "name";`` with
owner ``0`` for the controller (Even) and ``1`` for the environment (Odd); the name is
optional, and a backslash in it escapes the next character. A solution file starts with
``paritysol N;`` and has one line ``v winner [strategy];`` per vertex, the strategy given
where the vertex's owner wins. Ids need not be dense or sorted; they are renumbered in
increasing order (``read_pgsolver_with_ids`` also gives each vertex's id in the file), so a
file this module wrote reads back to the same game.

Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as editors count them; a leading byte order
mark is ignored. Each line is split into words, never matched with a backtracking pattern, so
reading takes time and memory in proportion to the file's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from grounded_decision.errors import PgsolverFormatError
from grounded_decision.statechart.game import Edge, GameGraph, _arrays_module_of

if TYPE_CHECKING:
    from grounded_decision.statechart.arrays import ArrayGame

__all__ = [
    "LINE_END",
    "read_pgsolver",
    "read_pgsolver_with_ids",
    "read_solution",
    "write_pgsolver",
    "write_solution",
]

_MAX_DIGITS = 18
"""Most digits a number in a file may have: no game has 10**18 vertices or needs such a
priority, and a longer number would otherwise be converted at quadratic cost."""

_NAME_STOP = re.compile(r'\\.|"', re.DOTALL)
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)
_VERTEX_FORM = "write 'id priority owner succ,succ,... \"name\";'"

_Row = tuple[int, int, list[int], str | None, int]


def _fail(line: int, text: str, fix: str) -> PgsolverFormatError:
    return PgsolverFormatError(f"line {line}: {text}; {fix}", line=line)


def _require_text(text: object, reader: str) -> None:
    """Refuse bytes (or anything else) up front: the file's encoding is the caller's to know."""
    if not isinstance(text, str):
        msg = (
            f"{reader} takes the file's text as str, got {type(text).__name__};"
            " decode bytes first, e.g. data.decode('utf-8')"
        )
        raise TypeError(msg)


#: where a line ends: ``\n``, ``\r\n`` or a lone ``\r`` (old Mac files), as editors and
#: Python's universal newlines count them; a name's line breaks are escaped, never raw
LINE_END = re.compile(r"\r\n?|\n")


def _lines(text: str) -> list[tuple[int, str]]:
    """Numbered non-blank, non-comment lines, ended by ``\\n``, ``\\r\\n`` or ``\\r``."""
    return list(_each_line(text))


def _each_line(text: str) -> Iterator[tuple[int, str]]:
    """``_lines`` one at a time, so a large game is never held twice over as lines."""
    text = text.removeprefix("\ufeff")
    begin = 0
    number = 1
    for end in LINE_END.finditer(text):
        line = text[begin : end.start()].strip()
        if line and not line.startswith("#"):
            yield number, line
        begin = end.end()
        number += 1
    line = text[begin:].strip()
    if line and not line.startswith("#"):
        yield number, line


def _number(word: str, line: int) -> int | None:
    """The word as a whole number, or ``None`` when it is not one; a signed one is refused."""
    if not (word.isascii() and word.isdigit()):
        if _signed(word):
            raise _fail(line, f"the number {word} {_sign(word)}", _UNSIGNED)
        return None
    if len(word) > _MAX_DIGITS:
        raise _fail(line, f"a number has {len(word)} digits", f"use at most {_MAX_DIGITS}")
    return int(word)


_UNSIGNED = "write whole numbers 0 or more, without + or -"


def _signed(word: str) -> bool:
    """Whether the word is a number with a leading ``+`` or ``-``."""
    digits = word[1:]
    return word[:1] in ("+", "-") and digits.isascii() and digits.isdigit()


def _sign(word: str) -> str:
    return "is negative" if word.startswith("-") else "has a + sign"


def _words(content: str) -> list[str] | None:
    """The line's words before its closing ``;``, or ``None`` when it does not end in one."""
    return content[:-1].split() if content.endswith(";") else None


def _keyword(content: str, keyword: str, line: int) -> int | None:
    """The number of a ``keyword N;`` line, or ``None`` when the line is not one."""
    words = _words(content)
    if words is None or len(words) != 2 or words[0] != keyword:
        return None
    return _number(words[1], line)


def _split_name(body: str) -> tuple[str, str | None] | None:
    """Split a vertex line (without ``;``) into its numbers and its unescaped name.

    ``None`` when a name is opened but not closed, or text follows it.
    """
    opening = body.find('"')
    if opening < 0:
        return body, None
    closing = next((m.start() for m in _NAME_STOP.finditer(body, opening + 1) if m[0] == '"'), -1)
    if closing < 0 or body[closing + 1 :].strip():
        return None
    return body[:opening], _UNESCAPE.sub(_unescaped, body[opening + 1 : closing])


#: escapes for the characters that would end a line: a name keeps them on one
_LINE_BREAKS = {"n": "\n", "r": "\r"}


def _unescaped(match: re.Match[str]) -> str:
    char = match[1]
    return _LINE_BREAKS.get(char, char)


def _unreadable(content: str, line: int) -> PgsolverFormatError:
    return _fail(line, f"cannot read {content[:60]!r}", _VERTEX_FORM)


def _successors(words: list[str], ident: int, content: str, line: int) -> list[int]:
    """The comma-separated successor ids after a vertex's owner."""
    targets: list[int] = []
    empty = False
    for part in " ".join(words).split(","):
        part = part.strip()
        number = _number(part, line) if part else None
        if number is not None:
            targets.append(number)
        elif not part:
            empty = True
        elif all(_number(word, line) is not None for word in part.split()):
            raise _fail(
                line, f"vertex {ident} lists successors {part!r}", "put commas between them"
            )
        else:
            raise _unreadable(content, line)
    if empty:
        raise _fail(line, f"vertex {ident} has an empty successor", "list ids a,b,c")
    return targets


def _vertex(content: str, line: int) -> tuple[int, int, int, list[int], str | None]:
    """Read one vertex line: ``(id, priority, owner, successors, name)``."""
    split = _split_name(content[:-1]) if content.endswith(";") else None
    if split is None:
        raise _unreadable(content, line)
    words = split[0].split()
    for field, word in zip(("id", "priority", "owner"), words[:3], strict=False):
        if _signed(word):
            who = "" if field == "id" else f"vertex {words[0]}: "
            raise _fail(line, f"{who}{field} {word} {_sign(word)}", _UNSIGNED)
    numbers = [_number(word, line) for word in words[:3]]
    if len(words) == 3 and None not in numbers:
        raise _fail(
            line,
            f"vertex {words[0]} has no successors",
            "every vertex needs at least one move: list its successors after the owner",
        )
    if len(words) < 4 or None in numbers:
        raise _unreadable(content, line)
    ident, prio, owner = (number for number in numbers if number is not None)
    return ident, prio, owner, _successors(words[3:], ident, content, line), split[1]


def _rows(lines: Iterator[tuple[int, str]], bound: int) -> tuple[dict[int, _Row], int | None, int]:
    """The vertex rows by id, the start id (``None`` if not given) and its line."""
    start_id: int | None = None
    start_line = 0
    rows: dict[int, _Row] = {}
    for number, content in lines:
        if (
            start_id is None
            and not rows
            and (start := _keyword(content, "start", number)) is not None
        ):
            start_id, start_line = start, number
            continue
        ident, prio, owner, targets, name = _vertex(content, number)
        if owner not in (0, 1):
            raise _fail(number, f"vertex {ident} has owner {owner}", "use 0 (Even) or 1 (Odd)")
        if ident in rows:
            raise _fail(number, f"vertex {ident} is defined twice", f"see line {rows[ident][4]}")
        if ident > bound:
            raise _fail(number, f"vertex {ident} exceeds the header's 'parity {bound};'", "raise N")
        rows[ident] = (prio, owner, targets, name, number)
    return rows, start_id, start_line


def read_pgsolver_with_ids(text: str) -> tuple[GameGraph, tuple[int, ...]]:
    """Read a parity game in PGSolver format, with the file's id of each vertex.

    Vertex ``i`` of the game has id ``ids[i]`` in the file (ids ascending), so a solution
    can be written in the file's ids (``write_solution(..., ids=ids)``) and compared with
    what another solver wrote for the same file.

    Raises:
        TypeError: when ``text`` is not a ``str`` (decode bytes first).
        PgsolverFormatError: as ``read_pgsolver``.

    .. versionadded:: Unreleased
    """
    _require_text(text, "read_pgsolver")
    lines = _each_line(text)
    header_line, header = next(lines, (1, ""))
    bound = _keyword(header, "parity", header_line) if header else None
    if bound is None:
        raise _fail(header_line, "expected the header 'parity N;'", "start the file with it")
    rows, start_id, start_line = _rows(lines, bound)
    if not rows:
        raise _fail(header_line, "the game has no vertex", "add one line per vertex")
    ids = tuple(sorted(rows))
    index = {ident: i for i, ident in enumerate(ids)}
    # One edge tuple per target, shared by every move into it: the tuples are immutable,
    # and a tuple and label per move made the game about 25 times the file's size.
    edge_to: dict[int, Edge] = {}
    edges = []
    for ident in ids:
        _, _, targets, _, number = rows[ident]
        out = []
        for target in targets:
            edge = edge_to.get(target)
            if edge is None:
                if target not in index:
                    raise _fail(
                        number,
                        f"vertex {ident} moves to {target}, which is not defined",
                        "define it or drop the edge",
                    )
                edge = edge_to[target] = (index[target], f"to {target}", 0.0)
            out.append(edge)
        edges.append(tuple(out))
    if start_id is not None and start_id not in index:
        raise _fail(start_line, f"start vertex {start_id} is not defined", "name a vertex id")
    names = tuple(_or_id(rows[i][3], i) for i in ids)
    priority = tuple(rows[i][0] for i in ids)
    owner = tuple(rows[i][1] for i in ids)
    start = 0 if start_id is None else index[start_id]
    del rows, index, edge_to  # not needed by the game: let them go before it is built
    game = GameGraph(names=names, start=start, edges=tuple(edges), priority=priority, owner=owner)
    return game, ids


def read_pgsolver(text: str) -> GameGraph:
    """Read a parity game in PGSolver format.

    Edge events are ``"to <id>"`` and weights ``0.0``; vertices without a name are named
    after their id.

    Raises:
        TypeError: when ``text`` is not a ``str`` (decode bytes first).
        PgsolverFormatError: naming the line at fault: no ``parity`` header, a malformed
            vertex line, a vertex with no successors, an owner other than 0 or 1, an id
            twice or above the header's bound, a successor that is not a vertex, a number
            with a sign or of more than 18 digits, or no vertex at all.

    .. versionadded:: Unreleased
    """
    return read_pgsolver_with_ids(text)[0]


def _or_id(name: str | None, ident: int) -> str:
    return str(ident) if name is None else name


def _quote(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'


def write_pgsolver(game: GameGraph | ArrayGame) -> str:
    """Write a game in PGSolver format (ids ``0..n-1``, names quoted, start if not 0).

    The file holds the parity game: owners, priorities, moves and names (a name's line
    breaks written ``\\n`` and ``\\r``), not the weights a mean-payoff solve reads. An
    ``arrays.ArrayGame`` has no names, and its lines are written by compiled code when
    numba is installed.

    Raises:
        ValueError: a priority has more digits than a file may hold (18).

    .. versionadded:: Unreleased
    .. versionchanged:: Unreleased ``ArrayGame``.
    """
    if not isinstance(game, GameGraph):
        arrays = _arrays_module_of(game, "write_pgsolver")
        too_long = arrays._first_priority_from(game, 10**_MAX_DIGITS)
        if too_long is not None:
            raise _long_priority(too_long, int(game.priority[too_long]))
        lines: str = arrays._pgsolver_lines(game)
        return _header(len(game), game.start) + lines
    for v, p in enumerate(game.priority):
        if len(str(abs(p))) > _MAX_DIGITS:
            raise _long_priority(v, p)
    out = [_header(len(game), game.start)]
    for v in range(len(game)):
        succ = ",".join(str(w) for w in game.successors[v])
        out.append(f"{v} {game.priority[v]} {game.owner[v]} {succ} {_quote(game.names[v])};\n")
    return "".join(out)


def _header(n: int, start: int) -> str:
    return f"parity {n - 1};\n" + (f"start {start};\n" if start != 0 else "")


def _long_priority(v: int, priority: int) -> ValueError:
    return ValueError(
        f"vertex {v} has priority {priority}, of more than {_MAX_DIGITS} digits, which no"
        " PGSolver file this library reads may hold; compress the priorities first (only"
        " their order and parity matter)"
    )


def write_solution(
    winner: Sequence[int], strategy: Sequence[int], *, ids: Sequence[int] | None = None
) -> str:
    """Write a solution: ``paritysol N;`` (``N`` vertices) then ``v winner [strategy];``.

    The strategy is written where it is not ``-1`` (where the vertex's owner wins). With
    ``ids`` (from ``read_pgsolver_with_ids``), vertices and strategy moves are written in
    the game file's ids, as other solvers write them; without, vertex ``i`` is ``i``.

    .. versionchanged:: Unreleased ``ids``.
    """
    name = range(len(winner)) if ids is None else ids
    out = [f"paritysol {len(winner)};"]
    for v, side in enumerate(winner):
        move = strategy[v]
        out.append(f"{name[v]} {side} {name[move]};" if move >= 0 else f"{name[v]} {side};")
    return "\n".join(out) + "\n"


def _solution_row(content: str, line: int) -> tuple[int, int, int | None]:
    """Read one ``v winner [strategy];`` line."""
    words = _words(content)
    numbers = [] if words is None else [_number(word, line) for word in words]
    if not 2 <= len(numbers) <= 3 or None in numbers:
        raise _fail(line, f"cannot read {content[:60]!r}", "write 'vertex winner [strategy];'")
    v, side, *move = (number for number in numbers if number is not None)
    return v, side, move[0] if move else None


def read_solution(
    text: str, vertices: int, *, ids: Sequence[int] | None = None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Read a solution for a game of ``vertices`` vertices; return ``(winner, strategy)``.

    Missing strategies read as ``-1``. With ``ids`` (the game file's id of each vertex,
    from ``read_pgsolver_with_ids``) the file is read in those ids and the result is by
    vertex index; without, the file's vertex ``i`` is vertex ``i``.

    Raises:
        TypeError: when ``text`` is not a ``str`` (decode bytes first).
        PgsolverFormatError: naming the line at fault: no ``paritysol`` header, a
            malformed line, a winner other than 0 or 1, a vertex out of range or twice, a
            strategy move to an id not in ``ids``, or a vertex left without a winner.

    .. versionadded:: Unreleased
    .. versionchanged:: Unreleased ``ids``.
    """
    _require_text(text, "read_solution")
    lines = _lines(text)
    if not lines or _keyword(lines[0][1], "paritysol", lines[0][0]) is None:
        line = lines[0][0] if lines else 1
        raise _fail(line, "expected the header 'paritysol N;'", "start the file with it")
    index = None if ids is None else {ident: i for i, ident in enumerate(ids)}
    winner = [-1] * vertices
    strategy = [-1] * vertices
    for number, content in lines[1:]:
        ident, side, move = _solution_row(content, number)
        v = _solution_vertex(ident, index, vertices, number)
        if side not in (0, 1):
            raise _fail(number, f"vertex {ident} has winner {side}", "use 0 or 1")
        if winner[v] >= 0:
            raise _fail(number, f"vertex {ident} appears twice", "give one line per vertex")
        winner[v] = side
        if move is not None:
            strategy[v] = _solution_move(ident, move, index, number)
    missing = [v for v in range(vertices) if winner[v] < 0]
    if missing:
        last = lines[-1][0]
        first = missing[0] if ids is None else ids[missing[0]]
        raise _fail(last, f"{len(missing)} vertices have no winner, e.g. {first}", "add them")
    return tuple(winner), tuple(strategy)


def _solution_vertex(ident: int, index: dict[int, int] | None, vertices: int, line: int) -> int:
    """The index of a solution line's vertex, refusing one the game does not have."""
    if index is None:
        if not 0 <= ident < vertices:
            raise _fail(line, f"vertex {ident} is not in 0..{vertices - 1}", "check the game")
        return ident
    if ident not in index:
        raise _fail(line, f"vertex {ident} is not a vertex of the game", "check the game")
    return index[ident]


def _solution_move(ident: int, move: int, index: dict[int, int] | None, line: int) -> int:
    """The index a strategy moves to (in the game file's ids when ``index`` is given)."""
    if index is None:
        return move
    if move not in index:
        raise _fail(line, f"vertex {ident}'s strategy moves to {move}, not a vertex", "check it")
    return index[move]
