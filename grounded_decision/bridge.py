"""Use a module's checks as hard checks in a solvi catalog (the only place that builds on
solvi's API; the command line and certificate problems borrow only its `visible`, when
they print a name from a file).

The decision parts are pure: the entity's chart state comes in with the request and the
state reached goes out as a fact, so a stored request replays to the same answer and the
module's own memory (``Module.state_of``) is never read or moved.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

import attrs

from grounded_decision.errors import EvidenceError, ProgressRefused
from grounded_decision.evidence import Evidence
from grounded_decision.module import Decision, Event, Module, Verdict
from solvi import Catalog, CatalogError, Fail

__all__ = ["DecisionParts", "decision_check", "progress_check"]


def _named(
    func: Callable[..., object], name: str, params: list[str], returns: object
) -> Callable[..., object]:
    """Give ``func`` the part name and the parameter names solvi reads its inputs from."""
    func.__name__ = name
    func.__qualname__ = name
    func.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect.signature
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params],
        return_annotation=returns,
    )
    return func


def progress_check(catalog: Catalog, module: Module, *, reads: str, name: str | None = None) -> str:
    """Declare the module's progress check (``game``) as a hard check in ``catalog``.

    The check's value is the result the module computed once when it was built: if the chart
    cannot keep going, the check fails with the ``game`` report's summary as its reason and
    settles (forces or abstains) every question whose flow holds it. If a cap of ``Limits``
    refused the game, nothing is known either way: the check raises ``ProgressRefused``
    naming the cap, so solvi records it as the check's error and its questions abstain
    rather than read a refusal as a failure.

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

    .. versionchanged:: Unreleased a failing check gives the ``game`` summary as its reason,
       and a refused one raises ``ProgressRefused`` instead of failing.
    """
    part = name or f"{module.name}_keeps_going"
    progress = module.progress
    outcome: bool | Fail = True if progress.passed else Fail(progress.summary)

    def keeps_going(_fact: object) -> bool | Fail:
        if progress.refused:
            setting = progress.limit or "..."
            msg = (
                f"the progress check of module {module.name!r} was refused by a cap of"
                f" Limits, not failed ({progress.summary}); build the module with"
                f" limits=Limits({setting}=N), or None for no cap"
            )
            raise ProgressRefused(msg, setting=progress.limit)
        return outcome

    catalog.check(hard=True, idempotent=True)(_named(keeps_going, part, [reads], bool | Fail))
    return part


@attrs.frozen
class DecisionParts:
    """The names ``decision_check`` declared.

    Parameters:
        check: the hard check; it passes when the verdict is ``act``.
        new_state: the fact holding the state the entity reached, to send with its next event.

    .. versionadded:: Unreleased
    """

    check: str
    new_state: str


def _event(value: object, fact: str) -> Event:
    """Read an ``Event`` from the fact, or from the JSON form a stored record keeps of one."""
    if isinstance(value, Event):
        return value
    if isinstance(value, str):
        return Event(value)
    if isinstance(value, Mapping):
        name, entity = value.get("name"), value.get("entity", "default")
        if isinstance(name, str) and isinstance(entity, str) and set(value) <= {"name", "entity"}:
            return Event(name, entity=entity)
    msg = (
        f"fact {fact!r} must hold an Event, an event name or {{'name': ..., 'entity': ...}},"
        f" got {type(value).__name__}: {value!r}"
    )
    raise TypeError(msg)


def _evidence(value: object, fact: str) -> Evidence:
    """Read ``Evidence`` from the fact, or from the JSON form a stored record keeps of it."""
    if isinstance(value, Evidence):
        return value
    if isinstance(value, Mapping):
        return Evidence.from_dict(value)
    msg = (
        f"fact {fact!r} must hold an Evidence or its to_dict() form, got {type(value).__name__};"
        " build one with Evidence([Observation(...), ...])"
    )
    raise EvidenceError(msg)


def decision_check(
    catalog: Catalog,
    module: Module,
    *,
    event: str,
    evidence: str,
    state: str,
    name: str | None = None,
    new_state: str | None = None,
) -> DecisionParts:
    """Declare the module's whole decision in ``catalog``: a hard check and the state reached.

    Both parts read the same three facts or request keys (``state``, ``event``,
    ``evidence``) and call ``module.decide_from``, a pure function of them, so they cannot
    disagree and the module is never changed. The hard check passes when the verdict is
    ``act``; otherwise it fails with the decision's reason, which the answers it settles
    carry (``hard check two_path_acts failed: oldest supporting observation is 7200 s old
    (limit 900 s)``). The state fact is the decision's ``extras["state"]``, whatever the
    verdict. Neither part reads the other: had both read one shared decision fact, the
    planner would add the check to the flow of every question asking for the state, and
    early exit would skip the state exactly when the decision abstains.

    Values may be the objects or the JSON forms a stored record keeps of them (an event as
    ``{"name": ..., "entity": ...}`` or a bare name, evidence as ``Evidence.to_dict()``),
    so replaying a stored record gives the same answers.

    Parameters:
        catalog: the solvi catalog to declare into.
        module: the policy module; only its chart, rules and progress result are used.
        event: the fact holding the ``Event``.
        evidence: the fact holding the ``Evidence``.
        state: the fact holding the entity's current state name; ``None`` there means the
            chart's initial state.
        name: the check's part name; defaults to ``<module name>_acts``.
        new_state: the state fact's name; defaults to ``<module name>_next_state``.

    Returns:
        The two names declared.

    Raises:
        solvi.CatalogError: when a name is taken or not an identifier, or when ``state``,
            ``event`` and ``evidence`` do not name three different facts.

    .. versionchanged:: Unreleased ``state`` and ``new_state``; the module keeps no state.
    """
    check = name or f"{module.name}_acts"
    reached = new_state or f"{module.name}_next_state"
    params = [state, event, evidence]
    where = f"decision_check for module {module.name!r}"
    if len(set(params)) != len(params):
        msg = (
            f"{where}: state={state!r}, event={event!r} and evidence={evidence!r} must name"
            " three different facts"
        )
        raise CatalogError(msg, part=check)
    # Check both names before declaring either, so a mistake leaves the catalog as it was.
    if check == reached:
        msg = f"{where}: name= and new_state= are both {check!r}; give the two parts two names"
        raise CatalogError(msg, part=check)
    for option, part in (("name", check), ("new_state", reached)):
        if not part.isidentifier():
            msg = f"{where}: {option}={part!r} is not an identifier; pass a fact name"
            raise CatalogError(msg, part=part)
        if part in catalog:
            msg = (
                f"{where}: catalog {catalog.name!r} already has a part {part!r};"
                f" pass another {option}="
            )
            raise CatalogError(msg, part=part)

    def decide(current: object, happened: object, support: object) -> Decision:
        if current is not None and not isinstance(current, str):
            msg = (
                f"fact {state!r} must hold a state name of chart {module.chart.name!r} or None,"
                f" got {type(current).__name__}: {current!r}"
            )
            raise TypeError(msg)
        return module.decide_from(current, _event(happened, event), _evidence(support, evidence))

    def acts(current: object, happened: object, support: object) -> bool | Fail:
        decision = decide(current, happened, support)
        return True if decision.verdict is Verdict.ACT else Fail(decision.reason)

    def next_state(current: object, happened: object, support: object) -> str:
        return decide(current, happened, support).extras["state"]

    catalog.check(hard=True, idempotent=True)(_named(acts, check, params, bool | Fail))
    catalog.fn(idempotent=True)(_named(next_state, reached, params, str))
    return DecisionParts(check=check, new_state=reached)
