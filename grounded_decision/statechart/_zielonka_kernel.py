"""The compiled kernel of ``_zielonka_native`` (imported only once numba is known to be there).

Module-level functions, so that numba caches their machine code beside this file and a
process loads it rather than compiling again. ``attract_top``, ``attract_losing``,
``fix_heads`` and ``release`` are the methods of the same names of
``_zielonka_fast.ZielonkaSolver``, line for line where the data allow; ``kernel`` is its
``steps`` loop.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from grounded_decision.statechart._zielonka_native import (
    _CURSOR,
    _DEPTH,
    _HE,
    _HEADS,
    _HS,
    _ID,
    _LAST0,
    _LAST1,
    _NEXT,
    _OEND,
    _ORD,
    _OTOP,
    _PHASE,
    _PLAYER,
    _PULLED,
    _SEG0,
    _SEG1,
    _STAMP,
    _TOP0,
    _TOP1,
    _WORK,
)

__all__ = ["answer", "kernel", "prepare"]

jit = numba.njit(cache=True, nogil=True)


@jit
def grow1(a: Any, need: int) -> Any:
    """``a``, or a copy at least twice as long when it holds fewer than ``need`` items."""
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@jit
def grow2(a: Any, need: int) -> Any:
    """``grow1`` for the rows of a two-dimensional array."""
    if need <= a.shape[0]:
        return a
    b = np.zeros((max(need, 2 * a.shape[0]), a.shape[1]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@jit
def prepare(sp: Any, priority: Any, order: Any, outside: Any) -> Any:
    """The solve's starting arrays, in one pass each: ``(ordbuf, position, state, free,
    parity, size)``.

    ``order`` is every vertex to solve or more, from the highest priority down; those that
    ``outside`` marks (when it is not empty) are left out, so ``ordbuf`` starts with the
    ``size`` vertices solved, in that order, and ``position`` gives each one's place there.
    ``state`` is -1 for those and -2 for the rest.
    """
    n = sp.shape[0] - 1
    ordbuf = np.empty(max(2 * n, 16), dtype=np.int32)
    position = np.zeros(n, dtype=np.int32)
    state = np.full(n, -2, dtype=np.int64)
    size = 0
    for k in range(order.shape[0]):
        v = order[k]
        if outside.shape[0] and outside[v]:
            continue
        ordbuf[size] = v
        position[v] = size
        state[v] = -1
        size += 1
    free = np.empty(n, dtype=np.int32)
    parity = np.empty(n, dtype=np.int8)
    for v in range(n):
        free[v] = sp[v + 1] - sp[v]
        parity[v] = priority[v] & 1
    return ordbuf, position, state, free, parity, size


@jit
def answer(state: Any, strategy: Any, owner: Any) -> Any:
    """``(winner, picks)`` off a finished solve: int8 winners, int32 picks (-1 where the
    owner loses)."""
    n = state.shape[0]
    winner = np.empty(n, dtype=np.int8)
    picks = np.empty(n, dtype=np.int32)
    for v in range(n):
        side = state[v] & 1
        winner[v] = side
        picks[v] = strategy[v] if owner[v] == side else -1
    return winner, picks


@jit
def push(lv: Any, sc: Any, cursor: int, end: int, otop: int) -> Any:
    """Start a level below the top one, scanning ``ordbuf[cursor:end]``; when it ends, the
    stack of sorted lists falls back to ``otop``."""
    child = sc[_DEPTH]
    lv = grow2(lv, child + 1)
    lv[child, _ID] = sc[_NEXT]
    lv[child, _PHASE] = 0
    lv[child, _CURSOR] = cursor
    lv[child, _OEND] = end
    lv[child, _SEG0] = sc[_TOP0]
    lv[child, _SEG1] = sc[_TOP1]
    lv[child, _HS] = sc[_HEADS]
    lv[child, _HE] = sc[_HEADS]
    lv[child, _PULLED] = 0
    lv[child, _OTOP] = otop
    sc[_NEXT] += 1
    sc[_DEPTH] = child + 1
    return lv


@jit
def pop(lv: Any, sc: Any, lvl: int) -> None:
    """End the top level: its regions are the region stacks above its marks."""
    sc[_LAST0] = sc[_TOP0] - lv[lvl, _SEG0]
    sc[_LAST1] = sc[_TOP1] - lv[lvl, _SEG1]
    sc[_HEADS] = lv[lvl, _HS]
    sc[_ORD] = lv[lvl, _OTOP]
    sc[_DEPTH] = lvl


@jit
def attract_top(
    pp: Any,
    px: Any,
    owner: Any,
    parity: Any,
    state: Any,
    free: Any,
    strategy: Any,
    logs: Any,
    heads: Any,
    ordbuf: Any,
    lv: Any,
    sc: Any,
    lvl: int,
) -> bool:
    """Attract for the top free vertex's player, heads until the parity changes, onto that
    player's region stack; False when the level's subgame is empty."""
    k = lv[lvl, _CURSOR]
    end = lv[lvl, _OEND]
    while k < end and state[ordbuf[k]] >= 0:
        k += 1
    if k == end:
        return False
    player = int(parity[ordbuf[k]])
    log = logs[player]
    code = 2 * lv[lvl, _ID] + player
    seg = sc[_TOP0 + player]
    top = seg
    htop = sc[_HEADS]
    while True:
        while k < end and state[ordbuf[k]] >= 0:
            k += 1
        if k == end or parity[ordbuf[k]] != player:
            break
        v = ordbuf[k]
        state[v] = code
        strategy[v] = -1
        heads[htop] = v
        htop += 1
        q = top
        log[top] = v
        top += 1
        while q < top:
            w = log[q]
            q += 1
            for e in range(pp[w], pp[w + 1]):
                u = px[e]
                if state[u] != -1:
                    continue
                left = free[u] - 1
                free[u] = left
                if left == 0 or owner[u] == player:
                    state[u] = code
                    strategy[u] = w
                    log[top] = u
                    top += 1
    work = top - seg
    for i in range(seg, top):
        v = log[i]
        work += pp[v + 1] - pp[v]
    sc[_WORK] += work
    sc[_TOP0 + player] = top
    sc[_HEADS] = htop
    lv[lvl, _PLAYER] = player
    lv[lvl, _CURSOR] = k
    lv[lvl, _HE] = htop
    lv[lvl, _PULLED] = top - seg
    return True


@jit
def attract_losing(
    sp: Any,
    sx: Any,
    pp: Any,
    px: Any,
    owner: Any,
    state: Any,
    mark: Any,
    counted: Any,
    count: Any,
    strategy: Any,
    outbuf: Any,
    heads: Any,
    lv: Any,
    sc: Any,
    lvl: int,
) -> int:
    """Grow the opponent's region of the rest into this level's vertices and region; the
    vertices it takes are ``outbuf[:gained]``, and ``gained`` is returned."""
    player = lv[lvl, _PLAYER]
    other = 1 - player
    floor = 2 * lv[lvl, _ID]
    sc[_STAMP] += 1
    here = sc[_STAMP]
    lost = floor + other
    gained = 0
    work = 0
    for h in range(lv[lvl, _HS], lv[lvl, _HE]):
        v = heads[h]
        work += sp[v + 1] - sp[v]
        if owner[v] == player:
            stays = False
            for e in range(sp[v], sp[v + 1]):
                s = state[sx[e]]
                if s >= floor and s & 1 == player:
                    stays = True
                    break
            if not stays:
                mark[v] = here
                strategy[v] = -1
                outbuf[gained] = v
                gained += 1
        else:
            for e in range(sp[v], sp[v + 1]):
                x = sx[e]
                s = state[x]
                if s >= floor and s & 1 == other:
                    mark[v] = here
                    strategy[v] = x
                    outbuf[gained] = v
                    gained += 1
                    break
    for i in range(gained):
        state[outbuf[i]] = lost
    i = 0
    while i < gained:
        w = outbuf[i]
        i += 1
        work += pp[w + 1] - pp[w]
        for e in range(pp[w], pp[w + 1]):
            u = px[e]
            s = state[u]
            if s < floor or s & 1 != player:
                continue
            if owner[u] == other:
                mark[u] = here
                state[u] = lost
                strategy[u] = w
                outbuf[gained] = u
                gained += 1
                continue
            if counted[u] != here:
                counted[u] = here
                left = -1
                for f in range(sp[u], sp[u + 1]):
                    s = state[sx[f]]
                    if s >= floor and (s & 1 == player or mark[sx[f]] == here):
                        left += 1
                work += sp[u + 1] - sp[u]
            else:
                left = count[u] - 1
            count[u] = left
            if left == 0:
                mark[u] = here
                state[u] = lost
                strategy[u] = -1
                outbuf[gained] = u
                gained += 1
    sc[_WORK] += work + gained
    return gained


@jit
def fix_heads(
    sp: Any, sx: Any, owner: Any, state: Any, strategy: Any, heads: Any, lv: Any, lvl: int
) -> None:
    """Give each head the favoured player owns a move into the favoured player's region."""
    player = lv[lvl, _PLAYER]
    floor = 2 * lv[lvl, _ID]
    for h in range(lv[lvl, _HS], lv[lvl, _HE]):
        v = heads[h]
        if owner[v] != player:
            continue
        move = strategy[v]
        if move >= 0:
            s = state[move]
            if s >= floor and s & 1 == player:
                continue
        for e in range(sp[v], sp[v + 1]):
            s = state[sx[e]]
            if s >= floor and s & 1 == player:
                strategy[v] = sx[e]
                break


@jit
def release(
    sp: Any,
    sx: Any,
    position: Any,
    state: Any,
    free: Any,
    outbuf: Any,
    gained: int,
    won: int,
    logs: Any,
    ordbuf: Any,
    lv: Any,
    sc: Any,
    lvl: int,
) -> int:
    """Free what the favoured player still holds, to be solved afresh, as a list sorted by
    priority at ``ordbuf[sc[_ORD]:]``; return its length.

    The gained vertices (``outbuf[:gained]``) move to the opponent's region stack; what
    is left on the player's stack above the level's mark is freed, and that stack falls
    back to the mark.
    """
    player = lv[lvl, _PLAYER]
    other = 1 - player
    mine = logs[player]
    theirs = logs[other]
    otop = sc[_TOP0 + other]
    for i in range(gained):
        theirs[otop] = outbuf[i]
        otop += 1
    sc[_TOP0 + other] = otop
    base = sc[_ORD]
    rest = 0
    for i in range(lv[lvl, _SEG0 + player], sc[_TOP0 + player]):
        v = mine[i]
        if state[v] & 1 == player:
            ordbuf[base + rest] = v
            rest += 1
    sc[_TOP0 + player] = lv[lvl, _SEG0 + player]
    for i in range(base, base + rest):
        state[ordbuf[i]] = -1
    for i in range(base, base + rest):
        v = ordbuf[i]
        left = 0
        for e in range(sp[v], sp[v + 1]):
            if state[sx[e]] < 0:
                left += 1
        free[v] = left
    # Sorted by priority: the global order holds the vertices at their positions.
    keys = np.empty(rest, dtype=np.int64)
    for i in range(rest):
        keys[i] = position[ordbuf[base + i]]
    keys.sort()
    for i in range(rest):
        ordbuf[base + i] = ordbuf[keys[i]]
    sc[_WORK] += lv[lvl, _PULLED] + won + 2 * rest
    return rest


@jit
def kernel(
    sp: Any,
    sx: Any,
    pp: Any,
    px: Any,
    owner: Any,
    parity: Any,
    position: Any,
    state: Any,
    free: Any,
    mark: Any,
    counted: Any,
    count: Any,
    strategy: Any,
    outbuf: Any,
    lv: Any,
    logs: Any,
    heads: Any,
    ordbuf: Any,
    sc: Any,
    target: int,
) -> Any:
    """Run the levels on the stack ``lv`` until ``sc[_WORK]`` reaches ``target`` or the
    stack is empty; return ``(status, lv, heads, ordbuf)``, status 1 for paused and 0 for
    done, with the arrays that may have been grown. Every other array is changed in place:
    ``state`` ends as ``2 * level + winner`` per solved vertex.
    """
    n = state.shape[0]
    while sc[_DEPTH] > 0:
        if sc[_WORK] >= target:
            return 1, lv, heads, ordbuf
        lvl = sc[_DEPTH] - 1
        phase = lv[lvl, _PHASE]
        if phase == 0:
            heads = grow1(heads, sc[_HEADS] + n)
            found = attract_top(
                pp,
                px,
                owner,
                parity,
                state,
                free,
                strategy,
                logs,
                heads,
                ordbuf,
                lv,
                sc,
                lvl,
            )
            if not found:
                pop(lv, sc, lvl)  # an empty subgame: both regions empty
                continue
            lv[lvl, _PHASE] = 1
            # The level below scans the rest of the same list.
            lv = push(lv, sc, lv[lvl, _CURSOR], lv[lvl, _OEND], sc[_ORD])
            continue
        if phase == 1:
            player = lv[lvl, _PLAYER]
            won = sc[_LAST0 + player]
            gained = 0
            if sc[_LAST0 + 1 - player] > 0:
                gained = attract_losing(
                    sp,
                    sx,
                    pp,
                    px,
                    owner,
                    state,
                    mark,
                    counted,
                    count,
                    strategy,
                    outbuf,
                    heads,
                    lv,
                    sc,
                    lvl,
                )
            if gained == 0:
                # The level ends with what it and the rest won.
                fix_heads(sp, sx, owner, state, strategy, heads, lv, lvl)
                pop(lv, sc, lvl)
                continue
            ordbuf = grow1(ordbuf, sc[_ORD] + n)
            base = sc[_ORD]
            rest = release(
                sp, sx, position, state, free, outbuf, gained, won, logs, ordbuf, lv, sc, lvl
            )
            lv[lvl, _PHASE] = 2
            sc[_ORD] = base + rest
            lv = push(lv, sc, base, base + rest, base)  # it frees the list it scans
            continue
        # Phase 2: the level ends with what it lost and the rest's answer.
        pop(lv, sc, lvl)
    return 0, lv, heads, ordbuf
