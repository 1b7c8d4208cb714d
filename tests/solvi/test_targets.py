"""Loading a target (`solvi._targets`): files and modules, dotted attributes, and every
mistake a TargetError whose message names the target and the fix."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from solvi import Catalog, System
from solvi._targets import MissingAttributeError, TargetError, load_attribute, load_system

GOOD = """
from solvi import Catalog, System

cat = Catalog("t")

@cat.rule
def ok(x: int) -> bool:
    return x > 0

system = System(cat, ["ok"])
holder = type("Holder", (), {"inner": system})
number = 3
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory holding target modules; sys.path and sys.modules restored."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_file_target_loads_its_system_and_catalog(folder: Path) -> None:
    """path/to/file.py:attribute imports the file; a System loads as itself, a Catalog
    as a System of it."""
    _write(folder, "tgt_file.py", GOOD)
    system = load_system("tgt_file.py:system")
    assert isinstance(system, System)
    from_catalog = load_system("tgt_file.py:cat")
    assert isinstance(from_catalog, System)
    assert isinstance(from_catalog.catalog, Catalog)
    assert load_system("tgt_file.py:holder.inner") is system


def test_a_module_target_is_imported_from_the_working_directory(folder: Path) -> None:
    """module:attribute imports the dotted module with the current directory importable."""
    _write(folder, "tgt_module.py", GOOD)
    assert isinstance(load_system("tgt_module:system"), System)


def test_load_attribute_returns_anything_load_system_refuses_other_kinds(folder: Path) -> None:
    """An int loads as an attribute but is not a target."""
    _write(folder, "tgt_kind.py", GOOD)
    assert load_attribute("tgt_kind.py:number") == 3
    with pytest.raises(TargetError) as caught:
        load_system("tgt_kind.py:number")
    assert str(caught.value) == (
        "'tgt_kind.py:number' is an int, not a solvi System; name a System, a Catalog, or a "
        "function without arguments that returns one"
    )
    assert caught.value.target == "tgt_kind.py:number"


@pytest.mark.parametrize(
    ("target", "missing"),
    [
        ("claims", "attribute"),
        ("claims.py:", "attribute"),
        (":system", "module before the colon"),
    ],
)
def test_a_target_without_an_attribute_shows_the_form(target: str, missing: str) -> None:
    """No colon, or nothing on one side of it: the message says which and shows the forms."""
    with pytest.raises(TargetError) as caught:
        load_attribute(target)
    assert str(caught.value) == (
        f"{target!r} names no {missing}; write module:attribute or path/to/file.py:attribute "
        f"naming a System, a Catalog, or a function without arguments that returns one (for "
        f"example examples/claims.py:system)"
    )


def test_a_file_that_is_not_python_is_refused_as_a_file(folder: Path) -> None:
    """notes.txt:x is a file that Python does not import, not a module `txt` to look for."""
    _write(folder, "notes.txt", "not python\n")
    with pytest.raises(TargetError) as caught:
        load_attribute("notes.txt:system")
    assert str(caught.value) == (
        "cannot import 'notes.txt': Python does not load files like it; use a .py file"
    )


def test_a_missing_file_names_the_directory_it_was_looked_for_in(folder: Path) -> None:
    """The path is said relative to the working directory."""
    with pytest.raises(TargetError) as caught:
        load_attribute("nowhere.py:system")
    assert str(caught.value) == (
        f"no file 'nowhere.py'; give the path of a Python file, relative to {folder}"
    )


def test_a_missing_module_suggests_a_file_path(folder: Path) -> None:
    """A module that cannot be found: run from its directory, or give its file."""
    with pytest.raises(TargetError) as caught:
        load_attribute("pkg_absent.claims:system")
    assert str(caught.value) == (
        "cannot import module 'pkg_absent.claims': No module named 'pkg_absent'; run solvi from "
        "the directory that holds it, or give a file path (path/to/claims.py:attribute)"
    )


def test_a_missing_attribute_lists_what_the_module_has(folder: Path) -> None:
    """MissingAttributeError names the attribute and the Catalogs and Systems there are."""
    _write(folder, "tgt_attr.py", GOOD)
    with pytest.raises(MissingAttributeError) as caught:
        load_attribute("tgt_attr.py:sytem")
    error = caught.value
    assert str(error) == (
        "no attribute 'sytem' in module 'tgt_attr.py'; expected a Catalog or System "
        "(it has: cat, system)"
    )
    assert (error.module, error.attribute, error.found) == (
        "tgt_attr.py",
        "sytem",
        ("cat", "system"),
    )
    assert error.hint == " (it has: cat, system)"


def test_a_module_that_fails_on_import_names_the_error(folder: Path) -> None:
    """An exception on import is wrapped, naming its type and message."""
    _write(folder, "tgt_broken.py", "raise RuntimeError('no config')\n")
    with pytest.raises(TargetError) as caught:
        load_attribute("tgt_broken.py:system")
    assert str(caught.value) == (
        "importing module 'tgt_broken.py' failed at tgt_broken.py, line 1 (in <module>): "
        "RuntimeError: no config; fix the module so that `python tgt_broken.py` works"
    )
    assert caught.value.catalog_mistake is False
    assert "tgt_broken" not in sys.modules


def test_a_module_whose_system_is_wrong_is_a_catalog_mistake(folder: Path) -> None:
    """A PlanError while building the System: said so, and flagged as the catalog's fault."""
    _write(folder, "tgt_plan.py", GOOD.replace('["ok"]', '["okay"]'))
    with pytest.raises(TargetError) as caught:
        load_attribute("tgt_plan.py:system")
    assert str(caught.value).startswith("module 'tgt_plan.py' failed to build its System: ")
    assert caught.value.catalog_mistake is True


@pytest.mark.parametrize("code", ["sys.exit(0)", "sys.exit('no config')"])
def test_a_module_that_exits_on_import_is_a_target_error(folder: Path, code: str) -> None:
    """sys.exit() on import is reported, not obeyed: a CI run would pass on exit 0."""
    _write(folder, "tgt_exits.py", f"import sys\n{code}\n")
    with pytest.raises(TargetError) as caught:
        load_attribute("tgt_exits.py:system")
    assert str(caught.value).startswith("module 'tgt_exits.py' exited while being imported (")
    assert str(caught.value).endswith(
        "a target module must not run code on import: guard it with if __name__ == '__main__':"
    )
    assert isinstance(caught.value.__cause__, SystemExit)
    assert "tgt_exits" not in sys.modules


def test_a_keyboard_interrupt_on_import_is_not_caught(folder: Path) -> None:
    """Ctrl-C while a module imports still stops solvi."""
    _write(folder, "tgt_interrupted.py", "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_attribute("tgt_interrupted.py:system")


@pytest.mark.parametrize("target", ["tgt_argv.py:system", "tgt_argv:system"])
def test_a_module_parsing_its_arguments_on_import_reads_none(
    folder: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """While it is imported a module sees only its own name in sys.argv, not solvi's."""
    _write(folder, "tgt_argv.py", f"import sys\nseen = list(sys.argv)\n{GOOD}")
    monkeypatch.setattr(sys, "argv", ["solvi", "check", target, "--strict"])
    module_text = target.partition(":")[0]
    assert load_attribute(target.replace(":system", ":seen")) == [module_text]
    assert sys.argv == ["solvi", "check", target, "--strict"]
