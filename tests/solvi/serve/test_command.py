"""`solvi serve` as a command, without starting a server: its options and their checks,
`load_system` on each kind of target, and the exit status of a target that cannot load."""

from __future__ import annotations

import argparse
import contextlib
import socket
import textwrap
from pathlib import Path

import pytest

from solvi import System
from solvi._targets import TargetError
from solvi.serve import add_serve_command, load_system, main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

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
    assert args.shutdown_timeout == 30.0
    args = _parse(
        "m:system", "--host", "0.0.0.0", "--port", "0", "--max-body", "10", "--max-keys", "3",
        "--read-timeout", "2.5", "--allow-overrides", "--aliases", "--log-level", "debug",
        "--shutdown-timeout", "0.5",
    )  # fmt: skip
    assert args.shutdown_timeout == 0.5
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
        ("--shutdown-timeout", "-1", "give a positive number of seconds (e.g. 2.5), got '-1'"),
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
        f"'{target}:number' is an int, not a solvi System; name a System, a Catalog, or a "
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


FACTORIES = """
from pathlib import Path

from solvi import Catalog, System

cat = Catalog("fac")

@cat.rule
def ok(x: int) -> bool:
    return x > 0

def _ran(name):
    Path(__file__).with_name(name + ".ran").touch()

class Served:
    def __init__(self):
        _ran("Served")

def main(store="demo.db"):
    _ran("main")

def script() -> None:
    _ran("script")

def fails():
    raise ValueError("inner")

def exits():
    raise SystemExit(3)

def number():
    return 3

def builds():
    return cat
"""

REFUSED = [
    ("Served", "is the class Served, not a System instance"),
    ("main", "is a function that takes arguments (store)"),
    ("script", "is a function annotated to return None, not a System"),
]


@pytest.fixture
def factories(tmp_path: Path) -> Path:
    """A target file with factories that work, fail, and functions that are not factories."""
    path = tmp_path / "fac_target.py"
    path.write_text(textwrap.dedent(FACTORIES), encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "why"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_callable_that_is_not_a_factory_is_refused_without_calling_it(
    factories: Path, name: str, why: str
) -> None:
    """A class, a function with parameters or one returning None would run code: not called."""
    with pytest.raises(TargetError) as caught:
        load_system(f"{factories}:{name}")
    assert str(caught.value) == (
        f"'{factories}:{name}' {why}; name a System, a Catalog, or a function without "
        f"arguments that returns one"
    )
    assert not factories.with_name(f"{name}.ran").exists()


@pytest.mark.parametrize(
    ("name", "raised"), [("fails", "ValueError: inner"), ("exits", "SystemExit: 3")]
)
def test_a_factory_that_raises_is_one_line_and_exit_2(
    factories: Path, capsys: pytest.CaptureFixture[str], name: str, raised: str
) -> None:
    """What a factory raises is reported with the target, not as a traceback."""
    assert main([f"{factories}:{name}"]) == 2
    assert capsys.readouterr().err == (
        f"solvi serve: calling {factories}:{name} raised {raised}; fix it so that it returns "
        f"a System or a Catalog\n"
    )


def test_a_factory_that_returns_something_else_is_named_a_function(factories: Path) -> None:
    """The message says what the function returned, with the right article."""
    with pytest.raises(TargetError) as caught:
        load_system(f"{factories}:number")
    assert str(caught.value).startswith(
        f"'{factories}:number' returned an int, not a solvi System; "
    )
    assert load_system(f"{factories}:builds").name == "fac"


def test_the_claims_examples_class_is_not_served() -> None:
    """examples/claims.py:System names the class it imports, which is refused."""
    with pytest.raises(TargetError, match=r"is the class System, not a System instance"):
        load_system(f"{EXAMPLES}/claims.py:System")


def test_a_port_in_use_is_one_line_and_exit_2(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another server on the port: said before uvicorn starts, with the fix."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([f"{target}:system", "--port", str(port)]) == 2
    assert capsys.readouterr().err == (
        f"solvi serve: cannot listen on 127.0.0.1:{port}: address already in use; stop what "
        f"listens there, or give another --port\n"
    )


def test_a_host_that_is_no_address_is_one_line_and_exit_2(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--host 999.1.1.1 cannot be resolved: one line naming the host, before uvicorn starts."""
    assert main([f"{target}:system", "--host", "999.1.1.1", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("solvi serve: cannot listen on 999.1.1.1:0: ")
    assert err.endswith("; give --host an address of this machine (127.0.0.1, 0.0.0.0 or ::)\n")
    assert err.count("\n") == 1


LEARNING_APP = '''
"""A System that learns its costs, stored where the environment says."""

import os

from solvi import Catalog, System


def catalog():
    cat = Catalog("learning")

    @cat.fn
    def score(age: int) -> int:
        return age * 2

    @cat.rule
    def approve(score: int) -> bool:
        return score > 40

    return cat


system = System(catalog(), ["approve"], store=os.environ["SOLVI_LEARNING_STORE"])
'''


def test_stopping_the_server_closes_the_system_and_saves_what_it_learned(
    tmp_path: Path,
) -> None:
    """Fewer requests than a save takes (SAVE_LEARNING_EVERY): the cost book is saved
    when the server stops, as `close()` saves it, and a new System loads it."""
    import httpx
    import serving

    from solvi import open_store

    app = tmp_path / "learning_app.py"
    app.write_text(LEARNING_APP)
    store = tmp_path / "learning.db"
    port = serving.free_port()
    with serving.served(
        serving.serve_command(f"{app}:system", port),
        port,
        env={"SOLVI_LEARNING_STORE": str(store)},
        wait=20,
    ) as base:
        with httpx.Client(trust_env=False, timeout=10) as http:
            for age in range(30):
                assert http.post(f"{base}/v1/ask", json={"age": age}).status_code == 200
    saved = open_store(str(store))
    costs = saved.load_costs("learning")
    assert {part: n for part, (n, _) in costs.items()} == {"score": 30, "approve": 30}
    assert len(list(saved.iter_records())) == 30
    saved.close()


SLOW_APP = """
import os

import anyio

from solvi import Catalog, Question, System

cat = Catalog("slow")


@cat.fn
async def lookup(x: int) -> int:
    await anyio.sleep(60)
    return x


@cat.rule
def approve(lookup: int) -> bool:
    return lookup > 0


system = System(cat, [Question("approve", forced=False)], journal=os.environ["SOLVI_JOURNAL"])
"""


def test_a_stopped_server_cancels_what_outlives_its_grace_period(tmp_path: Path) -> None:
    """SIGTERM with requests that would run for a minute: after --shutdown-timeout the
    server cancels them, each client gets a 503 saying so, the process exits, and the
    journal holds no open request (each was closed as cancelled before the System was)."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    import httpx
    import serving

    from solvi import recovery
    from solvi.journal import open_journal

    app = tmp_path / "slow_app.py"
    app.write_text(SLOW_APP)
    journal = tmp_path / "journal.db"
    port = serving.free_port()
    command = serving.serve_command(f"{app}:system", port, "--shutdown-timeout", "0.5")
    server = subprocess.Popen(
        command,
        env={**os.environ, "SOLVI_JOURNAL": str(journal)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    clients = None
    try:
        deadline = time.monotonic() + 20
        with httpx.Client(trust_env=False, timeout=1) as http:
            while True:
                assert server.poll() is None, "the server exited before answering"
                with contextlib.suppress(httpx.TransportError):
                    if http.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        break
                assert time.monotonic() < deadline, "the server did not answer /healthz"
                time.sleep(0.05)
        clients = subprocess.Popen(
            [sys.executable, "-c", _CLIENTS.format(port=port, n=8)],
            stdout=subprocess.PIPE,
            text=True,
        )
        running = open_journal(journal)
        deadline = time.monotonic() + 20
        while len(recovery.inspect(running, "slow")) < 8:  # all eight are running
            assert time.monotonic() < deadline, "the requests did not start"
            time.sleep(0.05)
        server.send_signal(signal.SIGTERM)
        # uvicorn stops cleanly, then raises the signal again as its exit status
        assert server.wait(timeout=20) in (0, -signal.SIGTERM)
        out, _ = clients.communicate(timeout=30)
        assert json.loads(out) == [["503", "server_stopping"]] * 8
        assert recovery.inspect(running, "slow") == []
        running.close()
    finally:
        for process in (server, clients):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)


#: eight clients posting at once, printing each answer's status and error code
_CLIENTS = """
import asyncio, json
async def one():
    r, w = await asyncio.open_connection("127.0.0.1", {port})
    w.write(b"POST /v1/ask HTTP/1.1\\r\\nHost: t\\r\\nContent-Type: application/json\\r\\n"
            b"Content-Length: 8\\r\\n\\r\\n" + b'{{"x": 1}}')
    await w.drain()
    data = await asyncio.wait_for(r.read(), 30)
    head, _, text = data.partition(b"\\r\\n\\r\\n")
    return head.split(b" ", 2)[1].decode(), json.loads(text)["error"]["code"]
async def main():
    print(json.dumps(await asyncio.gather(*[one() for _ in range({n})])))
asyncio.run(main())
"""
