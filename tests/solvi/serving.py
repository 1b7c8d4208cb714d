"""Serving in tests: an in-process client, and `solvi serve` in a process of its own."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def in_process_client(app: Any) -> httpx.AsyncClient:
    """An httpx client that calls the ASGI `app` directly, with no socket."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://solvi.test")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def serve_command(target: str, port: int, *options: str) -> list[str]:
    """The `solvi serve TARGET --port PORT ...` command line, run by this Python."""
    return [sys.executable, "-m", "solvi.serve", target, "--port", str(port), *options]


@contextlib.contextmanager
def served(
    command: list[str],
    port: int,
    *,
    output: IO[Any] | None = None,
    env: Mapping[str, str] | None = None,
    wait: float = 10.0,
) -> Iterator[str]:
    """Run `command` (a server on `port`) until the block ends; yields its base URL once
    ``/healthz`` answers, and fails the test if it exits first or does not answer in time.

    The server's output goes to `output` (default: nowhere).
    """
    sink = subprocess.DEVNULL if output is None else output
    process = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=sink, stderr=sink
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait
        with httpx.Client(trust_env=False, timeout=1) as http:
            while True:
                if process.poll() is not None:
                    pytest.fail(f"the server exited with {process.returncode} before answering")
                with contextlib.suppress(httpx.TransportError):
                    if http.get(f"{base}/healthz").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    pytest.fail(f"the server did not answer /healthz within {wait:g} s")
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
