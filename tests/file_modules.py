"""Importing a Python file by path: the examples and benchmark scripts are not packages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_file(path: Path, name: str) -> ModuleType:
    """The file at `path` imported as a module called `name`, which is registered in
    `sys.modules` before it runs (dataclasses and attrs look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
