"""References attached to check reports: what backs a result, and what is deliberately absent."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

__all__ = [
    "REFS",
    "REF_EGGAN",
    "REF_KARP",
    "REF_MEAN_PAYOFF_GAMES",
    "REF_TRUFFET_BAN",
    "REF_ZIELONKA",
    "Ref",
]


@attrs.frozen
class Ref:
    """A reference a check report cites by ``key``.

    Parameters:
        key: short stable identifier stored in decision records.
        citation: the published source, or a statement of a deliberate absence.
        note: how this package uses it and where the tests check it.
    """

    key: str
    citation: str
    note: str


REF_ZIELONKA = Ref(
    key="zielonka-1998",
    citation=(
        "W. Zielonka, Infinite games on finitely coloured graphs with applications to automata"
        " on infinite trees, Theoretical Computer Science 200 (1998)"
    ),
    note=(
        "recursive parity-game algorithm behind parity_win; tests compare it with enumeration"
        " of positional strategies on random one- and two-player games"
    ),
)
REF_KARP = Ref(
    key="karp-1978",
    citation=(
        "R. M. Karp, A characterization of the minimum cycle mean in a digraph,"
        " Discrete Mathematics 23 (1978)"
    ),
    note=(
        "maximum mean cycle behind nonnegative_mean, one-player (a best case when some states"
        " are environment-owned), computed by Howard's policy iteration; tests compare it with"
        " Karp's algorithm and with enumeration of simple cycles"
    ),
)
REF_MEAN_PAYOFF_GAMES = Ref(
    key="mean-payoff-games",
    citation=(
        "A. Ehrenfeucht and J. Mycielski, Positional strategies for mean payoff games,"
        " International Journal of Game Theory 8 (1979); V. Dhingra and S. Gaubert, How to"
        " solve large scale deterministic games with mean payoff by policy iteration,"
        " VALUETOOLS 2006"
    ),
    note=(
        "two-player value behind nonnegative_mean when a module uses payoff='two-player':"
        " strategy improvement with exact best replies; both returned positional strategies"
        " are checked by solving the one-player rest exactly, and tests compare the value with"
        " enumeration of positional strategies"
    ),
)
REF_EGGAN = Ref(
    key="eggan-1963",
    citation=(
        "L. C. Eggan, Transition graphs and the star-height of regular events,"
        " Michigan Mathematical Journal 10 (1963)"
    ),
    note="the cycle rank of a policy's automaton bounds the star height of its language",
)
REF_TRUFFET_BAN = Ref(
    key="no-tropical-elimination",
    citation=(
        "absent by design: the two-player tropical-elimination step for mean-payoff games"
        " (after Truffet)"
    ),
    note=(
        "not implemented, not imported, not behind a flag; a finite counterexample to that step"
        " is known, so the two-player mean payoff (payoff='two-player') uses a different,"
        " sound solver instead (see mean-payoff-games)"
    ),
)

REFS: Mapping[str, Ref] = MappingProxyType(
    {
        ref.key: ref
        for ref in (REF_ZIELONKA, REF_KARP, REF_MEAN_PAYOFF_GAMES, REF_EGGAN, REF_TRUFFET_BAN)
    }
)
"""Every reference a report may cite, by key."""
