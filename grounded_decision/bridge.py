"""Use a module's checks as hard checks in a solvi catalog (the only place that imports solvi)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from grounded_decision.errors import EvidenceError
from grounded_decision.evidence import Evidence
from grounded_decision.module import Event, Module, Verdict
from solvi import Catalog

__all__ = ["decision_check", "progress_check"]


def _named(func: Callable[..., bool], name: str, params: list[str]) -> Callable[..., bool]:
    """Give ``func`` the part name and the parameter names solvi reads its inputs from."""
    func.__name__ = name
    func.__qualname__ = name
    func.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect.signature
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params],
        return_annotation=bool,
    )
    return func


def progress_check(catalog: Catalog, module: Module, *, reads: str, name: str | None = None) -> str:
    """Declare the module's progress check (``game``) as a hard check in ``catalog``.

    The check's value is the result the module computed once when it was built: if the chart
    cannot keep going, the check fails and settles (forces or abstains) every question whose
    flow holds it.

    Parameters:
        catalog: the solvi catalog to declare into.
        module: the policy module.
        reads: the fact or request key the check depends on, so flows that have it include
            the check.
        name: the part name; defaults to ``<module name>_keeps_going``.

    Returns:
        The part name, to use in rules or in ``Question(requires=...)``.

    Raises:
        solvi.CatalogError: when the name is taken or not an identifier.
    """
    part = name or f"{module.name}_keeps_going"
    passed = module.progress.passed

    def keeps_going(_fact: object) -> bool:
        return passed

    catalog.check(hard=True)(_named(keeps_going, part, [reads]))
    return part


def decision_check(
    catalog: Catalog,
    module: Module,
    *,
    event: str,
    evidence: str,
    name: str | None = None,
) -> str:
    """Declare a hard check that runs ``module.decide`` and passes when the verdict is ``act``.

    Parameters:
        catalog: the solvi catalog to declare into.
        module: the policy module; it keeps each entity's state across requests.
        event: the fact holding the ``Event`` (or an event name for the default entity).
        evidence: the fact holding the ``Evidence``.
        name: the part name; defaults to ``<module name>_acts``.

    Returns:
        The part name.

    Raises:
        solvi.CatalogError: when the name is taken or not an identifier.
    """
    part = name or f"{module.name}_acts"

    def acts(happened: object, support: object) -> bool:
        if not isinstance(support, Evidence):
            msg = f"fact {evidence!r} must hold an Evidence, got {type(support).__name__}"
            raise EvidenceError(msg)
        chosen = happened if isinstance(happened, Event) else Event(str(happened))
        return module.decide(chosen, support).verdict is Verdict.ACT

    catalog.check(hard=True)(_named(acts, part, [event, evidence]))
    return part
