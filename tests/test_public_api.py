"""Every public module declares `__all__`, and it matches what the module defines."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import grounded_decision
import solvi


def _public_modules(package: ModuleType) -> list[str]:
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or ".examples" in info.name:
            continue
        names.append(info.name)
    return names


MODULES = _public_modules(solvi) + _public_modules(grounded_decision)


@pytest.mark.parametrize("name", MODULES)
def test_module_all_matches_its_definitions(name: str) -> None:
    """__all__ exists, every listed name imports, and every public definition is listed."""
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    for item in exported:
        assert hasattr(module, item), f"{name}.__all__ lists {item!r}, which it lacks"
    defined = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == name
    }
    missing = defined - set(exported)
    assert not missing, f"{name} defines public {sorted(missing)} but leaves them out of __all__"
