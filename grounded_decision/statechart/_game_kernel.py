"""Compiled passes over a game held in arrays (``arrays.ArrayGame``): predecessors, peeling,
the order by priority, deciding the peeled vertices, the certificate's checks, and the
lines of a PGSolver file, written and read.

Each is the pass of the same name in the Python code (``GameGraph``, ``_peel``,
``_zielonka_native``, ``certificate``), in time linear in the vertices and edges, so that a
game of tens of millions of vertices and edges never becomes Python objects. Imported only
once numba is known to be there; module-level functions, so numba caches their machine code.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = [
    "check_closed",
    "decide_peeled",
    "losing_cycle",
    "order_by_priority",
    "parse_pgsolver",
    "peel",
    "pgsolver_lines",
    "predecessors",
]

jit = numba.njit(cache=True, nogil=True)


@jit
def predecessors(offsets: Any, targets: Any) -> Any:
    """The predecessor lists as ``(offsets, sources)``, each list in increasing order (as
    ``GameGraph.predecessors``), by a counting sort of the edges on their targets."""
    n = offsets.shape[0] - 1
    starts = np.zeros(n + 1, dtype=np.int64)
    for e in range(targets.shape[0]):
        starts[targets[e] + 1] += 1
    for v in range(n):
        starts[v + 1] += starts[v]
    fill = starts[:n].copy()
    sources = np.empty(targets.shape[0], dtype=np.int32)
    for v in range(n):
        for e in range(offsets[v], offsets[v + 1]):
            w = targets[e]
            sources[fill[w]] = v
            fill[w] += 1
    return starts, sources


@jit
def peel(offsets: Any, targets: Any, pred_offsets: Any) -> Any:
    """``_peel.peel`` on arrays: ``(peeled, outside, work, core_size)``.

    ``peeled`` in the order taken and ``work`` are those of ``_peel.peel``; ``outside``
    marks the peeled vertices (empty when there are none), and ``core_size`` counts the
    core's vertices plus their moves.
    """
    n = offsets.shape[0] - 1
    indegree = pred_offsets[1:] - pred_offsets[:n]
    peeled = np.empty(n, dtype=np.int32)
    taken = 0
    for v in range(n):
        if indegree[v] == 0:
            peeled[taken] = v
            taken += 1
    work = n
    moves = 0
    i = 0
    while i < taken:
        v = peeled[i]
        i += 1
        moves += offsets[v + 1] - offsets[v]
        for e in range(offsets[v], offsets[v + 1]):
            w = targets[e]
            indegree[w] -= 1
            if indegree[w] == 0:
                peeled[taken] = w
                taken += 1
    work += moves
    core_size = n - taken + targets.shape[0] - moves
    if taken == 0:
        return peeled[:0], np.zeros(0, dtype=np.bool_), work, core_size
    outside = np.zeros(n, dtype=np.bool_)
    for k in range(taken):
        outside[peeled[k]] = True
    return peeled[:taken], outside, work + n, core_size


@jit
def order_by_priority(priority: Any, low: int, high: int) -> Any:
    """The vertices from the highest priority down, in increasing order within one priority
    (as Python's stable sort gives them), by counting: ``low..high`` holds every priority."""
    n = priority.shape[0]
    span = high - low + 1
    starts = np.zeros(span + 1, dtype=np.int64)
    for v in range(n):
        starts[high - priority[v] + 1] += 1
    for b in range(span):
        starts[b + 1] += starts[b]
    order = np.empty(n, dtype=np.int32)
    for v in range(n):
        b = high - priority[v]
        order[starts[b]] = v
        starts[b] += 1
    return order


@jit
def decide_peeled(
    peeled: Any, offsets: Any, targets: Any, owner: Any, winner: Any, strategy: Any
) -> None:
    """``_peel.decide_peeled`` on arrays, in place: last taken first, the owner wins by a
    move into its own region when it has one."""
    for k in range(peeled.shape[0] - 1, -1, -1):
        v = peeled[k]
        side = owner[v]
        winner[v] = 1 - side
        strategy[v] = -1
        for e in range(offsets[v], offsets[v + 1]):
            w = targets[e]
            if winner[w] == side:
                winner[v] = side
                strategy[v] = w
                break


@jit
def check_closed(offsets: Any, targets: Any, owner: Any, winner: Any, strategy: Any) -> Any:
    """Part 1 of ``certificate.check_certificate``: ``(code, vertex, other)`` of the first
    problem in vertex order, code 0 when every region is closed.

    Codes: 1 a winner that is not 0 or 1; 2 an owner that wins with no pick (-1); 3 a pick
    that is not a successor (``other`` is the pick); 4 a pick that leaves the region
    (``other`` is the pick); 5 a loser's move out of the region (``other`` is its target).
    """
    n = owner.shape[0]
    for v in range(n):
        side = winner[v]
        if side != 0 and side != 1:
            return 1, v, side
        if owner[v] == side:
            move = strategy[v]
            if move == -1:
                return 2, v, move
            found = False
            for e in range(offsets[v], offsets[v + 1]):
                if targets[e] == move:
                    found = True
                    break
            if not found:
                return 3, v, move
            if winner[move] != side:
                return 4, v, move
        else:
            for e in range(offsets[v], offsets[v + 1]):
                w = targets[e]
                if winner[w] != side:
                    return 5, v, w
    return 0, -1, -1


@jit
def losing_cycle(
    offsets: Any, targets: Any, owner: Any, priority: Any, winner: Any, strategy: Any, side: int
) -> int:
    """Part 2 of ``certificate.check_certificate`` for ``side``: the top vertex of a cycle in
    its region whose top priority is the opponent's, or -1.

    The same splitting as the Python checker: strongly connected components (Tarjan's,
    without recursion), and inside one that has a loser's priority but a higher one of the
    winner's on top, the vertices at or below the loser's highest split again.
    """
    n = owner.shape[0]
    piece = np.full(n, -1, dtype=np.int64)
    index = np.full(n, -1, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64)
    on_stack = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int32)
    frames = np.empty(n, dtype=np.int32)  # the depth-first path
    cursor = np.empty(n, dtype=np.int64)  # the next edge to look at, per vertex on the path
    component = np.empty(n, dtype=np.int32)
    members = np.empty(n, dtype=np.int32)  # the piece being split, copied out of pending
    # Pieces still to split, each a run of ``pending`` between two of ``bounds``.
    pending = np.empty(n, dtype=np.int32)
    bounds = np.empty(n + 1, dtype=np.int64)
    top = 0
    for v in range(n):
        if winner[v] == side:
            pending[top] = v
            top += 1
    pieces = 0
    if top > 0:
        bounds[0] = 0
        bounds[1] = top
        pieces = 1
    label = 0
    counter = 0
    while pieces > 0:
        begin = bounds[pieces - 1]
        end = bounds[pieces]
        pieces -= 1
        size_of_piece = end - begin
        for k in range(size_of_piece):
            u = pending[begin + k]
            members[k] = u
            piece[u] = label
            index[u] = -1
        free = begin  # where the pieces this one splits into go, over it in ``pending``
        # Tarjan's algorithm over the members, edges restricted to the piece; a winner's
        # vertex keeps only its pick.
        depth_stack = 0
        for r in range(size_of_piece):
            root = members[r]
            if index[root] >= 0:
                continue
            index[root] = counter
            low[root] = counter
            counter += 1
            stack[depth_stack] = root
            depth_stack += 1
            on_stack[root] = True
            path = 0
            frames[path] = root
            cursor[root] = offsets[root]
            path = 1
            while path > 0:
                v = frames[path - 1]
                advanced = False
                while True:
                    if owner[v] == side:
                        # one move: the pick, looked at once
                        if cursor[v] > offsets[v]:
                            break
                        cursor[v] += 1
                        w = strategy[v]
                    else:
                        if cursor[v] >= offsets[v + 1]:
                            break
                        w = targets[cursor[v]]
                        cursor[v] += 1
                    if piece[w] != label:
                        continue
                    if index[w] < 0:
                        index[w] = counter
                        low[w] = counter
                        counter += 1
                        stack[depth_stack] = w
                        depth_stack += 1
                        on_stack[w] = True
                        frames[path] = w
                        cursor[w] = offsets[w]
                        path += 1
                        advanced = True
                        break
                    if on_stack[w] and index[w] < low[v]:
                        low[v] = index[w]
                if advanced:
                    continue
                path -= 1
                if path > 0:
                    parent = frames[path - 1]
                    if low[v] < low[parent]:
                        low[parent] = low[v]
                if low[v] != index[v]:
                    continue
                size = 0
                while True:
                    depth_stack -= 1
                    w = stack[depth_stack]
                    on_stack[w] = False
                    component[size] = w
                    size += 1
                    if w == v:
                        break
                if size == 1:
                    u = component[0]
                    loops = False
                    if owner[u] == side:
                        loops = strategy[u] == u
                    else:
                        for e in range(offsets[u], offsets[u + 1]):
                            if targets[e] == u:
                                loops = True
                                break
                    if not loops:
                        continue
                worst = -1
                worst_vertex = -1
                highest = -1
                for k in range(size):
                    u = component[k]
                    p = priority[u]
                    if p > highest:
                        highest = p
                    if p % 2 != side and p > worst:
                        worst = p
                        worst_vertex = u
                if worst < 0:
                    continue
                if highest == worst:
                    return worst_vertex
                # Split again what lies at or below the loser's top (a new piece).
                start = free
                for k in range(size):
                    u = component[k]
                    if priority[u] <= worst:
                        pending[free] = u
                        free += 1
                bounds[pieces] = start
                bounds[pieces + 1] = free
                pieces += 1
        label += 1
    return -1


@jit
def _digits(buffer: Any, at: int, value: int) -> int:
    """Write ``value`` (0 or more) in decimal at ``buffer[at:]``; return the end."""
    if value == 0:
        buffer[at] = 48
        return at + 1
    end = at
    rest = value
    while rest > 0:
        end += 1
        rest //= 10
    k = end
    rest = value
    while rest > 0:
        k -= 1
        buffer[k] = 48 + rest % 10
        rest //= 10
    return end


@jit
def pgsolver_lines(owner: Any, priority: Any, offsets: Any, targets: Any) -> Any:
    """The vertex lines of a PGSolver file, ``v priority owner w,w,...;`` each, as ASCII
    bytes (no names: an array game has none)."""
    n = owner.shape[0]
    m = targets.shape[0]
    buffer = np.empty(n * 46 + m * 11 + 16, dtype=np.uint8)
    at = 0
    for v in range(n):
        at = _digits(buffer, at, v)
        buffer[at] = 32
        at = _digits(buffer, at + 1, priority[v])
        buffer[at] = 32
        at = _digits(buffer, at + 1, owner[v])
        buffer[at] = 32
        at += 1
        for e in range(offsets[v], offsets[v + 1]):
            if e > offsets[v]:
                buffer[at] = 44
                at += 1
            at = _digits(buffer, at, targets[e])
        buffer[at] = 59
        buffer[at + 1] = 10
        at += 2
    return buffer[:at]


PARSED = 0
"""``parse_pgsolver`` read the file."""
NOT_PLAIN = 1
"""``parse_pgsolver`` met text outside the plain form it reads (or the file is malformed)."""
BOUND_TOO_LARGE = 2
"""The header's bound is the file's length in bytes or more, or past 32-bit ids: a table
indexed by id would outgrow the file."""
NOT_A_GAME = 3
"""The lines are plain but the game is not right: an owner other than 0 or 1, an id above
the bound or defined twice, a successor or start that is not defined."""

_PARITY = np.frombuffer(b"parity", dtype=np.uint8)
_START = np.frombuffer(b"start", dtype=np.uint8)
_TAB = ord("\t")
_NEWLINE = ord("\n")
_CARRIAGE = ord("\r")
_SPACE = ord(" ")
_QUOTE = ord('"')
_COMMA = ord(",")
_SEMICOLON = ord(";")
_BACKSLASH = ord("\\")
_S = ord("s")
_ZERO = ord("0")
_NINE = ord("9")
_MAX_DIGITS = 18  # as ``pgsolver._MAX_DIGITS``: an int64 holds every number read


@jit
def _blanks(data: Any, at: int) -> int:
    """Where the spaces and tabs from ``at`` end."""
    size = data.shape[0]
    while at < size and (data[at] == _SPACE or data[at] == _TAB):
        at += 1
    return at


@jit
def _whole(data: Any, at: int) -> Any:
    """The number written at ``at`` as ``(value, end)``; ``end`` is -1 when no digit is
    there or more than 18 are (the Python reader refuses those with its own message)."""
    size = data.shape[0]
    end = at
    value = 0
    while end < size and data[end] >= _ZERO and data[end] <= _NINE:
        if end - at == _MAX_DIGITS:
            return 0, -1
        value = value * 10 + (int(data[end]) - _ZERO)
        end += 1
    if end == at:
        return 0, -1
    return value, end


@jit
def _line_end(data: Any, at: int) -> int:
    """Past the blanks from ``at`` and the ``\\n`` that ends the line (or the file's end),
    or -1 when anything else follows."""
    at = _blanks(data, at)
    if at == data.shape[0]:
        return at
    if data[at] == _NEWLINE:
        return at + 1
    return -1


@jit
def _keyword(data: Any, at: int, word: Any) -> Any:
    """The line ``word N;`` from ``at`` as ``(N, start of the next line)``; the position is
    -1 when the line is not one."""
    size = data.shape[0]
    at = _blanks(data, at)
    if at + word.shape[0] > size:
        return 0, -1
    for k in range(word.shape[0]):
        if data[at + k] != word[k]:
            return 0, -1
    at += word.shape[0]
    after = _blanks(data, at)
    if after == at:
        return 0, -1
    value, at = _whole(data, after)
    if at < 0:
        return 0, -1
    at = _blanks(data, at)
    if at == size or data[at] != _SEMICOLON:
        return 0, -1
    return value, _line_end(data, at + 1)


@jit
def _past_name(data: Any, at: int) -> int:
    """Past the closing quote of a name whose text starts at ``at``, or -1 when the line
    ends first. A backslash escapes the byte after it; a name's line breaks are escaped,
    never raw, so a raw one ends the line as the Python reader splits lines."""
    size = data.shape[0]
    while at < size:
        byte = data[at]
        if byte == _QUOTE:
            return at + 1
        if byte == _NEWLINE or byte == _CARRIAGE:
            return -1
        if byte == _BACKSLASH:
            at += 1
            if at == size or data[at] == _NEWLINE or data[at] == _CARRIAGE:
                return -1
        at += 1
    return -1


@jit
def _field(data: Any, at: int) -> Any:
    """A vertex's id, priority or owner at ``at`` and the position past the blanks that
    must follow it; the position is -1 when either is missing."""
    value, at = _whole(data, at)
    if at < 0:
        return value, at
    after = _blanks(data, at)
    return value, (-1 if after == at else after)


@jit
def _failed(code: int) -> Any:
    """The answer of ``parse_pgsolver`` for a file it does not read."""
    return (
        code,
        np.zeros(0, dtype=np.int8),
        np.zeros(0, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int64),
        0,
    )


@jit
def parse_pgsolver(data: Any) -> Any:
    """Read a PGSolver game file in its plain form, from its bytes (a uint8 array).

    Returns ``(status, owner, priority, offsets, targets, ids, start)``: the arrays of an
    ``ArrayGame``, vertices renumbered in increasing id order with ``ids`` their ids in the
    file, each vertex's successors without repeats in the order first listed (as
    ``GameGraph.successors``), names skipped; or a nonzero status (``NOT_PLAIN``,
    ``BOUND_TOO_LARGE``, ``NOT_A_GAME``) and empty arrays.

    The plain form is what writers produce: ``parity N;`` on the first line, then
    ``start S;`` or not, then vertex lines ``id priority owner s,s,...`` with an optional
    quoted name, and ``;``; every line ends with ``\\n`` (the last may end the file), blanks
    are spaces and tabs. Everything else the Python reader accepts (a byte order mark,
    ``\\r``, blank or comment lines, other white space) or refuses is left to it, so that it
    reads the file or names the line at fault: this reader never explains, it only declines.

    Two passes over the bytes and one over the ids up to ``N``, which is below the file's
    length, so time and memory are linear in the file.
    """
    size = data.shape[0]
    lines = 1
    commas = 0
    for k in range(size):
        byte = data[k]
        if byte == _NEWLINE:
            lines += 1
        elif byte == _COMMA:
            commas += 1
    bound, at = _keyword(data, 0, _PARITY)
    if at < 0:
        return _failed(NOT_PLAIN)
    if bound >= size or bound >= 2**31 - 1:
        return _failed(BOUND_TOO_LARGE)
    start_id = -1
    first = _blanks(data, at)
    if first < size and data[first] == _S:
        start_id, at = _keyword(data, at, _START)
        if at < 0:
            return _failed(NOT_PLAIN)
        if start_id > bound:
            return _failed(NOT_A_GAME)
    # Per vertex line, in the file's order; a vertex's moves end at ``row_end``.
    row_priority = np.empty(lines, dtype=np.int64)
    row_owner = np.empty(lines, dtype=np.int8)
    row_end = np.empty(lines, dtype=np.int64)
    moves = np.empty(lines + commas, dtype=np.int32)  # as ids; a move is a comma or a line
    row_of = np.full(bound + 1, -1, dtype=np.int32)  # per id: its line, later its vertex
    rows = 0
    edges = 0
    while at < size:
        ident, at = _field(data, _blanks(data, at))
        if at < 0:
            return _failed(NOT_PLAIN)
        if ident > bound or row_of[ident] >= 0:
            return _failed(NOT_A_GAME)
        priority, at = _field(data, at)
        if at < 0:
            return _failed(NOT_PLAIN)
        owner, at = _field(data, at)
        if at < 0:
            return _failed(NOT_PLAIN)
        if owner > 1:
            return _failed(NOT_A_GAME)
        while True:
            target, at = _whole(data, at)
            if at < 0:
                return _failed(NOT_PLAIN)
            if target > bound:
                return _failed(NOT_A_GAME)
            moves[edges] = target
            edges += 1
            at = _blanks(data, at)
            if at == size or data[at] != _COMMA:
                break
            at = _blanks(data, at + 1)
        if at < size and data[at] == _QUOTE:
            at = _past_name(data, at + 1)
            if at < 0:
                return _failed(NOT_PLAIN)
            at = _blanks(data, at)
        if at == size or data[at] != _SEMICOLON:
            return _failed(NOT_PLAIN)
        at = _line_end(data, at + 1)
        if at < 0:
            return _failed(NOT_PLAIN)
        row_of[ident] = rows
        row_priority[rows] = priority
        row_owner[rows] = owner
        row_end[rows] = edges
        rows += 1
    if rows == 0:
        return _failed(NOT_PLAIN)
    # Renumber in increasing id order; ``row_of`` then maps an id to its vertex.
    ids = np.empty(rows, dtype=np.int64)
    row = np.empty(rows, dtype=np.int32)
    v = 0
    for ident in range(bound + 1):
        if row_of[ident] >= 0:
            ids[v] = ident
            row[v] = row_of[ident]
            row_of[ident] = v
            v += 1
    owners = np.empty(rows, dtype=np.int8)
    priorities = np.empty(rows, dtype=np.int64)
    offsets = np.empty(rows + 1, dtype=np.int64)
    targets = np.empty(edges, dtype=np.int32)
    seen = np.full(rows, -1, dtype=np.int32)  # the last vertex that moved to each one
    offsets[0] = 0
    kept = 0
    for v in range(rows):
        r = row[v]
        owners[v] = row_owner[r]
        priorities[v] = row_priority[r]
        for e in range(0 if r == 0 else row_end[r - 1], row_end[r]):
            w = row_of[moves[e]]
            if w < 0:
                return _failed(NOT_A_GAME)
            if seen[w] != v:
                seen[w] = v
                targets[kept] = w
                kept += 1
        offsets[v + 1] = kept
    start = 0
    if start_id >= 0:
        start = row_of[start_id]
        if start < 0:
            return _failed(NOT_A_GAME)
    return PARSED, owners, priorities, offsets, targets[:kept], ids, start
