"""`solvi serve` as a command, without starting a server: its options and their checks,
`load_system` on each kind of target, and the exit status of a target that cannot load."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import pytest

from solvi import System
from solvi._targets import TargetError
from solvi.serve import add_serve_command, load_system, main

TARGET = """
from solvi import Catalog, System

cat = Catalog("cmd")

@cat.rule
def ok(x: int) -> bool:
    return x > 0

system = System(cat, ["ok"])

def factory():
    return system

number = 5
"""


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="solvi")
    add_serve_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_defaults_and_every_option_are_read() -> None:
    """The defaults, then each option given."""
    args = _parse("m:system")
    assert (args.host, args.port, args.max_body, args.max_keys, args.read_timeout) == (
        "127.0.0.1",
        8000,
        1_000_000,
        1_000,
        10.0,
    )
    assert (args.allow_overrides, args.aliases, args.log_level) == (False, False, "info")
    args = _parse(
        "m:system", "--host", "0.0.0.0", "--port", "0", "--max-body", "10", "--max-keys", "3",
        "--read-timeout", "2.5", "--allow-overrides", "--aliases", "--log-level", "debug",
    )  # fmt: skip
    assert (args.host, args.port, args.max_body, args.max_keys, args.read_timeout) == (
        "0.0.0.0",
        0,
        10,
        3,
        2.5,
    )
    assert (args.allow_overrides, args.aliases, args.log_level) == (True, True, "debug")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--port", "70000", "a port is a whole number from 0 to 65535, got '70000'"),
        ("--port", "-1", "a port is a whole number from 0 to 65535, got '-1'"),
        ("--max-body", "0", "give a positive whole number, got '0'"),
        ("--max-keys", "1.5", "give a positive whole number, got '1.5'"),
        ("--read-timeout", "inf", "give a positive number of seconds (e.g. 2.5), got 'inf'"),
        ("--read-timeout", "0", "give a positive number of seconds (e.g. 2.5), got '0'"),
    ],
)
def test_a_bad_option_value_is_a_usage_error(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse exits 2 naming the option and why its value is refused."""
    with pytest.raises(SystemExit) as caught:
        _parse("m:system", f"{option}={value}")
    assert caught.value.code == 2
    assert f"argument {option}: {message}" in capsys.readouterr().err


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A target file with a System, a factory and a number."""
    path = tmp_path / "cmd_target.py"
    path.write_text(textwrap.dedent(TARGET), encoding="utf-8")
    return path


def test_load_system_takes_a_system_a_catalog_or_a_factory(target: Path) -> None:
    """A System as it is, a Catalog wrapped in a System, a factory called."""
    system = load_system(f"{target}:system")
    assert load_system(f"{target}:factory") is system
    wrapped = load_system(f"{target}:cat")
    assert isinstance(wrapped, System)
    assert wrapped.name == "cmd"


def test_load_system_refuses_other_values_and_missing_names(target: Path) -> None:
    """A number is not servable; a missing name lists what the module has."""
    with pytest.raises(TargetError) as caught:
        load_system(f"{target}:number")
    assert str(caught.value) == (
        f"'{target}:number' is a int, not a solvi System; name a System, a Catalog, or a "
        f"function without arguments that returns one"
    )
    with pytest.raises(TargetError) as caught:
        load_system(f"{target}:sys")
    assert str(caught.value) == (
        f"no attribute 'sys' in {str(target)!r}; name a System or a factory (it has: cat, system)"
    )


def test_a_target_that_cannot_load_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """main() prints the reason after "solvi serve:" and returns 2 (nothing is served)."""
    assert main([f"{tmp_path / 'absent.py'}:system"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("solvi serve: no file ")
