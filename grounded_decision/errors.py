"""The exceptions grounded_decision raises; each names the thing, the problem and the fix."""

from __future__ import annotations

__all__ = [
    "CertificateError",
    "ChartError",
    "EvidenceError",
    "GameTooLarge",
    "GroundedDecisionError",
    "ParityUnsolved",
    "PgsolverFormatError",
    "PolicyCompileError",
    "PolicySyntaxError",
    "ProgressRefused",
    "RecordError",
    "SolverChoiceError",
]


class GroundedDecisionError(Exception):
    """Base class of every error grounded_decision raises on purpose."""


class ChartError(GroundedDecisionError, ValueError):
    """A statechart is malformed, or a step names a state it does not have."""

    def __init__(self, message: str, *, chart: str, name: str | None = None) -> None:
        super().__init__(message)
        self.chart = chart
        self.name = name


class PolicySyntaxError(GroundedDecisionError, ValueError):
    """A text policy does not parse; carries the 1-based line and column and what was expected."""

    def __init__(self, message: str, *, line: int, column: int, expected: str, got: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.expected = expected
        self.got = got


class PolicyCompileError(GroundedDecisionError, ValueError):
    """A text policy parses but cannot become a deterministic statechart."""


class GameTooLarge(GroundedDecisionError, ValueError):
    """A game has more vertices than a solver's limit allows.

    ``setting`` names the ``Limits`` field that was reached (``max_game_vertices`` or
    ``max_karp_vertices``); raise it, or pass ``None`` for no cap.
    """

    def __init__(
        self, message: str, *, vertices: int, limit: int, setting: str = "max_game_vertices"
    ) -> None:
        super().__init__(message)
        self.vertices = vertices
        self.limit = limit
        self.setting = setting


class ParityUnsolved(GroundedDecisionError, RuntimeError):
    """The parity solver gave up: a cap or budget of ``Limits`` was reached.

    ``setting`` names the ``Limits`` field that was reached; raise it, or pass ``None``
    for no cap.
    """

    def __init__(self, message: str, *, limit: float, setting: str = "max_parity_depth") -> None:
        super().__init__(message)
        self.limit = limit
        self.setting = setting


class ProgressRefused(GroundedDecisionError, RuntimeError):
    """A module's progress check was refused by a cap of ``Limits``, not failed: whether
    the chart keeps going is unknown, so a check built on it has no value to give.

    ``setting`` names the ``Limits`` field that was reached (``None`` when unknown).

    .. versionadded:: Unreleased
    """

    def __init__(self, message: str, *, setting: str | None) -> None:
        super().__init__(message)
        self.setting = setting


class PgsolverFormatError(GroundedDecisionError, ValueError):
    """A PGSolver game or solution file is malformed; ``line`` is the 1-based line at fault.

    .. versionadded:: Unreleased
    """

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


class CertificateError(GroundedDecisionError, ValueError):
    """A parity solution's strategies do not prove its winning regions.

    ``vertex`` is a vertex at fault, when one can be named.

    .. versionadded:: Unreleased
    """

    def __init__(self, message: str, *, vertex: int | None = None) -> None:
        super().__init__(message)
        self.vertex = vertex


class EvidenceError(GroundedDecisionError, ValueError):
    """Evidence passed to a decision is malformed."""


class RecordError(GroundedDecisionError, ValueError):
    """A decision record read from JSON is missing a field or has a wrong type."""


class SolverChoiceError(GroundedDecisionError, ValueError):
    """A solver was asked for by a name it does not have.

    .. versionadded:: Unreleased
    """
