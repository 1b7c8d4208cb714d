"""Load `solvi serve` on loopback: requests per second and median / p99 latency.

Each TARGET (``path/to/file.py:attribute``) is served in a child process with
``python -m solvi.serve`` on a free port of 127.0.0.1; a small asyncio client
keeps CONNECTIONS keep-alive connections busy with ``POST /v1/ask``, cycling
through the bodies in the target module's ``CLAIMS`` list (``--bodies`` names
another list), until TOTAL requests are answered or SECONDS have passed. The
server is stopped after each target, so every run ends by itself.

    .venv/bin/python benchmarks/serve_load.py examples/claims.py:system
    .venv/bin/python benchmarks/serve_load.py /tmp/claims_before.py:system examples/claims.py:system
    .venv/bin/python benchmarks/serve_load.py --quick examples/claims.py:system

The client is raw asyncio streams rather than an HTTP library, so that on a
small machine the load generator takes as little CPU from the server as it can.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]


@attrs.frozen
class Result:
    """What one target answered under load."""

    target: str
    connections: int
    answered: int
    failed: int
    seconds: float
    median_ms: float
    p99_ms: float
    #: the server's CPU seconds per second of load (1.0: one core saturated), if known
    cpu: float | None

    @property
    def rate(self) -> float:
        """Answered requests per second of wall time."""
        return self.answered / self.seconds if self.seconds else 0.0


def _bodies(target: str, name: str) -> list[bytes]:
    """The JSON bodies to send: the list `name` of the target's module, loaded from its file."""
    path = Path(target.rpartition(":")[0])
    spec = importlib.util.spec_from_file_location("_serve_load_bodies", path)
    if spec is None or spec.loader is None:
        msg = f"cannot load {path} to read its {name} list; give a path/to/file.py:attribute"
        raise SystemExit(msg)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    states = getattr(module, name, None)
    if not isinstance(states, list) or not states:
        msg = f"{path} has no non-empty list {name!r} of request states; pass --bodies NAME"
        raise SystemExit(msg)
    system = getattr(module, "system", None)
    if system is not None and hasattr(system, "close"):
        system.close()
    return [json.dumps(s).encode() for s in states]


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a process, from /proc (None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _wait_healthy(port: int, server: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            msg = f"the server exited with status {server.returncode} before answering"
            raise SystemExit(msg)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        await writer.drain()
        reply = await reader.read()
        writer.close()
        if reply.startswith(b"HTTP/1.1 200"):
            return
        await asyncio.sleep(0.1)
    msg = f"the server did not answer /healthz within {seconds:.0f} s"
    raise SystemExit(msg)


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Read one HTTP/1.1 response with a Content-Length; return its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _load(
    port: int, bodies: Sequence[bytes], connections: int, total: int, seconds: float
) -> tuple[list[float], int, float]:
    requests = [
        b"POST /v1/ask HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(b)}\r\n\r\n".encode()
        + b
        for b in bodies
    ]
    latencies: list[float] = []
    failed = 0
    issued = 0
    started = time.perf_counter()
    deadline = started + seconds

    async def client(n: int) -> None:
        nonlocal failed, issued
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            failed += 1
            return
        try:
            while issued < total and time.perf_counter() < deadline:
                request = requests[issued % len(requests)]
                issued += 1
                sent = time.perf_counter()
                writer.write(request)
                await writer.drain()
                status = await _read_response(reader)
                if status == 200:
                    latencies.append(time.perf_counter() - sent)
                else:
                    failed += 1
        except (OSError, asyncio.IncompleteReadError):
            failed += 1
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    tasks = [asyncio.ensure_future(client(n)) for n in range(connections)]
    # Requests in flight at the deadline may take long under a blocked loop: give
    # them a grace period, then cancel, so the run is bounded in time.
    _, pending = await asyncio.wait(tasks, timeout=seconds + 30.0)
    for task in pending:
        task.cancel()
    failed += len(pending)
    elapsed = time.perf_counter() - started
    return latencies, failed, elapsed


def run_target(target: str, *, connections: int, total: int, seconds: float, bodies: str) -> Result:
    """Serve `target` in a child process, load it, stop it, and return the figures."""
    payloads = _bodies(target, bodies)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "solvi.serve", target, "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        asyncio.run(_wait_healthy(port, server, 30.0))
        cpu_before = _cpu_seconds(server.pid)
        latencies, failed, elapsed = asyncio.run(_load(port, payloads, connections, total, seconds))
        cpu_after = _cpu_seconds(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    latencies.sort()
    ms = [x * 1000.0 for x in latencies]
    return Result(
        target=target,
        connections=connections,
        answered=len(ms),
        failed=failed,
        seconds=elapsed,
        median_ms=statistics.median(ms) if ms else float("nan"),
        p99_ms=ms[min(len(ms) - 1, int(0.99 * len(ms)))] if ms else float("nan"),
        cpu=None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / elapsed,
    )


def _print(results: Sequence[Result]) -> None:
    width = max(len(r.target) for r in results)
    print(f"{'target':<{width}}  conns  answered  failed  seconds   req/s  median ms   p99 ms")
    for r in results:
        print(
            f"{r.target:<{width}}  {r.connections:>5}  {r.answered:>8}  {r.failed:>6}  "
            f"{r.seconds:>7.1f}  {r.rate:>6.0f}  {r.median_ms:>9.1f}  {r.p99_ms:>7.1f}  "
            + ("         -" if r.cpu is None else f"{r.cpu:>10.2f}")
        )
    if len(results) > 1 and results[0].rate:
        for r in results[1:]:
            ratio = r.rate / results[0].rate
            print(f"{r.target}: {ratio:.1f}x the requests/s of {results[0].target}")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, load each target in turn, print one row per target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+", metavar="TARGET", help="path/to/file.py:attribute")
    parser.add_argument("--connections", type=int, help="concurrent connections (500)")
    parser.add_argument("--total", type=int, help="stop after this many requests (5000)")
    parser.add_argument("--seconds", type=float, help="stop after this long (30)")
    parser.add_argument("--bodies", default="CLAIMS", help="the module's list of request states")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 50 connections, 200 requests, 10 s"
    )
    args = parser.parse_args(argv)
    defaults = (50, 200, 10.0) if args.quick else (500, 5000, 30.0)
    given = (args.connections, args.total, args.seconds)
    connections, total, seconds = (
        d if g is None else g for g, d in zip(given, defaults, strict=True)
    )
    options: dict[str, Any] = {
        "connections": connections,
        "total": total,
        "seconds": seconds,
        "bodies": args.bodies,
    }
    results = [run_target(t, **options) for t in args.targets]
    _print(results)
    return 0 if all(r.answered for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
