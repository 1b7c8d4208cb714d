"""Under `solvi serve` with a journal, clients that disconnect mid-request leave no
request open in the journal once the server has handled them (the app's side of
cancellation; test_cancellation.py has the journal's)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import serving
from file_modules import import_file
from serving import free_port, serve_command

ROOT = Path(__file__).resolve().parents[3]
CLIENTS = 200
JOURNAL_VARIABLE = "SOLVI_DISCONNECTS_JOURNAL"
ASK = 'solvi_http_requests_total{path="/v1/ask",method="POST",status="'

APP = '''
"""A System whose parts take 50 to 100 ms, journaled where the environment says."""

import os

import anyio

from solvi import Catalog, Question, System


def catalog():
    cat = Catalog("disconnects")

    @cat.check(hard=True)
    def adult(age: int) -> bool:
        return age >= 18

    @cat.fn
    async def lookup(customer: str) -> int:
        await anyio.sleep(0.05 + (sum(map(ord, customer)) % 50) / 1000)
        return sum(map(ord, customer)) % 100

    @cat.fn
    async def history(customer: str) -> int:
        await anyio.sleep(0.05)
        return len(customer)

    @cat.rule
    def approve(adult: bool, lookup: int, history: int) -> bool:
        return lookup + history > 20

    return cat


def build(journal):
    return System(catalog(), [Question("approve", forced=False)], journal=journal)


def system():
    return build(os.environ["SOLVI_DISCONNECTS_JOURNAL"])
'''


def _load(path: Path) -> ModuleType:
    return import_file(path, "disconnects_app")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, ModuleType]]:
    """`solvi serve app.py:system` in its own process on loopback, journaling to a
    SQLite file; yields its base URL, the journal's path and the app module."""
    app = tmp_path / "disconnects_app.py"
    app.write_text(APP)
    journal = tmp_path / "served.journal"
    port = free_port()
    log_path = tmp_path / "server.log"
    with (
        log_path.open("w") as log,
        serving.served(
            serve_command(f"{app}:system", port),
            port,
            output=log,
            env={JOURNAL_VARIABLE: str(journal)},
            wait=20,
        ) as base,
    ):
        yield base, journal, _load(app)


def _request(port: int, body: bytes) -> bytes:
    return (
        f"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _disconnect_mid_request(port: int, i: int, rng: random.Random) -> None:
    """Send a whole request, wait less than its parts take, and hang up (half of the
    clients close the connection, the other half reset it)."""
    wait = rng.uniform(0.01, 0.04)
    _reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
    body = json.dumps({"customer": f"client-{i}", "age": 30}).encode()
    writer.write(_request(port, body))
    await writer.drain()
    await asyncio.sleep(wait)
    if i % 2:
        writer.transport.abort()
    else:
        writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def _clients(port: int) -> None:
    rng = random.Random("serve-disconnects")
    await asyncio.gather(*(_disconnect_mid_request(port, i, rng) for i in range(CLIENTS)))


def _samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def _asks(samples: dict[str, float]) -> dict[str, float]:
    """POST /v1/ask answered so far, by status."""
    return {k[len(ASK) : -2]: v for k, v in samples.items() if k.startswith(ASK)}


def test_disconnected_clients_leave_no_open_request(
    served: tuple[str, Path, ModuleType],
) -> None:
    """200 clients hanging up mid-request leave 0 open requests in the served journal."""
    base, journal, app = served
    port = int(base.rsplit(":", 1)[1])
    with httpx.Client(base_url=base, trust_env=False, timeout=10) as http:
        ok = http.post("/v1/ask", json={"customer": "warm-up", "age": 30})
        assert ok.status_code == 200, ok.text
        before = sum(_asks(_samples(http.get("/metrics").text)).values())
        asyncio.run(_clients(port))
        deadline = time.monotonic() + 30
        while True:
            samples = _samples(http.get("/metrics").text)
            handled = sum(_asks(samples).values()) - before
            if handled >= CLIENTS and samples.get("solvi_requests_in_flight", 0) == 0:
                break
            assert time.monotonic() < deadline, (
                f"the server handled {handled:.0f} of {CLIENTS} requests within 30 s"
            )
            time.sleep(0.05)
    by_status = _asks(samples)
    assert by_status.get("499", 0) >= CLIENTS // 2, (
        f"too few requests were cut off mid-request to test anything: {by_status}"
    )
    inspector = app.build(str(journal))
    try:
        deadline = time.monotonic() + 5
        while True:
            open_requests = inspector.journal_status()
            if not open_requests or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        running = sum(1 for r in open_requests if any(step.state == "running" for step in r.steps))
        assert open_requests == [], (
            f"{len(open_requests)} requests left open in the journal by {CLIENTS} "
            f"disconnected clients ({running} with a step shown running; HTTP statuses "
            f"{by_status}); e.g. {[r.request_id for r in open_requests[:3]]}"
        )
    finally:
        inspector.close()
