"""From a text policy to a minimal deterministic automaton, and from that to a statechart.

Thompson's construction gives an automaton with empty moves; the subset construction makes
it deterministic and Hopcroft's partition refinement makes it minimal. Symbols are
``("test", event)`` and ``("act", action)``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from types import MappingProxyType

import attrs

from grounded_decision.errors import PolicyCompileError
from grounded_decision.policy.parse import (
    MAX_POLICY_STATES,
    MAX_POLICY_TRANSITIONS,
    Act,
    Alt,
    Expr,
    Seq,
    Star,
    Test,
    too_many_states,
    too_many_transitions,
)
from grounded_decision.statechart.chart import State, Statechart, Transition

__all__ = [
    "ACTION_PRIORITY",
    "MAX_POLICY_STATES",
    "MAX_POLICY_TRANSITIONS",
    "POSITIONS_PER_STATE",
    "WAITING_PRIORITY",
    "Dfa",
    "Symbol",
    "compile_policy",
    "cycle_rank",
    "dfa_to_statechart",
]

Symbol = tuple[str, str]
"""``("test", event)`` or ``("act", action)``."""

ACTION_PRIORITY = 2
"""Priority of text-policy states that propose an action, and of final states (even)."""
WAITING_PRIORITY = 1
"""Priority of every other text-policy state (odd: not progress)."""
#: how many positions of the policy the automaton's states may hold in all, per state
#: ``max_states`` allows: ``test(e0)* ; test(e1)* ; ...`` has a state per star, each
#: holding every later step, so a long chain would fill memory (n states of n positions)
#: long before it reached the state cap
POSITIONS_PER_STATE = 500


class _Nfa:
    """Thompson automaton under construction: one owner, discarded after the subset step.

    Only the entry of a ``test`` or ``act`` has a move on a symbol, and it has one, so
    each state holds its move or ``None``; symbols are shared, one tuple per name.
    """

    def __init__(self) -> None:
        self.empty: list[list[int]] = []
        self.moves: list[tuple[Symbol, int] | None] = []
        self.symbols: dict[Symbol, Symbol] = {}

    def new(self) -> int:
        self.empty.append([])
        self.moves.append(None)
        return len(self.empty) - 1

    def build(self, expr: Expr) -> tuple[int, int]:
        """Return (entry, exit) states of a fragment accepting the expression's words."""
        if isinstance(expr, Test | Act):
            entry, exit_ = self.new(), self.new()
            symbol = ("test", expr.event) if isinstance(expr, Test) else ("act", expr.action)
            self.moves[entry] = (self.symbols.setdefault(symbol, symbol), exit_)
            return entry, exit_
        if isinstance(expr, Seq):
            entry, exit_ = self.build(expr.parts[0])
            for part in expr.parts[1:]:
                head, tail = self.build(part)
                self.empty[exit_].append(head)
                exit_ = tail
            return entry, exit_
        entry, exit_ = self.new(), self.new()
        if isinstance(expr, Alt):
            for option in expr.options:
                head, tail = self.build(option)
                self.empty[entry].append(head)
                self.empty[tail].append(exit_)
            return entry, exit_
        head, tail = self.build(expr.body)
        self.empty[entry] += [head, exit_]
        self.empty[tail] += [head, exit_]
        return entry, exit_


#: how many states, per automaton state, the closure sets kept between subset steps may
#: hold in all; past it a state's closure is walked afresh each time it is needed
_CLOSURE_ROOM = 16


class _Closures:
    """Where empty moves lead, for the subset step: of a set of automaton states, the
    states it reaches that have a move of their own, plus `final` (acceptance).

    Two subsets alike in these behave alike, so the subset step keeps only them, and
    ``(test(e) ; act(a) | ...)*`` then needs one subset after every act, not one per
    alternative. Each state's set is worked out when first needed, strongly connected
    parts of the empty moves together, in reverse topological order (Tarjan's order on
    an explicit stack), and kept: a state that adds nothing shares its successor's set.
    Kept sets may hold ``_CLOSURE_ROOM`` states per automaton state in all, because a
    chain such as ``test(a)* ; test(a)* ; ...`` has as many different sets as stars,
    each as long as the rest of the chain; past that room a state keeps no set, and a
    walk from it stops at the states that do, so the work stays linear.
    """

    def __init__(self, nfa: _Nfa, final: int, most: int | None = None) -> None:
        count = len(nfa.empty)
        self.empty = nfa.empty
        self.matters = [move is not None or state == final for state, move in enumerate(nfa.moves)]
        #: no more than the automaton's states may hold (`most`): a set kept beyond
        #: that would only fill memory before the policy is refused
        self.room = _CLOSURE_ROOM * count if most is None else min(_CLOSURE_ROOM * count, most)
        self.index = [-1] * count
        self.low = [0] * count
        self.on_stack = [False] * count
        self.component = [-1] * count
        self.sets: list[frozenset[int] | None] = []
        #: each kept set once: two parts reaching the same states keep one object, so the
        #: subset step finds it by identity instead of comparing it element by element
        self.kept: dict[frozenset[int], frozenset[int]] = {}
        self.counter = 0

    def of(self, states: Iterable[int]) -> frozenset[int]:
        """Return the states that matter reached from `states` by empty moves."""
        pending = list(states)
        for state in pending:
            if self.index[state] == -1:
                self._settle(state)
        seen: set[int] = set()
        parts: dict[int, frozenset[int]] = {}
        own: set[int] = set()
        while pending:
            state = pending.pop()
            if state in seen:
                continue
            seen.add(state)
            known = self.sets[self.component[state]]
            if known is not None:
                parts[id(known)] = known
                continue
            if self.matters[state]:
                own.add(state)
            pending += self.empty[state]
        if not own and len(parts) == 1:
            return next(iter(parts.values()))  # the kept set itself, its hash known
        return frozenset(own.union(*parts.values()))

    def _settle(self, root: int) -> None:
        """Work out the sets of every state reachable from `root` not yet settled."""
        index, low, on_stack, component = self.index, self.low, self.on_stack, self.component
        stack: list[int] = []
        work = [(root, 0)]
        while work:
            state, child = work.pop()
            if child == 0:
                index[state] = low[state] = self.counter
                self.counter += 1
                stack.append(state)
                on_stack[state] = True
            successors = self.empty[state]
            if child < len(successors):
                work.append((state, child + 1))
                nxt = successors[child]
                if index[nxt] == -1:
                    work.append((nxt, 0))
                elif on_stack[nxt]:
                    low[state] = min(low[state], index[nxt])
                continue
            if work and work[-1][0] != state:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[state])
            if low[state] != index[state]:
                continue
            members = []
            while True:
                member = stack.pop()
                on_stack[member] = False
                component[member] = len(self.sets)
                members.append(member)
                if member == state:
                    break
            self.sets.append(self._kept(members))

    def _kept(self, members: list[int]) -> frozenset[int] | None:
        """The set a new strongly connected part keeps, or None past the room."""
        own = {m for m in members if self.matters[m]}
        below = {
            self.component[nxt]
            for m in members
            for nxt in self.empty[m]
            if self.component[nxt] != len(self.sets)
        }
        sets = [self.sets[c] for c in below]
        if not own and len(sets) == 1:
            return sets[0]  # adds nothing: share it
        whole = [part for part in sets if part is not None]
        if len(whole) < len(sets) or len(own) + sum(map(len, whole)) > self.room:
            return None  # a set below keeps nothing, or no room is left
        kept = frozenset(own.union(*whole))
        known = self.kept.setdefault(kept, kept)
        if known is kept:
            self.room -= len(kept)
        return known


@attrs.frozen
class Dfa:
    """A deterministic automaton without a dead state (missing moves reject).

    Parameters:
        start: the initial state.
        accepting: states where a whole policy run may end.
        delta: for each state, its moves ``symbol -> state``.
    """

    start: int
    accepting: frozenset[int]
    delta: tuple[Mapping[Symbol, int], ...]

    def __len__(self) -> int:
        """Return the number of states."""
        return len(self.delta)

    def run(self, word: Iterable[Symbol]) -> int | None:
        """Return the state reached after reading ``word``, or ``None`` if it falls off."""
        state: int | None = self.start
        for symbol in word:
            if state is None:
                return None
            state = self.delta[state].get(symbol)
        return state

    def accepts(self, word: Iterable[Symbol]) -> bool:
        """Return whether the automaton accepts ``word``."""
        state = self.run(word)
        return state is not None and state in self.accepting


def compile_policy(expr: Expr, *, max_states: int | None = MAX_POLICY_STATES) -> Dfa:
    """Return the minimal deterministic automaton of a policy, states numbered breadth-first.

    The subset construction can need exponentially many states (``(test(a) | test(b))* ;
    test(a)`` followed by ``k`` more steps needs about ``2**k``), so it stops past
    ``max_states`` states (``None``: no cap). ``parse(text, max_states=...)`` refuses, with
    the same words and while reading, a policy whose text already shows it needs more.

    Raises:
        PolicyCompileError: when the automaton would need more than ``max_states`` states,
            or its states would hold more than ``POSITIONS_PER_STATE * max_states``
            positions of the policy in all.
        TypeError: when ``expr`` is not a policy tree.
    """
    if not isinstance(expr, Test | Act | Seq | Alt | Star):
        msg = (
            "a policy must be a tree of Test, Act, Seq, Alt and Star nodes, got"
            f" {type(expr).__name__}: {expr!r:.60}; read text with parse(text)"
        )
        raise TypeError(msg)
    nfa = _Nfa()
    entry, exit_ = nfa.build(expr)
    room = None if max_states is None else POSITIONS_PER_STATE * max(max_states, 1)
    closures = _Closures(nfa, exit_, room)
    first = closures.of((entry,))
    subsets = {first: 0}
    order = [first]
    raw: list[dict[Symbol, int]] = []
    for subset in order:
        targets: dict[Symbol, set[int]] = {}
        for state in subset:
            move = nfa.moves[state]
            if move is not None:
                targets.setdefault(move[0], set()).add(move[1])
        row: dict[Symbol, int] = {}
        for symbol in sorted(targets):
            closed = closures.of(targets[symbol])
            if closed not in subsets:
                if max_states is not None and len(order) >= max_states:
                    raise too_many_states(max_states)
                if room is not None:
                    room -= len(closed)
                    if room < 0:
                        raise _too_large(max_states)
                subsets[closed] = len(order)
                order.append(closed)
            row[symbol] = subsets[closed]
        raw.append(row)
    accepting = frozenset(i for i, subset in enumerate(order) if exit_ in subset)
    return _minimise(raw, accepting)


def _too_large(max_states: int | None) -> PolicyCompileError:
    """The refusal of a policy whose automaton's states would hold more positions of it
    than ``max_states`` allows (see `POSITIONS_PER_STATE`)."""
    msg = (
        f"policy's automaton states would hold more than "
        f"{POSITIONS_PER_STATE * max(max_states or 1, 1):,} positions of it in all (limit "
        f"POSITIONS_PER_STATE = {POSITIONS_PER_STATE} per state of max_states = {max_states}),"
        f" as a long chain of starred steps does; shorten it, or compile it with"
        f" compile_policy(expr, max_states=None), which caps nothing"
    )
    return PolicyCompileError(msg)


def _coarsest_blocks(raw: list[dict[Symbol, int]], accepting: frozenset[int]) -> list[int]:
    """Each state's block in the coarsest partition that respects acceptance and moves.

    Hopcroft's refinement, for an automaton whose missing moves reject: every block of the
    first partition starts as a splitter (Beal and Crochemore), then a split block adds its
    smaller half, so the time grows as ``m log n`` rather than Moore's ``m n``.
    """
    preds: list[list[tuple[Symbol, int]]] = [[] for _ in raw]
    for state, row in enumerate(raw):
        for symbol, nxt in row.items():
            preds[nxt].append((symbol, state))
    first = [[s for s in range(len(raw)) if s not in accepting], sorted(accepting)]
    blocks = [set(members) for members in first if members]
    block = [0] * len(raw)
    for number, members in enumerate(blocks):
        for state in members:
            block[state] = number
    waiting = list(range(len(blocks)))
    queued = set(waiting)
    while waiting:
        splitter = waiting.pop()
        queued.discard(splitter)
        sources: dict[Symbol, set[int]] = {}
        for target in blocks[splitter]:
            for symbol, state in preds[target]:
                sources.setdefault(symbol, set()).add(state)
        for symbol in sorted(sources):
            touched: dict[int, list[int]] = {}
            for state in sources[symbol]:
                touched.setdefault(block[state], []).append(state)
            for old, inside in touched.items():
                if len(inside) == len(blocks[old]):
                    continue
                new = len(blocks)
                blocks.append(set(inside))
                blocks[old].difference_update(inside)
                for state in inside:
                    block[state] = new
                if old in queued or len(blocks[new]) <= len(blocks[old]):
                    waiting.append(new)
                    queued.add(new)
                else:
                    waiting.append(old)
                    queued.add(old)
    return block


def _minimise(raw: list[dict[Symbol, int]], accepting: frozenset[int]) -> Dfa:
    """Merge equivalent states, then renumber breadth-first from 0."""
    block = _coarsest_blocks(raw, accepting)
    numbering = {block[0]: 0}
    queue = [0]
    rows: dict[int, dict[Symbol, int]] = {}
    for state in queue:
        renumbered: dict[Symbol, int] = {}
        for symbol, nxt in sorted(raw[state].items()):
            if block[nxt] not in numbering:
                numbering[block[nxt]] = len(numbering)
                queue.append(nxt)
            renumbered[symbol] = numbering[block[nxt]]
        rows[numbering[block[state]]] = renumbered
    return Dfa(
        start=0,
        accepting=frozenset(numbering[block[s]] for s in accepting if block[s] in numbering),
        delta=tuple(MappingProxyType(rows[i]) for i in range(len(rows))),
    )


def dfa_to_statechart(
    dfa: Dfa, name: str, *, max_transitions: int | None = MAX_POLICY_TRANSITIONS
) -> Statechart:
    """Turn a policy automaton into a statechart the module can run.

    A state with an ``act(a)`` move proposes ``a``; once proposed the action counts as
    taken, so an event continues from the state after ``act(a)`` when that state handles it,
    and otherwise from the proposing state's own ``test`` moves. States are named ``s0``,
    ``s1``, ... breadth-first from the start; priorities are ``ACTION_PRIORITY`` for states
    that propose an action or have no way out, ``WAITING_PRIORITY`` otherwise; payoffs are 0.

    Raises:
        PolicyCompileError: when one state could propose two different actions, an
            ``act`` directly follows another ``act``, an ``act`` can be the first step
            (nothing arrives at the start state, so it would never be proposed), or the
            chart would have more than ``max_transitions`` transitions (None: no cap).
    """
    first = sorted(label for (kind, label) in dfa.delta[dfa.start] if kind == "act")
    if first:
        msg = (
            f"policy {name!r}: act({first[0]}) can be the first step, but a state proposes its"
            " action when an event brings the policy there, so it would never be proposed;"
            f" an act must follow a test, e.g. test(start) ; act({first[0]})"
        )
        raise PolicyCompileError(msg)
    actions: dict[int, str | None] = {}
    moves: dict[int, dict[str, int]] = {}
    counted = 0
    for state, row in enumerate(dfa.delta):
        acts = sorted((label, nxt) for (kind, label), nxt in row.items() if kind == "act")
        if len(acts) > 1:
            names = " and ".join(repr(label) for label, _ in acts)
            msg = (
                f"policy {name!r}: one state can propose both {names}; make the choice depend"
                " on an event, e.g. test(x) ; act(a) | test(y) ; act(b)"
            )
            raise PolicyCompileError(msg)
        own = {label: nxt for (kind, label), nxt in row.items() if kind == "test"}
        if acts:
            label, after = acts[0]
            if any(kind == "act" for kind, _ in dfa.delta[after]):
                msg = (
                    f"policy {name!r}: an act(...) directly follows act({label}); a state"
                    " proposes one action, so put a test(...) between them"
                )
                raise PolicyCompileError(msg)
            own = {**own, **{lab: nxt for (kind, lab), nxt in dfa.delta[after].items()}}
            actions[state] = label
        else:
            actions[state] = None
        moves[state] = own
        counted += len(own)
        if max_transitions is not None and counted > max_transitions:
            why = (
                "each state that proposes an action also takes every move of the state"
                " after it, so many alternatives under one * multiply"
            )
            raise too_many_transitions(max_transitions, name, why)
    numbering = {dfa.start: 0}
    queue = [dfa.start]
    for state in queue:
        for event in sorted(moves[state]):
            target = moves[state][event]
            if target not in numbering:
                numbering[target] = len(numbering)
                queue.append(target)
    # One tuple of states and one of transitions: chaining .state() and .on() would copy
    # both once per call, quadratic in the size of the automaton.
    states = [
        State(
            f"s{numbering[state]}",
            initial=state == dfa.start,
            action=actions[state],
            priority=(
                ACTION_PRIORITY
                if actions[state] is not None or not moves[state]
                else WAITING_PRIORITY
            ),
        )
        for state in queue
    ]
    transitions = [
        Transition(f"s{numbering[state]}", event, f"s{numbering[moves[state][event]]}")
        for state in queue
        for event in sorted(moves[state])
    ]
    return Statechart(name, tuple(states), tuple(transitions)).validate()


def cycle_rank(
    successors: Mapping[str, Iterable[str]], *, budget: int = 20_000, max_work: int = 500_000
) -> int | None:
    """Return the cycle rank of a directed graph, or ``None`` when the search gives up.

    Rank 0 for an acyclic graph; for a strongly connected one, 1 plus the least rank left
    after removing one vertex; otherwise the largest rank among its strongly connected parts.
    The computation is exponential in the worst case, hence two budgets: ``budget`` search
    steps (vertex sets ranked) and ``max_work`` vertices and edges visited while splitting
    those sets into their strongly connected parts. The search keeps its own stack, so no
    graph is too deep for it.
    """
    graph = {v: frozenset(ws) for v, ws in successors.items()}
    memo: dict[frozenset[str], int] = {}
    root = frozenset(graph)
    spent = 0
    visits = [0]
    stack: list[tuple[frozenset[str], _Steps]] = []
    asked: frozenset[str] | None = root
    value: int | None = None
    while True:
        if asked is not None:
            known = memo.get(asked)
            if known is None:
                spent += 1
                if spent > budget or visits[0] > max_work:
                    return None
                stack.append((asked, _rank_steps(graph, asked, visits)))
                value = None
            else:
                value = known
        if not stack:
            return memo[root]
        vertices, steps = stack[-1]
        try:
            asked = next(steps) if value is None else steps.send(value)
        except StopIteration as done:
            memo[vertices] = value = done.value
            asked = None
            stack.pop()


_Steps = Generator[frozenset[str], int, int]
"""A ``_rank_steps`` search step in progress."""


def _rank_steps(
    graph: Mapping[str, frozenset[str]], vertices: frozenset[str], visits: list[int]
) -> _Steps:
    """One step of ``cycle_rank``: yields each smaller vertex set whose rank it needs (the
    caller sends the rank back) and returns the rank of ``vertices``.

    A strongly connected part stops trying vertices once one removal leaves it acyclic, or
    once it can no longer raise the largest rank found so far: the ranks it returns are the
    same as trying every vertex.
    """
    best = 0
    for part in _components(graph, vertices, visits):
        (only,) = part if len(part) == 1 else (None,)
        if only is not None and only not in graph.get(only, frozenset()):
            continue
        least: int | None = None
        for v in sorted(part):
            got = yield part - {v}
            least = got if least is None else min(least, got)
            if least == 0 or 1 + least <= best:
                break
        best = max(best, 1 + (least or 0))
    return best


def _components(
    graph: Mapping[str, frozenset[str]], vertices: frozenset[str], visits: list[int]
) -> list[frozenset[str]]:
    """Strongly connected components of the subgraph on ``vertices`` (iterative Tarjan).

    ``visits[0]`` grows by the vertices and edges visited.
    """
    visits[0] += len(vertices) + sum(len(graph.get(v, ())) for v in vertices)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[frozenset[str]] = []
    for root in sorted(vertices):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, frozenset()) & vertices)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, frozenset()) & vertices))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                part = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    part.add(w)
                    if w == v:
                        break
                parts.append(frozenset(part))
    return parts
