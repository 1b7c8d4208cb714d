"""Loading a target: ``module:attribute`` or ``path/to/file.py:attribute``.

The module is a dotted name, imported with the current directory on
``sys.path``, or the path of a ``.py`` file, imported like ``python
path/to/file.py`` (the file's folder becomes importable). The attribute may be
dotted. Every mistake is a `TargetError` whose message names the target, says
what is wrong and how to fix it. ``solvi check``, ``solvi plan`` and ``solvi
serve`` all load their targets here.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from solvi.catalog import Catalog
from solvi.errors import CatalogError, PlanError, SolviError, _described
from solvi.system import System

__all__ = [
    "TARGET_HELP",
    "MissingAttributeError",
    "TargetError",
    "described",
    "load_attribute",
    "load_system",
]

#: What a target is, for help texts and error messages.
TARGET_HELP = (
    "module:attribute or path/to/file.py:attribute naming a System, a Catalog, or a "
    "function without arguments that returns one"
)


class TargetError(SolviError):
    """A target cannot be loaded: malformed, missing, failing on import, or of the wrong kind."""

    def __init__(self, message: str, *, target: str) -> None:
        super().__init__(message)
        self.target = target

    @property
    def catalog_mistake(self) -> bool:
        """Whether the target loaded but its catalog or System is wrong (not the target)."""
        return isinstance(self.__cause__, CatalogError | PlanError)


class MissingAttributeError(TargetError):
    """The target's module loaded but has no such attribute; `found` lists what it does have."""

    def __init__(
        self, message: str, *, target: str, module: str, attribute: str, found: tuple[str, ...]
    ) -> None:
        super().__init__(message, target=target)
        self.module = module
        self.attribute = attribute
        self.found = found

    @property
    def hint(self) -> str:
        """The Catalogs and Systems the module has, for a message (empty when none)."""
        return _it_has(self.found)


def described(value: object) -> str:
    """What a value is, for a message: ``None``, ``an int``, ``a function``, ``a class``."""
    if value is None:
        return "None"
    if isinstance(value, type):
        kind = "class"
    elif inspect.isroutine(value):
        kind = "function"
    else:
        kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def _it_has(found: tuple[str, ...]) -> str:
    return f" (it has: {', '.join(found)})" if found else ""


def _import_file(target: str, path_text: str) -> ModuleType:
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        msg = f"no file {path_text!r}; give the path of a Python file, relative to {os.getcwd()}"
        raise TargetError(msg, target=target)
    # Like `python path/to/file.py`: the file's directory is importable, so a
    # catalog can import helpers that sit next to it.
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None:
        existing_file = getattr(existing, "__file__", None)
        if existing_file is not None and Path(existing_file).resolve() == path:
            return existing
        name = f"_solvi_target_{name}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        msg = f"cannot import {path_text!r}: Python does not load files like it; use a .py file"
        raise TargetError(msg, target=target)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _import_module(target: str, name: str) -> ModuleType:
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            msg = (
                f"cannot import module {name!r}: {exc}; run solvi from the directory that "
                f"holds it, or give a file path (path/to/{name.rsplit('.', 1)[-1]}.py:attribute)"
            )
            raise TargetError(msg, target=target) from exc
        raise


@contextlib.contextmanager
def _own_argv(name: str) -> Iterator[None]:
    """Give the module ``sys.argv == [name]`` while it is imported, as if run alone.

    A module that parses its arguments on import (a top-level
    ``argparse.parse_args()``) then reads none, instead of solvi's.
    """
    saved = sys.argv
    sys.argv = [name]
    try:
        yield
    finally:
        sys.argv = saved


def _exited(target: str, module_text: str, exc: SystemExit) -> TargetError:
    msg = (
        f"module {module_text!r} exited while being imported ({exc!r}); a target module "
        f"must not run code on import: guard it with if __name__ == '__main__':"
    )
    return TargetError(msg, target=target)


def _is_own_file(file: str, module_text: str, *, is_file: bool) -> bool:
    """Whether a traceback's file is the target's module (found without importing again)."""
    path = Path(file)
    if is_file:
        with contextlib.suppress(OSError):
            return path.resolve() == Path(module_text).expanduser().resolve()
        return False
    tail = Path(*module_text.split("."))
    return path.with_suffix("").parts[-len(tail.parts) :] == tail.parts or (
        path.name == "__init__.py" and path.parent.parts[-len(tail.parts) :] == tail.parts
    )


def _shown(file: str) -> str:
    """A frame's file for a message: relative to the current directory when under it."""
    path = Path(file)
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return file


def _raised_at(exc: BaseException, module_text: str, *, is_file: bool) -> str:
    """Where an import failed, for a message: `` at file, line N (in function)``.

    The innermost frame in the target's own file says which of its lines went
    wrong, even when the error comes from a library it called; without one (the
    error is in a module it imports), the innermost frame of all.
    """
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f" at {_shown(exc.filename)}, line {exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if not frames:
        return ""
    mine = [f for f in frames if _is_own_file(f.filename, module_text, is_file=is_file)]
    frame = (mine or frames)[-1]
    return f" at {_shown(frame.filename)}, line {frame.lineno} (in {frame.name})"


def _load_module(target: str, module_text: str) -> ModuleType:
    # A file that exists is loaded as one, so `notes.txt:x` is refused as a file that
    # is not Python, not looked up as the module `txt` of a package `notes`.
    is_file = (
        module_text.endswith(".py")
        or "/" in module_text
        or os.sep in module_text
        or Path(module_text).is_file()
    )
    try:
        with _own_argv(module_text):
            if is_file:
                return _import_file(target, module_text)
            return _import_module(target, module_text)
    except TargetError:
        raise
    except SystemExit as exc:  # sys.exit() or argparse on import; KeyboardInterrupt goes on
        raise _exited(target, module_text, exc) from exc
    except PlanError as exc:
        msg = f"module {module_text!r} failed to build its System: {exc}"
        raise TargetError(msg, target=target) from exc
    except CatalogError as exc:
        msg = f"module {module_text!r} declares a part wrongly: {exc}"
        raise TargetError(msg, target=target) from exc
    except Exception as exc:
        where = _raised_at(exc, module_text, is_file=is_file)
        run = f"python {module_text}" if is_file else f"python -c 'import {module_text}'"
        msg = (
            f"importing module {module_text!r} failed{where}: {_described(exc)}; "
            f"fix the module so that `{run}` works"
        )
        raise TargetError(msg, target=target) from exc


def load_attribute(target: str) -> Any:
    """Import the target's module and return its attribute, whatever it is.

    Raises:
        TargetError: the target names no attribute, its module cannot be found
            or fails on import.
        MissingAttributeError: the module has no such attribute.
    """
    module_text, sep, attr = target.rpartition(":")
    if not sep or not module_text or not attr:
        missing = "module before the colon" if sep and not module_text else "attribute"
        msg = (
            f"{target!r} names no {missing}; write {TARGET_HELP} "
            f"(for example examples/claims.py:system)"
        )
        raise TargetError(msg, target=target)
    module = _load_module(target, module_text)
    value: Any = module
    for piece in attr.split("."):
        if not hasattr(value, piece):
            found = tuple(
                sorted(n for n, v in vars(module).items() if isinstance(v, Catalog | System))
            )
            msg = (
                f"no attribute {attr!r} in module {module_text!r}; expected a Catalog or "
                f"System{_it_has(found)}"
            )
            raise MissingAttributeError(
                msg, target=target, module=module_text, attribute=attr, found=found
            )
        value = getattr(value, piece)
    return value


_SERVABLE = "name a System, a Catalog, or a function without arguments that returns one"


def _not_a_factory(target: str, value: Any) -> str | None:
    """Why a callable target is not called as a factory (None when it may be).

    A factory takes no parameters; a class is never instantiated, and a function
    annotated to return something else is not called: ``main(argv=None) -> int``
    would run a program, not build a System.
    """
    if isinstance(value, type):
        return f"{target!r} is the class {value.__name__}, not a System instance; {_SERVABLE}"
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return f"{target!r} is {described(value)} whose signature cannot be read; {_SERVABLE}"
    if signature.parameters:
        names = ", ".join(signature.parameters)
        return f"{target!r} is {described(value)} that takes arguments ({names}); {_SERVABLE}"
    try:
        returns = typing.get_type_hints(value).get("return", System)
    except Exception:  # an annotation that cannot be resolved says nothing either way
        returns = System
    if returns is type(None) or (
        isinstance(returns, type) and not issubclass(returns, System | Catalog)
    ):
        shown = "None" if returns is type(None) else returns.__name__
        what = f"{described(value)} annotated to return {shown}"
        return f"{target!r} is {what}, not a System; {_SERVABLE}"
    return None


def _call_factory(target: str, factory: Any) -> Any:
    """Call a factory, turning what it raises into one TargetError (KeyboardInterrupt aside)."""
    try:
        return factory()
    except (Exception, SystemExit) as exc:
        msg = (
            f"calling {target} raised {_described(exc)}; fix it so that it returns "
            f"a System or a Catalog"
        )
        raise TargetError(msg, target=target) from exc


def _served(target: str, value: Any, how: str) -> System:
    """The System a target's value (or what its factory returned) serves."""
    if isinstance(value, Catalog):
        try:
            return System(value)
        except PlanError as exc:
            msg = f"cannot build a System from catalog {target!r}: {exc}"
            raise TargetError(msg, target=target) from exc
    if not isinstance(value, System):
        msg = f"{target!r} {how} {described(value)}, not a solvi System; {_SERVABLE}"
        raise TargetError(msg, target=target)
    return value


def load_system(target: str) -> System:
    """Load the System named by ``module:attribute`` or ``path/to/file.py:attribute``.

    The attribute may be a System, a Catalog (served as ``System(catalog)``) or a
    function taking no arguments that returns either. A class, a function that
    takes arguments or one annotated to return something else is refused, not
    called: serving must not run a script's ``main``.

    Raises:
        SolviError: the target is malformed, missing, fails on import, names
            something else, or its factory raises.
    """
    try:
        value: Any = load_attribute(target)
    except MissingAttributeError as exc:
        msg = (
            f"no attribute {exc.attribute!r} in {exc.module!r}; name a System or a "
            f"factory{exc.hint}"
        )
        raise TargetError(msg, target=target) from None
    if isinstance(value, System | Catalog) or not callable(value):
        return _served(target, value, "is")
    refusal = _not_a_factory(target, value)
    if refusal is not None:
        raise TargetError(refusal, target=target)
    return _served(target, _call_factory(target, value), "returned")
