"""The PGSolver text format for parity games and their solutions, as other solvers read it.

A game file starts with ``parity N;`` (``N`` the largest vertex id), optionally followed by
``start S;``, then one line per vertex: ``id priority owner succ,succ,... "name";`` with
owner ``0`` for the controller (Even) and ``1`` for the environment (Odd); the name is
optional. A solution file starts with ``paritysol N;`` and has one line ``v winner
[strategy];`` per vertex, the strategy given where the vertex's owner wins. Ids need not be
dense or sorted; they are renumbered in increasing order, so a file this module wrote reads
back to the same game.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grounded_decision.errors import PgsolverFormatError
from grounded_decision.statechart.game import GameGraph

__all__ = ["read_pgsolver", "read_solution", "write_pgsolver", "write_solution"]

_HEADER = re.compile(r"^parity\s+(\d+)\s*;$")
_START = re.compile(r"^start\s+(\d+)\s*;$")
_VERTEX = re.compile(r'^(\d+)\s+(\d+)\s+(\d+)\s+([0-9,\s]+?)\s*(?:"((?:[^"\\]|\\.)*)")?\s*;$')
_SOLUTION_HEADER = re.compile(r"^paritysol\s+(\d+)\s*;$")
_SOLUTION = re.compile(r"^(\d+)\s+(\d+)(?:\s+(\d+))?\s*;$")
_UNESCAPE = re.compile(r"\\(.)")


def _fail(line: int, text: str, fix: str) -> PgsolverFormatError:
    return PgsolverFormatError(f"line {line}: {text}; {fix}", line=line)


def _lines(text: str) -> list[tuple[int, str]]:
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def read_pgsolver(text: str) -> GameGraph:
    """Read a parity game in PGSolver format.

    Edge events are ``"to <id>"`` and weights ``0.0``; vertices without a name are named
    after their id.

    Raises:
        PgsolverFormatError: naming the line at fault: no ``parity`` header, a malformed
            vertex line, an owner other than 0 or 1, an id twice or above the header's
            bound, a successor that is not a vertex, or no vertex at all.

    .. versionadded:: Unreleased
    """
    lines = _lines(text)
    if not lines or not (header := _HEADER.match(lines[0][1])):
        line = lines[0][0] if lines else 1
        raise _fail(line, "expected the header 'parity N;'", "start the file with it")
    bound = int(header.group(1))
    start_id: int | None = None
    start_line = 0
    rows: dict[int, tuple[int, int, list[int], str | None, int]] = {}
    for number, content in lines[1:]:
        if start_id is None and not rows and (start := _START.match(content)):
            start_id, start_line = int(start.group(1)), number
            continue
        match = _VERTEX.match(content)
        if match is None:
            raise _fail(
                number,
                f"cannot read {content[:60]!r}",
                "write 'id priority owner succ,succ,... \"name\";'",
            )
        ident, prio, owner = (int(match.group(k)) for k in (1, 2, 3))
        succ_text = match.group(4).replace(" ", "").replace("\t", "")
        if not succ_text or any(not part for part in succ_text.split(",")):
            raise _fail(number, f"vertex {ident} has an empty successor", "list ids a,b,c")
        if owner not in (0, 1):
            raise _fail(number, f"vertex {ident} has owner {owner}", "use 0 (Even) or 1 (Odd)")
        if ident in rows:
            raise _fail(number, f"vertex {ident} is defined twice", f"see line {rows[ident][4]}")
        if ident > bound:
            raise _fail(number, f"vertex {ident} exceeds the header's 'parity {bound};'", "raise N")
        name = match.group(5)
        name = None if name is None else _UNESCAPE.sub(r"\1", name)
        rows[ident] = (prio, owner, [int(part) for part in succ_text.split(",")], name, number)
    if not rows:
        raise _fail(lines[0][0], "the game has no vertex", "add one line per vertex")
    ids = sorted(rows)
    index = {ident: i for i, ident in enumerate(ids)}
    edges = []
    for ident in ids:
        _, _, targets, _, number = rows[ident]
        for target in targets:
            if target not in index:
                raise _fail(
                    number,
                    f"vertex {ident} moves to {target}, which is not defined",
                    "define it or drop the edge",
                )
        edges.append(tuple((index[t], f"to {t}", 0.0) for t in targets))
    if start_id is not None and start_id not in index:
        raise _fail(start_line, f"start vertex {start_id} is not defined", "name a vertex id")
    return GameGraph(
        names=tuple(_or_id(rows[i][3], i) for i in ids),
        start=0 if start_id is None else index[start_id],
        edges=tuple(edges),
        priority=tuple(rows[i][0] for i in ids),
        owner=tuple(rows[i][1] for i in ids),
    )


def _or_id(name: str | None, ident: int) -> str:
    return str(ident) if name is None else name


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def write_pgsolver(game: GameGraph) -> str:
    """Write a game in PGSolver format (ids ``0..n-1``, names quoted, start if not 0).

    .. versionadded:: Unreleased
    """
    out = [f"parity {len(game) - 1};"]
    if game.start != 0:
        out.append(f"start {game.start};")
    for v in range(len(game)):
        succ = ",".join(str(w) for w in game.successors[v])
        out.append(f"{v} {game.priority[v]} {game.owner[v]} {succ} {_quote(game.names[v])};")
    return "\n".join(out) + "\n"


def write_solution(winner: Sequence[int], strategy: Sequence[int]) -> str:
    """Write a solution: ``paritysol N;`` then ``v winner [strategy];`` per vertex.

    The strategy is written where it is not ``-1`` (where the vertex's owner wins).

    .. versionadded:: Unreleased
    """
    out = [f"paritysol {len(winner)};"]
    for v, side in enumerate(winner):
        move = strategy[v]
        out.append(f"{v} {side} {move};" if move >= 0 else f"{v} {side};")
    return "\n".join(out) + "\n"


def read_solution(text: str, vertices: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Read a solution for a game of ``vertices`` vertices; return ``(winner, strategy)``.

    Missing strategies read as ``-1``.

    Raises:
        PgsolverFormatError: naming the line at fault: no ``paritysol`` header, a
            malformed line, a winner other than 0 or 1, a vertex out of range or twice, or a
            vertex left without a winner.

    .. versionadded:: Unreleased
    """
    lines = _lines(text)
    if not lines or not _SOLUTION_HEADER.match(lines[0][1]):
        line = lines[0][0] if lines else 1
        raise _fail(line, "expected the header 'paritysol N;'", "start the file with it")
    winner = [-1] * vertices
    strategy = [-1] * vertices
    for number, content in lines[1:]:
        match = _SOLUTION.match(content)
        if match is None:
            raise _fail(
                number, f"cannot read {content[:60]!r}", "write 'vertex winner [strategy];'"
            )
        v, side = int(match.group(1)), int(match.group(2))
        if not 0 <= v < vertices:
            raise _fail(number, f"vertex {v} is not in 0..{vertices - 1}", "check the game")
        if side not in (0, 1):
            raise _fail(number, f"vertex {v} has winner {side}", "use 0 or 1")
        if winner[v] >= 0:
            raise _fail(number, f"vertex {v} appears twice", "give one line per vertex")
        winner[v] = side
        if match.group(3) is not None:
            strategy[v] = int(match.group(3))
    missing = [v for v in range(vertices) if winner[v] < 0]
    if missing:
        last = lines[-1][0]
        raise _fail(last, f"{len(missing)} vertices have no winner, e.g. {missing[0]}", "add them")
    return tuple(winner), tuple(strategy)
